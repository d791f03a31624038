//! The `rules` fuzz target's checks (`fuzz/checks/rules.rs`) on the stored
//! inputs of `fuzz/regressions/rules/` and on every rule file Suricata
//! installs, in the normal test suite (no nightly or cargo-fuzz needed).

use std::path::{Path, PathBuf};

#[path = "../../../fuzz/checks/rules.rs"]
mod rules;

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
