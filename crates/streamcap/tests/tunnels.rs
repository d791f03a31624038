//! Encapsulated traffic: PPPoE, MPLS, GRE, ERSPAN, VXLAN, GENEVE, GTP-U and
//! IP-in-IP captures give the TCP and UDP conversations tshark gives
//! (`-z conv,tcp`, `-z conv,udp`), inner flows carry their tunnel, the
//! tunnel is part of a flow's identity, and bad or too deeply nested
//! encapsulations are counted.
//!
//! The rule for outer packets: every IP header a packet carries is a flow
//! of its own. A VXLAN, GENEVE or GTP-U packet counts in its outer UDP flow
//! (as tshark's conversation tables and Zeek's conn.log count it) and in
//! its inner flow; a GRE or IP-in-IP packet in its outer flow of protocol
//! 47, 4 or 41 and in its inner flow. PPPoE and MPLS are link layers and
//! add no flow.
//!
//! tshark is needed for the comparisons (they skip with a message without
//! it); the corpus captures are read from `../shared/corpus` (skipped when
//! absent).

mod support;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use streamcap::decode::DecodeError;
use streamcap::deliver::{FlowEnd, Handler};
use streamcap::flow::Direction;
use streamcap::{Capture, Config, GlobalStats};
use streamcap_gen::tunnel::{conversation, tunnel_capture, tunnel_flows, Encap};
use streamcap_gen::PcapWriter;
use support::{corpus_dir, skip};

/// One conversation as tshark lists it: protocol, endpoint A, endpoint B
/// (A sorts first), frames A→B, frames B→A.
type Conv = (&'static str, String, String, u64, u64);

/// Every flow's conversation and tunnel description.
#[derive(Default)]
struct Flows(Vec<(Conv, Option<String>)>);

fn endpoint((ip, port): (IpAddr, u16)) -> String {
    format!("{ip}:{port}")
}

/// A conversation with its endpoints in a fixed order (by their text).
fn conv(proto: &'static str, a: String, b: String, a_to_b: u64, b_to_a: u64) -> Conv {
    if a <= b {
        (proto, a, b, a_to_b, b_to_a)
    } else {
        (proto, b, a, b_to_a, a_to_b)
    }
}

impl Handler for Flows {
    type State = ();
    fn on_flow_end(&mut self, f: &mut FlowEnd<'_, ()>) {
        let proto = match f.proto() {
            6 => "tcp",
            17 => "udp",
            _ => return,
        };
        let c = conv(
            proto,
            endpoint(f.orig_endpoint()),
            endpoint(f.resp_endpoint()),
            f.stream(Direction::Orig).counters.pkts,
            f.stream(Direction::Resp).counters.pkts,
        );
        self.0.push((c, f.key().tunnel().map(|t| t.to_string())));
    }
}

fn run(path: &Path, cfg: Config) -> (Flows, GlobalStats) {
    let r = Capture::builder()
        .config(cfg)
        .build()
        .run_file(path, Flows::default())
        .expect("capture opens");
    assert!(r.error.is_none(), "{}: {:?}", path.display(), r.error);
    assert!(r.stats.totals.invariant_holds(), "{:?}", r.stats.totals);
    (r.handler, r.stats)
}

/// Our TCP and UDP conversations, sorted.
fn ours(path: &Path) -> Vec<Conv> {
    let mut v: Vec<Conv> = run(path, Config::default())
        .0
         .0
        .into_iter()
        .map(|x| x.0)
        .collect();
    v.sort();
    v
}

fn tshark_present() -> bool {
    let ok = Command::new("tshark")
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skip("tshark not installed (apt-get install tshark)");
    }
    ok
}

/// tshark's TCP and UDP conversations, sorted.
fn tshark(path: &Path) -> Vec<Conv> {
    let mut v = Vec::new();
    for proto in ["tcp", "udp"] {
        let out = Command::new("tshark")
            .arg("-r")
            .arg(path)
            .args(["-q", "-z", &format!("conv,{proto}")])
            .output()
            .expect("tshark runs");
        for l in String::from_utf8_lossy(&out.stdout).lines() {
            let t: Vec<&str> = l.split_whitespace().collect();
            if t.len() < 7 || t[1] != "<->" {
                continue;
            }
            // A <-> B, frames B→A, bytes, unit, frames A→B, ...
            let (Ok(b_to_a), Ok(a_to_b)) = (t[3].parse::<u64>(), t[6].parse::<u64>()) else {
                continue;
            };
            v.push(conv(
                proto,
                t[0].to_string(),
                t[2].to_string(),
                a_to_b,
                b_to_a,
            ));
        }
    }
    v.sort();
    v
}

