//! Decimal number tokens for the text readers' hot paths, exact and without a detour through
//! `str` and the general float parser when the token is an ordinary decimal.
//!
//! Exporters write float64 samples with Go's `strconv.FormatFloat(v, 'g', -1, 64)` (prometheus/common
//! `expfmt.writeFloat`): `1.8527668e+07`, `5e+10`, `123456`, `0.25`. Most are counters, i.e.
//! integers. [`float_value`] splits such a token into an integer mantissa of at most 19 digits and
//! a decimal exponent; when the value is an integer <= 2^53 it is built directly, otherwise a
//! mantissa <= 2^53 with an exponent within ±22 is one correctly rounded f64 operation (Clinger's
//! fast path: both operands are exact doubles), and anything else goes to the standard library's
//! correctly rounded parser. The result is always `Value::from_f64(token.parse::<f64>())`.

use crate::schema::Value;

/// Largest integer every smaller one of which a double represents exactly.
const EXACT_INT_MAX: u64 = 1 << 53;
/// Significant mantissa digits kept before falling back (10^19 - 1 < 2^64).
const MAX_DIGITS: u32 = 19;
/// Exponents beyond this are left to the standard parser (overflow to inf, underflow to 0).
const MAX_EXPONENT: i32 = 100_000;

const POW10_U64: [u64; 20] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
    10_000_000_000,
    100_000_000_000,
    1_000_000_000_000,
    10_000_000_000_000,
    100_000_000_000_000,
    1_000_000_000_000_000,
    10_000_000_000_000_000,
    100_000_000_000_000_000,
    1_000_000_000_000_000_000,
    10_000_000_000_000_000_000,
];

/// Powers of ten a double holds exactly (5^22 < 2^53).
const POW10_F64: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20,
    1e21, 1e22,
];

/// `±mantissa × 10^exp10`, as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Decimal {
    negative: bool,
    mantissa: u64,
    exp10: i32,
}

/// Split `[+-]digits[.digits][(e|E)[+-]digits]` (at least one mantissa digit). `None` for any
/// other token and for mantissas beyond [`MAX_DIGITS`] significant digits or exponents beyond
/// [`MAX_EXPONENT`]: the caller then asks the standard parser, which also decides what is valid.
fn scan(tok: &[u8]) -> Option<Decimal> {
    let (negative, body) = match tok.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, tok),
    };
    let mut mantissa: u64 = 0;
    let mut significant: u32 = 0;
    let mut any_digit = false;
    let mut exp10: i32 = 0;
    let mut i = 0;
    let mut push = |d: u8, mantissa: &mut u64| -> Option<()> {
        if *mantissa != 0 || d != 0 {
            if significant == MAX_DIGITS {
                return None;
            }
            significant += 1;
            *mantissa = *mantissa * 10 + u64::from(d);
        }
        Some(())
    };
    while let Some(d) = body.get(i).map(|c| c.wrapping_sub(b'0')).filter(|d| *d <= 9) {
        push(d, &mut mantissa)?;
        any_digit = true;
        i += 1;
    }
    if body.get(i) == Some(&b'.') {
        i += 1;
        while let Some(d) = body.get(i).map(|c| c.wrapping_sub(b'0')).filter(|d| *d <= 9) {
            push(d, &mut mantissa)?;
            any_digit = true;
            exp10 -= 1;
            i += 1;
        }
    }
    if !any_digit {
        return None;
    }
    if matches!(body.get(i), Some(b'e' | b'E')) {
        i += 1;
        let exp_negative = match body.get(i) {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        let start = i;
        let mut exp: i32 = 0;
        while let Some(d) = body.get(i).map(|c| c.wrapping_sub(b'0')).filter(|d| *d <= 9) {
            exp = exp * 10 + i32::from(d);
            if exp > MAX_EXPONENT {
                return None;
            }
            i += 1;
        }
        if i == start {
            return None;
        }
        exp10 += if exp_negative { -exp } else { exp };
    }
    (i == body.len()).then_some(Decimal { negative, mantissa, exp10 })
}

/// The value of a scanned decimal when it can be had exactly without the general parser.
fn fast_value(d: Decimal) -> Option<Value> {
    if d.mantissa == 0 {
        // `-0`, `0e-400`: from_f64 maps both zeros to the integer 0.
        return Some(Value::U64(0));
    }
    if !d.negative {
        let integer = if d.exp10 >= 0 {
            POW10_U64.get(d.exp10 as usize).and_then(|p| d.mantissa.checked_mul(*p))
        } else {
            POW10_U64
                .get(d.exp10.unsigned_abs() as usize)
                .filter(|p| d.mantissa.is_multiple_of(**p))
                .map(|p| d.mantissa / p)
        };
        if let Some(v) = integer.filter(|v| *v <= EXACT_INT_MAX) {
            return Some(Value::U64(v));
        }
    }
    if d.mantissa <= EXACT_INT_MAX {
        let m = d.mantissa as f64;
        let magnitude = if d.exp10 >= 0 {
            m * *POW10_F64.get(d.exp10 as usize)?
        } else {
            m / *POW10_F64.get(d.exp10.unsigned_abs() as usize)?
        };
        return Some(Value::from_f64(if d.negative { -magnitude } else { magnitude }));
    }
    None
}

