//! Unmodified `tcpdump` (Debian's) under `LD_PRELOAD=libstreamcap_pcap.so`:
//! kernel fan-out from the environment and from a configuration file
//! (virtual devices, caplen included) on a veth pair inside a network
//! namespace of the test's own, and locality buffering on files and live.
//! Skips with a message without root, `ip` or `tcpdump`.

mod common;

use common::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use streamcap_gen::campus::{Campus, CampusConfig};

/// Not a test: the replay [`Netns::replay`] runs inside the namespace.
#[test]
fn replay_helper() {
    replay_here();
}

/// The replay rate: far below what loses packets on a veth, also with
/// tcpdump writing every packet at once (`-U`).
const PPS: u32 = 5_000;

fn tcpdump_here() -> bool {
    if !have("tcpdump", &["--version"]) {
        skip("tcpdump is not installed (Debian: apt-get install tcpdump)");
        return false;
    }
    true
}

/// A campus capture of `packets` packets, written in `dir`.
fn campus(dir: &Path, packets: u64, seed: u64) -> PathBuf {
    let cfg = CampusConfig {
        seed,
        packets,
        concurrency: 60,
        ..CampusConfig::default()
    };
    let p = dir.join("in.pcap");
    std::fs::write(&p, Campus::new(cfg).to_bytes().0).expect("write capture");
    p
}

/// `tcpdump -i DEV -w OUT` in `ns` under the library with `env`.
fn tcpdump(ns: &Netns, dev: &str, out: &Path, env: &[(&str, &str)]) -> Running {
    let mut c = ns.command(
        "env",
        &[
            &format!("LD_PRELOAD={}", library().display()),
            "tcpdump",
            "-i",
            dev,
            "-n",
            "-U",
            // Blocks are handed over at once, not after a second: nothing
            // is left in the ring when the test stops tcpdump.
            "--immediate-mode",
            // A 32 MiB ring: a busy test machine does not drop.
            "-B",
            "32768",
            "-w",
            out.to_str().unwrap_or_default(),
        ],
    );
    for (k, v) in env {
        c.env(k, v);
    }
    Running::start(c, "listening on")
}

/// Two members of one group split a replay: each connection lands whole in
/// exactly one file, both get traffic, and together they hold every frame
/// of the replay, byte for byte (cut to `caplen` when it is set).
fn check_split(files: &[PathBuf], sent: &[Vec<u8>], caplen: Option<usize>) {
    let got: Vec<Vec<Vec<u8>>> = files.iter().map(|f| frames(f)).collect();
    for (f, g) in files.iter().zip(&got) {
        assert!(!g.is_empty(), "{} got no traffic", f.display());
    }
    let mut owner: BTreeMap<(u8, String, String), BTreeSet<usize>> = BTreeMap::new();
    for (i, g) in got.iter().enumerate() {
        for fr in g {
            if let Some(c) = connection(fr) {
                owner.entry(c).or_default().insert(i);
            }
        }
    }
    let split: Vec<_> = owner.iter().filter(|(_, o)| o.len() > 1).collect();
    assert!(split.is_empty(), "connections in both files: {split:?}");
    let union: Vec<Vec<u8>> = got.into_iter().flatten().collect();
    let want: Vec<Vec<u8>> = sent
        .iter()
        .map(|f| f[..caplen.map_or(f.len(), |c| c.min(f.len()))].to_vec())
        .collect();
    assert_eq!(union.len(), want.len(), "frames captured by the group");
    assert!(
        multiset(&union) == multiset(&want),
        "the union is not the replay"
    );
}

/// Runs two tcpdumps on `devs` with `env` each, replays, stops them and
/// checks the split.
fn split_run(test: &str, devs: [&str; 2], env: &[(&str, &str)], caplen: Option<usize>) {
    let Some(ns) = Netns::new(test, None) else {
        return;
    };
    if !tcpdump_here() {
        return;
    }
    let dir = tempdir(test);
    let pcap = campus(&dir, 3_000, 5);
    let outs = [dir.join("a.pcap"), dir.join("b.pcap")];
    let runs: Vec<Running> = devs
        .iter()
        .zip(&outs)
        .map(|(d, o)| tcpdump(&ns, d, o, env))
        .collect();
    ns.replay(&pcap, PPS);
    std::thread::sleep(std::time::Duration::from_millis(1_000));
    for r in runs {
        eprintln!("{}", r.stop().1);
    }
    check_split(&outs, &frames(&pcap), caplen);
}

