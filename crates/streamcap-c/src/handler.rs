//! The [`Handler`] that calls the C callbacks: it fills an `sc_stream_t`
//! on the worker's stack, records the callback in a thread-local context
//! that the stream control calls check and write to, calls the C
//! function, and then applies what the callback asked for to the stream.
//!
//! The stream control calls (`sc_discard_stream`, …) never touch the
//! engine directly: they record a request in the context, and the handler
//! applies it when the callback returns. The engine reads a stream's
//! settings only after its callback has returned, so this is exactly what
//! calling the Rust [`Stream`] methods from inside the callback would do.

use crate::error::Error;
use crate::{
    sc_callback_t, sc_pkthdr_t, sc_stream_t, sc_t, SC_AF_INET, SC_AF_INET6, SC_DATA_CUTOFF,
    SC_DATA_FLUSH_TIMEOUT, SC_DATA_FULL, SC_DATA_GAP, SC_DATA_PACKET, SC_DATA_SEGMENT,
    SC_DATA_TERMINATION, SC_DELIVERY_CHUNKS, SC_DELIVERY_SEGMENTS, SC_DIR_ORIG, SC_DIR_RESP,
    SC_END_EOF, SC_END_EVICTED, SC_END_FIN, SC_END_NONE, SC_END_RST, SC_END_TIMEOUT,
    SC_STATUS_ACTIVE, SC_STATUS_CLOSED, SC_STATUS_CLOSING, SC_TCP_FAST, SC_TCP_STRICT,
    SC_UNLIMITED,
};
use std::cell::RefCell;
use std::ffi::{c_char, c_void};
use std::net::IpAddr;
use streamcap_core::config::ReassemblyMode;
use streamcap_core::deliver::{Chunk, Handler, PacketRecord, Stream};
use streamcap_core::deliver::{DataReason, Delivery, EndReason, StreamInfo, StreamStatus};
use streamcap_core::flow::Direction;

/// A registered callback: the C function and its `user` pointer (kept as
/// an address so that the handler can move to a worker thread; C owns
/// what it points to).
#[derive(Copy, Clone)]
pub(crate) struct Callback {
    pub(crate) f: sc_callback_t,
    pub(crate) user: usize,
}

/// The C program's per-stream state (`sc_stream_t::user_state`), as an
/// address: streamcap never dereferences it.
#[derive(Default)]
pub(crate) struct UserState(usize);

/// Which callback is running.
#[derive(Copy, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    Create,
    Data,
    Close,
}

/// What the stream control calls asked for during one callback, applied
/// to the stream when it returns.
#[derive(Default)]
pub(crate) struct Pending {
    pub(crate) discard: bool,
    pub(crate) keep: bool,
    pub(crate) cutoff: Option<Option<u64>>,
    pub(crate) priority: Option<u8>,
    pub(crate) chunk_size: Option<usize>,
    pub(crate) overlap: Option<usize>,
    pub(crate) flush_timeout: Option<Option<u64>>,
    pub(crate) mode: Option<ReassemblyMode>,
    pub(crate) delivery: Option<Delivery>,
}

impl Pending {
    fn apply(self, s: &mut Stream<'_, UserState>) {
        if let Some(c) = self.cutoff {
            s.set_cutoff(c);
        }
        if let Some(p) = self.priority {
            s.set_priority(p);
        }
        if let Some(c) = self.chunk_size {
            s.set_chunk_size(c);
        }
        if let Some(o) = self.overlap {
            s.set_overlap(o);
        }
        if let Some(f) = self.flush_timeout {
            s.set_flush_timeout(f);
        }
        if let Some(m) = self.mode {
            s.set_mode(m);
        }
        if let Some(d) = self.delivery {
            s.set_delivery(d);
        }
        if self.discard {
            s.discard();
        }
        if self.keep {
            s.keep_chunk();
        }
    }
}

/// The callback running on this thread: which handle and descriptor it
/// was given (compared by address, never dereferenced), and what the
/// control calls may read or record.
pub(crate) struct Ctx {
    sc: usize,
    sd: usize,
    pub(crate) event: Event,
    pub(crate) pending: Pending,
    /// The data callback's packet records (`need_packets`).
    packets: Vec<PacketRecord>,
    /// The next record `sc_next_stream_packet` returns.
    next_packet: usize,
    /// The data callback's chunk: start, length, stream offset.
    data: *const u8,
    data_len: usize,
    data_offset: u64,
}