/// A number token read as a float and normalised by [`Value::from_f64`] (integral values <= 2^53
/// become `U64`): the same result as `Value::from_f64(token.parse::<f64>()?)` for every token,
/// including `NaN`, `+Inf`, `inf` and `infinity`; `None` when the standard parser rejects it.
pub fn float_value(tok: &[u8]) -> Option<Value> {
    if let Some(v) = scan(tok).and_then(fast_value) {
        return Some(v);
    }
    std_float_value(tok)
}

/// The reference: the standard library's correctly rounded parser.
fn std_float_value(tok: &[u8]) -> Option<Value> {
    std::str::from_utf8(tok).ok()?.parse::<f64>().ok().map(Value::from_f64)
}

/// Plain decimal digits that fit a u64 (`None` for anything else, or on overflow).
pub fn parse_u64_digits(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    if digits.len() > 19 {
        return parse_u64_digits_checked(digits);
    }
    // At most 19 digits: below 10^19 < 2^64, no overflow possible.
    let mut v: u64 = 0;
    let mut rest = digits;
    while let Some((chunk, tail)) = rest.split_first_chunk::<8>() {
        v = v * 100_000_000 + eight_digits(*chunk)?;
        rest = tail;
    }
    for &c in rest {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + u64::from(d);
    }
    Some(v)
}

fn parse_u64_digits_checked(digits: &[u8]) -> Option<u64> {
    let mut v: u64 = 0;
    for &c in digits {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(d))?;
    }
    Some(v)
}

/// Eight ASCII digits in one 64-bit word (the SWAR method of Lemire's fast_float
/// `parse_eight_digits_unrolled`), or `None` when any byte is not a digit.
fn eight_digits(chunk: [u8; 8]) -> Option<u64> {
    let v = u64::from_le_bytes(chunk);
    // Every byte is 0x30..=0x39: its high nibble is 3, and still 3 after adding 6.
    let all_digits = ((v & 0xf0f0_f0f0_f0f0_f0f0)
        | ((v.wrapping_add(0x0606_0606_0606_0606) & 0xf0f0_f0f0_f0f0_f0f0) >> 4))
        == 0x3333_3333_3333_3333;
    if !all_digits {
        return None;
    }
    let v = v - 0x3030_3030_3030_3030;
    // Pairs, then quadruples, then the eight digits (the first digit is the lowest byte).
    let v = v.wrapping_mul(10) + (v >> 8);
    let v = ((v & 0x0000_00ff_0000_00ff).wrapping_mul(100 + (1_000_000 << 32))
        + ((v >> 16) & 0x0000_00ff_0000_00ff).wrapping_mul(1 + (10_000 << 32)))
        >> 32;
    Some(v)
}

