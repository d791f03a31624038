//! `flows --ipfix` against a real collector: nfcapd (nfdump 1.7) receives
//! the UDP export of every corpus capture and of a generated campus trace;
//! `nfdump -o json` reads its files back, and every flow is compared with
//! the JSON record of the same run: addresses, ports, protocol, VLAN,
//! packets and bytes both ways, first and last packet to the millisecond.
//! With `--active-timeout 10s`, long connections appear as several records
//! whose sums are the final JSON record. The TCP export and the IPFIX file
//! are read back with streamcap's own decoder. Skips (with a message)
//! without nfcapd.
//!
//! nfdump keeps an RFC 5103 biflow as one record: the forward counters as
//! `in_packets`/`in_bytes`, the reverse ones (octetDeltaCount and
//! packetDeltaCount under PEN 29305) as `out_packets`/`out_bytes`, so the
//! comparison is one nfdump record per IPFIX data record, exactly. For
//! ICMP it shows no ports but a type and code derived from them: from the
//! source port when it is not 0 (type its low byte, code its high byte),
//! else from the destination port (type its high byte, code its low byte).

mod common;

use common::{captures, corpus, json_lines, run, skip, tempdir, TestDir, TestFile, BIN};
use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::net::{IpAddr, TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use streamcap_apps::export::ipfix::{decode::message_len, Decoder, IpfixFlow};

/// One IPFIX record as compared: src, sport, dst, dport (ICMP: nfdump's
/// type and code), protocol, VLAN, first and last (ms), packets and bytes
/// forward, then reverse.
type Row = (
    IpAddr,
    u16,
    IpAddr,
    u16,
    u8,
    u16,
    u64,
    u64,
    u64,
    u64,
    u64,
    u64,
);

/// The ports as nfdump 1.7.1 shows them: ICMP's as (type, code).
fn ports(proto: u8, sport: u16, dport: u16) -> (u16, u16) {
    if proto != 1 && proto != 58 {
        return (sport, dport);
    }
    if sport != 0 {
        (sport & 0xff, sport >> 8)
    } else {
        (dport >> 8, dport & 0xff)
    }
}

/// The text of a number field of a JSON line (`"ts":1.000005`), to read
/// times exactly (an f64 would round them).
fn raw<'a>(line: &'a str, key: &str) -> &'a str {
    let pat = format!("\"{key}\":");
    let at = line.find(&pat).unwrap_or_else(|| panic!("{key} in {line}")) + pat.len();
    let rest = &line[at..];
    &rest[..rest.find([',', '}']).unwrap_or(rest.len())]
}

/// `secs.micros` as milliseconds.
fn ms(text: &str) -> u64 {
    let (s, f) = text.split_once('.').expect("six decimals");
    s.parse::<u64>().expect("secs") * 1000 + f[..3].parse::<u64>().expect("ms")
}

fn proto(v: &serde_json::Value) -> u8 {
    match v.as_str() {
        Some("tcp") => 6,
        Some("udp") => 17,
        Some("icmp") => 1,
        Some("icmp6") => 58,
        _ => v.as_u64().expect("protocol number") as u8,
    }
}

/// A JSON record's fields: (key of the connection, cumulative counters,
/// first ms, last ms, interim).
struct Rec {
    conn: String,
    row: Row,
    interim: bool,
}

fn recs(json: &str) -> Vec<Rec> {
    json.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("JSON line");
            let p = proto(&v["proto"]);
            let (sp, dp) = ports(
                p,
                v["src_port"].as_u64().expect("port") as u16,
                v["dst_port"].as_u64().expect("port") as u16,
            );
            let n = |d: &str, f: &str| v[d][f].as_u64().expect("counter");
            let row = (
                v["src_ip"].as_str().expect("ip").parse().expect("ip"),
                sp,
                v["dst_ip"].as_str().expect("ip").parse().expect("ip"),
                dp,
                p,
                v["vlan"].as_u64().unwrap_or(0) as u16,
                ms(raw(l, "ts")),
                ms(raw(l, "last_ts")),
                n("orig", "pkts"),
                n("orig", "bytes"),
                n("resp", "pkts"),
                n("resp", "bytes"),
            );
            Rec {
                conn: format!(
                    "{} {} {} {} {}",
                    raw(l, "ts"),
                    v["src_ip"],
                    v["src_port"],
                    v["dst_ip"],
                    v["tunnel"]
                ),
                row,
                interim: v["end"] == "active",
            }
        })
        .collect()
}

