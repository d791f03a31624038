//! Paced replay of a file (`--rate`, `--speed`, `--ring-size`): the same
//! records as an unpaced run when the ring holds the whole input, ring
//! drops reported on stderr and never in the records, and the options
//! checked. No assertion depends on timing: the 32 MiB default ring holds
//! the whole sample (so nothing can be dropped however slow the machine),
//! and a 2 KiB ring at 1 Tbit/s cannot keep up on any machine (the whole
//! sample falls due within 1.5 µs).

mod common;

use common::*;
use std::path::PathBuf;

fn sample() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../samples/sample.pcap")
        .to_string_lossy()
        .into_owned()
}

/// Runs a command that must succeed; its records (without a Zeek log's
/// `#open` and `#close` lines, which hold the time of the run) and its
/// stderr.
fn ok(args: &[&str]) -> (String, String) {
    let o = run(args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    let records: String = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.starts_with("#open") && !l.starts_with("#close"))
        .map(|l| format!("{l}\n"))
        .collect();
    (records, stderr(&o))
}

/// The number before `what` in the summary line starting with `line`.
fn summary_number(err: &str, line: &str, what: &str) -> u64 {
    let l = err
        .lines()
        .find(|l| l.trim_start().starts_with(line))
        .unwrap_or_else(|| panic!("no {line} line in:\n{err}"));
    let before = l
        .split(what)
        .next()
        .filter(|_| l.contains(what))
        .unwrap_or_else(|| panic!("no {what:?} in {l:?}"));
    before
        .split(|c: char| !c.is_ascii_digit())
        .rfind(|w| !w.is_empty())
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no number before {what:?} in {l:?}"))
}

#[test]
fn a_paced_replay_with_room_for_the_file_gives_the_unpaced_records() {
    let s = sample();
    for cmd in [
        &["flows", "--digest"][..],
        &["flows", "--format", "zeek"][..],
        &["streams"][..],
    ] {
        let base: Vec<&str> = cmd.iter().copied().chain(["-r", &s]).collect();
        let (plain, plain_err) = ok(&base);
        assert!(!plain_err.contains("  ring "), "{plain_err}");
        for pace in [
            &["--rate", "100Mbit/s"][..],
            &["--rate", "0.2Gbps"][..],
            &["--rate", "100kpps"][..],
            &["--speed", "1000x"][..],
        ] {
            let args: Vec<&str> = base.iter().copied().chain(pace.iter().copied()).collect();
            let (paced, err) = ok(&args);
            assert_eq!(paced, plain, "{args:?}");
            assert!(
                err.contains("  ring         0 dropped (ring full), 0 B on the wire; peak ")
                    && err.contains(" of the 32 MiB ring; idle "),
                "{args:?}: {err}"
            );
            assert!(err.contains("  packets      472 read, 472 IP"), "{err}");
        }
    }
    // -q: no summary at all; the records are the same.
    let (plain, _) = ok(&["flows", "-q", "-r", &s]);
    let (paced, err) = ok(&["flows", "-q", "-r", &s, "--rate", "1Gbit/s"]);
    assert_eq!((paced, err.as_str()), (plain, ""));
}

/// The ring sees every packet, then the filter and `-c` the packets it let
/// through: with nothing dropped, a filter and a count give the unpaced
/// records.
#[test]
fn the_filter_and_the_count_apply_after_the_ring() {
    let s = sample();
    let o = run(&["flows", "-q", "-r", &s, "udp"]);
    if stderr(&o).contains("install libpcap0.8") {
        skip("libpcap is not available");
        return;
    }
    for filtered in [&["udp"][..], &["-c", "5", "udp"], &["-c", "40"]] {
        let base: Vec<&str> = ["flows", "--digest", "-r", &s]
            .into_iter()
            .chain(filtered.iter().copied())
            .collect();
        let (plain, _) = ok(&base);
        let args: Vec<&str> = base
            .iter()
            .copied()
            .chain(["--rate", "200Mbit/s"])
            .collect();
        let (paced, err) = ok(&args);
        assert_eq!(paced, plain, "{args:?}");
        assert!(err.contains("  ring         0 dropped"), "{err}");
    }
}

