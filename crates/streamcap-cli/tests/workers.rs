//! `--workers N` on files: the same records as one worker, whole records
//! only, headers and trailers once, the same stream files.

mod common;

use common::*;

fn sorted_lines(b: &[u8]) -> Vec<String> {
    let mut v: Vec<String> = String::from_utf8_lossy(b)
        .lines()
        .map(String::from)
        .collect();
    v.sort();
    v
}

#[test]
fn records_do_not_depend_on_the_worker_count() {
    let dir = tempdir("workers-records");
    let f = impaired_campus(&dir, 3);
    let fs = f.to_str().unwrap_or_default();
    for extra in [
        &["--digest"][..],
        &[],
        &["--format", "csv"],
        &["-c", "5000", "tcp"],
    ] {
        let mut args = vec!["flows", "-q", "-r", fs];
        args.extend_from_slice(extra);
        let one = run(&args);
        assert_eq!(one.status.code(), Some(0), "{}", stderr(&one));
        let want = sorted_lines(&one.stdout);
        assert!(want.len() > 100);
        for (n, mode) in [("2", "hash"), ("3", "hash"), ("2", "locality")] {
            let mut a = args.clone();
            a.extend_from_slice(&["--workers", n, "--fanout", mode]);
            let o = run(&a);
            assert_eq!(o.status.code(), Some(0), "{a:?}: {}", stderr(&o));
            assert_eq!(sorted_lines(&o.stdout), want, "{a:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn zeek_log_has_one_header_and_one_trailer() {
    let dir = tempdir("workers-zeek");
    let f = impaired_campus(&dir, 3);
    let o = run(&[
        "flows",
        "-q",
        "-r",
        f.to_str().unwrap_or_default(),
        "--workers",
        "2",
        "--format",
        "zeek",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("#separator"));
    assert_eq!(lines.iter().filter(|l| l.starts_with("#fields")).count(), 1);
    assert_eq!(lines.iter().filter(|l| l.starts_with("#close")).count(), 1);
    assert!(lines[lines.len() - 1].starts_with("#close"));
    // Every record line is whole: the header's column count.
    let cols = lines
        .iter()
        .find(|l| l.starts_with("#fields"))
        .map_or(0, |l| l.split('\t').count() - 1);
    for l in lines.iter().filter(|l| !l.starts_with('#')) {
        assert_eq!(l.split('\t').count(), cols, "{l}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn stream_files_do_not_depend_on_the_worker_count() {
    let dir = tempdir("workers-streams");
    let f = impaired_campus(&dir, 3);
    let mut results = Vec::new();
    for n in ["1", "2"] {
        let out = dir.join(format!("out{n}"));
        let o = run(&[
            "streams",
            "-q",
            "-r",
            f.to_str().unwrap_or_default(),
            "--workers",
            n,
            "-w",
            out.to_str().unwrap_or_default(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let jsonl = std::fs::read(out.join("streams.jsonl")).expect("streams.jsonl");
        results.push((
            stream_files(&out),
            sorted_lines(&jsonl),
            sorted_lines(&o.stdout),
        ));
    }
    assert!(results[0].0.len() > 100);
    assert_eq!(results[0].0, results[1].0, "stream files");
    assert_eq!(results[0].1, results[1].1, "streams.jsonl");
    assert_eq!(results[0].2, results[1].2, "stdout");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn summary_shows_each_worker() {
    let dir = tempdir("workers-summary");
    let f = impaired_campus(&dir, 3);
    let o = run(&[
        "flows",
        "-r",
        f.to_str().unwrap_or_default(),
        "--workers",
        "2",
        "--pin",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("workers      2 (hash): #0 on CPU 0: "),
        "{err}"
    );
    assert!(err.contains("#1 on CPU 0: "), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn affinity_breaking_modes_and_live_options_are_refused_for_files() {
    for (args, msg) in [
        (&["--fanout", "lb"][..], "breaks flow affinity"),
        (&["--fanout", "rnd"], "breaks flow affinity"),
        (&["--fanout", "nope"], "unknown in-process fan-out mode"),
        (&["--workers", "0"], "expected 1 to 256"),
        (&["--pin", "x"], "not a CPU number"),
        (&["--group", "7"], "applies to live capture"),
        (&["--snaplen", "96"], "applies to live capture"),
    ] {
        let mut a = vec!["flows", "-r", "x.pcap"];
        a.extend_from_slice(args);
        let o = run(&a);
        assert_eq!(o.status.code(), Some(2), "{a:?}");
        assert!(stderr(&o).contains(msg), "{a:?}: {}", stderr(&o));
    }
}
