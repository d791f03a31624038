//! Fallback workload: many copies of the generator's sample capture, each
//! copy with its own addresses (so its flows are distinct) and its own start
//! time, interleaved by timestamp into one pcap.
//!
//! Used until `streamcap-gen campus` exists. Addresses are rewritten by
//! XOR-ing 16 bits of every IPv4/IPv6 address with the copy number; the IPv4
//! header checksum and the TCP/UDP/ICMPv6 checksum are patched incrementally
//! (RFC 1624), so the packets stay valid for tools that check checksums.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::Path;

use streamcap_gen::{packet::frame, sample, PcapWriter};

/// Distinct generator seeds used as templates; copy `k` uses seed `1 + k % SEEDS`.
const SEEDS: u64 = 16;

/// Where to patch one template packet.
struct Patch {
    ip_off: usize,
    v6: bool,
    /// Offset of the IPv4 header checksum.
    ip_csum: Option<usize>,
    /// Offset of a transport checksum covering the pseudo-header.
    l4_csum: Option<usize>,
}

struct Template {
    /// (timestamp relative to the template start, frame, patch)
    packets: Vec<(u64, Vec<u8>, Patch)>,
    span_ns: u64,
}

fn patch_of(frame: &[u8], ip_off: usize) -> Patch {
    let ip = &frame[ip_off..];
    let v6 = ip.first().is_some_and(|b| b >> 4 == 6);
    let mut p = Patch {
        ip_off,
        v6,
        ip_csum: None,
        l4_csum: None,
    };
    if !v6 {
        if ip.len() < 20 {
            return p;
        }
        p.ip_csum = Some(ip_off + 10);
        let ihl = usize::from(ip[0] & 15) * 4;
        let frag_off = (u16::from(ip[6] & 0x1f) << 8) | u16::from(ip[7]);
        if frag_off != 0 {
            return p;
        }
        p.l4_csum = match ip[9] {
            6 if ip.len() >= ihl + 18 => Some(ip_off + ihl + 16),
            17 if ip.len() >= ihl + 8 && (ip[ihl + 6] | ip[ihl + 7]) != 0 => Some(ip_off + ihl + 6),
            _ => None,
        };
        return p;
    }
    if ip.len() < 40 {
        return p;
    }
    let mut nh = ip[6];
    let mut at = 40;
    while matches!(nh, 0 | 43 | 60 | 44) && ip.len() >= at + 8 {
        if nh == 44 {
            if (u16::from_be_bytes([ip[at + 2], ip[at + 3]]) & 0xfff8) != 0 {
                return p;
            }
            nh = ip[at];
            at += 8;
        } else {
            let next = ip[at];
            at += (usize::from(ip[at + 1]) + 1) * 8;
            nh = next;
        }
    }
    p.l4_csum = match nh {
        6 if ip.len() >= at + 18 => Some(ip_off + at + 16),
        17 if ip.len() >= at + 8 => Some(ip_off + at + 6),
        58 if ip.len() >= at + 4 => Some(ip_off + at + 2),
        _ => None,
    };
    p
}

fn template(seed: u64) -> Template {
    let cap = sample(seed);
    let lt = cap.config().link_type;
    let pk = cap.packets();
    let t0 = pk.first().map_or(0, |(_, p)| p.ts_ns);
    let mut packets = Vec::with_capacity(pk.len());
    for (_, p) in &pk {
        let f = frame(lt, &p.link, &p.ip);
        let ip_off = f.len() - p.ip.len();
        let patch = patch_of(&f, ip_off);
        packets.push((p.ts_ns - t0, f, patch));
    }
    let span_ns = packets.last().map_or(0, |p| p.0);
    Template { packets, span_ns }
}

