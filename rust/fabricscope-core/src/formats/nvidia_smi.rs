//! `nvidia-smi nvlink` output: throughput counters (`-gt d`, `-gt r`, and the deprecated `-g <set>`),
//! link status (`-s`) and error counters (`-e`), several GPUs and appended snapshots per file.
//!
//! ```text
//! GPU 0: NVIDIA H800 (UUID: GPU-34bf77d1-c686-6821-79a8-32d326c5039c)
//!          Link 0: Data Tx: 5863784 KiB
//!          Link 0: Data Rx: 5863677 KiB
//!          Link 0: 26.562 GB/s
//!          Link 1: <inactive>
//!          Link 0: Replay Errors: 0
//! ```
//!
//! * Device `gpu<N>` (as DCGM rows name GPUs), port = link number. The GPU line's name and UUID
//!   become attributes `gpu_name`, `gpu_uuid` (null port).
//! * `Data Tx/Rx` (payload) → `nvlink_tx_bytes`/`nvlink_rx_bytes`; `Raw Tx/Rx` (payload and
//!   protocol overhead) → `nvlink_raw_tx_bytes`/`nvlink_raw_rx_bytes`; the old counter sets
//!   `Tx0`/`Rx0`/`Tx1`/`Rx1` → `nvlink_counter<n>_{tx,rx}_bytes` (they count what `-sc` set). The unit
//!   is KiB (`nvidia-smi nvlink -h`: "d: Display tx and rx data payload in KiB"): stored ×1024.
//! * `Link N: 25 GB/s` → attributes `nvlink_speed_gb_per_s` = `25`, `link_state` = `active`;
//!   `Link N: <inactive>` → `link_state` = `inactive`. A row with a second label is a counter.
//! * `Replay Errors`, `Recovery Errors`, `CRC Errors`, `CRC FLIT Errors`, `CRC Data Errors` → the
//!   NVLink error counters; other `... Errors` labels keep a snake-cased raw name.
//! * Drivers before the `-gt` option print the deprecated counter sets two to a line in KBytes:
//!   `Link 0: Rx0: 123 KBytes, Tx0: 456 KBytes` (each pair one counter, KBytes read as KiB).
//! * `Unable to retrieve NVLink information as all links are inActive` under a GPU (a GPU with no
//!   NVLink bridge or fabric) becomes attribute `nvlink_state` = `all links inactive` (null port)
//!   and a warning in the input's report, so the GPU is not silently missing.
//! * Counters reset on driver reload or reboot (the rate engine flags it). Host and time:
//!   `# host:`/timestamp lines, else the driver's fallbacks.

use ahash::AHashSet;

use crate::error::{Position, Result};
use crate::formats::{DirectiveState, LineReader, feed_lines};
use crate::read::ReadContext;
use crate::schema::{Attribute, Sample, Value};
use crate::vocabulary::{Namespace, lookup};

/// `GPU 0: NVIDIA H800 (UUID: GPU-...)` → (index, name, uuid).
fn parse_gpu(t: &str) -> Option<(u32, String, Option<String>)> {
    let rest = t.strip_prefix("GPU ")?;
    let (idx, rest) = rest.split_once(':')?;
    let idx = idx.trim().parse::<u32>().ok()?;
    let rest = rest.trim();
    match rest.rfind("(UUID:") {
        Some(at) => {
            let uuid = rest[at + 6..].trim().trim_end_matches(')').trim();
            Some((idx, rest[..at].trim().to_owned(), (!uuid.is_empty()).then(|| uuid.to_owned())))
        }
        None => Some((idx, rest.to_owned(), None)),
    }
}

/// `Link 3: ...` → (3, rest).
fn parse_link(t: &str) -> Option<(u16, &str)> {
    let rest = t.strip_prefix("Link ")?;
    let (n, rest) = rest.split_once(':')?;
    Some((n.trim().parse::<u16>().ok()?, rest.trim()))
}

