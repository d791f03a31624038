//! The decoupled analysis stage (Scap's split between the kernel module,
//! which captures and reassembles, and the user-level worker threads,
//! which run the application's callbacks).
//!
//! [`Decoupled`] is a [`Handler`] for a worker: on the worker's thread (the
//! *capture stage*) it turns every event into a message and hands it to
//! one of its *analysis threads*, where the application's own handler runs.
//! A connection's events all go to the same analysis thread, in order, so a
//! handler sees exactly the event sequence it would see inline.
//!
//! ```text
//! worker thread: source ─► decode ─► flows ─► reassembly ─► Decoupled
//!                                                  ▲            │ events (chunks by value)
//!                                                  │            ▼
//!                  budget bytes, buffers, decisions └── analysis thread(s): your Handler
//! ```
//!
//! - **Memory.** Chunks travel by value ([`OwnedChunk`]): the buffer the
//!   engine filled is the one the callback reads, and it comes back to the
//!   worker's pool; no byte is copied twice. A chunk stays charged to the
//!   worker's memory budget until the analysis thread is done with it, so
//!   the budget bounds the bytes queued for analysis too, and prioritized
//!   packet loss ([`crate::deliver::overload`]) sees analysis falling behind
//!   as memory filling up. The queue of each analysis thread is bounded
//!   ([`QUEUE_BATCHES`] batches of up to [`BATCH_EVENTS`] events); when it is
//!   full the capture stage waits (the bound is far above what the budget
//!   lets queue in chunks: only a flood of events without payload reaches
//!   it, while the analysis has stalled).
//! - **Decisions.** A callback's `discard`, `set_cutoff`, `set_priority`,
//!   `set_chunk_size` and the other setters travel back and apply from the
//!   next packet the worker processes after they arrive (Scap's semantics:
//!   the capture stage never waits for the application). Until then the
//!   worker goes on with the stream's earlier settings, so bytes that
//!   arrive in the meantime are accounted as those settings say (captured
//!   rather than discarded, for instance); the analysis thread sees its own
//!   decisions at once in later events of the stream.
//! - **`keep_chunk`** is kept by the analysis thread: it holds the chunk
//!   (still charged to the budget) and hands the next one over joined to it,
//!   as Scap does; joining copies the new bytes once more. A gap releases
//!   the kept bytes, as inline. The engine does not hold kept bytes, so a
//!   retransmission that contradicts them is not flagged `overlap_conflict`
//!   (as with segment delivery; contradictions among bytes not yet
//!   delivered are flagged alike).
//! - **Events are sent in batches**: when a batch is full, when it holds
//!   [`BATCH_BYTES`] of chunks, and before each packet or batch of packets
//!   the worker processes while the analysis thread waits for work (so an
//!   idle analysis thread gets the events of a packet before the worker's
//!   next packet, a busy one gets them in batches), at each live-capture
//!   tick, and at the end.
//! - **A panic** of an analysis thread is raised again on the worker's
//!   thread before its next packet (its queued chunks, and their memory,
//!   are lost with it).
//!
//! What differs from running the handler inline: `StreamInfo::processing_ns`
//! counts the capture stage's hand-off, not the callback; `Stream::opposite`
//! is the opposite direction as it was when the event was sent.

mod lane;
mod returns;

use crate::deliver::{Chunk, FlowEnd, Handler, OwnedChunk, Returns, Stream, StreamInfo, StreamRef};
use crate::flow::{FlowKey, Side};
use crate::handoff::send_soon;
use crate::time::Timestamp;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Most events in one batch handed to an analysis thread.
pub const BATCH_EVENTS: usize = 64;
/// A batch holding this many bytes of chunks is sent at once.
pub const BATCH_BYTES: usize = 256 << 10;
/// Batches queued for one analysis thread at most; a capture stage that
/// finds the queue full waits. Batches are small while the analysis keeps
/// up (an idle analysis thread gets each event at once), so the bound is
/// set far above what the memory budget lets queue in chunks: it only
/// stops a flood of events without payload (at most 64 Ki events, some
/// 40 MiB of descriptors) when the analysis has stalled.
pub const QUEUE_BATCHES: usize = 1024;
/// Most analysis threads per worker.
pub const MAX_ANALYSIS_THREADS: usize = 64;

/// One stream's event, as sent to an analysis thread.
pub(crate) struct StreamEvent {
    stream: StreamRef,
    key: FlowKey,
    info: StreamInfo,
    opposite: StreamInfo,
}

