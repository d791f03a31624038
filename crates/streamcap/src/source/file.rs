//! Capture files: pcap or pcapng, chosen by magic number.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::pcap::PcapReader;
use super::pcapng::PcapngReader;
use super::window::Window;
use super::{PacketSource, RawPacket, SourceError, SourceErrorKind};

/// A problem found by a format reader, before the file name is attached.
#[derive(Debug)]
pub(super) struct Fault {
    /// Packet record number (1-based), `None` for the file header.
    pub(super) record: Option<u64>,
    /// Byte offset of the header, record or block at fault.
    pub(super) offset: u64,
    /// What was wrong.
    pub(super) kind: SourceErrorKind,
}

impl Fault {
    /// A problem with the file header at `offset`.
    pub(super) fn header(offset: usize, kind: SourceErrorKind) -> Fault {
        Fault {
            record: None,
            offset: offset as u64,
            kind,
        }
    }

    /// A problem found while reading packet record `record`, at `offset`.
    pub(super) fn at(record: u64, offset: usize, kind: SourceErrorKind) -> Fault {
        Fault {
            record: Some(record),
            offset: offset as u64,
            kind,
        }
    }

    /// The error for `file`, whose byte `base` is offset 0 of the data the
    /// fault was found in.
    fn into_error(self, file: &Path, base: u64) -> SourceError {
        SourceError::new(file, self.record, self.kind).at_offset(base + self.offset)
    }

    /// Whether more bytes would tell more (the data ended inside the record).
    fn is_truncation(&self) -> bool {
        matches!(self.kind, SourceErrorKind::Truncated(_))
    }
}

/// Which format the file is in, and the reading state for it.
#[derive(Debug)]
enum Reader {
    Pcap(PcapReader),
    Pcapng(PcapngReader),
}

impl Reader {
    /// Parses the file header at the start of `data`.
    fn new(data: &[u8]) -> Result<Reader, Fault> {
        match data.get(..4).and_then(|m| <[u8; 4]>::try_from(m).ok()) {
            Some(magic) if super::pcap::is_pcap_magic(magic) => {
                PcapReader::new(data).map(Reader::Pcap)
            }
            Some(magic) if super::pcapng::is_pcapng_magic(magic) => {
                PcapngReader::new(data).map(Reader::Pcapng)
            }
            Some(magic) => Err(Fault::header(
                0,
                SourceErrorKind::BadMagic(u32::from_be_bytes(magic)),
            )),
            None => Err(Fault::header(
                0,
                SourceErrorKind::Truncated(format!(
                    "the file has {} bytes, too few for a pcap or pcapng header",
                    data.len()
                )),
            )),
        }
    }

    /// The next record of `data`, a fault, or `None` at the end.
    #[inline]
    fn next<'a>(&mut self, data: &'a [u8]) -> Option<Result<RawPacket<'a>, Fault>> {
        match self {
            Reader::Pcap(r) => r.next(data),
            Reader::Pcapng(r) => r.next(data),
        }
    }

    /// [`Reader::next`] for the batch loop: pushes the packet onto `out`
    /// instead of returning it. A pcap record is then built in the vector's
    /// slot; returned, it was built on the stack and copied in 16-byte
    /// loads across its field-sized stores, which the CPU cannot forward
    /// (5 % of `flows`' samples on small packets sat on that copy).
    #[inline(always)]
    fn next_into<'a>(
        &mut self,
        data: &'a [u8],
        out: &mut Vec<RawPacket<'a>>,
    ) -> Option<Result<(), Fault>> {
        match self {
            Reader::Pcap(r) => r.next_with(data, |p| out.push(p)),
            Reader::Pcapng(r) => match r.next(data)? {
                Ok(p) => {
                    out.push(p);
                    Some(Ok(()))
                }
                Err(e) => Some(Err(e)),
            },
        }
    }

    /// The offset in the data of the next record.
    #[inline]
    fn position(&self) -> usize {
        match self {
            Reader::Pcap(r) => r.position(),
            Reader::Pcapng(r) => r.position(),
        }
    }

    /// Reads past whole blocks that are not packets (pcapng; nothing in
    /// pcap), see [`PcapngReader::skip_metadata`].
    fn skip_metadata(&mut self, data: &[u8]) {
        if let Reader::Pcapng(r) = self {
            r.skip_metadata(data);
        }
    }

    /// Whether `data` holds the next record (or shows it is broken).
    fn next_is_ready(&self, data: &[u8]) -> bool {
        match self {
            Reader::Pcap(r) => r.next_is_ready(data),
            Reader::Pcapng(r) => r.next_is_ready(data),
        }
    }

    /// The caller dropped `by` bytes from the front of the data.
    fn rebase(&mut self, by: usize) {
        match self {
            Reader::Pcap(r) => r.rebase(by),
            Reader::Pcapng(r) => r.rebase(by),
        }
    }
}

