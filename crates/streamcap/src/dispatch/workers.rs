//! Worker threads: the settings of a multi-worker run, CPU pinning, and the
//! reports that come back.
#![allow(unsafe_code)]

use super::fanout::Fanout;
use crate::capture::RunHooks;
use crate::deliver::Handler;
use crate::source::{KernelStats, LiveError, SourceError};
use crate::stats::{DefragMerge, GlobalStats};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// How a run is split across worker threads.
#[derive(Clone, Debug)]
pub struct Parallel {
    /// Worker threads (at least 1).
    pub workers: usize,
    /// How a file's packets are split (live capture uses the kernel's fan-out).
    pub fanout: Fanout,
    /// CPUs to pin the workers to: worker `i` runs on `pin[i % pin.len()]`;
    /// empty leaves placement to the scheduler.
    pub pin: Vec<usize>,
    /// Set it (e.g. from a signal handler) to stop every worker; open
    /// streams are still terminated and delivered.
    pub stop: Arc<AtomicBool>,
}

impl Default for Parallel {
    fn default() -> Self {
        Parallel {
            workers: 1,
            fanout: Fanout::Hash,
            pin: Vec::new(),
            stop: Arc::new(AtomicBool::new(false)),
        }
    }
}

impl Parallel {
    /// `n` workers, flow-hash fan-out, no pinning.
    pub fn workers(n: usize) -> Parallel {
        Parallel {
            workers: n.max(1),
            ..Parallel::default()
        }
    }

    /// The CPU worker `i` is pinned to, if any.
    pub fn cpu_for(&self, i: usize) -> Option<usize> {
        if self.pin.is_empty() {
            None
        } else {
            Some(self.pin[i % self.pin.len()])
        }
    }
}

/// How one worker's read loop ended.
pub(crate) struct Drive {
    pub(crate) error: Option<SourceError>,
    pub(crate) stopped: bool,
    pub(crate) packets_read: u64,
}

/// What one worker of a multi-worker run produced.
pub struct WorkerReport<H, K> {
    /// The worker's handler, after all its events.
    pub handler: H,
    /// The worker's hooks (e.g. its filter with its counters).
    pub hooks: K,
    /// The worker's statistics (its shard only).
    pub stats: GlobalStats,
    /// Packets the worker read (for a file: the whole file, every worker).
    pub packets_read: u64,
    /// The input error that stopped the worker, if any.
    pub error: Option<SourceError>,
    /// The worker was stopped (hook, stop flag, packet limit not counted).
    pub stopped: bool,
    /// Why pinning the worker to its CPU failed, if it did (the worker ran unpinned).
    pub pin_error: Option<String>,
    /// Live capture: the kernel's counters of the worker's socket.
    pub kernel: Option<KernelStats>,
    /// Live capture through AF_XDP: the socket's and its pool's counters.
    pub xsk: Option<crate::source::af_xdp::XskStats>,
    /// Live capture: the socket error that stopped the worker, if any.
    pub live_error: Option<LiveError>,
}

/// What a multi-worker run produced: each worker's report and the merged
/// statistics.
pub struct ParallelReport<H, K> {
    /// Per worker, in worker order.
    pub workers: Vec<WorkerReport<H, K>>,
    /// The statistics of all workers together ([`GlobalStats::merge`]).
    pub stats: GlobalStats,
    /// Packets read from the input: for a file, the file's packets (every
    /// worker reads them all); for live capture, the sum over the workers.
    pub packets_read: u64,
    /// The first worker's input error, if any (for a file every worker meets
    /// the same one at the same packet).
    pub error: Option<SourceError>,
    /// Some worker was stopped early.
    pub stopped: bool,
}

impl<H: Handler, K: RunHooks> ParallelReport<H, K> {
    /// Merges worker reports; `shared_input` says every worker read the
    /// same packets (a file) rather than its own (kernel fan-out).
    pub(crate) fn from_workers(
        mut workers: Vec<WorkerReport<H, K>>,
        defrag: DefragMerge,
        shared_input: bool,
    ) -> Self {
        let mut stats = GlobalStats::default();
        let mut packets_read = 0;
        let mut error = None;
        let mut stopped = false;
        for w in &mut workers {
            stats.merge(&w.stats, defrag);
            packets_read = if shared_input {
                packets_read.max(w.packets_read)
            } else {
                packets_read + w.packets_read
            };
            if error.is_none() {
                error = w.error.take();
            }
            stopped |= w.stopped;
        }
        ParallelReport {
            workers,
            stats,
            packets_read,
            error,
            stopped,
        }
    }
}

/// Waits for every worker thread of a scope, in order, and returns their
/// reports; a worker's panic is resumed in the caller, and a thread that
/// could not be started (the system is out of threads) panics with the
/// reason.
pub(crate) fn join_workers<T>(
    handles: Vec<std::io::Result<std::thread::ScopedJoinHandle<'_, T>>>,
) -> Vec<T> {
    handles
        .into_iter()
        .map(|h| match h {
            Ok(h) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
            Err(e) => panic!("cannot start a worker thread: {e}"),
        })
        .collect()
}

/// Pins the calling thread to one CPU (`sched_setaffinity`).
pub fn pin_current_thread(cpu: usize) -> Result<(), String> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(format!("CPU {cpu} is out of range"));
    }
    // SAFETY: `cpu_set_t` is a plain bit array for which all-zero is a valid
    // (empty) value.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` < CPU_SETSIZE (checked above), so CPU_SET stays inside `set`.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: pid 0 is the calling thread; `set` is a valid, initialised
    // cpu_set_t and the size passed is its size.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(format!(
            "cannot pin to CPU {cpu}: {}",
            std::io::Error::last_os_error()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinning_to_cpu_0_works_and_out_of_range_is_refused() {
        std::thread::spawn(|| {
            pin_current_thread(0).expect("CPU 0 exists");
            // SAFETY: sched_getcpu has no preconditions.
            let cpu = unsafe { libc::sched_getcpu() };
            assert_eq!(cpu, 0);
        })
        .join()
        .expect("thread");
        assert!(pin_current_thread(1 << 20).is_err());
    }

    #[test]
    fn cpu_for_cycles_through_the_list() {
        let mut p = Parallel::workers(3);
        assert_eq!(p.cpu_for(0), None);
        p.pin = vec![1, 0];
        assert_eq!(
            (p.cpu_for(0), p.cpu_for(1), p.cpu_for(2)),
            (Some(1), Some(0), Some(1))
        );
    }
}
