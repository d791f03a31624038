//! Live capture from several receive queues with a buddy group (WireCAP,
//! §3.2c): one AF_XDP socket ([`AfXdp`]) and one worker thread per queue,
//! and work moving from a busy worker to an idle buddy.
//!
//! Each thread takes its queue's packets off the RX ring in chunks and
//! either processes them or hands them on, by [`Offload`]:
//!
//! - [`Offload::Off`]: each worker processes its own queue (WireCAP's basic
//!   mode). A connection is tracked by one worker only if the NIC put both
//!   of its directions on one queue (a symmetric RSS key).
//! - [`Offload::Packets`]: WireCAP's mechanism as published: a worker
//!   whose backlog is above the threshold hands each new chunk, whole, to
//!   the least loaded buddy. Right for packet consumers; a connection's
//!   packets may then be processed by two workers.
//! - [`Offload::Flows`]: flow-affine. Every packet goes to the owner of its
//!   flow-hash bucket in an indirection table
//!   ([`crate::dispatch::offload`]), whatever queue it came from, so each
//!   connection is tracked by exactly one worker; a worker whose backlog
//!   is above the threshold moves its busiest buckets, with their
//!   connections' state, to the least loaded buddy.
//!
//! A move follows the ordering rule of [`crate::dispatch::offload`] with
//! markers: the busy worker `A` changes the table and announces the move;
//! every other thread, the next time it looks (before its next chunk),
//! sends `A` a marker behind the packets it routed by the old table and
//! routes by the new one. Once `A` has every marker it has processed every
//! packet routed to it under the old table: it exports the buckets'
//! connections and sends them to the new owner `B`, which holds back
//! whatever it gets from the announcement on until the hand-over is in.
//! Packets are never copied between threads: a chunk is shared (its frames
//! go back to its queue's pool when the last worker is done with it).

use super::workers::{join_workers, pin_current_thread, Parallel, ParallelReport, WorkerReport};
use crate::capture::{Capture, RunHooks, Verdict};
use crate::deliver::Handler;
use crate::dispatch::offload::{
    BucketSet, Buckets, FlowHandover, IndirectionTable, Route, BUCKETS,
};
use crate::dispatch::Worker;
use crate::source::af_xdp::{AfXdp, Chunk};
use crate::source::{LiveError, RawPacket};
use crate::stats::DefragMerge;
use crate::time::Timestamp;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How work moves between the workers of a buddy group.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Offload {
    /// Each worker processes its own queue.
    Off,
    /// A busy worker hands whole chunks to the least loaded buddy.
    Packets,
    /// Packets go to their bucket's owner; a busy worker moves buckets,
    /// with their connections, to the least loaded buddy.
    #[default]
    Flows,
}

impl Offload {
    /// Parses `off`, `packets` or `flows`.
    pub fn parse(s: &str) -> Option<Offload> {
        match s {
            "off" => Some(Offload::Off),
            "packets" => Some(Offload::Packets),
            "flows" => Some(Offload::Flows),
            _ => None,
        }
    }

    /// The mode's name.
    pub fn name(self) -> &'static str {
        match self {
            Offload::Off => "off",
            Offload::Packets => "packets",
            Offload::Flows => "flows",
        }
    }
}

/// A buddy group's settings.
#[derive(Copy, Clone, Debug)]
pub struct BuddyConfig {
    /// How work moves.
    pub offload: Offload,
    /// `T`: a worker whose backlog (packets received and not yet
    /// processed: in its RX ring and handed to it) is above this offloads.
    pub threshold: u64,
    /// The least time between two moves of buckets.
    pub cooldown: Duration,
}

impl Default for BuddyConfig {
    fn default() -> BuddyConfig {
        BuddyConfig {
            offload: Offload::Flows,
            threshold: 4096,
            cooldown: Duration::from_millis(50),
        }
    }
}

/// What a buddy group did, summed over its workers.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct BuddyStats {
    /// Chunks handed whole to a buddy ([`Offload::Packets`]).
    pub chunks_offloaded: u64,
    /// Packets processed by another worker than the one whose queue they
    /// came in on.
    pub packets_handed: u64,
    /// Moves of buckets ([`Offload::Flows`]).
    pub moves: u64,
    /// Buckets moved.
    pub buckets_moved: u64,
    /// Connections moved with them.
    pub flows_moved: u64,
}