/// Where a [`FileSource`]'s bytes are.
#[derive(Debug)]
enum Input {
    /// The whole capture in memory (given by the caller), shared by the
    /// readers of a multi-worker run.
    Whole(Arc<Vec<u8>>),
    /// The file, read through a sliding window.
    File(Window),
}

impl Input {
    #[inline]
    fn bytes(&self) -> &[u8] {
        match self {
            Input::Whole(v) => v,
            Input::File(w) => w.bytes(),
        }
    }

    /// File offset of `bytes()[0]`.
    fn base(&self) -> u64 {
        match self {
            Input::Whole(_) => 0,
            Input::File(w) => w.base(),
        }
    }

    /// Whether the bytes run to the end of the capture.
    #[inline]
    fn complete(&self) -> bool {
        match self {
            Input::Whole(_) => true,
            Input::File(w) => w.at_eof(),
        }
    }
}

/// A pcap or pcapng capture file.
///
/// The file is read with `read(2)` through a window of 1 MiB that slides
/// along it (see `source/window.rs` for why not a memory map); packets are
/// handed out as slices of the window, without any per-packet copy. A
/// capture given as bytes ([`FileSource::from_bytes`]) is read in place.
///
/// The format is chosen by the magic number: classic pcap (microsecond or
/// nanosecond timestamps, either byte order) or pcapng (any number of
/// sections and interfaces). Problems with the file header are reported by
/// [`FileSource::open`]; problems further in are reported by
/// [`PacketSource::next_packet`] once every packet before them has been
/// yielded, after which the source yields nothing more.
#[derive(Debug)]
pub struct FileSource {
    name: String,
    path: PathBuf,
    input: Input,
    reader: Reader,
    /// Set after an error: the source stays exhausted.
    failed: bool,
    /// Offset in the data up to which the reader asked the CPU to prefetch.
    prefetched: usize,
    /// Whether the last batch's records were long enough on average for
    /// the reader to prefetch ahead of them (see [`SPARSE_RECORD`]).
    sparse: bool,
}

/// Mean record length (header included) from which a batch's records are
/// prefetched, bytes. Shorter records are read line after line, which the
/// CPU's own prefetcher follows; prefetching them too cost 5 % of `flows`
/// on small packets (60–130 bytes), while on the `campus` trace (790 bytes
/// on average) it saves 2 % of `streams`.
const SPARSE_RECORD: usize = 256;

/// How far ahead of the reader the data is prefetched, bytes.
const PREFETCH_AHEAD: usize = 8 << 10;

/// Asks the CPU to load the data's cache lines from `from` up to
/// [`PREFETCH_AHEAD`] bytes past the reader's position `pos`; returns where
/// it stopped (the next call's `from`). Each record header's position
/// depends on the one before, so without this every header of a trace of
/// large packets is a cache miss the reader waits for (measured on the
/// 2 M-packet campus trace in `streams` mode: `PcapReader::next` fell from
/// 7.1 % to 3.6 % of the samples). Prefetching is a hint: it never faults
/// and changes nothing the program reads.
fn prefetch_ahead(data: &[u8], from: usize, pos: usize) -> usize {
    let until = pos.saturating_add(PREFETCH_AHEAD).min(data.len());
    let mut line = from;
    while line < until {
        prefetch_index::prefetch_index(data, line);
        line += 64;
    }
    line
}

