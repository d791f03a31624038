//! Output paths checked against the inputs, and the `streams -w` directory
//! prepared, before anything is opened for writing.
//!
//! An output that is an input (the same file, however it is named: a
//! symlink, a hard link, `/dev/stdin` redirected from it) would be truncated
//! before it is read, so it is refused. A `-w` directory that already holds
//! files is refused too unless `--force` (streamcap's files in it are
//! replaced) or `--append` (new files are added beside them, and records
//! appended to `streams.jsonl`) says what to do, so two runs never mix
//! silently.

use crate::tcpflow;
use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The record file in a `-w` directory.
pub const JSONL_NAME: &str = "streams.jsonl";

/// What to do with a `-w` directory that already holds files.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DirMode {
    /// Refuse a directory that is not empty.
    Fresh,
    /// Remove streamcap's files (`streams.jsonl` and files named like a
    /// stream, `SRCIP.SRCPORT-DSTIP.DSTPORT…`) first; leave others alone.
    Force,
    /// Keep what is there: stream files get tcpflow's `c1`, `c2`… names when
    /// taken, records are appended to `streams.jsonl`.
    Append,
}

/// The `streams -w` directory and what to do with its contents.
#[derive(Clone, Debug)]
pub struct OutDir {
    /// The directory.
    pub path: PathBuf,
    /// What to do with files already in it.
    pub mode: DirMode,
}

impl OutDir {
    /// `DIR/streams.jsonl`.
    pub fn jsonl(&self) -> PathBuf {
        self.path.join(JSONL_NAME)
    }
}

/// A file's identity: device and inode.
type Identity = (u64, u64);

/// The identity of the regular file at `p` (symlinks followed), if it is one.
fn regular_file(p: &Path) -> Option<Identity> {
    let m = fs::metadata(p).ok()?;
    (m.file_type().is_file()).then(|| (m.dev(), m.ino()))
}

/// The identity of whatever is at `p` (symlinks followed), if it exists.
fn existing(p: &Path) -> Option<Identity> {
    let m = fs::metadata(p).ok()?;
    // A character device (/dev/null, a terminal) is no one's input file.
    if m.file_type().is_char_device() {
        return None;
    }
    Some((m.dev(), m.ino()))
}

/// The input file's identity: `-r FILE`, or the file standard input is
/// redirected from (`-r - < FILE`); `None` for a pipe, a terminal, live
/// capture.
fn input_identity(read: Option<&Path>) -> Option<Identity> {
    match read {
        Some(p) if p == Path::new("-") => regular_file(Path::new("/dev/stdin")),
        Some(p) => regular_file(p),
        None => None,
    }
}

/// `p` made absolute with its existing part resolved (symlinks, `..`): the
/// deepest ancestor that exists, canonicalized, and the rest as given.
fn resolved(p: &Path) -> Option<PathBuf> {
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(p)
    };
    let mut rest = Vec::new();
    let mut at = abs.as_path();
    loop {
        if let Ok(real) = fs::canonicalize(at) {
            return Some(rest.iter().rev().fold(real, |acc, c| acc.join(c)));
        }
        rest.push(at.file_name()?.to_os_string());
        at = at.parent()?;
    }
}

/// Whether `a` and `b` name the same place, for paths that may not exist
/// yet: the same existing file, or the same path once the parts that exist
/// are resolved.
fn same_place(a: &Path, b: &Path) -> bool {
    if let (Some(x), Some(y)) = (existing(a), existing(b)) {
        return x == y;
    }
    matches!((resolved(a), resolved(b)), (Some(x), Some(y)) if x == y)
}

/// Checks that `--stats-json` names neither the input file nor the
/// records' output.
pub fn check_stats(read: Option<&Path>, output: Option<&Path>, stats: &Path) -> Result<(), String> {
    check_extra(read, output, stats, "--stats-json", "the statistics")
}

/// Checks a further output file (`option` names it, `what` says what goes
/// in it) as [`check_stats`] does: neither the input nor `-o`.
pub fn check_extra(
    read: Option<&Path>,
    output: Option<&Path>,
    path: &Path,
    option: &str,
    what: &str,
) -> Result<(), String> {
    if let Some(id) = input_identity(read) {
        if existing(path) == Some(id) {
            return Err(format!(
                "{option} {} is the input file: writing {what} would destroy the capture; choose another file",
                path.display()
            ));
        }
    }
    if let Some(o) = output.filter(|p| *p != Path::new("-")) {
        if same_place(o, path) {
            return Err(format!(
                "{option} {} is also the records' output (-o): choose another file",
                path.display()
            ));
        }
    }
    Ok(())
}

/// Whether a file name is one streamcap writes into a `-w` directory.
pub fn is_ours(name: &str) -> bool {
    name == JSONL_NAME || tcpflow::is_flow_name(name)
}

