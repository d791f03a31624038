//! Adversarial traffic profiles: captures built to exhaust or confuse a
//! stream capture engine (flow table, reassembly buffers, IP defragmenter,
//! sequence tracking), plus a `normal` baseline of the same size.
//!
//! Every profile writes a classic pcap (Ethernet, IPv4, ns timestamps, one
//! packet per microsecond) whose content depends only on the seed and the
//! packet count. [`Profile::ALL`] lists them; [`generate`] writes one.
//!
//! ```
//! use streamcap_gen::attack::{generate_bytes, Profile};
//! let (pcap, stats) = generate_bytes(Profile::SynFlood, 100, 7);
//! assert_eq!(stats.packets, 100);
//! assert_eq!(stats.flows, 100);
//! assert!(pcap.len() > 24);
//! ```

use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::str::FromStr;

use etherparse::{IpFragOffset, Ipv4Header, TcpHeader};

use crate::campus::{Campus, CampusConfig, CAMPUS_START_NS};
use crate::packet::{build_ip_packet, fragment_ipv4, frame, mac_for, IpSpec, LinkSpec, Transport};
use crate::pcap::{LinkType, PcapWriter};
use crate::prng::SplitMix64;
use crate::Vlan;

/// One adversarial traffic profile (or the `normal` baseline).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Profile {
    /// SYNs of never-completed connections, each from its own source
    /// address and a random port.
    SynFlood,
    /// Short connections whose 5-tuples all give the same value under a
    /// naive unkeyed XOR hash of addresses and ports.
    HashCollision,
    /// Connections whose data comes in 1-byte segments.
    TinySegments,
    /// Per connection, a hole followed by thousands of segments after it.
    OooFlood,
    /// Out-of-order segments, each followed by a retransmission overlapping
    /// it and its neighbour with different bytes.
    OverlapStorm,
    /// Incomplete fragmented IPv4 datagrams (first fragments alone, the
    /// rest without the first) and overlapping fragments.
    FragmentFlood,
    /// RSTs outside the window, data after FIN, sequence wrap-around and
    /// huge sequence jumps.
    SeqAbuse,
    /// A few connections that never end, sending data all through the
    /// capture.
    EndlessStreams,
    /// Campus traffic of the same packet count: the throughput baseline.
    Normal,
}

impl Profile {
    /// Every profile, attacks first, `Normal` last.
    pub const ALL: [Profile; 9] = [
        Profile::SynFlood,
        Profile::HashCollision,
        Profile::TinySegments,
        Profile::OooFlood,
        Profile::OverlapStorm,
        Profile::FragmentFlood,
        Profile::SeqAbuse,
        Profile::EndlessStreams,
        Profile::Normal,
    ];

    /// The command-line name (`syn-flood`, …).
    pub fn name(self) -> &'static str {
        match self {
            Profile::SynFlood => "syn-flood",
            Profile::HashCollision => "hash-collision",
            Profile::TinySegments => "tiny-segments",
            Profile::OooFlood => "ooo-flood",
            Profile::OverlapStorm => "overlap-storm",
            Profile::FragmentFlood => "fragment-flood",
            Profile::SeqAbuse => "seq-abuse",
            Profile::EndlessStreams => "endless-streams",
            Profile::Normal => "normal",
        }
    }

    /// A one-sentence description of the traffic.
    pub fn description(self) -> &'static str {
        match self {
            Profile::SynFlood => {
                "SYNs of never-completed connections, each from a distinct source address \
                 and random port, to one server"
            }
            Profile::HashCollision => {
                "6-packet connections (handshake, 64 data bytes, FINs) whose src^dst^sport^dport \
                 XOR is the same for all, opened 4096 at a time"
            }
            Profile::TinySegments => {
                "64 concurrent connections sending 4000 bytes each in 1-byte segments"
            }
            Profile::OooFlood => {
                "per connection the first 100 data bytes are never sent and 3000 100-byte \
                 segments after the hole follow, shuffled"
            }
            Profile::OverlapStorm => {
                "200-byte segments in reverse order per window of 32, each followed by a \
                 retransmission shifted by 100 bytes carrying different bytes"
            }
            Profile::FragmentFlood => {
                "1200-byte UDP datagrams in 3 fragments: first fragment only, the rest \
                 without the first, and complete datagrams with a conflicting overlapping \
                 fragment, from many sources"
            }
            Profile::SeqAbuse => {
                "connections with ISNs near 2^32 (wrap-around), RSTs outside the window, \
                 segments 2^31 ahead, data after FIN"
            }
            Profile::EndlessStreams => {
                "8 connections sending 1400-byte segments round-robin all through the \
                 capture, never closed"
            }
            Profile::Normal => "campus access-link trace (the baseline), same packet count",
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Profile {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Profile::ALL
            .iter()
            .copied()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Profile::ALL.iter().map(|p| p.name()).collect();
                format!(
                    "unknown profile `{s}` (expected one of {})",
                    names.join(", ")
                )
            })
    }
}

