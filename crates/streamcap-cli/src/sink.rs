//! Where records go: an output written by its own thread ([`SharedOutput`]),
//! fed by each worker's [`RecordSink`] (flow records) and [`BatchSink`]
//! (bytes: headers and trailers).
//!
//! Writing is taken off the workers' path: the output's thread does the
//! `write` system calls (and the kernel's copy into a pipe, a terminal or
//! the page cache) on another core. A single worker also leaves the
//! formatting (JSON, CSV, Zeek) to that thread: it hands its flow records
//! over unformatted, in batches of [`RECORD_BATCH`]. Several workers format
//! their own records, since one thread formatting for all of them would
//! become their bottleneck. Under a SYN flood, where every packet ends a
//! connection and so makes a record, writing was a quarter of a worker's
//! time and formatting about as much again. When the writer thread falls
//! behind (its queue is full), the worker formats the batch itself instead
//! of waiting for room, so the two threads share the formatting: at the end
//! of a SYN flood's input, where 200,000 connections end at once, this cut
//! the writer's tail. At most [`QUEUED_BATCHES`] batches wait, so a slow
//! reader (a terminal, `| less`) slows the workers down instead of growing
//! memory.
//!
//! Taps ([`crate::tap`]: the IPFIX exporter, the Kafka producer) run on
//! the writer thread and see every record beside its formatted line, in
//! output order. With taps, a worker that formats its records itself hands
//! the records over too (`Job::Tapped`: the text, the records, where each
//! line ends), so the output is the text the worker wrote and the taps get
//! the records; one tap thus serves every worker of the run. A text output
//! (alerts, protocol logs: [`text_output`]) feeds its taps each line it
//! writes instead.
//!
//! Guarantees: the records of different workers never interleave (a batch is
//! a run of whole records of one worker); each worker's records keep their
//! order; a flush returns once everything handed over before it is written
//! and flushed, with the first write error if there was one; an error is
//! reported to the worker no later than its next hand-over or flush; on an
//! abort (a second Ctrl-C, see [`crate::signals`]) the thread stops between
//! two batches, after a flush, so the output ends with a whole record, and
//! drops its taps before it ends (the Parquet tap then writes the rows it
//! holds and its footer).

use crate::output::RecordFormat;
use crate::record::FlowRecord;
use crate::tap::{RecordTap, TapError, TapReport};
use std::io::{self, Write};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use streamcap::handoff::send_soon;

/// How often an idle writer thread checks for an abort (a second signal).
const ABORT_POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// Batches that may wait for the writer thread (about 2 MiB).
pub const QUEUED_BATCHES: usize = 8;

/// Records per batch of a [`RecordSink`]: about 256 KiB of JSON lines, and
/// a few hundred KiB of records in memory.
pub const RECORD_BATCH: usize = 512;

/// Size at which a [`RecordSink`] hands over the records it formatted
/// itself. Each hand-over wakes the writer thread; 256 KiB batches (rather
/// than 64 KiB) cut the wake-ups, which under a SYN flood (a record per
/// packet) were about 6 % of a worker's time in the kernel.
const BATCH: usize = 1 << 18;

/// What the writer thread is asked to do.
enum Job {
    /// Write these bytes.
    Write(Vec<u8>),
    /// Format these records and write them.
    Records(Vec<FlowRecord>),
    /// Write these records, formatted by a worker into `text` (record `i`
    /// ends at `ends[i]`): for the taps, which see the records themselves.
    Tapped {
        text: Vec<u8>,
        records: Vec<FlowRecord>,
        ends: Vec<usize>,
    },
    /// Flush, then answer with the result (and any earlier write error).
    Flush(SyncSender<io::Result<()>>),
    /// Finish the taps (after the last record and flush) and answer with
    /// their reports.
    FinishTaps(SyncSender<io::Result<Vec<TapReport>>>),
}

/// The first error the writer thread met, kept to be reported to every
/// later hand-over (an `io::Error` cannot be cloned: kind and text are
/// kept, and whether a tap met it rather than the output).
type FirstError = Arc<Mutex<Option<(io::ErrorKind, String, bool)>>>;