impl FileSource {
    /// Opens a capture file and parses its file header. The path `-` is
    /// standard input (read as it comes, like a pipe).
    ///
    /// Fails when the file cannot be read, does not start with a pcap or
    /// pcapng magic number ([`SourceErrorKind::BadMagic`]), or is too short
    /// to hold the file header ([`SourceErrorKind::Truncated`]).
    ///
    /// A file larger than the read window (1 MiB), and a pipe, is read by a
    /// thread of its own, a window ahead of the packets handed out, so that
    /// the kernel's copy of the file runs beside the worker (see
    /// `source/window.rs`). [`FileSource::reopen`] reads on the caller's
    /// thread, as several workers already share the cores.
    pub fn open(path: impl AsRef<Path>) -> Result<FileSource, SourceError> {
        FileSource::open_limited(path.as_ref(), super::window::WINDOW, None, true)
    }

    /// [`FileSource::open`] reading the file through a window of `window`
    /// bytes instead of the default 1 MiB (a record or block longer than the
    /// window widens it while it is read), on the caller's thread, or with
    /// `ahead` by a read-ahead thread as [`FileSource::open`] does. The
    /// packets are the same whatever the size and the thread; small windows
    /// exercise the sliding in tests and fuzzing. Reading stops at the
    /// file's size when it is opened, even if the file grows meanwhile.
    pub fn open_with_window(
        path: impl AsRef<Path>,
        window: usize,
        ahead: bool,
    ) -> Result<FileSource, SourceError> {
        FileSource::open_limited(path.as_ref(), window, None, ahead)
    }

    /// Opens `path` with a window of `window` bytes, reading at most `limit`
    /// bytes of it (`None`: its size now), with or without a read-ahead
    /// thread.
    fn open_limited(
        path: &Path,
        window: usize,
        limit: Option<u64>,
        ahead: bool,
    ) -> Result<FileSource, SourceError> {
        let io = |e| SourceError::new(path, None, SourceErrorKind::Io(e));
        let file = if path == Path::new("-") {
            Path::new("/dev/stdin")
        } else {
            path
        };
        let mut window = Window::open_limited(file, window, limit, ahead).map_err(io)?;
        let reader = loop {
            match Reader::new(window.bytes()) {
                // A section header longer than the window: read on.
                Err(f) if f.is_truncation() && !window.at_eof() => window.advance(0).map_err(io)?,
                r => break r.map_err(|f| f.into_error(path, 0))?,
            }
        };
        Ok(FileSource::with(
            path.to_path_buf(),
            Input::File(window),
            reader,
        ))
    }

    /// Another reader of the same capture from its first packet: what each
    /// worker of a multi-worker run reads. A regular file is opened again,
    /// with a window of the same size, and read up to the same end as this
    /// reader (its size when this one was opened); bytes given by the caller
    /// are shared. A pipe, standard input or other special file cannot be
    /// read twice: that is an error ([`SourceErrorKind::Io`], `Unsupported`).
    pub fn reopen(&self) -> Result<FileSource, SourceError> {
        match &self.input {
            Input::File(w) if w.limit().is_none() => Err(SourceError::new(
                &self.path,
                None,
                SourceErrorKind::Io(std::io::Error::new(
                    std::io::ErrorKind::Unsupported,
                    "not a regular file (a pipe or standard input): it can be read only once, by one worker",
                )),
            )),
            Input::File(w) => FileSource::open_limited(&self.path, w.window(), w.limit(), false),
            Input::Whole(v) => FileSource::from_shared(self.path.clone(), v.clone()),
        }
    }

    /// Wraps a capture already in memory; `name` is used in messages and
    /// errors as if it were the file's path. Fails like [`FileSource::open`].
    pub fn from_bytes(name: impl Into<PathBuf>, data: Vec<u8>) -> Result<FileSource, SourceError> {
        FileSource::from_shared(name.into(), Arc::new(data))
    }

    fn from_shared(path: PathBuf, data: Arc<Vec<u8>>) -> Result<FileSource, SourceError> {
        let reader = Reader::new(&data).map_err(|f| f.into_error(&path, 0))?;
        Ok(FileSource::with(path, Input::Whole(data), reader))
    }