/// The IPFIX records the exporter must have sent for these JSON records
/// (docs/export.md): a connection's interim records carry what is new
/// since its previous report (none when nothing is), starting where that
/// one ended; its final record carries the rest.
fn expected(json: &str) -> Vec<Row> {
    let mut last: HashMap<String, Row> = HashMap::new();
    let mut out = Vec::new();
    for r in recs(json) {
        let mut row = r.row;
        let before = if r.interim {
            last.get(&r.conn).copied()
        } else {
            last.remove(&r.conn)
        };
        if let Some(b) = before {
            row.6 = b.7.max(row.6);
            row.8 -= b.8;
            row.9 -= b.9;
            row.10 -= b.10;
            row.11 -= b.11;
            if r.interim && row.8 == 0 && row.10 == 0 {
                continue;
            }
        }
        if r.interim {
            last.insert(r.conn.clone(), r.row);
        }
        out.push(row);
    }
    out
}

/// "2023-11-14T22:13:20.123" (UTC) as ms since the epoch.
fn nf_time(s: &str) -> u64 {
    let n = |a: usize, b: usize| s[a..b].parse::<i64>().expect("date field");
    let (y, m, d) = (n(0, 4), n(5, 7), n(8, 10));
    // Days from the civil date (H. Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + n(11, 13) * 3600 + n(14, 16) * 60 + n(17, 19);
    secs as u64 * 1000 + n(20, 23) as u64
}

/// nfdump's JSON records as rows.
fn nf_rows(v: &serde_json::Value) -> Vec<Row> {
    let empty = Vec::new();
    v.as_array()
        .unwrap_or(&empty)
        .iter()
        .filter(|r| r["type"] == "FLOW")
        .map(|r| {
            let ip = |k4: &str, k6: &str| -> IpAddr {
                r[k4]
                    .as_str()
                    .or_else(|| r[k6].as_str())
                    .expect("address")
                    .parse()
                    .expect("address")
            };
            let n = |k: &str| r[k].as_u64().unwrap_or(0);
            let p = n("proto") as u8;
            let (sp, dp) = if p == 1 || p == 58 {
                (n("icmp_type") as u16, n("icmp_code") as u16)
            } else {
                (n("src_port") as u16, n("dst_port") as u16)
            };
            (
                ip("src4_addr", "src6_addr"),
                sp,
                ip("dst4_addr", "dst6_addr"),
                dp,
                p,
                n("src_vlan") as u16,
                nf_time(r["first"].as_str().expect("first")),
                nf_time(r["last"].as_str().expect("last")),
                n("in_packets"),
                n("in_bytes"),
                n("out_packets"),
                n("out_bytes"),
            )
        })
        .collect()
}

/// A running nfcapd on 127.0.0.1.
struct Nfcapd {
    child: Child,
    /// What holds `dir` and `log`, removed after nfcapd stops.
    _base: TestDir,
    dir: PathBuf,
    log: PathBuf,
    port: u16,
}