/// What a generated attack capture holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AttackStats {
    /// Pcap records written.
    pub packets: u64,
    /// Size of the pcap in bytes.
    pub pcap_bytes: u64,
    /// Distinct transport 5-tuples (connections or UDP flows) the profile
    /// started, counting only those with at least one packet written; for
    /// `fragment-flood`, datagrams whose first fragment was written; for
    /// `normal`, the campus model's flow count.
    pub flows: u64,
    /// Sum of the IP lengths of all records.
    pub ip_bytes: u64,
}

/// Writes the `profile` capture of `packets` records (seeded by `seed`)
/// into `out`.
///
/// # Errors
/// I/O errors of `out`.
pub fn generate<W: Write>(
    profile: Profile,
    packets: u64,
    seed: u64,
    out: W,
) -> io::Result<(W, AttackStats)> {
    if profile == Profile::Normal {
        let campus = Campus::new(CampusConfig {
            seed,
            packets,
            ..CampusConfig::default()
        });
        let (w, s) = campus.run(out, None)?;
        return Ok((
            w,
            AttackStats {
                packets: s.packets,
                pcap_bytes: s.pcap_bytes,
                flows: s.flows,
                ip_bytes: s.ip_bytes,
            },
        ));
    }
    let mut e = Emitter::new(out, packets)?;
    let mut rng = SplitMix64::new(seed ^ 0xa77a_c4ed);
    match profile {
        Profile::SynFlood => syn_flood(&mut e, &mut rng)?,
        Profile::HashCollision => hash_collision(&mut e, &mut rng)?,
        Profile::TinySegments => tiny_segments(&mut e, &mut rng)?,
        Profile::OooFlood => ooo_flood(&mut e, &mut rng)?,
        Profile::OverlapStorm => overlap_storm(&mut e, &mut rng)?,
        Profile::FragmentFlood => fragment_flood(&mut e, &mut rng)?,
        Profile::SeqAbuse => seq_abuse(&mut e, &mut rng)?,
        Profile::EndlessStreams => endless_streams(&mut e, &mut rng)?,
        Profile::Normal => {}
    }
    let mut stats = e.stats.clone();
    let mut w = e.w.into_inner();
    w.flush()?;
    stats.pcap_bytes += 24; // the global header
    Ok((w, stats))
}

/// The `profile` capture as in-memory bytes (for tests).
pub fn generate_bytes(profile: Profile, packets: u64, seed: u64) -> (Vec<u8>, AttackStats) {
    // Writing into a Vec never fails.
    generate(profile, packets, seed, Vec::new()).unwrap_or_default()
}

/// Writes the `profile` capture to the file `path` (buffered).
///
/// # Errors
/// I/O errors creating or writing the file.
pub fn generate_file(
    profile: Profile,
    packets: u64,
    seed: u64,
    path: &Path,
) -> io::Result<AttackStats> {
    let out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let (w, stats) = generate(profile, packets, seed, out)?;
    w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok(stats)
}

/// Writes records until the packet limit, one per microsecond.
struct Emitter<W: Write> {
    w: PcapWriter<W>,
    limit: u64,
    ts: u64,
    stats: AttackStats,
}

const SYN: u8 = 1;
const ACK: u8 = 2;
const FIN: u8 = 4;
const RST: u8 = 8;
const PSH: u8 = 16;

impl<W: Write> Emitter<W> {
    fn new(out: W, limit: u64) -> io::Result<Self> {
        Ok(Self {
            w: PcapWriter::with_config(out, Campus::pcap_config())?,
            limit,
            ts: CAMPUS_START_NS,
            stats: AttackStats::default(),
        })
    }

    fn full(&self) -> bool {
        self.stats.packets >= self.limit
    }

