//! A capture file read with `read(2)` through a window that slides along it.
//!
//! The file's bytes pass through one buffer, [`WINDOW`] bytes long, that the
//! reader refills as it goes: the kernel copies each byte once (and a record
//! cut by the window's end is moved to its start), into memory the CPU has
//! just used, so the record headers and payloads that the worker reads next
//! are in its cache. Measured against a memory-mapped file on the 2 M-packet
//! campus trace (1.64 GB in the page cache): mapping took 0.21 s of system
//! time (a page fault per 64 KiB, the page-table work, the unmap at exit)
//! where reading takes 0.08–0.10 s, and the worker stalled on the first
//! touch of every record header. libpcap reads files the same way.
//!
//! With read-ahead ([`Window::open_limited`]'s `ahead`), a thread of its own
//! does the reading, a window ahead of the worker, into a pair of
//! buffers: the kernel's copy then runs on another core, beside the worker
//! instead of in its way (on the 2 M-packet traces, interleaved runs: `flows`
//! on small packets 0.186 → 0.170 s, `streams` on `campus` 0.803 → 0.734 s,
//! for about 5 % more CPU time in all).
//! Each end polls for the other's buffer a short while before it sleeps
//! ([`crate::handoff`]), which spares the worker a wake-up per buffer.
//! The bytes, offsets, end and errors are the same either way.

use crate::handoff::recv_soon;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

/// Bytes read ahead at a time.
pub(super) const WINDOW: usize = 1 << 20;

/// Most bytes kept in front of each read-ahead buffer's data, where the end
/// of the buffer before it (a record cut by the buffer's end) is moved. A
/// longer end is joined with the new data in a buffer of their own.
const HEADROOM: usize = 64 << 10;

/// Read-ahead buffers: one being read by the worker, one being filled (or
/// ready). A third made no difference in speed.
const AHEAD_BUFFERS: usize = 2;

/// The part of a file in memory: `bytes()` is the file from offset `base()`
/// on, up to what has been read.
///
/// Guarantees: the bytes are exactly the file's bytes at those offsets;
/// [`Window::advance`] either reads more, or sets [`Window::at_eof`], or
/// fails with the read error.
#[derive(Debug)]
pub(super) struct Window {
    feed: Feed,
    /// Bytes read ahead at a time (the buffer's usual length).
    window: usize,
    /// `buf[start..filled]` holds the file from `base` on.
    buf: Vec<u8>,
    start: usize,
    filled: usize,
    base: u64,
    eof: bool,
    /// File size when it is a regular file (for progress), else 0.
    size: u64,
    /// Where reading stops: the size of a regular file when it was first
    /// opened (so that every reader of a file that is still being written
    /// sees the same bytes, as a memory map of it would), else none.
    limit: Option<u64>,
}

/// Where a window's bytes come from.
#[derive(Debug)]
enum Feed {
    /// `read(2)` on the worker's thread, into the window's one buffer.
    Inline(File),
    /// A read-ahead thread's buffers.
    Ahead(Ahead),
}

/// The worker's end of a read-ahead thread.
#[derive(Debug)]
struct Ahead {
    /// Buffers the thread has filled, in file order.
    full: Receiver<Filled>,
    /// Buffers the worker is done with, for the thread to fill again.
    free: SyncSender<Vec<u8>>,
    /// Whether `Window::buf` is one of the ring's buffers (else a joined
    /// buffer of its own, dropped when done with).
    holds_ring_buffer: bool,
}

/// A buffer from the read-ahead thread: the file's next `len` bytes after
/// the buffer's headroom (the smaller of [`HEADROOM`] and the window), and
/// whether the file ended (or reading it failed) right after them.
#[derive(Debug)]
struct Filled {
    buf: Vec<u8>,
    len: usize,
    end: Option<io::Result<()>>,
}