impl Nfcapd {
    /// Starts nfcapd on a free UDP port, writing into a new directory.
    fn start(name: &str) -> Option<Nfcapd> {
        if Command::new("nfcapd").arg("-V").output().is_err() {
            skip("nfcapd not installed (Debian: nfdump)");
            return None;
        }
        let base = tempdir(&format!("nfcapd-{name}"));
        let dir = base.join("flows");
        std::fs::create_dir_all(&dir).expect("mkdir");
        let log = base.join("nfcapd.log");
        // A free port: bound, then released for nfcapd (a race with
        // another process is unlikely on a test machine).
        let port = UdpSocket::bind("127.0.0.1:0")
            .and_then(|s| s.local_addr())
            .expect("free port")
            .port();
        let out = std::fs::File::create(&log).expect("log");
        let child = Command::new("nfcapd")
            // A receive buffer of 8 MiB (as far as net.core.rmem_max
            // allows): a collector starved of CPU by a busy machine loses
            // no datagram of a burst.
            .args([
                "-b",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "-B",
                "8388608",
                "-w",
            ])
            .arg(&dir)
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("log"))
            .stderr(out)
            .spawn()
            .expect("start nfcapd");
        let c = Nfcapd {
            child,
            _base: base,
            dir,
            log,
            port,
        };
        let start = Instant::now();
        while !c.log_text().contains("Startup") {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "nfcapd did not start: {}",
                c.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(c)
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn url(&self) -> String {
        format!("udp://127.0.0.1:{}", self.port)
    }

    /// Stops it (SIGTERM writes out the current file) and reads every
    /// flow back; and its log.
    fn stop(mut self) -> (Vec<Row>, String) {
        // Let the last datagrams reach it.
        std::thread::sleep(Duration::from_millis(300));
        let killed = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(killed.success());
        // nfcapd ends within a second of SIGTERM; one that hangs (it can,
        // after a write error such as a full disk) fails the test rather
        // than holding it forever.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(st) = self.child.try_wait().expect("nfcapd status") {
                break st;
            }
            if std::time::Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("nfcapd did not end 30 s after SIGTERM\n{}", self.log_text());
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(status.success(), "nfcapd: {status:?}\n{}", self.log_text());
        let out = Command::new("nfdump")
            .env("TZ", "UTC")
            .args(["-q", "-o", "json", "-R"])
            .arg(&self.dir)
            .output()
            .expect("nfdump");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // With -q, nfdump 1.7.1 leaves out the array's brackets.
        let text = String::from_utf8_lossy(&out.stdout);
        let text = text.trim();
        let v: serde_json::Value = if text.is_empty() {
            serde_json::Value::Array(Vec::new())
        } else if text.starts_with('[') {
            serde_json::from_str(text).expect("nfdump's JSON")
        } else {
            serde_json::from_str(&format!("[{text}]")).expect("nfdump's JSON")
        };
        (nf_rows(&v), self.log_text())
    }
}

impl Drop for Nfcapd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// nfcapd's log says, for each exporter, that no sequence number was off.
fn no_sequence_errors(log: &str) {
    let counts: Vec<&str> = log
        .split("Sequence Errors: ")
        .skip(1)
        .map(|rest| rest.split(',').next().unwrap_or(""))
        .collect();
    assert!(!counts.is_empty(), "{log}");
    assert!(counts.iter().all(|c| *c == "0"), "{log}");
}

