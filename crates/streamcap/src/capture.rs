//! The builder API that ties a source, a configuration and a handler together.

use crate::config::{Config, ReassemblyMode};
use crate::deliver::Handler;
use crate::dispatch::fanout::Shard;
use crate::dispatch::workers::{
    join_workers, pin_current_thread, Drive, Parallel, ParallelReport, WorkerReport,
};
use crate::dispatch::Worker;
use crate::reassembly::policy::OverlapPolicy;
use crate::source::pace::{Admit, Clock, Pace, PaceError, Pacer, WallClock, DEFAULT_RING_SIZE};
use crate::source::{FileSource, PacketSource, RawPacket, SourceError, SourceErrorKind};
use crate::stats::{DefragMerge, GlobalStats};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// Packets read from the source at a time: the worker looks up all of them
/// before it processes any ([`Worker::process_batch`]).
const READ_BATCH: usize = 32;

/// An empty vector on `v`'s allocation, for packets of another lifetime
/// (`collect` reuses the storage of a vector it consumes when the element
/// layouts match, as they do here). Saves a `malloc` and a `free` per batch:
/// 0.5 % of `flows`' instructions on small packets.
#[expect(
    clippy::unnecessary_filter_map,
    reason = "the map is what changes the element type's lifetime"
)]
fn recycle<'a, 'b>(mut v: Vec<RawPacket<'a>>) -> Vec<RawPacket<'b>> {
    v.clear();
    v.into_iter().filter_map(|_| None).collect()
}

/// A configured capture: build it with [`Capture::builder`], run it on a
/// source with [`Capture::run`] or on a file with [`Capture::run_file`].
///
/// ```
/// use streamcap::{Capture, deliver::Callbacks};
/// let cb = Callbacks::<()>::new().on_close(|s| {
///     let (ip, port) = s.src();
///     println!("{ip}:{port} sent {} bytes", s.info().counters.stream_bytes);
/// });
/// let report = Capture::builder().cutoff(0).build().run_file("../../samples/sample.pcap", cb)?;
/// println!("{} packets", report.stats.packets);
/// # Ok::<(), streamcap::SourceError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Capture {
    cfg: Config,
    max_packets: Option<u64>,
    pace: Option<Pace>,
    ring_size: Option<u64>,
}

/// What a run produced: the handler (with whatever it collected), the final
/// statistics, and the input error that ended the run early, if any.
///
/// An input error does not lose what was processed before it: every open
/// stream was still terminated and delivered, and `stats` covers it all.
pub struct Report<H> {
    /// The handler, after every event was delivered.
    pub handler: H,
    /// Final statistics.
    pub stats: GlobalStats,
    /// The input error that stopped reading, if any.
    pub error: Option<SourceError>,
    /// Packets read from the source (including any a hook skipped and, in
    /// a paced run, any the ring dropped).
    pub packets_read: u64,
    /// A hook stopped the run early ([`Verdict::Stop`]).
    pub stopped: bool,
}

/// What [`RunHooks::inspect`] decides for a packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Hand the packet to the engine.
    Process,
    /// Ignore the packet (e.g. a filter rejected it).
    Skip,
    /// Stop reading; open streams are still terminated and delivered.
    Stop,
}

/// Where a run is, for progress displays.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Packets read from the source so far.
    pub packets_read: u64,
    /// Sum of their on-the-wire lengths.
    pub wire_bytes: u64,
    /// (bytes consumed, total bytes) of the source, when known.
    pub position: Option<(u64, u64)>,
    /// The last call: the input is exhausted or the run stopped.
    pub done: bool,
}

/// Hooks into [`Capture::run_with`]: a per-packet verdict (filters) and
/// progress reports. `()` is the no-op implementation.
pub trait RunHooks {
    /// Sees each packet, in order, before the engine does. Packets are read
    /// in batches (up to 32 from a file; with locality buffering the engine
    /// also holds a batch of its own), so the engine may not yet have
    /// processed the packets before this one; a `Stop` takes effect at once
    /// (neither this packet nor any later one is processed). In a paced run
    /// ([`CaptureBuilder::pace`]) it sees only the packets the ring let
    /// through, each when it is handed over, after the engine processed
    /// the one before.
    fn inspect(&mut self, pkt: &RawPacket<'_>) -> Verdict {
        let _ = pkt;
        Verdict::Process
    }
    /// Called every [`RunHooks::progress_every`] packets and once at the end.
    fn progress(&mut self, progress: &Progress) {
        let _ = progress;
    }
    /// How many packets between progress calls.
    fn progress_every(&self) -> u64 {
        u64::MAX
    }
}

impl RunHooks for () {}

