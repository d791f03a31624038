//! One direction of a connection: its compact always-present state
//! ([`DirState`]) and the extension a stream with payload allocates
//! ([`Ext`]: sequence progress, parameters, counters, chunk buffer and
//! out-of-order store).

use super::Direction;
use crate::config::Config;
use crate::deliver::{
    ChunkBuf, Gap, StreamCounters, StreamErrors, StreamInfo, StreamParams, StreamStatus,
};
use crate::reassembly::assembler::Assembler;
use crate::reassembly::tcp::{offset_of, TcpSeq};
use crate::time::Timestamp;

/// Flag bits of [`DirState::flags`].
pub(crate) const F_ORIG: u8 = 1;
pub(crate) const F_CREATED: u8 = 2;
pub(crate) const F_DISCARD: u8 = 4;
pub(crate) const F_KEEP: u8 = 8;
pub(crate) const F_CUTOFF: u8 = 16;
pub(crate) const F_BASE: u8 = 32;
pub(crate) const F_ISN: u8 = 64;
pub(crate) const F_WSCALE: u8 = 128;

/// One direction of a connection, compact: what a stream that has carried
/// no payload needs. Everything else (the remaining counters, the sequence
/// progress, the parameters when they differ from the worker's defaults,
/// the chunk buffer and the out-of-order store) is in [`Ext`], allocated at
/// the first payload byte (or FIN, or parameter change). The public
/// [`StreamInfo`] is built from both right before a callback.
pub(crate) struct DirState<S> {
    pub(crate) ext: Option<Box<Ext>>,
    pub(crate) start: Timestamp,
    pub(crate) end: Timestamp,
    /// Packets and IP bytes while `ext` is `None` (then in `ext.counters`).
    pub(crate) pkts: u32,
    pub(crate) bytes: u32,
    /// Sequence number of stream offset 0 (valid with `F_BASE`): the byte
    /// after the SYN, or the first byte seen when picked up mid-stream.
    pub(crate) base: u32,
    /// Initial sequence number from a SYN (valid with `F_ISN`).
    pub(crate) isn: u32,
    /// Last advertised window of this direction's sender (unscaled).
    pub(crate) window: u16,
    pub(crate) errors: StreamErrors,
    pub(crate) status: StreamStatus,
    /// Window scale from this sender's SYN (valid with `F_WSCALE`).
    pub(crate) wscale: u8,
    pub(crate) flags: u8,
    pub(crate) user: S,
}

/// The part of a direction's state that only a stream with payload needs.
/// In `repr(C)` order, what every payload packet reads first: the sequence
/// progress, the out-of-order store, the parameters and the counters fill
/// the first three cache lines.
#[repr(C)]
pub(crate) struct Ext {
    pub(crate) tcp: TcpSeq,
    pub(crate) ooo: Option<Box<Assembler>>,
    pub(crate) params: StreamParams,
    pub(crate) counters: StreamCounters,
    pub(crate) chunks: u64,
    pub(crate) processing_ns: u64,
    /// Created at the first byte buffered (inline: a payload packet reaches
    /// it through one pointer, the extension's).
    pub(crate) buf: Option<ChunkBuf>,
    /// This direction's entry in the flow-drop map (subzero copy).
    pub(crate) subzero: crate::subzero::Entry,
}

pub(crate) static NO_SEQ: TcpSeq = TcpSeq {
    next: 0,
    max_end: 0,
    fin: None,
    acked: 0,
};