/// Runs `flows` on `input` with `extra` options; its JSON records.
fn flows(input: &Path, extra: &[&str]) -> String {
    let mut args = vec!["flows", "-q", "-r", input.to_str().expect("path")];
    args.extend_from_slice(extra);
    let o = run(&args);
    // Some corpus captures end in an input error (exit 1): their records
    // up to it are written and exported all the same.
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{input:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("UTF-8")
}

/// Sorted, to compare as multisets.
fn sorted(mut v: Vec<Row>) -> Vec<Row> {
    v.sort();
    v
}

/// A generated 200,000-packet campus trace on a link of `gbps`, removed
/// when the returned file is dropped.
fn campus(name: &str, gbps: f64) -> TestFile {
    let p = tempdir(&format!("ipfix-campus-{name}")).into_file("campus.pcap");
    let cfg = streamcap_gen::CampusConfig {
        packets: 200_000,
        link_gbps: gbps,
        ..Default::default()
    };
    let (bytes, _, _) = streamcap_gen::Campus::new(cfg).to_bytes();
    std::fs::write(&p, bytes).expect("write trace");
    p
}

/// Compares what nfdump read with what the runs' JSON records say:
/// equal as multisets of rows; reports the first differences.
fn compare(what: &str, got: Vec<Row>, want: Vec<Row>) {
    let (got, want) = (sorted(got), sorted(want));
    if got != want {
        let mut only_got = got.clone();
        let mut only_want = want.clone();
        only_got.retain(|r| want.binary_search(r).is_err());
        only_want.retain(|r| got.binary_search(r).is_err());
        panic!(
            "{what}: {} records from nfdump, {} expected\nonly in nfdump: {:?}\nonly expected: {:?}",
            got.len(),
            want.len(),
            &only_got[..only_got.len().min(5)],
            &only_want[..only_want.len().min(5)]
        );
    }
}

/// Every corpus capture (each its own observation domain, so that nfcapd
/// checks each run's sequence numbers) and a 200,000-packet campus trace:
/// every flow, exactly.
#[test]
fn udp_export_matches_nfdump_flow_by_flow() {
    let Some(nf) = Nfcapd::start("all") else {
        return;
    };
    let trace = campus("udp", 10.0);
    let mut inputs: Vec<PathBuf> = corpus().map(|d| captures(&d)).unwrap_or_default();
    inputs.push(trace.to_path_buf());
    let url = nf.url();
    let mut want = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        let domain = (i + 1).to_string();
        let json = flows(input, &["--ipfix", &url, "--observation-domain", &domain]);
        want.extend(expected(&json));
    }
    let (got, log) = nf.stop();
    no_sequence_errors(&log);
    eprintln!(
        "{} captures, {} flows compared with nfdump",
        inputs.len(),
        want.len()
    );
    assert!(want.len() > 10_000);
    compare("UDP export", got, want);
}

/// `--active-timeout 10s` on a 2-minute trace: long connections are
/// reported every 10 s; nfdump has one record per report (with the
/// counters since the previous one) and the final one, whose sums per
/// connection are its final JSON record.
#[test]
fn active_timeouts_split_long_flows_into_records_that_add_up() {
    let Some(nf) = Nfcapd::start("active") else {
        return;
    };
    // 200,000 packets at 10 Mbit/s: about 2 minutes.
    let trace = campus("active", 0.01);
    let url = nf.url();
    // Paced at 2,000 messages per second (a few seconds for this trace):
    // nfcapd, on one of two busy cores, keeps up.
    let json = flows(
        &trace,
        &[
            "--ipfix",
            &url,
            "--active-timeout",
            "10s",
            "--ipfix-rate",
            "2000",
        ],
    );
    let (got, log) = nf.stop();
    no_sequence_errors(&log);
    let all = recs(&json);
    let interim = all.iter().filter(|r| r.interim).count();
    assert!(interim > 1000, "{interim} interim records");
    let want = expected(&json);
    // The engine reports a connection only for an interval in which a
    // packet of it came: every JSON interim record has something new, and
    // the export skips none.
    assert_eq!(want.len(), all.len(), "every record is exported");
    // Per connection (its 5-tuple and VLAN: unique in this trace), the
    // sums of nfdump's records are the final JSON record, and the records
    // tile its lifetime.
    // Per 5-tuple and VLAN: first, last, the four sums, records.
    type Key = (IpAddr, u16, IpAddr, u16, u8, u16);
    let mut sums: BTreeMap<Key, (u64, u64, [u64; 4], usize)> = BTreeMap::new();
    for r in &got {
        let e = sums
            .entry((r.0, r.1, r.2, r.3, r.4, r.5))
            .or_insert((u64::MAX, 0, [0; 4], 0));
        e.0 = e.0.min(r.6);
        e.1 = e.1.max(r.7);
        for (s, v) in e.2.iter_mut().zip([r.8, r.9, r.10, r.11]) {
            *s += v;
        }
        e.3 += 1;
    }
    let mut split = 0;
    for f in all.iter().filter(|r| !r.interim) {
        let r = f.row;
        let s = sums
            .get(&(r.0, r.1, r.2, r.3, r.4, r.5))
            .unwrap_or_else(|| panic!("no nfdump record for {:?}", r));
        assert_eq!((s.0, s.1), (r.6, r.7), "first and last of {r:?}");
        assert_eq!(s.2, [r.8, r.9, r.10, r.11], "sums of {r:?}");
        split += usize::from(s.3 > 1);
    }
    eprintln!(
        "{} JSON records ({interim} interim), {} nfdump records, {split} connections in several",
        all.len(),
        got.len()
    );
    assert!(split > 100, "{split} connections reported more than once");
    compare("active timeouts", got, want);
}