    fn with(path: PathBuf, input: Input, reader: Reader) -> FileSource {
        FileSource {
            name: path.display().to_string(),
            path,
            input,
            reader,
            failed: false,
            prefetched: 0,
            sparse: true,
        }
    }

    /// The file's path (or the name given to [`FileSource::from_bytes`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file is pcapng (else classic pcap).
    pub fn is_pcapng(&self) -> bool {
        matches!(self.reader, Reader::Pcapng(_))
    }

    /// The read window's buffer length (`None` for bytes in memory).
    #[cfg(test)]
    pub(super) fn window_buffer_len(&self) -> Option<usize> {
        match &self.input {
            Input::File(w) => Some(w.buffer_len()),
            Input::Whole(_) => None,
        }
    }

    /// Slides the window until it holds the next record whole (or shows
    /// that the record is broken, or holds the end of the file), so that a
    /// call of [`Reader::next`] decides. Nothing to do for bytes in memory.
    fn ready_next(&mut self) -> Result<(), SourceError> {
        let Input::File(window) = &mut self.input else {
            return Ok(());
        };
        loop {
            self.reader.skip_metadata(window.bytes());
            if window.at_eof() || self.reader.next_is_ready(window.bytes()) {
                return Ok(());
            }
            let consumed = self.reader.position();
            let at = window.base() + consumed as u64;
            let read = window.advance(consumed);
            // The window dropped those bytes even if reading on failed.
            self.reader.rebase(consumed);
            self.prefetched = 0;
            read.map_err(|e| {
                SourceError::new(&self.path, None, SourceErrorKind::Io(e)).at_offset(at)
            })?;
        }
    }
}

impl PacketSource for FileSource {
    fn next_packet(&mut self) -> Option<Result<RawPacket<'_>, SourceError>> {
        if self.failed {
            return None;
        }
        if let Err(e) = self.ready_next() {
            self.failed = true;
            return Some(Err(e));
        }
        let base = self.input.base();
        match self.reader.next(self.input.bytes()) {
            Some(Err(fault)) => {
                self.failed = true;
                Some(Err(fault.into_error(&self.path, base)))
            }
            Some(Ok(packet)) => Some(Ok(packet)),
            None => None,
        }
    }

    fn next_batch<'s>(
        &'s mut self,
        out: &mut Vec<RawPacket<'s>>,
        max: usize,
    ) -> Option<SourceError> {
        if self.failed || max == 0 {
            return None;
        }
        // The window holds at least the first record of the batch whole;
        // the batch ends where the window does (its packets borrow it).
        if let Err(e) = self.ready_next() {
            self.failed = true;
            return Some(e);
        }
        let FileSource {
            input,
            reader,
            failed,
            path,
            prefetched,
            sparse,
            ..
        } = self;
        let base = input.base();
        let complete = input.complete();
        let input: &'s Input = input;
        let data = input.bytes();
        let (first, start, prefetch) = (out.len(), reader.position(), *sparse);
        while out.len() < max {
            match reader.next_into(data, out) {
                Some(Ok(())) => {
                    if prefetch {
                        let pos = reader.position();
                        *prefetched = prefetch_ahead(data, (*prefetched).max(pos), pos);
                    }
                }
                // The rest is beyond the window: the next call slides it.
                Some(Err(fault)) if fault.is_truncation() && !complete => break,
                Some(Err(fault)) => {
                    *failed = true;
                    return Some(fault.into_error(path, base));
                }
                // The end of the window, or of the file.
                None => break,
            }
        }
        if let Some(mean) = (reader.position().saturating_sub(start)).checked_div(out.len() - first)
        {
            *sparse = mean >= SPARSE_RECORD;
        }
        None
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn progress(&self) -> Option<(u64, u64)> {
        let done = self.input.base() + self.reader.position() as u64;
        let total = match &self.input {
            Input::Whole(v) => v.len() as u64,
            Input::File(w) => w.size(),
        };
        Some((done, total))
    }
}

/// Test support: reading a file through windows of any size yields exactly
/// what reading it whole yields.
#[cfg(test)]
pub(super) mod window_check {
    use super::FileSource;
    use crate::source::PacketSource;