/// Checks every output against the input before anything is written:
/// `-o PATH` (and standard output, when it is redirected to a file) must
/// not be the input file; with `-w DIR`, `DIR/streams.jsonl` must be
/// neither the input nor `-o`, the input must not be one of the files
/// `--force` removes, and a non-empty DIR needs `--force` or `--append`.
/// The error is a usage error's message.
pub fn check(
    read: Option<&Path>,
    output: Option<&Path>,
    dir: Option<&OutDir>,
) -> Result<(), String> {
    let input = input_identity(read);
    let input_name = match read {
        Some(p) if p == Path::new("-") => "standard input".to_string(),
        Some(p) => p.display().to_string(),
        None => String::new(),
    };
    let out = output.filter(|p| *p != Path::new("-"));
    if let Some(id) = input {
        let clash = match out {
            Some(p) => existing(p) == Some(id),
            None => existing(Path::new("/dev/stdout")) == Some(id),
        };
        if clash {
            let what = out.map_or_else(
                || "standard output".to_string(),
                |p| format!("-o {}", p.display()),
            );
            return Err(format!(
                "{what} is the input file ({input_name}): writing the records would destroy the capture before it is read; choose another output"
            ));
        }
    }
    let Some(dir) = dir else { return Ok(()) };
    let jsonl = dir.jsonl();
    if let Some(p) = out {
        if same_place(p, &jsonl) {
            return Err(format!(
                "-o {} is the records file of -w {} ({}): choose another output",
                p.display(),
                dir.path.display(),
                JSONL_NAME
            ));
        }
    }
    if input.is_some() && existing(&jsonl) == input {
        return Err(format!(
            "the input {input_name} is {}, which -w writes to; choose another directory",
            jsonl.display()
        ));
    }
    let entries = match fs::read_dir(&dir.path) {
        Ok(rd) => rd,
        // Missing: created empty later. Not a directory or unreadable: the
        // creation reports it.
        Err(_) => return Ok(()),
    };
    let mut names = Vec::new();
    for e in entries.flatten() {
        names.push((e.file_name().to_string_lossy().into_owned(), e.path()));
    }
    names.sort();
    if names.is_empty() {
        return Ok(());
    }
    match dir.mode {
        DirMode::Fresh => {
            let first: Vec<&str> = names.iter().take(3).map(|(n, _)| n.as_str()).collect();
            Err(format!(
                "-w {}: the directory is not empty ({} entr{}: {}{}); a run would mix its files with the ones there. \
                 Give --force to replace streamcap's files in it (streams.jsonl and stream files), or --append to add to them",
                dir.path.display(),
                names.len(),
                if names.len() == 1 { "y" } else { "ies" },
                first.join(", "),
                if names.len() > 3 { ", …" } else { "" }
            ))
        }
        DirMode::Force => {
            for (name, path) in &names {
                if is_ours(name) && input.is_some() && existing(path) == input {
                    return Err(format!(
                        "the input {input_name} is {}, which --force would replace; move it or choose another directory",
                        path.display()
                    ));
                }
            }
            Ok(())
        }
        DirMode::Append => Ok(()),
    }
}

/// With `--force`, removes streamcap's files from the `-w` directory (after
/// [`check`] passed); other files stay. Fails with the file that could not
/// be removed.
pub fn clear_ours(dir: &OutDir) -> Result<(), String> {
    if dir.mode != DirMode::Force {
        return Ok(());
    }
    let Ok(entries) = fs::read_dir(&dir.path) else {
        return Ok(());
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let is_file = e.file_type().is_ok_and(|t| t.is_file() || t.is_symlink());
        if is_file && is_ours(&name) {
            fs::remove_file(e.path())
                .map_err(|err| format!("{}: cannot remove: {err}", e.path().display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("streamcap-paths-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).expect("mkdir");
        d
    }

    #[test]
    fn output_naming_the_input_is_refused() {
        let d = temp("same");
        let input = d.join("in.pcap");
        fs::write(&input, b"x").expect("write");
        let link = d.join("link.pcap");
        std::os::unix::fs::symlink(&input, &link).expect("symlink");
        let hard = d.join("hard.pcap");
        fs::hard_link(&input, &hard).expect("hard link");
        for out in [&input, &link, &hard] {
            let e = check(Some(&input), Some(out), None).expect_err("refused");
            assert!(e.contains("is the input file"), "{e}");
        }
        assert!(check(Some(&input), Some(&d.join("other.json")), None).is_ok());
        assert!(check(Some(&input), Some(Path::new("/dev/null")), None).is_ok());
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn directories_with_files_need_force_or_append() {
        let d = temp("dir");
        let out = OutDir {
            path: d.join("out"),
            mode: DirMode::Fresh,
        };
        assert!(check(None, None, Some(&out)).is_ok(), "missing is fine");
        fs::create_dir_all(&out.path).expect("mkdir");
        assert!(check(None, None, Some(&out)).is_ok(), "empty is fine");
        let stream = out.path.join("010.000.000.001.01234-010.000.000.002.00080");
        fs::write(&stream, b"old").expect("write");
        fs::write(out.path.join("notes.txt"), b"keep").expect("write");
        let e = check(None, None, Some(&out)).expect_err("refused");
        assert!(e.contains("--force") && e.contains("--append"), "{e}");
        for mode in [DirMode::Force, DirMode::Append] {
            let o = OutDir {
                mode,
                ..out.clone()
            };
            assert!(check(None, None, Some(&o)).is_ok());
        }
        // -o onto the directory's streams.jsonl, whether the directory and
        // the file exist or not, and however it is written.
        let o = OutDir {
            mode: DirMode::Append,
            ..out.clone()
        };
        let e = check(None, Some(&out.jsonl()), Some(&o)).expect_err("refused");
        assert!(e.contains("records file"), "{e}");
        let other = d.join("out/../out/./streams.jsonl");
        assert!(check(None, Some(&other), Some(&o)).is_err());
        let missing = OutDir {
            path: d.join("new/sub"),
            mode: DirMode::Fresh,
        };
        assert!(check(None, Some(&missing.jsonl()), Some(&missing)).is_err());
        assert!(check(None, Some(&d.join("new/sub/x.json")), Some(&missing)).is_ok());
        // The input inside the directory under a name --force removes.
        let f = OutDir {
            mode: DirMode::Force,
            ..out.clone()
        };
        let e = check(Some(&stream), None, Some(&f)).expect_err("refused");
        assert!(e.contains("--force would replace"), "{e}");
        clear_ours(&f).expect("clear");
        assert!(!stream.exists());
        assert!(out.path.join("notes.txt").exists());
        let _ = fs::remove_dir_all(&d);
    }
}
