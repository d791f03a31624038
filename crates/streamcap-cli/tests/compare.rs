//! Results compared with tshark and tcpflow on real captures.

mod common;

use common::*;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::process::Command;

fn tshark(args: &[&str]) -> Option<String> {
    let o = Command::new("tshark").args(args).output().ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).into_owned())
}

fn last_field(s: &str) -> &str {
    s.rsplit(',').next().unwrap_or("")
}

/// tshark's TCP stream index → (client "ip:port", server "ip:port") from the pure SYNs.
fn tshark_syn_streams(file: &str) -> HashMap<u64, (String, String)> {
    let out = tshark(&[
        "-r",
        file,
        "-Y",
        "tcp.flags.syn == 1 && tcp.flags.ack == 0",
        "-T",
        "fields",
        "-e",
        "tcp.stream",
        "-e",
        "ip.src",
        "-e",
        "ipv6.src",
        "-e",
        "tcp.srcport",
        "-e",
        "ip.dst",
        "-e",
        "ipv6.dst",
        "-e",
        "tcp.dstport",
    ])
    .unwrap_or_default();
    let mut m = HashMap::new();
    for l in out.lines() {
        let f: Vec<&str> = l.split('\t').collect();
        if f.len() < 7 {
            continue;
        }
        let Ok(idx) = f[0].parse::<u64>() else {
            continue;
        };
        let src = if f[1].is_empty() {
            last_field(f[2])
        } else {
            last_field(f[1])
        };
        let dst = if f[4].is_empty() {
            last_field(f[5])
        } else {
            last_field(f[4])
        };
        m.entry(idx)
            .or_insert_with(|| (format!("{src}:{}", f[3]), format!("{dst}:{}", f[6])));
    }
    m
}

fn parse_node(l: &str) -> String {
    // "Node 0: [2a00::1]:443" or "Node 0: 10.0.0.1:80".
    let v = l.split_once(": ").map_or("", |x| x.1).trim();
    v.replace(['[', ']'], "")
}

/// tshark's `follow,tcp,raw` of several streams: index → (node 0, node 0 bytes, node 1 bytes).
fn tshark_follow(file: &str, streams: &[u64]) -> HashMap<u64, (String, Vec<u8>, Vec<u8>)> {
    let mut args: Vec<String> = vec!["-r".into(), file.into(), "-q".into()];
    for s in streams {
        args.push("-z".into());
        args.push(format!("follow,tcp,raw,{s}"));
    }
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = tshark(&a).unwrap_or_default();
    let mut m = HashMap::new();
    let mut cur: Option<(u64, String, Vec<u8>, Vec<u8>)> = None;
    for l in out.lines() {
        if l.starts_with("=====") {
            if let Some((i, n, a, b)) = cur.take() {
                m.insert(i, (n, a, b));
            }
        } else if let Some(rest) = l.strip_prefix("Filter: tcp.stream eq ") {
            cur = rest
                .trim()
                .parse()
                .ok()
                .map(|i| (i, String::new(), Vec::new(), Vec::new()));
        } else if l.starts_with("Node 0:") {
            if let Some(c) = cur.as_mut() {
                c.1 = parse_node(l);
            }
        } else if l.starts_with("Node 1:") || l.starts_with("Follow:") || l.is_empty() {
        } else if let Some(c) = cur.as_mut() {
            let (hexs, second) = match l.strip_prefix('\t') {
                Some(h) => (h, true),
                None => (l, false),
            };
            let bytes = hex::decode(hexs.trim()).unwrap_or_else(|e| panic!("bad hex {l:?}: {e}"));
            if second {
                c.3.extend(bytes)
            } else {
                c.2.extend(bytes)
            }
        }
    }
    m
}

fn sha(b: &[u8]) -> String {
    hex::encode(Sha256::digest(b))
}

