//! The application's side: callbacks for stream creation, data, termination
//! and the end of a whole connection.

use super::{Chunk, OwnedChunk, Returns, Stream, StreamInfo};
use crate::flow::{Direction, FlowKey, Side};
use crate::time::Timestamp;
use std::net::IpAddr;

/// A connection that has ended, with both directions' descriptors, passed to
/// [`Handler::on_flow_end`] after the termination events of its streams.
pub struct FlowEnd<'a, S> {
    pub(crate) key: &'a FlowKey,
    pub(crate) orig_side: Side,
    pub(crate) orig: &'a StreamInfo,
    pub(crate) resp: &'a StreamInfo,
    pub(crate) orig_state: &'a mut S,
    pub(crate) resp_state: &'a mut S,
    pub(crate) history: &'a str,
    pub(crate) first: Timestamp,
    pub(crate) last: Timestamp,
    /// An active-timeout report of an open connection, not its end.
    pub(crate) update: bool,
}

impl<S> FlowEnd<'_, S> {
    /// The connection's key.
    pub fn key(&self) -> &FlowKey {
        self.key
    }
    /// Initiator address and port.
    pub fn orig_endpoint(&self) -> (IpAddr, u16) {
        self.key.endpoint(self.orig_side)
    }
    /// Responder address and port.
    pub fn resp_endpoint(&self) -> (IpAddr, u16) {
        self.key.endpoint(self.orig_side.other())
    }
    /// The descriptor of one direction (check `created` for a direction with no packet).
    pub fn stream(&self, dir: Direction) -> &StreamInfo {
        match dir {
            Direction::Orig => self.orig,
            Direction::Resp => self.resp,
        }
    }
    /// The user state of one direction.
    pub fn state(&mut self, dir: Direction) -> &mut S {
        match dir {
            Direction::Orig => self.orig_state,
            Direction::Resp => self.resp_state,
        }
    }
    /// Zeek-style history letters (TCP): uppercase for the initiator, lowercase
    /// for the responder: `S` SYN, `H` SYN-ACK, `A` pure ACK, `D` data, `F` FIN,
    /// `R` RST, `T` retransmission, `G` gap, `C`... each letter at most once per direction.
    pub fn history(&self) -> &str {
        self.history
    }
    /// Time of the connection's first packet.
    pub fn first_ts(&self) -> Timestamp {
        self.first
    }
    /// Time of the connection's last packet.
    pub fn last_ts(&self) -> Timestamp {
        self.last
    }
    /// The protocol number.
    pub fn proto(&self) -> u8 {
        self.key.proto()
    }
    /// Whether this is an active-timeout report of a connection still
    /// open ([`Handler::on_flow_update`]), not its end.
    pub fn is_update(&self) -> bool {
        self.update
    }

    /// Why the connection ended (taken from the orig descriptor's status;
    /// `Eof` for an update).
    pub fn end_reason(&self) -> super::EndReason {
        match (self.orig.status, self.resp.status) {
            (super::StreamStatus::Closed(r), _) | (_, super::StreamStatus::Closed(r)) => r,
            _ => super::EndReason::Eof,
        }
    }
}

/// Stream event callbacks (Scap `scap_dispatch_creation`, `_data`,
/// `_termination`), plus a per-connection end event.
///
/// All methods have empty defaults: implement the ones you need. Each stream
/// (one direction of a connection) gets exactly one `on_create` (at its first
/// packet), any number of `on_data`, and exactly one `on_close`; then the
/// connection gets one `on_flow_end`. Callbacks run on the worker that owns the
/// connection, in packet order.
pub trait Handler {
    /// Per-stream application state (Scap `user_state`), created with `Default`.
    type State: Default;

    /// Whether the handler implements [`on_create`](Self::on_create). A
    /// handler that does not can say `false`: the engine then skips the call
    /// and the two stream descriptors it builds for it, which matters when
    /// connections are many and short (a SYN flood makes a stream per
    /// packet). With `false`, `on_create` is never called.
    const WANTS_ON_CREATE: bool = true;

    /// Like [`WANTS_ON_CREATE`](Self::WANTS_ON_CREATE), for
    /// [`on_close`](Self::on_close). The stream's final descriptor still
    /// reaches [`on_flow_end`](Self::on_flow_end).
    const WANTS_ON_CLOSE: bool = true;