    /// Everything `src` yields, rendered: each packet, then the error if any.
    fn drain(src: &mut FileSource, batch: usize) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            let mut b = Vec::new();
            let err = if batch == 0 {
                match src.next_packet() {
                    Some(Ok(p)) => {
                        b.push(p);
                        None
                    }
                    Some(Err(e)) => Some(e),
                    None => None,
                }
            } else {
                src.next_batch(&mut b, batch)
            };
            let n = b.len();
            seen.extend(b.iter().map(|p| format!("{p:?}")));
            if let Some(e) = err {
                seen.push(format!("error: {e}"));
                break;
            }
            if n == 0 {
                break;
            }
        }
        let mut b = Vec::new();
        assert!(src.next_batch(&mut b, 8).is_none() && b.is_empty());
        seen
    }

    /// Writes `bytes` to a file and checks that windows of several sizes
    /// (down to one byte; from 64 bytes also by a read-ahead thread) and
    /// batch sizes (0: packet by packet) give the packets,
    /// errors and error positions of `FileSource::from_bytes`.
    pub(crate) fn assert_windows_agree(bytes: &[u8], name: &str) {
        let path = std::env::temp_dir().join(format!(
            "streamcap-window-check-{}-{name}",
            std::process::id()
        ));
        std::fs::write(&path, bytes).expect("temp file");
        let render = |r: Result<FileSource, _>, batch| match r {
            Ok(mut s) => drain(&mut s, batch),
            Err(e) => vec![format!("open: {e}")],
        };
        let reference = render(FileSource::from_bytes(&path, bytes.to_vec()), 64);
        for window in [1, 5, 64, 300, 4096, 1 << 20] {
            for batch in [0, 1, 3, 64] {
                // (Read-ahead with windows below 64 bytes only costs thread
                // hand-overs: 64 already puts most records across buffers,
                // some within the headroom and some beyond it.)
                for ahead in [false, true].into_iter().filter(|&a| !a || window >= 64) {
                    let got = render(FileSource::open_with_window(&path, window, ahead), batch);
                    assert_eq!(
                        got, reference,
                        "{name}: window {window}, batch {batch}, read-ahead {ahead}"
                    );
                }
            }
        }
        std::fs::remove_file(&path).expect("temp file");
    }
}

#[cfg(test)]
mod tests {
    use super::FileSource;
    use crate::source::{PacketSource, SourceErrorKind};
    use std::collections::HashMap;
    use std::path::Path;

    /// The reader prefetches ahead of a batch only when the batch before
    /// it had long records on average; the packets are the same either way.
    #[test]
    fn prefetches_only_after_long_records() {
        let mut bytes = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
        bytes.extend_from_slice(&[0; 8]);
        bytes.extend_from_slice(&65535u32.to_le_bytes());
        bytes.extend_from_slice(&1u32.to_le_bytes());
        // Four short records, then four long ones.
        for len in [60u32, 60, 60, 60, 1000, 1000, 1000, 1000] {
            for v in [1u32, 0, len, len] {
                bytes.extend_from_slice(&v.to_le_bytes());
            }
            bytes.extend(std::iter::repeat_n(len as u8, len as usize));
        }
        let mut src = FileSource::from_bytes("mem.pcap", bytes).unwrap();
        assert!(src.sparse, "prefetching starts on");
        let mut lens = Vec::new();
        let mut after = Vec::new();
        loop {
            let mut batch = Vec::new();
            assert!(src.next_batch(&mut batch, 4).is_none());
            if batch.is_empty() {
                break;
            }
            lens.extend(batch.iter().map(|p| p.data.len()));
            after.push(src.sparse);
        }
        assert_eq!(lens, [60, 60, 60, 60, 1000, 1000, 1000, 1000]);
        assert_eq!(after, [false, true]);
    }

    #[test]
    fn open_missing_file() {
        let err = FileSource::open("/nonexistent/streamcap/x.pcap").unwrap_err();
        assert!(matches!(err.kind, SourceErrorKind::Io(_)), "{err}");
        assert!(err.to_string().contains("/nonexistent/streamcap/x.pcap"));
    }

