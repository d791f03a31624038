//! Running the engine off the interpreter: the capture runs on threads of
//! its own with the GIL released; the calling thread waits, checking for
//! signals (Ctrl-C stops the capture) and doing what the caller needs done
//! with the GIL held (turning records into dicts).

use crate::options::Options;
use pyo3::exceptions::{
    PyFileNotFoundError, PyOSError, PyPermissionError, PyRuntimeError, PyValueError,
};
use pyo3::prelude::*;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;
use streamcap::capture::{RunHooks, Verdict};
use streamcap::dispatch::workers::Parallel;
use streamcap::filter::Filter;
use streamcap::source::SourceErrorKind;
use streamcap::{FileSource, GlobalStats, Handler, RawPacket, SourceError};

pyo3::create_exception!(
    _native,
    InputError,
    pyo3::exceptions::PyValueError,
    "The capture file is not a readable pcap or pcapng file, or it breaks off \
     part-way. For `flows()`, the records of the connections processed before \
     the break are in the exception's `records` attribute (the command line \
     prints them too, then exits with status 1)."
);

/// How often the waiting thread checks for signals.
pub const POLL: Duration = Duration::from_millis(100);

/// A worker's hooks: the filter and the stop flag.
pub struct Hooks {
    filter: Option<Filter>,
    stop: Arc<AtomicBool>,
}

impl RunHooks for Hooks {
    fn inspect(&mut self, pkt: &RawPacket<'_>) -> Verdict {
        if self.stop.load(Ordering::Relaxed) {
            return Verdict::Stop;
        }
        match self.filter.as_mut() {
            Some(f) => f.inspect(pkt),
            None => Verdict::Process,
        }
    }
}

/// Locks `m`, poisoned or not.
pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A Python exception for an input error.
pub fn source_error(e: SourceError) -> PyErr {
    let text = e.to_string();
    match &e.kind {
        SourceErrorKind::Io(io) => match io.kind() {
            std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(text),
            std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(text),
            _ => PyOSError::new_err(text),
        },
        SourceErrorKind::Unsupported(_) => PyValueError::new_err(text),
        _ => InputError::new_err(text),
    }
}

/// What a finished run leaves: the handlers, the statistics, the input
/// error that ended it early, and whether it was stopped.
pub struct Finished<H> {
    /// Each worker's handler, in worker order.
    pub handlers: Vec<H>,
    /// The statistics of all workers.
    pub stats: GlobalStats,
    /// The input error, if the file broke off.
    pub error: Option<SourceError>,
    /// A filter error met while running (libpcap failed on a packet).
    pub filter_error: Option<String>,
    /// A stop (Ctrl-C, a callback's exception, the consumer went away) ended it early.
    pub stopped: bool,
}

/// What the run's thread does with each handler when the run is over,
/// before it reports the end (e.g. hand over what is still buffered).
pub trait Finish {
    /// Called once, on the run's thread, after the last event.
    fn finish(&mut self) {}
}

/// A run on its own thread.
pub struct Running<H> {
    handle: Option<JoinHandle<()>>,
    done: Mutex<mpsc::Receiver<Finished<H>>>,
    /// Set to stop every worker; open streams are still terminated.
    pub stop: Arc<AtomicBool>,
}

/// Opens the capture (in the calling thread, so that a file that cannot
/// be opened raises at once) and starts the run: worker `i` gets the
/// handler `make(i)`, which runs on the engine's threads. `stop` stops
/// every worker when set (the caller's handlers may set it); open streams
/// are still terminated then.
pub fn start<H, F>(
    opts: &Options,
    path: PathBuf,
    stop: Arc<AtomicBool>,
    make: F,
) -> PyResult<Running<H>>
where
    H: Handler + Finish + Send + 'static,
    F: Fn(usize) -> H + Send + Sync + 'static,
{
    let file = FileSource::open(&path).map_err(source_error)?;
    let hooks: Vec<Option<Hooks>> = opts
        .filters()?
        .into_iter()
        .map(|filter| {
            Some(Hooks {
                filter,
                stop: stop.clone(),
            })
        })
        .collect();
    let hooks = Mutex::new(hooks);
    let par = Parallel {
        stop: stop.clone(),
        ..Parallel::workers(opts.workers)
    };
    let capture = opts.capture.clone();
    let (tx, done) = mpsc::sync_channel(1);
    let handle = std::thread::Builder::new()
        .name("streamcap-run".into())
        .spawn(move || {
            let take = |i: usize| {
                let h = hooks
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get_mut(i)
                    .and_then(Option::take);
                h.unwrap_or_else(|| Hooks {
                    filter: None,
                    stop: par.stop.clone(),
                })
            };
            let finished = match capture.run_source_parallel(file, &par, |i| (make(i), take(i))) {
                Ok(report) => {
                    let mut filter_error = None;
                    let stats = report.stats;
                    let mut handlers = Vec::with_capacity(report.workers.len());
                    for mut w in report.workers {
                        w.handler.finish();
                        if let Some(e) = w.hooks.filter.as_mut().and_then(Filter::take_error) {
                            filter_error.get_or_insert(crate::options::filter_message(e));
                        }
                        handlers.push(w.handler);
                    }
                    Finished {
                        handlers,
                        stats,
                        error: report.error,
                        filter_error,
                        stopped: report.stopped,
                    }
                }
                Err(e) => Finished {
                    handlers: Vec::new(),
                    stats: GlobalStats::default(),
                    error: Some(e),
                    filter_error: None,
                    stopped: false,
                },
            };
            let _ = tx.send(finished);
        })
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the capture thread: {e}")))?;
    Ok(Running {
        handle: Some(handle),
        done: Mutex::new(done),
        stop,
    })
}

