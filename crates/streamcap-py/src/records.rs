//! `flows()`: the command line's flow records, as dicts.
//!
//! The records are built by the command line's own code
//! (`streamcap-cli/src/record.rs` and `community_id.rs`, compiled into this
//! crate as they are), so a record has exactly the fields and values of the
//! JSON that `streamcap flows` prints; only the container differs (a dict
//! with `orig` and `resp` nested).

use crate::community_id::{self, CommunityId};
use crate::engine;
use crate::options::{Kind, Options};
use crate::record::{DirRecord, FlowRecord};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pyo3::{intern, IntoPyObjectExt};
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use streamcap::deliver::{Chunk, FlowEnd, Handler, Stream};
use streamcap::flow::Direction;

/// Records handed to the calling thread at a time.
const BATCH: usize = 1024;
/// Batches in flight at most: the engine waits when the interpreter is
/// this far behind, so records do not pile up.
const BATCHES_IN_FLIGHT: usize = 64;

/// A record and its Community ID.
pub struct Rec {
    pub record: FlowRecord,
    pub community_id: Option<CommunityId>,
}

impl Rec {
    /// The record of an ended connection, as the command line builds it;
    /// `hashers` are the directions' digests when they were computed.
    pub fn of<S>(fe: &FlowEnd<'_, S>, seed: u16, digests: Option<[Option<String>; 2]>) -> Rec {
        let mut record = FlowRecord::from_flow(fe);
        if let Some([o, r]) = digests {
            record.orig.sha256 = o;
            record.resp.sha256 = r;
        }
        let community_id = community_id::of_record(&record, seed);
        Rec {
            record,
            community_id,
        }
    }
}

/// The hex SHA-256 of a direction (the empty stream's when no byte came).
fn hex_digest(h: Option<Box<Sha256>>) -> String {
    hex::encode(h.map(|h| *h).unwrap_or_default().finalize())
}

/// `ts` / `last_ts`: the JSON's number (6 decimals) as the float `json.loads` makes of it.
fn ts_float(ts: crate::record::Ts) -> f64 {
    ts.text().parse().unwrap_or(f64::NAN)
}

fn dir_dict<'py>(py: Python<'py>, d: &DirRecord) -> PyResult<Bound<'py, PyDict>> {
    let o = PyDict::new(py);
    o.set_item(intern!(py, "pkts"), d.pkts)?;
    o.set_item(intern!(py, "bytes"), d.bytes)?;
    o.set_item(intern!(py, "stream_bytes"), d.stream_bytes)?;
    o.set_item(intern!(py, "captured"), d.captured)?;
    o.set_item(intern!(py, "discarded"), d.discarded)?;
    o.set_item(intern!(py, "dropped"), d.dropped)?;
    o.set_item(intern!(py, "missing"), d.missing)?;
    o.set_item(intern!(py, "sha256"), d.sha256.as_deref())?;
    o.set_item(intern!(py, "priority"), d.priority)?;
    Ok(o)
}

/// A record as the dict `json.loads` makes of its JSON line.
pub fn record_dict<'py>(py: Python<'py>, rec: &Rec) -> PyResult<Bound<'py, PyDict>> {
    let r = &rec.record;
    let d = PyDict::new(py);
    d.set_item(intern!(py, "ts"), ts_float(r.ts))?;
    d.set_item(intern!(py, "last_ts"), ts_float(r.last_ts))?;
    match r.proto.name() {
        Some(n) => d.set_item(intern!(py, "proto"), n)?,
        None => d.set_item(intern!(py, "proto"), r.proto.0)?,
    }
    d.set_item(intern!(py, "src_ip"), r.src_ip.to_string())?;
    d.set_item(intern!(py, "src_port"), r.src_port)?;
    d.set_item(intern!(py, "dst_ip"), r.dst_ip.to_string())?;
    d.set_item(intern!(py, "dst_port"), r.dst_port)?;
    d.set_item(intern!(py, "vlan"), r.vlan)?;
    d.set_item(intern!(py, "orig"), dir_dict(py, &r.orig)?)?;
    d.set_item(intern!(py, "resp"), dir_dict(py, &r.resp)?)?;
    d.set_item(intern!(py, "end"), r.end)?;
    let errors = PyList::empty(py);
    for e in r.errors.names() {
        errors.append(e)?;
    }
    d.set_item(intern!(py, "errors"), errors)?;
    if let Some(t) = &r.tunnel {
        d.set_item(intern!(py, "tunnel"), t)?;
    }
    if let Some(a) = r.app {
        d.set_item(intern!(py, "app"), a)?;
    }
    d.set_item(
        intern!(py, "community_id"),
        rec.community_id.as_ref().map(CommunityId::as_str),
    )?;
    Ok(d)
}