/// Compares our conversations with tshark's on `path`; the differences, if any.
fn differences(path: &Path) -> Vec<String> {
    let (a, b) = (ours(path), tshark(path));
    eprintln!(
        "{}: {} conversations, tshark {}",
        path.display(),
        a.len(),
        b.len()
    );
    let mut diffs = Vec::new();
    if b.is_empty() {
        diffs.push("tshark listed no conversation".to_string());
    }
    for c in &a {
        if !b.contains(c) {
            diffs.push(format!("ours only: {c:?}"));
        }
    }
    for c in &b {
        if !a.contains(c) {
            diffs.push(format!("tshark only: {c:?}"));
        }
    }
    if a.len() != b.len() && diffs.is_empty() {
        diffs.push(format!(
            "{} conversations against tshark's {}",
            a.len(),
            b.len()
        ));
    }
    diffs
}

fn temp_pcap(name: &str, bytes: &[u8]) -> PathBuf {
    let p = std::env::temp_dir().join(format!("streamcap-tunnels-{}-{name}", std::process::id()));
    std::fs::write(&p, bytes).expect("write temp capture");
    p
}

/// Writes outer frames (one millisecond apart) as a pcap.
fn pcap(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut w = PcapWriter::new(Vec::new()).expect("pcap header");
    for (i, f) in frames.iter().enumerate() {
        w.write_packet(1_600_000_000_000_000_000 + i as u64 * 1_000_000, f)
            .expect("write");
    }
    w.into_inner()
}

/// The outer frames of `inner` packets (from [`conversation`]) through
/// `encap` between outer endpoints `oc` (client side) and `os`.
fn through(encap: &Encap, oc: &str, os: &str, inner: &[(bool, Vec<u8>)]) -> Vec<Vec<u8>> {
    let (oc, os): (IpAddr, IpAddr) = (oc.parse().unwrap(), os.parse().unwrap());
    inner
        .iter()
        .enumerate()
        .map(|(i, (from_client, p))| {
            let (s, d) = if *from_client { (oc, os) } else { (os, oc) };
            encap.wrap(s, d, p, i as u32)
        })
        .collect()
}

fn ep(s: &str, port: u16) -> (IpAddr, u16) {
    (s.parse().unwrap(), port)
}

/// One TCP connection and one UDP exchange through each of PPPoE, MPLS,
/// GRE (with and without key, IPv6 outside), ERSPAN II and III, VXLAN,
/// GENEVE, GTP-U, IPv4-in-IPv4, 6in4, 4in6 and 6in6: the same TCP and UDP
/// conversations as tshark, and every inner flow names its tunnel.
#[test]
fn generated_tunnels_match_tshark() {
    let path = temp_pcap("generated.pcap", &tunnel_capture().expect("capture"));
    let (flows, stats) = run(&path, Config::default());
    assert_eq!(stats.malformed(), 0, "{:?}", stats.decode_errors);
    assert_eq!(stats.decode_error(DecodeError::NotIp), 0);
    for t in tunnel_flows() {
        let inner = endpoint(t.client);
        let found: Vec<&Option<String>> = flows
            .0
            .iter()
            .filter(|(c, _)| c.0 == "tcp" && (c.1 == inner || c.2 == inner))
            .map(|(_, tunnel)| tunnel)
            .collect();
        assert_eq!(found.len(), 1, "{}: one inner TCP flow", t.encap.name());
        if t.encap.has_outer_ip() {
            let d = found[0].as_deref().expect("an inner flow names its tunnel");
            let (a, b) = if t.outer_client <= t.outer_server {
                (t.outer_client, t.outer_server)
            } else {
                (t.outer_server, t.outer_client)
            };
            assert!(d.contains(&format!("{a}<->{b}")), "{d}");
        } else {
            assert_eq!(
                found[0],
                &None,
                "{}: a link layer, no tunnel",
                t.encap.name()
            );
        }
    }
    if tshark_present() {
        let diffs = differences(&path);
        assert!(diffs.is_empty(), "{diffs:#?}");
    }
    let _ = std::fs::remove_file(path);
}

