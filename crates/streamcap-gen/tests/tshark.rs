//! Cross-check the sample against tshark, when it is installed.

mod common;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use streamcap_gen::{sample, FlowTruth, Protocol};

fn tshark() -> Option<PathBuf> {
    let p = PathBuf::from("/usr/bin/tshark");
    if p.exists() {
        return Some(p);
    }
    Command::new("tshark")
        .arg("-v")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| PathBuf::from("tshark"))
}

fn run(tshark: &Path, args: &[&str]) -> String {
    let out = Command::new(tshark)
        .args(args)
        .output()
        .expect("run tshark");
    assert!(
        out.status.success(),
        "tshark {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

fn count_conversations(text: &str) -> usize {
    text.lines().filter(|l| l.contains("<->")).count()
}

/// Parses `-z follow,tcp,raw,N` output: (node 0, bytes from node 0, bytes
/// from node 1).
fn parse_follow(text: &str) -> (String, Vec<u8>, Vec<u8>) {
    let mut node0 = String::new();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("Node 0: ") {
            node0 = n.trim().to_string();
        } else if line.starts_with('=')
            || line.starts_with("Follow:")
            || line.starts_with("Filter:")
            || line.starts_with("Node ")
            || line.trim().is_empty()
        {
        } else if let Some(h) = line.strip_prefix('\t') {
            b.extend(hex::decode(h.trim()).expect("hex"));
        } else {
            a.extend(hex::decode(line.trim()).expect("hex"));
        }
    }
    (node0, a, b)
}

#[test]
fn tshark_agrees_with_truth() {
    let Some(tshark) = tshark() else {
        common::skip("tshark not installed: no tshark cross-check");
        return;
    };
    let dir = std::env::temp_dir().join(format!("streamcap-gen-tshark-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("sample.pcap");
    let cap = sample(streamcap_gen::SAMPLE_DEFAULT_SEED);
    cap.write_files(&pcap, Some(&dir.join("sample.truth.jsonl")))
        .unwrap();
    let truth =
        FlowTruth::parse_jsonl(&std::fs::read_to_string(dir.join("sample.truth.jsonl")).unwrap())
            .unwrap();
    let f = pcap.to_str().unwrap();

    let tcp = truth.iter().filter(|t| t.proto == Protocol::Tcp).count();
    let udp = truth.iter().filter(|t| t.proto == Protocol::Udp).count();
    let conv_tcp = run(&tshark, &["-r", f, "-q", "-z", "conv,tcp"]);
    let conv_udp = run(&tshark, &["-r", f, "-q", "-z", "conv,udp"]);
    assert_eq!(count_conversations(&conv_tcp), tcp, "{conv_tcp}");
    assert_eq!(count_conversations(&conv_udp), udp, "{conv_udp}");

    // Map tshark stream indices to endpoints.
    let fields = run(
        &tshark,
        &[
            "-r",
            f,
            "-Y",
            "tcp",
            "-T",
            "fields",
            "-E",
            "separator=,",
            "-e",
            "tcp.stream",
            "-e",
            "ip.src",
            "-e",
            "tcp.srcport",
            "-e",
            "ip.dst",
            "-e",
            "tcp.dstport",
        ],
    );
    let mut streams: HashMap<(SocketAddr, SocketAddr), u32> = HashMap::new();
    for line in fields.lines() {
        let v: Vec<&str> = line.split(',').collect();
        if v.len() != 5 || v[1].is_empty() {
            continue; // IPv6 rows have no ip.src
        }
        let src: SocketAddr = format!("{}:{}", v[1], v[2]).parse().unwrap();
        let dst: SocketAddr = format!("{}:{}", v[3], v[4]).parse().unwrap();
        let n: u32 = v[0].parse().unwrap();
        streams.entry((src, dst)).or_insert(n);
        streams.entry((dst, src)).or_insert(n);
    }

    let mut checked = 0;
    for label in ["http", "smtp", "tls", "ssh"] {
        let t = truth.iter().find(|t| t.label == label).unwrap();
        let n = streams[&(t.client, t.server)];
        let out = run(
            &tshark,
            &["-r", f, "-q", "-z", &format!("follow,tcp,raw,{n}")],
        );
        let (node0, a, b) = parse_follow(&out);
        let (to_server, to_client) = if node0 == t.client.to_string() {
            (a, b)
        } else {
            assert_eq!(node0, t.server.to_string());
            (b, a)
        };
        assert_eq!(to_server, t.to_server.stream, "{label} client->server");
        assert_eq!(to_client, t.to_client.stream, "{label} server->client");
        checked += 1;
    }
    assert_eq!(checked, 4);
    let _ = std::fs::remove_dir_all(&dir);
}
