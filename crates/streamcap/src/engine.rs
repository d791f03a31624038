//! The worker: one flow shard's whole data path, from a captured frame to the
//! application's callbacks.
//!
//! A [`Worker`] owns its flow table, its memory budget, its fragment
//! reassembler and its handler, so N workers can run side by side, each on its
//! own shard of flows. Time is packet time: the worker's clock is the highest
//! timestamp seen, so offline results do not depend on how fast the input is
//! read.

use crate::config::{Config, ReassemblyMode};
use crate::decode::defrag::{DefragOutcome, Defragmenter, FragKey, Fragment, WireCount};
use crate::decode::tunnel::Decapsulator;
use crate::decode::{decode_ip, decode_transport, FragmentInfo, NetPacket, TcpSegment, Transport};
use crate::deliver::{
    records_from, Budget, BufferPool, Chunk, ChunkBuf, DataReason, Delivery, EndReason, FlowEnd,
    Gap, Handler, Opposite, PacketRecord, Stream, StreamCounters, StreamErrors, StreamInfo,
    StreamParams, StreamStatus,
};
use crate::dispatch::fanout::Shard;
use crate::flow::{Direction, FlowHash, FlowKey, FlowTable, ListId, Side};
use crate::reassembly::assembler::{Assembler, Incoming, Stored};
use crate::reassembly::tcp::{offset_of, TcpSeq};
use crate::source::RawPacket;
use crate::stats::{end_index, GlobalStats, ProtoClass};
use crate::time::Timestamp;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Kind {
    Tcp,
    Udp,
    Other,
}

impl Kind {
    fn list(self) -> ListId {
        match self {
            Kind::Tcp => ListId::Tcp,
            Kind::Udp => ListId::Udp,
            Kind::Other => ListId::Other,
        }
    }
}

/// Zeek-style connection history: one letter per event kind and direction,
/// in order of first occurrence. Each of the 16 (letter, direction) events
/// occurs at most once, so the order fits in 16 nibbles.
#[derive(Clone, Default)]
struct History {
    /// Event indices (letter index, +8 for the responder), 4 bits each, in
    /// order: a little-endian `u64` kept as bytes, so the record packs
    /// around it without padding.
    order: [u8; 8],
    seen: u16,
}

const HISTORY_LETTERS: &[u8; 8] = b"SHADFRTG";

impl History {
    fn push(&mut self, letter: u8, orig: bool) {
        // (A match rather than a search of `HISTORY_LETTERS`: the letter is
        // a constant at every call, so this folds away.)
        let i = match letter {
            b'S' => 0,
            b'H' => 1,
            b'A' => 2,
            b'D' => 3,
            b'F' => 4,
            b'R' => 5,
            b'T' => 6,
            b'G' => 7,
            _ => return,
        };
        let ev = i + if orig { 0 } else { 8 };
        let bit = 1u16 << ev;
        if self.seen & bit == 0 {
            let len = self.seen.count_ones();
            self.seen |= bit;
            let order = u64::from_le_bytes(self.order) | (ev as u64) << (4 * len);
            self.order = order.to_le_bytes();
        }
    }
    /// The letters, written into `buf`.
    fn render<'a>(&self, buf: &'a mut [u8; 16]) -> &'a str {
        let len = self.seen.count_ones() as usize;
        let order = u64::from_le_bytes(self.order);
        for (k, b) in buf.iter_mut().enumerate().take(len) {
            let ev = ((order >> (4 * k)) & 15) as usize;
            let c = HISTORY_LETTERS[ev & 7];
            *b = if ev < 8 { c } else { c.to_ascii_lowercase() };
        }
        std::str::from_utf8(&buf[..len]).unwrap_or("")
    }
}

/// Flag bits of [`DirState::flags`].
const F_ORIG: u8 = 1;
const F_CREATED: u8 = 2;
const F_DISCARD: u8 = 4;
const F_KEEP: u8 = 8;
const F_CUTOFF: u8 = 16;
const F_BASE: u8 = 32;
const F_ISN: u8 = 64;
const F_WSCALE: u8 = 128;

/// One direction of a connection, compact: what a stream that has carried
/// no payload needs. Everything else (the remaining counters, the sequence
/// progress, the parameters when they differ from the worker's defaults,
/// the chunk buffer and the out-of-order store) is in [`Ext`], allocated at
/// the first payload byte (or FIN, or parameter change). The public
/// [`StreamInfo`] is built from both right before a callback.
struct DirState<S> {
    ext: Option<Box<Ext>>,
    start: Timestamp,
    end: Timestamp,
    /// Packets and IP bytes while `ext` is `None` (then in `ext.counters`).
    pkts: u32,
    bytes: u32,
    /// Sequence number of stream offset 0 (valid with `F_BASE`): the byte
    /// after the SYN, or the first byte seen when picked up mid-stream.
    base: u32,
    /// Initial sequence number from a SYN (valid with `F_ISN`).
    isn: u32,
    /// Last advertised window of this direction's sender (unscaled).
    window: u16,
    errors: StreamErrors,
    status: StreamStatus,
    /// Window scale from this sender's SYN (valid with `F_WSCALE`).
    wscale: u8,
    flags: u8,
    user: S,
}

/// The part of a direction's state that only a stream with payload needs.
/// In `repr(C)` order, what every payload packet reads first: the sequence
/// progress, the out-of-order store, the parameters and the counters fill
/// the first three cache lines.
#[repr(C)]
struct Ext {
    tcp: TcpSeq,
    ooo: Option<Box<Assembler>>,
    params: StreamParams,
    counters: StreamCounters,
    chunks: u64,
    processing_ns: u64,
    /// Created at the first byte buffered (inline: a payload packet reaches
    /// it through one pointer, the extension's).
    buf: Option<ChunkBuf>,
}

static NO_SEQ: TcpSeq = TcpSeq {
    next: 0,
    max_end: 0,
    fin: None,
    acked: 0,
};

impl<S: Default> DirState<S> {
    fn new(dir: Direction) -> Self {
        DirState {
            ext: None,
            start: Timestamp::ZERO,
            end: Timestamp::ZERO,
            pkts: 0,
            bytes: 0,
            base: 0,
            isn: 0,
            window: 0,
            errors: StreamErrors::default(),
            status: StreamStatus::Active,
            wscale: 0,
            flags: if dir == Direction::Orig { F_ORIG } else { 0 },
            user: S::default(),
        }
    }
}

impl<S> DirState<S> {
    #[inline]
    fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }
    #[inline]
    fn set_flag(&mut self, f: u8, on: bool) {
        if on {
            self.flags |= f;
        } else {
            self.flags &= !f;
        }
    }
    fn dir(&self) -> Direction {
        if self.has(F_ORIG) {
            Direction::Orig
        } else {
            Direction::Resp
        }
    }
    #[inline]
    fn base(&self) -> Option<u32> {
        self.has(F_BASE).then_some(self.base)
    }
    #[inline]
    fn set_base(&mut self, base: u32) {
        self.base = base;
        self.flags |= F_BASE;
    }
    fn isn(&self) -> Option<u32> {
        self.has(F_ISN).then_some(self.isn)
    }
    fn wscale(&self) -> Option<u8> {
        self.has(F_WSCALE).then_some(self.wscale)
    }
    /// Whether the stream start is known.
    #[inline]
    fn started(&self) -> bool {
        self.has(F_BASE)
    }
    /// The sequence progress (all zero before the first payload byte or FIN).
    #[inline]
    fn tcp(&self) -> &TcpSeq {
        self.ext.as_ref().map_or(&NO_SEQ, |e| &e.tcp)
    }
    /// The stream offset of `seq`, nearest the delivery point; `None` while
    /// the stream start is unknown.
    #[inline]
    fn offset_of(&self, seq: u32) -> Option<i64> {
        Some(offset_of(self.base()?, self.tcp().next, seq))
    }
    #[inline]
    fn params<'a>(&'a self, defaults: &'a [StreamParams; 2]) -> &'a StreamParams {
        match &self.ext {
            Some(e) => &e.params,
            None => &defaults[self.dir() as usize],
        }
    }
    /// The extension, allocated on first use.
    #[inline]
    fn x(&mut self, defaults: &[StreamParams; 2]) -> &mut Ext {
        if self.ext.is_none() {
            self.alloc_ext(defaults);
        }
        match self.ext.as_deref_mut() {
            Some(e) => e,
            None => unreachable!(),
        }
    }
    #[cold]
    fn alloc_ext(&mut self, defaults: &[StreamParams; 2]) {
        let counters = StreamCounters {
            pkts: u64::from(self.pkts),
            bytes: u64::from(self.bytes),
            ..StreamCounters::default()
        };
        (self.pkts, self.bytes) = (0, 0);
        self.ext = Some(Box::new(Ext {
            counters,
            chunks: 0,
            processing_ns: 0,
            params: defaults[self.dir() as usize],
            tcp: TcpSeq::default(),
            buf: None,
            ooo: None,
        }));
    }
    /// Counts packets and their IP bytes.
    #[inline]
    fn count(&mut self, pkts: u64, bytes: u64, defaults: &[StreamParams; 2]) {
        if self.ext.is_none() {
            let p = u64::from(self.pkts) + pkts;
            let b = u64::from(self.bytes) + bytes;
            if let (Ok(p), Ok(b)) = (u32::try_from(p), u32::try_from(b)) {
                (self.pkts, self.bytes) = (p, b);
                return;
            }
        }
        let c = &mut self.x(defaults).counters;
        c.pkts += pkts;
        c.bytes += bytes;
    }
    fn counters(&self) -> StreamCounters {
        match &self.ext {
            Some(e) => e.counters,
            None => StreamCounters {
                pkts: u64::from(self.pkts),
                bytes: u64::from(self.bytes),
                ..StreamCounters::default()
            },
        }
    }
    fn ooo_waiting(&self) -> bool {
        self.ext
            .as_ref()
            .and_then(|e| e.ooo.as_ref())
            .is_some_and(|a| !a.is_empty())
    }
    /// The public descriptor, built for a callback.
    fn info(&self, conn_id: u64, defaults: &[StreamParams; 2]) -> StreamInfo {
        let mut info = StreamInfo::new(self.dir(), conn_id, *self.params(defaults));
        info.start = self.start;
        info.end = self.end;
        info.counters = self.counters();
        info.status = self.status;
        info.cutoff_exceeded = self.has(F_CUTOFF);
        info.errors = self.errors;
        if let Some(e) = &self.ext {
            info.chunks = e.chunks;
            info.processing_ns = e.processing_ns;
        }
        info.created = self.has(F_CREATED);
        info.discard = self.has(F_DISCARD);
        info.keep = self.has(F_KEEP);
        info
    }
    /// Takes back what a callback may have changed in the descriptor.
    fn write_back(&mut self, info: &StreamInfo, defaults: &[StreamParams; 2]) {
        self.set_flag(F_DISCARD, info.discard);
        self.set_flag(F_KEEP, info.keep);
        if info.params_set && info.params != *self.params(defaults) {
            self.x(defaults).params = info.params;
        }
    }
}