fn stored(error: &FirstError) -> io::Result<()> {
    match &*error.lock().unwrap_or_else(PoisonError::into_inner) {
        Some((_, text, true)) => Err(io::Error::other(TapError(text.clone()))),
        Some((kind, text, false)) => Err(io::Error::new(*kind, text.clone())),
        None => Ok(()),
    }
}

/// Keeps `e` as the first error, unless there is one.
fn keep_first(error: &FirstError, e: &io::Error) {
    let mut slot = error.lock().unwrap_or_else(PoisonError::into_inner);
    if slot.is_none() {
        *slot = Some(match crate::tap::as_tap_error(e) {
            Some(t) => (e.kind(), t.0.clone(), true),
            None => (e.kind(), e.to_string(), false),
        });
    }
}

/// Hands each record and its line (`text[ends[i-1]..ends[i]]`) to every
/// tap; the first error is kept (as the tap's) and ends the feeding.
fn feed_taps(
    taps: &mut [Box<dyn RecordTap>],
    records: &[FlowRecord],
    text: &[u8],
    ends: &[usize],
    first: &FirstError,
) {
    if taps.is_empty() {
        return;
    }
    let mut start = 0;
    for (r, &end) in records.iter().zip(ends) {
        let line = text.get(start..end).unwrap_or_default();
        start = end;
        for t in taps.iter_mut() {
            if let Err(e) = t.record(r, line) {
                keep_first(first, &crate::tap::tap_error(t.name(), &e));
                return;
            }
        }
    }
}

/// Hands each line of `text` (whole lines, each ending with a newline; a
/// last line without one is taken too) to every tap, without its newline;
/// the first error is kept (as the tap's) and ends the feeding.
fn feed_lines(taps: &mut [Box<dyn RecordTap>], text: &[u8], first: &FirstError) {
    if taps.is_empty() {
        return;
    }
    let body = text.strip_suffix(b"\n").unwrap_or(text);
    if body.is_empty() {
        return;
    }
    for line in body.split(|&b| b == b'\n') {
        for t in taps.iter_mut() {
            if let Err(e) = t.line(line) {
                keep_first(first, &crate::tap::tap_error(t.name(), &e));
                return;
            }
        }
    }
}

/// Written batches, emptied, for the workers to fill again: a batch
/// allocated by a worker and freed by the writer thread costs the allocator
/// far more than reusing it (glibc walked its bins: 90,000 instructions and
/// 10,000 cache misses per 64 KiB batch).
type Spares<T> = Arc<Mutex<Vec<Vec<T>>>>;

/// Puts an emptied batch back for reuse, unless enough wait already.
fn give_back<T>(spares: &Spares<T>, mut batch: Vec<T>) {
    batch.clear();
    let mut pool = spares.lock().unwrap_or_else(PoisonError::into_inner);
    // Never more than could be in flight at once.
    if pool.len() < QUEUED_BATCHES * 2 {
        pool.push(batch);
    }
}

/// A spare batch from `spares`, or a new one of `capacity`.
fn take_spare<T>(spares: &Spares<T>, capacity: usize) -> Vec<T> {
    let spare = spares.lock().unwrap_or_else(PoisonError::into_inner).pop();
    spare.unwrap_or_else(|| Vec::with_capacity(capacity))
}

/// The writer thread's end: owns the real output.
struct Writer {
    jobs: SyncSender<Job>,
    /// How the thread formats record batches (for a worker that formats a
    /// batch itself when the queue is full).
    format: RecordFormat,
    /// Whether taps see the records (then the records reach the thread
    /// even when a worker formats them).
    tapped: bool,
    error: FirstError,
    spares: Spares<u8>,
    record_spares: Spares<FlowRecord>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Closing the queue ends the thread once it has written what waits.
        let (closed, _) = sync_channel(0);
        self.jobs = closed;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One output shared by several workers, written by its own thread. Clones
/// refer to the same output; the thread ends (after writing everything
/// queued) when the last clone is dropped.
#[derive(Clone)]
pub struct SharedOutput(Arc<Writer>);

impl SharedOutput {
    /// Starts the writer thread for `out`; record batches are formatted in
    /// `format`.
    pub fn spawn(
        name: &str,
        out: Box<dyn Write + Send>,
        format: RecordFormat,
    ) -> io::Result<SharedOutput> {
        SharedOutput::spawn_tapped(name, out, format, Vec::new())
    }

