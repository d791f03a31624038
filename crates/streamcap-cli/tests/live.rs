//! Live capture end to end: generated captures replayed (`streamcap replay`)
//! into a veth pair inside a network namespace of the test's own, captured
//! with `streamcap -i`, and checked against the same capture read from the
//! file. Needs root (CAP_NET_RAW, CAP_NET_ADMIN, CAP_SYS_ADMIN for the
//! namespace) and `ip`; skips with a message otherwise.

mod common;

#[path = "common/netns.rs"]
mod netns;

#[path = "common/parquet_rows.rs"]
mod parquet_rows;

use common::*;
use netns::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use streamcap_gen::campus::CampusConfig;

fn campus_cfg() -> CampusConfig {
    CampusConfig {
        seed: 21,
        packets: 12_000,
        concurrency: 200,
        fragment: 0.02,
        vlan: 0.1,
        ipv6: 0.1,
        ..CampusConfig::default()
    }
}

fn file_records(pcap: &Path, extra: &[&str]) -> BTreeMap<String, Value> {
    let mut args = vec![
        "flows",
        "--digest",
        "-q",
        "-r",
        pcap.to_str().unwrap_or_default(),
    ];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(0));
    by_connection(&o.stdout)
}

#[test]
fn live_records_equal_the_file_records() {
    let Some(ns) = Netns::new("equal") else {
        return;
    };
    for (name, cfg) in [("sample", None), ("campus", Some(campus_cfg()))] {
        let pcap = temp_capture(name, cfg);
        let want = file_records(&pcap, &[]);
        let cap = ns.capture(&["flows", "--digest"]);
        ns.replay(&pcap);
        let (out, summary) = cap.interrupt();
        assert_eq!(out.status.code(), Some(0), "{summary}");
        assert_eq!(kernel_counts(&summary).1, 0, "no kernel drops: {summary}");
        let got = by_connection(&out.stdout);
        // End reasons may differ for flows that timed out in the file's
        // (longer) time; everything else is the same.
        assert_eq!(got.len(), want.len(), "{name}: connections");
        for (k, w) in &want {
            let g = got
                .get(k)
                .unwrap_or_else(|| panic!("{name}: {k} not captured"));
            assert_eq!(g["orig"], w["orig"], "{name}: {k} orig");
            assert_eq!(g["resp"], w["resp"], "{name}: {k} resp");
        }
    }
}

#[test]
fn workers_and_processes_in_one_fanout_group_split_connections() {
    let Some(ns) = Netns::new("fanout") else {
        return;
    };
    // With IP fragments: the kernel's hash fan-out reassembles them before
    // the sockets see them (PACKET_FANOUT_FLAG_DEFRAG, which keeps them with
    // their flow), and a datagram counts as one packet of its reassembled
    // length in a file run too.
    let pcap = temp_capture("fanout", Some(campus_cfg()));
    let want = file_records(&pcap, &[]);

    // Two threads of one process.
    let cap = ns.capture(&["flows", "--digest", "--workers", "2"]);
    ns.replay(&pcap);
    let (out, summary) = cap.interrupt();
    assert_eq!(out.status.code(), Some(0), "{summary}");
    let got = by_connection(&out.stdout);
    assert_eq!(got.len(), want.len());
    for (k, w) in &want {
        let g = &got[k];
        assert_eq!((&g["orig"], &g["resp"]), (&w["orig"], &w["resp"]), "{k}");
    }
    let workers = summary
        .lines()
        .find(|l| l.trim_start().starts_with("workers"))
        .unwrap_or_default()
        .to_string();
    assert!(
        workers.contains("#0: ") && workers.contains("#1: "),
        "{summary}"
    );

    // Two processes in one group: disjoint halves whose union is everything,
    // each connection whole (both directions) on one side.
    let a = ns.capture(&["flows", "--digest", "--group", "4242"]);
    let b = ns.capture(&["flows", "--digest", "--group", "4242"]);
    ns.replay(&pcap);
    let (oa, sa) = a.interrupt();
    let (ob, sb) = b.interrupt();
    assert_eq!(oa.status.code(), Some(0), "{sa}");
    assert_eq!(ob.status.code(), Some(0), "{sb}");
    let (ra, rb) = (by_connection(&oa.stdout), by_connection(&ob.stdout));
    assert!(
        !ra.is_empty() && !rb.is_empty(),
        "both processes got connections"
    );
    for k in ra.keys() {
        assert!(!rb.contains_key(k), "{k} seen by both processes");
    }
    assert_eq!(ra.len() + rb.len(), want.len());
    for (k, w) in &want {
        let g = ra
            .get(k)
            .or_else(|| rb.get(k))
            .unwrap_or_else(|| panic!("{k} missing"));
        assert_eq!((&g["orig"], &g["resp"]), (&w["orig"], &w["resp"]), "{k}");
    }
}