/// The engine-side handler of `flows()`: a digest per direction when
/// asked, a record per connection, sent in batches to the calling thread.
struct FlowsHandler {
    digest: bool,
    seed: u16,
    batch: Vec<Rec>,
    /// Dropped when the run is over.
    tx: Option<mpsc::SyncSender<Vec<Rec>>>,
    stop: Arc<AtomicBool>,
}

impl FlowsHandler {
    fn send(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send(batch).is_ok());
        if !sent {
            // The caller is gone (an exception while it read): stop.
            self.stop.store(true, Ordering::Relaxed);
        }
    }
}

impl engine::Finish for FlowsHandler {
    /// The last records, then the end of this handler's records.
    fn finish(&mut self) {
        self.send();
        self.tx = None;
    }
}

impl Handler for FlowsHandler {
    /// The digest of the direction, from its first delivered byte.
    type State = Option<Box<Sha256>>;
    const WANTS_ON_CREATE: bool = false;
    const WANTS_ON_CLOSE: bool = false;

    fn on_data(&mut self, s: &mut Stream<'_, Self::State>, c: &Chunk<'_>) {
        if self.digest {
            s.state()
                .get_or_insert_with(|| Box::new(Sha256::new()))
                .update(c.new_data());
        }
    }

    fn on_flow_end(&mut self, fe: &mut FlowEnd<'_, Self::State>) {
        let digests = self.digest.then(|| {
            [
                Some(hex_digest(fe.state(Direction::Orig).take())),
                Some(hex_digest(fe.state(Direction::Resp).take())),
            ]
        });
        self.batch.push(Rec::of(fe, self.seed, digests));
        if self.batch.len() >= BATCH {
            self.send();
        }
    }
}

/// `flows(path, options)`: the engine runs on its own threads; this thread
/// turns the records into dicts as they come, and waits with the GIL
/// released.
pub fn flows(
    py: Python<'_>,
    path: PathBuf,
    opts: Option<&Bound<'_, PyDict>>,
) -> PyResult<Py<PyList>> {
    let opts = Options::parse(Kind::Flows, opts)?;
    let (tx, rx) = mpsc::sync_channel::<Vec<Rec>>(BATCHES_IN_FLIGHT);
    let (digest, seed) = (opts.digest, opts.community_id_seed);
    // Every handler gets the run's stop flag, to stop it when this thread
    // is gone.
    let stop = Arc::new(AtomicBool::new(false));
    let handler_stop = stop.clone();
    let tx = std::sync::Mutex::new(tx);
    let running = engine::start(&opts, path, stop, move |_| FlowsHandler {
        digest,
        seed,
        batch: Vec::with_capacity(BATCH),
        tx: Some(
            tx.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone(),
        ),
        stop: handler_stop.clone(),
    })?;
    let rx = std::sync::Mutex::new(rx);
    let out = PyList::empty(py);
    let mut interrupted = None;
    // Until every sender is gone: the handlers drop theirs when the run is
    // over, the run's thread its own when it ends.
    loop {
        match py.detach(|| engine::lock(&rx).recv_timeout(engine::POLL)) {
            Ok(batch) => {
                for rec in &batch {
                    out.append(record_dict(py, rec)?)?;
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if interrupted.is_none() {
            if let Err(e) = py.check_signals() {
                running.stop.store(true, Ordering::Relaxed);
                interrupted = Some(e);
            }
        }
    }
    let mut f = running.wait(py)?;
    if let Some(e) = interrupted {
        return Err(e);
    }
    engine::check_finished(py, &mut f, Some(out.as_any()))?;
    Ok(out.unbind())
}

/// Converts a record for an `on_flow_end` callback.
pub fn record_object(py: Python<'_>, rec: &Rec) -> PyResult<Py<PyAny>> {
    record_dict(py, rec)?.into_py_any(py)
}
