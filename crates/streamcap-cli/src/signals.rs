//! Stopping a run: SIGINT (Ctrl-C), SIGTERM and SIGHUP, and `--duration`.
//!
//! The first signal (or the end of `--duration`) *stops*: the stop flag
//! that every worker polls is set, and the actions registered with
//! [`Stopper::on_stop`] run (the input pump closes its pipe, so a worker
//! waiting for standard input sees its end at once). The run then ends as
//! at the end of the input: every open connection is flushed, the records
//! and the summary are written, exit 0.
//!
//! A second signal *aborts*: nothing more is flushed, but the outputs are
//! closed cleanly first. Each output's writer thread ([`crate::sink`])
//! finishes the batch it is writing (batches are whole records), flushes
//! and ends; once every writer has ended (or after [`ABORT_GRACE`], for a
//! writer stuck on a reader that never reads), the process exits with
//! status 130. A file output therefore ends with a whole record, never half
//! a line, and a Parquet file (`--format parquet`) with its footer.

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::{Handle, Signals};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The exit status after a second signal (128 + SIGINT, as shells report it).
pub const ABORT_STATUS: i32 = 130;

/// How long an abort waits for the writer threads to finish their batch.
pub const ABORT_GRACE: Duration = Duration::from_secs(2);

/// Set by a second signal: writer threads stop at their next batch boundary.
static ABORT: AtomicBool = AtomicBool::new(false);

/// Writer threads that have not ended yet.
static WRITERS: AtomicUsize = AtomicUsize::new(0);

/// Whether the run is being aborted (a second signal came).
pub fn aborting() -> bool {
    ABORT.load(Ordering::SeqCst)
}

/// Counts a writer thread as running until the guard is dropped (when the
/// thread ends, normally or because of an abort).
pub fn writer_running() -> WriterGuard {
    WRITERS.fetch_add(1, Ordering::SeqCst);
    WriterGuard(())
}

/// Keeps a writer thread counted (see [`writer_running`]).
pub struct WriterGuard(());

impl Drop for WriterGuard {
    fn drop(&mut self) {
        WRITERS.fetch_sub(1, Ordering::SeqCst);
    }
}

/// An action run once when the run stops.
type OnStop = Box<dyn FnOnce() + Send>;

/// The run's stop flag and what else a stop must do.
pub struct Stopper {
    flag: Arc<AtomicBool>,
    actions: Mutex<Vec<OnStop>>,
}

impl Stopper {
    /// A stopper setting `flag` (the flag the workers poll).
    pub fn new(flag: Arc<AtomicBool>) -> Arc<Stopper> {
        Arc::new(Stopper {
            flag,
            actions: Mutex::new(Vec::new()),
        })
    }

    /// Whether the run was asked to stop.
    pub fn stopped(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// Stops the run: sets the flag, then runs the registered actions once.
    pub fn stop(&self) {
        self.flag.store(true, Ordering::SeqCst);
        let actions =
            std::mem::take(&mut *self.actions.lock().unwrap_or_else(PoisonError::into_inner));
        for a in actions {
            a();
        }
    }

    /// Registers `action` to run when the run stops (at once if it has).
    pub fn on_stop(&self, action: impl FnOnce() + Send + 'static) {
        let mut actions = self.actions.lock().unwrap_or_else(PoisonError::into_inner);
        if self.stopped() {
            drop(actions);
            action();
        } else {
            actions.push(Box::new(action));
        }
    }
}

/// Keeps the signal handlers installed; dropping it removes them (the
/// default actions apply again).
pub struct SignalGuard {
    handle: Handle,
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        self.handle.close();
    }
}

/// Installs the handlers of SIGINT, SIGTERM and SIGHUP: the first stops
/// `stopper`, the second aborts (see the module documentation). With
/// `duration`, the run also stops that many seconds from now.
pub fn install(stopper: &Arc<Stopper>, duration: Option<f64>) -> Result<SignalGuard, String> {
    let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP])
        .map_err(|e| format!("cannot install a signal handler: {e}"))?;
    let handle = signals.handle();
    let s = stopper.clone();
    std::thread::Builder::new()
        .name("streamcap-signals".into())
        .spawn(move || {
            let mut seen = 0;
            for _ in signals.forever() {
                seen += 1;
                if seen == 1 {
                    s.stop();
                } else {
                    abort();
                }
            }
        })
        .map_err(|e| format!("cannot start the signal thread: {e}"))?;
    if let Some(secs) = duration {
        let wait =
            Duration::try_from_secs_f64(secs).map_err(|e| format!("--duration {secs}: {e}"))?;
        let s = stopper.clone();
        std::thread::Builder::new()
            .name("streamcap-duration".into())
            .spawn(move || {
                std::thread::sleep(wait);
                s.stop();
            })
            .map_err(|e| format!("cannot start the --duration timer: {e}"))?;
    }
    Ok(SignalGuard { handle })
}

/// The second signal: lets every writer thread finish its batch and flush
/// (at most [`ABORT_GRACE`]), then exits with [`ABORT_STATUS`].
fn abort() -> ! {
    ABORT.store(true, Ordering::SeqCst);
    let deadline = Instant::now() + ABORT_GRACE;
    while WRITERS.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
    std::process::exit(ABORT_STATUS);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_runs_each_action_once_and_late_ones_at_once() {
        let flag = Arc::new(AtomicBool::new(false));
        let s = Stopper::new(flag.clone());
        let count = Arc::new(AtomicUsize::new(0));
        let c = count.clone();
        s.on_stop(move || {
            c.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(count.load(Ordering::SeqCst), 0);
        s.stop();
        s.stop();
        assert!(flag.load(Ordering::SeqCst));
        assert_eq!(count.load(Ordering::SeqCst), 1);
        let c = count.clone();
        s.on_stop(move || {
            c.fetch_add(10, Ordering::SeqCst);
        });
        assert_eq!(count.load(Ordering::SeqCst), 11);
    }
}