#[test]
fn kernel_filter_keeps_other_packets_out_of_user_space() {
    let Some(ns) = Netns::new("filter") else {
        return;
    };
    // No VLAN tags: the interface strips them before the kernel filter
    // runs, so live `udp` also matches tagged UDP (as with tcpdump -i),
    // while on a file it does not (as with tcpdump -r).
    let cfg = CampusConfig {
        vlan: 0.0,
        ..campus_cfg()
    };
    let pcap = temp_capture("filter", Some(cfg));
    // How many packets the filter matches in the file.
    let o = run(&["flows", "-r", pcap.to_str().unwrap_or_default(), "udp"]);
    let summary = String::from_utf8_lossy(&o.stderr).into_owned();
    let matched: u64 = summary
        .split(", ")
        .find_map(|p| {
            p.strip_suffix(" matched \"udp\"")
                .and_then(|n| n.trim().parse().ok())
        })
        .unwrap_or_else(|| panic!("no matched count: {summary}"));
    let want = file_records(&pcap, &["udp"]);

    let cap = ns.capture(&["flows", "--digest", "udp"]);
    ns.replay(&pcap);
    let (out, summary) = cap.interrupt();
    assert_eq!(out.status.code(), Some(0), "{summary}");
    let (passed, dropped) = kernel_counts(&summary);
    assert_eq!(dropped, 0);
    // Only the matching packets reached the socket: the kernel counted
    // exactly those, and the engine read exactly those.
    assert_eq!(passed, matched, "{summary}");
    assert!(
        summary.contains(&format!("packets      {matched} read")),
        "{summary}"
    );
    let got = by_connection(&out.stdout);
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    assert!(got.values().all(|r| r["proto"] == "udp"));
}

/// `--format parquet` on a live capture with two workers: Ctrl-C flushes
/// every connection into the file and writes its footer; its rows are the
/// file run's records.
#[test]
fn live_parquet_file_is_complete_after_ctrl_c() {
    let Some(ns) = Netns::new("parquet") else {
        return;
    };
    let pcap = temp_capture("parquet", None);
    let want = file_records(&pcap, &[]);
    let out = pcap.with_file_name("live.parquet");
    let cap = ns.capture(&[
        "flows",
        "--digest",
        "--workers",
        "2",
        "--format",
        "parquet",
        "-o",
        out.to_str().unwrap_or_default(),
    ]);
    ns.replay(&pcap);
    let (o, summary) = cap.interrupt();
    assert_eq!(o.status.code(), Some(0), "{summary}");
    assert!(summary.contains("  parquet      "), "{summary}");
    let rows = parquet_rows::parquet_records(&out);
    let text: Vec<u8> = rows
        .iter()
        .flat_map(|r| {
            let mut line = r.to_string().into_bytes();
            line.push(b'\n');
            line
        })
        .collect();
    let got = by_connection(&text);
    assert_eq!(got.len(), want.len(), "connections");
    for (k, w) in &want {
        let g = got.get(k).unwrap_or_else(|| panic!("{k} not in the file"));
        assert_eq!(g["orig"], w["orig"], "{k} orig");
        assert_eq!(g["resp"], w["resp"], "{k} resp");
    }
}

#[test]
fn sigint_flushes_open_streams_and_count_and_duration_stop() {
    let Some(ns) = Netns::new("stop") else { return };
    let pcap = temp_capture("stop", None);
    let want = file_records(&pcap, &[]);
    let open_at_end = want.values().filter(|r| r["end"] == "eof").count();
    assert!(open_at_end > 0);

    let cap = ns.capture(&["flows", "--digest"]);
    ns.replay(&pcap);
    let (out, summary) = cap.interrupt();
    assert_eq!(out.status.code(), Some(0), "{summary}");
    let got = by_connection(&out.stdout);
    let eof = got.values().filter(|r| r["end"] == "eof").count();
    assert_eq!(
        eof, open_at_end,
        "streams open at Ctrl-C are flushed as eof"
    );
    assert!(
        summary.contains("flows "),
        "the summary is printed: {summary}"
    );

    // -c: stops by itself after that many packets.
    let cap = ns.capture(&["flows", "-c", "100"]);
    ns.replay(&pcap);
    let (out, summary) = cap.wait();
    assert_eq!(out.status.code(), Some(0), "{summary}");
    assert!(summary.contains("packets      100 read"), "{summary}");

    // --duration: stops by itself on an idle link.
    let t = Instant::now();
    let cap = ns.capture(&["flows", "--duration", "0.5"]);
    let (out, summary) = cap.wait();
    assert_eq!(out.status.code(), Some(0), "{summary}");
    assert!(t.elapsed() < Duration::from_secs(10));
}