impl Capture {
    /// A builder with the default configuration.
    pub fn builder() -> CaptureBuilder {
        CaptureBuilder {
            cap: Capture::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The packet limit ([`CaptureBuilder::max_packets`]), if any.
    pub fn max_packets(&self) -> Option<u64> {
        self.max_packets
    }

    /// The pace of a paced replay ([`CaptureBuilder::pace`]), if any.
    pub fn pace(&self) -> Option<Pace> {
        self.pace
    }

    /// The size of a paced replay's ring, bytes ([`CaptureBuilder::ring_size`]).
    pub fn ring_size(&self) -> u64 {
        self.ring_size.unwrap_or(DEFAULT_RING_SIZE)
    }

    /// Runs over every packet of `source`, then terminates all open streams.
    pub fn run<H: Handler>(&self, source: &mut dyn PacketSource, handler: H) -> Report<H> {
        self.run_with(source, handler, &mut ())
    }

    /// Like [`Capture::run`], with hooks: `hooks.inspect` sees every packet
    /// before the engine and may skip it (a filter) or stop the run, and
    /// `hooks.progress` is called every [`RunHooks::progress_every`] packets
    /// read and once at the end of the input. The packet limit
    /// ([`CaptureBuilder::max_packets`]) counts the packets handed to the
    /// engine, not the skipped ones.
    pub fn run_with<H: Handler>(
        &self,
        source: &mut dyn PacketSource,
        handler: H,
        hooks: &mut dyn RunHooks,
    ) -> Report<H> {
        let mut worker = Worker::new(self.cfg.clone(), handler);
        let (run, stats) = match self.pace {
            Some(pace) => {
                let mut pacer = Pacer::new(pace, self.ring_size(), WallClock::new());
                let run = self.drive_paced(&mut worker, source, hooks, None, &mut pacer);
                let mut stats = worker.finish();
                pacer.add_to(&mut stats);
                (run, stats)
            }
            None => {
                let run = self.drive(&mut worker, source, hooks, None);
                (run, worker.finish())
            }
        };
        Report {
            handler: worker.into_handler(),
            stats,
            error: run.error,
            packets_read: run.packets_read,
            stopped: run.stopped,
        }
    }

    /// The read loop shared by every kind of run: hands each packet of
    /// `source` that `hooks` lets through to `worker`, until the input ends,
    /// the packet limit is reached, a hook or `stop` says stop, or the input
    /// breaks. Does not terminate the open streams, and does not pace (a
    /// paced run uses [`Capture::drive_paced`] instead).
    pub(crate) fn drive<H: Handler>(
        &self,
        worker: &mut Worker<H>,
        source: &mut dyn PacketSource,
        hooks: &mut dyn RunHooks,
        stop: Option<&AtomicBool>,
    ) -> Drive {
        let mut error = None;
        let mut stopped = false;
        let mut n = 0u64;
        let mut processed = 0u64;
        let mut wire = 0u64;
        let every = hooks.progress_every().max(1);
        // One allocation for every batch (a batch borrows the source, so it
        // cannot outlive an iteration; its storage can).
        let mut spare: Vec<RawPacket<'static>> = Vec::with_capacity(READ_BATCH);
        loop {
            let room = self.max_packets.map_or(READ_BATCH, |m| {
                (m.saturating_sub(processed)).min(READ_BATCH as u64) as usize
            });
            if room == 0 {
                break;
            }
            if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                stopped = true;
                break;
            }
            let before = n;
            let mut batch = recycle(std::mem::take(&mut spare));
            let failed = source.next_batch(&mut batch, room);
            let read = batch.len();
            // The hooks see the packets in order; the ones to process are
            // kept at the front, up to a `Stop`.
            let mut keep = 0;
            for i in 0..read {
                let p = batch[i];
                wire += u64::from(p.orig_len);
                match hooks.inspect(&p) {
                    Verdict::Process => {
                        batch[keep] = p;
                        keep += 1;
                    }
                    Verdict::Skip => {}
                    Verdict::Stop => {
                        stopped = true;
                        break;
                    }
                }
                n += 1;
            }
            batch.truncate(keep);
            worker.process_batch(&batch);
            spare = recycle(batch);
            processed += keep as u64;
            if n / every > before / every {
                hooks.progress(&Progress {
                    packets_read: n,
                    wire_bytes: wire,
                    position: source.progress(),
                    done: false,
                });
            }
            if let Some(e) = failed {
                error = Some(e);
                break;
            }
            if stopped || read == 0 {
                break;
            }
        }
        hooks.progress(&Progress {
            packets_read: n,
            wire_bytes: wire,
            position: source.progress(),
            done: true,
        });
        Drive {
            error,
            stopped,
            packets_read: n,
        }
    }

    /// [`Capture::drive`] for a paced replay: reads the packets of
    /// `source` one at a time, offers each to `pacer` first, which waits
    /// until it falls due or drops it (a ring drop: neither the hooks nor
    /// the worker see it), then to the hooks, then hands it to the worker
    /// on its own, so that each packet leaves the ring at a time of its own.
    /// The packet limit counts the packets handed to the worker, as
    /// unpaced.
    ///
    /// Generic over the source, and read with [`PacketSource::next_packet`]
    /// rather than `next_batch`: a file's `next_batch` then keeps the one
    /// caller it has in an unpaced run (the batched loop of
    /// [`Capture::drive`], into which the compiler inlines it), so the
    /// unpaced path is compiled as it would be without pacing.
    pub(crate) fn drive_paced<H: Handler, C: Clock, S: PacketSource + ?Sized>(
        &self,
        worker: &mut Worker<H>,
        source: &mut S,
        hooks: &mut dyn RunHooks,
        stop: Option<&AtomicBool>,
        pacer: &mut Pacer<C>,
    ) -> Drive {
        let mut error = None;
        let mut stopped = false;
        let mut n = 0u64;
        let mut processed = 0u64;
        let mut wire = 0u64;
        let every = hooks.progress_every().max(1);
        loop {
            if self.max_packets.is_some_and(|m| processed >= m) {
                break;
            }
            if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                stopped = true;
                break;
            }
            let p = match source.next_packet() {
                Some(Ok(p)) => p,
                Some(Err(e)) => {
                    error = Some(e);
                    break;
                }
                None => break,
            };
            wire += u64::from(p.orig_len);
            // Before the pacer waits for this packet: a decoupled analysis
            // gets the events of the packets before it now, not after the wait.
            worker.collect_returns();
            match pacer.admit(&p, stop) {
                Admit::Take => match hooks.inspect(&p) {
                    Verdict::Process => {
                        // The packet leaves the capture stage (and the
                        // ring) here: its take time is the pacer's clock
                        // reading in `admit`. A hand-off to another stage
                        // would go in place of this call.
                        // (The handler's returns were taken back above.)
                        worker.process_taken(&p);
                        processed += 1;
                    }
                    Verdict::Skip => {}
                    Verdict::Stop => {
                        stopped = true;
                        break;
                    }
                },
                Admit::Drop => {}
                Admit::Stop => {
                    stopped = true;
                    break;
                }
            }
            n += 1;
            if n % every == 0 {
                hooks.progress(&Progress {
                    packets_read: n,
                    wire_bytes: wire,
                    position: source.progress(),
                    done: false,
                });
            }
        }
        hooks.progress(&Progress {
            packets_read: n,
            wire_bytes: wire,
            position: source.progress(),
            done: true,
        });
        Drive {
            error,
            stopped,
            packets_read: n,
        }
    }

