//! `streams()`: the reassembled streams of a capture, as an iterator.
//!
//! The engine runs on its own threads (no GIL) and collects each stream's
//! bytes until the stream closes, then queues it for the iterator. Memory
//! is bounded three ways: the engine's own budget (`memory`), at most
//! `max_buffered` bytes collected in open and queued streams together
//! (past it, the streams that get more bytes are discarded from there on:
//! their `data` is a prefix, `complete` is false and `counters` say how
//! many bytes were discarded), and at most `queue` finished streams waiting
//! (the engine waits for the consumer beyond it).

use crate::desc::{Desc, StreamData};
use crate::engine::{self, Finish, Finished, Running};
use crate::options::{Kind, Options};
use pyo3::exceptions::PyStopIteration;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use streamcap::deliver::{Handler, OwnedChunk, Returns, Stream};

/// A finished stream on its way to the iterator.
struct Done {
    desc: Desc,
    data: Vec<u8>,
}

/// The engine-side handler of `streams()`.
struct StreamsHandler {
    tx: Option<mpsc::SyncSender<Done>>,
    /// Bytes collected in open and queued streams, all workers together.
    buffered: Arc<AtomicUsize>,
    max_buffered: usize,
    stop: Arc<AtomicBool>,
    spare: Vec<Vec<u8>>,
}

impl Finish for StreamsHandler {
    fn finish(&mut self) {
        self.tx = None;
    }
}

impl Handler for StreamsHandler {
    /// The stream's bytes so far.
    type State = Vec<u8>;
    const WANTS_ON_CREATE: bool = false;
    /// Chunks by value: a stream's first chunk becomes its buffer without a copy.
    const TAKES_CHUNKS: bool = true;

    fn on_chunk_owned(&mut self, s: &mut Stream<'_, Vec<u8>>, chunk: OwnedChunk) -> usize {
        let charged = chunk.charged;
        let new = chunk.data.get(chunk.new_from..).unwrap_or_default();
        let n = new.len();
        let held = self.buffered.fetch_add(n, Ordering::AcqRel) + n;
        let st = s.state();
        if st.is_empty() && chunk.new_from == 0 {
            let old = std::mem::replace(st, chunk.data);
            if old.capacity() > 0 {
                self.spare.push(old);
            }
        } else {
            st.extend_from_slice(new);
            let mut v = chunk.data;
            v.clear();
            self.spare.push(v);
        }
        if held > self.max_buffered {
            // Over the bound: this stream's later bytes are discarded.
            s.discard();
        }
        charged
    }

    fn on_close(&mut self, s: &mut Stream<'_, Vec<u8>>) {
        let data = std::mem::take(s.state());
        if self.stop.load(Ordering::Relaxed) {
            self.buffered.fetch_sub(data.len(), Ordering::AcqRel);
            return;
        }
        let done = Done {
            desc: Desc::of(s),
            data,
        };
        let n = done.data.len();
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send(done).is_ok());
        if !sent {
            // The iterator is gone: stop.
            self.buffered.fetch_sub(n, Ordering::AcqRel);
            self.stop.store(true, Ordering::Relaxed);
        }
    }

    fn collect_returns(&mut self, returns: &mut Returns) {
        returns.buffers.append(&mut self.spare);
    }
}

struct Inner {
    rx: Mutex<mpsc::Receiver<Done>>,
    running: Option<Running<StreamsHandler>>,
    buffered: Arc<AtomicUsize>,
}

/// An iterator over the finished streams of a capture (`streams()`).
///
/// Streams come in the order they close (each direction of a connection
/// on its own). Stop early with `close()` (or by dropping the iterator):
/// the capture stops and its thread ends.
#[pyclass(module = "streamcap._native", name = "StreamIterator")]
pub struct StreamIterator {
    inner: Mutex<Option<Inner>>,
    /// The statistics once the capture is over.
    stats: Option<Py<PyDict>>,
}

/// `streams(path, options)`.
pub fn streams(path: PathBuf, opts: Option<&Bound<'_, PyDict>>) -> PyResult<StreamIterator> {
    let opts = Options::parse(Kind::Streams, opts)?;
    let (tx, rx) = mpsc::sync_channel::<Done>(opts.queue);
    let stop = Arc::new(AtomicBool::new(false));
    let buffered: Arc<AtomicUsize> = Arc::default();
    let (b, st, max) = (buffered.clone(), stop.clone(), opts.max_buffered);
    let tx = Mutex::new(tx);
    let running = engine::start(&opts, path, stop, move |_| StreamsHandler {
        tx: Some(tx.lock().unwrap_or_else(PoisonError::into_inner).clone()),
        buffered: b.clone(),
        max_buffered: max,
        stop: st.clone(),
        spare: Vec::new(),
    })?;
    Ok(StreamIterator {
        inner: Mutex::new(Some(Inner {
            rx: Mutex::new(rx),
            running: Some(running),
            buffered,
        })),
        stats: None,
    })
}

impl StreamIterator {
    /// Ends the run: waits for it and raises its error, if any.
    fn end(&mut self, py: Python<'_>, mut inner: Inner) -> PyResult<()> {
        let Some(running) = inner.running.take() else {
            return Ok(());
        };
        drop(inner);
        let mut f: Finished<StreamsHandler> = running.wait(py)?;
        self.stats = Some(engine::stats_dict(py, &f.stats, f.stopped)?.unbind());
        engine::check_finished(py, &mut f, None)
    }
}

#[pymethods]
impl StreamIterator {
    /// The iterator itself.
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next stream to close (waiting for it with the GIL released);
    /// raises the capture's error, if any, at the end.
    fn __next__(&mut self, py: Python<'_>) -> PyResult<StreamData> {
        loop {
            let mut guard = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
            let Some(inner) = guard.as_mut() else {
                return Err(PyStopIteration::new_err(()));
            };
            let rx = &inner.rx;
            let got = py.detach(|| engine::lock(rx).recv_timeout(engine::POLL));
            match got {
                Ok(done) => {
                    inner.buffered.fetch_sub(done.data.len(), Ordering::AcqRel);
                    let data = PyBytes::new(py, &done.data).unbind();
                    return Ok(StreamData::new(done.desc, data));
                }
                Err(RecvTimeoutError::Timeout) => {
                    drop(guard);
                    if let Err(e) = py.check_signals() {
                        self.close(py)?;
                        return Err(e);
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let inner = guard.take();
                    drop(guard);
                    if let Some(inner) = inner {
                        self.end(py, inner)?;
                    }
                    return Err(PyStopIteration::new_err(()));
                }
            }
        }
    }

    /// Stops the capture (if it is still running) and waits for its thread;
    /// the iterator yields nothing more.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        let inner = self
            .inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(mut inner) = inner {
            if let Some(r) = inner.running.as_ref() {
                r.stop.store(true, Ordering::Relaxed);
            }
            // Dropping the receiver ends a wait of the engine to queue a stream.
            let running = inner.running.take();
            drop(inner);
            if let Some(r) = running {
                let f = r.wait(py)?;
                self.stats = Some(engine::stats_dict(py, &f.stats, f.stopped)?.unbind());
            }
        }
        Ok(())
    }

    /// The capture's statistics once the iterator is exhausted or closed (else None).
    #[getter]
    fn stats(&self, py: Python<'_>) -> Option<Py<PyDict>> {
        self.stats.as_ref().map(|s| s.clone_ref(py))
    }
}
