//! `Capture.run()`: Python callbacks for stream creation, data, termination
//! and connection end.
//!
//! The engine runs with the GIL released; each callback attaches to the
//! interpreter for its own duration. An exception raised by a callback is
//! kept (with its traceback), the run is stopped (open streams are still
//! terminated, without calling Python again) and the exception is raised
//! from `run()`.

use crate::buffer::ChunkBuffer;
use crate::desc::{reason_name, ChunkInfo, PyStream};
use crate::engine;
use crate::options::{Kind, Options};
use crate::records::{record_object, Rec};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyMemoryView};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use streamcap::deliver::{FlowEnd, Handler, OwnedChunk, Returns, Stream};

/// The Python callables (any may be absent).
pub struct Callables {
    pub on_create: Option<Py<PyAny>>,
    pub on_data: Option<Py<PyAny>>,
    pub on_close: Option<Py<PyAny>>,
    pub on_flow_end: Option<Py<PyAny>>,
}

/// Bytes a stream kept with `keep_chunk`, from stream offset `start`.
struct Kept {
    start: u64,
    data: Vec<u8>,
}

/// Per stream: its descriptor object (made at its first callback) and the
/// bytes it kept.
#[derive(Default)]
pub struct StreamState {
    obj: Option<Py<PyStream>>,
    kept: Option<Kept>,
}

/// The engine-side handler of a `Capture`.
struct PyHandler {
    cb: Arc<Callables>,
    /// The run's stop flag: set when a callback raised.
    stop: Arc<AtomicBool>,
    /// The first exception a callback raised.
    error: Arc<Mutex<Option<PyErr>>>,
    /// Chunk buffers to give back to the engine.
    spare: Vec<Vec<u8>>,
    seed: u16,
}

enum Event {
    Create,
    Data(OwnedChunk),
    Close,
}

impl PyHandler {
    fn failed(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Keeps the first exception and stops the run.
    fn fail(&self, e: PyErr) {
        let mut slot = self.error.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(e);
        }
        self.stop.store(true, Ordering::Relaxed);
    }

    fn give_back(&mut self, mut v: Vec<u8>) {
        v.clear();
        if v.capacity() > 0 {
            self.spare.push(v);
        }
    }

    /// The bytes of a data event: kept bytes (unless a gap came between)
    /// followed by the chunk's bytes that come after them.
    fn chunk_bytes(&mut self, st: &mut StreamState, chunk: OwnedChunk) -> (Vec<u8>, ChunkInfo) {
        let gap = chunk.gap.map(|g| (g.offset, g.len));
        let reason = Some(reason_name(chunk.reason));
        let fresh_at = chunk.offset + chunk.new_from as u64;
        match st.kept.take() {
            Some(mut k) if gap.is_none() && chunk.offset <= k.start + k.data.len() as u64 => {
                let skip = (k.start + k.data.len() as u64 - chunk.offset) as usize;
                k.data
                    .extend_from_slice(chunk.data.get(skip..).unwrap_or_default());
                self.give_back(chunk.data);
                let info = ChunkInfo {
                    offset: k.start,
                    new_from: (fresh_at - k.start) as usize,
                    gap,
                    reason,
                };
                (k.data, info)
            }
            _ => {
                let info = ChunkInfo {
                    offset: chunk.offset,
                    new_from: chunk.new_from,
                    gap,
                    reason,
                };
                (chunk.data, info)
            }
        }
    }

