//! The `ipfix` fuzz target's check (`fuzz/checks/ipfix.rs`) on the stored
//! inputs of `fuzz/regressions/ipfix/`, cut short too, and on
//! pseudo-random inputs, in the normal test suite (no nightly or
//! cargo-fuzz needed).

use std::path::Path;

#[path = "../../../fuzz/checks/ipfix.rs"]
mod ipfix;

#[test]
fn stored_ipfix_inputs_pass_the_checks() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/ipfix");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    assert!(!files.is_empty(), "no stored inputs in {}", dir.display());
    for f in files {
        let data = std::fs::read(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for cut in [data.len(), 1, 2, 17, 100, data.len() / 2] {
            ipfix::run(&data[..cut.min(data.len())]);
        }
    }
}

/// Pseudo-random inputs of every configuration byte.
#[test]
fn random_ipfix_inputs_pass_the_checks() {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for cfg in 0..=255u8 {
        let len = (next() % 3000) as usize;
        let mut input = vec![cfg];
        input.extend((0..len).map(|_| next() as u8));
        ipfix::run(&input);
    }
}
