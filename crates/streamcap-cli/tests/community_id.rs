//! The records' Community IDs (`community_id`) against Wireshark's
//! implementation: every TCP and UDP flow of the sample and of corpus
//! captures has the value tshark computes for each of its packets, with the
//! default seed and with another. Skips without a tshark that knows the
//! `communityid` protocol (Wireshark 3.6 and later).

mod common;

use common::*;
use std::collections::{BTreeSet, HashMap};
use std::net::IpAddr;
use std::path::Path;
use std::process::Command;

/// A direction-independent flow key: protocol and the two endpoints, sorted.
type Key = (&'static str, (IpAddr, u16), (IpAddr, u16));

fn key(proto: &'static str, a: (IpAddr, u16), b: (IpAddr, u16)) -> Key {
    if a <= b {
        (proto, a, b)
    } else {
        (proto, b, a)
    }
}

/// tshark's Community IDs by flow, from every packet with exactly one IP
/// header and a TCP or UDP header (packets with two, a tunnel or an ICMP
/// error, are left out); `None` when tshark cannot compute them.
fn tshark_ids(file: &Path, seed: u16) -> Option<HashMap<Key, BTreeSet<String>>> {
    let o = Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args(["--enable-protocol", "communityid"])
        .args(["-o", &format!("communityid.seed:{seed}")])
        .args(["-T", "fields", "-E", "occurrence=a"])
        .args([
            "-e", "ip.src", "-e", "ipv6.src", "-e", "ip.dst", "-e", "ipv6.dst",
        ])
        .args(["-e", "tcp.srcport", "-e", "tcp.dstport"])
        .args([
            "-e",
            "udp.srcport",
            "-e",
            "udp.dstport",
            "-e",
            "communityid",
        ])
        .output()
        .ok()?;
    if !o.status.success() {
        return None;
    }
    let mut ids: HashMap<Key, BTreeSet<String>> = HashMap::new();
    let mut any = false;
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let [s4, s6, d4, d6, ts, td, us, ud, cid] = f[..] else {
            continue;
        };
        // Two IP headers (a tunnel such as Teredo, an ICMP error): tshark
        // hashes the inner one.
        let two_ips = !s4.is_empty() && !s6.is_empty();
        if cid.is_empty() || two_ips || f.iter().any(|x| x.contains(',')) {
            continue;
        }
        any = true;
        let (src, dst) = match (s4.parse(), d4.parse(), s6.parse(), d6.parse()) {
            (Ok(s), Ok(d), _, _) | (_, _, Ok(s), Ok(d)) => (s, d),
            _ => continue,
        };
        let (proto, sp, dp) = if !ts.is_empty() {
            ("tcp", ts, td)
        } else if !us.is_empty() {
            ("udp", us, ud)
        } else {
            continue;
        };
        let (Ok(sp), Ok(dp)) = (sp.parse(), dp.parse()) else {
            continue;
        };
        ids.entry(key(proto, (src, sp), (dst, dp)))
            .or_default()
            .insert(cid.to_string());
    }
    any.then_some(ids)
}

/// Our records' Community IDs by flow (TCP and UDP records).
fn our_ids(file: &Path, seed: u16) -> Vec<(Key, String)> {
    let o = run(&[
        "flows",
        "-q",
        "--community-id-seed",
        &seed.to_string(),
        "-r",
        file.to_str().unwrap_or_default(),
    ]);
    assert!(o.status.code().is_some_and(|c| c <= 1), "{:?}", o.status);
    let mut out = Vec::new();
    for r in json_lines(&o.stdout) {
        let proto = match r["proto"].as_str() {
            Some("tcp") => "tcp",
            Some("udp") => "udp",
            _ => continue,
        };
        let ep = |ip: &str, port: &str| -> Option<(IpAddr, u16)> {
            Some((
                r[ip].as_str()?.parse().ok()?,
                u16::try_from(r[port].as_u64()?).ok()?,
            ))
        };
        let (Some(a), Some(b)) = (ep("src_ip", "src_port"), ep("dst_ip", "dst_port")) else {
            panic!("bad record {r}");
        };
        let cid = r["community_id"]
            .as_str()
            .unwrap_or_else(|| panic!("no community_id in {r}"))
            .to_string();
        out.push((key(proto, a, b), cid));
    }
    out
}

