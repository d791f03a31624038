//! Scripted TCP conversations with impairments and ground truth.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;

use etherparse::{TcpHeader, TcpOptionElement};

use crate::capture::{Direction, FlowGenerator, GeneratedFlow, WirePacket};
use crate::packet::{
    build_ip_packet, fragment_ipv4, mac_for, FragmentOrder, IpSpec, LinkSpec, Transport, Vlan,
};
use crate::prng::SplitMix64;
use crate::truth::{
    subtract, ByteRange, ConflictTruth, DirectionTruth, EndReason, FlowTruth, Protocol,
};

/// Default start timestamp of flows: 2023-11-14T22:13:20Z, in ns.
pub const DEFAULT_START_NS: u64 = 1_700_000_000_000_000_000;
/// Default spacing between consecutive packets of one flow (100 µs).
pub const DEFAULT_STEP_NS: u64 = 100_000;

/// Which part of the three-way handshake appears in the capture.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Handshake {
    /// SYN, SYN-ACK, ACK.
    #[default]
    Full,
    /// The SYN is missing: SYN-ACK, ACK.
    NoSyn,
    /// No handshake at all: the capture starts mid-stream with data.
    None,
}

/// How the conversation ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Close {
    /// FIN from `first`, FIN-ACK from the other side, final ACK.
    Fin {
        /// The side that closes first.
        first: Direction,
    },
    /// A single RST(+ACK) sent in direction `from`.
    Rst {
        /// Direction of the RST packet.
        from: Direction,
    },
    /// Nothing: the connection is left open.
    None,
}

impl Default for Close {
    /// The client closes first with FIN.
    fn default() -> Self {
        Close::Fin {
            first: Direction::ToServer,
        }
    }
}

/// Seeded reordering of data segments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Reorder {
    /// Data segments keep script order.
    #[default]
    None,
    /// Data segments are cut into consecutive windows of this many segments
    /// (script order); within each window the segments of each direction are
    /// shuffled among that direction's slots. A window holding at least two
    /// segments of one direction is guaranteed to change order for that
    /// direction. Windows below 2 do nothing.
    Window(usize),
}

/// Whether a conflicting retransmission is emitted before or after the
/// original segments covering its range.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ConflictPlacement {
    /// Right after the last original segment that overlaps the range.
    #[default]
    After,
    /// Right before the first original segment that overlaps the range.
    Before,
}

/// A data segment of the script, as numbered by the impairment knobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SegmentInfo {
    /// Index among all data segments of the conversation, in script order
    /// (both directions share one numbering).
    pub index: usize,
    /// Direction of the segment.
    pub dir: Direction,
    /// Stream range it carries.
    pub range: ByteRange,
}

/// One application send: its bytes and the explicit segment boundaries
/// inside it (offsets within the send, sorted, in `1..len`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Step {
    dir: Direction,
    bytes: Vec<u8>,
    cuts: Vec<usize>,
}