    /// Runs `par.workers` worker threads over one capture file, each owning
    /// a shard of the flows ([`crate::dispatch::fanout`]): every worker reads
    /// the whole file (page-cached, through its own window) and processes
    /// only its own packets, so nothing is copied or queued between threads, and both directions of
    /// every connection are handled by one worker. `make(i)` builds worker
    /// `i`'s handler and hooks inside its thread.
    ///
    /// Hooks see every packet of the file in every worker, so a filter and
    /// the packet limit ([`CaptureBuilder::max_packets`]) stop every worker
    /// at the same packet: the result is the single-worker result, split
    /// between the handlers. The memory budget and the flow limit are
    /// divided evenly between the workers. Fails only if the file cannot be
    /// opened; later input errors are in [`ParallelReport::error`].
    pub fn run_file_parallel<H, K, F>(
        &self,
        path: impl AsRef<Path>,
        par: &Parallel,
        make: F,
    ) -> Result<ParallelReport<H, K>, SourceError>
    where
        H: Handler + Send,
        K: RunHooks + Send,
        F: Fn(usize) -> (H, K) + Sync,
    {
        let file = FileSource::open(path.as_ref())?;
        self.run_source_parallel(file, par, make)
    }

    /// [`Capture::run_file_parallel`] on a capture already opened (a file
    /// the caller has checked, or standard input, `-`). One worker reads
    /// `file`; several each reopen it ([`FileSource::reopen`], read on the
    /// worker's own thread), which a pipe or other special file cannot be:
    /// with several workers that fails before any packet is read. A paced
    /// replay ([`CaptureBuilder::pace`]) runs on one worker only: with
    /// several it fails before any packet is read
    /// ([`SourceErrorKind::Unsupported`]), since each worker reads the
    /// whole file and would model a ring of its own.
    pub fn run_source_parallel<H, K, F>(
        &self,
        file: FileSource,
        par: &Parallel,
        make: F,
    ) -> Result<ParallelReport<H, K>, SourceError>
    where
        H: Handler + Send,
        K: RunHooks + Send,
        F: Fn(usize) -> (H, K) + Sync,
    {
        let n = par.workers.max(1);
        if let Some(pace) = self.pace {
            if n > 1 {
                return Err(SourceError::new(
                    file.name(),
                    None,
                    SourceErrorKind::Unsupported(format!(
                        "paced replay runs on one worker, not {n}: every worker reads the whole \
                         file, so each would pace it and model a ring of its own"
                    )),
                ));
            }
            return Ok(self.run_paced_worker(file, pace, par, &make));
        }
        // One worker keeps the source as opened (a file read ahead by a
        // thread of its own: see `FileSource::open`). Several each read
        // their own copy on their own thread: a read-ahead thread beside
        // them would compete for their cores (with two workers on two
        // cores it made `flows` 10 % slower).
        let readers = if n == 1 {
            vec![file]
        } else {
            (0..n)
                .map(|_| file.reopen())
                .collect::<Result<Vec<_>, _>>()?
        };
        let mut cfg = self.cfg.clone();
        cfg.memory_size /= n;
        cfg.max_flows = (cfg.max_flows / n).max(1);
        let shards = Shard::split(n, par.fanout);
        let make = &make;
        let cfg = &cfg;
        let reports = std::thread::scope(|scope| {
            let handles: Vec<_> = shards
                .into_iter()
                .zip(readers)
                .enumerate()
                .map(|(i, (shard, reader))| {
                    let stop = &par.stop;
                    let cpu = par.cpu_for(i);
                    std::thread::Builder::new()
                        .name(format!("streamcap-worker-{i}"))
                        .spawn_scoped(scope, move || {
                            let pin_error = cpu.and_then(|c| pin_current_thread(c).err());
                            let (handler, mut hooks) = make(i);
                            let mut worker = Worker::new(cfg.clone(), handler);
                            if n > 1 {
                                worker = worker.with_shard(shard);
                            }
                            let mut src = reader;
                            let run = self.drive(&mut worker, &mut src, &mut hooks, Some(stop));
                            let stats = worker.finish();
                            WorkerReport {
                                handler: worker.into_handler(),
                                hooks,
                                stats,
                                packets_read: run.packets_read,
                                error: run.error,
                                stopped: run.stopped,
                                pin_error,
                                kernel: None,
                                xsk: None,
                                live_error: None,
                            }
                        })
                })
                .collect();
            join_workers(handles)
        });
        Ok(ParallelReport::from_workers(
            reports,
            DefragMerge::Replicated,
            true,
        ))
    }