#[test]
fn live_errors_are_clear() {
    let Some(ns) = Netns::new("errors") else {
        return;
    };
    let o = ns
        .exec(&[BIN, "flows", "-i", "nosuch0"])
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("nosuch0"), "{err}");
    let o = ns
        .exec(&[BIN, "flows", "-i", "scb", "--fanout", "lb"])
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("breaks flow affinity"));
    let o = ns
        .exec(&[BIN, "flows", "-i", "scb", "--fanout", "locality"])
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(2));
}

/// Captures a replay of `pcap` with `flows --timeout 0.5 ARGS -o FILE`:
/// every connection times out 0.5 s after its last packet on the wall
/// clock (the link is idle then), so all the file's records reach the
/// output within about a second, long before Ctrl-C, and Ctrl-C finds
/// nothing left open.
fn records_before_ctrl_c(ns: &Netns, pcap: &Path, args: &[&str]) {
    let want = file_records(pcap, &[]).len();
    let out = pcap.with_file_name("live.json");
    let mut a = vec!["flows", "--timeout", "0.5"];
    a.extend_from_slice(args);
    a.extend(["-o", out.to_str().unwrap_or_default()]);
    let cap = ns.capture(&a);
    ns.replay(pcap);
    let lines = wait_for_records(&out, want);
    let (o, summary) = cap.interrupt();
    assert_eq!(o.status.code(), Some(0), "{summary}");
    assert_eq!(lines, want, "records written before Ctrl-C");
    assert!(summary.contains("eof 0,"), "{summary}");
}

/// The records in `out` once it holds `want` of them, or after 10 s.
fn wait_for_records(out: &Path, want: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut lines = 0;
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        lines = std::fs::read(out).map_or(0, |b| json_lines(&b).len());
        if lines == want {
            break;
        }
    }
    lines
}

#[test]
fn records_reach_the_output_while_capturing() {
    let Some(ns) = Netns::new("timely") else {
        return;
    };
    let pcap = temp_capture("timely", None);
    records_before_ctrl_c(&ns, &pcap, &[]);
}

/// `--locality-batch` live: the file's records; a partial batch on a
/// quiet link is processed after `--locality-timeout` (records reach the
/// output long before Ctrl-C although the batch never fills); Ctrl-C and
/// `-c` process what a batch holds.
#[test]
fn live_locality_batches_give_the_file_records_and_do_not_hold_packets() {
    let Some(ns) = Netns::new("locality") else {
        return;
    };
    let pcap = temp_capture("locality", Some(campus_cfg()));
    let want = file_records(&pcap, &[]);
    let cap = ns.capture(&["flows", "--digest", "--locality-batch", "8000"]);
    ns.replay(&pcap);
    let (out, summary) = cap.interrupt();
    assert_eq!(out.status.code(), Some(0), "{summary}");
    assert_eq!(kernel_counts(&summary).1, 0, "no kernel drops: {summary}");
    let got = by_connection(&out.stdout);
    assert_eq!(got.len(), want.len(), "connections");
    for (k, w) in &want {
        let g = got.get(k).unwrap_or_else(|| panic!("{k} not captured"));
        assert_eq!(g["orig"], w["orig"], "{k} orig");
        assert_eq!(g["resp"], w["resp"], "{k} resp");
    }

    // The sample is far less than a batch: only the timeout releases it.
    let pcap = temp_capture("locality-quiet", None);
    records_before_ctrl_c(
        &ns,
        &pcap,
        &["--locality-batch", "1000000", "--locality-timeout", "100"],
    );

    // -c stops at its count; the batch's packets are processed.
    let cap = ns.capture(&["flows", "-c", "100", "--locality-batch", "8000"]);
    ns.replay(&pcap);
    let (out, summary) = cap.wait();
    assert_eq!(out.status.code(), Some(0), "{summary}");
    assert!(summary.contains("packets      100 read"), "{summary}");
    assert!(!json_lines(&out.stdout).is_empty(), "{summary}");
}