/// Reads IPFIX messages back to back (a TCP stream, a file); checks each
/// message's sequence number.
fn decode_stream(bytes: &[u8]) -> Vec<IpfixFlow> {
    let mut dec = Decoder::default();
    let (mut at, mut seq, mut flows) = (0, 0u32, Vec::new());
    while at < bytes.len() {
        let len = message_len(&bytes[at..]).expect("a message header");
        assert!(len >= 16 && at + len <= bytes.len(), "whole messages");
        let m = dec.decode(&bytes[at..at + len]).expect("decodes");
        assert_eq!(m.sequence, seq, "sequence number");
        assert_eq!(m.unknown_sets, 0, "templates first");
        seq = seq.wrapping_add(m.records.len() as u32);
        flows.extend(m.flows());
        at += len;
    }
    flows
}

fn flow_row(f: &IpfixFlow) -> Row {
    let (sp, dp) = ports(f.proto, f.src_port, f.dst_port);
    (
        f.src,
        sp,
        f.dst,
        dp,
        f.proto,
        f.vlan,
        f.start_ms,
        f.end_ms,
        f.fwd.packets,
        f.fwd.octets,
        f.rev.packets,
        f.rev.octets,
    )
}

/// The TCP export (to a listener of the test: nfcapd takes UDP only) and
/// the IPFIX file of the same run hold exactly the expected records; the
/// record output is byte for byte the one of a run without export.
#[test]
fn tcp_and_file_exports_read_back_exactly() {
    let dir = tempdir("ipfix-tcp");
    let mut inputs = vec![PathBuf::from("../../samples/sample.pcap")];
    if let Some(c) = corpus() {
        inputs.push(c.join("mixed-large/zeek__echo-connections.pcap"));
    }
    for (i, input) in inputs.iter().enumerate() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
        let url = format!("tcp://{}", listener.local_addr().expect("addr"));
        let collector = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().expect("accept");
            let mut bytes = Vec::new();
            s.read_to_end(&mut bytes).expect("read");
            bytes
        });
        let file = dir.join(format!("{i}.ipfix"));
        let json = flows(
            input,
            &[
                "--ipfix",
                &url,
                "--ipfix-file",
                file.to_str().expect("path"),
                "--active-timeout",
                "1s",
                "--observation-domain",
                "77",
            ],
        );
        let want = sorted(expected(&json));
        let tcp = decode_stream(&collector.join().expect("collector"));
        let from_file = decode_stream(&std::fs::read(&file).expect("file"));
        assert_eq!(tcp, from_file, "{input:?}: TCP and file alike");
        assert_eq!(
            sorted(tcp.iter().map(flow_row).collect()),
            want,
            "{input:?}"
        );
        // The enterprise elements: the final records' sums per direction.
        let captured: u64 = tcp.iter().map(|f| f.fwd.captured + f.rev.captured).sum();
        assert_eq!(captured, 0, "flows delivers no byte by default");
        // The same records without export, byte for byte (interim ones too).
        let plain = flows(input, &["--active-timeout", "1s"]);
        assert_eq!(plain, json, "{input:?}: the records do not change");
    }
}

/// With two workers (which then pass their records to the writer thread
/// beside their text), the records are the same lines as without export,
/// and the file has one record per line.
#[test]
fn two_workers_export_every_record_once() {
    let dir = tempdir("ipfix-workers");
    let file = dir.join("w.ipfix");
    let input = Path::new("../../samples/sample.pcap");
    let json = flows(
        input,
        &[
            "--workers",
            "2",
            "--ipfix-file",
            file.to_str().expect("path"),
        ],
    );
    let plain = flows(input, &["--workers", "2"]);
    let lines = |s: &str| {
        let mut v: Vec<String> = s.lines().map(str::to_string).collect();
        v.sort();
        v
    };
    assert_eq!(lines(&json), lines(&plain));
    let got = sorted(
        decode_stream(&std::fs::read(&file).expect("file"))
            .iter()
            .map(flow_row)
            .collect(),
    );
    assert_eq!(got, sorted(expected(&json)));
    assert_eq!(got.len(), json_lines(json.as_bytes()).len());
}