    /// [`Capture::run_source_parallel`] paced, on its one worker thread:
    /// the same as the unpaced worker, with [`Capture::drive_paced`] on the
    /// wall clock as its read loop. Kept apart so that the unpaced worker
    /// is compiled exactly as it would be without pacing.
    fn run_paced_worker<H, K, F>(
        &self,
        file: FileSource,
        pace: Pace,
        par: &Parallel,
        make: &F,
    ) -> ParallelReport<H, K>
    where
        H: Handler + Send,
        K: RunHooks + Send,
        F: Fn(usize) -> (H, K) + Sync,
    {
        let reports = std::thread::scope(|scope| {
            let stop = &par.stop;
            let cpu = par.cpu_for(0);
            let handle = std::thread::Builder::new()
                .name("streamcap-worker-0".to_string())
                .spawn_scoped(scope, move || {
                    let pin_error = cpu.and_then(|c| pin_current_thread(c).err());
                    let (handler, mut hooks) = make(0);
                    let mut worker = Worker::new(self.cfg.clone(), handler);
                    let mut src = file;
                    let mut pacer = Pacer::new(pace, self.ring_size(), WallClock::new());
                    let run =
                        self.drive_paced(&mut worker, &mut src, &mut hooks, Some(stop), &mut pacer);
                    let mut stats = worker.finish();
                    pacer.add_to(&mut stats);
                    WorkerReport {
                        handler: worker.into_handler(),
                        hooks,
                        stats,
                        packets_read: run.packets_read,
                        error: run.error,
                        stopped: run.stopped,
                        pin_error,
                        kernel: None,
                        xsk: None,
                        live_error: None,
                    }
                });
            join_workers(vec![handle])
        });
        ParallelReport::from_workers(reports, DefragMerge::Replicated, true)
    }

    /// Opens a pcap or pcapng file and runs over it. Fails only if the file
    /// cannot be opened or its header is invalid; later input errors are in
    /// [`Report::error`].
    pub fn run_file<H: Handler>(
        &self,
        path: impl AsRef<Path>,
        handler: H,
    ) -> Result<Report<H>, SourceError> {
        let mut src = FileSource::open(path)?;
        Ok(self.run(&mut src, handler))
    }
}