#[test]
fn two_tcpdumps_in_a_group_split_a_replay_by_connection() {
    split_run(
        "env",
        ["scb", "scb"],
        &[("PCAP_GROUP", "7"), ("PCAP_FANOUT", "hash")],
        None,
    );
}

#[test]
fn a_configuration_file_puts_them_in_a_group() {
    let dir = tempdir("conf-file");
    let conf = dir.join("pcap.conf");
    std::fs::write(
        &conf,
        "# two tcpdumps, one group\ndef_group = 7\nfanout@7 = hash\n",
    )
    .expect("write conf");
    split_run(
        "conf",
        ["scb", "scb"],
        &[("PCAP_CONFIG", conf.to_str().unwrap_or_default())],
        None,
    );
}

/// `group_scb:1 = 9`: the virtual device `scb:1` opens `scb` in group 9,
/// beside the real `scb` in the default group 9 too (a group of two).
#[test]
fn virtual_devices_open_their_interface_in_their_own_group() {
    let dir = tempdir("conf-virtual");
    let conf = dir.join("pcap.conf");
    std::fs::write(&conf, "group_scb:1 = 9\ngroup_scb = 9\nfanout = hash\n").expect("write conf");
    split_run(
        "virtual",
        ["scb", "scb:1"],
        &[("PCAP_CONFIG", conf.to_str().unwrap_or_default())],
        None,
    );
}

#[test]
fn caplen_cuts_every_frame() {
    split_run(
        "caplen",
        ["scb", "scb"],
        &[("PCAP_GROUP", "7"), ("PCAP_CAPLEN", "64")],
        Some(64),
    );
}

/// Frames by connection ([`connection`]; `None`: the port-less frames),
/// each connection's in order.
type ByFlow = BTreeMap<Option<(u8, String, String)>, Vec<Vec<u8>>>;

/// Whether `got` is `want` reordered so that each connection's frames (and
/// the port-less frames) keep their order.
fn same_frames_each_flow_in_order(want: &[Vec<u8>], got: &[Vec<u8>]) {
    assert_eq!(got.len(), want.len(), "frame count");
    assert!(multiset(got) == multiset(want), "not the same frames");
    let by_flow = |fs: &[Vec<u8>]| {
        let mut m = ByFlow::new();
        for f in fs {
            m.entry(connection(f)).or_default().push(f.clone());
        }
        m
    };
    assert!(
        by_flow(got) == by_flow(want),
        "a flow's frames changed order"
    );
}

/// `tcpdump -r IN -w OUT` with `PCAP_LOCALITY`: the same frames, each
/// flow's in order, and grouped by port: in each batch of 1,000 a port's
/// packets come together, so the port changes at most once per port per
/// batch, far less often than in the file.
#[test]
fn locality_reorders_a_file_by_port_keeping_each_flow_in_order() {
    if !tcpdump_here() {
        return;
    }
    let dir = tempdir("locality-file");
    let pcap = campus(&dir, 5_000, 9);
    let out = dir.join("out.pcap");
    let o = Command::new("tcpdump")
        .args(["-r", pcap.to_str().unwrap_or_default(), "-w"])
        .arg(&out)
        .env("LD_PRELOAD", library())
        .env("PCAP_LOCALITY", "1000")
        .output()
        .expect("run tcpdump");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (want, got) = (frames(&pcap), frames(&out));
    same_frames_each_flow_in_order(&want, &got);
    let switches = |fs: &[Vec<u8>]| {
        fs.windows(2)
            .filter(|w| lower_port(&w[0]) != lower_port(&w[1]))
            .count()
    };
    assert!(
        switches(&got) * 3 < switches(&want),
        "not grouped: {} port changes against {} in the file",
        switches(&got),
        switches(&want)
    );
}

/// Live: tcpdump with locality batches writes the same frames as without,
/// each flow's in order.
#[test]
fn locality_live_keeps_every_frame() {
    let Some(ns) = Netns::new("locality-live", None) else {
        return;
    };
    if !tcpdump_here() {
        return;
    }
    let dir = tempdir("locality-live");
    let pcap = campus(&dir, 3_000, 11);
    let out = dir.join("out.pcap");
    let run = tcpdump(
        &ns,
        "scb",
        &out,
        &[("PCAP_LOCALITY", "500"), ("PCAP_LOCALITY_TIMEOUT", "50")],
    );
    ns.replay(&pcap, PPS);
    std::thread::sleep(std::time::Duration::from_millis(1_000));
    eprintln!("{}", run.stop().1);
    same_frames_each_flow_in_order(&frames(&pcap), &frames(&out));
}