    /// [`SharedOutput::spawn`], with `taps` fed every record written, on
    /// the writer thread (see [`crate::tap`]).
    pub fn spawn_tapped(
        name: &str,
        out: Box<dyn Write + Send>,
        format: RecordFormat,
        taps: Vec<Box<dyn RecordTap>>,
    ) -> io::Result<SharedOutput> {
        SharedOutput::spawn_inner(name, out, format, taps, false)
    }

    /// An output of text the workers format themselves (alerts, protocol
    /// logs: only whole lines are handed over), with `taps` fed each line
    /// it writes ([`RecordTap::line`]), on the writer thread.
    pub fn spawn_lines(
        name: &str,
        out: Box<dyn Write + Send>,
        taps: Vec<Box<dyn RecordTap>>,
    ) -> io::Result<SharedOutput> {
        // Only `Job::Write`s reach this output: the record format is unused.
        let unused = RecordFormat {
            format: crate::output::Format::Json,
            files: false,
            community_seed: 0,
            app: false,
        };
        SharedOutput::spawn_inner(name, out, unused, taps, true)
    }

    /// The writer thread; with `lines`, the taps get the lines of
    /// `Job::Write`s (a text output), else only records.
    fn spawn_inner(
        name: &str,
        mut out: Box<dyn Write + Send>,
        format: RecordFormat,
        mut taps: Vec<Box<dyn RecordTap>>,
        lines: bool,
    ) -> io::Result<SharedOutput> {
        let tapped = !taps.is_empty();
        let (jobs, queue): (SyncSender<Job>, Receiver<Job>) = sync_channel(QUEUED_BATCHES);
        let error: FirstError = Arc::default();
        let first = error.clone();
        let spares: Spares<u8> = Arc::default();
        let record_spares: Spares<FlowRecord> = Arc::default();
        let (returned, returned_records) = (spares.clone(), record_spares.clone());
        // Counted from before the thread starts, so an abort never misses it.
        let running = crate::signals::writer_running();
        let thread = std::thread::Builder::new()
            .name(format!("streamcap-out-{name}"))
            .spawn(move || {
                let _running = running;
                let fail = |e: io::Error| keep_first(&first, &e);
                let mut text = Vec::with_capacity(BATCH + 4096);
                let mut ends = Vec::new();
                loop {
                    // An abort (second signal) ends the thread between two
                    // batches, after a flush: the output ends with a whole
                    // record.
                    if crate::signals::aborting() {
                        break;
                    }
                    let job = match queue.recv_timeout(ABORT_POLL) {
                        Ok(job) => job,
                        Err(RecvTimeoutError::Timeout) => continue,
                        Err(RecvTimeoutError::Disconnected) => break,
                    };
                    match job {
                        Job::Write(bytes) => {
                            if stored(&first).is_ok() {
                                if let Err(e) = out.write_all(&bytes) {
                                    fail(e);
                                } else if lines {
                                    feed_lines(&mut taps, &bytes, &first);
                                }
                            }
                            give_back(&returned, bytes);
                        }
                        Job::Records(records) => {
                            if stored(&first).is_ok() {
                                text.clear();
                                ends.clear();
                                for r in &records {
                                    format.append(r, &mut text);
                                    ends.push(text.len());
                                }
                                if let Err(e) = out.write_all(&text) {
                                    fail(e);
                                } else {
                                    feed_taps(&mut taps, &records, &text, &ends, &first);
                                }
                            }
                            give_back(&returned_records, records);
                        }
                        Job::Tapped {
                            text: bytes,
                            records,
                            ends: at,
                        } => {
                            if stored(&first).is_ok() {
                                if let Err(e) = out.write_all(&bytes) {
                                    fail(e);
                                } else {
                                    feed_taps(&mut taps, &records, &bytes, &at, &first);
                                }
                            }
                            give_back(&returned, bytes);
                            give_back(&returned_records, records);
                        }
                        Job::Flush(done) => {
                            if stored(&first).is_ok() {
                                for t in taps.iter_mut() {
                                    if let Err(e) = t.flush() {
                                        fail(crate::tap::tap_error(t.name(), &e));
                                        break;
                                    }
                                }
                            }
                            if stored(&first).is_ok() {
                                if let Err(e) = out.flush() {
                                    fail(e);
                                }
                            }
                            let _ = done.send(stored(&first));
                        }
                        Job::FinishTaps(done) => {
                            let mut reports = Vec::new();
                            if stored(&first).is_ok() {
                                for t in taps.iter_mut() {
                                    match t.finish() {
                                        Ok(r) => reports.push(r),
                                        Err(e) => {
                                            fail(crate::tap::tap_error(t.name(), &e));
                                            break;
                                        }
                                    }
                                }
                            }
                            let _ = done.send(stored(&first).map(|()| reports));
                        }
                    }
                }
                let _ = out.flush();
                // Closed here, before `_running` lets an abort exit the
                // process: a tap's drop may complete a file (the Parquet
                // footer).
                drop(taps);
            })?;
        Ok(SharedOutput(Arc::new(Writer {
            jobs,
            format,
            tapped,
            error,
            spares,
            record_spares,
            thread: Some(thread),
        })))
    }