/// The same inner connection in two VXLAN tunnels (other VNI, other
/// endpoints) and in a GRE tunnel is three flows, each with its tunnel;
/// the outer flows are there too.
#[test]
fn identical_inner_flows_in_different_tunnels_are_different_flows() {
    let inner = conversation(ep("10.0.0.1", 40_000), ep("10.0.0.2", 80));
    let mut frames = Vec::new();
    frames.extend(through(
        &Encap::Vxlan { vni: 1, port: 4789 },
        "192.0.2.1",
        "192.0.2.2",
        &inner,
    ));
    frames.extend(through(
        &Encap::Vxlan { vni: 2, port: 4789 },
        "192.0.2.1",
        "192.0.2.2",
        &inner,
    ));
    frames.extend(through(
        &Encap::Gre { key: None },
        "192.0.2.1",
        "192.0.2.2",
        &inner,
    ));
    let path = temp_pcap("identical.pcap", &pcap(&frames));
    let (flows, stats) = run(&path, Config::default());
    let tcp: Vec<&(Conv, Option<String>)> = flows.0.iter().filter(|(c, _)| c.0 == "tcp").collect();
    assert_eq!(tcp.len(), 3, "{tcp:#?}");
    let mut tunnels: Vec<String> = tcp.iter().filter_map(|(_, t)| t.clone()).collect();
    tunnels.sort();
    assert_eq!(
        tunnels,
        [
            "gre 192.0.2.1<->192.0.2.2",
            "vxlan 192.0.2.1<->192.0.2.2 vni 1",
            "vxlan 192.0.2.1<->192.0.2.2 vni 2",
        ]
    );
    for (c, _) in &tcp {
        // 6 packets from the client, 4 from the server, each in its own tunnel.
        let (from_client, from_server) = if c.1 == "10.0.0.1:40000" {
            (c.3, c.4)
        } else {
            (c.4, c.3)
        };
        assert_eq!((from_client, from_server), (6, 4), "{c:?}");
    }
    // Outer: two UDP flows per VXLAN direction pair (the sender's source
    // port differs per direction) shared by both VNIs, and one GRE flow.
    assert_eq!(stats.created(streamcap::stats::ProtoClass::Other), 1);
    assert_eq!(stats.malformed(), 0);
    let _ = std::fs::remove_file(path);
}

/// Custom UDP ports: VXLAN on 8472 (Linux's historical default) is opened
/// only when configured.
#[test]
fn udp_tunnel_ports_are_configurable() {
    let inner = conversation(ep("10.0.0.1", 40_000), ep("10.0.0.2", 80));
    let frames = through(
        &Encap::Vxlan { vni: 9, port: 8472 },
        "192.0.2.1",
        "192.0.2.2",
        &inner,
    );
    let path = temp_pcap("port8472.pcap", &pcap(&frames));
    let tcp = |cfg: Config| {
        run(&path, cfg)
            .0
             .0
            .iter()
            .filter(|(c, _)| c.0 == "tcp")
            .count()
    };
    assert_eq!(tcp(Config::default()), 0);
    let cfg = Config {
        vxlan_ports: vec![4789, 8472],
        ..Config::default()
    };
    assert_eq!(tcp(cfg), 1);
    let _ = std::fs::remove_file(path);
}

/// Tunnels inside tunnels are opened up to the configured depth; past it,
/// each packet is counted as `encap_limit` and only its outer flows see it.
#[test]
fn tunnel_nesting_is_bounded() {
    let inner = conversation(ep("10.0.0.1", 40_000), ep("10.0.0.2", 80));
    let (oc, os): (IpAddr, IpAddr) = ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
    // Six levels of IP-in-IP around the conversation.
    let nested: Vec<Vec<u8>> = inner
        .iter()
        .map(|(from_client, p)| {
            let (s, d) = if *from_client { (oc, os) } else { (os, oc) };
            let mut ip = p.clone();
            for _ in 0..6 {
                let f = Encap::IpInIp.wrap(s, d, &ip, 0);
                ip = f[14..].to_vec();
            }
            let mut f = Encap::IpInIp.wrap(s, d, &ip, 0)[..14].to_vec();
            f.extend_from_slice(&ip);
            f
        })
        .collect();
    let path = temp_pcap("nested.pcap", &pcap(&nested));
    for (depth, tcp_flows, limit) in [(4usize, 0usize, 12u64), (6, 1, 0), (0, 0, 0)] {
        let cfg = Config {
            max_tunnel_depth: depth,
            ..Config::default()
        };
        let (flows, stats) = run(&path, cfg);
        let tcp = flows.0.iter().filter(|(c, _)| c.0 == "tcp").count();
        assert_eq!(tcp, tcp_flows, "depth {depth}");
        assert_eq!(
            stats.decode_error(DecodeError::EncapLimit),
            limit,
            "depth {depth}"
        );
        // The outermost flow (IP-in-IP between the outer endpoints) always.
        assert!(stats.created(streamcap::stats::ProtoClass::Other) >= 1);
    }
    let _ = std::fs::remove_file(path);
}

