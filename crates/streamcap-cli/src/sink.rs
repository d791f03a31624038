//! Where records go: an output written by its own thread ([`SharedOutput`]),
//! fed by each worker's [`BatchSink`].
//!
//! Writing is taken off the workers' path: a worker formats records into a
//! batch of about 256 KiB and passes the whole batch to the output's writer
//! thread, which does the `write` system calls (and the kernel's copy into a
//! pipe, a terminal or the page cache) on another core. Under a SYN flood,
//! where every packet ends a connection and so makes a record, that was a
//! quarter of a worker's time. At most [`QUEUED_BATCHES`] batches wait, so a
//! slow reader (a terminal, `| less`) slows the workers down instead of
//! growing memory.
//!
//! Guarantees: the records of different workers never interleave (a batch is
//! a run of whole records of one worker); each worker's records keep their
//! order; [`BatchSink::flush`] returns once everything handed over before it
//! is written and flushed, with the first write error if there was one; an
//! error is reported to the worker no later than its next hand-over or flush.

use std::io::{self, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

/// Batches that may wait for the writer thread (about 2 MiB).
pub const QUEUED_BATCHES: usize = 8;

/// Batch size at which a [`BatchSink`] hands its records over. Each hand-over
/// wakes the writer thread; 256 KiB batches (rather than 64 KiB) cut the
/// wake-ups, which under a SYN flood (a record per packet) were about 6 % of
/// a worker's time in the kernel.
const BATCH: usize = 1 << 18;

/// What the writer thread is asked to do.
enum Job {
    /// Write these bytes.
    Write(Vec<u8>),
    /// Flush, then answer with the result (and any earlier write error).
    Flush(SyncSender<io::Result<()>>),
}

/// The first error the writer thread met, kept to be reported to every
/// later hand-over (an `io::Error` cannot be cloned: kind and text are kept).
type FirstError = Arc<Mutex<Option<(io::ErrorKind, String)>>>;

fn stored(error: &FirstError) -> io::Result<()> {
    match &*error.lock().unwrap_or_else(PoisonError::into_inner) {
        Some((kind, text)) => Err(io::Error::new(*kind, text.clone())),
        None => Ok(()),
    }
}

/// Written batches, emptied, for the workers to fill again: a batch
/// allocated by a worker and freed by the writer thread costs the allocator
/// far more than reusing it (glibc walked its bins: 90,000 instructions and
/// 10,000 cache misses per 64 KiB batch).
type Spares = Arc<Mutex<Vec<Vec<u8>>>>;

/// The writer thread's end: owns the real output.
struct Writer {
    jobs: SyncSender<Job>,
    error: FirstError,
    spares: Spares,
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
    /// Starts the writer thread for `out`.
    pub fn spawn(name: &str, mut out: Box<dyn Write + Send>) -> io::Result<SharedOutput> {
        let (jobs, queue): (SyncSender<Job>, Receiver<Job>) = sync_channel(QUEUED_BATCHES);
        let error: FirstError = Arc::default();
        let first = error.clone();
        let spares: Spares = Arc::default();
        let returned = spares.clone();
        let thread = std::thread::Builder::new()
            .name(format!("streamcap-out-{name}"))
            .spawn(move || {
                let fail = |e: io::Error| {
                    let mut slot = first.lock().unwrap_or_else(PoisonError::into_inner);
                    slot.get_or_insert((e.kind(), e.to_string()));
                };
                for job in queue {
                    match job {
                        Job::Write(mut bytes) => {
                            if stored(&first).is_ok() {
                                if let Err(e) = out.write_all(&bytes) {
                                    fail(e);
                                }
                            }
                            bytes.clear();
                            let mut pool = returned.lock().unwrap_or_else(PoisonError::into_inner);
                            // Never more than could be in flight at once.
                            if pool.len() < QUEUED_BATCHES * 2 {
                                pool.push(bytes);
                            }
                        }
                        Job::Flush(done) => {
                            if stored(&first).is_ok() {
                                if let Err(e) = out.flush() {
                                    fail(e);
                                }
                            }
                            let _ = done.send(stored(&first));
                        }
                    }
                }
                let _ = out.flush();
            })?;
        Ok(SharedOutput(Arc::new(Writer {
            jobs,
            error,
            spares,
            thread: Some(thread),
        })))
    }

    /// Queues `bytes` (whole records) for writing; fails with the writer's
    /// first error, if it met one.
    fn write(&self, bytes: Vec<u8>) -> io::Result<()> {
        stored(&self.0.error)?;
        self.0.jobs.send(Job::Write(bytes)).map_err(|_| gone())
    }

    /// An empty batch buffer: a written one if there is one.
    fn empty_batch(&self) -> Vec<u8> {
        let spare = self
            .0
            .spares
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        spare.unwrap_or_else(|| Vec::with_capacity(BATCH + 4096))
    }

    /// Waits until everything queued before is written and flushed.
    fn flush(&self) -> io::Result<()> {
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

/// A worker's end of a [`SharedOutput`]: it collects whole records and hands
/// them over in batches of about 256 KiB (and at `flush`), so the records of
/// different workers never interleave and the workers never wait for a
/// `write` system call.
///
/// Every `write` call is taken to be one whole record (as
/// [`RecordWriter`](crate::output::RecordWriter) writes them); a batch is
/// handed over only between two calls.
pub struct BatchSink {
    shared: SharedOutput,
    batch: Vec<u8>,
}

impl BatchSink {
    /// A sink feeding `shared`.
    pub fn new(shared: SharedOutput) -> BatchSink {
        BatchSink {
            shared,
            batch: Vec::with_capacity(BATCH + 4096),
        }
    }

    fn hand_over(&mut self) -> io::Result<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let full = std::mem::replace(&mut self.batch, self.shared.empty_batch());
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let shared = SharedOutput::spawn("test", Box::new(Calls(calls.clone()))).expect("spawn");
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
        let mut sink = BatchSink::new(SharedOutput::spawn("full", Box::new(out)).expect("spawn"));
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

    /// Dropping the last handle writes what was queued.
    #[test]
    fn dropping_writes_the_queue() {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let shared = SharedOutput::spawn("drop", Box::new(Calls(calls.clone()))).expect("spawn");
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