#[test]
fn community_ids_equal_tsharks() {
    let sample = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../samples/sample.pcap"
    ));
    if tshark_ids(sample, 0).is_none() {
        skip("tshark with the communityid protocol (Wireshark 3.6+) is not installed");
        return;
    }
    let mut files = vec![sample.to_path_buf()];
    if let Some(corpus) = corpus() {
        for rel in [
            "http/zeek__wikipedia.pcap",
            "ipv6-vlan-frag/ndpi__http_ipv6.pcap",
            "ipv6-vlan-frag/zeek__http-qinq-0.pcap",
            "bulk-flows/suri__decode-sll2-02.pcap",
            "dns-udp/ndpi__dns_fragmented.pcap",
            "mixed-large/suri__output-eve-ftp-data.pcap",
        ] {
            let f = corpus.join(rel);
            if f.exists() {
                files.push(f);
            }
        }
    }
    let (mut compared, mut tunnels) = (0, 0);
    for file in &files {
        for seed in [0u16, 1, 4242] {
            let Some(theirs) = tshark_ids(file, seed) else {
                panic!("tshark failed on {}", file.display());
            };
            let ours = our_ids(file, seed);
            assert!(!ours.is_empty(), "{}: no TCP/UDP records", file.display());
            for (k, cid) in &ours {
                // A flow carrying a tunnel (Teredo): tshark hashes the
                // inner packets only.
                let Some(t) = theirs.get(k) else {
                    tunnels += 1;
                    continue;
                };
                let want: BTreeSet<String> = [cid.clone()].into();
                assert_eq!(t, &want, "{} seed {seed}: {k:?}", file.display());
                compared += 1;
            }
        }
    }
    eprintln!(
        "community IDs: {compared} flows x seeds identical to tshark's on {} captures ({tunnels} tunnel flows not comparable)",
        files.len()
    );
    assert!(compared >= 3 * 40);
    assert!(
        tunnels * 20 < compared,
        "{tunnels} flows not seen by tshark"
    );
}

/// An address pair in a fixed order, for ICMP flows.
type Pair = (IpAddr, IpAddr);

fn pair(a: IpAddr, b: IpAddr) -> Pair {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

/// tshark's Community IDs of ICMP and ICMPv6 packets with a single IP
/// header (an error message, which quotes another packet, is left out), by
/// address pair.
fn tshark_icmp_ids(file: &Path, seed: u16) -> HashMap<Pair, BTreeSet<String>> {
    let o = Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args(["--enable-protocol", "communityid"])
        .args(["-o", &format!("communityid.seed:{seed}")])
        .args(["-Y", "icmp or icmpv6", "-T", "fields", "-E", "occurrence=a"])
        .args([
            "-e", "ip.src", "-e", "ipv6.src", "-e", "ip.dst", "-e", "ipv6.dst",
        ])
        .args(["-e", "communityid"])
        .output()
        .expect("tshark runs");
    let mut ids: HashMap<Pair, BTreeSet<String>> = HashMap::new();
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let [s4, s6, d4, d6, cid] = f[..] else {
            continue;
        };
        if cid.is_empty() || f.iter().any(|x| x.contains(',')) {
            continue;
        }
        let (src, dst): (IpAddr, IpAddr) = match (s4.parse(), d4.parse(), s6.parse(), d6.parse()) {
            (Ok(s), Ok(d), _, _) | (_, _, Ok(s), Ok(d)) => (s, d),
            _ => continue,
        };
        ids.entry(pair(src, dst))
            .or_default()
            .insert(cid.to_string());
    }
    ids
}

/// ICMP flows are keyed by message type and code (or the type of the other
/// half of a request/reply pair), as Zeek keys them and as the Community ID
/// spec hashes them: every ICMP Community ID tshark computes for a packet is
/// the `community_id` of one of the records between the same addresses.
#[test]
fn icmp_community_ids_equal_tsharks() {
    let Some(corpus) = corpus() else { return };
    let sample = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../samples/sample.pcap"
    ));
    if tshark_ids(sample, 0).is_none() {
        skip("tshark with the communityid protocol (Wireshark 3.6+) is not installed");
        return;
    }
    let mut compared = 0;
    for rel in [
        "mixed-large/ndpi__gnutella.pcap",
        "mixed-large/ndpi__alexa-app.pcapng",
        "mixed-large/ndpi__iphone.pcap",
        "mixed-large/ndpi__wechat.pcap",
        "ipv6-vlan-frag/zeek__ipv6-http-atomic-frag.pcap",
    ] {
        let file = corpus.join(rel);
        if !file.exists() {
            continue;
        }
        for seed in [0u16, 1] {
            let theirs = tshark_icmp_ids(&file, seed);
            let o = run(&[
                "flows",
                "-q",
                "--community-id-seed",
                &seed.to_string(),
                "-r",
                file.to_str().unwrap_or_default(),
            ]);
            let mut ours: HashMap<Pair, BTreeSet<String>> = HashMap::new();
            for r in json_lines(&o.stdout) {
                if !matches!(r["proto"].as_str(), Some("icmp" | "icmp6")) {
                    continue;
                }
                let ip = |f: &str| r[f].as_str().and_then(|s| s.parse::<IpAddr>().ok());
                let (Some(a), Some(b)) = (ip("src_ip"), ip("dst_ip")) else {
                    panic!("bad record {r}");
                };
                let cid = r["community_id"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{rel}: no community_id in {r}"));
                ours.entry(pair(a, b)).or_default().insert(cid.to_string());
            }
            for (p, ids) in &theirs {
                let mine = ours.get(p).cloned().unwrap_or_default();
                for id in ids {
                    assert!(
                        mine.contains(id),
                        "{rel} seed {seed}: {p:?}: tshark's {id} not among {mine:?}"
                    );
                    compared += 1;
                }
            }
        }
    }
    eprintln!("ICMP community IDs: {compared} of tshark's found in the records");
    assert!(compared >= 10, "{compared}");
}
