//! The engine-side handler of the CLI: digests, stream files, flow records.

use crate::record::FlowRecord;
use crate::sink::RecordSink;
use crate::tcpflow;
use sha2::{Digest, Sha256};
use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long records of a live capture may wait in a worker's buffer.
const LIVE_FLUSH: Duration = Duration::from_secs(1);
use streamcap::deliver::{Chunk, FlowEnd, Handler, Stream};
use streamcap::flow::Direction;
use streamcap_apps::compose::{App, Notes, Reply, Want};

/// Per-direction state (the engine's per-stream user state). It lives inline
/// in every tracked connection, so it is kept to one pointer: what it holds
/// is boxed at the first delivered byte.
#[derive(Default)]
pub struct DirState {
    extra: Option<Box<DirExtra>>,
}

/// What a direction that has delivered bytes needs.
#[derive(Default)]
struct DirExtra {
    hasher: Option<Sha256>,
    /// The file this direction's bytes go to (`streams -w`).
    file: Option<Box<str>>,
}

impl DirState {
    fn extra(&mut self) -> &mut DirExtra {
        self.extra.get_or_insert_with(Default::default)
    }
    fn file(&self) -> Option<Box<str>> {
        self.extra.as_ref().and_then(|x| x.file.clone())
    }
}

/// Why the run must stop early: the first output error of any worker.
#[derive(Default)]
pub struct Failure {
    /// Set once an error is recorded (cheap to poll per packet).
    flag: AtomicBool,
    /// The first error, with the path or "stdout".
    error: Mutex<Option<(String, io::Error)>>,
}