/// A connection's end, as sent to an analysis thread.
pub(crate) struct FlowEvent {
    key: FlowKey,
    orig_side: Side,
    orig: StreamInfo,
    resp: StreamInfo,
    history: String,
    first: Timestamp,
    last: Timestamp,
    /// An active-timeout report, not the end.
    update: bool,
}

impl FlowEvent {
    /// The event of a connection's end or update, for the analysis thread.
    fn of(f: &FlowEnd<'_, ()>) -> FlowEvent {
        FlowEvent {
            key: *f.key,
            orig_side: f.orig_side,
            orig: f.orig.clone(),
            resp: f.resp.clone(),
            history: f.history.to_string(),
            first: f.first,
            last: f.last,
            update: f.update,
        }
    }
}

/// A message to an analysis thread.
pub(crate) enum Event {
    Create(StreamEvent),
    Data(StreamEvent, OwnedChunk),
    Close(StreamEvent),
    FlowEnd(Box<FlowEvent>),
    Tick,
}

/// What an analysis thread sends back after a batch.
pub(crate) struct Back {
    lane: usize,
    /// The batch's vector, empty, for reuse.
    batch: Vec<Event>,
    returns: Returns,
}

/// The counters of a run's analysis stage.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AnalysisStats {
    /// Analysis threads.
    pub threads: usize,
    /// Events handed to them.
    pub events: u64,
    /// Batches handed to them.
    pub batches: u64,
    /// Times the capture stage found an analysis thread's queue full and waited.
    pub stalls: u64,
    /// Time the capture stage spent waiting on full queues, nanoseconds.
    pub stall_ns: u64,
    /// Decisions that came back from callbacks.
    pub decisions: u64,
}

/// The capture stage's end of one analysis thread.
struct Lane<H> {
    tx: Option<SyncSender<Vec<Event>>>,
    pending: Vec<Event>,
    pending_bytes: usize,
    /// The analysis thread waits for a batch.
    idle: Arc<AtomicBool>,
    thread: Option<JoinHandle<H>>,
    spare: Vec<Vec<Event>>,
}

/// A [`Handler`] that runs another handler's callbacks on analysis threads
/// of their own (see the [module documentation](self)).
///
/// ```
/// use streamcap::dispatch::analysis::Decoupled;
/// use streamcap::{Capture, Chunk, Handler, Stream};
///
/// #[derive(Default)]
/// struct Bytes(u64);
/// impl Handler for Bytes {
///     type State = ();
///     fn on_data(&mut self, _s: &mut Stream<'_, ()>, chunk: &Chunk<'_>) {
///         self.0 += chunk.new_data().len() as u64;
///     }
/// }
///
/// let stage = Decoupled::spawn(1, |_thread| Bytes::default())?;
/// let report = Capture::builder().build().run_file("../../samples/sample.pcap", stage)?;
/// let (handlers, _stats) = report.handler.finish();
/// assert_eq!(handlers[0].0, report.stats.totals.captured);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Decoupled<H: Handler + Send + 'static> {
    lanes: Vec<Lane<H>>,
    back: Receiver<Back>,
    /// Batches sent whose answer has not come back.
    outstanding: usize,
    /// Answers received by [`Decoupled::settle`], not yet collected.
    received: Vec<Back>,
    stats: AnalysisStats,
}

