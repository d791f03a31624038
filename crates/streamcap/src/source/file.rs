//! Capture files: pcap or pcapng, chosen by magic number.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::mapped::Bytes;
use super::pcap::PcapReader;
use super::pcapng::PcapngReader;
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

    fn into_error(self, file: &Path) -> SourceError {
        SourceError::new(file, self.record, self.kind).at_offset(self.offset)
    }
}

/// Which format the file is in, and the reading state for it.
#[derive(Debug)]
enum Reader {
    Pcap(PcapReader),
    Pcapng(PcapngReader),
}

impl Reader {
    /// The next record of `data`, a fault, or `None` at the end.
    #[inline]
    fn next<'a>(&mut self, data: &'a [u8]) -> Option<Result<RawPacket<'a>, Fault>> {
        match self {
            Reader::Pcap(r) => r.next(data),
            Reader::Pcapng(r) => r.next(data),
        }
    }

    /// The file offset of the next record.
    #[inline]
    fn position(&self) -> usize {
        match self {
            Reader::Pcap(r) => r.position(),
            Reader::Pcapng(r) => r.position(),
        }
    }
}

/// A pcap or pcapng capture file.
///
/// The file is memory-mapped when it is opened (read into memory when it
/// cannot be mapped); packets are handed out as slices of the mapping,
/// without any per-packet copy.
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
    data: Arc<Bytes>,
    reader: Reader,
    /// Set after an error: the source stays exhausted.
    failed: bool,
    /// File offset up to which the reader asked the CPU to prefetch.
    prefetched: usize,
    /// File offset up to which the reader has touched the file's pages.
    touched: usize,
}

/// How far ahead of the reader the file is prefetched, bytes.
const PREFETCH_AHEAD: usize = 8 << 10;

/// Asks the CPU to load the file's cache lines from `from` up to
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

/// How far ahead of the reader the file's pages are touched, bytes.
const TOUCH_AHEAD: usize = 128 << 10;

/// Distance between two touches: Linux's default `fault_around_bytes`, the
/// span of pages one fault on a file mapping maps at once (when a system maps
/// less, some prefetches are dropped as before: slower, never wrong).
const TOUCH_STRIDE: usize = 64 << 10;

/// Reads one byte every [`TOUCH_STRIDE`] bytes of the file from `from` up to
/// [`TOUCH_AHEAD`] bytes past the reader's position `pos`; returns where it
/// stopped (the next call's `from`).
///
/// Why: the file is memory-mapped, and the kernel maps its pages into the
/// process only on first access (a page fault, which maps the 16 pages,
/// 64 KiB, around it). A CPU prefetch of a page not mapped yet is dropped, so
/// without this the first records after every fault were cache misses that
/// [`prefetch_ahead`] could not hide: on the 2 M-packet campus trace,
/// 39 % of the batch loop's samples were on the load of a record header.
/// Touching pages well ahead takes the faults early (they cost the same),
/// and the prefetches that follow find the pages mapped. Measured with
/// interleaved runs on that trace: `streams` 0.82 -> 0.72 s, `flows`
/// 0.46 -> 0.40 s; the small-packet trace is unchanged. (A touch every 4 KiB
/// page was a little slower: each is a load the CPU waits for.) The loads are kept
/// by [`std::hint::black_box`]; their values are not used.
fn touch_ahead(data: &[u8], from: usize, pos: usize) -> usize {
    let until = pos.saturating_add(TOUCH_AHEAD).min(data.len());
    let mut page = from;
    while page < until {
        if let Some(byte) = data.get(page) {
            std::hint::black_box(*byte);
        }
        page += TOUCH_STRIDE;
    }
    page
}

impl FileSource {
    /// Opens and reads a capture file and parses its file header.
    ///
    /// Fails when the file cannot be read, does not start with a pcap or
    /// pcapng magic number ([`SourceErrorKind::BadMagic`]), or is too short
    /// to hold the file header ([`SourceErrorKind::Truncated`]).
    pub fn open(path: impl AsRef<Path>) -> Result<FileSource, SourceError> {
        let path = path.as_ref();
        let data =
            Bytes::open(path).map_err(|e| SourceError::new(path, None, SourceErrorKind::Io(e)))?;
        FileSource::from_source_bytes(path.to_path_buf(), Arc::new(data))
    }

    /// Another reader of the same file from its first packet, sharing this
    /// one's memory map (or bytes): what each worker of a multi-worker run
    /// reads, with one mapping for all of them.
    pub fn reopen(&self) -> Result<FileSource, SourceError> {
        FileSource::from_source_bytes(self.path.clone(), self.data.clone())
    }

