//! The streaming campus model: determinism, truth against the pcap, and a
//! tshark cross-check when tshark is installed.

mod common;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{attribute, read_pcap};
use sha2::{Digest, Sha256};
use streamcap_gen::{Campus, CampusConfig, CampusFlowTruth, Direction, FlowTruth, Protocol};

/// Payload pieces of one direction at their stream offsets.
type Segments = Vec<(u64, Vec<u8>)>;

fn small(seed: u64) -> CampusConfig {
    CampusConfig {
        seed,
        packets: 20_000,
        concurrency: 300,
        elephants: 2,
        signature_rate: 0.3,
        ..CampusConfig::default()
    }
}

fn impaired(seed: u64) -> CampusConfig {
    CampusConfig {
        reorder: 0.02,
        duplicate: 0.02,
        loss: 0.01,
        conflict: 0.01,
        fragment: 0.02,
        ipv6: 0.2,
        vlan: 0.2,
        ..small(seed)
    }
}

#[test]
fn same_seed_same_bytes() {
    let (a, ta, sa) = Campus::new(impaired(7)).to_bytes();
    let (b, tb, sb) = Campus::new(impaired(7)).to_bytes();
    assert!(a == b, "pcap differs between two runs");
    assert_eq!(ta, tb);
    assert_eq!(sa, sb);
    let (c, _, _) = Campus::new(impaired(8)).to_bytes();
    assert!(a != c, "different seeds give the same pcap");
}

/// Places every TCP data segment (or UDP datagram) of one direction at its
/// stream offset, first copy wins.
fn rebuild(segs: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let end = segs
        .iter()
        .map(|(o, p)| o + p.len() as u64)
        .max()
        .unwrap_or(0);
    let mut out = vec![0u8; end as usize];
    let mut have = vec![false; end as usize];
    for (o, p) in segs {
        for (i, b) in p.iter().enumerate() {
            let k = *o as usize + i;
            if !have[k] {
                have[k] = true;
                out[k] = *b;
            }
        }
    }
    assert!(have.iter().all(|h| *h), "hole in a loss-free stream");
    out
}

