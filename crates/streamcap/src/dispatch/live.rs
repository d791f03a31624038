//! Live capture with N workers: one `AF_PACKET` socket per worker, all in
//! one kernel fan-out group, each feeding its own [`Worker`].
//!
//! The kernel splits the traffic (`PACKET_FANOUT`); with the `hash` mode and
//! its defragmentation flag both directions of a connection, fragments
//! included, reach the same socket, so each worker owns a flow shard exactly
//! as in a file run. Other processes may join the same group (same group id)
//! to share the traffic across processes.
//!
//! Capture and reassembly run in the worker thread; the worker calls the
//! application's callbacks when chunks are ready. Between the two stands the
//! worker's memory budget: stream data waits there until a chunk is
//! delivered, and the budget is where overload control (prioritized packet
//! loss) decides which packets to drop, so a slow callback costs budget,
//! not random drops in the kernel ring.

use super::workers::{join_workers, pin_current_thread, Parallel, ParallelReport, WorkerReport};
use crate::capture::{Capture, RunHooks, Verdict};
use crate::deliver::Handler;
use crate::dispatch::Worker;
use crate::source::{
    physical_memory, AfPacket, FanoutJoin, KernelFanout, KernelStats, LiveConfig, LiveError,
    LiveErrorKind, LiveSocket,
};
use crate::stats::DefragMerge;
use crate::time::Timestamp;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long a worker waits for a block before it checks the stop flag and
/// advances its clock (flush and inactivity timeouts on an idle link); less
/// while a partial locality batch waits for its timeout.
pub const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// The wall clock as a packet timestamp.
fn wall_clock() -> Timestamp {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    Timestamp::from_secs_nanos(d.as_secs(), u64::from(d.subsec_nanos()))
}

/// The fan-out group the workers of one process join when the caller did
/// not name one: hash with defragmentation (flow-affine), a group id derived
/// from the process id.
pub fn default_group(workers: usize) -> Option<FanoutJoin> {
    (workers > 1).then(|| FanoutJoin {
        group: (std::process::id() & 0xffff) as u16,
        mode: KernelFanout::Hash,
        defrag: true,
        rollover: false,
    })
}

/// Stops every worker after a total number of processed packets.
struct PacketBudget<'a> {
    limit: Option<u64>,
    processed: &'a AtomicU64,
}

impl PacketBudget<'_> {
    /// Takes one packet from the budget; false when it is spent.
    fn take(&self) -> bool {
        match self.limit {
            None => true,
            Some(limit) => self.processed.fetch_add(1, Ordering::Relaxed) < limit,
        }
    }
}

impl Capture {
    /// Captures live with `par.workers` worker threads until `par.stop` is
    /// set, the packet limit ([`crate::CaptureBuilder::max_packets`], counted
    /// over all workers) is reached, or a hook stops: [`open_live`] then
    /// [`Capture::run_live_on`].
    pub fn run_live<H, K, F>(
        &self,
        live: &LiveConfig,
        par: &Parallel,
        make: F,
    ) -> Result<ParallelReport<H, K>, LiveError>
    where
        H: Handler + Send,
        K: RunHooks + Send,
        F: Fn(usize) -> (H, K) + Sync,
    {
        let sockets = open_live(live, par.workers)?;
        Ok(self.run_live_on(sockets, par, make))
    }

    /// Runs one worker thread per socket (see [`open_live`]) until
    /// `par.stop` is set, the packet limit is reached (over all workers), a
    /// hook stops, or a socket fails. At the end every open stream is
    /// terminated (`eof`) and delivered, and each worker's kernel counters
    /// are in its report. `make(i)` builds worker `i`'s handler and hooks.
    pub fn run_live_on<S, H, K, F>(
        &self,
        sockets: Vec<S>,
        par: &Parallel,
        make: F,
    ) -> ParallelReport<H, K>
    where
        S: LiveSocket,
        H: Handler + Send,
        K: RunHooks + Send,
        F: Fn(usize) -> (H, K) + Sync,
    {
        let n = sockets.len().max(1);
        let mut cfg = self.config().clone();
        cfg.memory_size /= n;
        cfg.max_flows = (cfg.max_flows / n).max(1);
        let processed = AtomicU64::new(0);
        let budget = PacketBudget {
            limit: self.max_packets(),
            processed: &processed,
        };
        let (make, cfg, budget) = (&make, &cfg, &budget);
        let reports = std::thread::scope(|scope| {
            let handles: Vec<_> = sockets
                .into_iter()
                .enumerate()
                .map(|(i, socket)| {
                    let cpu = par.cpu_for(i);
                    let stop = &par.stop;
                    std::thread::Builder::new()
                        .name(format!("streamcap-live-{i}"))
                        .spawn_scoped(scope, move || {
                            let pin_error = cpu.and_then(|c| pin_current_thread(c).err());
                            let (handler, hooks) = make(i);
                            let worker = Worker::new(cfg.clone(), handler);
                            capture_loop(worker, socket, hooks, stop, budget, pin_error)
                        })
                })
                .collect();
            join_workers(handles)
        });
        ParallelReport::from_workers(reports, DefragMerge::Sum, false)
    }
}