impl Step {
    /// The byte ranges of the send's segments: cut at `cuts`, then every
    /// piece longer than `mss` cut every `mss` bytes.
    fn pieces(&self, mss: usize) -> Vec<std::ops::Range<usize>> {
        let mut out = Vec::new();
        let mut start = 0;
        for end in self.cuts.iter().copied().chain([self.bytes.len()]) {
            let mut s = start;
            while s < end {
                let e = (s + mss).min(end);
                out.push(s..e);
                s = e;
            }
            start = end;
        }
        out
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct ConflictSpec {
    dir: Direction,
    offset: u64,
    bytes: Vec<u8>,
    placement: ConflictPlacement,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Control,
    Data(usize),
    Dup(usize),
    Conflict(usize),
}

#[derive(Clone, Debug)]
struct Planned {
    dir: Direction,
    seq: u32,
    ack: Option<u32>,
    syn: bool,
    fin: bool,
    rst: bool,
    psh: bool,
    payload: Vec<u8>,
    kind: Kind,
}

impl Planned {
    fn ctrl(dir: Direction, seq: u32, ack: Option<u32>) -> Self {
        Planned {
            dir,
            seq,
            ack,
            syn: false,
            fin: false,
            rst: false,
            psh: false,
            payload: Vec::new(),
            kind: Kind::Control,
        }
    }
}

fn di(d: Direction) -> usize {
    match d {
        Direction::ToServer => 0,
        Direction::ToClient => 1,
    }
}

/// Builder of one scripted TCP conversation.
///
/// The script is a list of application sends; each send is cut into
/// segments of at most [`mss`](Self::mss) bytes (and, with
/// [`send_cut`](Self::send_cut), at chosen offsets). Every data segment carries
/// ACK (and PSH on the last segment of a send); after each send the
/// receiver emits a pure ACK for everything received. Sequence numbers use
/// wrapping 32-bit arithmetic, so ISNs near 2^32 exercise wrap-around.
/// Impairments model *capture* effects: a dropped segment was delivered to
/// the peer (ACK numbers still cover it) but is absent from the capture.
///
/// Generation ([`FlowGenerator::generate`]) is deterministic for a given
/// builder; the seed drives default ISNs, IP identification and
/// reordering.
#[derive(Clone, Debug)]
pub struct TcpConversation {
    client: SocketAddr,
    server: SocketAddr,
    client_mac: [u8; 6],
    server_mac: [u8; 6],
    vlan: Vlan,
    client_isn: Option<u32>,
    server_isn: Option<u32>,
    mss: usize,
    handshake: Handshake,
    close: Close,
    steps: Vec<Step>,
    start_ns: u64,
    step_ns: u64,
    seed: u64,
    ttl: u8,
    window: u16,
    dont_fragment: bool,
    label: String,
    reorder: Reorder,
    swaps: Vec<(usize, usize)>,
    duplicates: BTreeSet<usize>,
    drops: BTreeSet<usize>,
    conflicts: Vec<ConflictSpec>,
    fragments: BTreeMap<usize, (usize, FragmentOrder)>,
}

impl TcpConversation {
    /// A conversation between `client` (the initiator) and `server`, with
    /// defaults: full handshake, FIN close by the client, MSS 1460, seed 0
    /// (random ISNs from it), no VLAN, MACs derived from the IPs, start
    /// [`DEFAULT_START_NS`], step [`DEFAULT_STEP_NS`], TTL 64, DF set.
    ///
    /// # Panics
    /// Panics if the two addresses are of different families.
    pub fn new(client: SocketAddr, server: SocketAddr) -> Self {
        assert_eq!(
            client.is_ipv4(),
            server.is_ipv4(),
            "client and server must be the same IP family"
        );
        Self {
            client,
            server,
            client_mac: mac_for(client.ip()),
            server_mac: mac_for(server.ip()),
            vlan: Vlan::None,
            client_isn: None,
            server_isn: None,
            mss: 1460,
            handshake: Handshake::Full,
            close: Close::default(),
            steps: Vec::new(),
            start_ns: DEFAULT_START_NS,
            step_ns: DEFAULT_STEP_NS,
            seed: 0,
            ttl: 64,
            window: 64240,
            dont_fragment: true,
            label: "tcp".into(),
            reorder: Reorder::None,
            swaps: Vec::new(),
            duplicates: BTreeSet::new(),
            drops: BTreeSet::new(),
            conflicts: Vec::new(),
            fragments: BTreeMap::new(),
        }
    }

    /// Sets the free-form label copied into the truth.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    /// Sets the seed (default ISNs, IP identification, reordering).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Sets the VLAN tags of every packet.
    pub fn vlan(mut self, vlan: Vlan) -> Self {
        self.vlan = vlan;
        self
    }

    /// Sets the client and server MAC addresses.
    pub fn macs(mut self, client: [u8; 6], server: [u8; 6]) -> Self {
        self.client_mac = client;
        self.server_mac = server;
        self
    }

    /// Fixes both initial sequence numbers (the SYN carries the ISN; stream
    /// offset 0 is ISN + 1, wrapping).
    pub fn isn(mut self, client: u32, server: u32) -> Self {
        self.client_isn = Some(client);
        self.server_isn = Some(server);
        self
    }

    /// Sets the maximum payload per segment (also announced as the MSS
    /// option in SYN and SYN-ACK, capped at 65535).
    ///
    /// # Panics
    /// Panics if `mss == 0`.
    pub fn mss(mut self, mss: usize) -> Self {
        assert!(mss > 0, "mss must be positive");
        self.mss = mss;
        self
    }

    /// Chooses which handshake packets appear.
    pub fn handshake(mut self, handshake: Handshake) -> Self {
        self.handshake = handshake;
        self
    }

    /// Chooses how the conversation ends.
    pub fn close(mut self, close: Close) -> Self {
        self.close = close;
        self
    }

    /// Timestamp of the first packet and spacing between packets (ns).
    /// Packet `k` of the flow (counting each fragment) gets
    /// `start_ns + k * step_ns`.
    pub fn timing(mut self, start_ns: u64, step_ns: u64) -> Self {
        self.start_ns = start_ns;
        self.step_ns = step_ns;
        self
    }

    /// Sets the IP TTL / hop limit.
    pub fn ttl(mut self, ttl: u8) -> Self {
        self.ttl = ttl;
        self
    }

    /// Sets the advertised TCP window.
    pub fn window(mut self, window: u16) -> Self {
        self.window = window;
        self
    }

    /// Sets the IPv4 DF flag on unfragmented packets (default on).
    pub fn dont_fragment(mut self, df: bool) -> Self {
        self.dont_fragment = df;
        self
    }

    /// Appends an application send to the script. Empty sends are ignored.
    pub fn send(self, dir: Direction, bytes: impl Into<Vec<u8>>) -> Self {
        self.send_cut(dir, bytes, Vec::new())
    }

    /// Appends an application send whose segment boundaries are chosen by
    /// the caller: the send is cut at the given offsets within it (values
    /// outside `1..len` and repeats are ignored), then every piece longer
    /// than the [MSS](Self::mss) is cut every MSS bytes as usual. Empty
    /// sends are ignored. With no cuts this is [`send`](Self::send).
    pub fn send_cut(
        mut self,
        dir: Direction,
        bytes: impl Into<Vec<u8>>,
        mut cuts: Vec<usize>,
    ) -> Self {
        let bytes = bytes.into();
        if !bytes.is_empty() {
            cuts.retain(|&c| c > 0 && c < bytes.len());
            cuts.sort_unstable();
            cuts.dedup();
            self.steps.push(Step { dir, bytes, cuts });
        }
        self
    }

    /// Sets seeded reordering of data segments.
    pub fn reorder(mut self, reorder: Reorder) -> Self {
        self.reorder = reorder;
        self
    }

    /// Swaps the emission slots of data segments `a` and `b` (applied
    /// before [`Reorder`], in call order).
    pub fn swap_segments(mut self, a: usize, b: usize) -> Self {
        self.swaps.push((a, b));
        self
    }

    /// Emits data segment `index` twice (the copy right after the original,
    /// with its own IP identification).
    pub fn duplicate_segment(mut self, index: usize) -> Self {
        self.duplicates.insert(index);
        self
    }

    /// Removes data segment `index` (and its duplicate, if any) from the
    /// capture. Its range is reported as lost unless another emitted
    /// segment (a conflicting retransmission) covers it.
    pub fn drop_segment(mut self, index: usize) -> Self {
        self.drops.insert(index);
        self
    }

    /// Adds a retransmission in direction `dir` carrying `bytes` at stream
    /// offset `offset` (sequence number ISN + 1 + offset), placed before or
    /// after the original segments covering that range. The range may span
    /// several original segments or only part of one. The truth records the
    /// range with the original (intended) and the conflicting bytes; the
    /// intended stream is unchanged.
    ///
    /// # Panics
    /// At generation, if `bytes` is empty or the range extends past the
    /// direction's stream.
    pub fn conflict(
        mut self,
        dir: Direction,
        offset: u64,
        bytes: impl Into<Vec<u8>>,
        placement: ConflictPlacement,
    ) -> Self {
        self.conflicts.push(ConflictSpec {
            dir,
            offset,
            bytes: bytes.into(),
            placement,
        });
        self
    }

    /// Sends data segment `index` (and its duplicate) as `pieces` IPv4
    /// fragments emitted in `order`.
    ///
    /// # Panics
    /// Panics if the conversation is IPv6; at generation, if the segment is
    /// too small for `pieces` fragments.
    pub fn fragment_segment(mut self, index: usize, pieces: usize, order: FragmentOrder) -> Self {
        assert!(
            self.client.is_ipv4(),
            "IPv4 fragmentation needs an IPv4 flow"
        );
        self.fragments.insert(index, (pieces, order));
        self
    }

    /// The data segments the script produces, in script order. Use it to
    /// pick indices for the impairment knobs.
    pub fn data_segments(&self) -> Vec<SegmentInfo> {
        let mut sent = [0u64; 2];
        let mut out = Vec::new();
        for step in &self.steps {
            for piece in step.pieces(self.mss) {
                let start = sent[di(step.dir)];
                let end = start + piece.len() as u64;
                out.push(SegmentInfo {
                    index: out.len(),
                    dir: step.dir,
                    range: ByteRange { start, end },
                });
                sent[di(step.dir)] = end;
            }
        }
        out
    }

    /// The intended stream of one direction (all sends concatenated).
    pub fn stream(&self, dir: Direction) -> Vec<u8> {
        self.steps
            .iter()
            .filter(|s| s.dir == dir)
            .flat_map(|s| s.bytes.iter().copied())
            .collect()
    }

    fn isns(&self) -> (SplitMix64, [u32; 2]) {
        let mut rng = SplitMix64::new(self.seed);
        let c = rng.next_u32();
        let s = rng.next_u32();
        (
            rng,
            [self.client_isn.unwrap_or(c), self.server_isn.unwrap_or(s)],
        )
    }

    fn plan(&self, isn: [u32; 2]) -> Vec<Planned> {
        let seq = |d: Direction, off: u64| isn[di(d)].wrapping_add(1).wrapping_add(off as u32);
        let mut plan = Vec::new();
        let (c, s) = (Direction::ToServer, Direction::ToClient);
        match self.handshake {
            Handshake::Full => {
                let mut syn = Planned::ctrl(c, isn[0], None);
                syn.syn = true;
                plan.push(syn);
            }
            Handshake::NoSyn | Handshake::None => {}
        }
        if self.handshake != Handshake::None {
            let mut synack = Planned::ctrl(s, isn[1], Some(seq(c, 0)));
            synack.syn = true;
            plan.push(synack);
            plan.push(Planned::ctrl(c, seq(c, 0), Some(seq(s, 0))));
        }
        let mut sent = [0u64; 2];
        let mut index = 0;
        for step in &self.steps {
            let (d, r) = (step.dir, step.dir.reverse());
            let pieces = step.pieces(self.mss);
            let n = pieces.len();
            for (k, piece) in pieces.into_iter().enumerate() {
                let chunk = &step.bytes[piece];
                plan.push(Planned {
                    dir: d,
                    seq: seq(d, sent[di(d)]),
                    ack: Some(seq(r, sent[di(r)])),
                    syn: false,
                    fin: false,
                    rst: false,
                    psh: k + 1 == n,
                    payload: chunk.to_vec(),
                    kind: Kind::Data(index),
                });
                index += 1;
                sent[di(d)] += chunk.len() as u64;
            }
            plan.push(Planned::ctrl(
                r,
                seq(r, sent[di(r)]),
                Some(seq(d, sent[di(d)])),
            ));
        }
        match self.close {
            Close::Fin { first: a } => {
                let b = a.reverse();
                let (sa, sb) = (sent[di(a)], sent[di(b)]);
                let mut f1 = Planned::ctrl(a, seq(a, sa), Some(seq(b, sb)));
                f1.fin = true;
                let mut f2 = Planned::ctrl(b, seq(b, sb), Some(seq(a, sa + 1)));
                f2.fin = true;
                plan.push(f1);
                plan.push(f2);
                plan.push(Planned::ctrl(a, seq(a, sa + 1), Some(seq(b, sb + 1))));
            }
            Close::Rst { from } => {
                let r = from.reverse();
                let mut p =
                    Planned::ctrl(from, seq(from, sent[di(from)]), Some(seq(r, sent[di(r)])));
                p.rst = true;
                plan.push(p);
            }
            Close::None => {}
        }
        plan
    }

    fn link(&self, dir: Direction) -> LinkSpec {
        match dir {
            Direction::ToServer => LinkSpec {
                src_mac: self.client_mac,
                dst_mac: self.server_mac,
                vlan: self.vlan,
                outgoing: true,
            },
            Direction::ToClient => LinkSpec {
                src_mac: self.server_mac,
                dst_mac: self.client_mac,
                vlan: self.vlan,
                outgoing: false,
            },
        }
    }
}

impl FlowGenerator for TcpConversation {
    /// Generates the packets and truth.
    ///
    /// # Panics
    /// Panics on out-of-range segment indices, invalid conflict ranges or
    /// segments too small to fragment as requested.
    fn generate(&self) -> GeneratedFlow {
        let (mut rng, isn) = self.isns();
        let mut ip_id = [rng.next_u32() as u16, rng.next_u32() as u16];
        let mut shuffle_rng = rng.fork();
        let segs = self.data_segments();
        let n = segs.len();
        let streams = [
            self.stream(Direction::ToServer),
            self.stream(Direction::ToClient),
        ];
        for &i in self
            .duplicates
            .iter()
            .chain(&self.drops)
            .chain(self.fragments.keys())
            .chain(self.swaps.iter().flat_map(|(a, b)| [a, b]))
        {
            assert!(i < n, "data segment index {i} out of range (have {n})");
        }

        // 1. Plan in script order.
        let plan = self.plan(isn);
        let dpos: Vec<usize> = plan
            .iter()
            .enumerate()
            .filter(|(_, p)| matches!(p.kind, Kind::Data(_)))
            .map(|(i, _)| i)
            .collect();

        // 2. Reorder data segments among the data slots.
        let mut order: Vec<usize> = (0..n).collect();
        for &(a, b) in &self.swaps {
            let pa = order.iter().position(|&x| x == a).unwrap();
            let pb = order.iter().position(|&x| x == b).unwrap();
            order.swap(pa, pb);
        }
        if let Reorder::Window(w) = self.reorder {
            if w >= 2 {
                for start in (0..n).step_by(w) {
                    let end = (start + w).min(n);
                    for dir in [Direction::ToServer, Direction::ToClient] {
                        let slots: Vec<usize> = (start..end)
                            .filter(|&k| segs[order[k]].dir == dir)
                            .collect();
                        let mut vals: Vec<usize> = slots.iter().map(|&k| order[k]).collect();
                        let orig = vals.clone();
                        shuffle_rng.shuffle(&mut vals);
                        if vals.len() >= 2 && vals == orig {
                            vals.rotate_left(1);
                        }
                        for (k, v) in slots.into_iter().zip(vals) {
                            order[k] = v;
                        }
                    }
                }
            }
        }
        let mut plan2 = plan.clone();
        for (k, &pos) in dpos.iter().enumerate() {
            plan2[pos] = plan[dpos[order[k]]].clone();
        }

        // 3. Anchor conflicting retransmissions.
        let mut before: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        let mut after: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        let mut conflict_packets = Vec::new();
        for (ci, c) in self.conflicts.iter().enumerate() {
            let len = c.bytes.len() as u64;
            let slen = streams[di(c.dir)].len() as u64;
            assert!(len > 0, "conflict bytes must not be empty");
            assert!(
                c.offset + len <= slen,
                "conflict range {}..{} beyond the {slen}-byte stream",
                c.offset,
                c.offset + len
            );
            let positions: Vec<usize> = plan2
                .iter()
                .enumerate()
                .filter_map(|(i, p)| match p.kind {
                    Kind::Data(idx)
                        if segs[idx].dir == c.dir
                            && segs[idx].range.start < c.offset + len
                            && segs[idx].range.end > c.offset =>
                    {
                        Some(i)
                    }
                    _ => None,
                })
                .collect();
            let anchor = match c.placement {
                ConflictPlacement::After => *positions.iter().max().expect("overlap exists"),
                ConflictPlacement::Before => *positions.iter().min().expect("overlap exists"),
            };
            conflict_packets.push(Planned {
                dir: c.dir,
                seq: isn[di(c.dir)].wrapping_add(1).wrapping_add(c.offset as u32),
                ack: plan2[anchor].ack,
                syn: false,
                fin: false,
                rst: false,
                psh: true,
                payload: c.bytes.clone(),
                kind: Kind::Conflict(ci),
            });
            match c.placement {
                ConflictPlacement::After => after.entry(anchor).or_default().push(ci),
                ConflictPlacement::Before => before.entry(anchor).or_default().push(ci),
            }
        }

        // 4. Final emission order with duplicates and drops.
        let mut fin: Vec<Planned> = Vec::with_capacity(plan2.len() + 8);
        for (i, p) in plan2.into_iter().enumerate() {
            for &ci in before.get(&i).into_iter().flatten() {
                fin.push(conflict_packets[ci].clone());
            }
            match p.kind {
                Kind::Data(idx) if self.drops.contains(&idx) => {}
                Kind::Data(idx) => {
                    let dup = self.duplicates.contains(&idx).then(|| Planned {
                        kind: Kind::Dup(idx),
                        ..p.clone()
                    });
                    fin.push(p);
                    fin.extend(dup);
                }
                _ => fin.push(p),
            }
            for &ci in after.get(&i).into_iter().flatten() {
                fin.push(conflict_packets[ci].clone());
            }
        }

        // 5. Materialize packets and truth.
        let mut dirs = [DirectionTruth::default(), DirectionTruth::default()];
        let mut covered: [Vec<ByteRange>; 2] = [Vec::new(), Vec::new()];
        let mut packets = Vec::with_capacity(fin.len());
        let mss_opt = self.mss.min(65535) as u16;
        for p in &fin {
            let (src, dst) = match p.dir {
                Direction::ToServer => (self.client, self.server),
                Direction::ToClient => (self.server, self.client),
            };
            let mut h = TcpHeader::new(src.port(), dst.port(), p.seq, self.window);
            h.syn = p.syn;
            h.fin = p.fin;
            h.rst = p.rst;
            h.psh = p.psh;
            if let Some(a) = p.ack {
                h.ack = true;
                h.acknowledgment_number = a;
            }
            if p.syn {
                h.set_options(&[TcpOptionElement::MaximumSegmentSize(mss_opt)])
                    .expect("MSS option fits");
            }
            let d = di(p.dir);
            let spec = IpSpec {
                src: src.ip(),
                dst: dst.ip(),
                ttl: self.ttl,
                ip_id: ip_id[d],
                dont_fragment: self.dont_fragment,
            };
            ip_id[d] = ip_id[d].wrapping_add(1);
            let ip = build_ip_packet(&spec, &Transport::Tcp(h), &p.payload);
            match p.kind {
                Kind::Data(idx) | Kind::Dup(idx) => covered[d].push(segs[idx].range),
                Kind::Conflict(ci) => {
                    let c = &self.conflicts[ci];
                    covered[d].push(ByteRange {
                        start: c.offset,
                        end: c.offset + c.bytes.len() as u64,
                    });
                }
                Kind::Control => {}
            }
            dirs[d].datagrams += 1;
            dirs[d].datagram_bytes += ip_total_len(&ip);
            let pieces = match p.kind {
                Kind::Data(idx) | Kind::Dup(idx) => match self.fragments.get(&idx) {
                    Some((k, order)) => order.apply(
                        fragment_ipv4(&ip, *k).unwrap_or_else(|e| panic!("segment {idx}: {e}")),
                    ),
                    None => vec![ip],
                },
                _ => vec![ip],
            };
            for ip in pieces {
                dirs[d].packets += 1;
                dirs[d].ip_bytes += ip_total_len(&ip);
                packets.push(WirePacket {
                    ts_ns: self.start_ns + packets.len() as u64 * self.step_ns,
                    dir: p.dir,
                    link: self.link(p.dir),
                    ip,
                });
            }
        }
        for (d, dt) in dirs.iter_mut().enumerate() {
            let dropped: Vec<ByteRange> = self
                .drops
                .iter()
                .filter(|&&i| di(segs[i].dir) == d)
                .map(|&i| segs[i].range)
                .collect();
            dt.lost = subtract(&dropped, &covered[d]);
            dt.set_stream(streams[d].clone());
        }
        for c in &self.conflicts {
            let d = di(c.dir);
            let (s, e) = (c.offset as usize, c.offset as usize + c.bytes.len());
            dirs[d].conflicts.push(ConflictTruth {
                range: ByteRange {
                    start: c.offset,
                    end: e as u64,
                },
                original: streams[d][s..e].to_vec(),
                conflicting: c.bytes.clone(),
                conflict_first: c.placement == ConflictPlacement::Before,
            });
        }
        let [to_server, to_client] = dirs;
        GeneratedFlow {
            packets,
            truth: FlowTruth {
                id: 0,
                label: self.label.clone(),
                proto: Protocol::Tcp,
                client: self.client,
                server: self.server,
                vlan: self.vlan.ids(),
                end: match self.close {
                    Close::Fin { .. } => EndReason::Fin,
                    Close::Rst { .. } => EndReason::Rst,
                    Close::None => EndReason::None,
                },
                to_server,
                to_client,
            },
        }
    }
}

/// IP-layer length of a packet: IPv4 total length, or 40 + IPv6 payload
/// length.
pub(crate) fn ip_total_len(ip: &[u8]) -> u64 {
    match ip[0] >> 4 {
        4 => u64::from(u16::from_be_bytes([ip[2], ip[3]])),
        _ => 40 + u64::from(u16::from_be_bytes([ip[4], ip[5]])),
    }
}