#[test]
fn digests_match_tshark_follow() {
    let Some(corpus) = corpus() else { return };
    if tshark(&["-v"]).is_none() {
        common::skip("tshark not available");
        return;
    }
    let (mut compared, mut matched) = (0, 0);
    let mut mismatches = Vec::new();
    for rel in COMPARE_FILES {
        let file = corpus.join(rel);
        let f = file.to_str().unwrap_or_default();
        let o = run(&["flows", "--digest", "-q", "-r", f]);
        assert!(
            o.status.code().is_some_and(|c| c <= 1),
            "{rel}: {:?}",
            o.status
        );
        let recs = json_lines(&o.stdout);
        // Count records per connection; only unambiguous ones are compared.
        let mut ours: HashMap<(String, String), Vec<&serde_json::Value>> = HashMap::new();
        for r in &recs {
            let (a, b) = endpoints(r);
            if r["proto"] == "tcp" {
                ours.entry(pair_key(&a, &b)).or_default().push(r);
            }
        }
        let syns = tshark_syn_streams(f);
        let mut by_pair: HashMap<(String, String), Vec<u64>> = HashMap::new();
        for (i, (a, b)) in &syns {
            by_pair.entry(pair_key(a, b)).or_default().push(*i);
        }
        let mut wanted = Vec::new();
        for (k, rs) in &ours {
            if rs.len() != 1 || !complete(rs[0]) {
                continue;
            }
            match by_pair.get(k) {
                Some(v) if v.len() == 1 => wanted.push((v[0], rs[0])),
                _ => {}
            }
        }
        let follow = tshark_follow(f, &wanted.iter().map(|w| w.0).collect::<Vec<_>>());
        for (idx, r) in wanted {
            let Some((node0, d0, d1)) = follow.get(&idx) else {
                mismatches.push(format!("{rel}: tshark printed no stream {idx}"));
                continue;
            };
            let (src, _) = endpoints(r);
            let (o_bytes, r_bytes) = if *node0 == src { (d0, d1) } else { (d1, d0) };
            compared += 1;
            let ok = r["orig"]["sha256"] == sha(o_bytes).as_str()
                && r["resp"]["sha256"] == sha(r_bytes).as_str();
            if ok {
                matched += 1;
            } else {
                mismatches.push(format!(
                    "{rel}: stream {idx} {src}: ours orig {} resp {} bytes, tshark {} / {}",
                    r["orig"]["captured"],
                    r["resp"]["captured"],
                    o_bytes.len(),
                    r_bytes.len()
                ));
            }
        }
    }
    eprintln!("digest vs tshark follow: {matched} of {compared} complete connections match");
    for m in &mismatches {
        eprintln!("  mismatch: {m}");
    }
    assert!(compared >= 20, "too few connections compared: {compared}");
    assert!(mismatches.is_empty(), "{} mismatches", mismatches.len());
}