/// A plain integer token with an optional sign (`None` for anything else, or on overflow).
pub fn parse_i64_token(tok: &[u8]) -> Option<i64> {
    let (negative, digits) = match tok.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, tok),
    };
    let v = i64::try_from(parse_u64_digits(digits)?).ok()?;
    Some(if negative { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Equal values, NaN equal to NaN and the sign of a float zero significant.
    fn same(a: Option<Value>, b: Option<Value>) -> bool {
        match (a, b) {
            (Some(Value::F64(x)), Some(Value::F64(y))) => x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
            (a, b) => a == b,
        }
    }

    fn check(tok: &str) {
        let fast = float_value(tok.as_bytes());
        let reference = std_float_value(tok.as_bytes());
        assert!(same(fast, reference), "{tok:?}: fast {fast:?}, std {reference:?}");
    }

    #[test]
    fn go_g_counters_are_exact_integers() {
        assert_eq!(float_value(b"1.8527668e+07"), Some(Value::U64(18_527_668)));
        assert_eq!(float_value(b"5e+10"), Some(Value::U64(50_000_000_000)));
        assert_eq!(float_value(b"3.4359738368e+10"), Some(Value::U64(34_359_738_368)));
        assert_eq!(float_value(b"123456"), Some(Value::U64(123_456)));
        assert_eq!(float_value(b"0"), Some(Value::U64(0)));
        assert_eq!(float_value(b"1"), Some(Value::U64(1)));
        assert_eq!(float_value(b"9.007199254740992e+15"), Some(Value::U64(EXACT_INT_MAX)));
        assert_eq!(float_value(b"123456.000"), Some(Value::U64(123_456)));
    }

    #[test]
    fn tricky_tokens_agree_with_the_standard_parser() {
        for tok in [
            // not exactly representable: rounds (ties to even) to 2^53, which from_f64 keeps as u64
            "9.007199254740993e+15",
            "9007199254740993.0",
            "9.007199254740994e+15",
            "9.007199254740995e+15",
            "1e+21",
            "1e+22",
            "1e+23",
            "1.8446744073709552e+19",
            "1.8446744073709551615e+19",
            "18446744073709551616",
            "-0",
            "-0.0",
            "+0",
            "0e-400",
            "0.0e999999999999",
            "4.9e-324",
            "5e-324",
            "2.2250738585072014e-308",
            "1.7976931348623157e+308",
            "1.7976931348623159e+308",
            "1e308",
            "1e309",
            "1e-400",
            "1e99999999999999",
            "1e-99999999999999",
            "0.1",
            "0.3",
            "-3.5",
            "-5",
            "1.5",
            "0.99999999999999999",
            "4503599627370495.5",
            "4503599627370496.5",
            "1234567890123456789",
            "12345678901234567890",
            "1.2345678901234567890123e+10",
            "0.000000000000000000000000000001",
            "00000000000000000000000000001.5",
            "1.00000000000000000000000000000",
            ".5",
            "5.",
            "+.5",
            "-.5e1",
            "1E5",
            "1e05",
            "1e+0000000000000000000000005",
            "+Inf",
            "-Inf",
            "Inf",
            "inf",
            "infinity",
            "NaN",
            "nan",
            "-NaN",
            "1.5e",
            "1e+",
            "1e-",
            "e5",
            ".",
            "-",
            "+",
            "",
            "+-5",
            "--5",
            "1..5",
            "1.5.5",
            "12abc",
            "1_000",
            "0x10",
            " 1",
            "1 ",
            "1e5x",
            "١",
        ] {
            check(tok);
        }
        assert_eq!(float_value(b"9.007199254740993e+15"), Some(Value::U64(EXACT_INT_MAX)));
        assert_eq!(float_value(b"1e+21"), Some(Value::F64(1e21)));
        assert_eq!(float_value(b"-0"), Some(Value::U64(0)));
        assert_eq!(float_value(b"4.9e-324"), Some(Value::F64(5e-324)));
        assert_eq!(float_value(b"1.5e"), None);
        assert_eq!(float_value(b"1e+"), None);
        assert_eq!(float_value(b"\xff"), None);
    }

    #[test]
    fn integers() {
        assert_eq!(parse_u64_digits(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64_digits(b"18446744073709551616"), None);
        assert_eq!(parse_u64_digits(b"+1"), None);
        assert_eq!(parse_u64_digits(b"1764686822000"), Some(1_764_686_822_000));
        assert_eq!(parse_u64_digits(b"9999999999999999999"), Some(9_999_999_999_999_999_999));
        assert_eq!(parse_u64_digits(b"00000000000000000000000042"), Some(42));
        assert_eq!(parse_u64_digits(b"12345678"), Some(12_345_678));
        for bad in
            [&b"1234567/"[..], b"1234567:", b"12345678901234\x00", b"1234\xff678", b"123 5678", b"9876543210abcdef"]
        {
            assert_eq!(parse_u64_digits(bad), None, "{bad:?}");
        }
        assert_eq!(parse_u64_digits(b""), None);
        assert_eq!(parse_i64_token(b"-9223372036854775807"), Some(-i64::MAX));
        assert_eq!(parse_i64_token(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64_token(b"9223372036854775808"), None);
        assert_eq!(parse_i64_token(b"-9223372036854775809"), None);
        assert_eq!(parse_i64_token(b"+17"), Some(17));
        assert_eq!(parse_i64_token(b"-"), None);
        assert_eq!(parse_i64_token(b"1.5"), None);
    }

    proptest! {
        #[test]
        fn any_double_written_by_go_or_rust_reads_back_the_same(bits in any::<u64>()) {
            let v = f64::from_bits(bits);
            for tok in [format!("{v:e}"), format!("{v}"), format!("{v:.3e}"), format!("{v:?}")] {
                check(&tok);
            }
        }

        #[test]
        fn decimal_shapes_agree(
            sign in prop::sample::select(vec!["", "+", "-"]),
            int in "[0-9]{0,22}",
            frac in prop::option::of("[0-9]{0,22}"),
            exp in prop::option::of((prop::sample::select(vec!["e", "E"]), prop::sample::select(vec!["", "+", "-"]), "[0-9]{0,4}")),
        ) {
            let mut tok = format!("{sign}{int}");
            if let Some(f) = frac {
                tok.push('.');
                tok.push_str(&f);
            }
            if let Some((e, s, d)) = exp {
                tok.push_str(e);
                tok.push_str(s);
                tok.push_str(&d);
            }
            check(&tok);
        }

        #[test]
        fn digit_runs_read_like_the_standard_parser(tok in "[0-9]{1,25}|[0-9/:a ]{1,20}") {
            prop_assert_eq!(parse_u64_digits(tok.as_bytes()), tok.parse::<u64>().ok());
        }

        #[test]
        fn integer_counters_in_go_g_form_agree(v in 0u64..(1 << 60), shift in 0u32..8) {
            let x = (v >> shift) as f64;
            check(&format!("{x:e}"));
            check(&format!("{:e}", x / 1000.0));
        }
    }
}
