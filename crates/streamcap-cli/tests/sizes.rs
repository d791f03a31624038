//! Every size option is bounded by the machine's memory: a value the machine
//! cannot hold is a usage error (exit 2) before anything is allocated.

mod common;

use common::*;

/// MemTotal of /proc/meminfo, bytes.
fn physical() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[test]
fn sizes_beyond_the_machine_are_refused() {
    let Some(phys) = physical() else {
        skip("no /proc/meminfo");
        return;
    };
    let too_much = format!("{}", phys * 2);
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/../../samples/sample.pcap");
    let cases: [(&[&str], &str); 5] = [
        // The interface does not exist: the size check comes first, so no
        // kernel is ever asked for the ring.
        (
            &["flows", "-i", "nonexistent0", "--ring-size", &too_much],
            "--ring-size",
        ),
        (
            &[
                "flows",
                "-i",
                "nonexistent0",
                "--ring-size",
                "8G",
                "--workers",
                "64",
            ],
            "--ring-size 8 GiB x 64 workers",
        ),
        (&["flows", "-r", sample, "--memory", &too_much], "--memory"),
        (&["streams", "-r", sample, "--chunk", "1G"], "--chunk 1 GiB"),
        (
            &[
                "streams",
                "-r",
                sample,
                "--memory",
                "1G",
                "--workers",
                "4",
                "--chunk",
                "512M",
            ],
            "--chunk 512 MiB",
        ),
    ];
    for (args, what) in cases {
        let o = run(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(what), "{args:?}: {err}");
        assert!(o.stdout.is_empty());
    }
    // Within the bounds: runs.
    let o = run(&[
        "streams", "-q", "-r", sample, "--memory", "1G", "--chunk", "256M",
    ]);
    assert_eq!(o.status.code(), Some(0));
    // A duration too large for the timer is refused, not a panic.
    let o = run(&["flows", "-r", sample, "--duration", "1e300"]);
    assert_eq!(o.status.code(), Some(2));
}
