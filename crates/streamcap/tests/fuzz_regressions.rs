//! The fuzz targets' checks (`fuzz/checks/`) on the stored inputs of
//! `fuzz/regressions/<target>/` (minimized crashers found by fuzzing, each
//! of which must now pass, and small inputs that reach deep paths) and on
//! the generator's seeds (`streamcap_gen::fuzz_seeds`). Runs in the normal
//! test suite, without nightly or cargo-fuzz.

use std::path::{Path, PathBuf};

#[path = "../../../fuzz/checks/mod.rs"]
mod checks;

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn stored_inputs_pass_every_check() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions");
    let mut total = 0;
    for (name, run) in checks::TARGETS {
        let files = inputs(&root.join(name));
        assert!(
            !files.is_empty(),
            "no stored inputs for {name} in {}",
            root.display()
        );
        for f in files {
            let data = std::fs::read(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            eprintln!("{name}: {}", f.display());
            run(&data);
            total += 1;
        }
    }
    eprintln!("{total} stored inputs passed");
}

#[test]
fn generator_seeds_pass_every_check() {
    let seeds = streamcap_gen::fuzz_seeds::seeds();
    for (target, name, bytes) in &seeds {
        let Some((_, run)) = checks::TARGETS.iter().find(|(t, _)| t == target) else {
            panic!("seed {name} is for an unknown target {target}");
        };
        eprintln!("{target}: {name}");
        run(bytes);
    }
}
