//! Seed inputs for the fuzz targets in `fuzz/`, made from the sample
//! capture, in each target's input format (documented in `fuzz/README.md`).
//! `cargo run -p streamcap-gen --example fuzz_seeds -- fuzz/corpus` writes
//! them where `cargo fuzz` looks; the test suite runs them through the
//! targets' checks.

use crate::sample::sample;
use crate::SAMPLE_DEFAULT_SEED;

/// One seed: the target it is for, a file name, the bytes.
pub type Seed = (&'static str, String, Vec<u8>);

/// The frames of a classic little-endian pcap made by this crate.
fn frames(pcap: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut at = 24;
    while let Some(h) = pcap.get(at..at + 16) {
        let len = u32::from_le_bytes([h[8], h[9], h[10], h[11]]) as usize;
        let Some(f) = pcap.get(at + 16..at + 16 + len) else {
            break;
        };
        out.push(f);
        at += 16 + len;
    }
    out
}

/// A classic pcap of the first `n` records of `pcap`.
fn head(pcap: &[u8], n: usize) -> Vec<u8> {
    let mut out = pcap[..24.min(pcap.len())].to_vec();
    let mut at = 24;
    for _ in 0..n {
        let Some(h) = pcap.get(at..at + 16) else {
            break;
        };
        let len = u32::from_le_bytes([h[8], h[9], h[10], h[11]]) as usize;
        let Some(rec) = pcap.get(at..at + 16 + len) else {
            break;
        };
        out.extend_from_slice(rec);
        at += 16 + len;
    }
    out
}

/// Every seed, deterministic.
pub fn seeds() -> Vec<Seed> {
    let pcap = sample(SAMPLE_DEFAULT_SEED).to_pcap_bytes();
    let frames = frames(&pcap);
    let mut out: Vec<Seed> = Vec::new();
    // pcap_reader: whole files.
    out.push(("pcap_reader", "sample-head-40.pcap".into(), head(&pcap, 40)));
    // decode: link selector 0 (Ethernet), then a frame.
    for (i, f) in frames.iter().enumerate().step_by(37).take(12) {
        let mut v = vec![0u8];
        v.extend_from_slice(f);
        out.push(("decode", format!("sample-frame-{i}"), v));
    }
    // engine_frames: a configuration byte, then (time step, length LE, frame).
    for (sel, start) in [(0u8, 0usize), (0x45, 60), (0x8a, 200)] {
        let mut v = vec![sel];
        for f in frames.iter().skip(start).take(60) {
            let len = f.len().min(usize::from(u16::MAX)) as u16;
            v.push(3);
            v.extend_from_slice(&len.to_le_bytes());
            v.extend_from_slice(&f[..usize::from(len)]);
        }
        out.push((
            "engine_frames",
            format!("sample-{start}-sel{sel:02x}"),
            v.clone(),
        ));
        // subzero: the same input format (its cutoff comes from the
        // selector's low bit).
        out.push(("subzero", format!("sample-{start}-sel{sel:02x}"), v));
    }
    // tcp_segments: a configuration byte, then (flags, offset LE, length, payload):
    // handshake, data both ways with a retransmission and a hole, FIN.
    let seg = |v: &mut Vec<u8>, flags: u8, off: u16, data: &[u8]| {
        v.push(flags);
        v.extend_from_slice(&off.to_le_bytes());
        v.push(data.len() as u8);
        v.extend_from_slice(data);
    };
    for sel in [0u8, 0x0c, 0x51] {
        let mut v = vec![sel];
        seg(&mut v, 0x01, 63, b"");
        seg(&mut v, 0x81, 63, b"");
        seg(&mut v, 0x02, 64, b"");
        seg(&mut v, 0x12, 64, b"GET / HTTP/1.1\r\n");
        seg(&mut v, 0x12, 80, b"Host: x\r\n\r\n");
        seg(&mut v, 0x92, 64, b"HTTP/1.1 200 OK\r\n");
        seg(&mut v, 0x92, 100, b"after a hole");
        seg(&mut v, 0x92, 64, b"HTTP/1.1 404 No\r\n");
        seg(&mut v, 0x92, 81, b"Content-Length: 3\r\n\r\n");
        seg(&mut v, 0x06, 91, b"");
        seg(&mut v, 0x86, 112, b"");
        out.push(("tcp_segments", format!("conversation-sel{sel:02x}"), v));
    }
    // defrag: a configuration byte, then 6-byte fragment records.
    let frag = |v: &mut Vec<u8>, dgram: u8, off8: u16, flags: u8, len4: u8, step: u8| {
        v.push(dgram);
        v.extend_from_slice(&off8.to_be_bytes());
        v.extend_from_slice(&[flags, len4, step]);
    };
    for sel in [0u8, 0x83] {
        let mut v = vec![sel];
        frag(&mut v, 0, 0, 1, 4, 0); // 16 bytes at 0, more
        frag(&mut v, 1, 2, 0, 2, 0); // another datagram's last piece
        frag(&mut v, 0, 1, 1, 4, 1); // overlaps the first by 8 bytes
        frag(&mut v, 0, 3, 0, 2, 0); // last piece of datagram 0
        frag(&mut v, 2, 0, 3, 8, 0); // cut by the snaplen
        frag(&mut v, 1, 0, 1, 4, 60); // after the timeout
        out.push(("defrag", format!("overlaps-sel{sel:02x}"), v));
    }
    // bpf: instruction count - 1, instructions (code, jt, jf, k; little
    // endian), then a packet: "accept all", and "IPv4?" (ldh [12]; jeq).
    let insn = |v: &mut Vec<u8>, code: u16, jt: u8, jf: u8, k: u32| {
        v.extend_from_slice(&code.to_le_bytes());
        v.extend_from_slice(&[jt, jf]);
        v.extend_from_slice(&k.to_le_bytes());
    };
    let mut v = vec![0u8];
    insn(&mut v, 0x06, 0, 0, 0xffff);
    v.extend_from_slice(frames[0]);
    out.push(("bpf", "accept-all".into(), v));
    let mut v = vec![3u8];
    insn(&mut v, 0x28, 0, 0, 12);
    insn(&mut v, 0x15, 0, 1, 0x0800);
    insn(&mut v, 0x06, 0, 0, 0xffff);
    insn(&mut v, 0x06, 0, 0, 0);
    v.extend_from_slice(frames[0]);
    out.push(("bpf", "ipv4".into(), v));
    // filter: a link selector, then an expression.
    for (i, e) in [
        "tcp port 80",
        "udp and host 10.0.0.1",
        "vlan and ip[0] = 0x45",
        "tcp[tcpflags] & (tcp-syn|tcp-fin) != 0",
        "ip6 and not icmp6",
    ]
    .iter()
    .enumerate()
    {
        let mut v = vec![i as u8];
        v.extend_from_slice(e.as_bytes());
        out.push(("filter", format!("expr-{i}"), v));
    }
    // encap: a selector (outer protocol and UDP port: sel % 6 over IP-in-IP,
    // IPv6-in-IP, GRE, VXLAN, GENEVE, GTP-U; link EtherType: sel / 6 % 4 over
    // PPPoE, MPLS, MPLS multicast, VLAN), then the outer payload: every
    // generated encapsulation's, with TCP inside.
    out.extend(encap_seeds());
    // options: option values as typed.
    for (i, o) in [
        "10KiB",
        "1.5M",
        "unlimited",
        "0-3,5",
        "port 80=1MiB",
        "tcp[13] = 2=0",
        "hash",
        "locality",
        "rollover",
        "bsd",
        "strict",
    ]
    .iter()
    .enumerate()
    {
        out.push(("options", format!("value-{i}"), o.as_bytes().to_vec()));
    }
    out
}

/// Seeds of the `encap` target, from [`crate::tunnel`]'s encapsulations.
fn encap_seeds() -> Vec<Seed> {
    use crate::tunnel::{conversation, tunnel_flows, Encap};
    let mut out = Vec::new();
    for (i, t) in tunnel_flows().into_iter().enumerate() {
        let Some((_, inner)) = conversation(t.client, t.server).into_iter().nth(3) else {
            continue;
        };
        let frame = t.encap.wrap(t.outer_client, t.outer_server, &inner, 1);
        let ip = frame.get(14..).unwrap_or_default();
        let ip_header = if ip.first().is_some_and(|b| b >> 4 == 6) {
            40
        } else {
            20
        };
        let (sel, skip) = match t.encap {
            Encap::Pppoe { .. } => (0u8, 0usize),
            Encap::Mpls { .. } => (6, 0),
            Encap::IpInIp if inner.first().is_some_and(|b| b >> 4 == 6) => (1, ip_header),
            Encap::IpInIp => (0, ip_header),
            Encap::Gre { .. } | Encap::ErspanII { .. } | Encap::ErspanIII { .. } => (2, ip_header),
            Encap::Vxlan { .. } => (3, ip_header + 8),
            Encap::Geneve { .. } => (4, ip_header + 8),
            Encap::GtpU { .. } => (5, ip_header + 8),
        };
        // Link-level encapsulations keep their header (the target puts the
        // EtherType in front); the others start at the outer payload.
        let body = if t.encap.has_outer_ip() {
            ip.get(skip..).unwrap_or_default()
        } else {
            ip
        };
        let mut v = vec![sel];
        v.extend_from_slice(body);
        out.push(("encap", format!("{}-{i}", t.encap.name()), v));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_cover_every_target_and_are_deterministic() {
        let a = seeds();
        assert_eq!(a, seeds());
        for t in [
            "pcap_reader",
            "decode",
            "engine_frames",
            "subzero",
            "tcp_segments",
            "defrag",
            "bpf",
            "filter",
            "options",
            "encap",
        ] {
            assert!(a.iter().any(|(n, _, _)| *n == t), "{t}");
        }
    }
}