/// Builds a [`Capture`] (Scap Table II as methods).
#[derive(Clone, Debug)]
pub struct CaptureBuilder {
    cap: Capture,
}

impl CaptureBuilder {
    /// Starts from an explicit configuration.
    pub fn config(mut self, cfg: Config) -> Self {
        self.cap.cfg = cfg;
        self
    }
    /// Memory for stream data, bytes (Scap `memory_size`).
    pub fn memory_size(mut self, bytes: usize) -> Self {
        self.cap.cfg.memory_size = bytes;
        self
    }
    /// Reassembly mode.
    pub fn mode(mut self, mode: ReassemblyMode) -> Self {
        self.cap.cfg.mode = mode;
        self
    }
    /// Default overlap policy.
    pub fn policy(mut self, policy: OverlapPolicy) -> Self {
        self.cap.cfg.policy = policy;
        self
    }
    /// Record per-packet metadata with each chunk.
    pub fn need_packets(mut self, yes: bool) -> Self {
        self.cap.cfg.need_packets = yes;
        self
    }
    /// Default cutoff, bytes per stream (0 = statistics only).
    pub fn cutoff(mut self, bytes: u64) -> Self {
        self.cap.cfg.cutoff = Some(bytes);
        self
    }
    /// Cutoff per direction (Scap `scap_add_cutoff_direction`).
    pub fn cutoff_direction(mut self, dir: crate::flow::Direction, bytes: u64) -> Self {
        match dir {
            crate::flow::Direction::Orig => self.cap.cfg.cutoff_orig = Some(bytes),
            crate::flow::Direction::Resp => self.cap.cfg.cutoff_resp = Some(bytes),
        }
        self
    }
    /// Chunk size, bytes.
    pub fn chunk_size(mut self, bytes: usize) -> Self {
        self.cap.cfg.chunk_size = bytes.max(1);
        self
    }
    /// How bytes reach the data callback: in chunks (the default) or
    /// segment by segment, without a copy.
    pub fn delivery(mut self, delivery: crate::deliver::Delivery) -> Self {
        self.cap.cfg.delivery = delivery;
        self
    }
    /// Overlap between consecutive chunks, bytes.
    pub fn overlap(mut self, bytes: usize) -> Self {
        self.cap.cfg.overlap = bytes;
        self
    }
    /// Flush timeout, seconds of packet time.
    pub fn flush_timeout(mut self, secs: f64) -> Self {
        self.cap.cfg.flush_timeout = Some((secs.max(0.0) * 1e9) as u64);
        self
    }
    /// Inactivity timeout for all protocols, seconds.
    pub fn inactivity_timeout(mut self, secs: f64) -> Self {
        let ns = (secs.max(0.0) * 1e9) as u64;
        self.cap.cfg.tcp_timeout = ns;
        self.cap.cfg.udp_timeout = ns;
        self.cap.cfg.other_timeout = ns;
        self
    }
    /// Default stream priority for overload control (Scap
    /// `scap_set_stream_priority`; larger = more important).
    pub fn priority(mut self, priority: u8) -> Self {
        self.cap.cfg.priority = priority;
        self
    }
    /// Adds a priority class: connections whose first packet matches the
    /// class's filter get its priority (the first matching class wins).
    pub fn priority_class(mut self, class: crate::filter::PriorityClass) -> Self {
        self.cap.cfg.priority_classes.push(class);
        self
    }
    /// Adds a cutoff class (Scap `scap_add_cutoff_class`).
    pub fn cutoff_class(mut self, class: crate::filter::CutoffClass) -> Self {
        self.cap.cfg.cutoff_classes.push(class);
        self
    }
    /// Fraction of the memory size below which prioritized packet loss
    /// drops nothing (Scap `base_threshold`), 0..=1.
    pub fn base_threshold(mut self, fraction: f64) -> Self {
        self.cap.cfg.base_threshold = fraction;
        self
    }
    /// Stream offset beyond which packets are dropped first under overload
    /// (Scap `overload_cutoff`).
    pub fn overload_cutoff(mut self, bytes: u64) -> Self {
        self.cap.cfg.overload_cutoff = Some(bytes);
        self
    }
    /// Most flows tracked at once.
    pub fn max_flows(mut self, n: usize) -> Self {
        self.cap.cfg.max_flows = n.max(1);
        self
    }
    /// Locality buffering ([`crate::dispatch::locality`]): each worker
    /// gathers `packets` packets of its input and processes them grouped by
    /// the lower of their two ports; 0 (the default) processes packets as
    /// they come. At most [`crate::dispatch::locality::MAX_LOCALITY_BATCH`]
    /// (a larger value is lowered to it).
    pub fn locality_batch(mut self, packets: usize) -> Self {
        self.cap.cfg.locality.batch = packets.min(crate::dispatch::locality::MAX_LOCALITY_BATCH);
        self
    }
    /// Most bytes a worker's locality batch holds, its packets and their
    /// bookkeeping (default
    /// [`crate::dispatch::locality::DEFAULT_LOCALITY_BYTES`]); a batch that
    /// reaches it is processed whatever its packet count.
    pub fn locality_bytes(mut self, bytes: usize) -> Self {
        self.cap.cfg.locality.max_bytes = bytes;
        self
    }
    /// Live capture: how long the first packet of a partial locality batch
    /// waits before the batch is processed anyway (default 100 ms).
    pub fn locality_timeout(mut self, wait: std::time::Duration) -> Self {
        self.cap.cfg.locality.timeout = wait;
        self
    }
    /// Stop after this many packets handed to the engine: packets that
    /// [`RunHooks::inspect`] skips (a filter rejected them) do not count, as
    /// with tcpdump's `-c`.
    pub fn max_packets(mut self, n: u64) -> Self {
        self.cap.max_packets = Some(n);
        self
    }
    /// Replays the input at `pace` instead of as fast as it can be read,
    /// with the loss of a kernel ring of [`CaptureBuilder::ring_size`]
    /// bytes ([`crate::source::pace`]): packets that fall due while the ring
    /// is full are counted in [`GlobalStats::ring_drops`] and never reach
    /// the engine; the filter hook and the packet limit see only the others.
    /// Applies to runs over a [`PacketSource`] ([`Capture::run`],
    /// [`Capture::run_file`], one worker of [`Capture::run_source_parallel`]),
    /// not to live capture. Fails if the pace's value is not a finite
    /// number above 0.
    ///
    /// ```
    /// use streamcap::{Capture, deliver::Callbacks, source::pace::Pace};
    /// let cap = Capture::builder()
    ///     .cutoff(0)
    ///     .pace(Pace::Rate { bits_per_sec: 10e9 })?
    ///     .ring_size(1 << 20)
    ///     .build();
    /// let report = cap.run_file("../../samples/sample.pcap", Callbacks::<()>::new())?;
    /// // The whole sample fits in a 1 MiB ring: nothing is dropped.
    /// assert_eq!(report.stats.ring_drops, 0);
    /// assert_eq!(report.stats.packets, 472);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pace(mut self, pace: Pace) -> Result<Self, PaceError> {
        self.cap.pace = Some(pace.check()?);
        Ok(self)
    }
    /// The size of a paced replay's modelled ring, bytes (default
    /// [`DEFAULT_RING_SIZE`], the default of a live capture's ring). The
    /// model keeps an entry per packet in the ring, at most one per 80
    /// bytes of it. Without [`CaptureBuilder::pace`] it plays no part.
    pub fn ring_size(mut self, bytes: u64) -> Self {
        self.cap.ring_size = Some(bytes);
        self
    }
    /// The capture.
    pub fn build(self) -> Capture {
        self.cap
    }
}