impl<H> Running<H> {
    /// Waits (GIL released) up to [`POLL`] for the run to end.
    pub fn poll(&self, py: Python<'_>) -> Option<Finished<H>>
    where
        H: Send,
    {
        let done = &self.done;
        py.detach(|| match lock(done).recv_timeout(POLL) {
            Ok(f) => Some(f),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => None,
        })
    }

    /// Whether the run's thread has ended (it always sends its result first).
    fn thread_gone(&self) -> bool {
        self.handle.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Waits for the end of the run, GIL released, checking for signals:
    /// a signal's exception (KeyboardInterrupt) stops the run, which is
    /// waited for, and is returned.
    pub fn wait(mut self, py: Python<'_>) -> PyResult<Finished<H>>
    where
        H: Send,
    {
        let mut interrupted: Option<PyErr> = None;
        loop {
            if let Some(f) = self.poll(py) {
                self.join(py);
                return match interrupted {
                    Some(e) => Err(e),
                    None => Ok(f),
                };
            }
            if self.thread_gone() {
                // The thread ended without a result: it panicked.
                self.join(py);
                return Err(PyRuntimeError::new_err(
                    "the capture thread failed (a panic in the engine)",
                ));
            }
            if interrupted.is_none() {
                if let Err(e) = py.check_signals() {
                    self.stop.store(true, Ordering::Relaxed);
                    interrupted = Some(e);
                }
            }
        }
    }

    /// Joins the run's thread, GIL released.
    pub fn join(&mut self, py: Python<'_>) {
        if let Some(h) = self.handle.take() {
            py.detach(|| {
                let _ = h.join();
            });
        }
    }
}

impl<H> Drop for Running<H> {
    /// A run dropped early (an exception while its results were read) is
    /// stopped; its thread ends on its own.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The run's statistics as a dict.
pub fn stats_dict<'py>(
    py: Python<'py>,
    s: &GlobalStats,
    stopped: bool,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    use pyo3::types::PyDict;
    let d = PyDict::new(py);
    d.set_item("packets", s.packets)?;
    d.set_item("wire_bytes", s.wire_bytes)?;
    d.set_item("ip_packets", s.ip_packets)?;
    d.set_item("truncated_packets", s.truncated_packets)?;
    d.set_item("malformed", s.malformed())?;
    d.set_item("fragments", s.fragments)?;
    let created: u64 = s.flows_created.iter().sum();
    d.set_item("flows", created)?;
    d.set_item("streams", s.streams)?;
    let t = &s.totals;
    d.set_item("stream_bytes", t.stream_bytes)?;
    d.set_item("captured", t.captured)?;
    d.set_item("discarded", t.discarded)?;
    d.set_item("dropped", t.dropped)?;
    d.set_item("missing", t.missing)?;
    d.set_item("chunks", s.chunks)?;
    d.set_item("memory_peak", s.memory_peak)?;
    d.set_item("memory_limit", s.memory_limit)?;
    d.set_item("stopped", stopped)?;
    Ok(d)
}

/// Raises the error a finished run ended with, if any: a filter that
/// failed on a packet, or an input error (`records`, when given, become
/// the exception's `records` attribute).
pub fn check_finished<H>(
    py: Python<'_>,
    f: &mut Finished<H>,
    records: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    if let Some(e) = f.filter_error.take() {
        return Err(PyValueError::new_err(e));
    }
    if let Some(e) = f.error.take() {
        let err = source_error(e);
        if let Some(r) = records {
            err.value(py).setattr("records", r)?;
        }
        return Err(err);
    }
    Ok(())
}