/// Bad encapsulation headers are counted and leave the outer flow as it is:
/// VXLAN without its I flag, GTP-U of version 2, a cut GRE header, a PPPoE
/// session header of another version, an MPLS stack without a bottom.
#[test]
fn bad_encapsulations_are_counted() {
    let inner = conversation(ep("10.0.0.1", 40_000), ep("10.0.0.2", 80));
    let first = &inner[..1];
    let mut vxlan = through(
        &Encap::Vxlan { vni: 1, port: 4789 },
        "192.0.2.1",
        "192.0.2.2",
        first,
    );
    vxlan[0][14 + 20 + 8] = 0; // VXLAN flags
    let mut gtp = through(&Encap::GtpU { teid: 1 }, "192.0.2.1", "192.0.2.2", first);
    gtp[0][14 + 20 + 8] = 0x50; // version 2
    let mut gre = through(
        &Encap::Gre { key: Some(1) },
        "192.0.2.1",
        "192.0.2.2",
        first,
    );
    gre[0].truncate(14 + 20 + 6);
    let total = (gre[0].len() - 14) as u16;
    gre[0][16..18].copy_from_slice(&total.to_be_bytes());
    let mut pppoe = through(&Encap::Pppoe { session: 1 }, "0.0.0.0", "0.0.0.0", first);
    pppoe[0][14] = 0x12;
    let mut mpls = through(
        &Encap::Mpls { labels: vec![16] },
        "0.0.0.0",
        "0.0.0.0",
        first,
    );
    mpls[0][14 + 2] &= !1; // no bottom of stack; the label stack then runs into the packet
    mpls[0].truncate(14 + 4);
    for (name, f, outer_flows) in [
        ("vxlan", &vxlan, 1u64),
        ("gtp", &gtp, 1),
        ("gre", &gre, 1),
        ("pppoe", &pppoe, 0),
        ("mpls", &mpls, 0),
    ] {
        let path = temp_pcap(&format!("bad-{name}.pcap"), &pcap(f));
        let (flows, stats) = run(&path, Config::default());
        assert_eq!(
            stats.decode_error(DecodeError::BadEncapsulation),
            1,
            "{name}"
        );
        assert_eq!(stats.malformed(), 1, "{name}");
        assert!(flows.0.iter().all(|(c, _)| c.0 != "tcp"), "{name}");
        assert_eq!(
            stats.flows_created.iter().sum::<u64>(),
            outer_flows,
            "{name}"
        );
        let _ = std::fs::remove_file(path);
    }
}

/// PPPoE discovery and PPP control frames are not IP (counted as such, not
/// as errors).
#[test]
fn pppoe_control_is_not_ip() {
    let inner = conversation(ep("10.0.0.1", 40_000), ep("10.0.0.2", 80));
    let mut lcp = through(
        &Encap::Pppoe { session: 1 },
        "0.0.0.0",
        "0.0.0.0",
        &inner[..1],
    );
    lcp[0][14 + 6..14 + 8].copy_from_slice(&0xc021u16.to_be_bytes());
    let mut discovery = lcp[0].clone();
    discovery[12..14].copy_from_slice(&0x8863u16.to_be_bytes());
    let path = temp_pcap("pppoe-control.pcap", &pcap(&[lcp[0].clone(), discovery]));
    let (_, stats) = run(&path, Config::default());
    assert_eq!(stats.decode_error(DecodeError::NotIp), 2);
    assert_eq!(stats.malformed(), 0);
    let _ = std::fs::remove_file(path);
}

/// The corpus's captures of encapsulated traffic (VXLAN, GTP-U, MPLS,
/// PPTP's GRE, an IPv6 routing header) give tshark's TCP and UDP
/// conversations.
#[test]
fn corpus_tunnel_captures_match_tshark() {
    let Some(dir) = corpus_dir() else { return };
    if !tshark_present() {
        return;
    }
    let files = [
        "ipv6-vlan-frag/zeek__tunnels-vxlan-encapsulated-http.pcap",
        "tcp-edge/ndpi__reasm_segv_anon.pcapng",
        "ipv6-vlan-frag/zeek__mixed-vlan-mpls.pcap",
        "pcap-format/tcpdump__pptp-bigendian.pcap",
        "ipv6-vlan-frag/zeek__ipv6-hbh-routing0.pcap",
    ];
    let mut report = BTreeMap::new();
    for rel in files {
        let path = dir.join(rel);
        if !path.is_file() {
            skip(format!("{rel} not in the corpus"));
            continue;
        }
        let diffs = differences(&path);
        if !diffs.is_empty() {
            report.insert(rel, diffs);
        }
    }
    assert!(report.is_empty(), "{report:#?}");
}