/// The read-ahead thread: fills each free buffer with the file's next
/// `window` bytes (fewer at the end or the limit) and passes it on, until
/// the file ends, a read fails, or the window is dropped.
fn read_ahead(
    mut file: File,
    window: usize,
    headroom: usize,
    mut left: Option<u64>,
    free: Receiver<Vec<u8>>,
    full: SyncSender<Filled>,
) {
    while let Ok(mut buf) = recv_soon(&free) {
        let mut len = 0;
        let mut end = None;
        while len < window {
            let mut room = window - len;
            if let Some(l) = left {
                room = room.min(usize::try_from(l).unwrap_or(usize::MAX));
                if room == 0 {
                    end = Some(Ok(()));
                    break;
                }
            }
            let at = headroom + len;
            match file.read(&mut buf[at..at + room]) {
                Ok(0) => {
                    end = Some(Ok(()));
                    break;
                }
                Ok(n) => {
                    len += n;
                    if let Some(l) = left.as_mut() {
                        *l -= n as u64;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    end = Some(Err(e));
                    break;
                }
            }
        }
        if left == Some(0) {
            // The limit is the end: no need for another round to find it.
            end.get_or_insert(Ok(()));
        }
        let last = end.is_some();
        if full.send(Filled { buf, len, end }).is_err() || last {
            return;
        }
    }
}

impl Window {
    /// Opens `path` and reads its first window, of `window` bytes
    /// ([`WINDOW`]; tests use small ones). A regular file is read up to
    /// `limit` bytes (its size at a first opening, for another reader of
    /// it), or with `None` up to its size now; a smaller file gets a buffer
    /// of its size (plus one byte) and is read at once. With `ahead`, a
    /// larger file (or a pipe) is read by a thread of its own, a window
    /// ahead (see the module's documentation).
    pub(super) fn open_limited(
        path: &Path,
        window: usize,
        limit: Option<u64>,
        ahead: bool,
    ) -> io::Result<Window> {
        let file = File::open(path)?;
        let meta = file.metadata()?;
        let regular = meta.is_file();
        let size = match (regular, limit) {
            (false, _) => 0,
            (true, Some(l)) => l.min(meta.len()),
            (true, None) => meta.len(),
        };
        let limit = regular.then_some(size);
        let window = window.max(1);
        let small = regular && size < window as u64;
        if ahead && !small {
            return Window::start_ahead(file, window, size, limit);
        }
        let len = match usize::try_from(size) {
            Ok(n) if n > 0 && n < window => n + 1,
            _ => window,
        };
        let mut w = Window::new(Feed::Inline(file), window, vec![0; len], size, limit);
        w.fill()?;
        Ok(w)
    }

    /// A window at the file's start that has read nothing yet.
    fn new(feed: Feed, window: usize, buf: Vec<u8>, size: u64, limit: Option<u64>) -> Window {
        Window {
            feed,
            window,
            buf,
            start: 0,
            filled: 0,
            base: 0,
            eof: false,
            size,
            limit,
        }
    }

    /// Starts the read-ahead thread and takes its first buffer.
    fn start_ahead(file: File, window: usize, size: u64, limit: Option<u64>) -> io::Result<Window> {
        let headroom = HEADROOM.min(window);
        let (free_tx, free_rx) = sync_channel(AHEAD_BUFFERS);
        let (full_tx, full_rx) = sync_channel(AHEAD_BUFFERS);
        for _ in 0..AHEAD_BUFFERS {
            // Cannot fail: the channel has room for all of them and the
            // receiver is alive.
            let _ = free_tx.send(vec![0; headroom + window]);
        }
        std::thread::Builder::new()
            .name("streamcap-read".into())
            .spawn(move || read_ahead(file, window, headroom, limit, free_rx, full_tx))?;
        let feed = Feed::Ahead(Ahead {
            full: full_rx,
            free: free_tx,
            holds_ring_buffer: false,
        });
        let mut w = Window::new(feed, window, Vec::new(), size, limit);
        w.take_next()?;
        Ok(w)
    }

    /// The window's usual length, bytes.
    pub(super) fn window(&self) -> usize {
        self.window
    }

    /// Where reading stops (see [`Window::open_limited`]).
    pub(super) fn limit(&self) -> Option<u64> {
        self.limit
    }

    /// The buffer's length (the window, or more while a long record is
    /// read; with read-ahead, plus the headroom).
    #[cfg(test)]
    pub(super) fn buffer_len(&self) -> usize {
        self.buf.len()
    }

    /// Whether a thread reads ahead.
    #[cfg(test)]
    pub(super) fn reads_ahead(&self) -> bool {
        matches!(self.feed, Feed::Ahead(_))
    }

    /// The bytes in memory, from file offset [`Window::base`].
    #[inline]
    pub(super) fn bytes(&self) -> &[u8] {
        &self.buf[self.start..self.filled]
    }

    /// File offset of `bytes()[0]`.
    pub(super) fn base(&self) -> u64 {
        self.base
    }

    /// Whether the end of the file is in memory.
    #[inline]
    pub(super) fn at_eof(&self) -> bool {
        self.eof
    }

    /// The file's size, when known (0 for pipes and other special files).
    pub(super) fn size(&self) -> u64 {
        self.size
    }

    /// Drops the first `consumed` bytes (the reader is past them) and reads
    /// on. When the bytes kept fill the whole buffer (one record longer than
    /// the window), the buffer doubles first; once such a record has been
    /// consumed, it returns to the window's length. With read-ahead, the
    /// bytes kept are put in front of the next buffer's (joined with them
    /// in a buffer of their own when longer than the headroom).
    pub(super) fn advance(&mut self, consumed: usize) -> io::Result<()> {
        let consumed = consumed.min(self.filled - self.start);
        if matches!(self.feed, Feed::Ahead(_)) {
            self.start += consumed;
            self.base += consumed as u64;
            if self.eof {
                return Ok(());
            }
            return self.take_next();
        }
        self.buf.copy_within(consumed..self.filled, 0);
        self.filled -= consumed;
        self.base += consumed as u64;
        if self.filled == self.buf.len() {
            self.buf.resize(self.buf.len() * 2, 0);
        } else if self.buf.len() > self.window && self.filled <= self.window {
            self.buf.truncate(self.window);
            self.buf.shrink_to_fit();
        }
        self.fill()
    }

    /// With read-ahead: the next buffer from the thread, with the bytes not
    /// consumed of the current one put in front of its data.
    fn take_next(&mut self) -> io::Result<()> {
        let Feed::Ahead(ahead) = &mut self.feed else {
            return Ok(());
        };
        let Ok(next) = recv_soon(&ahead.full) else {
            return Err(io::Error::other(
                "the read-ahead thread stopped after an error",
            ));
        };
        let headroom = next.buf.len() - self.window;
        let kept = self.start..self.filled;
        let old = if kept.len() <= headroom {
            // The usual case: the end of the old buffer (part of a record)
            // goes into the new one's headroom.
            let at = headroom - kept.len();
            let mut buf = next.buf;
            buf[at..headroom].copy_from_slice(&self.buf[kept]);
            let old = std::mem::replace(&mut self.buf, buf);
            self.start = at;
            self.filled = headroom + next.len;
            std::mem::replace(&mut ahead.holds_ring_buffer, true).then_some(old)
        } else {
            // A record longer than the headroom: both parts in a buffer of
            // their own, and the new ring buffer goes straight back.
            let mut joined = Vec::with_capacity(kept.len() + next.len);
            joined.extend_from_slice(&self.buf[kept]);
            joined.extend_from_slice(&next.buf[headroom..headroom + next.len]);
            // (A send fails only once the thread has stopped: then nobody
            // needs the buffer.)
            let _ = ahead.free.send(next.buf);
            let old = std::mem::replace(&mut self.buf, joined);
            self.start = 0;
            self.filled = self.buf.len();
            std::mem::replace(&mut ahead.holds_ring_buffer, false).then_some(old)
        };
        if let Some(old) = old {
            let _ = ahead.free.send(old);
        }
        match next.end {
            None => Ok(()),
            Some(Ok(())) => {
                self.eof = true;
                Ok(())
            }
            // The thread has stopped: reading on fails too.
            Some(Err(e)) => Err(e),
        }
    }

    /// Reads until the buffer is full or the file (or its limit) ends.
    fn fill(&mut self) -> io::Result<()> {
        let Feed::Inline(file) = &mut self.feed else {
            return Ok(());
        };
        while self.filled < self.buf.len() && !self.eof {
            let mut room = self.buf.len() - self.filled;
            if let Some(limit) = self.limit {
                let left = limit.saturating_sub(self.base + self.filled as u64);
                room = room.min(usize::try_from(left).unwrap_or(usize::MAX));
                if room == 0 {
                    self.eof = true;
                    break;
                }
            }
            match file.read(&mut self.buf[self.filled..self.filled + room]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_file(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let p =
            std::env::temp_dir().join(format!("streamcap-window-{}-{name}", std::process::id()));
        std::fs::write(&p, bytes).unwrap();
        p
    }

    #[test]
    fn slides_over_the_whole_file_and_grows_for_long_records() {
        let data: Vec<u8> = (0..(3 * WINDOW + 12345)).map(|i| (i % 251) as u8).collect();
        let p = temp_file("slide", &data);
        let mut w = Window::open_limited(&p, WINDOW, None, false).unwrap();
        assert_eq!(w.size(), data.len() as u64);
        assert_eq!(w.bytes(), &data[..WINDOW]);
        assert!(!w.at_eof());
        // Consume part of the window: the rest moves to the front, more is read.
        w.advance(1000).unwrap();
        assert_eq!(w.base(), 1000);
        assert_eq!(w.bytes(), &data[1000..1000 + WINDOW]);
        // Consume nothing with a full window: it doubles.
        w.advance(0).unwrap();
        assert_eq!(w.bytes(), &data[1000..1000 + 2 * WINDOW]);
        // Consume everything: the buffer is back to the window's length,
        // and the end of the file is reached.
        let n = w.bytes().len();
        w.advance(n).unwrap();
        assert_eq!(w.buffer_len(), WINDOW);
        while !w.at_eof() {
            let n = w.bytes().len();
            w.advance(n).unwrap();
        }
        let base = w.base() as usize;
        assert_eq!(w.bytes(), &data[base..]);
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn reads_up_to_the_size_at_opening_or_the_limit() {
        use std::io::Write;
        let p = temp_file("grow", &[7u8; 5000]);
        let mut w = Window::open_limited(&p, 1024, None, false).unwrap();
        let limited = Window::open_limited(&p, 1024, Some(3000), false).unwrap();
        // The file grows after both were opened.
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(&[9u8; 4000]).unwrap();
        let mut total = 0;
        while !w.at_eof() {
            let n = w.bytes().len();
            total += n;
            w.advance(n).unwrap();
        }
        assert_eq!(total + w.bytes().len(), 5000, "what was there at opening");
        assert_eq!(w.size(), 5000);
        let mut l = limited;
        let mut seen = 0;
        while !l.at_eof() {
            let n = l.bytes().len();
            seen += n;
            l.advance(n).unwrap();
        }
        assert_eq!(seen + l.bytes().len(), 3000);
        assert_eq!(l.limit(), Some(3000));
        std::fs::remove_file(&p).unwrap();
    }

    /// Drains `w`, consuming `step` bytes (at most what it holds) at a time,
    /// and returns the bytes seen in order.
    fn drain(w: &mut Window, step: usize) -> Vec<u8> {
        let mut seen = Vec::new();
        loop {
            let n = step.min(w.bytes().len());
            assert_eq!(w.base(), seen.len() as u64);
            seen.extend_from_slice(&w.bytes()[..n]);
            if w.at_eof() && n == w.bytes().len() {
                return seen;
            }
            w.advance(n).unwrap();
        }
    }

    #[test]
    fn read_ahead_gives_the_same_bytes_and_offsets() {
        let data: Vec<u8> = (0..(5 * 4096 + 777)).map(|i| (i % 251) as u8).collect();
        let p = temp_file("ahead", &data);
        // Steps below and above the headroom (the window's 4096 bytes here),
        // so that the kept bytes go into the headroom or a joined buffer.
        for step in [1, 1000, 4095, 5000, 9000] {
            let mut w = Window::open_limited(&p, 4096, None, true).unwrap();
            assert!(w.reads_ahead());
            assert_eq!(w.size(), data.len() as u64);
            assert_eq!(drain(&mut w, step), data, "step {step}");
        }
        // Consuming nothing appends the next window (a long record).
        let mut w = Window::open_limited(&p, 4096, None, true).unwrap();
        assert_eq!(w.bytes(), &data[..4096]);
        w.advance(0).unwrap();
        assert_eq!(w.bytes(), &data[..8192]);
        w.advance(100).unwrap();
        assert_eq!(w.bytes(), &data[100..12288]);
        assert_eq!(w.base(), 100);
        // Dropping the window midway lets the thread end (its next hand-over
        // fails) without waiting for it.
        drop(w);
        // A limit ends the bytes there.
        let mut l = Window::open_limited(&p, 4096, Some(10_000), true).unwrap();
        assert_eq!(drain(&mut l, 3000), &data[..10_000]);
        // A file smaller than the window is read at once, on this thread.
        let w = Window::open_limited(&p, 1 << 20, None, true).unwrap();
        assert!(!w.reads_ahead() && w.at_eof());
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn a_read_error_reaches_the_reader_either_way() {
        // A directory opens, and reading it fails (EISDIR).
        let dir = std::env::temp_dir();
        for ahead in [false, true] {
            let e = Window::open_limited(&dir, 4096, None, ahead).unwrap_err();
            assert_eq!(
                e.raw_os_error(),
                Some(libc::EISDIR),
                "read-ahead {ahead}: {e}"
            );
        }
    }

    #[test]
    fn small_and_empty_files() {
        let p = temp_file("small", b"0123456789");
        let w = Window::open_limited(&p, WINDOW, None, false).unwrap();
        assert!(w.at_eof());
        assert_eq!(w.buf.len(), 11, "a small file gets a buffer of its size");
        assert_eq!(w.bytes(), b"0123456789");
        std::fs::remove_file(&p).unwrap();
        let e = temp_file("empty", b"");
        let w = Window::open_limited(&e, WINDOW, None, false).unwrap();
        assert!(w.at_eof() && w.bytes().is_empty());
        std::fs::remove_file(&e).unwrap();
        assert!(
            Window::open_limited(Path::new("/nonexistent/streamcap/w"), WINDOW, None, false)
                .is_err()
        );
    }
}