    /// Queues `bytes` (whole units: records, a header, a trailer) for
    /// writing; fails with the writer's first error, if it met one.
    fn write(&self, bytes: Vec<u8>) -> io::Result<()> {
        stored(&self.0.error)?;
        self.0.jobs.send(Job::Write(bytes)).map_err(|_| gone())
    }

    /// Queues records formatted by a worker, with the records, for the
    /// taps; fails like [`SharedOutput::write`].
    fn write_tapped(
        &self,
        text: Vec<u8>,
        records: Vec<FlowRecord>,
        ends: Vec<usize>,
    ) -> io::Result<()> {
        stored(&self.0.error)?;
        let job = Job::Tapped {
            text,
            records,
            ends,
        };
        send_soon(&self.0.jobs, job).map_err(|_| gone())
    }

    /// Whether taps see the records.
    pub fn is_tapped(&self) -> bool {
        self.0.tapped
    }

    /// Finishes the taps, once every record is written and flushed, and
    /// returns their reports; fails with the first error of the output or
    /// of a tap.
    pub fn finish_taps(&self) -> io::Result<Vec<TapReport>> {
        if !self.0.tapped {
            return stored(&self.0.error).map(|()| Vec::new());
        }
        let (done, answer) = sync_channel(1);
        self.0
            .jobs
            .send(Job::FinishTaps(done))
            .map_err(|_| gone())?;
        answer.recv().map_err(|_| gone())?
    }

    /// Queues `records` for formatting and writing; fails like
    /// [`SharedOutput::write`]. If the queue is full (the writer thread is
    /// behind), formats them on the calling thread instead of waiting, and
    /// queues the text: the records keep their place in the output.
    fn write_records(&self, records: Vec<FlowRecord>) -> io::Result<()> {
        stored(&self.0.error)?;
        match self.0.jobs.try_send(Job::Records(records)) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(Job::Records(records))) if self.0.tapped => {
                let mut text = self.empty_batch(BATCH + 4096);
                let mut ends = Vec::with_capacity(records.len());
                for r in &records {
                    self.0.format.append(r, &mut text);
                    ends.push(text.len());
                }
                self.write_tapped(text, records, ends)
            }
            Err(TrySendError::Full(Job::Records(records))) => {
                let mut text = self.empty_batch(BATCH + 4096);
                for r in &records {
                    self.0.format.append(r, &mut text);
                }
                give_back(&self.0.record_spares, records);
                // The queue is more often than not still full: polling for
                // room rather than sleeping spares this worker a wake-up
                // per batch (252 at the end of a SYN flood of 200,000
                // connections).
                stored(&self.0.error)?;
                send_soon(&self.0.jobs, Job::Write(text)).map_err(|_| gone())
            }
            // Not sent (only `Job::Records` is): the thread is gone.
            Err(_) => Err(gone()),
        }
    }

    /// An empty batch buffer of at least `capacity` bytes: a written one if
    /// there is one.
    fn empty_batch(&self, capacity: usize) -> Vec<u8> {
        take_spare(&self.0.spares, capacity)
    }

    /// Waits until everything queued before is written and flushed; fails
    /// with the writer's first error, if it met one.
    pub fn flush(&self) -> io::Result<()> {
        let (done, answer) = sync_channel(1);
        self.0.jobs.send(Job::Flush(done)).map_err(|_| gone())?;
        answer.recv().map_err(|_| gone())?
    }
}