impl BuddyStats {
    fn add(&mut self, o: &BuddyStats) {
        self.chunks_offloaded += o.chunks_offloaded;
        self.packets_handed += o.packets_handed;
        self.moves += o.moves;
        self.buckets_moved += o.buckets_moved;
        self.flows_moved += o.flows_moved;
    }
}

/// Messages from buddies taken per turn of a worker's loop.
const INBOX_SHARE: usize = 4;

/// No bucket: a packet of [`Offload::Off`] or [`Offload::Packets`], or an
/// IP fragment (every worker gets it).
const NO_BUCKET: u16 = u16::MAX;

/// What one worker sends another.
enum Msg<S> {
    /// Packets of a shared chunk to process: (index in the chunk, bucket),
    /// routed by the table of move `table` (the latest the sender had
    /// seen).
    Packets {
        chunk: Arc<Chunk>,
        picks: Vec<(u32, u16)>,
        table: u64,
    },
    /// The sender routes by the table of move `id` from now on.
    Marker { id: u64 },
    /// The connections of move `id`'s buckets.
    Handover { id: u64, handover: FlowHandover<S> },
}

/// A move of buckets in progress.
#[derive(Clone)]
struct Move {
    id: u64,
    from: usize,
    to: usize,
    set: BucketSet,
}

/// What the workers share.
struct Shared {
    n: usize,
    cfg: BuddyConfig,
    /// The owners of the buckets, and its version.
    table: Mutex<IndirectionTable>,
    version: AtomicU64,
    /// The latest move announced, kept after it completes (its lock is
    /// held while a move is decided), and its id.
    latest: Mutex<Option<Move>>,
    announced: AtomicU64,
    /// Moves announced and not yet imported by their new owner: a new move
    /// waits until it is 0, so that a worker waits for one hand-over at a
    /// time.
    unfinished: AtomicU64,
    last_move: Mutex<Instant>,
    /// Per worker: its backlog, and packets handed to it not processed yet.
    loads: Vec<AtomicU64>,
    inbound: Vec<AtomicU64>,
    /// Packets processed over all workers, for the packet limit.
    processed: AtomicU64,
    limit: Option<u64>,
}

impl Shared {
    /// The least loaded worker other than `me`, with its load.
    fn least_loaded(&self, me: usize) -> Option<(usize, u64)> {
        (0..self.n)
            .filter(|&j| j != me)
            .map(|j| (j, self.load(j)))
            .min_by_key(|&(_, l)| l)
    }

    fn load(&self, j: usize) -> u64 {
        self.loads[j].load(Ordering::Relaxed) + self.inbound[j].load(Ordering::Relaxed)
    }
}

/// The wall clock as a packet timestamp.
fn wall_clock() -> Timestamp {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    Timestamp::from_secs_nanos(d.as_secs(), u64::from(d.subsec_nanos()))
}

