//! Test helpers shared by the streamcap crate's tests (`tests/support`) and
//! the command line's (`crates/streamcap-cli/tests/common`), the
//! applications' (`crates/streamcap-apps/tests`) and the libpcap layer's
//! (`crates/streamcap-pcap/tests/common`), which include this file by path:
//! saying why a test skips, finding the corpus, and scratch directories
//! that clean up after themselves. Each includer uses some of them.
#![allow(dead_code)]

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

/// A test's scratch directory, `$TMPDIR/<prefix>-<pid>-<name>`, created
/// empty and removed when dropped. When the test is failing (its thread is
/// panicking) the directory is kept and its path written to stderr, for a
/// look at what the test left.
pub struct TestDir(PathBuf);

impl TestDir {
    /// Creates the directory, removing a leftover of the same name first.
    pub fn new(prefix: &str, name: &str) -> TestDir {
        let dir = std::env::temp_dir().join(format!("{prefix}-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
        TestDir(dir)
    }

    /// `name` inside this directory, which lives as long as the returned
    /// file does.
    pub fn into_file(self, name: &str) -> TestFile {
        TestFile {
            path: self.0.join(name),
            _dir: self,
        }
    }
}

impl std::ops::Deref for TestDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TestDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for TestDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "kept {} (the test failed)",
                self.0.display()
            );
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// A path to a file in its own [`TestDir`], removed with it.
pub struct TestFile {
    path: PathBuf,
    _dir: TestDir,
}

impl std::ops::Deref for TestFile {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for TestFile {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<std::ffi::OsStr> for TestFile {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.path.as_os_str()
    }
}