/// Opens one socket per worker on `live.interface`, with `live`'s ring,
/// snaplen, kernel filter and promiscuous setting, all joined to
/// `live.fanout` (or, with several workers and no group given,
/// [`default_group`]). Opening every socket before any worker starts means a
/// permission or interface error comes before anything is captured, and the
/// kernel splits the traffic between all of them from the first packet on.
///
/// The rings of all the sockets together must fit in the machine's
/// physical memory ([`physical_memory`]); otherwise nothing is opened and
/// the error is [`LiveErrorKind::InvalidConfig`].
pub fn open_live(live: &LiveConfig, workers: usize) -> Result<Vec<AfPacket>, LiveError> {
    let n = workers.max(1);
    if let Some(phys) = physical_memory() {
        let rings = (live.ring.total_size() as u64).saturating_mul(n as u64);
        if rings > phys {
            return Err(LiveError::other(
                &live.interface,
                "ring configuration",
                LiveErrorKind::InvalidConfig,
                format!(
                    "{n} rings of {} bytes ({rings} bytes) are more than the machine's physical memory ({phys} bytes)",
                    live.ring.total_size()
                ),
            ));
        }
    }
    let mut cfg = live.clone();
    if cfg.fanout.is_none() {
        cfg.fanout = default_group(n);
    }
    (0..n).map(|_| AfPacket::open(&cfg)).collect()
}

/// One worker's capture loop; returns its report.
fn capture_loop<S: LiveSocket, H: Handler, K: RunHooks>(
    mut worker: Worker<H>,
    mut socket: S,
    mut hooks: K,
    stop: &AtomicBool,
    budget: &PacketBudget<'_>,
    pin_error: Option<String>,
) -> WorkerReport<H, K> {
    let mut read = 0u64;
    let mut stopped = false;
    let mut live_error = None;
    while !stop.load(Ordering::Relaxed) {
        let mut halt = false;
        // A partial locality batch is processed once its timeout passes:
        // the wait for a block ends by then.
        let wait = worker.locality_wait().map_or(POLL_INTERVAL, |w| {
            w.clamp(Duration::from_millis(1), POLL_INTERVAL)
        });
        let res = socket.next_block(wait, &mut |pkt| {
            if halt {
                return;
            }
            match hooks.inspect(pkt) {
                Verdict::Process => {
                    if budget.take() {
                        read += 1;
                        worker.process(pkt);
                    } else {
                        halt = true;
                    }
                }
                Verdict::Skip => read += 1,
                Verdict::Stop => halt = true,
            }
        });
        worker.advance_clock(wall_clock());
        worker.handler_mut().on_tick();
        match res {
            Ok(_) if halt => {
                // The packet limit or a hook: stop every worker.
                stop.store(true, Ordering::Relaxed);
                stopped = true;
                break;
            }
            Ok(_) => {}
            Err(e) => {
                live_error = Some(e);
                stop.store(true, Ordering::Relaxed);
                break;
            }
        }
    }
    if stop.load(Ordering::Relaxed) {
        stopped = true;
    }
    let kernel = socket.stats().ok();
    let xsk = socket.xsk_stats();
    let stats = worker.finish();
    WorkerReport {
        handler: worker.into_handler(),
        hooks,
        stats,
        packets_read: read,
        error: None,
        stopped,
        pin_error,
        kernel,
        xsk,
        live_error,
    }
}

/// Sums the kernel counters of several sockets.
pub fn total_kernel_stats<'a>(stats: impl IntoIterator<Item = &'a KernelStats>) -> KernelStats {
    stats
        .into_iter()
        .fold(KernelStats::default(), |mut acc, s| {
            acc.packets += s.packets;
            acc.drops += s.drops;
            acc.freeze_count += s.freeze_count;
            acc
        })
}
