//! A short fuzz run of every fuzz target on the stable toolchain, as an ordinary test.
//!
//! cargo-fuzz needs a sanitizer build (nightly or `RUSTC_BOOTSTRAP`) and minutes per target; CI
//! has neither to spare. This runs the same target bodies (`fuzz/common/mod.rs`) on the corpus
//! kept in the repository (`fuzz/seeds/<target>/`), then on mutations of it from a fixed-seed
//! generator: bit flips, interesting bytes and numbers, cuts, duplications, insertions and
//! splices of two seeds. A test build keeps debug assertions, so an integer overflow panics as it
//! does under `cargo fuzz run -a`. `FABRICSCOPE_FUZZ_EXECUTIONS` sets the executions per target
//! (default 300; `.ci/run` asks for more and prints the counts); the generator's seed is fixed,
//! so a failure reproduces, and the failing input is written to `fuzz/artifacts/smoke-<target>`.

#[path = "../../../fuzz/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};

/// Executions per target when `FABRICSCOPE_FUZZ_EXECUTIONS` is unset.
const DEFAULT_EXECUTIONS: usize = 300;
/// Longest mutated input (the cargo-fuzz runs use `-max_len=8192`).
const MAX_LEN: usize = 8192;

/// xorshift64*: a fixed, dependency-free generator (quality is not the point, reproducibility is).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next() % n as u64) as usize }
    }
}

/// Values that reach edge cases of parsers: overflow, signs, NaN, separators, JSON and proto bytes.
const INTERESTING: &[&[u8]] = &[
    b"9223372036854775807",
    b"18446744073709551616",
    b"-9223372036854775809",
    b"1e308",
    b"1e10",
    b"-1",
    b"NaN",
    b"+Inf",
    b"0x",
    b"\"",
    b"{",
    b"]",
    b"\n",
    b"\r\n",
    b"\0",
    b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
    b"\xef\xbb\xbf",
];

fn mutate(rng: &mut Rng, seeds: &[Vec<u8>], out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&seeds[rng.below(seeds.len())]);
    for _ in 0..=rng.below(4) {
        let len = out.len();
        match rng.below(7) {
            0 if len > 0 => {
                let i = rng.below(len);
                out[i] ^= 1 << rng.below(8);
            }
            1 => {
                let value = INTERESTING[rng.below(INTERESTING.len())];
                let at = rng.below(len + 1);
                out.splice(at..at, value.iter().copied());
            }
            2 if len > 0 => {
                let cut = rng.below(len);
                out.truncate(cut);
            }
            3 if len > 0 => {
                let a = rng.below(len);
                let b = (a + rng.below(64)).min(len);
                out.drain(a..b);
            }
            4 if len > 0 => {
                let a = rng.below(len);
                let b = (a + 1 + rng.below(256)).min(len);
                let piece = out[a..b].to_vec();
                let at = rng.below(len + 1);
                out.splice(at..at, piece);
            }
            5 => {
                let at = rng.below(len + 1);
                let bytes: Vec<u8> = (0..=rng.below(8)).map(|_| rng.next() as u8).collect();
                out.splice(at..at, bytes);
            }
            _ => {
                // Splice: this input's head with another seed's tail.
                let other = &seeds[rng.below(seeds.len())];
                let keep = rng.below(len + 1);
                out.truncate(keep);
                let from = rng.below(other.len() + 1);
                out.extend_from_slice(&other[from..]);
            }
        }
    }
    out.truncate(MAX_LEN);
}

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = fuzz_dir().join("seeds").join(target);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e} (run fuzz/seed_corpus.py --committed)", dir.display()))
        .map(|e| e.map_or_else(|e| panic!("{}: {e}", dir.display()), |e| e.path()))
        .collect();
    paths.sort();
    paths.iter().map(|p| std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))).collect()
}

/// Run `target` on `data`; on a panic keep the input for `cargo fuzz run` and fail naming it.
fn run_one(target: &str, data: &[u8]) {
    if std::panic::catch_unwind(|| common::run_target(target, data)).is_err() {
        let dir = fuzz_dir().join("artifacts");
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join(format!("smoke-{target}"));
        let _ = std::fs::write(&path, data);
        panic!("fuzz target {target} failed on the input written to {}", path.display());
    }
}

#[test]
fn every_fuzz_target_survives_its_corpus_and_mutations() {
    let executions = std::env::var("FABRICSCOPE_FUZZ_EXECUTIONS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(DEFAULT_EXECUTIONS);
    let targets_dir = fuzz_dir().join("fuzz_targets");
    for target in common::TARGETS {
        // One cargo-fuzz target file per name, and a committed corpus for each.
        assert!(targets_dir.join(format!("{target}.rs")).is_file(), "fuzz/fuzz_targets/{target}.rs is missing");
        let corpus = seeds(target);
        assert!(!corpus.is_empty(), "fuzz/seeds/{target}/ is empty");
        // A fixed seed per target (FNV-1a of its name): every run mutates the same way.
        let mut rng =
            Rng(target.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)));
        let mut done = 0;
        for seed in &corpus {
            run_one(target, seed);
            done += 1;
        }
        let mut input = Vec::with_capacity(MAX_LEN);
        while done < executions.max(corpus.len()) {
            mutate(&mut rng, &corpus, &mut input);
            run_one(target, &input);
            done += 1;
        }
        eprintln!("fuzz smoke: {target}: {done} executions ({} seeds)", corpus.len());
    }
    // Every fuzz target file is in the list run here.
    let mut files: Vec<String> = std::fs::read_dir(&targets_dir)
        .unwrap_or_else(|e| panic!("{}: {e}", targets_dir.display()))
        .filter_map(|e| e.ok()?.path().file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    files.sort();
    assert_eq!(files, common::TARGETS.iter().map(ToString::to_string).collect::<Vec<_>>());
}
