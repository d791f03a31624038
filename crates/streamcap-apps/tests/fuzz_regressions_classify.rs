//! The `classify`, `dns_message` and `tls_hello` fuzz targets' checks
//! (`fuzz/checks/`) on the stored inputs of `fuzz/regressions/` and on
//! pseudo-random inputs, in the normal test suite (no nightly or
//! cargo-fuzz needed).

use std::path::{Path, PathBuf};

#[path = "../../../fuzz/checks/classify.rs"]
mod classify;

#[path = "../../../fuzz/checks/dns_message.rs"]
mod dns_message;

#[path = "../../../fuzz/checks/tls_hello.rs"]
mod tls_hello;

fn stored(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions")
        .join(target);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    assert!(!v.is_empty(), "no stored inputs in {}", dir.display());
    v
}

fn run_stored(target: &str, check: fn(&[u8])) {
    for f in stored(target) {
        let data = std::fs::read(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        check(&data);
        // Every stored input cut short, too.
        for cut in [1, 2, 5, 13, data.len() / 2, data.len().saturating_sub(1)] {
            check(&data[..cut.min(data.len())]);
        }
    }
}

#[test]
fn stored_classify_inputs_pass_the_checks() {
    run_stored("classify", classify::run);
}

#[test]
fn stored_dns_inputs_pass_the_checks() {
    run_stored("dns_message", dns_message::run);
}

#[test]
fn stored_tls_inputs_pass_the_checks() {
    run_stored("tls_hello", tls_hello::run);
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// The stored inputs with random bytes changed, and random inputs.
fn mutated(target: &str, check: fn(&[u8]), seed: u64, rounds: usize) {
    let mut rng = Rng(seed);
    let seeds: Vec<Vec<u8>> = stored(target)
        .iter()
        .map(|f| std::fs::read(f).expect("readable"))
        .collect();
    for i in 0..rounds {
        let mut d = if i % 4 == 3 {
            (0..rng.next() % 600).map(|_| rng.next() as u8).collect()
        } else {
            seeds[i % seeds.len()].clone()
        };
        if !d.is_empty() {
            for _ in 0..1 + rng.next() % 6 {
                let at = (rng.next() % d.len() as u64) as usize;
                d[at] = rng.next() as u8;
            }
        }
        check(&d);
    }
}

#[test]
fn mutated_classify_inputs_pass_the_checks() {
    mutated("classify", classify::run, 0x1234_5678_9abc_def1, 400);
}

#[test]
fn mutated_dns_inputs_pass_the_checks() {
    mutated("dns_message", dns_message::run, 0x0bad_cafe_f00d_1234, 3000);
}

#[test]
fn mutated_tls_inputs_pass_the_checks() {
    mutated("tls_hello", tls_hello::run, 0x5eed_5eed_1234_4321, 3000);
}