    /// Runs the Python callback of `event` for `s`, attached to the
    /// interpreter, and applies what it asked for.
    fn call(&mut self, s: &mut Stream<'_, StreamState>, event: Event) {
        let cb = self.cb.clone();
        let f = match &event {
            Event::Create => cb.on_create.as_ref(),
            Event::Data(_) => cb.on_data.as_ref(),
            Event::Close => cb.on_close.as_ref(),
        };
        let Some(f) = f else {
            if let Event::Data(chunk) = event {
                self.give_back(chunk.data);
            }
            return;
        };
        Python::attach(|py| {
            let obj = match &s.state().obj {
                Some(o) => o.clone_ref(py),
                None => match Py::new(py, PyStream::new(py, s)) {
                    Ok(o) => {
                        s.state().obj = Some(o.clone_ref(py));
                        o
                    }
                    Err(e) => return self.fail(e),
                },
            };
            let (result, kept) = match event {
                Event::Create | Event::Close => {
                    obj.borrow_mut(py).enter(s, ChunkInfo::default());
                    (f.call1(py, (obj.clone_ref(py),)).map(drop), None)
                }
                Event::Data(chunk) => {
                    let mut st = std::mem::take(s.state());
                    let (bytes, info) = self.chunk_bytes(&mut st, chunk);
                    *s.state() = st;
                    obj.borrow_mut(py).enter(s, info);
                    let start = info.offset;
                    match Bound::new(py, ChunkBuffer::new(bytes)) {
                        Ok(buffer) => {
                            let result = PyMemoryView::from(buffer.as_any()).and_then(|view| {
                                let r = f.call1(py, (obj.clone_ref(py), &view)).map(drop);
                                // The view is invalid from now on. Release
                                // fails only when the callback still holds
                                // an export of the view itself (the bytes
                                // then stay with the buffer: see reclaim).
                                if let Err(e) = view.call_method0(pyo3::intern!(py, "release")) {
                                    drop(e);
                                }
                                r
                            });
                            (result, Some((buffer, start)))
                        }
                        Err(e) => (Err(e), None),
                    }
                }
            };
            let actions = obj.borrow_mut(py).leave();
            if let Some((buffer, start)) = kept {
                let buffer = buffer.get();
                if actions.keep {
                    // Kept bytes are taken back when no view holds them,
                    // else copied (the views keep the original).
                    let data = buffer.reclaim().unwrap_or_else(|| buffer.copy());
                    s.state().kept = Some(Kept { start, data });
                } else if let Some(v) = buffer.reclaim() {
                    self.give_back(v);
                }
            }
            actions.apply(s);
            if let Err(e) = result {
                self.fail(e);
            }
        });
    }
}

impl engine::Finish for PyHandler {}

impl Handler for PyHandler {
    type State = StreamState;
    /// Chunks come by value, so that their buffers can be lent to Python
    /// and kept by it when a view outlives the callback.
    const TAKES_CHUNKS: bool = true;

    fn on_create(&mut self, s: &mut Stream<'_, StreamState>) {
        if !self.failed() && self.cb.on_create.is_some() {
            self.call(s, Event::Create);
        }
    }

    fn on_chunk_owned(&mut self, s: &mut Stream<'_, StreamState>, chunk: OwnedChunk) -> usize {
        // The budget gets the chunk's bytes back at once: what Python keeps
        // beyond the callback is Python's memory.
        let charged = chunk.charged;
        if self.failed() || self.cb.on_data.is_none() {
            self.give_back(chunk.data);
        } else {
            self.call(s, Event::Data(chunk));
        }
        charged
    }

    fn on_close(&mut self, s: &mut Stream<'_, StreamState>) {
        if !self.failed() && self.cb.on_close.is_some() {
            self.call(s, Event::Close);
        }
        // The descriptor object is let go with the interpreter attached.
        let st = std::mem::take(s.state());
        if let Some(obj) = st.obj {
            Python::attach(|_| drop(obj));
        }
    }

    fn on_flow_end(&mut self, fe: &mut FlowEnd<'_, StreamState>) {
        let Some(f) = self.cb.on_flow_end.as_ref() else {
            return;
        };
        if self.failed() {
            return;
        }
        let rec = Rec::of(fe, self.seed, None);
        let result = Python::attach(|py| {
            let r = record_object(py, &rec)?;
            f.call1(py, (r,)).map(drop)
        });
        if let Err(e) = result {
            self.fail(e);
        }
    }

    fn collect_returns(&mut self, returns: &mut Returns) {
        returns.buffers.append(&mut self.spare);
    }
}

/// `Capture.run()`: runs the callbacks over the capture; returns the run's
/// statistics.
pub fn run_capture(
    py: Python<'_>,
    path: PathBuf,
    opts: Option<&Bound<'_, PyDict>>,
    cb: Callables,
) -> PyResult<Py<PyDict>> {
    let opts = Options::parse(Kind::Capture, opts)?;
    let cb = Arc::new(cb);
    let stop = Arc::new(AtomicBool::new(false));
    let error: Arc<Mutex<Option<PyErr>>> = Arc::default();
    let (cbs, stops, errors) = (cb.clone(), stop.clone(), error.clone());
    let seed = opts.community_id_seed;
    let running = engine::start(&opts, path, stop, move |_| PyHandler {
        cb: cbs.clone(),
        stop: stops.clone(),
        error: errors.clone(),
        spare: Vec::new(),
        seed,
    })?;
    let mut finished = running.wait(py)?;
    let stats = engine::stats_dict(py, &finished.stats, finished.stopped)?;
    drop(std::mem::take(&mut finished.handlers));
    let raised = error.lock().unwrap_or_else(PoisonError::into_inner).take();
    if let Some(e) = raised {
        return Err(e);
    }
    engine::check_finished(py, &mut finished, None)?;
    Ok(stats.unbind())
}