impl Capture {
    /// Runs one worker thread per AF_XDP socket (one per receive queue) as
    /// a buddy group (see the module documentation) until `par.stop` is
    /// set, the packet limit is reached over all workers, a hook stops, or
    /// a socket fails. At the end every open stream is terminated and
    /// delivered; each worker's report has its socket's counters.
    pub fn run_buddies<H, K, F>(
        &self,
        sockets: Vec<AfXdp>,
        par: &Parallel,
        cfg: &BuddyConfig,
        make: F,
    ) -> (ParallelReport<H, K>, BuddyStats)
    where
        H: Handler + Send,
        H::State: Send,
        K: RunHooks + Send,
        F: Fn(usize) -> (H, K) + Sync,
    {
        let n = sockets.len().max(1);
        let mut wcfg = self.config().clone();
        wcfg.memory_size /= n;
        wcfg.max_flows = (wcfg.max_flows / n).max(1);
        let buckets = Buckets::new(&wcfg);
        let table = IndirectionTable::spread(n);
        let shared = Shared {
            n,
            cfg: *cfg,
            table: Mutex::new(table.clone()),
            version: AtomicU64::new(table.version()),
            latest: Mutex::new(None),
            announced: AtomicU64::new(0),
            unfinished: AtomicU64::new(0),
            last_move: Mutex::new(Instant::now()),
            loads: (0..n).map(|_| AtomicU64::new(0)).collect(),
            inbound: (0..n).map(|_| AtomicU64::new(0)).collect(),
            processed: AtomicU64::new(0),
            limit: self.max_packets(),
        };
        let mut senders = Vec::with_capacity(n);
        let mut receivers = Vec::with_capacity(n);
        for _ in 0..n {
            let (tx, rx) = channel::<Msg<H::State>>();
            senders.push(tx);
            receivers.push(rx);
        }
        let barrier = Barrier::new(n);
        let (make, shared, barrier, wcfg, buckets, table, senders) =
            (&make, &shared, &barrier, &wcfg, &buckets, &table, &senders);
        let results = std::thread::scope(|scope| {
            let handles: Vec<_> = sockets
                .into_iter()
                .zip(receivers)
                .enumerate()
                .map(|(i, (socket, inbox))| {
                    let cpu = par.cpu_for(i);
                    let stop = &par.stop;
                    std::thread::Builder::new()
                        .name(format!("streamcap-buddy-{i}"))
                        .spawn_scoped(scope, move || {
                            let pin_error = cpu.and_then(|c| pin_current_thread(c).err());
                            let (handler, hooks) = make(i);
                            let mut worker = Worker::new(wcfg.clone(), handler);
                            if cfg.offload == Offload::Flows {
                                worker = worker
                                    .with_buckets(buckets.clone(), table.buckets_of(i))
                                    .with_conn_ids(i as u64, n as u64);
                            }
                            let mut b = Buddy {
                                me: i,
                                shared,
                                worker,
                                hooks,
                                socket,
                                inbox,
                                outs: senders.clone(),
                                buckets: buckets.clone(),
                                owners: owners_of(table),
                                version: table.version(),
                                seen: 0,
                                my_move: None,
                                markers: 0,
                                pending: None,
                                held: Vec::new(),
                                held_out: Vec::new(),
                                hits: vec![0; BUCKETS],
                                read: 0,
                                halt: false,
                                stats: BuddyStats::default(),
                                last_decision: Instant::now(),
                            };
                            let live_error = b.run(stop, barrier);
                            b.report(pin_error, live_error)
                        })
                })
                .collect();
            join_workers(handles)
        });
        let mut total = BuddyStats::default();
        let reports = results
            .into_iter()
            .map(|(r, s)| {
                total.add(&s);
                r
            })
            .collect();
        let merge = if cfg.offload == Offload::Flows {
            // Every worker defragments every fragment.
            DefragMerge::Replicated
        } else {
            DefragMerge::Sum
        };
        (ParallelReport::from_workers(reports, merge, false), total)
    }
}

/// The owner of every bucket, as a plain array for the router.
fn owners_of(table: &IndirectionTable) -> Vec<u16> {
    (0..BUCKETS as u16).map(|b| table.owner(b) as u16).collect()
}

/// One worker of the group and its queue.
struct Buddy<'a, H: Handler, K> {
    me: usize,
    shared: &'a Shared,
    worker: Worker<H>,
    hooks: K,
    socket: AfXdp,
    inbox: Receiver<Msg<H::State>>,
    outs: Vec<Sender<Msg<H::State>>>,
    buckets: Buckets,
    /// This thread's copy of the table, and its version.
    owners: Vec<u16>,
    version: u64,
    /// The latest move this thread has seen announced.
    seen: u64,
    /// The move this worker makes, and the markers received for it.
    my_move: Option<u64>,
    markers: usize,
    /// The move whose hand-over this worker waits for, and what it holds
    /// back meanwhile.
    pending: Option<u64>,
    held: Vec<Msg<H::State>>,
    /// What this worker, moving buckets away, holds back until its export.
    held_out: Vec<Msg<H::State>>,
    /// Packets processed per bucket lately (halved at each decision).
    hits: Vec<u32>,
    /// Packets taken off this worker's queue.
    read: u64,
    halt: bool,
    stats: BuddyStats,
    last_decision: Instant,
}

