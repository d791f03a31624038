//! The binary's behaviour: corpus robustness, formats, errors, exit codes.

mod common;

use common::*;
use std::io::Read;
use std::process::{Command, Stdio};

#[test]
fn corpus_never_panics() {
    let Some(corpus) = corpus() else { return };
    let files = captures(&corpus);
    assert!(!files.is_empty());
    let (mut ok, mut input_errors) = (0, 0);
    for f in &files {
        let fs = f.to_str().unwrap_or_default();
        for args in [
            vec!["flows", "-q", "-r", fs],
            vec!["flows", "--digest", "-r", fs],
            vec!["streams", "-q", "-r", fs],
            vec!["streams", "-q", "--workers", "2", "-r", fs],
        ] {
            let o = run(&args);
            let err = stderr(&o);
            assert!(!err.contains("panicked"), "{args:?}: {err}");
            match o.status.code() {
                Some(0) => ok += 1,
                Some(1) => {
                    input_errors += 1;
                    // A clear input error naming the file.
                    assert!(
                        err.contains(&format!("streamcap: {fs}: ")),
                        "{args:?}: {err}"
                    );
                }
                c => panic!("{args:?}: exit {c:?}: {err}"),
            }
            // Whatever was printed is valid JSON lines satisfying the invariant.
            for r in json_lines(&o.stdout) {
                for d in ["orig", "resp"] {
                    let g = |k: &str| r[d][k].as_u64().unwrap_or(u64::MAX);
                    assert_eq!(
                        g("captured") + g("discarded") + g("dropped"),
                        g("stream_bytes") - g("missing"),
                        "{args:?}: {r}"
                    );
                }
            }
        }
    }
    eprintln!(
        "{} captures: {ok} runs exit 0, {input_errors} runs exit 1 with an input error",
        files.len()
    );
}

#[test]
fn input_error_still_prints_records() {
    let Some(corpus) = corpus() else { return };
    let f = corpus.join("bulk-flows/suri__pgsql-5000-query-results.pcap");
    let o = run(&["flows", "-r", f.to_str().unwrap_or_default()]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains(": record 786 (byte offset 3276005): file cut short"),
        "{err}"
    );
    // The summary comes before the error; the records are all there.
    assert!(err.contains("packets"), "{err}");
    assert!(!json_lines(&o.stdout).is_empty());
}