/// True when the first bytes look like `nvidia-smi nvlink` output.
pub fn looks_like(text: &str) -> bool {
    let mut gpu = false;
    for line in text.lines().take(400) {
        let t = line.trim();
        if parse_gpu(t).is_some() {
            gpu = true;
        } else if gpu
            && (parse_link(t).is_some_and(|(_, rest)| known_link_row(rest))
                || t.to_ascii_lowercase().contains("nvlink information as all links are inactive"))
        {
            return true;
        }
    }
    false
}

/// The right-hand sides `nvidia-smi nvlink` prints after `Link N:` (`-e` on new drivers prints the
/// GPU line without a UUID, so the link rows carry the detection).
fn known_link_row(rest: &str) -> bool {
    rest == "<inactive>"
        || rest.ends_with(" GB/s")
        || rest.ends_with(" KiB")
        || rest.ends_with(" KBytes")
        || rest.split_once(':').is_some_and(|(label, _)| label.trim().ends_with("Errors"))
}

/// `Replay Errors` → `replay_errors`.
fn snake(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_end_matches('_').to_owned()
}

/// Streaming reader for `nvidia-smi nvlink` output.
#[derive(Default)]
pub struct NvidiaSmiReader {
    directives: DirectiveState,
    gpu: Option<u32>,
    described: AHashSet<(u32, String)>,
}

impl NvidiaSmiReader {
    /// A reader for one input.
    pub fn new() -> Self {
        NvidiaSmiReader::default()
    }

    fn attribute(&mut self, port: Option<u16>, key: &str, value: &str, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Some(gpu) = self.gpu else { return Ok(()) };
        let time_ns = self.directives.time_ns(ctx)?;
        let host = self.directives.host(ctx);
        let a = Attribute { time_ns, host: 0, device: 0, port, key, value };
        ctx.push_attribute(&host, &format!("gpu{gpu}"), &a)
    }

    fn counter(&mut self, port: u16, raw: &str, value: Value, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Some(gpu) = self.gpu else { return Ok(()) };
        let (name, value, scale, is_counter) = match lookup(Namespace::NvidiaSmi, raw) {
            Some(m) => (m.def.name.to_owned(), value.multiplied(m.multiply), m.scale, true),
            None => (format!("nvlink_{}", snake(raw)), value, 1, true),
        };
        let time_ns = self.directives.time_ns(ctx)?;
        let host_name = self.directives.host(ctx);
        let host = ctx.samples.host(&host_name);
        let device = ctx.samples.device(&format!("gpu{gpu}"));
        let counter = ctx.samples.counter(&name);
        ctx.push(&Sample { time_ns, host, device, port: Some(port), priority: None, counter, value, scale, is_counter })
    }