/// The writer thread is gone (it only ends early by panicking). Not
/// `BrokenPipe`: the CLI treats that as a reader that went away and stops
/// quietly, and this must be reported.
fn gone() -> io::Error {
    io::Error::other("the output's writer thread ended unexpectedly")
}

/// A byte sink feeding a [`SharedOutput`], for an output's header and
/// trailer: it keeps what is written until `flush` (or until it holds
/// 256 KiB) and hands it over whole.
///
/// Every `write` call is taken to be one whole unit (a header, a trailer);
/// a batch is handed over only between two calls.
pub struct BatchSink {
    shared: SharedOutput,
    batch: Vec<u8>,
}

impl BatchSink {
    /// A sink feeding `shared`.
    pub fn new(shared: SharedOutput) -> BatchSink {
        BatchSink {
            shared,
            batch: Vec::new(),
        }
    }

    fn hand_over(&mut self) -> io::Result<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let full = std::mem::replace(&mut self.batch, self.shared.empty_batch(0));
        self.shared.write(full)
    }
}

impl Write for BatchSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.batch.extend_from_slice(buf);
        if self.batch.len() >= BATCH {
            self.hand_over()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.hand_over()?;
        self.shared.flush()
    }
}

/// Opens `path` (`-` or none: standard output) for text the workers
/// format themselves (alerts, protocol logs), written by a thread named
/// after `what`, with `taps` fed each line it writes (`--kafka`); the
/// output and its name for messages.
pub fn text_output(
    what: &str,
    path: Option<&std::path::Path>,
    taps: Vec<Box<dyn RecordTap>>,
) -> Result<(SharedOutput, String), String> {
    let raw = crate::run::open_output(path).map_err(|e| {
        let p = path.unwrap_or(std::path::Path::new("-"));
        format!("{}: cannot create: {e}", p.display())
    })?;
    let name = path.map_or_else(|| "stdout".to_string(), |p| p.display().to_string());
    let out = SharedOutput::spawn_lines(what, raw, taps)
        .map_err(|e| format!("cannot start the writer thread of {name}: {e}"))?;
    Ok((out, name))
}

/// A worker's text on its way to a [`SharedOutput`] (alerts, protocol
/// logs): each record is formatted into the batch by its writer
/// ([`TextBatch::add`]), and the batch is handed over when it holds 64 KiB
/// and at a flush. The first error is recorded in the run's `Failure`,
/// after which nothing more is written.
pub struct TextBatch {
    sink: BatchSink,
    batch: Vec<u8>,
    out_name: String,
    failure: crate::handler::SharedFailure,
}

impl TextBatch {
    /// A batch for `shared`, named `out_name` in error messages.
    pub fn new(
        shared: SharedOutput,
        out_name: String,
        failure: crate::handler::SharedFailure,
    ) -> TextBatch {
        TextBatch {
            sink: BatchSink::new(shared),
            batch: Vec::new(),
            out_name,
            failure,
        }
    }

    /// Formats one record into the batch with `write`; hands the batch
    /// over when it is full.
    pub fn add(&mut self, write: impl FnOnce(&mut Vec<u8>)) {
        write(&mut self.batch);
        if self.batch.len() >= 1 << 16 {
            self.hand_over(false);
        }
    }

    /// Hands the batch over (and, with `flush`, waits until it is written).
    pub fn hand_over(&mut self, flush: bool) {
        if self.failure.is_set() {
            self.batch.clear();
            return;
        }
        let mut res = self.sink.write_all(&self.batch);
        self.batch.clear();
        if flush {
            res = res.and_then(|()| self.sink.flush());
        }
        if let Err(e) = res {
            self.failure.set(self.out_name.clone(), e);
        }
    }
}