thread_local! {
    /// The callback this thread is running, if any.
    static CURRENT: RefCell<Option<Ctx>> = const { RefCell::new(None) };
}

/// Runs `f` on the context of the callback running on this thread, if it
/// was given descriptor `sd` and (unless `sc` is `None`) handle `sc`;
/// fails with `SC_ERR_STATE` otherwise (outside any callback, or for
/// another stream or handle).
pub(crate) fn with_current<R>(
    sc: Option<*const sc_t>,
    sd: *const sc_stream_t,
    f: impl FnOnce(&mut Ctx) -> Result<R, Error>,
) -> Result<R, Error> {
    if sc.is_some_and(|p| p.is_null()) || sd.is_null() {
        return Err(Error::invalid("sc and sd must not be NULL"));
    }
    CURRENT
        .try_with(|cur| {
            let mut cur = cur.borrow_mut();
            match cur.as_mut() {
                Some(ctx) if ctx.sd == sd as usize && sc.is_none_or(|p| ctx.sc == p as usize) => {
                    f(ctx)
                }
                Some(_) => Err(Error::state(
                    "only valid for the stream (and handle) the running callback was given",
                )),
                None => Err(Error::state(
                    "only valid inside a creation, data or termination callback",
                )),
            }
        })
        .unwrap_or_else(|_| Err(Error::state("the thread is shutting down")))
}

/// The next packet record of the running data callback (for
/// `sc_next_stream_packet`): its header and a pointer to its payload bytes
/// that are in the chunk (`sd->data` itself when none is).
pub(crate) fn next_packet(ctx: &mut Ctx) -> Option<(sc_pkthdr_t, *const u8)> {
    let r = *ctx.packets.get(ctx.next_packet)?;
    ctx.next_packet += 1;
    let end = ctx.data_offset + ctx.data_len as u64;
    let (start, caplen) = if r.offset >= ctx.data_offset && r.offset < end {
        let start = (r.offset - ctx.data_offset) as usize;
        (start, (ctx.data_len - start).min(r.len as usize))
    } else {
        (0, 0)
    };
    let h = sc_pkthdr_t {
        ts_ns: r.ts.as_nanos(),
        offset: r.offset,
        len: r.len,
        caplen: caplen as u32,
        ip_len: r.ip_len,
        seq: r.seq,
        ack: r.ack,
        window: r.window,
        flags: r.flags,
    };
    Some((h, ctx.data.wrapping_add(start)))
}

/// The handler of one worker: the registered callbacks and the handle
/// they are given.
pub(crate) struct CHandler {
    /// The `sc_t *` passed to every callback, as an address.
    pub(crate) sc: usize,
    pub(crate) create: Option<Callback>,
    pub(crate) data: Option<Callback>,
    pub(crate) close: Option<Callback>,
    /// `SC_PARAM_TEST_PANIC` 1: panic at the first stream's creation.
    pub(crate) test_panic: bool,
    /// Storage for the data callbacks' packet records, reused.
    pub(crate) packets: Vec<PacketRecord>,
}

impl CHandler {
    /// Fills a descriptor for `s` (and one for its opposite direction),
    /// makes it the thread's current callback, calls `cb`, and applies what
    /// the callback asked for.
    fn call(
        &mut self,
        cb: Callback,
        event: Event,
        s: &mut Stream<'_, UserState>,
        chunk: Option<&Chunk<'_>>,
    ) {
        let (src, dst, proto) = (s.src(), s.dst(), s.proto());
        let mut opposite = sc_stream_t::empty();
        describe(&mut opposite, s.opposite(), dst, src, proto);
        let mut sd = sc_stream_t::empty();
        describe(&mut sd, s.info(), src, dst, proto);
        sd.opposite = &opposite;
        sd.user_state = s.state().0 as *mut c_void;
        let mut packets = std::mem::take(&mut self.packets);
        packets.clear();
        if let Some(c) = chunk {
            sd.data = c.data.as_ptr();
            sd.data_len = c.data.len();
            sd.data_offset = c.offset;
            sd.data_new = c.new_from;
            sd.data_reason = reason_code(c.reason);
            if let Some(g) = c.gap {
                sd.gap_offset = g.offset;
                sd.gap_len = g.len;
            }
            packets.extend_from_slice(c.packets);
        }
        let sd_ptr: *mut sc_stream_t = &mut sd;
        let ctx = Ctx {
            sc: self.sc,
            sd: sd_ptr as usize,
            event,
            pending: Pending::default(),
            packets,
            next_packet: 0,
            data: sd.data,
            data_len: sd.data_len,
            data_offset: sd.data_offset,
        };
        // A callback of another handle may run a capture of its own on
        // this thread (it would have its own workers, but keep it exact).
        let outer = CURRENT.with(|c| c.replace(Some(ctx)));
        if let Some(f) = cb.f {
            // SAFETY: `f` was registered by the C program as a function of
            // this type (sc_dispatch_*), which the header documents must
            // not unwind; it gets the handle it was registered on (alive:
            // sc_close refuses while a capture runs), a descriptor on this
            // stack frame that outlives the call, and its own `user`
            // pointer back unchanged.
            unsafe { f(self.sc as *mut sc_t, sd_ptr, cb.user as *mut c_void) };
        }
        let ctx = CURRENT.with(|c| c.replace(outer));
        s.state().0 = sd.user_state as usize;
        if let Some(ctx) = ctx {
            ctx.pending.apply(s);
            self.packets = ctx.packets;
        }
    }
}