/// Two namespaces joined by a veth pair: `sca` in the first (the sender),
/// `scb` in the second, whose only other interface is its loopback; both
/// deleted on drop.
struct NetnsPair {
    tx: Netns,
    rx: Netns,
}

impl NetnsPair {
    fn new(test: &str) -> Option<NetnsPair> {
        // The receiving side, with the pair; then `sca` moves out.
        let rx = Netns::new(&format!("{test}-rx"))?;
        let tx = Netns {
            name: format!("sc-{}-{test}-tx", std::process::id()),
        };
        let steps: [&[&str]; 4] = [
            &["netns", "add", &tx.name],
            &["-n", &rx.name, "link", "set", "sca", "netns", &tx.name],
            &["-n", &tx.name, "link", "set", "sca", "mtu", "9000"],
            &["-n", &tx.name, "link", "set", "sca", "up"],
        ];
        for (i, args) in steps.iter().enumerate() {
            if i == 3 {
                let _ = tx
                    .exec(&["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"])
                    .output();
            }
            let o = Command::new("ip").args(*args).output();
            if !o.as_ref().is_ok_and(|o| o.status.success()) {
                common::skip(format!("ip {}: {o:?}", args.join(" ")));
                return None;
            }
        }
        Some(NetnsPair { tx, rx })
    }
}

/// `-i any` captures every interface of the namespace, cooked (Linux SLL),
/// and gives the records of the capture file; a filter (run in user space
/// there) selects what it selects in the file.
#[test]
fn any_captures_every_interface_cooked() {
    let Some(pair) = NetnsPair::new("any") else {
        return;
    };
    for (name, cfg) in [("sample", None), ("campus", Some(campus_cfg()))] {
        let pcap = temp_capture(&format!("any-{name}"), cfg);
        for filter in [None, Some("udp")] {
            let extra: Vec<&str> = filter.into_iter().collect();
            let want = file_records(&pcap, &extra);
            let mut args = vec!["flows", "--digest"];
            args.extend_from_slice(&extra);
            let mut cmd = pair.rx.exec(&[BIN]);
            cmd.args(&args).args(["-i", "any"]);
            let cap = start_capture(cmd, "any");
            pair.tx.replay_on(&pcap, "sca");
            let (out, summary) = cap.interrupt();
            assert_eq!(out.status.code(), Some(0), "{summary}");
            assert_eq!(kernel_counts(&summary).1, 0, "no kernel drops: {summary}");
            let got = by_connection(&out.stdout);
            assert_eq!(got.len(), want.len(), "{name} {filter:?}: connections");
            for (k, w) in &want {
                let g = got
                    .get(k)
                    .unwrap_or_else(|| panic!("{name} {filter:?}: {k} not captured"));
                assert_eq!(g["orig"], w["orig"], "{name}: {k} orig");
                assert_eq!(g["resp"], w["resp"], "{name}: {k} resp");
            }
        }
    }
}

/// On the loopback interface every packet is seen sent and received: it is
/// counted once, as libpcap does.
#[test]
fn loopback_packets_are_counted_once() {
    let Some(ns) = Netns::new("lo") else {
        return;
    };
    let pcap = temp_capture("lo", None);
    let want = file_records(&pcap, &[]);
    let cap = ns.capture_on(&["flows", "--digest"], "lo");
    ns.replay_on(&pcap, "lo");
    let (out, summary) = cap.interrupt();
    assert_eq!(out.status.code(), Some(0), "{summary}");
    // The frames of the capture (the records count a datagram sent in
    // fragments once, the kernel each fragment).
    let frames = {
        let o = run(&["flows", "-r", pcap.to_str().unwrap_or_default()]);
        let summary = String::from_utf8_lossy(&o.stderr).into_owned();
        let read = summary
            .lines()
            .find_map(|l| l.trim_start().strip_prefix("packets"))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok());
        read.unwrap_or_else(|| panic!("no packet count in the summary:\n{summary}"))
    };
    let (passed, _) = kernel_counts(&summary);
    assert_eq!(passed, frames, "each frame once: {summary}");
    let got = by_connection(&out.stdout);
    assert_eq!(got.len(), want.len());
    for (k, w) in &want {
        let g = got.get(k).unwrap_or_else(|| panic!("{k} not captured"));
        assert_eq!((&g["orig"], &g["resp"]), (&w["orig"], &w["resp"]), "{k}");
    }
}
