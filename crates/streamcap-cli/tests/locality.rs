//! `--locality-batch N`: the same flow records, digests and stream files
//! as without it, on the sample and on a generated campus trace, with one
//! worker and two; bad values are refused.

mod common;

use common::*;
use std::path::Path;

fn sample() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../samples/sample.pcap")
        .display()
        .to_string()
}

fn sorted_lines(b: &[u8]) -> Vec<String> {
    let mut v: Vec<String> = String::from_utf8_lossy(b)
        .lines()
        .map(String::from)
        .collect();
    v.sort();
    v
}

/// The batch sizes compared with no batch.
const BATCHES: [&str; 3] = ["1", "100", "8000"];

#[test]
fn flow_records_do_not_depend_on_the_locality_batch() {
    let dir = tempdir("locality-flows");
    let c = impaired_campus(&dir, 5);
    let traces = [sample(), c.display().to_string()];
    for trace in &traces {
        for extra in [&[][..], &["--digest"]] {
            for workers in ["1", "2"] {
                let mut args = vec!["flows", "-q", "-r", trace, "--workers", workers];
                args.extend_from_slice(extra);
                let plain = run(&args);
                assert_eq!(plain.status.code(), Some(0), "{}", stderr(&plain));
                let want = sorted_lines(&plain.stdout);
                assert!(want.len() > 30, "{args:?}: {} records", want.len());
                for n in BATCHES {
                    let mut a = args.clone();
                    a.extend_from_slice(&["--locality-batch", n]);
                    let o = run(&a);
                    assert_eq!(o.status.code(), Some(0), "{a:?}: {}", stderr(&o));
                    assert_eq!(sorted_lines(&o.stdout), want, "{a:?}");
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn stream_files_do_not_depend_on_the_locality_batch() {
    let dir = tempdir("locality-streams");
    let c = impaired_campus(&dir, 5);
    for (t, trace) in [sample(), c.display().to_string()].iter().enumerate() {
        for workers in ["1", "2"] {
            let mut results = Vec::new();
            for n in std::iter::once("0").chain(BATCHES) {
                let out = dir.join(format!("out-{t}-{workers}-{n}"));
                let o = run(&[
                    "streams",
                    "-q",
                    "-r",
                    trace,
                    "--workers",
                    workers,
                    "--locality-batch",
                    n,
                    "-w",
                    out.to_str().unwrap_or_default(),
                ]);
                assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
                let jsonl = std::fs::read(out.join("streams.jsonl")).expect("streams.jsonl");
                results.push((
                    n,
                    stream_files(&out),
                    sorted_lines(&jsonl),
                    sorted_lines(&o.stdout),
                ));
                let _ = std::fs::remove_dir_all(&out);
            }
            let (_, files, jsonl, stdout) = &results[0];
            assert!(files.len() > 30, "{trace}: {} stream files", files.len());
            for (n, f, j, s) in &results[1..] {
                let what = format!("{trace}, {workers} workers, batch {n}");
                assert_eq!(f, files, "stream files: {what}");
                assert_eq!(j, jsonl, "streams.jsonl: {what}");
                assert_eq!(s, stdout, "stdout: {what}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_locality_values_are_refused() {
    let s = sample();
    for (args, msg) in [
        (
            &["--locality-batch", "1000001"][..],
            "--locality-batch 1000001: expected 0 (off) to 1000000 packets",
        ),
        (
            &["--locality-batch", "-1"],
            "invalid value '-1' for '--locality-batch <N>'",
        ),
        (
            &["--locality-batch", "many"],
            "invalid value 'many' for '--locality-batch <N>'",
        ),
        (
            &["--locality-batch", "8", "--locality-timeout", "-5"],
            "invalid value '-5' for '--locality-timeout <MS>'",
        ),
        (
            &["--locality-batch", "8", "--locality-timeout", "0"],
            "--locality-timeout 0: expected 1 to 60000 milliseconds",
        ),
        (
            &["--locality-batch", "8", "--locality-timeout", "60001"],
            "expected 1 to 60000 milliseconds",
        ),
        (
            &["--locality-timeout", "50"],
            "--locality-timeout needs --locality-batch N above 0",
        ),
        (
            &["--locality-batch", "8", "--locality-timeout", "50"],
            "--locality-timeout applies to live capture (-i), not to files (-r)",
        ),
    ] {
        for cmd in ["flows", "streams"] {
            let mut a = vec![cmd, "-q", "-r", &s];
            a.extend_from_slice(args);
            let o = run(&a);
            assert_eq!(o.status.code(), Some(2), "{a:?}");
            assert!(stderr(&o).contains(msg), "{a:?}: {}", stderr(&o));
            assert!(o.stdout.is_empty(), "{a:?}");
        }
    }
    // The largest batch is accepted.
    let o = run(&["flows", "-q", "-r", &s, "--locality-batch", "1000000"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}