impl<H: Handler + Send + 'static> Decoupled<H> {
    /// Starts `threads` analysis threads (1 to [`MAX_ANALYSIS_THREADS`]),
    /// thread `i` running the handler `make(i)` returns. Connections are
    /// spread between them by serial number.
    pub fn spawn(threads: usize, mut make: impl FnMut(usize) -> H) -> std::io::Result<Self> {
        let threads = threads.clamp(1, MAX_ANALYSIS_THREADS);
        let (back_tx, back) = mpsc::channel();
        let mut lanes = Vec::with_capacity(threads);
        for i in 0..threads {
            let (tx, rx) = mpsc::sync_channel(QUEUE_BATCHES);
            let idle = Arc::new(AtomicBool::new(true));
            let handler = make(i);
            let (idle2, back_tx) = (idle.clone(), back_tx.clone());
            let thread = std::thread::Builder::new()
                .name(format!("streamcap-analysis-{i}"))
                .spawn(move || lane::run(i, handler, &rx, &back_tx, &idle2))?;
            lanes.push(Lane {
                tx: Some(tx),
                pending: Vec::with_capacity(BATCH_EVENTS),
                pending_bytes: 0,
                idle,
                thread: Some(thread),
                spare: Vec::new(),
            });
        }
        Ok(Decoupled {
            lanes,
            back,
            outstanding: 0,
            received: Vec::new(),
            stats: AnalysisStats {
                threads,
                ..AnalysisStats::default()
            },
        })
    }

    /// The counters so far.
    pub fn stats(&self) -> &AnalysisStats {
        &self.stats
    }

    /// Hands every gathered event over and waits until the analysis
    /// threads have handled all events sent so far: the worker's next
    /// packet then sees every decision taken until now. For tests and for
    /// applications that need callbacks to act as if they ran inline at a
    /// given point; a capture that waits for its analysis is no longer
    /// decoupled from it.
    pub fn settle(&mut self) {
        for i in 0..self.lanes.len() {
            self.send(i);
        }
        while self.outstanding > 0 {
            match self.back.recv_timeout(Duration::from_millis(20)) {
                Ok(b) => {
                    self.outstanding -= 1;
                    self.received.push(b);
                }
                // A thread that died never answers: its panic is raised.
                Err(RecvTimeoutError::Timeout) => self.check_threads(),
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
    }

    /// Raises again, on the capture stage's thread, the panic of an
    /// analysis thread that has ended while the stage still runs: its
    /// queued chunks are lost and their memory with them, so going on
    /// would drop every later byte.
    fn check_threads(&mut self) {
        for lane in &mut self.lanes {
            if lane.tx.is_some() && lane.thread.as_ref().is_some_and(JoinHandle::is_finished) {
                if let Some(Err(p)) = lane.thread.take().map(JoinHandle::join) {
                    std::panic::resume_unwind(p);
                }
            }
        }
    }

    /// Hands every event still gathered to its thread, waits until the
    /// threads have handled all of them, and returns their handlers (in
    /// thread order) with the stage's counters. Call it after the run
    /// ([`crate::Worker::finish`] sends the last events). A panic of an
    /// analysis thread is raised again here.
    pub fn finish(mut self) -> (Vec<H>, AnalysisStats) {
        self.join()
    }

    /// [`Decoupled::finish`] in place: afterwards the stage has no thread
    /// and hands nothing over.
    pub fn join(&mut self) -> (Vec<H>, AnalysisStats) {
        let handlers = self.join_threads();
        (handlers, self.stats.clone())
    }

    fn join_threads(&mut self) -> Vec<H> {
        for i in 0..self.lanes.len() {
            self.send(i);
        }
        for lane in &mut self.lanes {
            lane.tx = None;
        }
        let mut handlers = Vec::new();
        let mut panic = None;
        for lane in &mut self.lanes {
            if let Some(t) = lane.thread.take() {
                match t.join() {
                    Ok(h) => handlers.push(h),
                    Err(p) => panic = panic.or(Some(p)),
                }
            }
        }
        while let Ok(b) = self.back.try_recv() {
            self.stats.decisions += b.returns.decisions.len() as u64;
        }
        if let Some(p) = panic {
            std::panic::resume_unwind(p);
        }
        handlers
    }

    /// The lane of a connection.
    fn lane_of(&self, conn_id: u64) -> usize {
        (conn_id % self.lanes.len() as u64) as usize
    }

    /// Adds `event` to its lane's batch, sending the batch when it is full.
    fn push(&mut self, conn_id: u64, event: Event, bytes: usize) {
        let i = self.lane_of(conn_id);
        let lane = &mut self.lanes[i];
        lane.pending.push(event);
        lane.pending_bytes += bytes;
        if lane.pending.len() >= BATCH_EVENTS || lane.pending_bytes >= BATCH_BYTES {
            self.send(i);
        }
    }

    /// Sends lane `i`'s batch, waiting while its queue is full.
    fn send(&mut self, i: usize) {
        let lane = &mut self.lanes[i];
        if lane.pending.is_empty() {
            return;
        }
        let Some(tx) = lane.tx.as_ref() else {
            return;
        };
        let next = lane
            .spare
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(BATCH_EVENTS));
        let batch = std::mem::replace(&mut lane.pending, next);
        self.stats.events += batch.len() as u64;
        self.stats.batches += 1;
        lane.pending_bytes = 0;
        self.outstanding += 1;
        match tx.try_send(batch) {
            Ok(()) => {}
            Err(TrySendError::Full(batch)) => {
                let t0 = Instant::now();
                // The thread is gone only after a panic, raised by `finish`.
                let _ = send_soon(tx, batch);
                self.stats.stalls += 1;
                self.stats.stall_ns += t0.elapsed().as_nanos() as u64;
            }
            // Only after a panic: raised at once.
            Err(TrySendError::Disconnected(_)) => self.check_threads(),
        }
    }

    fn stream_event<S>(s: &Stream<'_, S>) -> StreamEvent {
        StreamEvent {
            stream: s.stream_ref(),
            key: *s.key(),
            info: s.info().clone(),
            opposite: s.opposite().clone(),
        }
    }
}