/// One's-complement incremental update of checksum `hc` for a 16-bit word
/// changing from `old` to `new` (RFC 1624, eqn. 3).
fn csum_adjust(hc: u16, old: u16, new: u16) -> u16 {
    let mut sum = u32::from(!hc) + u32::from(!old) + u32::from(new);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn rd16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn wr16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

/// Rewrites the addresses of `f` for copy `k`: IPv4 octets 2 and 3 (of
/// both addresses) are XOR-ed with the copy number's two bytes, IPv6 bytes
/// 2-3 likewise; checksums are patched word by word.
fn rewrite(f: &mut [u8], p: &Patch, k: u16) {
    if k == 0 {
        return;
    }
    let changes: [(usize, u16); 4] = if p.v6 {
        [(10, k), (26, k), (0, 0), (0, 0)]
    } else {
        [
            (12, k & 0xff),
            (14, k & 0xff00),
            (16, k & 0xff),
            (18, k & 0xff00),
        ]
    };
    for (w, x) in changes {
        if x == 0 {
            continue;
        }
        let at = p.ip_off + w;
        if at + 2 > f.len() {
            return;
        }
        let old = rd16(f, at);
        let new = old ^ x;
        wr16(f, at, new);
        if let Some(c) = p.ip_csum {
            let v = csum_adjust(rd16(f, c), old, new);
            wr16(f, c, v);
        }
        if let Some(c) = p.l4_csum {
            let v = csum_adjust(rd16(f, c), old, new);
            wr16(f, c, if v == 0 { 0xffff } else { v });
        }
    }
}

/// Writes a trace of at least `packets` packets to `out`; returns
/// (packets, copies).
pub fn write_fallback(out: &Path, packets: u64, concurrency: u64) -> io::Result<(u64, u64)> {
    let templates: Vec<Template> = (0..SEEDS).map(|i| template(1 + i)).collect();
    let per_copy = templates
        .iter()
        .map(|t| t.packets.len() as u64)
        .sum::<u64>()
        / SEEDS;
    let copies = packets.div_ceil(per_copy.max(1)).clamp(1, 65_535);
    let span = templates
        .iter()
        .map(|t| t.span_ns)
        .max()
        .unwrap_or(1)
        .max(1);
    // About `concurrency` copies overlap at any time.
    let stagger = (span / concurrency.max(1)).max(1);
    let base_ns = streamcap_gen::sample::SAMPLE_START_NS;
    let mut heap = BinaryHeap::new();
    for k in 0..copies {
        let t = &templates[(k % SEEDS) as usize];
        if !t.packets.is_empty() {
            heap.push(Reverse((k * stagger + t.packets[0].0, k, 0usize)));
        }
    }
    let file = BufWriter::with_capacity(1 << 20, File::create(out)?);
    let mut w = PcapWriter::new(file)?;
    let mut n = 0u64;
    let mut buf = Vec::new();
    while let Some(Reverse((ts, k, i))) = heap.pop() {
        let t = &templates[(k % SEEDS) as usize];
        let (_, f, patch) = &t.packets[i];
        buf.clear();
        buf.extend_from_slice(f);
        rewrite(&mut buf, patch, k as u16);
        w.write_packet(base_ns + ts, &buf)?;
        n += 1;
        if let Some(next) = t.packets.get(i + 1) {
            heap.push(Reverse((k * stagger + next.0, k, i + 1)));
        }
    }
    w.flush()?;
    Ok((n, copies))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csum(data: &[u8]) -> u16 {
        let mut s = 0u32;
        for c in data.chunks(2) {
            s += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
        }
        while s > 0xffff {
            s = (s & 0xffff) + (s >> 16);
        }
        !(s as u16)
    }

    #[test]
    fn ipv4_header_checksum_stays_valid() {
        let t = template(1);
        for (_, f, p) in &t.packets {
            if p.v6 {
                continue;
            }
            let mut g = f.clone();
            rewrite(&mut g, p, 0x1234);
            let ihl = usize::from(g[p.ip_off] & 15) * 4;
            assert_eq!(csum(&g[p.ip_off..p.ip_off + ihl]), 0);
            assert_ne!(
                &g[p.ip_off + 12..p.ip_off + 20],
                &f[p.ip_off + 12..p.ip_off + 20]
            );
        }
    }
}