impl Handler for CHandler {
    type State = UserState;

    fn on_create(&mut self, s: &mut Stream<'_, UserState>) {
        if self.test_panic {
            panic!("SC_PARAM_TEST_PANIC: a panic forced inside the library, in a worker thread");
        }
        if let Some(cb) = self.create {
            self.call(cb, Event::Create, s, None);
        }
    }

    fn on_data(&mut self, s: &mut Stream<'_, UserState>, chunk: &Chunk<'_>) {
        if let Some(cb) = self.data {
            self.call(cb, Event::Data, s, Some(chunk));
        }
    }

    fn on_close(&mut self, s: &mut Stream<'_, UserState>) {
        if let Some(cb) = self.close {
            self.call(cb, Event::Close, s, None);
        }
    }
}

/// The `SC_DATA_*` code of a data event's reason.
fn reason_code(r: DataReason) -> u8 {
    match r {
        DataReason::Full => SC_DATA_FULL,
        DataReason::FlushTimeout => SC_DATA_FLUSH_TIMEOUT,
        DataReason::Cutoff => SC_DATA_CUTOFF,
        DataReason::Termination => SC_DATA_TERMINATION,
        DataReason::Gap => SC_DATA_GAP,
        DataReason::Packet => SC_DATA_PACKET,
        DataReason::Segment => SC_DATA_SEGMENT,
        // `DataReason` is non-exhaustive; a new reason reads as "full".
        _ => SC_DATA_FULL,
    }
}

/// The `SC_END_*` code of a reason.
fn end_code(r: EndReason) -> u8 {
    match r {
        EndReason::Fin => SC_END_FIN,
        EndReason::Rst => SC_END_RST,
        EndReason::Timeout => SC_END_TIMEOUT,
        EndReason::Eof => SC_END_EOF,
        EndReason::Evicted => SC_END_EVICTED,
    }
}

/// Writes `ip` into `bytes` (network order; IPv4 in the first four) and
/// as text into `text` (NUL-terminated); returns the `SC_AF_*` family.
pub(crate) fn put_addr(ip: IpAddr, bytes: &mut [u8; 16], text: &mut [c_char]) -> u8 {
    let family = match ip {
        IpAddr::V4(a) => {
            bytes[..4].copy_from_slice(&a.octets());
            SC_AF_INET
        }
        IpAddr::V6(a) => {
            bytes.copy_from_slice(&a.octets());
            SC_AF_INET6
        }
    };
    let mut buf = [0u8; 64];
    let n = {
        let mut w: &mut [u8] = &mut buf;
        let room = w.len();
        let _ = std::io::Write::write_fmt(&mut w, format_args!("{ip}"));
        room - w.len()
    };
    // The longest address text is 45 characters; `text` has room for it
    // and the NUL (SC_ADDR_TEXT_LEN).
    let n = n.min(text.len().saturating_sub(1));
    for (d, s) in text.iter_mut().zip(&buf[..n]) {
        *d = *s as c_char;
    }
    if let Some(nul) = text.get_mut(n) {
        *nul = 0;
    }
    family
}