impl<H: Handler + Send + 'static> Drop for Decoupled<H> {
    fn drop(&mut self) {
        if self.lanes.iter().any(|l| l.thread.is_some()) && !std::thread::panicking() {
            let _ = self.join_threads();
        }
    }
}

impl<H: Handler + Send + 'static> Handler for Decoupled<H> {
    type State = ();
    const WANTS_ON_CREATE: bool = H::WANTS_ON_CREATE;
    const WANTS_ON_CLOSE: bool = H::WANTS_ON_CLOSE;
    const TAKES_CHUNKS: bool = true;

    fn on_create(&mut self, s: &mut Stream<'_, ()>) {
        let ev = Self::stream_event(s);
        self.push(ev.info.conn_id, Event::Create(ev), 0);
    }

    fn on_data(&mut self, s: &mut Stream<'_, ()>, chunk: &Chunk<'_>) {
        // Only reached if the engine lends a chunk (it does not with
        // `TAKES_CHUNKS`): copied into a buffer of its own, uncharged.
        let owned = OwnedChunk {
            data: chunk.data.to_vec(),
            offset: chunk.offset,
            new_from: chunk.new_from,
            reason: chunk.reason,
            gap: chunk.gap,
            packets: chunk.packets.to_vec(),
            charged: 0,
        };
        let _ = self.on_chunk_owned(s, owned);
    }

    fn on_chunk_owned(&mut self, s: &mut Stream<'_, ()>, chunk: OwnedChunk) -> usize {
        let ev = Self::stream_event(s);
        let bytes = chunk.data.len();
        self.push(ev.info.conn_id, Event::Data(ev, chunk), bytes);
        // Given back by the analysis thread when it is done with it.
        0
    }

    fn on_close(&mut self, s: &mut Stream<'_, ()>) {
        let ev = Self::stream_event(s);
        self.push(ev.info.conn_id, Event::Close(ev), 0);
    }

    fn on_flow_end(&mut self, f: &mut FlowEnd<'_, ()>) {
        let ev = FlowEvent::of(f);
        let conn_id = ev.orig.conn_id;
        self.push(conn_id, Event::FlowEnd(Box::new(ev)), 0);
    }

    fn on_flow_update(&mut self, f: &mut FlowEnd<'_, ()>) {
        let ev = FlowEvent::of(f);
        let conn_id = ev.orig.conn_id;
        self.push(conn_id, Event::FlowEnd(Box::new(ev)), 0);
    }

    fn on_tick(&mut self) {
        for i in 0..self.lanes.len() {
            let lane = &mut self.lanes[i];
            lane.pending.push(Event::Tick);
            self.send(i);
        }
    }

    fn collect_returns(&mut self, returns: &mut Returns) {
        let settled = std::mem::take(&mut self.received);
        let arrived = std::iter::from_fn(|| {
            let b = self.back.try_recv().ok();
            self.outstanding -= usize::from(b.is_some());
            b
        });
        for mut b in settled.into_iter().chain(arrived) {
            returns.released += b.returns.released;
            returns.buffers.append(&mut b.returns.buffers);
            self.stats.decisions += b.returns.decisions.len() as u64;
            returns.decisions.append(&mut b.returns.decisions);
            if let Some(lane) = self.lanes.get_mut(b.lane) {
                if lane.spare.len() < 4 {
                    lane.spare.push(b.batch);
                }
            }
        }
        self.check_threads();
        // An analysis thread waiting for work gets what is gathered now.
        for i in 0..self.lanes.len() {
            let lane = &self.lanes[i];
            if !lane.pending.is_empty() && lane.idle.load(Ordering::Relaxed) {
                self.send(i);
            }
        }
    }
}