    /// A stream saw its first packet.
    fn on_create(&mut self, stream: &mut Stream<'_, Self::State>) {
        let _ = stream;
    }
    /// New stream data is available.
    fn on_data(&mut self, stream: &mut Stream<'_, Self::State>, chunk: &Chunk<'_>) {
        let _ = (stream, chunk);
    }
    /// A stream terminated; its counters are final.
    fn on_close(&mut self, stream: &mut Stream<'_, Self::State>) {
        let _ = stream;
    }
    /// A connection ended; both directions' descriptors are final.
    fn on_flow_end(&mut self, flow: &mut FlowEnd<'_, Self::State>) {
        let _ = flow;
    }
    /// A connection is still open at its active timeout
    /// ([`crate::Config::active_timeout`]): its descriptors as they are
    /// now (cumulative counters), for a periodic record. Connections
    /// that end before their timeout get none; a connection gets one per
    /// interval it stays open.
    fn on_flow_update(&mut self, flow: &mut FlowEnd<'_, Self::State>) {
        let _ = flow;
    }
    /// Whether the handler takes each chunk by value
    /// ([`on_chunk_owned`](Self::on_chunk_owned)) instead of borrowing it
    /// ([`on_data`](Self::on_data)): for handlers that pass chunks to
    /// another thread, as the analysis stage does
    /// ([`crate::dispatch::analysis`]). With `true`, bytes are never
    /// delivered in place (segment delivery copies them into a buffer
    /// first), the engine ignores `keep_chunk` (the handler implements it),
    /// and every chunk's `charged` bytes stay charged to the budget until
    /// the handler gives them back (from `on_chunk_owned` or through
    /// [`collect_returns`](Self::collect_returns)).
    const TAKES_CHUNKS: bool = false;

    /// New stream data, by value (only with
    /// [`TAKES_CHUNKS`](Self::TAKES_CHUNKS)). Returns how many of the
    /// chunk's [`charged`](OwnedChunk::charged) bytes the engine may give
    /// back to the budget at once; the others must come back through
    /// [`collect_returns`](Self::collect_returns). The default lends the
    /// chunk to [`on_data`](Self::on_data) and returns all of them.
    fn on_chunk_owned(&mut self, stream: &mut Stream<'_, Self::State>, chunk: OwnedChunk) -> usize {
        self.on_data(stream, &chunk.as_chunk());
        chunk.charged
    }

    /// Called by the engine before it processes packets (each packet, or
    /// each batch read from a file): the handler adds what it gives back —
    /// budget bytes to release, buffers to reuse, decisions taken in
    /// callbacks on another thread — to `returns`, which the engine applies
    /// before the next packet. Handlers that run callbacks in place have
    /// nothing to return.
    fn collect_returns(&mut self, returns: &mut Returns) {
        let _ = returns;
    }

    /// Live capture only: called between packets after each block the
    /// kernel hands over, and at least every
    /// [`POLL_INTERVAL`](crate::dispatch::live::POLL_INTERVAL) while the link
    /// is idle — a chance to flush buffered output. Never called for files.
    fn on_tick(&mut self) {}
}

type CreateFn<S> = Box<dyn FnMut(&mut Stream<'_, S>)>;
type DataFn<S> = Box<dyn FnMut(&mut Stream<'_, S>, &Chunk<'_>)>;
type FlowFn<S> = Box<dyn FnMut(&mut FlowEnd<'_, S>)>;

/// A [`Handler`] made of closures, for short programs:
///
/// ```
/// use streamcap::deliver::Callbacks;
/// let mut bytes = 0u64;
/// let cb = Callbacks::<()>::new().on_data(move |_s, chunk| bytes += chunk.new_data().len() as u64);
/// # let _ = cb;
/// ```
pub struct Callbacks<S = ()> {
    create: Option<CreateFn<S>>,
    data: Option<DataFn<S>>,
    close: Option<CreateFn<S>>,
    flow_end: Option<FlowFn<S>>,
}

impl<S> Default for Callbacks<S> {
    fn default() -> Self {
        Callbacks {
            create: None,
            data: None,
            close: None,
            flow_end: None,
        }
    }
}

impl<S: Default> Callbacks<S> {
    /// No callbacks.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets the creation callback.
    pub fn on_create(mut self, f: impl FnMut(&mut Stream<'_, S>) + 'static) -> Self {
        self.create = Some(Box::new(f));
        self
    }
    /// Sets the data callback.
    pub fn on_data(mut self, f: impl FnMut(&mut Stream<'_, S>, &Chunk<'_>) + 'static) -> Self {
        self.data = Some(Box::new(f));
        self
    }
    /// Sets the termination callback.
    pub fn on_close(mut self, f: impl FnMut(&mut Stream<'_, S>) + 'static) -> Self {
        self.close = Some(Box::new(f));
        self
    }
    /// Sets the connection-end callback.
    pub fn on_flow_end(mut self, f: impl FnMut(&mut FlowEnd<'_, S>) + 'static) -> Self {
        self.flow_end = Some(Box::new(f));
        self
    }
}

impl<S: Default> Handler for Callbacks<S> {
    type State = S;
    fn on_create(&mut self, s: &mut Stream<'_, S>) {
        if let Some(f) = &mut self.create {
            f(s)
        }
    }
    fn on_data(&mut self, s: &mut Stream<'_, S>, c: &Chunk<'_>) {
        if let Some(f) = &mut self.data {
            f(s, c)
        }
    }
    fn on_close(&mut self, s: &mut Stream<'_, S>) {
        if let Some(f) = &mut self.close {
            f(s)
        }
    }
    fn on_flow_end(&mut self, fe: &mut FlowEnd<'_, S>) {
        if let Some(f) = &mut self.flow_end {
            f(fe)
        }
    }
}