    /// Writes one IP packet framed in Ethernet; returns false (writing
    /// nothing) once the limit is reached.
    fn ip(&mut self, src: Ipv4Addr, dst: Ipv4Addr, ip_packet: &[u8]) -> io::Result<bool> {
        if self.full() {
            return Ok(false);
        }
        let link = LinkSpec {
            src_mac: mac_for(IpAddr::V4(src)),
            dst_mac: mac_for(IpAddr::V4(dst)),
            vlan: Vlan::None,
            outgoing: false,
        };
        let f = frame(LinkType::Ethernet, &link, ip_packet);
        self.w.write_packet(self.ts, &f)?;
        self.ts += 1_000;
        self.stats.packets += 1;
        self.stats.pcap_bytes += 16 + f.len() as u64;
        self.stats.ip_bytes += ip_packet.len() as u64;
        Ok(true)
    }

    /// Writes one TCP segment from `a` to `b`.
    fn tcp(
        &mut self,
        a: (Ipv4Addr, u16),
        b: (Ipv4Addr, u16),
        seq: u32,
        ack: u32,
        flags: u8,
        payload: &[u8],
    ) -> io::Result<bool> {
        let mut h = TcpHeader::new(a.1, b.1, seq, 65535);
        h.syn = flags & SYN != 0;
        h.ack = flags & ACK != 0;
        h.fin = flags & FIN != 0;
        h.rst = flags & RST != 0;
        h.psh = flags & PSH != 0;
        h.acknowledgment_number = if h.ack { ack } else { 0 };
        let spec = IpSpec {
            src: IpAddr::V4(a.0),
            dst: IpAddr::V4(b.0),
            ttl: 64,
            ip_id: (seq ^ ack) as u16,
            dont_fragment: true,
        };
        let pkt = build_ip_packet(&spec, &Transport::Tcp(h), payload);
        self.ip(a.0, b.0, &pkt)
    }

    /// A three-way handshake; counts the flow if its SYN was written.
    fn handshake(
        &mut self,
        c: (Ipv4Addr, u16),
        s: (Ipv4Addr, u16),
        cisn: u32,
        sisn: u32,
    ) -> io::Result<()> {
        if self.tcp(c, s, cisn, 0, SYN, &[])? {
            self.stats.flows += 1;
        }
        self.tcp(s, c, sisn, cisn.wrapping_add(1), SYN | ACK, &[])?;
        self.tcp(c, s, cisn.wrapping_add(1), sisn.wrapping_add(1), ACK, &[])?;
        Ok(())
    }

    /// The client's FIN at `cseq` (acknowledging `sseq`), then the server's
    /// FIN at `sseq` acknowledging it.
    fn close(
        &mut self,
        c: (Ipv4Addr, u16),
        s: (Ipv4Addr, u16),
        cseq: u32,
        sseq: u32,
    ) -> io::Result<()> {
        self.tcp(c, s, cseq, sseq, FIN | ACK, &[])?;
        self.tcp(s, c, sseq, cseq.wrapping_add(1), FIN | ACK, &[])?;
        Ok(())
    }
}

/// Client address number `i` in 10.0.0.0/8 (distinct for `i < 2^24`).
fn client_addr(i: u64) -> Ipv4Addr {
    Ipv4Addr::from(0x0a00_0000u32 | (i as u32 & 0x00ff_ffff))
}

const SERVER: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);

/// Connection number `i` (from 0): client `client_addr(i + 1)` on a random
/// port, [`SERVER`] on `port`, random initial sequence numbers (drawn in
/// that order: port, client ISN, server ISN).
fn new_conn(
    i: u64,
    port: u16,
    rng: &mut SplitMix64,
) -> ((Ipv4Addr, u16), (Ipv4Addr, u16), u32, u32) {
    let c = client(i, rng);
    (c, (SERVER, port), rng.next_u32(), rng.next_u32())
}

/// The client of connection number `i` (from 0) on a random ephemeral port.
fn client(i: u64, rng: &mut SplitMix64) -> (Ipv4Addr, u16) {
    (client_addr(i + 1), rng.range(1024, 65536) as u16)
}

fn syn_flood<W: Write>(e: &mut Emitter<W>, rng: &mut SplitMix64) -> io::Result<()> {
    let mut i = 0u64;
    while !e.full() {
        let c = client(i, rng);
        if e.tcp(c, (SERVER, 80), rng.next_u32(), 0, SYN, &[])? {
            e.stats.flows += 1;
        }
        i += 1;
    }
    Ok(())
}

