//! Test helpers shared by the streamcap crate's tests (`tests/support`) and
//! the command line's (`crates/streamcap-cli/tests/common`) and the
//! applications' (`crates/streamcap-apps/tests`), which include this file
//! by path: saying why a test skips, and finding the corpus.

use std::path::{Path, PathBuf};

/// Says why a test does not run. Written straight to the process's stderr:
/// the test harness captures `eprintln!` (shown only for failing tests), so
/// a skipped test would otherwise pass without a word.
pub fn skip(reason: impl std::fmt::Display) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipping: {reason}");
}

/// Where the shared corpus is looked for: `$STREAMCAP_CORPUS` when set (CI
/// sets it to a missing folder to run the suite as a fresh clone without
/// the corpus would), else beside the repository.
pub fn corpus_path() -> PathBuf {
    match std::env::var_os("STREAMCAP_CORPUS") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"),
    }
}

/// The shared corpus, or `None` (with a message).
pub fn corpus_dir() -> Option<PathBuf> {
    let d = corpus_path();
    if d.is_dir() {
        Some(d)
    } else {
        skip(format!("corpus not found at {}", d.display()));
        None
    }
}

/// Every capture file under `dir`, sorted.
pub fn captures(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("pcap" | "pcapng" | "cap")
            ) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}