impl<H: Handler, K: RunHooks> Buddy<'_, H, K>
where
    H::State: Send,
{
    /// The capture loop, then the shutdown in three steps (everyone
    /// stops sending; a move still waiting for markers completes; everyone
    /// processes what it was sent). Returns the socket error that ended
    /// it, if any.
    fn run(&mut self, stop: &AtomicBool, barrier: &Barrier) -> Option<LiveError> {
        let mut live_error = None;
        while !stop.load(Ordering::Relaxed) && !self.halt {
            self.look_for_moves();
            // A bounded share of what buddies sent, so that a long backlog
            // does not keep this worker from its queue and its decisions.
            for _ in 0..INBOX_SHARE {
                match self.inbox.try_recv() {
                    Ok(msg) => self.handle(msg),
                    Err(_) => break,
                }
            }
            // Short waits: messages from buddies are not seen while the
            // thread waits on its socket.
            let wait = if self.shared.inbound[self.me].load(Ordering::Relaxed) > 0 {
                // Buddies' packets wait: only look at the queue.
                Duration::ZERO
            } else if self.shared.n > 1 {
                Duration::from_millis(1)
            } else {
                Duration::from_millis(100)
            };
            match self.socket.next_chunk(wait) {
                Ok(Some(chunk)) => self.route(chunk),
                Ok(None) => {}
                Err(e) => {
                    live_error = Some(e);
                    break;
                }
            }
            self.worker.advance_clock(wall_clock());
            self.worker.handler_mut().on_tick();
            self.decide();
        }
        stop.store(true, Ordering::Relaxed);
        barrier.wait();
        self.finish_move_at_shutdown();
        barrier.wait();
        self.look_for_moves();
        while let Ok(msg) = self.inbox.try_recv() {
            self.handle(msg);
        }
        // Whatever is still held back (a hand-over that never came) is
        // processed here rather than lost.
        self.pending = None;
        self.my_move = None;
        for msg in std::mem::take(&mut self.held_out) {
            self.handle(msg);
        }
        for msg in std::mem::take(&mut self.held) {
            self.handle(msg);
        }
        live_error
    }

    /// Notices a newly announced move: sends its maker a marker (the
    /// packets routed so far by the old table are ahead of it), takes the
    /// new table, and, as the move's new owner, starts holding back.
    fn look_for_moves(&mut self) {
        let announced = self.shared.announced.load(Ordering::Acquire);
        if announced <= self.seen {
            return;
        }
        self.seen = announced;
        let mv = self
            .shared
            .latest
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        self.refresh_table();
        if let Some(mv) = mv.filter(|m| m.id == announced) {
            if mv.from != self.me {
                let _ = self.outs[mv.from].send(Msg::Marker { id: mv.id });
            }
            if mv.to == self.me {
                self.pending = Some(mv.id);
            }
        }
    }

    fn refresh_table(&mut self) {
        let v = self.shared.version.load(Ordering::Acquire);
        if v != self.version {
            let t = self.shared.table.lock().unwrap_or_else(|e| e.into_inner());
            self.owners = owners_of(&t);
            self.version = t.version();
        }
    }

    /// A message from a buddy (or from this worker to itself).
    fn handle(&mut self, msg: Msg<H::State>) {
        match msg {
            Msg::Packets {
                chunk,
                picks,
                table,
            } => {
                // A buddy that routed these by a newer table announced it
                // before it sent them: look first.
                self.look_for_moves();
                // Routed by the new table while the hand-over is on its
                // way: later. Routed by the old one, they hold none of the
                // moving buckets' packets, only IP fragments every worker
                // gets, which this worker must see as the one that does not
                // own those buckets yet (as the old owner saw them as the
                // one that still did).
                // The old owner likewise keeps what was routed by the new
                // table until its export: IP fragments of the moving
                // buckets among it are no longer its to complete.
                if self.my_move.is_some_and(|id| table >= id) {
                    self.held_out.push(Msg::Packets {
                        chunk,
                        picks,
                        table,
                    });
                    return;
                }
                if self.pending.is_some_and(|id| table >= id) {
                    self.held.push(Msg::Packets {
                        chunk,
                        picks,
                        table,
                    });
                    return;
                }
                self.process(&chunk, &picks);
            }
            Msg::Marker { id } => {
                if self.my_move == Some(id) {
                    self.markers += 1;
                    if self.markers + 1 >= self.shared.n {
                        self.complete_move();
                    }
                }
            }
            Msg::Handover { id, handover } => {
                self.stats.flows_moved += handover.flows() as u64;
                self.worker.import_handover(handover);
                self.shared.unfinished.fetch_sub(1, Ordering::AcqRel);
                if self.pending == Some(id) {
                    self.pending = None;
                    for m in std::mem::take(&mut self.held) {
                        self.handle(m);
                    }
                }
            }
        }
    }

    /// Processes picked packets of a chunk (through the hooks and the
    /// packet limit).
    fn process(&mut self, chunk: &Chunk, picks: &[(u32, u16)]) {
        for &(i, bucket) in picks {
            if self.halt {
                break;
            }
            let Some(pkt) = chunk.packet(i as usize) else {
                continue;
            };
            self.one(&pkt, bucket);
        }
        let inbound = &self.shared.inbound[self.me];
        let n = picks.len() as u64;
        let _ = inbound.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
            Some(v.saturating_sub(n))
        });
    }

    fn one(&mut self, pkt: &RawPacket<'_>, bucket: u16) {
        match self.hooks.inspect(pkt) {
            Verdict::Process => {
                let within = match self.shared.limit {
                    None => true,
                    Some(l) => self.shared.processed.fetch_add(1, Ordering::Relaxed) < l,
                };
                if within {
                    if let Some(h) = self.hits.get_mut(usize::from(bucket)) {
                        *h = h.saturating_add(1);
                    }
                    self.worker.process(pkt);
                } else {
                    self.halt = true;
                }
            }
            Verdict::Skip => {}
            Verdict::Stop => self.halt = true,
        }
    }

    /// Sends picked packets to worker `to` (or keeps them, for this one).
    fn hand(&mut self, to: usize, chunk: &Arc<Chunk>, picks: Vec<(u32, u16)>) {
        if picks.is_empty() {
            return;
        }
        let n = picks.len() as u64;
        self.shared.inbound[to].fetch_add(n, Ordering::Relaxed);
        let msg = Msg::Packets {
            chunk: chunk.clone(),
            picks,
            table: self.seen,
        };
        if to == self.me {
            self.handle(msg);
        } else {
            self.stats.packets_handed += n;
            if let Err(e) = self.outs[to].send(msg) {
                // The buddy is gone (shutting down): process here.
                self.handle(e.0);
            }
        }
    }

    /// What to do with a chunk of this worker's queue.
    fn route(&mut self, chunk: Chunk) {
        // Read once, by the worker of the queue it came in on, however
        // many workers see it (IP fragments go to every one).
        self.read += chunk.len() as u64;
        let chunk = Arc::new(chunk);
        let all = || {
            (0..chunk.len() as u32)
                .map(|i| (i, NO_BUCKET))
                .collect::<Vec<_>>()
        };
        match self.shared.cfg.offload {
            Offload::Off => self.hand(self.me, &chunk, all()),
            Offload::Packets => {
                let mine = self.shared.load(self.me);
                let to = match self.shared.least_loaded(self.me) {
                    Some((j, l)) if mine > self.shared.cfg.threshold && l * 2 < mine => {
                        self.stats.chunks_offloaded += 1;
                        j
                    }
                    _ => self.me,
                };
                self.hand(to, &chunk, all());
            }
            Offload::Flows => {
                // The table and the stamp on what is sent change together,
                // at an announcement.
                self.look_for_moves();
                let mut per: Vec<Vec<(u32, u16)>> = vec![Vec::new(); self.shared.n];
                for i in 0..chunk.len() {
                    let Some(pkt) = chunk.packet(i) else {
                        continue;
                    };
                    match self.buckets.route(&pkt) {
                        Route::Bucket(b) => {
                            let owner = usize::from(self.owners[usize::from(b)]);
                            per[owner.min(self.shared.n - 1)].push((i as u32, b));
                        }
                        Route::Every => {
                            for p in per.iter_mut() {
                                p.push((i as u32, NO_BUCKET));
                            }
                        }
                    }
                }
                // Others first: this worker's own share may take a while.
                for (to, picks) in per.into_iter().enumerate().rev() {
                    self.hand(to, &chunk, picks);
                }
            }
        }
        self.shared.loads[self.me].store(u64::from(self.socket.backlog()), Ordering::Relaxed);
    }

    /// Every few milliseconds: publishes the load and, in flow mode, moves
    /// the busiest buckets to the least loaded buddy when above the
    /// threshold.
    fn decide(&mut self) {
        self.shared.loads[self.me].store(u64::from(self.socket.backlog()), Ordering::Relaxed);
        if self.last_decision.elapsed() < Duration::from_millis(10) {
            return;
        }
        self.last_decision = Instant::now();
        if self.shared.cfg.offload == Offload::Flows && self.shared.n > 1 && self.pending.is_none()
        {
            self.maybe_move();
        }
        for h in self.hits.iter_mut() {
            *h /= 2;
        }
    }

    fn maybe_move(&mut self) {
        let s = self.shared;
        let mine = s.load(self.me);
        if mine <= s.cfg.threshold {
            return;
        }
        let Some((to, theirs)) = s.least_loaded(self.me) else {
            return;
        };
        if theirs * 2 >= mine {
            return;
        }
        let mut latest = s.latest.lock().unwrap_or_else(|e| e.into_inner());
        if s.unfinished.load(Ordering::Acquire) > 0 {
            return;
        }
        {
            let last = s.last_move.lock().unwrap_or_else(|e| e.into_inner());
            if last.elapsed() < s.cfg.cooldown {
                return;
            }
        }
        // The busiest of this worker's buckets, up to half its recent load.
        let owned = self.worker.buckets().cloned().unwrap_or_default();
        let mut busy: Vec<(u32, u16)> = owned
            .iter()
            .map(|b| (self.hits[usize::from(b)], b))
            .filter(|&(h, _)| h > 0)
            .collect();
        if busy.len() < 2 {
            // One bucket (or none) carries the load: moving it moves the
            // problem.
            return;
        }
        busy.sort_unstable_by(|a, b| b.cmp(a));
        let total: u64 = busy.iter().map(|&(h, _)| u64::from(h)).sum();
        let mut set = BucketSet::new();
        let mut taken = 0u64;
        for &(h, b) in &busy {
            if taken + u64::from(h) > total / 2 && !set.is_empty() {
                continue;
            }
            set.insert(b);
            taken += u64::from(h);
        }
        let id = s.announced.load(Ordering::Relaxed) + 1;
        {
            let mut t = s.table.lock().unwrap_or_else(|e| e.into_inner());
            t.assign(&set, to);
            s.version.store(t.version(), Ordering::Release);
        }
        let mv = Move {
            id,
            from: self.me,
            to,
            set,
        };
        s.unfinished.store(1, Ordering::Release);
        *latest = Some(mv);
        drop(latest);
        self.my_move = Some(id);
        self.markers = 0;
        s.announced.store(id, Ordering::Release);
        // This thread routes by the new table from its next chunk on.
        self.seen = id;
        self.refresh_table();
    }

    /// Every other thread has sent its marker: exports the buckets and
    /// sends them to their new owner.
    fn complete_move(&mut self) {
        let s = self.shared;
        let Some(id) = self.my_move.take() else {
            return;
        };
        let mv = s.latest.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let Some(mv) = mv.filter(|m| m.id == id) else {
            return;
        };
        let handover = self.worker.export_buckets(&mv.set);
        self.stats.moves += 1;
        self.stats.buckets_moved += mv.set.len() as u64;
        *s.last_move.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        self.markers = 0;
        let _ = self.outs[mv.to].send(Msg::Handover {
            id: mv.id,
            handover,
        });
        for m in std::mem::take(&mut self.held_out) {
            self.handle(m);
        }
    }

    /// At shutdown every thread has stopped routing: a move still waiting
    /// for markers completes now.
    fn finish_move_at_shutdown(&mut self) {
        // Markers already sent are in the inbox; packets ahead of them
        // must be processed before the export.
        while let Ok(msg) = self.inbox.try_recv() {
            self.handle(msg);
        }
        if self.my_move.is_some() {
            self.complete_move();
        }
    }

    /// The worker's report and its group counters.
    fn report(
        mut self,
        pin_error: Option<String>,
        live_error: Option<LiveError>,
    ) -> (WorkerReport<H, K>, BuddyStats) {
        let kernel = crate::source::LiveSocket::stats(&mut self.socket).ok();
        let xsk = Some(self.socket.xsk_stats());
        let stats = self.worker.finish();
        (
            WorkerReport {
                handler: self.worker.into_handler(),
                hooks: self.hooks,
                stats,
                packets_read: self.read,
                error: None,
                stopped: true,
                pin_error,
                kernel,
                xsk,
                live_error,
            },
            self.stats,
        )
    }
}