fn hash_collision<W: Write>(e: &mut Emitter<W>, rng: &mut SplitMix64) -> io::Result<()> {
    // 5-tuple k: client 10.1.(k>>8).(k) port 1024^k, server 192.0.2.(j) port
    // 8000^j with k = low 16 bits and j = next 8 bits of the flow number.
    // src ^ dst ^ sport ^ dport is the same for every flow.
    const BATCH: u64 = 4096;
    let data = rng.bytes(64);
    let mut n = 0u64;
    while !e.full() {
        let flows: Vec<_> = (n..n + BATCH)
            .map(|i| {
                let k = (i & 0xffff) as u32;
                let j = ((i >> 16) & 0xff) as u32;
                let c = (Ipv4Addr::from(0x0a01_0000 | k), (1024 ^ k) as u16);
                let s = (Ipv4Addr::from(0xc000_0200 | j), (8000 ^ j) as u16);
                (c, s, rng.next_u32() >> 1, rng.next_u32() >> 1)
            })
            .collect();
        n += BATCH;
        for &(c, s, ci, _) in &flows {
            if e.tcp(c, s, ci, 0, SYN, &[])? {
                e.stats.flows += 1;
            }
        }
        for &(c, s, ci, si) in &flows {
            e.tcp(s, c, si, ci + 1, SYN | ACK, &[])?;
        }
        for &(c, s, ci, si) in &flows {
            e.tcp(c, s, ci + 1, si + 1, ACK | PSH, &data)?;
        }
        for &(c, s, ci, si) in &flows {
            e.close(c, s, ci + 65, si + 1)?;
            e.tcp(c, s, ci + 66, si + 2, ACK, &[])?;
        }
    }
    Ok(())
}

fn tiny_segments<W: Write>(e: &mut Emitter<W>, rng: &mut SplitMix64) -> io::Result<()> {
    const CONC: u64 = 64;
    const BYTES: u32 = 4000;
    let mut base = 0u64;
    while !e.full() {
        let conns: Vec<_> = (base..base + CONC).map(|i| new_conn(i, 80, rng)).collect();
        base += CONC;
        for &(c, s, ci, si) in &conns {
            e.handshake(c, s, ci, si)?;
        }
        for off in 0..BYTES {
            for &(c, s, ci, si) in &conns {
                let byte = [b'a' + (off % 26) as u8];
                e.tcp(
                    c,
                    s,
                    ci.wrapping_add(1 + off),
                    si.wrapping_add(1),
                    ACK,
                    &byte,
                )?;
            }
            if e.full() {
                return Ok(());
            }
        }
        for &(c, s, ci, si) in &conns {
            e.close(c, s, ci.wrapping_add(1 + BYTES), si.wrapping_add(1))?;
        }
    }
    Ok(())
}

fn ooo_flood<W: Write>(e: &mut Emitter<W>, rng: &mut SplitMix64) -> io::Result<()> {
    const SEGS: u32 = 3000;
    const LEN: u32 = 100;
    let mut i = 0u64;
    while !e.full() {
        let (c, s, ci, si) = new_conn(i, 80, rng);
        i += 1;
        e.handshake(c, s, ci, si)?;
        // Segment 0 is the hole; 1..=SEGS follow in random order.
        let mut order: Vec<u32> = (1..=SEGS).collect();
        rng.shuffle(&mut order);
        for k in order {
            let payload = rng.bytes(LEN as usize);
            let seq = ci.wrapping_add(1 + k * LEN);
            if !e.tcp(c, s, seq, si.wrapping_add(1), ACK, &payload)? {
                return Ok(());
            }
        }
        let end = ci.wrapping_add(1 + (SEGS + 1) * LEN);
        e.close(c, s, end, si.wrapping_add(1))?;
    }
    Ok(())
}