#[test]
fn stream_files_match_tcpflow() {
    let Some(corpus) = corpus() else { return };
    if !have("tcpflow", "-V") {
        common::skip("tcpflow not available (apt-get install -y tcpflow)");
        return;
    }
    let (mut compared, mut matched, mut trailer, mut renamed) = (0, 0, 0, 0);
    let mut mismatches = Vec::new();
    for (n, rel) in COMPARE_FILES.iter().enumerate() {
        let file = corpus.join(rel);
        let f = file.to_str().unwrap_or_default();
        let ours = tempdir(&format!("ours{n}"));
        let theirs = tempdir(&format!("tcpflow{n}"));
        let o = run(&[
            "streams",
            "-q",
            "-r",
            f,
            "-w",
            ours.to_str().unwrap_or_default(),
        ]);
        assert!(
            o.status.code().is_some_and(|c| c <= 1),
            "{rel}: {:?}",
            o.status
        );
        let t = Command::new("tcpflow")
            .args(["-r", f, "-o", theirs.to_str().unwrap_or_default()])
            .output()
            .expect("tcpflow");
        if !t.status.success() {
            // tcpflow 1.6 does not know every link type (e.g. Linux SLL2).
            eprintln!(
                "tcpflow cannot read {rel}: {}",
                String::from_utf8_lossy(&t.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            );
            continue;
        }
        let jl = std::fs::read(ours.join("streams.jsonl")).expect("streams.jsonl");
        let recs = json_lines(&jl);
        // The same 5-tuple twice: tcpflow's split of reused tuples is its own.
        let mut count: HashMap<(String, String), usize> = HashMap::new();
        for r in &recs {
            let (a, b) = endpoints(r);
            *count.entry(pair_key(&a, &b)).or_default() += 1;
        }
        for r in recs.iter().filter(|r| complete(r)) {
            let (a, b) = endpoints(r);
            if count[&pair_key(&a, &b)] != 1 {
                continue;
            }
            for d in ["orig", "resp"] {
                let Some(name) = r[d]["file"].as_str() else {
                    assert_eq!(r[d]["captured"], 0, "{rel}: no file but bytes");
                    continue;
                };
                compared += 1;
                let mine = std::fs::read(ours.join(name)).expect("our file");
                assert_eq!(mine.len() as u64, r[d]["captured"].as_u64().unwrap_or(0));
                // tcpflow appends `--TCI` for a VLAN tag with the priority
                // bits included; streamcap's name carries the VLAN id only.
                let mut tname = name.to_string();
                if !theirs.join(&tname).exists() {
                    let alt = std::fs::read_dir(&theirs).ok().and_then(|rd| {
                        rd.flatten()
                            .map(|e| e.file_name().to_string_lossy().into_owned())
                            .find(|n| n.starts_with(&format!("{name}--")))
                    });
                    if let Some(a) = alt {
                        renamed += 1;
                        tname = a;
                    }
                }
                match std::fs::read(theirs.join(&tname)) {
                    Ok(tf) if tf == mine => matched += 1,
                    // tcpflow 1.6 writes the Ethernet trailer of a short final
                    // segment (padding up to 60 bytes, and an FCS if captured) as stream data.
                    Ok(tf)
                        if tf.len() > mine.len()
                            && tf.len() <= mine.len() + 16
                            && tf.starts_with(&mine) =>
                    {
                        trailer += 1
                    }
                    Ok(tf) => mismatches.push(format!(
                        "{rel}: {name}: ours {} bytes, tcpflow {}",
                        mine.len(),
                        tf.len()
                    )),
                    Err(_) => mismatches.push(format!("{rel}: {name}: tcpflow wrote no such file")),
                }
            }
        }
        let _ = std::fs::remove_dir_all(&ours);
        let _ = std::fs::remove_dir_all(&theirs);
    }
    eprintln!(
        "stream files vs tcpflow: {compared} directions of complete connections: {matched} identical, \
{trailer} identical but for the Ethernet trailer tcpflow appends, {renamed} found under tcpflow's VLAN TCI name"
    );
    for m in &mismatches {
        eprintln!("  mismatch: {m}");
    }
    assert!(compared >= 20, "too few files compared: {compared}");
    assert!(mismatches.is_empty(), "{} mismatches", mismatches.len());
}

/// `tshark -z conv,tcp|udp`: "A" and "B" endpoints with frames B→A and A→B.
fn tshark_conv(file: &str, proto: &str) -> Vec<(String, String, u64, u64)> {
    let out = tshark(&["-r", file, "-q", "-z", &format!("conv,{proto}")]).unwrap_or_default();
    let mut v = Vec::new();
    for l in out.lines() {
        let t: Vec<&str> = l.split_whitespace().collect();
        if t.len() < 6 || t[1] != "<->" {
            continue;
        }
        // A <-> B, frames B->A ("<-"), bytes, unit, frames A->B ("->"), ...
        let (Ok(b_to_a), Some(Ok(a_to_b))) =
            (t[3].parse::<u64>(), t.get(6).map(|x| x.parse::<u64>()))
        else {
            continue;
        };
        v.push((t[0].to_string(), t[2].to_string(), b_to_a, a_to_b));
    }
    v
}

#[test]
fn packet_counts_match_tshark_conv() {
    let Some(corpus) = corpus() else { return };
    if tshark(&["-v"]).is_none() {
        common::skip("tshark not available");
        return;
    }
    let files = [
        ("http/zeek__http-pipelined-requests.pcap", "tcp"),
        ("http/zeek__wikipedia.pcap", "tcp"),
        ("http/zeek__wikipedia.pcap", "udp"),
        ("ipv6-vlan-frag/ndpi__http_ipv6.pcap", "tcp"),
        ("dns-udp/zeek__dns-two-responses.pcap", "udp"),
        ("app-smtp-ftp-ssh/zeek__smtp.pcap", "tcp"),
        ("mixed-large/zeek__http-bro.org.pcap", "tcp"),
    ];
    let (mut compared, mut matched) = (0, 0);
    let mut mismatches = Vec::new();
    for (rel, proto) in files {
        let file = corpus.join(rel);
        let f = file.to_str().unwrap_or_default();
        let o = run(&["flows", "-q", "-r", f, proto]);
        assert_eq!(o.status.code(), Some(0), "{rel}");
        let recs = json_lines(&o.stdout);
        let mut ours: HashMap<(String, String), Vec<&serde_json::Value>> = HashMap::new();
        for r in &recs {
            let (a, b) = endpoints(r);
            ours.entry(pair_key(&a, &b)).or_default().push(r);
        }
        let conv = tshark_conv(f, proto);
        assert!(!conv.is_empty(), "{rel}: no tshark conversations");
        assert_eq!(conv.len(), recs.len(), "{rel} {proto}: conversation count");
        for (a, b, b_to_a, a_to_b) in conv {
            compared += 1;
            let Some(rs) = ours.get(&pair_key(&a, &b)) else {
                mismatches.push(format!("{rel}: {a} <-> {b} missing from ours"));
                continue;
            };
            if rs.len() != 1 {
                continue;
            }
            let r = rs[0];
            let (src, _) = endpoints(r);
            let (from_a, from_b) = if src == a {
                (&r["orig"]["pkts"], &r["resp"]["pkts"])
            } else {
                (&r["resp"]["pkts"], &r["orig"]["pkts"])
            };
            if *from_a == a_to_b && *from_b == b_to_a {
                matched += 1;
            } else {
                mismatches.push(format!(
                    "{rel}: {a} <-> {b}: ours {from_a}/{from_b}, tshark {a_to_b}/{b_to_a}"
                ));
            }
        }
    }
    eprintln!("packet counts vs tshark conv: {matched} of {compared} conversations match");
    for m in &mismatches {
        eprintln!("  mismatch: {m}");
    }
    assert!(mismatches.is_empty(), "{} mismatches", mismatches.len());
}
