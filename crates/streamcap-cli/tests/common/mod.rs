//! Helpers shared by the CLI tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

pub mod examples;

#[path = "../../../streamcap/tests/support/shared.rs"]
mod shared;
#[allow(unused_imports)] // (not every test binary uses all of them)
pub use shared::{captures, corpus_dir as corpus, skip, TestDir, TestFile};

pub const BIN: &str = env!("CARGO_BIN_EXE_streamcap");

/// Runs the binary.
pub fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run streamcap")
}

/// Whether a tool runs.
pub fn have(tool: &str, arg: &str) -> bool {
    Command::new(tool)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// Parses JSON lines.
pub fn json_lines(s: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(s)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l:?}: {e}")))
        .collect()
}

/// A direction-independent connection key: the two "ip:port" endpoints sorted.
pub fn pair_key(a: &str, b: &str) -> (String, String) {
    if a <= b {
        (a.to_string(), b.to_string())
    } else {
        (b.to_string(), a.to_string())
    }
}

/// "ip:port" of a record's initiator and responder.
pub fn endpoints(r: &serde_json::Value) -> (String, String) {
    (
        format!("{}:{}", r["src_ip"].as_str().unwrap_or(""), r["src_port"]),
        format!("{}:{}", r["dst_ip"].as_str().unwrap_or(""), r["dst_port"]),
    )
}

/// A complete TCP connection: handshake seen, closed by FIN or RST, nothing
/// missing, discarded or dropped, no error flag at all.
pub fn complete(r: &serde_json::Value) -> bool {
    r["proto"] == "tcp"
        && (r["end"] == "fin" || r["end"] == "rst")
        && r["errors"].as_array().is_some_and(|a| a.is_empty())
        && ["orig", "resp"]
            .iter()
            .all(|d| r[d]["missing"] == 0 && r[d]["discarded"] == 0 && r[d]["dropped"] == 0)
}

/// What a run printed on stderr.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A generated campus trace of 20,000 packets with fragments, VLANs, IPv6
/// and impairments (reordering, duplicates, loss, conflicting
/// retransmissions), written as `dir/campus.pcap`.
pub fn impaired_campus(dir: &std::path::Path, seed: u64) -> PathBuf {
    use streamcap_gen::campus::{Campus, CampusConfig};
    let cfg = CampusConfig {
        seed,
        packets: 20_000,
        concurrency: 300,
        reorder: 0.03,
        duplicate: 0.03,
        loss: 0.01,
        conflict: 0.01,
        fragment: 0.03,
        ..CampusConfig::default()
    };
    let (pcap, _, _) = Campus::new(cfg).to_bytes();
    let p = dir.join("campus.pcap");
    std::fs::write(&p, pcap).expect("write capture");
    p
}

/// The stream files `streams -w DIR` wrote (all but `streams.jsonl`),
/// by name, with their bytes.
pub fn stream_files(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .expect("output directory")
        .flatten()
        .filter(|e| e.file_name() != "streams.jsonl")
        .map(|e| {
            let body = std::fs::read(e.path()).expect("stream file");
            (e.file_name().to_string_lossy().into_owned(), body)
        })
        .collect();
    files.sort();
    files
}

/// A fresh scratch directory for one test, removed when the returned
/// guard is dropped (kept when the test fails).
pub fn tempdir(name: &str) -> TestDir {
    TestDir::new("streamcap-cli-test", name)
}

/// The files the comparisons use: HTTP, TCP edge cases without evasion, SLL2,
/// IPv6, VLAN, SMTP/FTP/SSH.
pub const COMPARE_FILES: [&str; 14] = [
    "http/zeek__http-pipelined-requests.pcap",
    "http/suri__http-chunked.pcap",
    "http/zeek__wikipedia.pcap",
    "http/zeek__http-post-large.pcap",
    "tcp-edge/zeek__tcp-handshake-reorder.pcap",
    "tcp-edge/zeek__tcp-ssh-dups.pcap",
    "tcp-edge/suri__tcp-urgent1.pcap",
    "bulk-flows/suri__decode-sll2-02.pcap",
    "ipv6-vlan-frag/ndpi__http_ipv6.pcap",
    "app-smtp-ftp-ssh/zeek__ftp-ipv6.pcap",
    "ipv6-vlan-frag/zeek__http-qinq-0.pcap",
    "tcp-edge/suri__tcp-syn-retransmit-with-ts.pcap",
    "mixed-large/zeek__http-bro.org.pcap",
    "app-smtp-ftp-ssh/zeek__smtp.pcap",
];