fn overlap_storm<W: Write>(e: &mut Emitter<W>, rng: &mut SplitMix64) -> io::Result<()> {
    const LEN: u32 = 200;
    const WINDOW: u32 = 32;
    const WINDOWS: u32 = 20;
    let mut i = 0u64;
    while !e.full() {
        let (c, s, ci, si) = new_conn(i, 443, rng);
        i += 1;
        e.handshake(c, s, ci, si)?;
        for w in 0..WINDOWS {
            for k in (0..WINDOW).rev() {
                let off = (w * WINDOW + k) * LEN;
                let seq = ci.wrapping_add(1 + off);
                let first = rng.bytes(LEN as usize);
                e.tcp(c, s, seq, si.wrapping_add(1), ACK, &first)?;
                // Overlaps the second half of this segment and the first
                // half of the next one, with other bytes.
                let other: Vec<u8> = first.iter().map(|b| !b).collect();
                let seq2 = seq.wrapping_add(LEN / 2);
                if !e.tcp(c, s, seq2, si.wrapping_add(1), ACK, &other)? {
                    return Ok(());
                }
            }
        }
        let end = ci.wrapping_add(1 + WINDOWS * WINDOW * LEN + LEN / 2);
        e.close(c, s, end, si.wrapping_add(1))?;
    }
    Ok(())
}

/// A copy of IPv4 fragment `f` moved `delta8` 8-byte units earlier, its
/// payload replaced by its complement.
fn conflicting_fragment(f: &[u8], delta8: u16) -> Option<Vec<u8>> {
    let (mut h, rest) = Ipv4Header::from_slice(f).ok()?;
    let off = h.fragment_offset.value().checked_sub(delta8)?;
    h.fragment_offset = IpFragOffset::try_new(off).ok()?;
    h.header_checksum = h.calc_header_checksum();
    let mut out = h.to_bytes().to_vec();
    out.extend(rest.iter().map(|b| !b));
    Some(out)
}

fn fragment_flood<W: Write>(e: &mut Emitter<W>, rng: &mut SplitMix64) -> io::Result<()> {
    let mut i = 0u64;
    let dst = Ipv4Addr::new(192, 0, 2, 53);
    while !e.full() {
        let src = client_addr(i + 1);
        let spec = IpSpec {
            src: IpAddr::V4(src),
            dst: IpAddr::V4(dst),
            ttl: 64,
            ip_id: (i & 0xffff) as u16,
            dont_fragment: false,
        };
        let sport = rng.range(1024, 65536) as u16;
        let payload = rng.bytes(1200);
        let pkt = build_ip_packet(
            &spec,
            &Transport::Udp {
                src_port: sport,
                dst_port: 53,
            },
            &payload,
        );
        let frags = fragment_ipv4(&pkt, 3)
            .map_err(|err| io::Error::new(io::ErrorKind::InvalidData, err.to_string()))?;
        match i % 3 {
            // First fragment only.
            0 => {
                if e.ip(src, dst, &frags[0])? {
                    e.stats.flows += 1;
                }
            }
            // The rest without the first.
            1 => {
                for f in &frags[1..] {
                    e.ip(src, dst, f)?;
                }
            }
            // Complete, plus a conflicting fragment overlapping the first
            // and second (8 bytes earlier than the second, other bytes).
            _ => {
                if e.ip(src, dst, &frags[0])? {
                    e.stats.flows += 1;
                }
                if let Some(bad) = conflicting_fragment(&frags[1], 1) {
                    e.ip(src, dst, &bad)?;
                }
                e.ip(src, dst, &frags[1])?;
                e.ip(src, dst, &frags[2])?;
            }
        }
        i += 1;
    }
    Ok(())
}

fn seq_abuse<W: Write>(e: &mut Emitter<W>, rng: &mut SplitMix64) -> io::Result<()> {
    const LEN: u32 = 300;
    const SEGS: u32 = 40;
    let mut i = 0u64;
    while !e.full() {
        let c = client(i, rng);
        let s = (SERVER, 80u16);
        // ISNs close to 2^32 so that the data wraps around.
        let ci = u32::MAX - rng.below(u64::from(SEGS * LEN / 2)) as u32;
        let si = u32::MAX - rng.below(1000) as u32;
        i += 1;
        e.handshake(c, s, ci, si)?;
        let sa = si.wrapping_add(1);
        for k in 0..SEGS {
            let seq = ci.wrapping_add(1 + k * LEN);
            let payload = rng.bytes(LEN as usize);
            e.tcp(c, s, seq, sa, ACK, &payload)?;
            match k % 8 {
                // RST far outside the window, both directions.
                1 => {
                    e.tcp(s, c, sa.wrapping_add(1 << 31), 0, RST, &[])?;
                    e.tcp(c, s, seq.wrapping_sub(1 << 30), 0, RST, &[])?;
                }
                // A segment 2^31 ahead: a huge window jump.
                3 => {
                    let far = seq.wrapping_add(1 << 31);
                    e.tcp(c, s, far, sa, ACK, &payload)?;
                }
                // A segment 2^30 + a bit ahead, an acknowledgment jump.
                5 => {
                    let far = seq.wrapping_add((1 << 30) + 12345);
                    e.tcp(c, s, far, sa.wrapping_add(1 << 30), ACK, &payload[..10])?;
                }
                _ => {}
            }
            // Server acknowledges what it got.
            let acked = ci.wrapping_add(1 + (k + 1) * LEN);
            e.tcp(s, c, sa, acked, ACK, &[])?;
        }
        // FIN from the client, then data after it.
        let fin = ci.wrapping_add(1 + SEGS * LEN);
        e.tcp(c, s, fin, sa, FIN | ACK, &[])?;
        for k in 0..3u32 {
            let after = fin.wrapping_add(1 + k * LEN);
            let payload = rng.bytes(LEN as usize);
            e.tcp(c, s, after, sa, ACK, &payload)?;
        }
        e.tcp(s, c, sa, fin.wrapping_add(1), FIN | ACK, &[])?;
        e.tcp(c, s, fin.wrapping_add(1), sa.wrapping_add(1), ACK, &[])?;
    }
    Ok(())
}