/// Fills the Table I fields of `sd` from a stream's descriptor.
fn describe(
    sd: &mut sc_stream_t,
    info: &StreamInfo,
    src: (IpAddr, u16),
    dst: (IpAddr, u16),
    proto: u8,
) {
    sd.family = put_addr(src.0, &mut sd.src_addr, &mut sd.src_ip);
    put_addr(dst.0, &mut sd.dst_addr, &mut sd.dst_ip);
    sd.src_port = src.1;
    sd.dst_port = dst.1;
    sd.protocol = proto;
    sd.direction = match info.direction {
        Direction::Orig => SC_DIR_ORIG,
        Direction::Resp => SC_DIR_RESP,
    };
    sd.created = u8::from(info.created);
    sd.conn_id = info.conn_id;
    sd.start_ns = info.start.as_nanos();
    sd.end_ns = info.end.as_nanos();
    let c = &info.counters;
    sd.pkts = c.pkts;
    sd.bytes = c.bytes;
    sd.stream_bytes = c.stream_bytes;
    sd.bytes_captured = c.captured;
    sd.bytes_discarded = c.discarded;
    sd.bytes_dropped = c.dropped;
    sd.bytes_missing = c.missing;
    sd.pkts_captured = c.pkts_captured;
    sd.pkts_discarded = c.pkts_discarded;
    sd.pkts_dropped = c.pkts_dropped;
    sd.bytes_retransmitted = c.retransmitted;
    sd.overlap_conflicts = c.overlap_conflicts;
    (sd.status, sd.end_reason) = match info.status {
        StreamStatus::Active => (SC_STATUS_ACTIVE, SC_END_NONE),
        StreamStatus::Closing(r) => (SC_STATUS_CLOSING, end_code(r)),
        StreamStatus::Closed(r) => (SC_STATUS_CLOSED, end_code(r)),
    };
    sd.cutoff_exceeded = u8::from(info.cutoff_exceeded);
    sd.discarded = u8::from(info.is_discarded());
    sd.error = info.errors.0;
    let p = &info.params;
    sd.cutoff = if p.cutoff == u64::MAX {
        SC_UNLIMITED
    } else {
        i64::try_from(p.cutoff).unwrap_or(i64::MAX)
    };
    sd.priority = p.priority;
    sd.chunk_size = p.chunk_size as u64;
    sd.overlap = p.overlap as u64;
    sd.reassembly_mode = match p.mode {
        ReassemblyMode::Fast => SC_TCP_FAST as u8,
        ReassemblyMode::Strict => SC_TCP_STRICT as u8,
    };
    sd.delivery = match p.delivery {
        Delivery::Segments => SC_DELIVERY_SEGMENTS as u8,
        _ => SC_DELIVERY_CHUNKS as u8,
    };
    sd.chunks = info.chunks;
    sd.processing_time_ns = info.processing_ns;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SC_ADDR_TEXT_LEN;

    fn text(t: &[c_char]) -> String {
        t.iter()
            .take_while(|c| **c != 0)
            .map(|c| *c as u8 as char)
            .collect()
    }

    #[test]
    fn addresses_as_bytes_and_text() {
        let mut b = [0u8; 16];
        let mut t = [1 as c_char; SC_ADDR_TEXT_LEN];
        assert_eq!(
            put_addr("192.168.1.42".parse().unwrap(), &mut b, &mut t),
            SC_AF_INET
        );
        assert_eq!(&b[..4], &[192, 168, 1, 42]);
        assert_eq!(text(&t), "192.168.1.42");
        // The longest text an IPv6 address can have, 45 characters.
        let long: IpAddr = "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255"
            .parse()
            .unwrap();
        assert_eq!(put_addr(long, &mut b, &mut t), SC_AF_INET6);
        assert_eq!(b, [0xff; 16]);
        let s = text(&t);
        assert!(s.len() <= 45, "{s}");
        assert_eq!(s.parse::<IpAddr>().unwrap(), long);
        assert_eq!(t[s.len()], 0);
    }

    #[test]
    fn control_calls_outside_a_callback_are_refused() {
        let sd = sc_stream_t::empty();
        let sc = std::ptr::dangling::<sc_t>();
        let e = with_current(Some(sc), &sd, |_| Ok(())).unwrap_err();
        assert_eq!(e.code, crate::SC_ERR_STATE);
        let e = with_current(None, &sd, |_| Ok(())).unwrap_err();
        assert_eq!(e.code, crate::SC_ERR_STATE);
        let e = with_current(Some(std::ptr::null()), &sd, |_| Ok(())).unwrap_err();
        assert_eq!(e.code, crate::SC_ERR_INVALID);
    }
}