impl Failure {
    /// Records `e` unless an error is already recorded.
    pub fn set(&self, what: String, e: io::Error) {
        let mut slot = self.error.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some((what, e));
        }
        self.flag.store(true, Ordering::Relaxed);
    }

    /// Whether an error was recorded.
    pub fn is_set(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    /// The recorded error.
    pub fn take(&self) -> Option<(String, io::Error)> {
        self.error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

/// Shared between the handlers and the run hooks of every worker.
pub type SharedFailure = Arc<Failure>;

/// The CLI handler.
pub struct CliHandler {
    digest: bool,
    dir: Option<PathBuf>,
    out: RecordSink,
    out_name: String,
    jsonl: Option<RecordSink>,
    failure: SharedFailure,
    /// Records written (interim ones included).
    pub records: u64,
    /// Interim records written (`--active-timeout`).
    pub interim: u64,
    /// Files created in the output directory.
    pub files: u64,
    /// Bytes written to stream files.
    pub file_bytes: u64,
    /// Bytes delivered to the data callback.
    pub delivered: u64,
    /// When the records were last pushed to the outputs (live capture).
    last_flush: Instant,
}

impl CliHandler {
    /// A handler writing records to `out`; `digest` hashes each direction;
    /// `dir` writes each direction's bytes to its own file and `streams.jsonl`.
    pub fn new(
        out: RecordSink,
        out_name: String,
        digest: bool,
        dir: Option<(PathBuf, RecordSink)>,
        failure: SharedFailure,
    ) -> CliHandler {
        let (dir, jsonl) = match dir {
            Some((d, w)) => (Some(d), Some(w)),
            None => (None, None),
        };
        CliHandler {
            digest,
            dir,
            out,
            out_name,
            jsonl,
            failure,
            records: 0,
            interim: 0,
            files: 0,
            file_bytes: 0,
            delivered: 0,
            last_flush: Instant::now(),
        }
    }

    fn fail(&self, what: String, e: io::Error) {
        self.failure.set(what, e);
    }

    fn failed(&self) -> bool {
        self.failure.is_set()
    }

    /// Hands over and flushes this worker's records (the trailers are the
    /// run's, written after every worker finished); records the first error.
    pub fn finish(&mut self) {
        if let Err(e) = self.out.flush() {
            self.fail(self.out_name.clone(), e);
        }
        if let (Some(w), Some(d)) = (self.jsonl.as_mut(), self.dir.as_ref()) {
            if let Err(e) = w.flush() {
                let p = d.join("streams.jsonl").display().to_string();
                self.fail(p, e);
            }
        }
    }

    fn write_chunk<S>(
        &mut self,
        dir: &Path,
        s: &Stream<'_, S>,
        st: &mut DirState,
        c: &Chunk<'_>,
    ) -> Result<(), (String, io::Error)> {
        let data = c.new_data();
        if data.is_empty() {
            return Ok(());
        }
        let offset = c.offset + c.new_from as u64;
        let mut file = match st.file() {
            Some(name) => {
                let p = dir.join(&*name);
                OpenOptions::new()
                    .write(true)
                    .open(&p)
                    .map_err(|e| (p.display().to_string(), e))?
            }
            None => {
                let (src, sport) = s.src();
                let (dst, dport) = s.dst();
                let base = tcpflow::flow_name(src, sport, dst, dport, s.key().vlan());
                let (name, f) = create_unique(dir, &base)?;
                st.extra().file = Some(name.into_boxed_str());
                self.files += 1;
                f
            }
        };
        let name = st.file().unwrap_or_default();
        let name = &*name;
        let res = file
            .seek(SeekFrom::Start(offset))
            .and_then(|_| file.write_all(data));
        res.map_err(|e| (dir.join(name).display().to_string(), e))?;
        self.file_bytes += data.len() as u64;
        Ok(())
    }
}

/// Creates `base`, `basec1`, `basec2`… whichever does not exist yet (tcpflow's rule).
fn create_unique(dir: &Path, base: &str) -> Result<(String, File), (String, io::Error)> {
    for n in 0u32.. {
        let name = tcpflow::with_count(base, n);
        let p = dir.join(&name);
        match OpenOptions::new().write(true).create_new(true).open(&p) {
            Ok(f) => return Ok((name, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err((p.display().to_string(), e)),
        }
    }
    Err((
        dir.join(base).display().to_string(),
        io::Error::other("no free file name"),
    ))
}

impl Handler for CliHandler {
    type State = DirState;
    // Records are written at the end of a connection; nothing happens when a
    // stream starts or closes.
    const WANTS_ON_CREATE: bool = false;
    const WANTS_ON_CLOSE: bool = false;

    fn on_data(&mut self, s: &mut Stream<'_, DirState>, c: &Chunk<'_>) {
        let mut st = std::mem::take(s.state());
        self.data(s, &mut st, c);
        *s.state() = st;
    }

    /// Live capture: records reach the output within about a second.
    fn on_tick(&mut self) {
        self.tick();
    }

    fn on_flow_end(&mut self, fe: &mut FlowEnd<'_, DirState>) {
        let mut orig = std::mem::take(fe.state(Direction::Orig));
        let mut resp = std::mem::take(fe.state(Direction::Resp));
        self.record(fe, &mut orig, &mut resp, &Notes::default());
    }

    /// An active timeout: an interim record.
    fn on_flow_update(&mut self, fe: &mut FlowEnd<'_, DirState>) {
        let files = [Direction::Orig, Direction::Resp].map(|d| fe.state(d).file());
        self.interim_record(fe, files, &Notes::default());
    }
}

impl CliHandler {
    /// A chunk: into the digest, into the stream file.
    fn data<S>(&mut self, s: &Stream<'_, S>, st: &mut DirState, c: &Chunk<'_>) {
        let data = c.new_data();
        self.delivered += data.len() as u64;
        if self.digest {
            st.extra()
                .hasher
                .get_or_insert_with(Sha256::new)
                .update(data);
        }
        if let Some(dir) = self.dir.clone() {
            if self.failed() {
                return;
            }
            if let Err((p, e)) = self.write_chunk(&dir, s, st, c) {
                self.fail(p, e);
            }
        } else {
            std::hint::black_box(data);
        }
    }

    /// Live capture: hands the records over about once a second.
    fn tick(&mut self) {
        if self.last_flush.elapsed() < LIVE_FLUSH || self.failed() {
            return;
        }
        self.last_flush = Instant::now();
        if let Err(e) = self.out.flush() {
            self.fail(self.out_name.clone(), e);
        }
        if let (Some(w), Some(d)) = (self.jsonl.as_mut(), self.dir.as_ref()) {
            if let Err(e) = w.flush() {
                self.fail(d.join("streams.jsonl").display().to_string(), e);
            }
        }
    }

    /// The interim record of a connection still open (`--active-timeout`):
    /// its counters so far and `"end":"active"`; no digest (the streams go
    /// on), the stream files as they are (`files`, orig and resp).
    fn interim_record<S>(
        &mut self,
        fe: &FlowEnd<'_, S>,
        files: [Option<Box<str>>; 2],
        notes: &Notes,
    ) {
        if self.failed() {
            return;
        }
        let mut r = FlowRecord::from_flow(fe);
        r.app = notes.app;
        r.extra.service = notes.service;
        if self.digest {
            // Not null: the final record has the digest.
            r.orig.sha256 = None;
            r.resp.sha256 = None;
        }
        if self.dir.is_some() {
            let [o, rf] = files;
            r.orig.file = Some(o.map(String::from));
            r.resp.file = Some(rf.map(String::from));
        }
        self.records += 1;
        self.interim += 1;
        self.push(r);
    }

    /// Hands `r` to the record output (and `streams.jsonl`).
    fn push(&mut self, r: FlowRecord) {
        let copy = self.jsonl.as_ref().map(|_| r.clone());
        if let Err(e) = self.out.push(r) {
            self.fail(self.out_name.clone(), e);
            return;
        }
        if let (Some(w), Some(d), Some(r)) = (self.jsonl.as_mut(), self.dir.as_ref(), copy) {
            if let Err(e) = w.push(r) {
                let p = d.join("streams.jsonl").display().to_string();
                self.fail(p, e);
            }
        }
    }

    /// The connection's record, with what the other applications noted.
    fn record<S>(
        &mut self,
        fe: &FlowEnd<'_, S>,
        orig: &mut DirState,
        resp: &mut DirState,
        notes: &Notes,
    ) {
        if self.failed() {
            return;
        }
        let mut r = FlowRecord::from_flow(fe);
        r.app = notes.app;
        r.extra.service = notes.service;
        for (dir, st) in [(Direction::Orig, orig), (Direction::Resp, resp)] {
            let extra = st.extra.take().map(|x| *x).unwrap_or_default();
            let sha = if self.digest {
                let h = extra.hasher.unwrap_or_default();
                Some(hex::encode(h.finalize()))
            } else {
                None
            };
            let file = self.dir.as_ref().map(|_| extra.file.map(String::from));
            let d = match dir {
                Direction::Orig => &mut r.orig,
                Direction::Resp => &mut r.resp,
            };
            d.sha256 = sha;
            d.file = file;
        }
        self.records += 1;
        self.push(r);
    }
}

/// The flow records as one application among several (`--app`, `run`):
/// bytes are wanted only for digests and stream files; the record gets
/// the label the classifier noted.
impl App for CliHandler {
    type State = DirState;

    fn start<S>(&mut self, _: &Stream<'_, S>, _: &mut DirState) -> Want {
        if self.digest || self.dir.is_some() {
            Want::All
        } else {
            Want::Nothing
        }
    }

    fn data<S>(&mut self, s: &Stream<'_, S>, st: &mut DirState, c: &Chunk<'_>) -> Reply {
        CliHandler::data(self, s, st, c);
        Want::All.into()
    }

    fn flow_end<S>(
        &mut self,
        fe: &FlowEnd<'_, S>,
        orig: &mut DirState,
        resp: &mut DirState,
        notes: &mut Notes,
    ) {
        self.record(fe, orig, resp, notes);
    }

    fn flow_update<S>(
        &mut self,
        fe: &FlowEnd<'_, S>,
        orig: &mut DirState,
        resp: &mut DirState,
        notes: &mut Notes,
    ) {
        self.interim_record(fe, [orig.file(), resp.file()], notes);
    }

    fn tick(&mut self) {
        CliHandler::tick(self);
    }
}

impl crate::stage::Finish for CliHandler {
    fn finish_app(&mut self) -> crate::stage::StageEnd {
        self.finish();
        crate::stage::StageEnd {
            files: (self.files, self.file_bytes),
            interim: self.interim,
            ..Default::default()
        }
    }
}