impl<S: Default> DirState<S> {
    pub(crate) fn new(dir: Direction) -> Self {
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
    pub(crate) fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }
    #[inline]
    pub(crate) fn set_flag(&mut self, f: u8, on: bool) {
        if on {
            self.flags |= f;
        } else {
            self.flags &= !f;
        }
    }
    pub(crate) fn dir(&self) -> Direction {
        if self.has(F_ORIG) {
            Direction::Orig
        } else {
            Direction::Resp
        }
    }
    #[inline]
    pub(crate) fn base(&self) -> Option<u32> {
        self.has(F_BASE).then_some(self.base)
    }
    #[inline]
    pub(crate) fn set_base(&mut self, base: u32) {
        self.base = base;
        self.flags |= F_BASE;
    }
    pub(crate) fn isn(&self) -> Option<u32> {
        self.has(F_ISN).then_some(self.isn)
    }
    pub(crate) fn wscale(&self) -> Option<u8> {
        self.has(F_WSCALE).then_some(self.wscale)
    }
    /// Whether the stream start is known.
    #[inline]
    pub(crate) fn started(&self) -> bool {
        self.has(F_BASE)
    }
    /// The sequence progress (all zero before the first payload byte or FIN).
    #[inline]
    pub(crate) fn tcp(&self) -> &TcpSeq {
        self.ext.as_ref().map_or(&NO_SEQ, |e| &e.tcp)
    }
    /// The stream offset of `seq`, nearest the delivery point; `None` while
    /// the stream start is unknown.
    #[inline]
    pub(crate) fn offset_of(&self, seq: u32) -> Option<i64> {
        Some(offset_of(self.base()?, self.tcp().next, seq))
    }
    #[inline]
    pub(crate) fn params<'a>(&'a self, defaults: &'a [StreamParams; 2]) -> &'a StreamParams {
        match &self.ext {
            Some(e) => &e.params,
            None => &defaults[self.dir() as usize],
        }
    }
    /// The extension, allocated on first use.
    #[inline]
    pub(crate) fn x(&mut self, defaults: &[StreamParams; 2]) -> &mut Ext {
        if self.ext.is_none() {
            self.alloc_ext(defaults);
        }
        match self.ext.as_deref_mut() {
            Some(e) => e,
            None => unreachable!(),
        }
    }
    #[cold]
    pub(crate) fn alloc_ext(&mut self, defaults: &[StreamParams; 2]) {
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
            subzero: Default::default(),
        }));
    }
    /// Counts packets and their IP bytes.
    #[inline]
    pub(crate) fn count(&mut self, pkts: u64, bytes: u64, defaults: &[StreamParams; 2]) {
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
    pub(crate) fn counters(&self) -> StreamCounters {
        match &self.ext {
            Some(e) => e.counters,
            None => StreamCounters {
                pkts: u64::from(self.pkts),
                bytes: u64::from(self.bytes),
                ..StreamCounters::default()
            },
        }
    }
    pub(crate) fn ooo_waiting(&self) -> bool {
        self.ext
            .as_ref()
            .and_then(|e| e.ooo.as_ref())
            .is_some_and(|a| !a.is_empty())
    }
    /// The public descriptor, built for a callback.
    pub(crate) fn info(&self, conn_id: u64, defaults: &[StreamParams; 2]) -> StreamInfo {
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
    pub(crate) fn write_back(&mut self, info: &StreamInfo, defaults: &[StreamParams; 2]) {
        self.set_flag(F_DISCARD, info.discard);
        self.set_flag(F_KEEP, info.keep);
        if info.params_set && info.params != *self.params(defaults) {
            self.x(defaults).params = info.params;
        }
    }
}

impl Ext {
    /// The chunk buffer, created at the delivery point on first use.
    pub(crate) fn buf_mut(&mut self) -> &mut ChunkBuf {
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
    pub(crate) fn first_gap(&self) -> Option<Gap> {
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
    pub(crate) fn warm(&self) {
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
    pub(crate) fn warm_buffer_end(&self) {
        use prefetch_index::prefetch_index;
        if let Some(b) = &self.buf {
            let end = b.data.len();
            prefetch_index(&b.data, end);
            prefetch_index(&b.data, end + 63);
        }
    }

    pub(crate) fn fresh_len(&self) -> usize {
        self.buf.as_ref().map_or(0, |b| b.fresh_len())
    }
}

/// The parameters a stream of direction `dir` starts with.
pub(crate) fn params_for(cfg: &Config, dir: Direction) -> StreamParams {
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