fn check_against_pcap(cfg: CampusConfig) {
    let (pcap, text, stats) = Campus::new(cfg.clone()).to_bytes();
    let (magic, link, recs) = read_pcap(&pcap);
    assert_eq!(magic, 0xa1b2_3c4d, "ns pcap");
    assert_eq!(link, 1);
    assert_eq!(recs.len() as u64, cfg.packets);
    assert_eq!(stats.packets, cfg.packets);
    assert_eq!(stats.pcap_bytes, pcap.len() as u64);
    let ts: Vec<u64> = recs
        .iter()
        .map(|r| u64::from(r.ts_sec) * 1_000_000_000 + u64::from(r.ts_frac))
        .collect();
    assert!(ts.windows(2).all(|w| w[0] < w[1]), "timestamps increase");

    let campus = CampusFlowTruth::parse_jsonl(&text).unwrap();
    let truth = FlowTruth::parse_jsonl(&text).expect("campus lines parse as FlowTruth");
    assert_eq!(campus.len() as u64, stats.flows);
    let ids: HashSet<usize> = campus.iter().map(|t| t.id).collect();
    assert_eq!(ids.len(), campus.len(), "ids unique");
    let tuples: HashSet<_> = campus
        .iter()
        .map(|t| (t.proto == Protocol::Tcp, t.client, t.server))
        .collect();
    assert_eq!(tuples.len(), campus.len(), "5-tuples unique");
    let total: u64 = campus
        .iter()
        .map(|t| t.to_server.packets + t.to_client.packets)
        .sum();
    assert_eq!(total, recs.len() as u64, "truth packets == pcap records");
    let ip_total: u64 = campus
        .iter()
        .map(|t| t.to_server.ip_bytes + t.to_client.ip_bytes)
        .sum();
    assert_eq!(ip_total, stats.ip_bytes);

    // Per flow and direction: packet and IP byte counts, then contents.
    let att = attribute(&recs, &truth);
    let mut count: HashMap<(usize, Direction), (u64, u64)> = HashMap::new();
    // Datagrams: a fragment after the first (campus fragments are IPv4 with
    // 20-byte headers) adds its payload to its datagram, not a packet.
    let mut datagrams: HashMap<(usize, Direction), (u64, u64)> = HashMap::new();
    let mut isn: HashMap<(usize, Direction), u32> = HashMap::new();
    let mut data: HashMap<(usize, Direction), Segments> = HashMap::new();
    let mut udp_off: HashMap<(usize, Direction), u64> = HashMap::new();
    for (id, dir, p) in &att {
        let c = count.entry((*id, *dir)).or_default();
        c.0 += 1;
        c.1 += p.ip_len;
        let g = datagrams.entry((*id, *dir)).or_default();
        if p.frag_offset == 0 {
            g.0 += 1;
            g.1 += p.ip_len;
        } else {
            g.1 += p.ip_len - 20;
        }
        if let Some((seq, _, syn, ..)) = p.tcp {
            if syn {
                isn.insert((*id, *dir), seq);
            } else if !p.payload.is_empty() {
                let off = seq.wrapping_sub(isn[&(*id, *dir)]).wrapping_sub(1);
                data.entry((*id, *dir))
                    .or_default()
                    .push((u64::from(off), p.payload.clone()));
            }
        } else if p.proto == 17 && p.ports.is_some() && !p.more_fragments {
            let o = udp_off.entry((*id, *dir)).or_default();
            data.entry((*id, *dir))
                .or_default()
                .push((*o, p.payload.clone()));
            *o += p.payload.len() as u64;
        }
    }
    let mut checked = 0;
    let mut sigs = 0;
    let mut ends = HashMap::new();
    for t in &campus {
        *ends.entry(format!("{:?}", t.end)).or_insert(0) += 1;
        for (dir, d) in [
            (Direction::ToServer, &t.to_server),
            (Direction::ToClient, &t.to_client),
        ] {
            let c = count.get(&(t.id, dir)).copied().unwrap_or_default();
            assert_eq!(c, (d.packets, d.ip_bytes), "flow {} {dir:?}", t.id);
            let g = datagrams.get(&(t.id, dir)).copied().unwrap_or_default();
            assert_eq!(
                g,
                (d.datagrams, d.datagram_bytes),
                "flow {} {dir:?} datagrams",
                t.id
            );
        }
        let imp = t.impairments;
        // Fragmented packets hide their payload from this simple parser;
        // lost bytes leave holes; UDP duplicates shift offsets.
        if imp.fragmented > 0 || imp.lost > 0 || (t.proto == Protocol::Udp && imp.duplicated > 0) {
            continue;
        }
        let mut streams = Vec::new();
        for (dir, d) in [
            (Direction::ToServer, &t.to_server),
            (Direction::ToClient, &t.to_client),
        ] {
            let s = rebuild(data.get(&(t.id, dir)).map_or(&[][..], |v| &v[..]));
            assert_eq!(s.len() as u64, d.stream_len, "flow {} {dir:?} length", t.id);
            assert_eq!(
                hex::encode(Sha256::digest(&s)),
                d.sha256,
                "flow {} ({}) {dir:?} content",
                t.id,
                t.label
            );
            for c in &d.conflicts {
                let (a, b) = (c.range.start as usize, c.range.end as usize);
                assert_eq!(&s[a..b], &c.original[..]);
                assert_ne!(c.original, c.conflicting);
            }
            streams.push(s);
        }
        for sig in &t.signatures {
            let s = &streams[usize::from(sig.dir == "to_client")];
            let pat = &cfg.signatures[sig.pattern_index];
            let at = sig.offset as usize;
            assert_eq!(&s[at..at + pat.len()], &pat[..], "flow {} signature", t.id);
            sigs += 1;
        }
        checked += 1;
    }
    eprintln!(
        "{} flows, {checked} content-checked, {sigs} signatures, ends {ends:?}, mean IP packet {:.1}",
        campus.len(),
        stats.mean_ip_packet()
    );
    assert!(checked > campus.len() / 2);
    assert!(sigs > 0);
    assert!(ends.get("Fin").copied().unwrap_or(0) > 0);
    assert!(ends.get("None").copied().unwrap_or(0) > 0);
}

#[test]
fn truth_matches_pcap_clean() {
    check_against_pcap(small(1));
}