#[test]
fn missing_file_is_an_input_error() {
    let o = run(&["flows", "-r", "/nonexistent/trace.pcap"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).starts_with("streamcap: /nonexistent/trace.pcap: cannot read"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn usage_errors_exit_2() {
    let o = run(&["flows", "-r", "x.pcap", "--workers", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--workers 0: expected 1 to 256"),
        "{}",
        stderr(&o)
    );
    let o = run(&["flows", "-r", "x.pcap", "--cutoff", "10XB"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown unit"), "{}", stderr(&o));
    let o = run(&["flows", "-r", "x.pcap", "--mode", "sloppy"]);
    assert_eq!(o.status.code(), Some(2));
    // No input: the message names both kinds, file and interface.
    let o = run(&["flows"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--read <FILE>|--interface <IFACE>"),
        "{}",
        stderr(&o)
    );
    let o = run(&["streams", "-r", "x.pcap", "-i", "lo"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
}

#[test]
fn invalid_filter_is_reported_before_reading() {
    // The file does not exist: the filter error must come first.
    let o = run(&[
        "flows",
        "-r",
        "/nonexistent.pcap",
        "tcp",
        "port",
        "80",
        "and",
        "and",
    ]);
    let err = stderr(&o);
    if err.contains("install libpcap0.8") {
        common::skip("libpcap not available");
        return;
    }
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("invalid filter \"tcp port 80 and and\""),
        "{err}"
    );
    assert!(err.contains("syntax error"), "{err}");
}

#[test]
fn filter_selects_flows() {
    let Some(corpus) = corpus() else { return };
    let f = corpus.join("http/zeek__wikipedia.pcap");
    let fs = f.to_str().unwrap_or_default();
    let all = json_lines(&run(&["flows", "-q", "-r", fs]).stdout);
    let o = run(&["flows", "-q", "-r", fs, "tcp", "port", "80"]);
    if stderr(&o).contains("install libpcap0.8") {
        return;
    }
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let web = json_lines(&o.stdout);
    assert!(!web.is_empty() && web.len() < all.len());
    assert!(web
        .iter()
        .all(|r| r["proto"] == "tcp" && (r["src_port"] == 80 || r["dst_port"] == 80)));
    let expect = all
        .iter()
        .filter(|r| r["proto"] == "tcp" && (r["src_port"] == 80 || r["dst_port"] == 80))
        .count();
    assert_eq!(web.len(), expect);
    let udp = json_lines(&run(&["flows", "-q", "-r", fs, "udp"]).stdout);
    assert!(udp.iter().all(|r| r["proto"] == "udp"));
    // SLL2 input: compiled for link type 276.
    let f = corpus.join("bulk-flows/suri__decode-sll2-02.pcap");
    let o = run(&["flows", "-q", "-r", f.to_str().unwrap_or_default(), "tcp"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!json_lines(&o.stdout).is_empty());
}

#[test]
fn cutoff_and_digest_options() {
    let Some(corpus) = corpus() else { return };
    let f = corpus.join("http/zeek__http-post-large.pcap");
    let fs = f.to_str().unwrap_or_default();
    let plain = json_lines(&run(&["flows", "-q", "-r", fs]).stdout);
    assert!(plain
        .iter()
        .all(|r| r["orig"]["captured"] == 0 && r["orig"]["sha256"].is_null()));
    let d = json_lines(&run(&["flows", "--digest", "-q", "-r", fs]).stdout);
    assert!(d
        .iter()
        .all(|r| r["orig"]["sha256"].as_str().is_some_and(|s| s.len() == 64)));
    let c = json_lines(&run(&["flows", "--digest", "-q", "--cutoff", "1KiB", "-r", fs]).stdout);
    assert!(c
        .iter()
        .all(|r| r["orig"]["captured"].as_u64().unwrap_or(9999) <= 1024));
    let c = json_lines(&run(&["flows", "--digest", "-q", "--cutoff-resp", "0", "-r", fs]).stdout);
    assert!(c.iter().all(|r| r["resp"]["captured"] == 0));
    assert!(c
        .iter()
        .any(|r| r["orig"]["captured"].as_u64().unwrap_or(0) > 1024));
    // -c: stop after 5 packets.
    let few = json_lines(&run(&["flows", "-q", "-c", "5", "-r", fs]).stdout);
    let pk: u64 = few
        .iter()
        .map(|r| r["orig"]["pkts"].as_u64().unwrap_or(0) + r["resp"]["pkts"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(pk, 5);
}

/// `-c` counts the packets that pass the filter, as tcpdump's `-c` does: the
/// sample's first packets are TCP, yet `-c 5 udp` still processes 5 UDP packets.
#[test]
fn count_applies_after_the_filter() {
    let f = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/sample.pcap");
    let fs = f.to_str().unwrap_or_default();
    let pkts = |args: &[&str]| -> Option<(u64, Vec<serde_json::Value>)> {
        let o = run(args);
        if stderr(&o).contains("install libpcap0.8") {
            return None;
        }
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        let recs = json_lines(&o.stdout);
        let n = recs
            .iter()
            .map(|r| {
                r["orig"]["pkts"].as_u64().unwrap_or(0) + r["resp"]["pkts"].as_u64().unwrap_or(0)
            })
            .sum();
        Some((n, recs))
    };
    let Some((n, recs)) = pkts(&["flows", "-q", "-c", "5", "-r", fs, "udp"]) else {
        return;
    };
    assert_eq!(n, 5, "{recs:?}");
    assert!(recs.iter().all(|r| r["proto"] == "udp"));
    if let Some((n, recs)) = pkts(&["flows", "-q", "-c", "7", "-r", fs, "tcp", "port", "80"]) {
        assert_eq!(n, 7, "{recs:?}");
    }
    // Without a filter every packet counts.
    if let Some((n, _)) = pkts(&["flows", "-q", "-c", "12", "-r", fs]) {
        assert_eq!(n, 12);
    }
    // The summary still reports how many packets were read before stopping.
    let o = run(&["flows", "-c", "5", "-r", fs, "udp"]);
    let err = stderr(&o);
    assert!(err.contains(", 5 matched \"udp\""), "{err}");
}

#[test]
fn csv_format() {
    let Some(corpus) = corpus() else { return };
    let f = corpus.join("http/zeek__wikipedia.pcap");
    let o = run(&[
        "flows",
        "-q",
        "--format",
        "csv",
        "-r",
        f.to_str().unwrap_or_default(),
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    assert_eq!(header[0], "ts");
    assert_eq!(*header.last().unwrap_or(&""), "community_id");
    let mut n = 0;
    for l in lines {
        assert_eq!(l.split(',').count(), header.len(), "{l}");
        n += 1;
    }
    assert!(n > 0);
}

/// Checks a conn.log strictly against Zeek's header grammar and field types.
fn check_zeek_log(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 9, "{text}");
    assert_eq!(lines[0], "#separator \\x09");
    assert_eq!(lines[1], "#set_separator\t,");
    assert_eq!(lines[2], "#empty_field\t(empty)");
    assert_eq!(lines[3], "#unset_field\t-");
    assert_eq!(lines[4], "#path\tconn");
    let date_ok = |s: &str| {
        let p: Vec<&str> = s.split('-').collect();
        p.len() == 6
            && p[0].len() == 4
            && p[1..].iter().all(|x| x.len() == 2)
            && p.iter().all(|x| x.bytes().all(|b| b.is_ascii_digit()))
    };
    let open = lines[5].strip_prefix("#open\t").expect("#open");
    assert!(date_ok(open), "{open}");
    let fields: Vec<&str> = lines[6]
        .strip_prefix("#fields\t")
        .expect("#fields")
        .split('\t')
        .collect();
    let types: Vec<&str> = lines[7]
        .strip_prefix("#types\t")
        .expect("#types")
        .split('\t')
        .collect();
    assert_eq!(fields.len(), 23);
    assert_eq!(fields[21..], ["ip_proto", "community_id"]);
    assert_eq!(types.len(), fields.len());
    let close = lines[lines.len() - 1]
        .strip_prefix("#close\t")
        .expect("#close last");
    assert!(date_ok(close), "{close}");
    let mut n = 0;
    for l in &lines[8..lines.len() - 1] {
        assert!(!l.starts_with('#'), "{l}");
        let v: Vec<&str> = l.split('\t').collect();
        assert_eq!(v.len(), fields.len(), "{l}");
        for ((val, ty), name) in v.iter().zip(&types).zip(&fields) {
            assert!(!val.is_empty(), "{name} empty in {l}");
            if *val == "-" {
                continue;
            }
            let ok = match *ty {
                "time" | "interval" => val.split_once('.').is_some_and(|(a, b)| {
                    !a.is_empty()
                        && a.bytes().all(|c| c.is_ascii_digit())
                        && b.len() == 6
                        && b.bytes().all(|c| c.is_ascii_digit())
                }),
                "count" | "port" => val.parse::<u64>().is_ok(),
                "addr" => val.parse::<std::net::IpAddr>().is_ok(),
                "bool" => *val == "T" || *val == "F",
                "enum" => ["tcp", "udp", "icmp", "unknown_transport"].contains(val),
                "string" => !val.contains('\t'),
                "set[string]" => true,
                t => panic!("unexpected type {t}"),
            };
            assert!(ok, "{name} ({ty}) = {val:?} in {l}");
        }
        let uid = v[1];
        assert!(
            uid.len() == 18
                && uid.starts_with('C')
                && uid[1..].bytes().all(|b| b.is_ascii_alphanumeric())
        );
        let states = [
            "S0", "S1", "SF", "REJ", "S2", "S3", "RSTO", "RSTR", "RSTOS0", "RSTRH", "SH", "SHR",
            "OTH",
        ];
        assert!(states.contains(&v[11]), "{l}");
        n += 1;
    }
    n
}

#[test]
fn zeek_format() {
    let Some(corpus) = corpus() else { return };
    let dir = tempdir("zeek");
    let mut total = 0;
    // zat's reader checks each log too, when it is installed.
    let zat = Command::new("python3")
        .args(["-c", "import zat"])
        .output()
        .is_ok_and(|p| p.status.success());
    if !zat {
        common::skip("the zat check: python3 -c 'import zat' failed (pip install zat)");
    }
    for rel in [
        "http/zeek__wikipedia.pcap",
        "tcp-edge/zeek__tcp-rst-inject-rae.pcap",
        "ipv6-vlan-frag/ndpi__http_ipv6.pcap",
        "mixed-large/zeek__echo-connections.pcap",
    ] {
        let f = corpus.join(rel);
        let out = dir.join("conn.log");
        let o = run(&[
            "flows",
            "-q",
            "--format",
            "zeek",
            "-o",
            out.to_str().unwrap_or_default(),
            "-r",
            f.to_str().unwrap_or_default(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let text = std::fs::read_to_string(&out).expect("conn.log");
        let n = check_zeek_log(&text);
        // The uid is deterministic.
        let o2 = run(&[
            "flows",
            "-q",
            "--format",
            "zeek",
            "-r",
            f.to_str().unwrap_or_default(),
        ]);
        let uids = |t: &str| {
            t.lines()
                .filter(|l| !l.starts_with('#'))
                .map(|l| l.split('\t').nth(1).unwrap_or("").to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(uids(&text), uids(&String::from_utf8_lossy(&o2.stdout)));
        total += n;
        if !zat {
            continue;
        }
        let script = "import sys\nfrom zat import zeek_log_reader\nr = zeek_log_reader.ZeekLogReader(sys.argv[1])\nn = 0\nfor row in r.readrows():\n    assert row['uid'].startswith('C'), row\n    assert row['proto'] in ('tcp','udp','icmp','unknown_transport'), row\n    n += 1\nprint(n)\n";
        let z = Command::new("python3")
            .args(["-c", script, out.to_str().unwrap_or_default()])
            .output()
            .expect("python3");
        assert!(
            z.status.success(),
            "zat failed on {rel}: {}",
            String::from_utf8_lossy(&z.stderr)
        );
        let zs = String::from_utf8_lossy(&z.stdout).into_owned();
        let zn: usize = zs
            .lines()
            .last()
            .unwrap_or("")
            .trim()
            .parse()
            .unwrap_or(usize::MAX);
        assert_eq!(zn, n, "zat rows for {rel}");
    }
    assert!(total > 10);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn broken_pipe_exits_quietly() {
    let Some(corpus) = corpus() else { return };
    let f = corpus.join("mixed-large/ndpi__gnutella.pcap");
    let mut child = Command::new(BIN)
        .args(["flows", "-r", f.to_str().unwrap_or_default()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut out = child.stdout.take().expect("stdout");
    let mut buf = [0u8; 100];
    let _ = out.read(&mut buf);
    drop(out);
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    let status = child.wait().expect("wait");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!err.contains("error"), "{err}");
    assert_eq!(status.code(), Some(0), "{err}");
}

#[test]
fn streams_directory() {
    let Some(corpus) = corpus() else { return };
    let dir = tempdir("streams");
    let f = corpus.join("http/zeek__http-pipelined-requests.pcap");
    let o = run(&[
        "streams",
        "-q",
        "-r",
        f.to_str().unwrap_or_default(),
        "-w",
        dir.to_str().unwrap_or_default(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let recs = json_lines(&std::fs::read(dir.join("streams.jsonl")).expect("streams.jsonl"));
    assert_eq!(recs.len(), 1);
    assert_eq!(
        recs[0]["orig"]["file"],
        "192.168.001.104.01673-063.245.209.011.00080"
    );
    assert_eq!(
        recs[0]["resp"]["file"],
        "063.245.209.011.00080-192.168.001.104.01673"
    );
    // stdout carries the same records.
    assert_eq!(json_lines(&o.stdout), recs);
    // A second run into the same directory (--append) gets tcpflow's c1 names.
    let o = run(&[
        "streams",
        "-q",
        "-r",
        f.to_str().unwrap_or_default(),
        "-w",
        dir.to_str().unwrap_or_default(),
        "--append",
    ]);
    let recs = json_lines(&o.stdout);
    assert_eq!(
        recs[0]["orig"]["file"],
        "192.168.001.104.01673-063.245.209.011.00080c1"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn man_pages_and_defaults_in_help() {
    let o = run(&["man"]);
    assert_eq!(o.status.code(), Some(0));
    let page = String::from_utf8_lossy(&o.stdout);
    assert!(page.contains(".TH streamcap 1"), "{page}");
    assert!(page.contains("flows") && page.contains("streams"), "{page}");
    let o = run(&["man", "flows"]);
    assert_eq!(o.status.code(), Some(0));
    let page = String::from_utf8_lossy(&o.stdout);
    assert!(page.contains(".TH streamcap-flows 1"), "{page}");
    for option in ["ring\\-size", "community\\-id\\-seed", "snaplen", "memory"] {
        assert!(page.contains(option), "{option} missing:\n{page}");
    }
    assert_eq!(run(&["man", "nosuch"]).status.code(), Some(2));
    // Not listed among the subcommands of the help.
    let o = run(&["--help"]);
    assert!(!String::from_utf8_lossy(&o.stdout).contains("man "));
    let o = run(&["streams", "--help"]);
    let h = String::from_utf8_lossy(&o.stdout);
    let h = h.split_whitespace().collect::<Vec<_>>().join(" ");
    for d in [
        "[default: 16 KiB]",
        "[default: 512 MiB]",
        "[default: 32 MiB]",
        "[default: 262144",
    ] {
        assert!(h.contains(d), "{d} missing:\n{h}");
    }
}

#[test]
fn completions_and_help() {
    for sh in ["bash", "zsh", "fish"] {
        let o = run(&["completions", sh]);
        assert_eq!(o.status.code(), Some(0));
        assert!(String::from_utf8_lossy(&o.stdout).contains("streamcap"));
    }
    let o = run(&["--help"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("Examples:"));
    let o = run(&["flows", "--help"]);
    let h = String::from_utf8_lossy(&o.stdout);
    assert!(
        h.contains("--digest") && h.contains("[FILTER]...") && h.contains("Examples:"),
        "{h}"
    );
}

#[test]
fn cutoff_classes() {
    let dir = tempdir("classes");
    let f = dir.join("sample.pcap");
    std::fs::write(
        &f,
        streamcap_gen::sample(streamcap_gen::SAMPLE_DEFAULT_SEED).to_pcap_bytes(),
    )
    .expect("write sample");
    let fs = f.to_str().unwrap_or_default();
    if run(&["flows", "-q", "-r", fs, "tcp"]).status.code() != Some(0) {
        common::skip("libpcap is not available");
        return;
    }
    let o = run(&[
        "flows",
        "-q",
        "-r",
        fs,
        "--digest",
        "--cutoff-class",
        "udp=0",
        "--cutoff-class",
        "tcp port 22=10",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let recs = json_lines(&o.stdout);
    let (mut udp, mut ssh) = (0, 0);
    for r in &recs {
        for d in ["orig", "resp"] {
            let captured = r[d]["captured"].as_u64().unwrap_or(u64::MAX);
            // What reached the capture (holes are missing, not captured).
            let total =
                r[d]["stream_bytes"].as_u64().unwrap_or(0) - r[d]["missing"].as_u64().unwrap_or(0);
            match (
                r["proto"].as_str(),
                r["dst_port"].as_u64(),
                r["vlan"].is_null(),
            ) {
                (Some("udp"), _, true) => {
                    udp += 1;
                    assert_eq!(captured, 0, "{r}");
                }
                (Some("tcp"), Some(22), true) => {
                    ssh += 1;
                    assert_eq!(captured, total.min(10), "{r}");
                }
                (_, _, true) => assert_eq!(captured, total, "{r}"),
                _ => {}
            }
        }
    }
    assert!(udp > 0 && ssh > 0);
    for bad in ["port 80", "portx 80=1", "=5", "udp=5XB"] {
        let o = run(&["flows", "-r", fs, "--cutoff-class", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stderr(&o));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Priority classes set each record's `priority`; with a budget small
/// enough to fill, the summary's `overload` line tells what each level
/// lost, and the accounting holds in every record.
#[test]
fn priority_classes_and_the_overload_line() {
    let fs = "../../samples/sample.pcap";
    if run(&["flows", "-q", "-r", fs, "tcp"]).status.code() != Some(0) {
        common::skip("libpcap is not available");
        return;
    }
    let o = run(&[
        "flows",
        "-r",
        fs,
        "--digest",
        "--memory",
        "8KiB",
        "--priority",
        "3",
        "--priority-class",
        "tcp port 443=7",
        "--base-threshold",
        "25%",
        "--overload-cutoff",
        "1000",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let recs = json_lines(&o.stdout);
    let mut high = 0;
    for r in &recs {
        let want = if r["dst_port"].as_u64() == Some(443) && r["proto"] == "tcp" {
            high += 1;
            7
        } else {
            3
        };
        for d in ["orig", "resp"] {
            assert_eq!(r[d]["priority"].as_u64(), Some(want), "{r}");
            let g = |k: &str| r[d][k].as_u64().unwrap_or(u64::MAX);
            assert_eq!(
                g("captured") + g("discarded") + g("dropped") + g("missing"),
                g("stream_bytes"),
                "{r}"
            );
        }
    }
    assert!(high > 0);
    let err = stderr(&o);
    let line = err
        .lines()
        .find(|l| l.trim_start().starts_with("overload"))
        .unwrap_or_else(|| panic!("no overload line: {err}"));
    assert!(
        line.contains("priority 3: ") && line.contains("priority 7: "),
        "{line}"
    );
    // Nothing of it in the records.
    assert!(!String::from_utf8_lossy(&o.stdout).contains("overload"));
    // Without pressure, no overload line.
    let o = run(&["flows", "-r", fs, "--priority", "1"]);
    assert!(!stderr(&o).contains("overload"), "{}", stderr(&o));
    for bad in [
        vec!["--priority", "256"],
        vec!["--priority-class", "port 22"],
        vec!["--priority-class", "port 22=300"],
        vec!["--priority-class", "portx 22=1"],
        vec!["--base-threshold", "1.5"],
        vec!["--base-threshold", "x"],
        vec!["--overload-cutoff", "-1"],
    ] {
        let mut args = vec!["flows", "-r", fs];
        args.extend(bad.iter());
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", stderr(&o));
    }
}

/// The summary accounts for every IP fragment: in a reassembled datagram or
/// dropped, with the reasons, also with two workers.
#[test]
fn summary_accounts_for_fragments() {
    let dir = tempdir("fragments");
    let f = dir.join("frag.pcap");
    let (bytes, _) =
        streamcap_gen::attack::generate_bytes(streamcap_gen::Profile::FragmentFlood, 6000, 1);
    std::fs::write(&f, bytes).expect("write capture");
    let fs = f.to_str().unwrap_or_default();
    for workers in ["1", "2"] {
        let o = run(&["flows", "-r", fs, "-o", "/dev/null", "--workers", workers]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let err = stderr(&o);
        let line = err
            .lines()
            .find_map(|l| l.trim_start().strip_prefix("fragments"))
            .unwrap_or_else(|| panic!("no fragments line: {err}"));
        let nums: Vec<u64> = line
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|w| w.parse().ok())
            .collect();
        // "N = R in D reassembled datagrams + X dropped (n reason, ...); ..."
        let (total, carried, datagrams, dropped) = (nums[0], nums[1], nums[2], nums[3]);
        assert_eq!(total, 6000, "{line}");
        assert_eq!(carried + dropped, total, "{line}");
        assert!(datagrams > 0 && dropped > 0, "{line}");
        assert!(line.contains("conflicting)"), "{line}");
        // The reasons count fragments: they add up to the dropped ones.
        let reasons = line
            .split_once("dropped (")
            .and_then(|(_, r)| r.split_once(')'))
            .map(|(r, _)| r)
            .unwrap_or_else(|| panic!("no reasons: {line}"));
        let by_reason: u64 = reasons
            .split(", ")
            .map(|r| {
                r.split_whitespace()
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
                    .unwrap_or_else(|| panic!("reason without a count first: {line}"))
            })
            .sum();
        assert_eq!(by_reason, dropped, "{line}");
        assert!(reasons.contains("timed out"), "{line}");
    }
    // Without fragments there is no such line.
    let s = dir.join("syn.pcap");
    let (bytes, _) =
        streamcap_gen::attack::generate_bytes(streamcap_gen::Profile::SynFlood, 100, 1);
    std::fs::write(&s, bytes).expect("write capture");
    let o = run(&[
        "flows",
        "-r",
        s.to_str().unwrap_or_default(),
        "-o",
        "/dev/null",
    ]);
    let err = stderr(&o);
    assert!(
        !err.lines().any(|l| l.trim_start().starts_with("fragments")),
        "{err}"
    );
}

/// Runs `streamcap ARGS` with `input` on its standard input.
fn run_with_stdin(args: &[&str], input: Vec<u8>) -> std::process::Output {
    use std::io::Write;
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    // Written from another thread: the pipe holds less than the capture.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("wait");
    writer.join().expect("writer");
    out
}

#[test]
fn standard_input_is_read_as_it_comes() {
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/../../samples/sample.pcap");
    let bytes = std::fs::read(sample).expect("the shipped sample");
    let from_file = run(&["flows", "--digest", "-r", sample]);
    assert_eq!(from_file.status.code(), Some(0), "{}", stderr(&from_file));
    let from_stdin = run_with_stdin(&["flows", "--digest", "-r", "-"], bytes.clone());
    assert_eq!(from_stdin.status.code(), Some(0), "{}", stderr(&from_stdin));
    assert!(!from_stdin.stdout.is_empty());
    assert_eq!(from_stdin.stdout, from_file.stdout, "the same records");
    assert!(stderr(&from_stdin).starts_with("streamcap: -\n"));

    // A capture cut short: the same error, named `-`, at the same place.
    let cut = bytes.len() - 100;
    let path =
        std::env::temp_dir().join(format!("streamcap-stdin-cut-{}.pcap", std::process::id()));
    std::fs::write(&path, &bytes[..cut]).expect("temp file");
    let file_err = stderr(&run(&["flows", "-r", path.to_str().unwrap_or_default()]));
    let _ = std::fs::remove_file(&path);
    let o = run_with_stdin(&["flows", "-r", "-"], bytes[..cut].to_vec());
    assert_eq!(o.status.code(), Some(1));
    // The last line, from the record number on (the names differ).
    let tail = |s: &str| {
        s.lines()
            .last()
            .and_then(|l| l.split_once(": record "))
            .map(|(_, t)| t.to_string())
    };
    assert_eq!(tail(&stderr(&o)), tail(&file_err), "{}", stderr(&o));

    // Several workers would each need to read it from the start.
    let o = run_with_stdin(&["flows", "--workers", "2", "-r", "-"], bytes);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("read only once, by one worker"),
        "{}",
        stderr(&o)
    );
    assert!(o.stdout.is_empty());
}

/// Each record without the overlap-conflict flag: segment delivery holds no
/// delivered bytes, so it cannot see a retransmission contradict them.
fn without_conflict_flag(mut recs: Vec<serde_json::Value>) -> Vec<serde_json::Value> {
    for r in &mut recs {
        if let Some(errors) = r["errors"].as_array_mut() {
            errors.retain(|e| e != "overlap_conflict");
        }
    }
    recs
}

/// `--delivery segments` hands the consumer the same bytes as chunk
/// delivery: the same digests, records and stream files.
#[test]
fn segment_delivery_gives_the_same_digests_and_files() {
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/../../samples/sample.pcap");
    let mut records = Vec::new();
    let mut files = Vec::new();
    for delivery in ["chunks", "segments"] {
        let o = run(&["flows", "--digest", "--delivery", delivery, "-r", sample]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        records.push(without_conflict_flag(json_lines(&o.stdout)));
        let dir = tempdir(&format!("delivery-{delivery}"));
        let o = run(&[
            "streams",
            "-q",
            "--delivery",
            delivery,
            "-r",
            sample,
            "-w",
            dir.to_str().unwrap_or_default(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let mut contents = Vec::new();
        for e in std::fs::read_dir(&dir).expect("output directory").flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name != "streams.jsonl" {
                contents.push((name, std::fs::read(e.path()).expect("stream file")));
            }
        }
        contents.sort();
        files.push(contents);
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert!(records[0].len() > 30);
    assert_eq!(records[0], records[1]);
    assert!(files[0].len() > 40);
    assert!(files[0] == files[1], "stream files differ");
}
