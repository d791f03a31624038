//! The builder API that ties a source, a configuration and a handler together.

use crate::config::{Config, ReassemblyMode};
use crate::deliver::Handler;
use crate::dispatch::fanout::Shard;
use crate::dispatch::workers::{
    join_workers, pin_current_thread, Drive, Parallel, ParallelReport, WorkerReport,
};
use crate::dispatch::Worker;
use crate::reassembly::policy::OverlapPolicy;
use crate::source::{FileSource, PacketSource, RawPacket, SourceError};
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
    /// Packets read from the source (including any a hook skipped).
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
    /// in batches (up to 32 from a file), so the engine may not yet have
    /// processed the packets before this one; a `Stop` takes effect at once
    /// (neither this packet nor any later one is processed).
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
        let run = self.drive(&mut worker, source, hooks, None);
        let stats = worker.finish();
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
    /// breaks. Does not terminate the open streams.
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
    /// with several workers that fails before any packet is read.
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
    /// Stop after this many packets handed to the engine: packets that
    /// [`RunHooks::inspect`] skips (a filter rejected them) do not count, as
    /// with tcpdump's `-c`.
    pub fn max_packets(mut self, n: u64) -> Self {
        self.cap.max_packets = Some(n);
        self
    }
    /// The capture.
    pub fn build(self) -> Capture {
        self.cap
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
}