/// A worker's end of a [`SharedOutput`] for flow records. The records of a
/// batch are one worker's, in order, and different workers' batches never
/// interleave.
///
/// Made with [`RecordSink::unformatted`], it collects [`RECORD_BATCH`]
/// records (moved, not formatted) and hands them to the output's thread,
/// which formats and writes them: the single-worker case, where the other
/// core is free. Made with [`RecordSink::formatting`], it formats records
/// itself into batches of about 256 KiB: the case of several workers,
/// which would otherwise all wait for one formatting thread.
pub struct RecordSink {
    shared: SharedOutput,
    pending: Pending,
}

/// What a [`RecordSink`] has collected since its last hand-over.
enum Pending {
    /// Records for the output's thread to format.
    Records(Vec<FlowRecord>),
    /// Records this worker formatted, in `RecordFormat`; with taps, the
    /// records themselves too, and where each one's text ends.
    Formatted(RecordFormat, Vec<u8>, Option<(Vec<FlowRecord>, Vec<usize>)>),
}

impl RecordSink {
    /// A sink that leaves the formatting to `shared`'s thread.
    pub fn unformatted(shared: SharedOutput) -> RecordSink {
        RecordSink {
            shared,
            pending: Pending::Records(Vec::with_capacity(RECORD_BATCH)),
        }
    }

    /// A sink that formats its records in `format` before handing them
    /// over (with the records themselves when `shared` has taps).
    pub fn formatting(shared: SharedOutput, format: RecordFormat) -> RecordSink {
        let tapped = shared
            .is_tapped()
            .then(|| (Vec::with_capacity(RECORD_BATCH), Vec::new()));
        RecordSink {
            shared,
            pending: Pending::Formatted(format, Vec::with_capacity(BATCH + 4096), tapped),
        }
    }

    /// Adds one record; hands the batch over when it is full (and fails with
    /// the writer's first error, if it met one).
    pub fn push(&mut self, r: FlowRecord) -> io::Result<()> {
        let full = match &mut self.pending {
            Pending::Records(records) => {
                records.push(r);
                records.len() >= RECORD_BATCH
            }
            Pending::Formatted(format, bytes, None) => {
                format.append(&r, bytes);
                bytes.len() >= BATCH
            }
            Pending::Formatted(format, bytes, Some((records, ends))) => {
                format.append(&r, bytes);
                ends.push(bytes.len());
                records.push(r);
                bytes.len() >= BATCH
            }
        };
        if full {
            self.hand_over()?;
        }
        Ok(())
    }

    fn hand_over(&mut self) -> io::Result<()> {
        match &mut self.pending {
            Pending::Records(records) if !records.is_empty() => {
                let spare = take_spare(&self.shared.0.record_spares, RECORD_BATCH);
                let full = std::mem::replace(records, spare);
                self.shared.write_records(full)
            }
            Pending::Formatted(_, bytes, None) if !bytes.is_empty() => {
                let full = std::mem::replace(bytes, self.shared.empty_batch(BATCH + 4096));
                self.shared.write(full)
            }
            Pending::Formatted(_, bytes, Some((records, ends))) if !bytes.is_empty() => {
                let full = std::mem::replace(bytes, self.shared.empty_batch(BATCH + 4096));
                let spare = take_spare(&self.shared.0.record_spares, RECORD_BATCH);
                let recs = std::mem::replace(records, spare);
                let at = std::mem::replace(ends, Vec::with_capacity(recs.len()));
                self.shared.write_tapped(full, recs, at)
            }
            _ => Ok(()),
        }
    }