impl Ext {
    /// The chunk buffer, created at the delivery point on first use.
    fn buf_mut(&mut self) -> &mut ChunkBuf {
        if self.buf.is_none() {
            self.buf = Some(ChunkBuf {
                start: self.tcp.next,
                gap: self.first_gap(),
                ..ChunkBuf::default()
            });
        }
        match self.buf.as_mut() {
            Some(b) => b,
            None => unreachable!(),
        }
    }

    /// The gap that a stream's first event reports while it has no chunk
    /// buffer: when nothing was ever buffered or delivered (segment delivery
    /// may deliver without a buffer), every byte before the delivery point
    /// went undelivered.
    fn first_gap(&self) -> Option<Gap> {
        let start = self.tcp.next;
        (start > 0 && self.chunks == 0).then_some(Gap {
            offset: 0,
            len: start,
        })
    }

    /// Asks the CPU to prefetch each cache line that a packet of the stream
    /// uses (sequence progress, parameters, counters, chunk buffer), so that
    /// the lines of a whole group of packets load together rather than one
    /// after the other. A hint only: nothing is read or changed.
    #[inline]
    fn warm(&self) {
        use prefetch_index::prefetch_index;
        use std::slice::from_ref;
        prefetch_index(from_ref(&self.tcp), 0);
        prefetch_index(from_ref(&self.params), 0);
        prefetch_index(from_ref(&self.counters.pkts), 0);
        prefetch_index(from_ref(&self.counters.retransmitted), 0);
        prefetch_index(from_ref(&self.buf), 0);
    }

    /// Asks the CPU to prefetch the two cache lines at the end of the chunk
    /// buffer, where the stream's next bytes go (a packet's payload may
    /// straddle two lines). A hint only; reads the buffer's descriptor.
    #[inline]
    fn warm_buffer_end(&self) {
        use prefetch_index::prefetch_index;
        if let Some(b) = &self.buf {
            let end = b.data.len();
            prefetch_index(&b.data, end);
            prefetch_index(&b.data, end + 63);
        }
    }

    fn fresh_len(&self) -> usize {
        self.buf.as_ref().map_or(0, |b| b.fresh_len())
    }
}

struct Conn<S> {
    dirs: [DirState<S>; 2],
    /// Serial number (unique within a worker).
    conn_id: u64,
    history: History,
    kind: Kind,
    orig_side: Side,
    closing: Option<EndReason>,
    /// bit 0: SYN from the initiator; bit 1: SYN-ACK from the responder.
    handshake: u8,
    /// The side whose packet created the connection: its start is the
    /// connection's first packet time.
    first_side: Side,
}

impl<S> Conn<S> {
    /// Asks the CPU to prefetch the connection's cache lines that a packet
    /// writes besides the ones a look-up reads: both directions' counters
    /// and times, and the connection's own fields after them (the record
    /// spans four or five lines, at no fixed alignment). A hint only.
    #[inline]
    fn warm(&self) {
        use prefetch_index::prefetch_index;
        use std::slice::from_ref;
        prefetch_index(from_ref(&self.dirs[0].end), 0);
        prefetch_index(from_ref(&self.dirs[1].end), 0);
        prefetch_index(from_ref(&self.dirs[1].user), 0);
        prefetch_index(from_ref(&self.history), 0);
    }

    /// Time of the connection's first packet.
    fn first(&self) -> Timestamp {
        self.dirs[self.first_side.index()].start
    }
    /// Time of the connection's latest packet.
    fn last(&self) -> Timestamp {
        self.dirs[0].end.max(self.dirs[1].end)
    }
}

fn pair<S>(dirs: &mut [DirState<S>; 2], side: Side) -> (&mut DirState<S>, &mut DirState<S>) {
    let (a, b) = dirs.split_at_mut(1);
    match side {
        Side::A => (&mut a[0], &mut b[0]),
        Side::B => (&mut b[0], &mut a[0]),
    }
}

/// The ports a flow key takes from a transport header (none for ICMP and
/// other protocols).
#[inline]
fn ports(t: &Transport<'_>) -> (u16, u16) {
    match t {
        Transport::Tcp(seg) => (seg.src_port, seg.dst_port),
        Transport::Udp(u) => (u.src_port, u.dst_port),
        Transport::Icmp(_) | Transport::Other { .. } => (0, 0),
    }
}

/// What [`Worker::process_batch`] learned of a frame before processing it.
enum Prepared<'a> {
    /// A whole packet of this worker's, decoded down to its flow.
    Ready(Ready<'a>),
    /// Another worker's packet (only the clock advances).
    NotMine,
    /// An IP fragment, decoded, and its position (for the defragmenter).
    Fragment(NetPacket<'a>, FragmentInfo),
    /// Anything else (decoding errors, non-IP frames): the per-packet path.
    Slow,
}

/// A whole packet decoded down to its flow (computed once per packet).
struct Ready<'a> {
    transport: Transport<'a>,
    flow: FlowOf,
    ip_len: u32,
    proto: u8,
}

/// A packet's flow: the key, the packet's side of it, and the key's hash in
/// the worker's flow table (computed once per packet).
struct FlowOf {
    key: FlowKey,
    side: Side,
    hash: FlowHash,
    /// The slot [`Worker::process_batch`]'s grouped look-up found for the
    /// hash, if any: where the flow probably is (checked against the key
    /// before use, so a stale or colliding one only costs the full look-up).
    slot_hint: Option<u32>,
}