    /// Wraps a capture already in memory; `name` is used in messages and
    /// errors as if it were the file's path. Fails like [`FileSource::open`].
    pub fn from_bytes(name: impl Into<PathBuf>, data: Vec<u8>) -> Result<FileSource, SourceError> {
        FileSource::from_source_bytes(name.into(), Arc::new(Bytes::Owned(data)))
    }

    fn from_source_bytes(path: PathBuf, data: Arc<Bytes>) -> Result<FileSource, SourceError> {
        let reader = match data
            .as_slice()
            .get(..4)
            .and_then(|m| <[u8; 4]>::try_from(m).ok())
        {
            Some(magic) if super::pcap::is_pcap_magic(magic) => {
                PcapReader::new(data.as_slice()).map(Reader::Pcap)
            }
            Some(magic) if super::pcapng::is_pcapng_magic(magic) => {
                PcapngReader::new(data.as_slice()).map(Reader::Pcapng)
            }
            Some(magic) => Err(Fault::header(
                0,
                SourceErrorKind::BadMagic(u32::from_be_bytes(magic)),
            )),
            None => Err(Fault::header(
                0,
                SourceErrorKind::Truncated(format!(
                    "the file has {} bytes, too few for a pcap or pcapng header",
                    data.as_slice().len()
                )),
            )),
        }
        .map_err(|f| f.into_error(&path))?;
        Ok(FileSource {
            name: path.display().to_string(),
            path,
            data,
            reader,
            failed: false,
            prefetched: 0,
            touched: 0,
        })
    }

    /// The file's path (or the name given to [`FileSource::from_bytes`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file is pcapng (else classic pcap).
    pub fn is_pcapng(&self) -> bool {
        matches!(self.reader, Reader::Pcapng(_))
    }
}

impl PacketSource for FileSource {
    fn next_packet(&mut self) -> Option<Result<RawPacket<'_>, SourceError>> {
        if self.failed {
            return None;
        }
        match self.reader.next(self.data.as_slice()) {
            Some(Err(fault)) => {
                self.failed = true;
                Some(Err(fault.into_error(&self.path)))
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
        let FileSource {
            data,
            reader,
            failed,
            path,
            prefetched,
            touched,
            ..
        } = self;
        if *failed {
            return None;
        }
        let data: &'s Arc<Bytes> = data;
        let data = data.as_slice();
        while out.len() < max {
            match reader.next(data) {
                Some(Ok(packet)) => {
                    let pos = reader.position();
                    *touched = touch_ahead(data, *touched, pos);
                    *prefetched = prefetch_ahead(data, (*prefetched).max(pos), pos);
                    out.push(packet)
                }
                Some(Err(fault)) => {
                    *failed = true;
                    return Some(fault.into_error(path));
                }
                None => break,
            }
        }
        None
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn progress(&self) -> Option<(u64, u64)> {
        Some((
            self.reader.position() as u64,
            self.data.as_slice().len() as u64,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::FileSource;
    use crate::source::{PacketSource, SourceErrorKind};
    use std::collections::HashMap;
    use std::path::{Path, PathBuf};

    #[test]
    fn touch_ahead_walks_stride_by_stride_and_stays_in_the_file() {
        use super::{touch_ahead, TOUCH_AHEAD, TOUCH_STRIDE as STRIDE};
        let data = vec![1u8; 3 * TOUCH_AHEAD + 100];
        // The first call touches every page up to TOUCH_AHEAD past the reader.
        let next = touch_ahead(&data, 0, 10);
        assert_eq!(next, (10 + TOUCH_AHEAD).div_ceil(STRIDE) * STRIDE);
        // Later calls go on from where the last stopped, never back.
        assert_eq!(touch_ahead(&data, next, 20), next);
        let further = touch_ahead(&data, next, 2 * STRIDE + 10);
        assert_eq!(
            further,
            (2 * STRIDE + 10 + TOUCH_AHEAD).div_ceil(STRIDE) * STRIDE
        );
        // Near the end nothing past the file is read.
        let end = touch_ahead(&data, further, data.len() - 1);
        assert!(end >= data.len() && end < data.len() + STRIDE);
        assert_eq!(touch_ahead(&data, end, data.len()), end);
        assert_eq!(touch_ahead(&[], 0, 0), 0);
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

    fn capture_files(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                capture_files(&path, out);
            } else if path
                .extension()
                .is_some_and(|e| e == "pcap" || e == "pcapng")
            {
                out.push(path);
            }
        }
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
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus");
        let root = root.canonicalize().unwrap_or(root);
        let mut files = Vec::new();
        capture_files(&root, &mut files);
        if files.is_empty() {
            crate::skip(format!("corpus not found at {}", root.display()));
            return;
        }
        files.sort();
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