    /// Hands over what is collected and waits until everything handed over
    /// is written and flushed.
    pub fn flush(&mut self) -> io::Result<()> {
        self.hand_over()?;
        self.shared.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::Format;

    const JSON: RecordFormat = RecordFormat {
        format: Format::Json,
        files: false,
        community_seed: 0,
        app: false,
    };

    /// Records handed over by two workers, one leaving the formatting to the
    /// output's thread and one formatting itself, come out each worker's in
    /// its order, in runs of one worker's records, exactly as formatting them
    /// one by one would.
    #[test]
    fn record_sinks_keep_each_workers_order_formatted_either_way() {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let csv = RecordFormat {
            format: Format::Csv,
            files: false,
            community_seed: 0,
            app: false,
        };
        let shared =
            SharedOutput::spawn("recs", Box::new(Calls(calls.clone())), csv).expect("spawn");
        // One sink of each kind: the output looks the same.
        let mut a = RecordSink::unformatted(shared.clone());
        let mut b = RecordSink::formatting(shared, csv);
        let n = RECORD_BATCH * 4 + 7;
        for i in 0..n {
            a.push(FlowRecord::for_test(i as u16)).expect("push");
            b.push(FlowRecord::for_test(50_000 + i as u16))
                .expect("push");
        }
        a.flush().expect("flush");
        b.flush().expect("flush");
        let calls = calls.lock().unwrap_or_else(PoisonError::into_inner);
        let mut seen_a = Vec::new();
        let mut seen_b = Vec::new();
        for c in calls.iter() {
            let text = String::from_utf8(c.clone()).expect("utf-8");
            let ports: Vec<u16> = text
                .lines()
                .map(|l| {
                    l.split(',')
                        .nth(4)
                        .and_then(|p| p.parse().ok())
                        .expect("port")
                })
                .collect();
            let from_a = ports[0] < 50_000;
            assert!(
                ports.iter().all(|&p| (p < 50_000) == from_a),
                "one worker per batch"
            );
            if from_a { &mut seen_a } else { &mut seen_b }.extend(ports);
        }
        assert_eq!(seen_a, (0..n as u16).collect::<Vec<_>>());
        assert_eq!(
            seen_b,
            (0..n as u16).map(|i| 50_000 + i).collect::<Vec<_>>()
        );
        let mut one = Vec::new();
        csv.append(&FlowRecord::for_test(3), &mut one);
        let all: Vec<u8> = calls.iter().flatten().copied().collect();
        let all = String::from_utf8(all).expect("utf-8");
        assert!(all.contains(std::str::from_utf8(&one).expect("utf-8")));
    }

    /// When the writer thread is behind (its queue full), the worker formats
    /// batches itself: the output is still every record in order, as the
    /// format writes it.
    #[test]
    fn a_worker_formats_when_the_writer_is_behind() {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let slow = Slow {
            calls: Calls(calls.clone()),
            stalls: 3,
        };
        let shared = SharedOutput::spawn("slow", Box::new(slow), JSON).expect("spawn");
        let mut sink = RecordSink::unformatted(shared);
        let n = RECORD_BATCH * (QUEUED_BATCHES * 3) + 11;
        let mut expected = Vec::new();
        for i in 0..n {
            let r = FlowRecord::for_test(i as u16);
            JSON.append(&r, &mut expected);
            sink.push(r).expect("push");
        }
        sink.flush().expect("flush");
        let calls = calls.lock().unwrap_or_else(PoisonError::into_inner);
        let all: Vec<u8> = calls.iter().flatten().copied().collect();
        assert!(all == expected, "records out of order or altered");
    }

    /// A sink that stalls on its first `stalls` writes (a slow reader).
    struct Slow {
        calls: Calls,
        stalls: usize,
    }
    impl Write for Slow {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            if self.stalls > 0 {
                self.stalls -= 1;
                std::thread::sleep(std::time::Duration::from_millis(30));
            }
            self.calls.write(b)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A sink that remembers every write it got.
    struct Calls(Arc<Mutex<Vec<Vec<u8>>>>);
    impl Write for Calls {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(b.to_vec());
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn batches_hold_whole_records_only() {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let shared =
            SharedOutput::spawn("test", Box::new(Calls(calls.clone())), JSON).expect("spawn");
        let mut a = BatchSink::new(shared.clone());
        let mut b = BatchSink::new(shared);
        let rec_a = vec![b'a'; 1000];
        let rec_b = vec![b'b'; 700];
        for _ in 0..300 {
            a.write_all(&rec_a).expect("write");
            b.write_all(&rec_b).expect("write");
        }
        a.flush().expect("flush");
        b.flush().expect("flush");
        // Flushed means written: no need to wait for the thread.
        let calls = calls.lock().unwrap_or_else(PoisonError::into_inner);
        let total: usize = calls.iter().map(Vec::len).sum();
        assert_eq!(total, 300 * 1700);
        for c in calls.iter() {
            // Each hand-over is a run of one worker's whole records.
            let (unit, len) = if c[0] == b'a' {
                (b'a', 1000)
            } else {
                (b'b', 700)
            };
            assert!(c.iter().all(|&x| x == unit));
            assert_eq!(c.len() % len, 0);
        }
        assert!(calls.len() > 2, "records were handed over in batches");
    }

    /// A sink that takes `room` bytes, then fails.
    struct Full {
        room: usize,
        kept: Arc<Mutex<Vec<u8>>>,
    }
    impl Write for Full {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            if b.len() > self.room {
                return Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"));
            }
            self.room -= b.len();
            self.kept
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A write error reaches the worker (at the latest at flush), and the
    /// batches before it were written whole.
    #[test]
    fn write_errors_reach_the_worker() {
        let kept = Arc::new(Mutex::new(Vec::new()));
        let out = Full {
            room: 3 * BATCH,
            kept: kept.clone(),
        };
        let mut sink =
            BatchSink::new(SharedOutput::spawn("full", Box::new(out), JSON).expect("spawn"));
        let record = vec![b'r'; 1000];
        let mut first_error = None;
        for i in 0..1000 {
            if let Err(e) = sink.write_all(&record) {
                first_error = Some((i, e));
                break;
            }
        }
        let flushed = sink.flush();
        let e = match first_error {
            Some((_, e)) => e,
            None => flushed.expect_err("flush reports the error"),
        };
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        assert!(e.to_string().contains("disk full"), "{e}");
        let kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
        assert!(!kept.is_empty() && kept.len() <= 3 * BATCH);
        assert_eq!(kept.len() % record.len(), 0, "only whole records");
    }

    /// A tap of records' lines, for the test of text outputs.
    struct Lines(Arc<Mutex<Vec<Vec<u8>>>>);
    impl RecordTap for Lines {
        fn name(&self) -> &str {
            "lines"
        }
        fn record(&mut self, _: &FlowRecord, _: &[u8]) -> io::Result<()> {
            Err(io::Error::other("a record on a text output"))
        }
        fn line(&mut self, line: &[u8]) -> io::Result<()> {
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(line.to_vec());
            Ok(())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
        fn finish(&mut self) -> io::Result<TapReport> {
            Ok(TapReport {
                kind: "lines",
                line: String::new(),
                json: serde_json::Value::Null,
                failure: None,
            })
        }
    }

    /// A text output hands its taps each line it writes, without the
    /// newline, in order, whatever the batches.
    #[test]
    fn a_text_output_feeds_its_taps_line_by_line() {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let shared = SharedOutput::spawn_lines(
            "text",
            Box::new(Calls(calls.clone())),
            vec![Box::new(Lines(seen.clone()))],
        )
        .expect("spawn");
        let mut sink = BatchSink::new(shared.clone());
        let mut want = Vec::new();
        for i in 0..5000 {
            let l = format!("{{\"n\":{i},\"uid\":\"C{i}\"}}");
            sink.write_all(format!("{l}\n").as_bytes()).expect("write");
            want.push(l.into_bytes());
        }
        sink.flush().expect("flush");
        let reports = shared.finish_taps().expect("finish");
        assert_eq!(reports.len(), 1);
        let seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
        assert!(*seen == want, "{} lines seen of {}", seen.len(), want.len());
        let calls = calls.lock().unwrap_or_else(PoisonError::into_inner);
        let written: usize = calls.iter().map(Vec::len).sum();
        assert_eq!(written, want.iter().map(|l| l.len() + 1).sum::<usize>());
    }

    /// Dropping the last handle writes what was queued.
    #[test]
    fn dropping_writes_the_queue() {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let shared =
            SharedOutput::spawn("drop", Box::new(Calls(calls.clone())), JSON).expect("spawn");
        let mut sink = BatchSink::new(shared.clone());
        for _ in 0..200 {
            sink.write_all(&[b'x'; 1000]).expect("write");
        }
        drop(sink);
        drop(shared);
        let calls = calls.lock().unwrap_or_else(PoisonError::into_inner);
        let total: usize = calls.iter().map(Vec::len).sum();
        // The three whole batches went out; the two records still in the
        // sink were never handed over (a sink is flushed before it is
        // dropped).
        let per_batch = BATCH.div_ceil(1000);
        assert_eq!(total, (200 / per_batch) * per_batch * 1000);
    }
}