    fn line(&mut self, raw: &[u8], pos: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        let Ok(line) = std::str::from_utf8(raw) else {
            return ctx.bad_record(pos, "UTF-8 text", raw);
        };
        let t = line.trim();
        if t.is_empty() {
            return Ok(());
        }
        if let Some((idx, name, uuid)) = parse_gpu(t) {
            self.gpu = Some(idx);
            if self.described.insert((idx, name.clone())) {
                self.attribute(None, "gpu_name", &name, ctx)?;
                if let Some(u) = uuid {
                    self.attribute(None, "gpu_uuid", &u, ctx)?;
                }
            }
            return Ok(());
        }
        let Some((link, rest)) = parse_link(t) else {
            if t.to_ascii_lowercase().contains("all links are inactive") {
                if let Some(gpu) = self.gpu {
                    ctx.warn(format!("gpu{gpu}: nvidia-smi reports all NVLink links inactive (`{t}`)"));
                }
                return self.attribute(None, "nvlink_state", "all links inactive", ctx);
            }
            self.directives.apply_line(t);
            // Other nvidia-smi chatter (`NVML: Unable to ...`, `-c` capability lines) is skipped.
            return Ok(());
        };
        if self.gpu.is_none() {
            return ctx.bad_record(pos, "a `GPU <n>: <name> (UUID: ...)` line before `Link` lines", raw);
        }
        if rest == "<inactive>" || rest.eq_ignore_ascii_case("inactive") {
            return self.attribute(Some(link), "link_state", "inactive", ctx);
        }
        match rest.split_once(':') {
            // `Link 0: 25 GB/s`: a status row.
            None => {
                let Some(speed) = rest.strip_suffix("GB/s").map(str::trim) else {
                    return ctx.bad_record(pos, "`<n> GB/s`, `<inactive>` or `<label>: <value>`", raw);
                };
                if speed.parse::<f64>().map_or(true, |v| !v.is_finite() || v < 0.0) {
                    return ctx.bad_record(pos, "a link speed in GB/s", raw);
                }
                self.attribute(Some(link), "nvlink_speed_gb_per_s", speed, ctx)?;
                self.attribute(Some(link), "link_state", "active", ctx)
            }
            // `Link 0: Rx0: 123 KBytes, Tx0: 456 KBytes`: two counters of the old `-g` layout.
            Some(_) if rest.ends_with(" KBytes") => {
                for pair in rest.split(", ") {
                    let parsed = pair.split_once(':').and_then(|(label, value)| {
                        let n = value.trim().strip_suffix("KBytes")?.trim().parse::<u64>().ok()?;
                        Some((label.trim(), n))
                    });
                    let Some((label, n)) = parsed else {
                        return ctx.bad_record(pos, "`<counter>: <n> KBytes` pairs separated by `, `", raw);
                    };
                    self.counter(link, label, Value::U64(n), ctx)?;
                }
                Ok(())
            }
            // `Link 0: Data Tx: 5863784 KiB`, `Link 0: Replay Errors: 0`: a counter row.
            Some((label, value)) => {
                let label = label.trim();
                let mut words = value.split_whitespace();
                let number = words.next().unwrap_or("");
                let unit = words.next();
                let v = if number == "N/A" {
                    Value::Null
                } else {
                    match number.parse::<u64>() {
                        Ok(v) => Value::U64(v),
                        Err(_) => return ctx.bad_record(pos, "a non-negative integer counter value", raw),
                    }
                };
                // Throughput labels (`Data Tx`, `Raw Rx`, `Tx0`) carry a unit; error labels do not.
                let is_bytes = !label.ends_with("Errors");
                match (is_bytes, unit) {
                    (true, Some("KiB")) | (false, None) => {}
                    (true, None) if v == Value::Null => {}
                    _ => return ctx.bad_record(pos, "throughput in KiB or a plain error count", raw),
                }
                self.counter(link, label, v, ctx)
            }
        }
    }
}

impl LineReader for NvidiaSmiReader {
    fn feed(&mut self, chunk: &[u8], start: Position, ctx: &mut ReadContext<'_>) -> Result<()> {
        feed_lines(chunk, start, ctx, |raw, pos, ctx| self.line(raw, pos, ctx))
    }

    fn finish(&mut self, _ctx: &mut ReadContext<'_>) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_and_link_lines() {
        let g = parse_gpu("GPU 0: NVIDIA H800 (UUID: GPU-34bf77d1-c686-6821-79a8-32d326c5039c)").expect("gpu");
        assert_eq!(g, (0, "NVIDIA H800".into(), Some("GPU-34bf77d1-c686-6821-79a8-32d326c5039c".into())));
        assert_eq!(parse_gpu("GPU 1: NVIDIA GB300"), Some((1, "NVIDIA GB300".into(), None)));
        assert_eq!(parse_link("Link 17: 53.125 GB/s"), Some((17, "53.125 GB/s")));
        assert_eq!(parse_link("Link x: 1"), None);
        assert!(looks_like("GPU 0: A (UUID: GPU-1)\n\t Link 0: Data Tx: 1 KiB\n"));
        assert!(looks_like("GPU 0: NVIDIA GB300\n\t Link 0: Replay Errors: 0\n"));
        assert!(!looks_like("GPU 0: A (UUID: GPU-1)\n"));
        assert!(!looks_like("GPU 0: A\nLink 0: up\n"));
        assert!(looks_like(
            "GPU 0: A (UUID: GPU-1)\n\t Unable to retrieve NVLink information as all links are inActive\n"
        ));
        assert!(looks_like(
            "GPU 0: Tesla P100-SXM2-16GB (UUID: GPU-1)\n         Link 0: Rx0: 123 KBytes, Tx0: 456 KBytes\n"
        ));
    }
}