fn endless_streams<W: Write>(e: &mut Emitter<W>, rng: &mut SplitMix64) -> io::Result<()> {
    const CONNS: u64 = 8;
    const LEN: u32 = 1400;
    let conns: Vec<_> = (0..CONNS).map(|i| new_conn(i, 80, rng)).collect();
    for &(c, s, ci, si) in &conns {
        e.handshake(c, s, ci, si)?;
    }
    let mut payload = rng.bytes(LEN as usize);
    let mut k = 0u32;
    while !e.full() {
        for &(c, s, ci, si) in &conns {
            payload[(k % LEN) as usize] ^= 0x5a;
            let seq = ci.wrapping_add(1).wrapping_add(k.wrapping_mul(LEN));
            e.tcp(c, s, seq, si.wrapping_add(1), ACK, &payload)?;
            if k % 4 == 3 {
                let acked = seq.wrapping_add(LEN);
                e.tcp(s, c, si.wrapping_add(1), acked, ACK, &[])?;
            }
        }
        k = k.wrapping_add(1);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_has_the_packet_count_and_is_deterministic() {
        for p in Profile::ALL {
            let (a, sa) = generate_bytes(p, 500, 3);
            let (b, _) = generate_bytes(p, 500, 3);
            let (c, _) = generate_bytes(p, 500, 4);
            assert_eq!(sa.packets, 500, "{p}");
            assert_eq!(sa.pcap_bytes, a.len() as u64, "{p}");
            assert!(a == b, "{p} deterministic");
            assert!(a != c, "{p} depends on the seed");
            assert!(sa.flows > 0, "{p}");
            assert_eq!(p.name().parse::<Profile>(), Ok(p));
        }
        assert!("nope".parse::<Profile>().is_err());
    }

    #[test]
    fn hash_collision_tuples_share_the_naive_hash() {
        use etherparse::{NetSlice, SlicedPacket, TransportSlice};
        let (pcap, _) = generate_bytes(Profile::HashCollision, 5000, 1);
        let mut at = 24;
        let mut hashes = std::collections::HashSet::new();
        let mut tuples = std::collections::HashSet::new();
        while at + 16 <= pcap.len() {
            let len = u32::from_le_bytes([pcap[at + 8], pcap[at + 9], pcap[at + 10], pcap[at + 11]])
                as usize;
            let f = &pcap[at + 16..at + 16 + len];
            at += 16 + len;
            let sp = SlicedPacket::from_ethernet(f).expect("frame parses");
            let (Some(NetSlice::Ipv4(ip)), Some(TransportSlice::Tcp(t))) = (sp.net, sp.transport)
            else {
                panic!("not TCP/IPv4");
            };
            let (s, d) = (
                u32::from(ip.header().source_addr()),
                u32::from(ip.header().destination_addr()),
            );
            hashes.insert(s ^ d ^ u32::from(t.source_port()) ^ u32::from(t.destination_port()));
            let (a, b) = ((s, t.source_port()), (d, t.destination_port()));
            tuples.insert(if a < b { (a, b) } else { (b, a) });
        }
        assert_eq!(hashes.len(), 1);
        assert!(tuples.len() >= 800, "{} flows", tuples.len());
    }
}
