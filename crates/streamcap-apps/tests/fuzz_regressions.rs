//! The `rules` and `nids_match` fuzz targets' checks (`fuzz/checks/`) on
//! the stored inputs of `fuzz/regressions/{rules,nids_match}/`, on every
//! rule file Suricata installs and on pseudo-random inputs, in the normal
//! test suite (no nightly or cargo-fuzz needed).

use std::path::{Path, PathBuf};

#[path = "../../../fuzz/checks/rules.rs"]
mod rules;

#[path = "../../../fuzz/checks/nids_match.rs"]
mod nids_match;

fn files(dir: &Path, ext: Option<&str>) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .filter(|p| ext.is_none_or(|x| p.extension().is_some_and(|e| e == x)))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn stored_rule_inputs_pass_the_checks() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/rules");
    let inputs = files(&dir, None);
    assert!(!inputs.is_empty(), "no stored inputs in {}", dir.display());
    for f in inputs {
        eprintln!("rules: {}", f.display());
        rules::run(&std::fs::read(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display())));
    }
}

#[test]
fn suricata_rule_files_pass_the_checks() {
    for dir in ["/etc/suricata/rules", "/usr/share/suricata/rules"] {
        for f in files(Path::new(dir), Some("rules")) {
            rules::run(&std::fs::read(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display())));
        }
    }
}

#[test]
fn stored_matching_inputs_pass_the_checks() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/nids_match");
    let inputs = files(&dir, None);
    assert!(!inputs.is_empty(), "no stored inputs in {}", dir.display());
    for f in inputs {
        nids_match::run(&std::fs::read(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display())));
    }
}

/// Pseudo-random inputs for the matching check: short patterns over a
/// small alphabet, so that they occur, overlap and straddle the cuts.
#[test]
fn random_matching_inputs_pass_the_checks() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..60 {
        let mut input = vec![next() as u8, next() as u8 % 8];
        let alphabet = b"abcAB\x00";
        for _ in 0..=input[1] {
            let len = 1 + next() as u8 % 5;
            input.push(len - 1);
            input.extend((0..len).map(|_| alphabet[next() as usize % alphabet.len()]));
        }
        let ncut = next() as u8 % 12;
        input.push(ncut);
        input.extend((0..ncut).map(|_| next() as u8 % 9));
        input.extend((0..200 + next() % 300).map(|_| alphabet[next() as usize % alphabet.len()]));
        nids_match::run(&input);
    }
}