/// Errors: an unreachable collector over TCP and an unwritable file are
/// clear usage errors before the run; a UDP collector that is not there
/// costs send errors, counted in the summary and `--stats-json`.
#[test]
fn errors_are_clear_and_udp_failures_counted() {
    let input = "../../samples/sample.pcap";
    // Nothing listens on a port just released.
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let url = format!("tcp://127.0.0.1:{port}");
    let o = run(&["flows", "-r", input, "--ipfix", &url]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "ipfix {url}: cannot connect to the IPFIX collector"
        )),
        "{err}"
    );
    assert!(o.stdout.is_empty());
    let o = run(&["flows", "-r", input, "--ipfix-file", "/nonexistent/x.ipfix"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("/nonexistent/x.ipfix: cannot create"), "{err}");
    for bad in [
        &["--ipfix", "127.0.0.1:4739"][..],
        &["--ipfix", "udp://127.0.0.1:0"],
        &["--active-timeout", "0s"],
        &["--ipfix-rate", "100"],
        &["--ipfix", "udp://127.0.0.1:9", "--ipfix-rate", "fast"],
    ] {
        let mut args = vec!["flows", "-r", input];
        args.extend_from_slice(bad);
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{bad:?}");
    }
    // UDP to a closed port: ICMP port unreachable comes back as send
    // errors (from the second message on); the run succeeds.
    let udp = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let url = format!("udp://{}", udp.local_addr().expect("addr"));
    drop(udp);
    let dir = tempdir("ipfix-udp-errors");
    let stats = dir.join("stats.json");
    let o = Command::new(BIN)
        .args(["flows", "-r", input, "-o", "/dev/null", "--ipfix", &url])
        .args(["--active-timeout", "100ms", "--stats-json"])
        .arg(&stats)
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let line = err
        .lines()
        .find(|l| l.trim_start().starts_with("ipfix"))
        .unwrap_or_else(|| panic!("an ipfix line: {err}"));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("JSON");
    let e = &v["exports"][0];
    assert_eq!(e["kind"], "ipfix");
    assert_eq!(e["target"], url.as_str());
    let (messages, errors) = (e["messages"].as_u64(), e["send_errors"].as_u64());
    assert!(messages > Some(1), "{e}");
    assert!(errors >= Some(1), "{e}");
    assert!(
        line.contains(&format!("{} send errors", errors.unwrap_or(0))),
        "{line}"
    );
    assert!(v["flows"]["interim_records"].as_u64() > Some(0), "{v}");
}

/// `flows --app` exports the same way: its interim records (no label yet)
/// and final ones (labelled) in the JSON, their deltas in the IPFIX file.
#[test]
fn app_classified_records_are_exported_too() {
    let dir = tempdir("ipfix-app");
    let file = dir.join("app.ipfix");
    let input = Path::new("../../samples/sample.pcap");
    let json = flows(
        input,
        &[
            "--app",
            "--active-timeout",
            "1s",
            "--ipfix-file",
            file.to_str().expect("path"),
        ],
    );
    let lines = json_lines(json.as_bytes());
    let interim: Vec<_> = lines.iter().filter(|r| r["end"] == "active").collect();
    assert!(!interim.is_empty());
    assert!(
        interim.iter().all(|r| r.get("app").is_none()),
        "no label yet"
    );
    assert!(lines
        .iter()
        .filter(|r| r["end"] != "active")
        .all(|r| r["app"].is_string()));
    let got = sorted(
        decode_stream(&std::fs::read(&file).expect("file"))
            .iter()
            .map(flow_row)
            .collect(),
    );
    assert_eq!(got, sorted(expected(&json)));
}