#[test]
fn truth_matches_pcap_impaired() {
    let cfg = impaired(2);
    let (_, text, _) = Campus::new(cfg).to_bytes();
    let t = CampusFlowTruth::parse_jsonl(&text).unwrap();
    let sum = |f: fn(&CampusFlowTruth) -> u32| t.iter().map(f).sum::<u32>();
    assert!(sum(|t| t.impairments.reordered) > 0);
    assert!(sum(|t| t.impairments.duplicated) > 0);
    assert!(sum(|t| t.impairments.lost) > 0);
    assert!(sum(|t| t.impairments.conflicts) > 0);
    assert!(sum(|t| t.impairments.fragmented) > 0);
    assert!(t.iter().any(|t| t.client.is_ipv6()));
    assert!(t.iter().any(|t| !t.vlan.is_empty()));
    check_against_pcap(impaired(2));
}

#[test]
fn truth_matches_pcap_small_packets() {
    check_against_pcap(CampusConfig {
        small_packets: true,
        ..small(3)
    });
}

fn tshark() -> Option<PathBuf> {
    let ok = Command::new("tshark")
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then(|| PathBuf::from("tshark"))
}

fn run(tshark: &Path, args: &[&str]) -> String {
    let out = Command::new(tshark)
        .args(args)
        .output()
        .expect("run tshark");
    assert!(
        out.status.success(),
        "tshark {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn tshark_agrees_with_campus_truth() {
    let Some(tshark) = tshark() else {
        common::skip("tshark not installed");
        return;
    };
    let dir = std::env::temp_dir().join(format!("streamcap-campus-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("campus.pcap");
    let tpath = dir.join("campus.jsonl");
    Campus::new(small(5))
        .write_files(&pcap, Some(&tpath))
        .unwrap();
    let truth = CampusFlowTruth::parse_jsonl(&std::fs::read_to_string(&tpath).unwrap()).unwrap();
    let f = pcap.to_str().unwrap();
    let conv = |kind: &str| {
        run(&tshark, &["-r", f, "-q", "-z", &format!("conv,{kind}")])
            .lines()
            .filter(|l| l.contains("<->"))
            .count()
    };
    let tcp = truth.iter().filter(|t| t.proto == Protocol::Tcp).count();
    let udp = truth.len() - tcp;
    assert_eq!(conv("tcp"), tcp);
    assert_eq!(conv("udp"), udp);

    // Follow a few complete clean IPv4 TCP flows of different applications.
    let fields = run(
        &tshark,
        &[
            "-r",
            f,
            "-Y",
            "tcp.flags.syn==1 && tcp.flags.ack==0",
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
        ],
    );
    let mut streams = HashMap::new();
    for l in fields.lines() {
        let v: Vec<&str> = l.split(',').collect();
        if v.len() == 3 && !v[1].is_empty() {
            streams.insert(format!("{}:{}", v[1], v[2]), v[0].to_string());
        }
    }
    let mut checked = 0;
    for label in ["http", "tls", "ssh", "smtp", "ftp", "tcp-unknown"] {
        let Some(t) = truth.iter().find(|t| {
            t.label == label
                && t.client.is_ipv4()
                && t.end == streamcap_gen::EndReason::Fin
                && t.impairments.is_clean()
        }) else {
            continue;
        };
        let n = &streams[&t.client.to_string()];
        let out = run(
            &tshark,
            &["-r", f, "-q", "-z", &format!("follow,tcp,raw,{n}")],
        );
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let mut node0 = String::new();
        for line in out.lines() {
            if let Some(x) = line.strip_prefix("Node 0: ") {
                node0 = x.trim().to_string();
            } else if line.starts_with('=')
                || line.starts_with("Follow:")
                || line.starts_with("Filter:")
                || line.starts_with("Node ")
                || line.trim().is_empty()
            {
            } else if let Some(h) = line.strip_prefix('\t') {
                b.extend(hex::decode(h.trim()).unwrap());
            } else {
                a.extend(hex::decode(line.trim()).unwrap());
            }
        }
        let (to_s, to_c) = if node0 == t.client.to_string() {
            (a, b)
        } else {
            (b, a)
        };
        assert_eq!(
            hex::encode(Sha256::digest(&to_s)),
            t.to_server.sha256,
            "{label}"
        );
        assert_eq!(
            hex::encode(Sha256::digest(&to_c)),
            t.to_client.sha256,
            "{label}"
        );
        checked += 1;
    }
    eprintln!("tshark: {tcp} TCP + {udp} UDP conversations, {checked} flows followed");
    assert!(checked >= 4);
    let _ = std::fs::remove_dir_all(&dir);
}