#[cfg(test)]
thread_local! {
    /// Tests turn the fast paths (statistics-only segments, plain IPv4
    /// frames) off to compare them with the general path.
    static GENERAL_PATH_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the fast paths may be taken: `Cx::discard_in_order` for a
/// segment, `Worker::prepare_plain_ipv4` for a frame (always, outside tests).
#[inline(always)]
fn fast_path_enabled() -> bool {
    #[cfg(test)]
    return !GENERAL_PATH_ONLY.with(|c| c.get());
    #[cfg(not(test))]
    true
}

/// Frames whose flows [`Worker::process_batch`] looks up together. Measured
/// on the small-packet campus trace when this was written: 4 and 8 gave
/// the same speed-up over packet-by-packet processing, 16 about half of it.
/// In the ninth session (read-ahead input, fewer instructions per packet),
/// 16 against 8: `streams` 2–2.6 % faster on both generated traces, `flows`
/// unchanged (15 interleaved runs each); 4 was slower, 24 and 32 within
/// noise of 16.
const WARM_GROUP: usize = 16;

/// How many connections ahead [`Worker::finish`] prefetches the extensions
/// of the connections it terminates (and twice as far, their records).
const FINISH_AHEAD: usize = 8;

type FlushQueue = BinaryHeap<Reverse<(u64, u32, u64, u8)>>;

/// What a stream's bytes go through: the context of one direction while the
/// engine commits bytes to it and delivers chunks to the handler.
struct Cx<'a, H: Handler> {
    handler: &'a mut H,
    key: &'a FlowKey,
    side: Side,
    me: &'a mut DirState<H::State>,
    opp: &'a DirState<H::State>,
    conn_id: u64,
    /// The worker's stream parameters, by direction.
    defaults: &'a [StreamParams; 2],
    budget: &'a mut Budget,
    /// The worker's spare chunk-buffer vectors.
    pool: &'a mut BufferPool,
    flush: &'a mut FlushQueue,
    slot: u32,
    now: Timestamp,
    /// Strict mode without a handshake: everything is discarded.
    reject: bool,
    /// Measure time spent in callbacks.
    timed: bool,
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum GapKind {
    Missing,
    Dropped,
    Discarded,
}

impl<H: Handler> Cx<'_, H> {
    /// This direction's extension (allocated on first use).
    #[inline]
    fn e(&mut self) -> &mut Ext {
        self.me.x(self.defaults)
    }

    #[inline]
    fn next(&self) -> u64 {
        self.me.tcp().next
    }

    fn call<R>(&mut self, f: impl FnOnce(&mut H, &mut Stream<'_, H::State>) -> R) -> R {
        let t0 = self.timed.then(Instant::now);
        let mut info = self.me.info(self.conn_id, self.defaults);
        let (opp, conn_id, defaults) = (self.opp, self.conn_id, self.defaults);
        let build = || opp.info(conn_id, defaults);
        let mut s = Stream {
            info: &mut info,
            opposite: Opposite {
                built: std::cell::OnceCell::new(),
                build: &build,
            },
            key: self.key,
            side: self.side,
            state: &mut self.me.user,
        };
        let r = f(self.handler, &mut s);
        self.me.write_back(&info, self.defaults);
        if let Some(t0) = t0 {
            self.e().processing_ns += t0.elapsed().as_nanos() as u64;
        }
        r
    }

    fn cutoff_now(&self) -> u64 {
        let c = self.me.params(self.defaults).cutoff;
        if self.me.has(F_DISCARD) || self.reject {
            c.min(self.next())
        } else {
            c
        }
    }

    /// Calls the data callback with `chunk`; returns whether it kept the
    /// chunk (`keep_chunk`).
    fn hand_over(&mut self, chunk: &Chunk<'_>) -> bool {
        self.me.set_flag(F_KEEP, false);
        self.call(|h, s| h.on_data(s, chunk));
        let keep = self.me.has(F_KEEP);
        self.me.set_flag(F_KEEP, false);
        keep
    }

    /// Hands the buffered new bytes to the data callback.
    fn deliver(&mut self, reason: DataReason) {
        let Some(e) = self.me.ext.as_deref_mut() else {
            return;
        };
        if e.fresh_len() == 0 {
            return;
        }
        let Some(mut buf) = e.buf.take() else {
            return;
        };
        let end = buf.end();
        let later = records_from(&mut buf.packets, end);
        e.chunks += 1;
        let chunk = Chunk {
            data: &buf.data,
            offset: buf.start,
            new_from: buf.fresh,
            reason,
            gap: buf.gap,
            packets: &buf.packets,
        };
        let keep = self.hand_over(&chunk);
        let budget = &mut *self.budget;
        let e = self.me.x(self.defaults);
        let p = e.params;
        let overlap = p.overlap.min(p.chunk_size / 2);
        let buf = e.buf.insert(buf);
        buf.consume(keep, overlap, budget);
        if !later.is_empty() {
            buf.packets = later;
        }
    }

    /// Appends bytes at the delivery point, delivering full chunks; with
    /// segment delivery, delivers them at once, in place when nothing is
    /// buffered and no overlap is asked for, with `reason` ([`DataReason::Segment`], or
    /// [`DataReason::Packet`] for a per-packet protocol). Stops early if a
    /// callback lowers the cutoff; returns how many bytes were accounted.
    fn commit_data(&mut self, data: &[u8], reason: DataReason) -> usize {
        let mut done = 0;
        while done < data.len() {
            let limit = self.cutoff_now();
            let next = self.next();
            if next >= limit {
                break;
            }
            let (now, slot, conn_id, side) = (self.now, self.slot, self.conn_id, self.side);
            let e = self.me.x(self.defaults);
            let cs = e.params.chunk_size.max(1);
            let segments = e.params.delivery == Delivery::Segments;
            let to_limit = (limit - next).min(usize::MAX as u64) as usize;
            if segments && e.params.overlap == 0 && e.buf.as_ref().is_none_or(|b| b.data.is_empty())
            {
                let take = cs.min(data.len() - done).min(to_limit);
                self.deliver_in_place(&data[done..done + take], reason);
                done += take;
                continue;
            }
            let fill = e.buf.as_ref().map_or(0, |b| b.fill());
            let room = cs.saturating_sub(fill).max(1);
            let take = room.min(data.len() - done).min(to_limit);
            if !self.budget.try_charge(take) {
                let rest = (data.len() - done) as u64;
                self.commit_gap(rest, GapKind::Dropped);
                return data.len();
            }
            let flush_timeout = e.params.flush_timeout;
            let buf = e.buf_mut();
            // Most streams are short: the vector starts small and doubles up
            // to the chunk size, so idle or short streams do not each pin a
            // whole chunk of memory; the pool spares the allocator.
            self.pool.reserve(&mut buf.data, take, cs);
            if buf.fresh_len() == 0 {
                buf.pending_since = Some(now);
                // (With segment delivery nothing waits for the timeout.)
                if let Some(ft) = flush_timeout.filter(|_| !segments) {
                    self.flush.push(Reverse((
                        now.0.saturating_add(ft),
                        slot,
                        conn_id,
                        side as u8,
                    )));
                }
            }
            buf.data.extend_from_slice(&data[done..done + take]);
            let full = buf.fill() >= cs;
            done += take;
            let c = &mut e.counters;
            c.captured += take as u64;
            c.stream_bytes += take as u64;
            e.tcp.next += take as u64;
            if segments {
                self.deliver(reason);
            } else if full {
                self.deliver(DataReason::Full);
            }
        }
        done
    }

    /// Segment delivery of `bytes`, which begin at the delivery point and
    /// fit the cutoff, while the chunk buffer holds no bytes: they are
    /// accounted and handed to the data callback where they lie (in the
    /// packet or the out-of-order store), with the gap before them and the
    /// records of the packets waiting whose payload begins before their
    /// end. Copied afterwards only if the callback keeps them (and the
    /// budget has room). A stream whose bytes all go this way creates no
    /// chunk buffer (it would cost a cache line more per packet) until it
    /// needs one: for a gap after its first event, packet records or kept
    /// bytes.
    fn deliver_in_place(&mut self, bytes: &[u8], reason: DataReason) {
        let e = self.me.x(self.defaults);
        let len = bytes.len();
        let offset = e.tcp.next;
        let end = offset + len as u64;
        let (gap, mut packets, later) = match e.buf.as_mut() {
            Some(b) => {
                b.start = end;
                b.pending_since = None;
                let mut packets = std::mem::take(&mut b.packets);
                let later = records_from(&mut packets, end);
                (b.gap.take(), packets, later)
            }
            None => (e.first_gap(), Vec::new(), Vec::new()),
        };
        e.chunks += 1;
        let c = &mut e.counters;
        c.captured += len as u64;
        c.stream_bytes += len as u64;
        e.tcp.next += len as u64;
        let chunk = Chunk {
            data: bytes,
            offset,
            new_from: 0,
            reason,
            gap,
            packets: &packets,
        };
        let keep = self.hand_over(&chunk);
        let budget = &mut *self.budget;
        let e = self.me.x(self.defaults);
        if packets.capacity() > 0 {
            budget.release(packets.len() * std::mem::size_of::<PacketRecord>());
            packets.clear();
            if let Some(b) = e.buf.as_mut() {
                b.packets = if later.is_empty() { packets } else { later };
            }
        }
        if keep && budget.try_charge(len) {
            let cs = e.params.chunk_size.max(1);
            let b = e.buf_mut();
            self.pool.reserve(&mut b.data, len, cs);
            b.data.extend_from_slice(bytes);
            b.start = offset;
            (b.fresh, b.kept) = (len, len);
        }
    }

    /// Accounts `len` bytes at the delivery point that will not be delivered.
    fn commit_gap(&mut self, len: u64, kind: GapKind) {
        if len == 0 {
            return;
        }
        // Discarded bytes follow the cutoff (or a discard): the chunk before
        // them is the last one.
        self.deliver(if kind == GapKind::Discarded {
            DataReason::Cutoff
        } else {
            DataReason::Gap
        });
        let limit = self.cutoff_now();
        let budget = &mut *self.budget;
        let e = self.me.x(self.defaults);
        let off = e.tcp.next;
        // Nothing buffered or delivered, and nothing to report: bytes past
        // the cutoff (and holes past it) need no buffer.
        if e.buf.is_some() || e.chunks > 0 || (kind != GapKind::Discarded && off < limit) {
            e.buf_mut().note_gap(off, len, budget);
        }
        let c = &mut e.counters;
        c.stream_bytes += len;
        let err = match kind {
            GapKind::Missing => {
                c.missing += len;
                StreamErrors::GAP
            }
            GapKind::Dropped => {
                c.dropped += len;
                StreamErrors::GAP.union(StreamErrors::DROPPED)
            }
            GapKind::Discarded => {
                c.discarded += len;
                StreamErrors::default()
            }
        };
        e.tcp.next += len;
        self.me.errors.insert(err);
    }

    /// Commits stored ranges that start at the delivery point.
    fn drain(&mut self) {
        loop {
            let Some(e) = self.me.ext.as_deref_mut() else {
                return;
            };
            let next = e.tcp.next;
            let Some(a) = e.ooo.as_mut() else {
                return;
            };
            let Some((start, end, what)) = a.pop_front(next) else {
                return;
            };
            if end <= next {
                if let Stored::Data(d) = what {
                    self.budget.release(d.len());
                }
                continue;
            }
            let skip = (next - start) as usize;
            match what {
                Stored::Data(d) => {
                    self.budget.release(d.len());
                    let consumed =
                        self.commit_data(d.get(skip..).unwrap_or(&[]), DataReason::Segment);
                    if consumed < d.len() - skip {
                        // A callback lowered the cutoff: the rest was seen but
                        // is past it (settled by `settle_cutoff`).
                        let budget = &mut *self.budget;
                        let e = self.me.x(self.defaults);
                        let (at, policy) = (e.tcp.next, e.params.policy);
                        if let Some(a) = e.ooo.as_mut() {
                            a.insert(at, end, Incoming::Discarded, policy, at, budget);
                        }
                        return;
                    }
                }
                Stored::Dropped => self.commit_gap(end - next, GapKind::Dropped),
                Stored::Discarded => self.commit_gap(end - next, GapKind::Discarded),
                Stored::Missing => self.commit_gap(end - next, GapKind::Missing),
            }
        }
    }

    /// Gives up the hole before the first stored range (before or past the
    /// cutoff alike: bytes never seen are missing) and commits what follows.
    /// Returns false when there was nothing to give up.
    fn skip_hole(&mut self) -> bool {
        let first = self
            .me
            .ext
            .as_ref()
            .and_then(|e| e.ooo.as_ref())
            .and_then(|a| a.first_start());
        let Some(first) = first else {
            return false;
        };
        let next = self.next();
        if first > next {
            self.commit_gap(first - next, GapKind::Missing);
        }
        self.drain();
        self.settle_cutoff();
        self.next() > next
    }

    fn enforce_ooo_limits(&mut self, cfg: &Config) {
        while let Some(a) = self.me.ext.as_ref().and_then(|e| e.ooo.as_ref()) {
            // Discarded placeholders count like the data they stand for, so
            // holes are given up at the same point whatever the cutoff.
            let held = (a.data_bytes() as u64).saturating_add(a.discarded_bytes());
            if held <= cfg.max_ooo_bytes as u64 && a.segments() <= cfg.max_ooo_segments {
                break;
            }
            if !self.skip_hole() {
                break;
            }
        }
    }

    /// Once the delivery point reaches the cutoff: the last chunk goes out,
    /// stored bytes past it become discarded placeholders (their ranges are
    /// kept, so holes between them are still told apart) and the ones at the
    /// delivery point are committed as discarded.
    fn settle_cutoff(&mut self) {
        let limit = self.cutoff_now();
        if self.next() < limit {
            return;
        }
        self.deliver(DataReason::Cutoff);
        if !self.me.has(F_DISCARD) && !self.reject {
            self.me.set_flag(F_CUTOFF, true);
        }
        if let Some(e) = self.me.ext.as_deref_mut() {
            if let Some(b) = e.buf.as_mut() {
                self.budget
                    .release(b.packets.len() * std::mem::size_of::<PacketRecord>());
                b.packets.clear();
            }
            if let Some(a) = e.ooo.as_mut() {
                a.discard_from(limit, self.budget);
            }
        }
        self.drain();
    }

    fn check_conflict(&mut self, start: u64, bytes: &[u8]) {
        let Some(buf) = self.me.ext.as_ref().and_then(|e| e.buf.as_ref()) else {
            return;
        };
        let a = start.max(buf.start);
        let b = (start + bytes.len() as u64).min(buf.end());
        if a >= b {
            return;
        }
        let old = &buf.data[(a - buf.start) as usize..(b - buf.start) as usize];
        let new = &bytes[(a - start) as usize..(b - start) as usize];
        if old != new {
            self.e().counters.overlap_conflicts += 1;
            self.me.errors.insert(StreamErrors::OVERLAP_CONFLICT);
        }
    }

    /// Processes TCP payload: `present` bytes captured of `wire` bytes on the
    /// wire, starting at stream offset `off` (may be negative: before the start).
    fn tcp_data(&mut self, off: i64, present: &[u8], wire: u64, cfg: &Config) {
        if fast_path_enabled() && self.discard_in_order(off, present, wire) {
            return;
        }
        let end = off.saturating_add(wire as i64);
        if end <= 0 {
            self.e().counters.retransmitted += wire;
            return;
        }
        let mut present = present;
        let mut s = off;
        if s < 0 {
            let skip = s.unsigned_abs();
            present = present.get(skip as usize..).unwrap_or(&[]);
            self.e().counters.retransmitted += skip;
            s = 0;
        }
        let (s, mut e) = (s as u64, end as u64);
        if let Some(fin) = self.me.tcp().fin {
            if s >= fin {
                self.me.errors.insert(StreamErrors::DATA_AFTER_FIN);
                return;
            }
            e = e.min(fin);
        }
        if s > self.next().saturating_add(cfg.max_seq_jump) {
            self.me.errors.insert(StreamErrors::BAD_SEQ);
            return;
        }
        let present_end = (s + present.len() as u64).min(e);
        let next = self.next();
        if s < next {
            let re = e.min(next);
            self.e().counters.retransmitted += re - s;
            let pe = present_end.min(re);
            if pe > s {
                self.check_conflict(s, &present[..(pe - s) as usize]);
            }
        }
        let t = &mut self.e().tcp;
        t.max_end = t.max_end.max(e);
        let limit = self.cutoff_now();
        let ns = s.max(next);
        let ce = e.min(limit);
        // Where the part of the segment past the cutoff begins.
        let mut rest = ns;
        if ns < ce {
            let pe = present_end.clamp(ns, ce);
            let in_order = ns == next && !self.me.ooo_waiting();
            if in_order {
                // `pe > ns` means the captured bytes reach past the delivery point.
                let bytes = if pe > ns {
                    &present[(ns - s) as usize..(pe - s) as usize]
                } else {
                    &[][..]
                };
                let consumed = self.commit_data(bytes, DataReason::Segment);
                if consumed as u64 == pe - ns && ce > pe {
                    self.me.errors.insert(StreamErrors::TRUNCATED);
                    self.commit_gap(ce - pe, GapKind::Missing);
                }
                rest = self.next();
            } else {
                let budget = &mut *self.budget;
                let x = self.me.x(self.defaults);
                let policy = x.params.policy;
                let a = x.ooo.get_or_insert_with(Default::default);
                let mut out = Default::default();
                if pe > ns {
                    out = a.insert(
                        ns,
                        pe,
                        Incoming::Data(&present[(ns - s) as usize..(pe - s) as usize]),
                        policy,
                        next,
                        budget,
                    );
                }
                let truncated = ce > pe;
                if truncated {
                    a.insert(pe, ce, Incoming::Missing, policy, next, budget);
                }
                let c = &mut x.counters;
                c.retransmitted += out.overlapped;
                c.overlap_conflicts += out.conflicts;
                let errors = &mut self.me.errors;
                if truncated {
                    errors.insert(StreamErrors::TRUNCATED);
                }
                if out.conflicts > 0 {
                    errors.insert(StreamErrors::OVERLAP_CONFLICT);
                }
                if out.dropped > 0 {
                    errors.insert(StreamErrors::DROPPED);
                }
                self.drain();
                self.enforce_ooo_limits(cfg);
                rest = ce.max(self.next());
            }
        }
        if rest < e {
            self.past_cutoff(rest, present_end, e, cfg);
        }
        self.settle_cutoff();
    }

    /// The common case of a statistics-only run, in a few instructions: a
    /// segment at the delivery point of a stream already past its cutoff,
    /// with nothing buffered or stored, is only counted (discarded, and
    /// missing where the capture cut it). Exactly what the general path of
    /// `tcp_data` does for such a segment; returns false, changing nothing,
    /// for any other segment.
    #[inline]
    fn discard_in_order(&mut self, off: i64, present: &[u8], wire: u64) -> bool {
        let limit = self.cutoff_now();
        let Some(e) = self.me.ext.as_deref_mut() else {
            return false;
        };
        let start = e.tcp.next;
        let fits = off >= 0
            && off as u64 == start
            && start >= limit
            && e.tcp.fin.is_none()
            && e.buf.is_none()
            && e.ooo.as_ref().is_none_or(|a| a.is_empty());
        if !fits {
            return false;
        }
        let end = start + wire;
        let seen = (present.len() as u64).min(wire);
        let cut = wire - seen;
        e.tcp.next = end;
        e.tcp.max_end = e.tcp.max_end.max(end);
        let c = &mut e.counters;
        c.stream_bytes += wire;
        c.discarded += seen;
        if cut > 0 {
            c.missing += cut;
            self.me
                .errors
                .insert(StreamErrors::TRUNCATED.union(StreamErrors::GAP));
        }
        if !self.me.has(F_DISCARD) && !self.reject {
            self.me.set_flag(F_CUTOFF, true);
        }
        true
    }

    /// Accounts the part `[from, end)` of a TCP segment that lies past the
    /// cutoff. Nothing is copied, but the range is remembered: at the delivery
    /// point it is committed as discarded at once (the in-order case, as cheap
    /// as before), else it is stored as a discarded placeholder, which costs
    /// no payload memory, so that a hole before it that never fills is still
    /// counted missing, exactly as below the cutoff. Bytes from `present_end`
    /// on were cut by the snapshot length (missing).
    fn past_cutoff(&mut self, from: u64, present_end: u64, end: u64, cfg: &Config) {
        let pe = present_end.clamp(from, end);
        if pe < end {
            self.me.errors.insert(StreamErrors::TRUNCATED);
        }
        let next = self.next();
        if from == next && !self.me.ooo_waiting() {
            self.commit_gap(pe - from, GapKind::Discarded);
            self.commit_gap(end - pe, GapKind::Missing);
            return;
        }
        let budget = &mut *self.budget;
        let x = self.me.x(self.defaults);
        let policy = x.params.policy;
        let a = x.ooo.get_or_insert_with(Default::default);
        if pe > from {
            let out = a.insert(from, pe, Incoming::Discarded, policy, next, budget);
            x.counters.retransmitted += out.overlapped;
        }
        if end > pe {
            a.insert(pe, end, Incoming::Missing, policy, next, budget);
        }
        self.drain();
        self.enforce_ooo_limits(cfg);
    }

    /// Processes a UDP payload or another protocol's packet: appended at the
    /// end of the stream (no sequence numbers).
    fn datagram(&mut self, present: &[u8], wire: u64, per_packet: bool) {
        let start = self.next();
        let end = start + wire;
        self.e().tcp.max_end = end;
        let limit = self.cutoff_now();
        let ce = end.min(limit.max(start));
        let pe = (start + present.len() as u64).min(ce);
        let reason = if per_packet {
            DataReason::Packet
        } else {
            DataReason::Segment
        };
        let consumed = self.commit_data(&present[..(pe - start) as usize], reason) as u64;
        if consumed == pe - start && ce > pe {
            self.me.errors.insert(StreamErrors::TRUNCATED);
            self.commit_gap(ce - pe, GapKind::Missing);
        }
        // Past the cutoff: the captured bytes are discarded, the cut ones missing.
        let rest = self.next();
        if rest < end {
            let pe = (start + present.len() as u64).clamp(rest, end);
            self.commit_gap(pe - rest, GapKind::Discarded);
            if end > pe {
                self.me.errors.insert(StreamErrors::TRUNCATED);
                self.commit_gap(end - pe, GapKind::Missing);
            }
        }
        if per_packet {
            self.deliver(DataReason::Packet);
        }
        self.settle_cutoff();
    }

    /// Once the delivery point has reached the direction's FIN, every byte
    /// of the stream is known: delivers what is buffered as the last chunk
    /// ([`DataReason::Termination`]) and frees the buffer now, rather than
    /// when the closed connection is terminated after lingering
    /// (`close_linger`), which kept a partial chunk per direction of every
    /// closed connection in memory. Nothing can follow: bytes past a FIN are
    /// not part of the stream.
    fn complete_at_fin(&mut self) {
        let Some(e) = self.me.ext.as_deref() else {
            return;
        };
        let done = e.tcp.fin.is_some_and(|fin| e.tcp.next >= fin);
        let holds = e
            .buf
            .as_ref()
            .is_some_and(|b| b.data.capacity() > 0 || b.packets.capacity() > 0);
        if !done || !holds {
            return;
        }
        self.deliver(DataReason::Termination);
        if let Some(b) = self.me.ext.as_deref_mut().and_then(|e| e.buf.as_mut()) {
            b.release_memory(self.budget, self.pool);
        }
    }

    /// Termination: every hole is given up, the last chunk delivered.
    fn finish(&mut self) {
        while self.skip_hole() {
            if !self.me.ooo_waiting() {
                break;
            }
        }
        // What remains before the highest byte known to be sent was never
        // seen (seen bytes are delivered or stored), cutoff or not.
        let (next, max_end) = (self.next(), self.me.tcp().max_end);
        if max_end > next {
            self.commit_gap(max_end - next, GapKind::Missing);
        }
        self.deliver(DataReason::Termination);
    }
}

/// Builds a [`Cx`] from the worker's shared parts (handler, budget, flush
/// queue) and one direction of a connection, borrowing the fields disjointly.
macro_rules! cx {
    ($w:ident, $key:expr, $side:expr, $me:expr, $opp:expr, $id:expr, $slot:expr, $now:expr, $reject:expr) => {
        Cx {
            handler: &mut $w.handler,
            key: $key,
            side: $side,
            me: $me,
            opp: $opp,
            conn_id: $id,
            defaults: &$w.defaults,
            budget: &mut $w.budget,
            pool: &mut $w.pool,
            flush: &mut $w.flush,
            slot: $slot,
            now: $now,
            reject: $reject,
            timed: $w.cfg.measure_processing_time,
        }
    };
}

/// One flow shard: decodes frames, tracks connections, reassembles streams,
/// and calls the handler.
///
/// ```
/// use streamcap::{engine::Worker, Config, deliver::Callbacks};
/// let mut w = Worker::new(Config::default(), Callbacks::<()>::new());
/// // feed frames with w.process(&raw_packet) ...
/// let stats = w.finish();
/// assert_eq!(stats.packets, 0);
/// ```
pub struct Worker<H: Handler> {
    cfg: Config,
    /// Stream parameters from `cfg`, by direction (orig, resp).
    defaults: [StreamParams; 2],
    handler: H,
    table: FlowTable<Conn<H::State>>,
    budget: Budget,
    /// Spare chunk-buffer vectors, reused across streams.
    pool: BufferPool,
    defrag: Defragmenter,
    flush: FlushQueue,
    now: Timestamp,
    /// No flow can time out before this (a lower bound of the list heads' deadlines).
    next_check: Timestamp,
    next_conn_id: u64,
    stats: GlobalStats,
    scratch: Vec<u8>,
    /// While a reassembled datagram is handled: the fragments it took on the
    /// wire, which its connection counts instead of one packet.
    frag_wire: Option<WireCount>,
    /// The share of the input this worker owns, when several workers read
    /// the same input (file runs); `None` processes everything.
    shard: Option<Shard>,
    /// Some stream may start with a cutoff above 0 (by default or by a
    /// cutoff class), so payload may be copied into chunk buffers: worth
    /// prefetching their ends in [`Worker::process_batch`].
    copies_payload: bool,
    /// Finds tunnels (IP-in-IP, GRE, VXLAN, ...) and opens them.
    decap: Decapsulator,
}

impl<H: Handler> Worker<H> {
    /// A worker with configuration `cfg` delivering to `handler`.
    pub fn new(cfg: Config, handler: H) -> Self {
        let copies_payload = cfg.cutoff_for(Direction::Orig) > 0
            || cfg.cutoff_for(Direction::Resp) > 0
            || cfg.cutoff_classes.iter().any(|c| c.cutoff() > 0);
        Worker {
            copies_payload,
            decap: Decapsulator::from_config(&cfg),
            budget: Budget::new(cfg.memory_size),
            pool: BufferPool::default(),
            defrag: Defragmenter::new(cfg.defrag.clone()),
            defaults: [
                params_for(&cfg, Direction::Orig),
                params_for(&cfg, Direction::Resp),
            ],
            cfg,
            handler,
            table: FlowTable::new(),
            flush: BinaryHeap::new(),
            now: Timestamp::ZERO,
            next_check: Timestamp::ZERO,
            next_conn_id: 0,
            stats: GlobalStats::default(),
            scratch: Vec::new(),
            frag_wire: None,
            shard: None,
        }
    }

    /// Makes this worker one of several reading the same input: it processes
    /// and counts only the packets its [`Shard`] owns, and skips the others
    /// without counting them (see [`crate::dispatch::fanout`]). Every worker
    /// of the run must see every packet, in the same order.
    pub fn with_shard(mut self, shard: Shard) -> Self {
        self.shard = Some(shard.with_tunnels(self.decap.clone()));
        self
    }

    /// The shard this worker owns, if it is one of several.
    pub fn shard(&self) -> Option<&Shard> {
        self.shard.as_ref()
    }

    /// Advances the worker's clock to `now` without a packet (live capture on
    /// an idle link), so that inactivity and flush timeouts still fire. A
    /// time earlier than the clock is ignored.
    #[inline(always)]
    pub fn advance_clock(&mut self, now: Timestamp) {
        if now > self.now {
            self.now = now;
        }
        let due = self.flush.peek().map_or(u64::MAX, |Reverse(e)| e.0);
        if self.now >= self.next_check || self.now.0 >= due {
            self.expire();
        }
        if self.defrag.in_progress() > 0 {
            self.defrag.expire(self.now);
        }
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The handler.
    pub fn handler(&self) -> &H {
        &self.handler
    }

    /// The handler, mutably.
    pub fn handler_mut(&mut self) -> &mut H {
        &mut self.handler
    }

    /// Consumes the worker, returning the handler.
    pub fn into_handler(self) -> H {
        self.handler
    }

    /// Statistics so far (stream totals cover terminated streams only).
    pub fn stats(&self) -> GlobalStats {
        let mut s = self.stats.clone();
        s.memory_peak = self.budget.peak();
        s.memory_limit = self.budget.limit();
        s.memory_refusals = self.budget.refusals();
        s.defrag = self.defrag.stats().clone();
        s
    }

    /// Flows currently tracked.
    pub fn active_flows(&self) -> usize {
        self.table.len()
    }

    /// Memory budget in use, bytes.
    pub fn memory_used(&self) -> usize {
        self.budget.used()
    }

    /// The worker's clock: the latest packet time seen.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// Processes one captured frame.
    #[inline]
    pub fn process(&mut self, pkt: &RawPacket<'_>) {
        self.advance_clock(pkt.ts);
        let net = match decode_ip(pkt.link, pkt.data) {
            Ok(n) => n,
            Err(e) => {
                if self
                    .shard
                    .as_ref()
                    .is_none_or(|s| s.owns_record(pkt.record))
                {
                    self.count_frame(pkt);
                    self.stats.decode_errors[e.index()] += 1;
                }
                return;
            }
        };
        if let Some(f) = net.fragment {
            self.process_fragment(pkt, &net, f);
            return;
        }
        if let Some(s) = &self.shard {
            if !s.owns_packet(&net, net.payload) {
                return;
            }
        }
        self.count_frame(pkt);
        self.stats.ip_packets += 1;
        self.handle_ip(pkt, &net, net.payload, net.payload_wire_len, net.ip_len);
    }

    /// Processes an IP fragment (decoded as `net`, at position `f`): it
    /// goes to the defragmenter, and a datagram it completes to the
    /// transport layer.
    fn process_fragment(&mut self, pkt: &RawPacket<'_>, net: &NetPacket<'_>, f: FragmentInfo) {
        let key = FragKey {
            src: net.src,
            dst: net.dst,
            id: f.id,
            proto: net.proto,
            vlan: net.fragment_context(),
        };
        if net.tunnel != 0 {
            // Inside a tunnel: its frame was counted with the outer packet.
            self.stats.fragments += 1;
        } else if self.shard.as_ref().is_none_or(|s| s.owns_fragment(&key)) {
            self.count_frame(pkt);
            self.stats.ip_packets += 1;
            self.stats.fragments += 1;
        }
        let frag = Fragment {
            offset: f.offset,
            more: f.more,
            ip_len: net.ip_len,
        };
        match self
            .defrag
            .process(self.now, key, frag, net.payload, net.payload_wire_len)
        {
            DefragOutcome::Pending => {}
            DefragOutcome::Complete(bytes, wire) => {
                if net.tunnel == 0
                    && self
                        .shard
                        .as_ref()
                        .is_some_and(|s| !s.owns_packet(net, bytes))
                {
                    return;
                }
                let mut scratch = std::mem::take(&mut self.scratch);
                scratch.clear();
                scratch.extend_from_slice(bytes);
                let header = net.ip_len.saturating_sub(net.payload_wire_len);
                let ip_len = header + scratch.len() as u32;
                self.frag_wire = Some(wire);
                self.handle_ip(pkt, net, &scratch, scratch.len() as u32, ip_len);
                self.frag_wire = None;
                self.scratch = scratch;
            }
        }
    }

    /// Processes frames in order, with exactly the result of calling
    /// [`Worker::process`] on each, faster.
    ///
    /// Frames are taken in groups of sixteen. Each frame of a group is decoded
    /// (once: the result is used to process it), then the group's flows are
    /// looked up, their entries read and their per-direction state
    /// prefetched, one step for the whole group at a time, before any frame
    /// is processed. The loads of one step are independent, so their cache
    /// misses overlap instead of stalling one packet after the other; the
    /// look-ups change nothing, and a flow that a frame of the group creates,
    /// evicts or ends before a later frame of the same group is processed is
    /// found again by that frame's own lookup.
    pub fn process_batch(&mut self, pkts: &[RawPacket<'_>]) {
        if let [one] = pkts {
            // Nothing to overlap.
            self.process(one);
            return;
        }
        for group in pkts.chunks(WARM_GROUP) {
            // (Slots past the end of a short last group stay unused.)
            let mut prepared = [const { Prepared::Slow }; WARM_GROUP];
            for (slot, p) in prepared.iter_mut().zip(group) {
                self.prepare(p, slot);
            }
            // Each step reads what the one before found, for every frame of
            // the group: the reads of one step are independent, so their
            // cache misses overlap.
            for p in &mut prepared {
                if let Prepared::Ready(r) = p {
                    r.flow.slot_hint = self.table.probable_slot(r.flow.hash);
                }
            }
            let mut exts = [[None; 2]; WARM_GROUP];
            for (e, p) in exts.iter_mut().zip(&prepared) {
                let idx = match p {
                    Prepared::Ready(r) => r.flow.slot_hint,
                    _ => None,
                };
                if let Some(i) = idx {
                    // Where the flow's last activity goes (its own array).
                    self.table.warm_expiry(i);
                }
                if let Some((k, c)) = idx.and_then(|i| self.table.entry(i)) {
                    // The key's line: processing compares it when it looks
                    // the flow up for real.
                    std::hint::black_box(k.proto());
                    c.warm();
                    *e = [c.dirs[0].ext.as_deref(), c.dirs[1].ext.as_deref()];
                }
            }
            for e in exts.iter().flatten().flatten() {
                e.warm();
            }
            if self.copies_payload {
                // Then where each packet's payload will be copied: the end of
                // its stream's chunk buffer, last written thousands of packets
                // ago when many streams interleave (a read of the line just
                // warmed, then a hint).
                for e in exts.iter().flatten().flatten() {
                    e.warm_buffer_end();
                }
            }
            for (p, prep) in group.iter().zip(&prepared) {
                match prep {
                    Prepared::Ready(r) => {
                        self.advance_clock(p.ts);
                        self.count_frame(p);
                        self.stats.ip_packets += 1;
                        self.handle_transport(p, r.proto, &r.transport, &r.flow, r.ip_len);
                    }
                    Prepared::NotMine => self.advance_clock(p.ts),
                    Prepared::Fragment(net, f) => {
                        self.advance_clock(p.ts);
                        self.process_fragment(p, net, *f);
                    }
                    Prepared::Slow => self.process(p),
                }
            }
        }
    }

    /// Decodes a whole packet this worker owns down to its flow, for
    /// [`Worker::process_batch`], into `slot` (which stays as it is, `Slow`,
    /// for a packet that does not decode; a fragment becomes `Fragment`,
    /// with its decoding, for the defragmenter). Written in place:
    /// returned, the result was copied into the slot (callgrind, `flows` on
    /// 300 k small packets: 380.3 M → 369.7 M instructions).
    #[inline]
    fn prepare<'p>(&self, pkt: &RawPacket<'p>, slot: &mut Prepared<'p>) {
        if let Some(r) = self.prepare_plain_ipv4(pkt) {
            *slot = Prepared::Ready(r);
            return;
        }
        // Used in place: moving the decoded packet out of the `Result` cost
        // a copy of it (bench/README.md, eighth session).
        let decoded = decode_ip(pkt.link, pkt.data);
        let Ok(net) = &decoded else {
            return;
        };
        if let Some(f) = net.fragment {
            // Decoded once: the per-packet path would decode it again.
            *slot = Prepared::Fragment(net.clone(), f);
            return;
        }
        if self
            .shard
            .as_ref()
            .is_some_and(|s| !s.owns_packet(net, net.payload))
        {
            *slot = Prepared::NotMine;
            return;
        }
        if let Ok(transport) = decode_transport(net.proto, net.payload, net.payload_wire_len) {
            if self.decap.carrier(net.proto, &transport) {
                // Opened on the per-packet path.
                return;
            }
            *slot = Prepared::Ready(Ready {
                flow: self.flow_of(net, &transport),
                transport,
                ip_len: net.ip_len,
                proto: net.proto,
            });
        }
    }

    /// [`Worker::prepare`] for the most common frame, read straight from
    /// its bytes: Ethernet without VLAN tags, an IPv4 header without options
    /// that is not a fragment, TCP or UDP, one worker. `None` for anything
    /// else (and for a transport header that does not decode), which the
    /// general decoder then takes. Same result as the general decoder
    /// (`fast_path_equals_general_path_in_batches`); it skips building the
    /// decoded IP packet and reading its addresses back (callgrind, `flows`
    /// on 300 k small packets: 352.1 M → 334.4 M instructions, 2 % of wall
    /// time on 2 M).
    #[inline(always)]
    fn prepare_plain_ipv4<'p>(&self, pkt: &RawPacket<'p>) -> Option<Ready<'p>> {
        if pkt.link != crate::LinkType::ETHERNET || self.shard.is_some() || !fast_path_enabled() {
            return None;
        }
        let (eth, b) = pkt.data.split_first_chunk::<14>()?;
        let h = b.first_chunk::<20>()?;
        // Ethertype IPv4; version 4 with a 20-byte header; neither "more
        // fragments" nor a fragment offset.
        if eth[12..14] != [0x08, 0] || h[0] != 0x45 || (h[6] & 0x3f) != 0 || h[7] != 0 {
            return None;
        }
        let proto = h[9];
        if proto != 6 && proto != 17 {
            return None;
        }
        // As the general decoder: a total length of 0 (TSO captures) means
        // the bytes present; one below the header's is left to the general
        // decoder, which counts it as a bad IP header.
        let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
        let ip_len = if total < 20 {
            if total != 0 {
                return None;
            }
            b.len()
        } else {
            total
        };
        let payload = b.get(20..ip_len.min(b.len()))?;
        let wire = (ip_len - 20) as u32;
        let transport = decode_transport(proto, payload, wire).ok()?;
        let (sport, dport) = ports(&transport);
        if proto == 17 && self.decap.udp_carrier(sport, dport) {
            // A tunnel is opened on the per-packet path.
            return None;
        }
        let src = [h[12], h[13], h[14], h[15]];
        let dst = [h[16], h[17], h[18], h[19]];
        Some(Ready {
            flow: self.flow_of_key(FlowKey::from_ipv4(src, sport, dst, dport, proto)),
            transport,
            ip_len: ip_len as u32,
            proto,
        })
    }

    /// The flow of a decoded packet: its key, the packet's side and the
    /// key's hash in the flow table.
    #[inline]
    fn flow_of(&self, net: &NetPacket<'_>, t: &Transport<'_>) -> FlowOf {
        let (sport, dport) = ports(t);
        let (key, side) = FlowKey::new(net.src, sport, net.dst, dport, net.proto, net.vlan_key());
        self.flow_of_key((key.with_tunnel(net.tunnel), side))
    }

    /// A packet's flow from its key and side: the key's hash added.
    #[inline]
    fn flow_of_key(&self, (key, side): (FlowKey, Side)) -> FlowOf {
        FlowOf {
            key,
            side,
            hash: self.table.hash_of(&key),
            slot_hint: None,
        }
    }

    /// The slot of `flow`, if the table has it: its hint when that slot
    /// holds the key, else a full look-up.
    #[inline(always)]
    fn find_flow(&self, flow: &FlowOf) -> Option<u32> {
        match flow.slot_hint {
            Some(i) if self.table.entry(i).is_some_and(|(k, _)| *k == flow.key) => Some(i),
            _ => self.table.find_hashed(&flow.key, flow.hash),
        }
    }

    /// Counts a frame this worker owns in the global packet counters.
    fn count_frame(&mut self, pkt: &RawPacket<'_>) {
        self.stats.packets += 1;
        self.stats.wire_bytes += u64::from(pkt.orig_len);
        if pkt.is_truncated() {
            self.stats.truncated_packets += 1;
        }
    }

    /// Handles an IP packet (`payload` is its transport header and data,
    /// reassembled if it came in fragments); `frame` is the captured frame
    /// that carried it (or its last fragment).
    fn handle_ip(
        &mut self,
        frame: &RawPacket<'_>,
        net: &NetPacket<'_>,
        payload: &[u8],
        wire_len: u32,
        ip_len: u32,
    ) {
        let t = match decode_transport(net.proto, payload, wire_len) {
            Ok(t) => t,
            Err(e) => {
                self.stats.decode_errors[e.index()] += 1;
                return;
            }
        };
        let flow = self.flow_of(net, &t);
        self.handle_transport(frame, net.proto, &t, &flow, ip_len);
        if self.decap.carrier(net.proto, &t) {
            self.decapsulate(frame, net, &t);
        }
    }

    /// Processes the packet inside tunnel packet `outer` (transport layer
    /// `t`, already handled in the outer flow) as one that came through the
    /// tunnel; its frame was counted with `outer`. A tunnel header or inner
    /// packet that does not decode, or a tunnel past the limits, is counted
    /// under its decode error.
    #[inline(never)]
    fn decapsulate(&mut self, frame: &RawPacket<'_>, outer: &NetPacket<'_>, t: &Transport<'_>) {
        match self.decap.open(outer, t) {
            Ok(None) => {}
            Ok(Some(inner)) => match inner.fragment {
                Some(f) => self.process_fragment(frame, &inner, f),
                None => self.handle_ip(
                    frame,
                    &inner,
                    inner.payload,
                    inner.payload_wire_len,
                    inner.ip_len,
                ),
            },
            Err(e) => self.stats.decode_errors[e.index()] += 1,
        }
    }

    /// Handles a decoded transport-layer packet of protocol `proto` in `flow`.
    #[inline]
    fn handle_transport(
        &mut self,
        frame: &RawPacket<'_>,
        proto: u8,
        t: &Transport<'_>,
        flow: &FlowOf,
        ip_len: u32,
    ) {
        self.stats.proto_packets[ProtoClass::of(proto) as usize] += 1;
        match t {
            Transport::Tcp(seg) => self.handle_tcp(frame, seg, flow, ip_len),
            Transport::Udp(u) => self.handle_datagram(
                frame,
                flow,
                Kind::Udp,
                u.payload,
                u.payload_wire_len,
                ip_len,
            ),
            Transport::Icmp(m) => self.handle_datagram(
                frame,
                flow,
                Kind::Other,
                m.payload,
                m.payload_wire_len,
                ip_len,
            ),
            Transport::Other {
                payload,
                payload_wire_len,
            } => self.handle_datagram(frame, flow, Kind::Other, payload, *payload_wire_len, ip_len),
        }
    }

    /// The cutoff of the first cutoff class the frame matches, if any.
    fn class_cutoff(&self, frame: &RawPacket<'_>) -> Option<u64> {
        self.cfg
            .cutoff_classes
            .iter()
            .find(|c| c.matches(frame))
            .map(|c| c.cutoff())
    }

    fn create_conn(
        &mut self,
        frame: &RawPacket<'_>,
        flow: &FlowOf,
        orig_side: Side,
        kind: Kind,
    ) -> u32 {
        let key = flow.key;
        if self.table.len() >= self.cfg.max_flows.max(1) {
            if let Some(victim) = self.table.eviction_candidate() {
                self.terminate(victim, EndReason::Evicted);
            }
        }
        let id = self.next_conn_id;
        self.next_conn_id += 1;
        let mk = |side: Side| {
            DirState::new(if side == orig_side {
                Direction::Orig
            } else {
                Direction::Resp
            })
        };
        // The connection's first packet time is the start of the direction
        // that `begin_packet` creates first, right after this.
        let mut dirs = [mk(Side::A), mk(Side::B)];
        if let Some(cutoff) = self.class_cutoff(frame) {
            for d in &mut dirs {
                if d.params(&self.defaults).cutoff != cutoff {
                    d.x(&self.defaults).params.cutoff = cutoff;
                }
            }
        }
        let conn = Conn {
            dirs,
            conn_id: id,
            history: History::default(),
            kind,
            orig_side,
            closing: None,
            handshake: 0,
            first_side: orig_side,
        };
        self.stats.flows_created[ProtoClass::of(key.proto()) as usize] += 1;
        let idx = self
            .table
            .insert_hashed(key, flow.hash, kind.list(), self.now, conn);
        self.note_deadline(kind.list());
        self.stats.max_flows = self.stats.max_flows.max(self.table.len() as u64);
        idx
    }

    /// Marks the direction as created (firing `on_create`) and counts the
    /// packet (a reassembled datagram counts its fragments and their IP bytes).
    #[inline(always)]
    fn begin_packet(&mut self, idx: u32, side: Side, ip_len: u32, ts: Timestamp) {
        let (pkts, bytes) = match self.frag_wire {
            Some(w) => (u64::from(w.fragments), w.ip_bytes),
            None => (1, u64::from(ip_len)),
        };
        let Some((key, conn)) = self.table.entry_mut(idx) else {
            return;
        };
        let conn_id = conn.conn_id;
        if !conn.dirs[0].has(F_CREATED) && !conn.dirs[1].has(F_CREATED) {
            conn.first_side = side;
        }
        let (me, opp) = pair(&mut conn.dirs, side);
        me.count(pkts, bytes, &self.defaults);
        me.end = me.end.max(ts);
        if !me.has(F_CREATED) {
            me.set_flag(F_CREATED, true);
            me.start = ts;
            self.stats.streams += 1;
            if H::WANTS_ON_CREATE {
                let mut cx = cx!(self, key, side, me, &*opp, conn_id, idx, self.now, false);
                cx.call(|h, s| h.on_create(s));
            }
        }
    }

    fn record_packet(&mut self, idx: u32, side: Side, rec: PacketRecord) {
        if !self.cfg.need_packets {
            return;
        }
        let Some(conn) = self.table.get_mut(idx) else {
            return;
        };
        let dir = &mut conn.dirs[side.index()];
        let may_deliver = !dir.has(F_DISCARD) && dir.tcp().next < dir.params(&self.defaults).cutoff;
        if may_deliver && self.budget.try_charge(std::mem::size_of::<PacketRecord>()) {
            dir.x(&self.defaults).buf_mut().packets.push(rec);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn handle_datagram(
        &mut self,
        frame: &RawPacket<'_>,
        flow: &FlowOf,
        kind: Kind,
        payload: &[u8],
        wire: u32,
        ip_len: u32,
    ) {
        let ts = frame.ts;
        let side = flow.side;
        let idx = match self.find_flow(flow) {
            Some(i) => i,
            None => self.create_conn(frame, flow, side, kind),
        };
        self.begin_packet(idx, side, ip_len, ts);
        if wire > 0 {
            if let Some(c) = self.table.get_mut(idx) {
                let is_orig = side == c.orig_side;
                c.history.push(b'D', is_orig);
            }
            let off = self
                .table
                .get(idx)
                .map_or(0, |c| c.dirs[side.index()].tcp().next);
            self.record_packet(
                idx,
                side,
                PacketRecord {
                    ts,
                    offset: off,
                    len: wire,
                    ip_len,
                    seq: 0,
                    ack: 0,
                    flags: 0,
                    window: 0,
                },
            );
        }
        let Some((key, conn)) = self.table.entry_mut(idx) else {
            return;
        };
        let conn_id = conn.conn_id;
        let (me, opp) = pair(&mut conn.dirs, side);
        let mut cx = cx!(self, key, side, me, &*opp, conn_id, idx, self.now, false);
        if wire > 0 {
            let before = Outcome::of(&cx.e().counters);
            cx.datagram(payload, u64::from(wire), kind == Kind::Other);
            before.classify(&mut cx.e().counters);
        }
        self.touch(idx, kind.list());
    }

    fn handle_tcp(
        &mut self,
        frame: &RawPacket<'_>,
        seg: &TcpSegment<'_>,
        flow: &FlowOf,
        ip_len: u32,
    ) {
        let ts = frame.ts;
        let side = flow.side;
        let f = seg.flags;
        let pure_syn = f.syn() && !f.ack();
        let idx = match self.find_flow(flow) {
            Some(i) => {
                let reuse = pure_syn
                    && self.table.get(i).is_some_and(|c| {
                        let t = &c.dirs[side.index()];
                        c.closing.is_some()
                            || match t.isn() {
                                Some(isn) => isn != seg.seq,
                                None => t.started() && t.base() != Some(seg.seq.wrapping_add(1)),
                            }
                    });
                if reuse {
                    self.terminate(i, EndReason::Evicted);
                    self.create_conn(frame, flow, side, Kind::Tcp)
                } else {
                    i
                }
            }
            None => {
                let orig = if f.syn() && f.ack() {
                    side.other()
                } else {
                    side
                };
                self.create_conn(frame, flow, orig, Kind::Tcp)
            }
        };
        self.begin_packet(idx, side, ip_len, ts);
        let wire = u64::from(seg.payload_wire_len);
        let Some((key, conn)) = self.table.entry_mut(idx) else {
            return;
        };
        let is_orig = side == conn.orig_side;
        if pure_syn && is_orig {
            conn.handshake |= 1;
        }
        if f.syn() && f.ack() && !is_orig {
            conn.handshake |= 2;
        }
        let h = &mut conn.history;
        if f.syn() {
            h.push(if f.ack() { b'H' } else { b'S' }, is_orig);
        }
        if f.fin() {
            h.push(b'F', is_orig);
        }
        if f.rst() {
            h.push(b'R', is_orig);
        }
        if wire > 0 {
            h.push(b'D', is_orig);
        } else if f.ack() && !f.syn() && !f.fin() && !f.rst() {
            h.push(b'A', is_orig);
        }
        let handshake_ok = conn.handshake == 3;
        let conn_id = conn.conn_id;
        let (me, opp) = pair(&mut conn.dirs, side);
        me.window = seg.window;

        if f.rst() {
            if rst_valid(me, opp, seg.seq) {
                conn.closing.get_or_insert(EndReason::Rst);
                mark_closing(conn);
            } else {
                me.errors.insert(StreamErrors::INVALID_RST);
                self.stats.invalid_rsts += 1;
            }
            let list = if conn.closing.is_some() {
                ListId::Closing
            } else {
                ListId::Tcp
            };
            self.touch(idx, list);
            return;
        }
        if f.syn() {
            if !me.has(F_ISN) {
                me.isn = seg.seq;
                me.set_flag(F_ISN, true);
            }
            // A SYN fixes the stream start unless data already did.
            if !me.started() || (me.tcp().next == 0 && me.tcp().max_end == 0) {
                me.set_base(seg.seq.wrapping_add(1));
            }
            me.wscale = seg.window_scale.unwrap_or(0);
            me.set_flag(F_WSCALE, seg.window_scale.is_some());
            if f.ack() && !opp.started() {
                opp.set_base(seg.ack);
            }
        }
        let data_seq = seg.seq.wrapping_add(u32::from(f.syn()));
        if !me.started() && (wire > 0 || f.fin()) {
            me.set_base(data_seq);
        }
        let gap_before = me.errors.contains(StreamErrors::GAP);
        let mut retransmitted = false;
        if wire > 0 {
            let off = me.offset_of(data_seq).unwrap_or(0);
            let p = me.params(&self.defaults);
            let reject = p.mode == ReassemblyMode::Strict && !handshake_ok;
            let may_deliver = !reject && !me.has(F_DISCARD) && me.tcp().next < p.cutoff;
            let x = me.x(&self.defaults);
            if self.cfg.need_packets
                && may_deliver
                && self.budget.try_charge(std::mem::size_of::<PacketRecord>())
            {
                x.buf_mut().packets.push(PacketRecord {
                    ts,
                    offset: off.max(0) as u64,
                    len: wire as u32,
                    ip_len,
                    seq: seg.seq,
                    ack: seg.ack,
                    flags: f.0,
                    window: seg.window,
                });
            }
            let before = Outcome::of(&x.counters);
            let mut cx = cx!(self, key, side, &mut *me, &*opp, conn_id, idx, self.now, reject);
            cx.tcp_data(off, seg.payload, wire, &self.cfg);
            let c = &mut cx.e().counters;
            before.classify(c);
            retransmitted = c.retransmitted > before.retransmitted;
        }
        if f.fin() && me.tcp().fin.is_none() {
            // Like a receiver, accept a FIN only inside the receive window:
            // not below what was delivered, not past the window.
            let window = receive_window(me, opp);
            match me.offset_of(data_seq.wrapping_add(wire as u32)) {
                Some(off)
                    if off >= me.tcp().next as i64
                        && off as u64 <= me.tcp().max_end.saturating_add(window) =>
                {
                    let fin = off as u64;
                    let x = me.x(&self.defaults);
                    x.tcp.fin = Some(fin);
                    // The FIN's sequence number proves every byte before it was
                    // sent: bytes not seen by then are missing, not absent.
                    x.tcp.max_end = x.tcp.max_end.max(fin);
                    if x.tcp.max_end > fin {
                        // Stored bytes past the FIN are not part of the stream.
                        if let Some(a) = x.ooo.as_mut() {
                            a.truncate_from(fin, &mut self.budget);
                        }
                        x.tcp.max_end = fin;
                        me.errors.insert(StreamErrors::DATA_AFTER_FIN);
                    }
                    if opp.tcp().fin.is_some() {
                        conn.closing.get_or_insert(EndReason::Fin);
                    }
                }
                _ => me.errors.insert(StreamErrors::BAD_SEQ),
            }
        }
        if me.tcp().fin.is_some() {
            let mut cx = cx!(self, key, side, &mut *me, &*opp, conn_id, idx, self.now, false);
            cx.complete_at_fin();
        }
        if retransmitted {
            conn.history.push(b'T', is_orig);
        }
        if !gap_before && me.errors.contains(StreamErrors::GAP) {
            conn.history.push(b'G', is_orig);
        }
        // The acknowledgment tells what the peer's stream has reached.
        if f.ack() {
            let window = receive_window(opp, me);
            if let Some(a) = opp.offset_of(seg.ack) {
                // Only acknowledgments inside the window count (an ACK of the
                // FIN acknowledges one past the last byte).
                let t = opp.tcp();
                let a = t.fin.map_or(a, |fin| a.min(fin as i64));
                if a > 0 && (a as u64) > t.acked && a as u64 <= t.max_end.saturating_add(window) {
                    let t = &mut opp.x(&self.defaults).tcp;
                    t.acked = a as u64;
                    // The receiver has bytes the capture never showed: they
                    // were sent, so they are part of the stream (missing).
                    t.max_end = t.max_end.max(a as u64);
                }
            }
            if opp.params(&self.defaults).mode == ReassemblyMode::Fast
                && opp.ooo_waiting()
                && opp.tcp().acked > opp.tcp().next
            {
                let mut cx = cx!(
                    self,
                    key,
                    side.other(),
                    opp,
                    &*me,
                    conn_id,
                    idx,
                    self.now,
                    false
                );
                let acked = cx.me.tcp().acked;
                while cx.next() < acked && cx.skip_hole() {}
                cx.complete_at_fin();
                if opp.errors.contains(StreamErrors::GAP) {
                    conn.history.push(b'G', !is_orig);
                }
            }
        }
        let list = if conn.closing.is_some() {
            mark_closing(conn);
            ListId::Closing
        } else {
            ListId::Tcp
        };
        self.touch(idx, list);
    }

    fn expire(&mut self) {
        let now = self.now;
        while let Some(&Reverse((deadline, slot, id, side))) = self.flush.peek() {
            if deadline > now.0 {
                break;
            }
            self.flush.pop();
            self.flush_stream(slot, id, if side == 0 { Side::A } else { Side::B });
        }
        let lists = [
            (ListId::Tcp, self.cfg.tcp_timeout),
            (ListId::Udp, self.cfg.udp_timeout),
            (ListId::Other, self.cfg.other_timeout),
            (ListId::Closing, self.cfg.close_linger),
        ];
        let mut next = Timestamp(u64::MAX);
        for (list, timeout) in lists {
            while let Some((idx, last)) = self.table.oldest(list) {
                let deadline = last.add_nanos(timeout);
                if deadline > now {
                    next = next.min(deadline);
                    break;
                }
                self.terminate(idx, EndReason::Timeout);
            }
        }
        self.next_check = next;
        self.defrag.expire(now);
    }

    /// Marks a flow active now and as belonging to `list`, keeping
    /// `next_check` a lower bound of every queue's next deadline.
    #[inline]
    fn touch(&mut self, idx: u32, list: ListId) {
        if self.table.touch(idx, list, self.now) {
            self.note_deadline(list);
        }
    }

    /// Lowers `next_check` to the deadline of a flow of `list` queued now.
    fn note_deadline(&mut self, list: ListId) {
        let timeout = match list {
            ListId::Tcp => self.cfg.tcp_timeout,
            ListId::Udp => self.cfg.udp_timeout,
            ListId::Other => self.cfg.other_timeout,
            ListId::Closing => self.cfg.close_linger,
        };
        self.next_check = self.next_check.min(self.now.add_nanos(timeout));
    }

    fn flush_stream(&mut self, slot: u32, id: u64, side: Side) {
        let now = self.now;
        let Some((key, conn)) = self.table.entry_mut(slot) else {
            return;
        };
        if conn.conn_id != id {
            return;
        }
        let (me, opp) = pair(&mut conn.dirs, side);
        let pending = me
            .ext
            .as_ref()
            .and_then(|e| e.buf.as_ref())
            .and_then(|b| b.pending_since);
        let (Some(since), Some(ft)) = (pending, me.params(&self.defaults).flush_timeout) else {
            return;
        };
        if since.add_nanos(ft) > now {
            self.flush
                .push(Reverse((since.0.saturating_add(ft), slot, id, side as u8)));
            return;
        }
        let mut cx = cx!(self, key, side, me, &*opp, id, slot, now, false);
        cx.deliver(DataReason::FlushTimeout);
    }

    /// Ends a connection: final data, termination events, flow-end event.
    fn terminate(&mut self, idx: u32, reason: EndReason) {
        let Some((key, mut conn)) = self.table.remove(idx) else {
            return;
        };
        let reason = conn.closing.unwrap_or(reason);
        let conn_id = conn.conn_id;
        for side in [conn.orig_side, conn.orig_side.other()] {
            let (me, opp) = pair(&mut conn.dirs, side);
            if me.has(F_CREATED) {
                if conn.kind == Kind::Tcp && conn.handshake != 3 {
                    me.errors.insert(StreamErrors::NO_HANDSHAKE);
                }
                let reject = me.params(&self.defaults).mode == ReassemblyMode::Strict
                    && conn.kind == Kind::Tcp
                    && conn.handshake != 3;
                let mut cx = cx!(self, &key, side, me, &*opp, conn_id, idx, self.now, reject);
                cx.finish();
                if cx.me.errors.contains(StreamErrors::GAP) {
                    // Holes given up at termination are gaps too.
                    conn.history.push(b'G', side == conn.orig_side);
                }
                cx.me.status = StreamStatus::Closed(reason);
                if H::WANTS_ON_CLOSE {
                    cx.call(|h, s| h.on_close(s));
                }
                self.stats.totals.add(&me.counters());
                self.stats.chunks += me.ext.as_ref().map_or(0, |e| e.chunks);
            } else {
                me.status = StreamStatus::Closed(reason);
            }
            if let Some(e) = me.ext.as_deref_mut() {
                if let Some(b) = e.buf.as_mut() {
                    b.clear(&mut self.budget, &mut self.pool);
                }
                if let Some(a) = e.ooo.as_mut() {
                    a.clear(&mut self.budget);
                }
            }
        }
        let (first, last) = (conn.first(), conn.last());
        let mut letters = [0u8; 16];
        let history = conn.history.render(&mut letters);
        let (a, b) = conn.dirs.split_at_mut(1);
        let (o, r) = match conn.orig_side {
            Side::A => (&mut a[0], &mut b[0]),
            Side::B => (&mut b[0], &mut a[0]),
        };
        let (oi, ri) = (
            o.info(conn_id, &self.defaults),
            r.info(conn_id, &self.defaults),
        );
        let mut fe = FlowEnd {
            key: &key,
            orig_side: conn.orig_side,
            orig: &oi,
            resp: &ri,
            orig_state: &mut o.user,
            resp_state: &mut r.user,
            history,
            first,
            last,
        };
        self.handler.on_flow_end(&mut fe);
        self.stats.flows_ended[end_index(reason)] += 1;
    }

    /// Ends the input: every open connection terminates (`eof`, or how it
    /// closed if it was lingering), and the final statistics are returned.
    pub fn finish(&mut self) -> GlobalStats {
        // No packet comes after this: nothing needs to find a flow by key.
        // (Freed first, so that the memory peak stays where it was.)
        self.table.release_index();
        // Terminate in order of creation for a deterministic event order.
        // (Serials grow with insertion, so insertion order is that order.)
        let slots = self
            .table
            .slots_in_insertion_order()
            .unwrap_or_else(|| self.table.slots_by(|c| c.conn_id));
        debug_assert!(
            slots.windows(2).all(|w| {
                let id = |i| self.table.get(i).map(|c: &Conn<H::State>| c.conn_id);
                id(w[0]) < id(w[1])
            }),
            "connections terminate in the order they were created"
        );
        // Creation order is not memory order: each connection's lines are
        // prefetched a few connections ahead (its record, then its
        // extensions, which the record points to), so that their misses
        // overlap instead of stalling each termination in turn.
        for (n, &idx) in slots.iter().enumerate() {
            if let Some((k, c)) = slots.get(n + 2 * FINISH_AHEAD).and_then(|&i| {
                self.table.warm_expiry(i);
                self.table.entry(i)
            }) {
                std::hint::black_box(k.proto());
                c.warm();
            }
            if let Some((_, c)) = slots
                .get(n + FINISH_AHEAD)
                .and_then(|&i| self.table.entry(i))
            {
                for e in c.dirs.iter().filter_map(|d| d.ext.as_deref()) {
                    e.warm();
                }
            }
            self.terminate(idx, EndReason::Eof);
        }
        self.flush.clear();
        // Datagrams still waiting for fragments will never complete: count them.
        self.defrag.expire(Timestamp(u64::MAX));
        self.stats()
    }
}

/// The parameters a stream of direction `dir` starts with.
fn params_for(cfg: &Config, dir: Direction) -> StreamParams {
    StreamParams {
        cutoff: cfg.cutoff_for(dir),
        priority: cfg.priority,
        chunk_size: cfg.chunk_size.max(1),
        delivery: cfg.delivery,
        overlap: cfg.overlap,
        flush_timeout: cfg.flush_timeout,
        policy: cfg.policy,
        mode: cfg.mode,
    }
}

/// The counters that tell what became of a packet's payload, taken before
/// the payload is processed.
struct Outcome {
    dropped: u64,
    discarded: u64,
    captured: u64,
    retransmitted: u64,
}

impl Outcome {
    fn of(c: &StreamCounters) -> Outcome {
        Outcome {
            dropped: c.dropped,
            discarded: c.discarded,
            captured: c.captured,
            retransmitted: c.retransmitted,
        }
    }

    /// Counts the packet as dropped, discarded or captured, by what its
    /// payload added to the counters since `self` was taken.
    fn classify(&self, c: &mut StreamCounters) {
        if c.dropped > self.dropped {
            c.pkts_dropped += 1;
        } else if c.discarded > self.discarded {
            c.pkts_discarded += 1;
        } else if c.captured > self.captured {
            c.pkts_captured += 1;
        }
    }
}

/// An RST is honoured when its sequence number lies in the receive window
/// (RFC 793/5961), or when the sender's sequence space is unknown.
fn rst_valid<S>(me: &DirState<S>, peer: &DirState<S>, seq: u32) -> bool {
    let Some(off) = me.offset_of(seq) else {
        return true;
    };
    let window = receive_window(me, peer);
    let t = me.tcp();
    let acked = if t.acked > 0 {
        t.acked.min(t.next)
    } else {
        t.next
    };
    let lower = acked as i64 - 1;
    off >= lower && off <= t.max_end.saturating_add(window).min(i64::MAX as u64) as i64
}

/// The window the peer advertised for `me`'s bytes (scaled when both SYNs
/// carried the option), or the largest possible when the peer was never seen.
fn receive_window<S>(me: &DirState<S>, peer: &DirState<S>) -> u64 {
    if peer.window == 0 && !peer.started() {
        u64::from(u16::MAX) << 14
    } else {
        let scale = match (me.wscale(), peer.wscale()) {
            (Some(_), Some(s)) => s,
            _ => 0,
        };
        (u64::from(peer.window) << scale).max(1)
    }
}

/// Marks both directions of a closed (lingering) connection as closing.
fn mark_closing<S>(conn: &mut Conn<S>) {
    if let Some(reason) = conn.closing {
        for d in &mut conn.dirs {
            if d.status == StreamStatus::Active {
                d.status = StreamStatus::Closing(reason);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An idle connection (handshake, no payload) is what a busy link holds
    /// most of: its record must stay small (libnids spends about 346 bytes
    /// on one; the issue's target is 256 bytes per connection all in).
    #[test]
    fn connection_footprint() {
        use std::mem::size_of;
        let dir = size_of::<DirState<()>>();
        let conn = size_of::<Conn<()>>();
        // With 16 bytes of user state per direction (the CLI's is 8).
        let cli = size_of::<Conn<[usize; 2]>>();
        eprintln!(
            "direction {dir}, connection {conn} ({cli} with 16 bytes of user state per \
             direction), extension at the first payload byte {}",
            size_of::<Ext>()
        );
        assert!(dir <= 48, "{dir}");
        assert!(conn <= 120, "{conn}");
        assert!(cli <= 152, "{cli}");
    }

    /// `History::push` maps each letter to its position in
    /// `HISTORY_LETTERS` (the match there and the table must agree).
    #[test]
    fn history_letters_match_their_bits() {
        for (i, &c) in HISTORY_LETTERS.iter().enumerate() {
            for orig in [true, false] {
                let mut h = History::default();
                h.push(c, orig);
                assert_eq!(h.seen, 1 << (i + if orig { 0 } else { 8 }), "{}", c as char);
            }
        }
    }

    /// Every flow's end as text: key, reason, history and both directions'
    /// descriptors (for comparing two runs).
    #[derive(Default)]
    struct Ends(Vec<String>);

    impl crate::deliver::Handler for Ends {
        type State = ();
        fn on_flow_end(&mut self, f: &mut crate::deliver::FlowEnd<'_, ()>) {
            self.0.push(format!(
                "{:?} {} {} {:?} {:?}",
                f.key(),
                f.end_reason().name(),
                f.history(),
                f.stream(Direction::Orig),
                f.stream(Direction::Resp)
            ));
        }
    }

    /// The statistics-only fast path (`Cx::discard_in_order`) gives exactly
    /// what the general path gives: on an impaired campus trace (reordering,
    /// loss, duplicates, conflicting retransmissions), every flow's
    /// descriptors and the global statistics are the same with it and
    /// without it, for cutoffs that make it apply.
    #[test]
    fn fast_path_equals_general_path() {
        use crate::source::{FileSource, PacketSource};

        let pcap = streamcap_gen::Campus::new(streamcap_gen::CampusConfig {
            seed: 13,
            packets: 15_000,
            concurrency: 200,
            reorder: 0.05,
            duplicate: 0.05,
            loss: 0.02,
            conflict: 0.02,
            ..streamcap_gen::CampusConfig::default()
        })
        .to_bytes()
        .0;
        let run = |cfg: &Config, general_only: bool| {
            GENERAL_PATH_ONLY.with(|c| c.set(general_only));
            let mut src = FileSource::from_bytes("fast-path", pcap.clone()).expect("pcap");
            let mut w = Worker::new(cfg.clone(), Ends::default());
            while let Some(p) = src.next_packet() {
                w.process(&p.expect("generated pcap is valid"));
            }
            let stats = w.finish();
            GENERAL_PATH_ONLY.with(|c| c.set(false));
            (w.into_handler().0, format!("{stats:?}"))
        };
        for cfg in [
            Config {
                cutoff: Some(0),
                ..Config::default()
            },
            Config {
                cutoff: Some(300),
                mode: ReassemblyMode::Strict,
                ..Config::default()
            },
        ] {
            let cfg = Config {
                measure_processing_time: false,
                ..cfg
            };
            let (fast, general) = (run(&cfg, false), run(&cfg, true));
            assert!(!fast.0.is_empty());
            assert_eq!(fast.1, general.1, "statistics, cutoff {:?}", cfg.cutoff);
            assert!(fast.0 == general.0, "flow ends, cutoff {:?}", cfg.cutoff);
        }
    }

    /// The batch path (plain IPv4 frames read straight from their bytes)
    /// gives the same flows and statistics as the general path, on
    /// generated traffic with VLAN tags, IPv6, fragments, reordering and
    /// loss, and on every capture of the corpus when it is present.
    #[test]
    fn fast_path_equals_general_path_in_batches() {
        use crate::source::{FileSource, PacketSource};

        let generated = streamcap_gen::Campus::new(streamcap_gen::CampusConfig {
            seed: 17,
            packets: 20_000,
            concurrency: 300,
            reorder: 0.05,
            loss: 0.02,
            fragment: 0.05,
            ipv6: 0.2,
            vlan: 0.2,
            ..streamcap_gen::CampusConfig::default()
        })
        .to_bytes()
        .0;
        let mut traces = vec![("generated".to_string(), generated)];
        let (corpus, files) = crate::corpus_captures();
        if files.is_empty() {
            crate::skip(format!(
                "the corpus part: no captures under {}",
                corpus.display()
            ));
        }
        for f in files {
            if let Ok(bytes) = std::fs::read(&f) {
                traces.push((f.display().to_string(), bytes));
            }
        }
        let cfg = Config {
            cutoff: Some(0),
            measure_processing_time: false,
            ..Config::default()
        };
        let run = |bytes: &[u8], general_only: bool| {
            GENERAL_PATH_ONLY.with(|c| c.set(general_only));
            let mut w = Worker::new(cfg.clone(), Ends::default());
            if let Ok(mut src) = FileSource::from_bytes("batch", bytes.to_vec()) {
                loop {
                    let mut batch = Vec::new();
                    let failed = src.next_batch(&mut batch, 32).is_some();
                    w.process_batch(&batch);
                    if failed || batch.is_empty() {
                        break;
                    }
                }
            }
            let stats = w.finish();
            GENERAL_PATH_ONLY.with(|c| c.set(false));
            (w.into_handler().0, format!("{stats:?}"))
        };
        let mut flows = 0;
        for (name, bytes) in &traces {
            let (fast, general) = (run(bytes, false), run(bytes, true));
            assert_eq!(fast.1, general.1, "statistics of {name}");
            assert!(fast.0 == general.0, "flows of {name}");
            flows += fast.0.len();
        }
        assert!(flows > 1000, "{flows} flows");
    }
}