    #[test]
    fn open_real_file() {
        let path =
            std::env::temp_dir().join(format!("streamcap-source-{}.pcap", std::process::id()));
        let mut bytes = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
        bytes.extend_from_slice(&[0; 8]);
        bytes.extend_from_slice(&65535u32.to_le_bytes());
        bytes.extend_from_slice(&1u32.to_le_bytes());
        for v in [10u32, 20, 4, 4] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        bytes.extend_from_slice(b"abcd");
        std::fs::write(&path, &bytes).unwrap();
        let mut src = FileSource::open(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(src.name(), path.display().to_string());
        assert_eq!(src.path(), path.as_path());
        let p = src.next_packet().unwrap().unwrap();
        assert_eq!(
            (p.data, p.ts.secs(), p.ts.subsec_nanos()),
            (&b"abcd"[..], 10, 20_000)
        );
        assert!(src.next_packet().is_none());
        assert_eq!(src.progress(), Some((44, 44)));
    }

    /// capinfos' packet count, or `None` if it is not installed or cannot
    /// read the file (damaged files, link types it does not know).
    fn capinfos_count(path: &Path) -> Option<u64> {
        let out = std::process::Command::new("capinfos")
            .args(["-M", "-c", "-T"])
            .arg(path)
            .output()
            .ok()?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        stdout
            .lines()
            .nth(1)?
            .rsplit('\t')
            .next()?
            .trim()
            .parse()
            .ok()
    }

    /// Reads every capture in the shared corpus: no panic, and as many
    /// packets before any error as capinfos and the corpus manifest count.
    #[test]
    fn corpus() {
        let (root, files) = crate::corpus_captures();
        if files.is_empty() {
            crate::skip(format!("corpus not found at {}", root.display()));
            return;
        }
        let manifest: HashMap<String, u64> = std::fs::read_to_string(root.join("MANIFEST.tsv"))
            .unwrap_or_default()
            .lines()
            .skip(1)
            .filter_map(|l| {
                let mut f = l.split('\t');
                let name = f.next()?.to_string();
                let packets = f.nth(1)?.parse().ok()?;
                Some((name, packets))
            })
            .collect();
        // Files whose count differs for a known, explained reason.
        let explained: HashMap<&str, &str> = [
            (
                "malformed/tcpdump__dsa-unknown-linktype.pcap",
                "link type 284 is unsupported: error at record 1 (the manifest counts the 8 intact records)",
            ),
        ]
        .into_iter()
        .collect();
        let (mut total, mut mismatches) = (0u64, Vec::new());
        for path in &files {
            let rel = path
                .strip_prefix(&root)
                .unwrap_or(path)
                .display()
                .to_string();
            let mut src = match FileSource::open(path) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("{rel}: open failed: {e}");
                    mismatches.push(format!("{rel}: cannot open: {e}"));
                    continue;
                }
            };
            let mut count = 0u64;
            let mut error = None;
            while let Some(p) = src.next_packet() {
                match p {
                    Ok(p) => {
                        count += 1;
                        assert_eq!(p.record, count);
                    }
                    Err(e) => {
                        error = Some(e.to_string());
                        break;
                    }
                }
            }
            assert!(src.next_packet().is_none());
            total += count;
            let capinfos = capinfos_count(path);
            let listed = manifest.get(rel.as_str()).copied();
            eprintln!(
                "{rel}: {count} packets (capinfos {}, manifest {}){}",
                capinfos.map_or("-".into(), |c| c.to_string()),
                listed.map_or("-".into(), |c| c.to_string()),
                error
                    .as_ref()
                    .map_or(String::new(), |e| format!("; then: {e}")),
            );
            if let Some(why) = explained.get(rel.as_str()) {
                eprintln!("  (expected difference: {why})");
                continue;
            }
            for (who, want) in [("capinfos", capinfos), ("manifest", listed)] {
                if let Some(want) = want.filter(|&w| w != count) {
                    mismatches.push(format!("{rel}: {count} packets, {who} says {want}"));
                }
            }
        }
        eprintln!("{} files, {total} packets", files.len());
        assert!(
            mismatches.is_empty(),
            "mismatches:\n{}",
            mismatches.join("\n")
        );
    }
}