impl Capture {
    /// This capture with subzero copy ([`crate::subzero`]): its workers list
    /// the streams past their cutoff in `s`'s map.
    pub fn with_subzero(mut self, s: crate::subzero::SubzeroConfig) -> Capture {
        self.cfg.subzero = Some(s);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The read loop's batches share one allocation: `recycle` keeps the
    /// storage of the vector it empties.
    #[test]
    fn recycled_batches_keep_their_storage() {
        let frame = [0u8; 60];
        let mut v: Vec<RawPacket<'_>> = Vec::with_capacity(READ_BATCH);
        let storage = v.as_ptr() as usize;
        v.push(RawPacket {
            ts: crate::time::Timestamp::ZERO,
            link: crate::LinkType::ETHERNET,
            data: &frame,
            orig_len: 60,
            record: 0,
            interface: 0,
        });
        let again: Vec<RawPacket<'static>> = recycle(v);
        assert!(again.is_empty());
        assert!(again.capacity() >= READ_BATCH);
        assert_eq!(again.as_ptr() as usize, storage);
    }

    use crate::deliver::Callbacks;
    use crate::source::pace::tests::{reference, StepClock};
    use crate::source::pace::{frame_cost, PaceStats};
    use std::cell::RefCell;
    use std::rc::Rc;

    fn sample() -> FileSource {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../samples/sample.pcap");
        let bytes = std::fs::read(path).expect("samples/sample.pcap");
        FileSource::from_bytes(path, bytes).expect("a pcap")
    }

    /// (captured bytes, wire bytes) of every packet of the sample.
    fn sample_lengths() -> Vec<(usize, u32)> {
        let mut src = sample();
        let mut out = Vec::new();
        while let Some(Ok(p)) = src.next_packet() {
            out.push((p.data.len(), p.orig_len));
        }
        out
    }

    /// A handler that does nothing (and can be sent to a worker thread).
    struct Nothing;

    impl crate::Handler for Nothing {
        type State = ();
    }

    type Closed = Rc<RefCell<Vec<String>>>;

    /// A handler that writes down every stream as it closes.
    fn recorder() -> (Callbacks<()>, Closed) {
        let closed: Closed = Rc::default();
        let c = closed.clone();
        let cb = Callbacks::<()>::new().on_close(move |s| {
            let line = format!("{:?} {:?} {:?}", s.src(), s.dst(), s.info().counters);
            c.borrow_mut().push(line);
        });
        (cb, closed)
    }

    /// Hooks that skip packets with an odd record number and write down
    /// the record of every packet they see.
    #[derive(Default)]
    struct EvenOnly(Vec<u64>);

    impl RunHooks for EvenOnly {
        fn inspect(&mut self, pkt: &RawPacket<'_>) -> Verdict {
            self.0.push(pkt.record);
            if pkt.record % 2 == 0 {
                Verdict::Process
            } else {
                Verdict::Skip
            }
        }
    }

    /// Runs `cap` paced on a [`StepClock`] over the sample.
    fn run_stepped(
        cap: &Capture,
        step: u64,
        hooks: &mut dyn RunHooks,
    ) -> (GlobalStats, Drive, Vec<String>) {
        let (cb, closed) = recorder();
        let mut worker = Worker::new(cap.cfg.clone(), cb);
        let pace = cap.pace().expect("a paced capture");
        let mut pacer = Pacer::new(pace, cap.ring_size(), StepClock { now: 0, step });
        let run = cap.drive_paced(&mut worker, &mut sample(), hooks, None, &mut pacer);
        let mut stats = worker.finish();
        pacer.add_to(&mut stats);
        let closed = closed.borrow().clone();
        (stats, run, closed)
    }

    /// What the ring model says of the sample at one packet per µs with
    /// the capture stage looking at packet k at `step * k` ns: accepted or
    /// not, per packet.
    fn expected_admissions(ring: u64, step: u64) -> Vec<bool> {
        let offers: Vec<(u64, u64, u64)> = sample_lengths()
            .iter()
            .enumerate()
            .map(|(k, (cap, _))| (1000 * k as u64, step * k as u64, frame_cost(*cap)))
            .collect();
        reference(ring, &offers)
    }

    fn per_us() -> Pace {
        Pace::Pps {
            packets_per_sec: 1e6,
        }
    }

    #[test]
    fn a_paced_replay_with_room_for_the_whole_file_changes_nothing(
    ) -> Result<(), Box<dyn std::error::Error>> {
        let (cb, closed) = recorder();
        let plain = Capture::builder().build().run(&mut sample(), cb);
        let plain_closed = closed.borrow().clone();
        // Real time, as fast as the machine goes: the 32 MiB ring holds the
        // whole sample, so nothing can be dropped however late the stage is.
        let paced = Capture::builder()
            .pace(Pace::Rate { bits_per_sec: 1e12 })?
            .build();
        let (cb, closed) = recorder();
        let report = paced.run(&mut sample(), cb);
        assert_eq!(report.stats.ring_drops, 0);
        assert_eq!(report.stats.packets, plain.stats.packets);
        assert_eq!(report.stats.totals, plain.stats.totals);
        assert_eq!(report.stats.flows_created, plain.stats.flows_created);
        assert_eq!(report.packets_read, plain.packets_read);
        assert_eq!(*closed.borrow(), plain_closed);
        let pace = report.stats.pace.expect("paced");
        assert_eq!(pace.ring_size, 32 << 20);
        assert!(plain.stats.pace.is_none());
        // A stage that takes 1 ms per packet at a rate of one a µs: very
        // late, yet nothing is dropped.
        let (stats, _, stepped) = run_stepped(&paced.clone(), 1_000_000, &mut ());
        assert_eq!(stats.ring_drops, 0);
        assert_eq!(stepped, plain_closed);
        Ok(())
    }

    #[test]
    fn a_slow_capture_stage_drops_what_the_ring_cannot_hold(
    ) -> Result<(), Box<dyn std::error::Error>> {
        let ring = 4096;
        let step = 3000;
        let cap = Capture::builder().pace(per_us())?.ring_size(ring).build();
        let (stats, run, _) = run_stepped(&cap, step, &mut ());
        let want = expected_admissions(ring, step);
        let lengths = sample_lengths();
        let drops = want.iter().filter(|a| !**a).count() as u64;
        let drop_bytes: u64 = want
            .iter()
            .zip(&lengths)
            .filter(|(a, _)| !**a)
            .map(|(_, (_, wire))| u64::from(*wire))
            .sum();
        let all_wire: u64 = lengths.iter().map(|(_, w)| u64::from(*w)).sum();
        assert!(drops > 100, "{drops} drops");
        assert_eq!(
            (stats.ring_drops, stats.ring_drop_bytes),
            (drops, drop_bytes)
        );
        // Dropped packets never reached the engine.
        assert_eq!(stats.packets + drops, lengths.len() as u64);
        assert_eq!(stats.wire_bytes + drop_bytes, all_wire);
        assert_eq!(run.packets_read, lengths.len() as u64);
        assert!(stats.totals.missing > 0);
        assert!(stats.totals.invariant_holds());
        let pace: PaceStats = stats.pace.expect("paced");
        assert_eq!(pace.ring_size, ring);
        assert!(pace.ring_peak <= ring && pace.ring_peak > ring / 2);
        assert_eq!(pace.idle_ns, 0);
        assert_eq!(pace.max_late_ns, (step - 1000) * (lengths.len() as u64 - 1));
        Ok(())
    }

    #[test]
    fn the_ring_comes_before_the_filter_and_the_packet_limit(
    ) -> Result<(), Box<dyn std::error::Error>> {
        let (ring, step) = (4096, 3000);
        let cap = Capture::builder().pace(per_us())?.ring_size(ring).build();
        let want = expected_admissions(ring, step);
        let admitted: Vec<u64> = (1..)
            .zip(&want)
            .filter(|(_, a)| **a)
            .map(|(r, _)| r)
            .collect();
        // The filter sees exactly the packets the ring let through, and
        // filtering changes no drop.
        let mut hooks = EvenOnly::default();
        let (stats, _, _) = run_stepped(&cap, step, &mut hooks);
        assert_eq!(hooks.0, admitted);
        assert_eq!(stats.ring_drops, (want.len() - admitted.len()) as u64);
        let even = admitted.iter().filter(|r| *r % 2 == 0).count() as u64;
        assert_eq!(stats.packets, even);
        // The limit counts packets handed to the engine, not ring drops.
        let limited = Capture::builder()
            .pace(per_us())?
            .ring_size(ring)
            .max_packets(50)
            .build();
        let (stats, run, _) = run_stepped(&limited, step, &mut ());
        assert_eq!(stats.packets, 50);
        let fiftieth = want
            .iter()
            .enumerate()
            .filter(|(_, a)| **a)
            .nth(49)
            .map(|(i, _)| i as u64 + 1)
            .expect("50 admitted");
        assert_eq!(run.packets_read, fiftieth);
        assert_eq!(stats.ring_drops, fiftieth - 50);
        assert!(stats.totals.invariant_holds());
        Ok(())
    }

    #[test]
    fn pacing_needs_one_worker() -> Result<(), Box<dyn std::error::Error>> {
        let cap = Capture::builder().pace(Pace::Speed(1000.0))?.build();
        let par = Parallel::workers(2);
        let made = cap.run_source_parallel(sample(), &par, |_| (Nothing, ()));
        let e = made.err().expect("refused");
        assert!(matches!(e.kind, SourceErrorKind::Unsupported(_)), "{e}");
        assert!(
            e.to_string().contains("paced replay runs on one worker"),
            "{e}"
        );
        // One worker runs, and its statistics carry the ring's.
        let r = cap.run_source_parallel(sample(), &Parallel::workers(1), |_| (Nothing, ()))?;
        assert_eq!(r.stats.ring_drops, 0);
        assert!(r.stats.pace.is_some());
        Ok(())
    }

    #[test]
    fn a_stop_ends_a_long_wait_for_a_packet() -> Result<(), Box<dyn std::error::Error>> {
        // One packet every 1000 s: the first is due at once, the second
        // never within the test.
        let cap = Capture::builder()
            .pace(Pace::Pps {
                packets_per_sec: 1e-3,
            })?
            .build();
        let par = Parallel::workers(1);
        let stop = par.stop.clone();
        let setter = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            stop.store(true, Ordering::Relaxed);
        });
        let r = cap.run_source_parallel(sample(), &par, |_| (Nothing, ()))?;
        setter.join().map_err(|_| "the setter panicked")?;
        assert!(r.stopped);
        assert_eq!(r.stats.packets, 1);
        assert!(r.stats.pace.is_some_and(|p| p.idle_ns > 0));
        Ok(())
    }

    #[test]
    fn invalid_paces_are_refused() {
        let e = Capture::builder()
            .pace(Pace::Rate {
                bits_per_sec: f64::NAN,
            })
            .expect_err("NaN refused");
        assert_eq!(
            e.to_string(),
            "bit rate NaN: expected a finite number above 0"
        );
        assert!(Capture::builder().pace(Pace::Speed(0.0)).is_err());
        assert!(Capture::builder()
            .pace(Pace::Pps {
                packets_per_sec: -5.0
            })
            .is_err());
    }
}
