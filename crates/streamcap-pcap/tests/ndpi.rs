//! Unmodified `ndpiReader` (Debian's libndpi-bin) under
//! `LD_PRELOAD=libstreamcap_pcap.so` reports the same flows and protocols
//! as on the original capture: with locality buffering on the file, and
//! live on a veth pair inside a network namespace of the test's own,
//! alone, with locality buffering, and as two instances of one fan-out
//! group (each flow in exactly one of them). Skips with a message without
//! `ndpiReader`, or, for the live part, without root or `ip`.

mod common;

use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use streamcap_gen::campus::{Campus, CampusConfig};

/// Not a test: the replay [`Netns::replay`] runs inside the namespace.
#[test]
fn replay_helper() {
    replay_here();
}

/// A flow as ndpiReader's CSV gives it: protocol, endpoints, nDPI's
/// protocol, and the packets each way.
type Flow = (
    String,
    String,
    String,
    String,
    String,
    String,
    String,
    String,
);

fn ndpi_here() -> bool {
    let ok = Command::new("ndpiReader")
        .arg("-h")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !ok {
        skip("ndpiReader is not installed (Debian: apt-get install libndpi-bin)");
    }
    ok
}

/// The flows of an ndpiReader CSV file, each with how often it occurs.
fn flows(csv: &Path) -> BTreeMap<Flow, usize> {
    let text = std::fs::read_to_string(csv).unwrap_or_default();
    let mut out = BTreeMap::new();
    // #flow_id,protocol,first_seen,last_seen,duration,src_ip,src_port,
    // dst_ip,dst_port,ndpi_proto_num,ndpi_proto,server_name_sni,
    // c_to_s_pkts,c_to_s_bytes,c_to_s_goodput_bytes,s_to_c_pkts,...
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split(',').collect();
        assert!(f.len() > 16, "{}: short line {line:?}", csv.display());
        let flow = (
            f[1].into(),
            f[5].into(),
            f[6].into(),
            f[7].into(),
            f[8].into(),
            f[10].into(),
            f[12].into(),
            f[15].into(),
        );
        *out.entry(flow).or_insert(0) += 1;
    }
    out
}

fn campus(dir: &Path) -> PathBuf {
    let cfg = CampusConfig {
        seed: 17,
        packets: 3_000,
        concurrency: 60,
        ..CampusConfig::default()
    };
    let p = dir.join("in.pcap");
    std::fs::write(&p, Campus::new(cfg).to_bytes().0).expect("write capture");
    p
}

/// `ndpiReader -i INPUT -C CSV -q` with `env` (and the library when
/// `preload`); its flows.
fn offline(input: &Path, csv: &Path, env: &[(&str, &str)], preload: bool) -> BTreeMap<Flow, usize> {
    let mut c = Command::new("ndpiReader");
    c.arg("-i").arg(input).arg("-C").arg(csv).arg("-q");
    if preload {
        c.env("LD_PRELOAD", library());
    }
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().expect("run ndpiReader");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    flows(csv)
}

#[test]
fn locality_on_a_file_reports_the_same_flows() {
    if !ndpi_here() {
        return;
    }
    let dir = tempdir("ndpi-file");
    let pcap = campus(&dir);
    let want = offline(&pcap, &dir.join("plain.csv"), &[], false);
    assert!(want.len() > 50, "{} flows", want.len());
    for batch in ["100", "8000"] {
        let got = offline(
            &pcap,
            &dir.join(format!("loc{batch}.csv")),
            &[("PCAP_LOCALITY", batch)],
            true,
        );
        assert!(got == want, "PCAP_LOCALITY={batch}: other flows");
    }
}

/// Runs `instances` ndpiReaders on `scb` for a few seconds with `env`,
/// replays the capture while they run, and returns each one's flows.
fn live(
    ns: &Netns,
    pcap: &Path,
    dir: &Path,
    instances: usize,
    env: &[(&str, &str)],
) -> Vec<BTreeMap<Flow, usize>> {
    let csvs: Vec<PathBuf> = (0..instances)
        .map(|i| dir.join(format!("live{i}.csv")))
        .collect();
    let children: Vec<_> = csvs
        .iter()
        .map(|csv| {
            let mut c = ns.command(
                "env",
                &[
                    &format!("LD_PRELOAD={}", library().display()),
                    "ndpiReader",
                    "-i",
                    "scb",
                    "-s",
                    "4",
                    "-q",
                    "-C",
                    csv.to_str().unwrap_or_default(),
                ],
            );
            for (k, v) in env {
                c.env(k, v);
            }
            c.stdout(Stdio::null()).stderr(Stdio::piped());
            c.spawn().expect("start ndpiReader")
        })
        .collect();
    // ndpiReader opens its device at once and says nothing when it is
    // ready: a second is ample.
    std::thread::sleep(Duration::from_secs(1));
    ns.replay(pcap, 5_000);
    for c in children {
        let o = c.wait_with_output().expect("ndpiReader");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    csvs.iter().map(|c| flows(c)).collect()
}

#[test]
fn live_alone_with_locality_and_in_a_fanout_group_report_the_same_flows() {
    if !ndpi_here() {
        return;
    }
    let Some(ns) = Netns::new("ndpi", None) else {
        return;
    };
    let dir = tempdir("ndpi-live");
    let pcap = campus(&dir);
    let want = offline(&pcap, &dir.join("plain.csv"), &[], false);

    let alone = live(&ns, &pcap, &dir, 1, &[]);
    assert!(alone[0] == want, "alone: other flows");

    let local = live(&ns, &pcap, &dir, 1, &[("PCAP_LOCALITY", "500")]);
    assert!(local[0] == want, "with locality: other flows");

    let group = live(
        &ns,
        &pcap,
        &dir,
        2,
        &[("PCAP_GROUP", "3"), ("PCAP_FANOUT", "hash")],
    );
    assert!(group.iter().all(|g| !g.is_empty()), "a member got nothing");
    let mut union: BTreeMap<Flow, usize> = BTreeMap::new();
    for g in &group {
        for (f, n) in g {
            *union.entry(f.clone()).or_insert(0) += n;
        }
    }
    assert!(union == want, "the group's flows are not the capture's");
}
