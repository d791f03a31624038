//! The C examples of `crates/streamcap-pcap/examples/`, built against the
//! library with its pkg-config file (`streamcap-pcap.pc`, written beside
//! the library) and run: `fanout_threads.c`, the paper's multi-threaded
//! use of `pcap_fanout`, on a veth pair inside a network namespace of the
//! test's own; `read_all.c`, every libpcap read call on a file with and
//! without locality buffering. Skips with a message without `cc`,
//! `pkg-config`, libpcap's headers, or (for the live part) root or `ip`.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use streamcap_gen::campus::{Campus, CampusConfig};

/// Not a test: the replay [`Netns::replay`] runs inside the namespace.
#[test]
fn replay_helper() {
    replay_here();
}

/// Compiles example `name` with `cc` and the pkg-config file; `None` (with
/// a message) when the tools are missing.
fn build(name: &str, dir: &Path) -> Option<PathBuf> {
    if !have("cc", &["--version"]) || !have("pkg-config", &["--version"]) {
        skip("cc or pkg-config is not installed");
        return None;
    }
    if !Path::new("/usr/include/pcap/pcap.h").exists() {
        skip("libpcap's headers are not installed (Debian: libpcap-dev)");
        return None;
    }
    let profile = library()
        .parent()
        .map(Path::to_path_buf)
        .expect("target dir");
    let flags = Command::new("pkg-config")
        .args(["--cflags", "--libs", "streamcap-pcap"])
        .env("PKG_CONFIG_PATH", &profile)
        .output()
        .expect("pkg-config");
    assert!(
        flags.status.success(),
        "pkg-config streamcap-pcap: {}",
        String::from_utf8_lossy(&flags.stderr)
    );
    let flags = String::from_utf8_lossy(&flags.stdout).to_string();
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(format!("{name}.c"));
    let exe = dir.join(name);
    let o = Command::new("cc")
        .args(["-Wall", "-Werror", "-O2", "-o"])
        .arg(&exe)
        .arg(&src)
        .args(flags.split_whitespace())
        .arg("-lpthread")
        .output()
        .expect("cc");
    assert!(
        o.status.success(),
        "cc {name}.c: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    Some(exe)
}

/// Two threads of one process in a `hash` group share a replay: together
/// they get every frame, each some of them; also with locality batches,
/// where the main thread's `pcap_breakloop` must reach threads waiting
/// inside the library.
#[test]
fn two_threads_share_a_replay_through_pcap_fanout() {
    let dir = tempdir("example-fanout");
    let Some(exe) = build("fanout_threads", &dir) else {
        return;
    };
    let Some(ns) = Netns::new("example", None) else {
        return;
    };
    let cfg = CampusConfig {
        seed: 3,
        packets: 3_000,
        concurrency: 60,
        ..CampusConfig::default()
    };
    let pcap = dir.join("in.pcap");
    std::fs::write(&pcap, Campus::new(cfg).to_bytes().0).expect("write capture");
    for env in [&[][..], &[("PCAP_LOCALITY", "100")][..]] {
        let mut cmd = ns.command(
            exe.to_str().unwrap_or_default(),
            &["scb", "2", "5", "hash", "4"],
        );
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run the example");
        std::thread::sleep(Duration::from_secs(1));
        ns.replay(&pcap, 5_000);
        let o = child.wait_with_output().expect("the example");
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{env:?}: {out}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let counts: Vec<u64> = out
            .lines()
            .filter_map(|l| l.strip_prefix("thread "))
            .filter_map(|l| l.split(": ").nth(1))
            .filter_map(|l| l.split(' ').next()?.parse().ok())
            .collect();
        assert_eq!(counts.len(), 2, "{env:?}: {out}");
        assert!(counts.iter().all(|&c| c > 0), "{env:?}: {out}");
        assert!(out.contains("total: 3000"), "{env:?}: {out}");
    }
}

/// A mode the kernel does not have is refused with the names it has.
#[test]
fn a_bad_mode_is_refused_with_the_valid_names() {
    let dir = tempdir("example-badmode");
    let Some(exe) = build("fanout_threads", &dir) else {
        return;
    };
    let Some(ns) = Netns::new("badmode", None) else {
        return;
    };
    let o = ns
        .command(
            exe.to_str().unwrap_or_default(),
            &["scb", "1", "5", "fastest", "1"],
        )
        .output()
        .expect("run the example");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("pcap_fanout") && err.contains("round_robin"),
        "{err}"
    );
}

/// `read_all FILE MODE` with `env`; its lines.
fn read_all(exe: &Path, pcap: &Path, mode: &str, env: &[(&str, &str)]) -> Vec<String> {
    let mut c = Command::new(exe);
    c.arg(pcap).arg(mode);
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().expect("run read_all");
    assert!(
        o.status.success(),
        "read_all {mode}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// With locality buffering every read call (`pcap_loop` whole and 7 at a
/// time, `pcap_dispatch`, `pcap_next`, `pcap_next_ex`, and `pcap_loop`
/// broken from its callback every 10th packet) hands out the same packets
/// in the same order, headers and bytes unchanged: the file's packets,
/// reordered. Linked by name, the library's calls are the program's.
#[test]
fn every_read_call_hands_out_the_same_locality_order() {
    let dir = tempdir("example-read-all");
    let Some(exe) = build("read_all", &dir) else {
        return;
    };
    let cfg = CampusConfig {
        seed: 4,
        packets: 2_000,
        concurrency: 60,
        ..CampusConfig::default()
    };
    let pcap = dir.join("in.pcap");
    std::fs::write(&pcap, Campus::new(cfg).to_bytes().0).expect("write capture");
    let plain = read_all(&exe, &pcap, "loop", &[]);
    assert_eq!(plain.len(), 2_000);
    let local = [("PCAP_LOCALITY", "300")];
    let reference = read_all(&exe, &pcap, "loop", &local);
    assert_ne!(reference, plain, "locality did not reorder");
    let (mut a, mut b) = (plain.clone(), reference.clone());
    a.sort();
    b.sort();
    assert_eq!(a, b, "not the same packets");
    for mode in ["loop7", "dispatch", "next", "next_ex", "break"] {
        assert_eq!(read_all(&exe, &pcap, mode, &local), reference, "{mode}");
        assert_eq!(
            read_all(&exe, &pcap, mode, &[]),
            plain,
            "{mode} without locality"
        );
    }
}