#[test]
fn a_tiny_ring_at_a_high_rate_drops_packets_and_keeps_the_invariant() {
    let s = sample();
    for cmd in ["flows", "streams"] {
        let (out, err) = ok(&[cmd, "-r", &s, "--rate", "1000Gbit/s", "--ring-size", "2KiB"]);
        let dropped = summary_number(&err, "ring", " dropped (ring full)");
        assert!(dropped > 0, "{err}");
        assert!(err.contains(" of the 2 KiB ring; idle "), "{err}");
        // Every frame of the sample carries IP: those not dropped reached
        // the engine.
        assert_eq!(summary_number(&err, "packets", " read"), 472, "{err}");
        assert_eq!(
            summary_number(&err, "packets", " IP") + dropped,
            472,
            "{err}"
        );
        let records = json_lines(out.as_bytes());
        assert!(!records.is_empty());
        for r in &records {
            // Ring drops are only in the summary, never in a record.
            assert!(!r.to_string().contains("ring"), "{r}");
            for d in ["orig", "resp"] {
                let n = |k: &str| r[d][k].as_u64().unwrap_or(u64::MAX);
                assert_eq!(
                    n("stream_bytes"),
                    n("captured") + n("discarded") + n("dropped") + n("missing"),
                    "{d} of {r}"
                );
            }
        }
        // The summary's totals hold the same invariant.
        let streams = err
            .lines()
            .find(|l| l.trim_start().starts_with("streams"))
            .unwrap_or_default();
        let nums: Vec<u64> = streams
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|w| w.parse().ok())
            .collect();
        assert_eq!(nums.len(), 6, "{streams}");
        assert_eq!(nums[1], nums[2] + nums[3] + nums[4] + nums[5], "{streams}");
    }
}

#[test]
fn a_stop_ends_a_slow_replay() {
    // One packet a second: the sample would take almost 8 minutes.
    let (out, err) = ok(&[
        "flows",
        "-r",
        &sample(),
        "--rate",
        "1pps",
        "--duration",
        "0.3",
    ]);
    let read = summary_number(&err, "packets", " read");
    assert!((1..472).contains(&read), "{err}");
    assert!(
        !json_lines(out.as_bytes()).is_empty(),
        "the open flows are flushed"
    );
    assert!(err.contains("  ring         0 dropped"), "{err}");
}

#[test]
fn bad_pacing_options_are_usage_errors() {
    let s = sample();
    for (args, says) in [
        (&["--rate", "0Gbit/s"][..], "must be above 0"),
        (&["--rate", "-1Mbps"], "must be above 0"),
        (&["--rate", "NaNpps"], "NaN is not a number"),
        (&["--rate", "inf bit/s"], "must be finite"),
        (&["--rate", "5"], "has no unit"),
        (&["--rate", "2GB/s"], "unknown unit"),
        (&["--rate", "2 furlongs"], "unknown unit"),
        (&["--speed", "0"], "must be above 0"),
        (&["--speed", "-2x"], "must be above 0"),
        (&["--speed", "nan"], "NaN is not a number"),
        (&["--speed", "fast"], "not a number"),
        (
            &["--rate", "1Gbit/s", "--speed", "2"],
            "cannot be used with",
        ),
        (
            &["--ring-size", "1MiB"],
            "--ring-size on a file (-r) needs --rate or --speed",
        ),
        (
            &["--rate", "1Gbit/s", "--workers", "2"],
            "runs on one worker, not 2",
        ),
        (
            &["--speed", "2x", "--ring-size", "79"],
            "smaller than the 80-byte frame header",
        ),
        (
            &["--rate", "1Gbit/s", "--ring-size", "100000TiB"],
            "physical memory",
        ),
    ] {
        let all: Vec<&str> = ["flows", "-q", "-r", &s]
            .into_iter()
            .chain(args.iter().copied())
            .collect();
        let o = run(&all);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    // Live capture comes at the wire's pace: refused before any socket is opened.
    let o = run(&["flows", "-q", "-i", "lo", "--speed", "2"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--speed applies to files (-r)"),
        "{}",
        stderr(&o)
    );
}
