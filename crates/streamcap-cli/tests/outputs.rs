//! Outputs that could destroy inputs or mix runs: `-o` naming the input,
//! `streams -w` into a directory that already holds a run, `demo`'s
//! temporary file.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn sample_copy(dir: &Path) -> PathBuf {
    let p = dir.join("in.pcap");
    let bytes = streamcap_gen::sample(streamcap_gen::SAMPLE_DEFAULT_SEED).to_pcap_bytes();
    std::fs::write(&p, bytes).expect("write capture");
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap_or_default()
}

#[test]
fn output_naming_the_input_is_refused_before_it_is_truncated() {
    let dir = tempdir("out-is-in");
    let input = sample_copy(&dir);
    let before = std::fs::read(&input).expect("read");
    let link = dir.join("link.pcap");
    std::os::unix::fs::symlink(&input, &link).expect("symlink");
    for out in [&input, &link] {
        for format in ["json", "zeek"] {
            let o = run(&["flows", "-r", s(&input), "-o", s(out), "--format", format]);
            assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
            assert!(stderr(&o).contains("is the input file"), "{}", stderr(&o));
            assert_eq!(std::fs::read(&input).expect("read"), before, "input intact");
        }
    }
    // Standard input redirected from the file.
    let o = Command::new(BIN)
        .args(["flows", "-r", "-", "-o", s(&input)])
        .stdin(std::fs::File::open(&input).expect("open"))
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(std::fs::read(&input).expect("read"), before);
    // Standard output appended to the input.
    let o = Command::new(BIN)
        .args(["flows", "-r", s(&input)])
        .stdin(Stdio::null())
        .stdout(
            std::fs::OpenOptions::new()
                .append(true)
                .open(&input)
                .expect("open"),
        )
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(std::fs::read(&input).expect("read"), before);
    // -o onto the -w directory's records file (which does not exist yet).
    let w = dir.join("w");
    std::fs::create_dir_all(&w).expect("mkdir");
    let o = run(&[
        "streams",
        "-q",
        "-r",
        s(&input),
        "-w",
        s(&w),
        "-o",
        s(&dir.join("w/./streams.jsonl")),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("records file"), "{}", stderr(&o));
    assert!(
        !w.join("streams.jsonl").exists(),
        "nothing created before the check"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn streams_into_a_directory_with_a_run_needs_force_or_append() {
    let dir = tempdir("w-nonempty");
    let input = sample_copy(&dir);
    let w = dir.join("out");
    let streams = |extra: &[&str]| {
        let mut args = vec!["streams", "-q", "-r", s(&input), "-w", s(&w)];
        args.extend_from_slice(extra);
        run(&args)
    };
    let files = |w: &Path| {
        let mut v: Vec<String> = std::fs::read_dir(w)
            .expect("read dir")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let first = streams(&[]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let first_files = files(&w);
    let jsonl = std::fs::read(w.join("streams.jsonl")).expect("jsonl");
    let n = json_lines(&jsonl).len();
    assert!(n > 10 && first_files.len() > 10);

    // Again without a flag: refused, nothing touched.
    let o = streams(&[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("not empty") && err.contains("--force") && err.contains("--append"),
        "{err}"
    );
    assert_eq!(files(&w), first_files);
    assert_eq!(
        std::fs::read(w.join("streams.jsonl")).expect("jsonl"),
        jsonl
    );

    // --force: streamcap's files replaced (same names, no c1), others kept.
    std::fs::write(w.join("notes.txt"), b"mine").expect("write");
    let o = streams(&["--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut want = first_files.clone();
    want.push("notes.txt".into());
    want.sort();
    assert_eq!(files(&w), want);
    assert_eq!(
        std::fs::read(w.join("streams.jsonl")).expect("jsonl"),
        jsonl
    );

    // --append: the second run's files beside the first's, records appended.
    let o = streams(&["--append"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let recs = json_lines(&std::fs::read(w.join("streams.jsonl")).expect("jsonl"));
    assert_eq!(recs.len(), 2 * n);
    assert!(
        recs[n..].iter().any(|r| r["orig"]["file"]
            .as_str()
            .is_some_and(|f| f.ends_with("c1"))),
        "taken names get tcpflow's c1"
    );
    // --force and --append exclude each other, and need -w.
    assert_eq!(streams(&["--force", "--append"]).status.code(), Some(2));
    let o = run(&["streams", "-q", "-r", s(&input), "--force"]);
    assert_eq!(o.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn demo_uses_a_private_temporary_file() {
    let dir = tempdir("demo");
    let victim = dir.join("victim");
    std::fs::write(&victim, b"precious").expect("write");
    // What another user could plant at a fixed name in /tmp.
    std::os::unix::fs::symlink(&victim, dir.join("streamcap-sample.pcap")).expect("symlink");
    let o = Command::new(BIN)
        .arg("demo")
        .env("TMPDIR", &dir)
        .stdin(Stdio::null())
        .output()
        .expect("run demo");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read(&victim).expect("read"), b"precious");
    assert_eq!(json_lines(&o.stdout).len(), 40);
    // The temporary capture is gone after the run.
    let left: Vec<_> = std::fs::read_dir(&dir)
        .expect("read dir")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
    // -w FILE does not follow a symlink either.
    let o = run(&["demo", "-w", s(&dir.join("streamcap-sample.pcap"))]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(std::fs::read(&victim).expect("read"), b"precious");
    let kept = dir.join("kept.pcap");
    let o = run(&["demo", "-w", s(&kept)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(kept.exists());
    let _ = std::fs::remove_dir_all(&dir);
}
