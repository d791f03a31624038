//! Helpers shared by the CLI tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Says why a test does not run. Written straight to the process's stderr:
/// the test harness captures `eprintln!` (shown only for failing tests), so
/// a skipped test would otherwise pass without a word.
pub fn skip(reason: impl std::fmt::Display) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipping: {reason}");
}

pub const BIN: &str = env!("CARGO_BIN_EXE_streamcap");

/// The shared corpus, if present.
pub fn corpus() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus");
    if p.is_dir() {
        Some(p)
    } else {
        skip(format!("corpus not found at {}", p.display()));
        None
    }
}

/// Every capture file under `dir`, sorted.
pub fn captures(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p
                .extension()
                .and_then(|x| x.to_str())
                .is_some_and(|x| x == "pcap" || x == "pcapng")
            {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

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

/// Temporary directory under the target dir.
pub fn tempdir(name: &str) -> PathBuf {
    let base =
        std::env::temp_dir().join(format!("streamcap-cli-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).expect("mkdir");
    base
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
