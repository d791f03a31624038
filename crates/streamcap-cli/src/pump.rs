//! Reading a capture from a pipe (`-r -`, a FIFO, a process substitution)
//! so that a stop is seen at once.
//!
//! A worker reading a pipe blocks in `read(2)` while the writer is silent,
//! and a signal does not interrupt it (the handlers restart system calls).
//! So the input is not handed to the library directly: a *pump* thread
//! copies it into a pipe of this process, which the library reads
//! (`/dev/fd/N`). When the run stops ([`Stopper::stop`]: Ctrl-C, SIGTERM,
//! SIGHUP, `--duration`), the pump's end of that pipe is closed, the
//! library's read returns end-of-file, and the run ends as at the end of
//! the input: open connections flushed, records and summary written.
//!
//! The pump forwards whole pcap records and pcapng blocks only (it reads
//! their length fields), so a stop never leaves half a record in the pipe:
//! the capture the library sees ends cleanly, as if it had been cut between
//! two packets. At the true end of the input everything is forwarded, so a
//! capture that really is cut short is reported as before. Input the pump
//! cannot frame (an unknown magic number, a length past the library's
//! limit) is forwarded as it comes, for the library to report.

use crate::signals::Stopper;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// Bytes read from the input at a time.
const READ_SIZE: usize = 256 << 10;

/// The longest record or block the pump frames: the library's limit on a
/// captured length plus room for headers. Longer ones switch the pump to
/// forwarding bytes as they come.
const MAX_UNIT: usize = (16 << 20) + (64 << 10);

/// Whether `input` (`-` for standard input) is something a read can wait
/// on forever: a pipe, a FIFO, a socket, a terminal. Regular files and
/// inputs that cannot be examined are read directly.
pub fn needed(input: &Path) -> bool {
    let p = if input == Path::new("-") {
        Path::new("/dev/stdin")
    } else {
        input
    };
    std::fs::metadata(p).is_ok_and(|m| {
        let t = m.file_type();
        t.is_fifo() || t.is_socket() || t.is_char_device()
    })
}

/// A running pump: the path the library opens, and the first read error
/// of the real input.
pub struct Pump {
    path: PathBuf,
    /// Our copy of the pipe's read end, kept open until the library has
    /// opened its own (`/dev/fd/N` names this descriptor).
    reader: Option<os_pipe::PipeReader>,
    error: Arc<Mutex<Option<io::Error>>>,
}

impl Pump {
    /// Starts copying `input` (`-`: standard input) into a new pipe; the
    /// pipe's write end is closed when `stopper` stops.
    pub fn start(input: &Path, stopper: &Arc<Stopper>) -> io::Result<Pump> {
        let (reader, writer) = os_pipe::pipe()?;
        let path = PathBuf::from(format!("/dev/fd/{}", reader.as_raw_fd()));
        let writer = Arc::new(Mutex::new(Some(writer)));
        let error = Arc::new(Mutex::new(None));
        let source = input.to_path_buf();
        let (w, e, s) = (writer.clone(), error.clone(), stopper.clone());
        std::thread::Builder::new()
            .name("streamcap-pump".into())
            .spawn(move || {
                let result = if source == Path::new("-") {
                    copy(&mut io::stdin().lock(), &w, &s)
                } else {
                    File::open(&source).and_then(|mut f| copy(&mut f, &w, &s))
                };
                // The end of the input, an error or a stop: close our end.
                w.lock().unwrap_or_else(PoisonError::into_inner).take();
                if let Err(err) = result {
                    *e.lock().unwrap_or_else(PoisonError::into_inner) = Some(err);
                }
            })?;
        // A stop closes the write end unless the pump is writing (it then
        // closes it itself after that write, before the next).
        stopper.on_stop(move || {
            if let Ok(mut w) = writer.try_lock() {
                w.take();
            }
        });
        Ok(Pump {
            path,
            reader: Some(reader),
            error,
        })
    }

    /// The path the library opens to read the pumped capture.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Called once the library has opened [`Pump::path`]: our own copy of
    /// the read end is no longer needed.
    pub fn opened(&mut self) {
        self.reader = None;
    }

    /// The error that ended reading the real input early, if one did.
    pub fn take_error(&self) -> Option<io::Error> {
        self.error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

/// Copies `src` to the pipe in whole units until the end of `src`, a stop,
/// or the pipe's reader going away; everything left is forwarded at the
/// end of `src`.
fn copy(
    src: &mut dyn Read,
    pipe: &Mutex<Option<os_pipe::PipeWriter>>,
    stopper: &Stopper,
) -> io::Result<()> {
    let mut buf = vec![0u8; READ_SIZE];
    let mut pending: Vec<u8> = Vec::new();
    let mut framing = Framing::default();
    loop {
        if stopper.stopped() {
            return Ok(());
        }
        let n = match src.read(&mut buf) {
            Ok(0) => {
                forward(pipe, &pending);
                return Ok(());
            }
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                forward(pipe, &pending);
                return Err(e);
            }
        };
        pending.extend_from_slice(&buf[..n]);
        let whole = framing.whole(&pending);
        if whole > 0 {
            if stopper.stopped() || !forward(pipe, &pending[..whole]) {
                return Ok(());
            }
            pending.drain(..whole);
        }
    }
}

/// Writes `bytes` to the pipe; false when it is closed (a stop) or its
/// reader went away.
fn forward(pipe: &Mutex<Option<os_pipe::PipeWriter>>, bytes: &[u8]) -> bool {
    let mut w = pipe.lock().unwrap_or_else(PoisonError::into_inner);
    match w.as_mut() {
        Some(w) => bytes.is_empty() || w.write_all(bytes).is_ok(),
        None => false,
    }
}

/// What the pump knows of the capture's format.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
enum Format {
    /// Nothing read yet.
    #[default]
    Start,
    /// Classic pcap records after the file header; `big` = big-endian.
    Pcap { big: bool },
    /// pcapng blocks; `big` = the current section is big-endian.
    Pcapng { big: bool },
    /// Not framed: everything is forwarded as it comes.
    Raw,
}

/// Finds where whole units (the pcap file header, records; pcapng blocks)
/// end in a buffer that starts at a unit boundary.
#[derive(Default)]
struct Framing {
    format: Format,
}

const PCAPNG_SHB: u32 = 0x0A0D_0D0A;
const PCAPNG_BOM: u32 = 0x1A2B_3C4D;

fn u32_at(b: &[u8], at: usize, big: bool) -> Option<u32> {
    let x: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
    Some(if big {
        u32::from_be_bytes(x)
    } else {
        u32::from_le_bytes(x)
    })
}

impl Framing {
    /// The length of the longest prefix of `buf` made of whole units.
    fn whole(&mut self, buf: &[u8]) -> usize {
        let mut at = 0;
        loop {
            let rest = &buf[at..];
            let unit = match self.format {
                Format::Raw => return buf.len(),
                Format::Start => match rest.get(..4) {
                    None => None,
                    // The pcap file header (24 bytes): the byte order.
                    Some([0xd4, 0xc3, 0xb2, 0xa1] | [0x4d, 0x3c, 0xb2, 0xa1]) => {
                        if rest.len() < 24 {
                            return at;
                        }
                        self.format = Format::Pcap { big: false };
                        Some(24)
                    }
                    Some([0xa1, 0xb2, 0xc3, 0xd4] | [0xa1, 0xb2, 0x3c, 0x4d]) => {
                        if rest.len() < 24 {
                            return at;
                        }
                        self.format = Format::Pcap { big: true };
                        Some(24)
                    }
                    Some([0x0a, 0x0d, 0x0d, 0x0a]) => {
                        self.format = Format::Pcapng { big: false };
                        continue;
                    }
                    Some(_) => {
                        self.format = Format::Raw;
                        continue;
                    }
                },
                Format::Pcap { big } => u32_at(rest, 8, big).map(|caplen| 16 + caplen as usize),
                Format::Pcapng { big } => self.block(rest, big),
            };
            match unit {
                Some(len) if len > MAX_UNIT => {
                    self.format = Format::Raw;
                    return buf.len();
                }
                Some(len) if len <= rest.len() => at += len,
                _ => return at,
            }
        }
    }

    /// The length of the pcapng block at the start of `rest` (a section
    /// header sets the byte order of what follows), `None` when more bytes
    /// are needed to tell. A nonsensical length switches to [`Format::Raw`].
    fn block(&mut self, rest: &[u8], big: bool) -> Option<usize> {
        let kind = u32_at(rest, 0, big)?;
        let big = if kind == PCAPNG_SHB {
            match u32_at(rest, 8, true)? {
                PCAPNG_BOM => true,
                m if m.swap_bytes() == PCAPNG_BOM => false,
                _ => {
                    self.format = Format::Raw;
                    return Some(0);
                }
            }
        } else {
            big
        };
        let len = u32_at(rest, 4, big)? as usize;
        if len < 12 || len % 4 != 0 {
            self.format = Format::Raw;
            return Some(0);
        }
        self.format = Format::Pcapng { big };
        Some(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pcap(records: &[&[u8]]) -> (Vec<u8>, Vec<usize>) {
        let mut out = vec![0xd4, 0xc3, 0xb2, 0xa1];
        out.resize(24, 0);
        let mut ends = vec![24];
        for r in records {
            out.extend_from_slice(&[0; 8]);
            out.extend_from_slice(&(r.len() as u32).to_le_bytes());
            out.extend_from_slice(&(r.len() as u32).to_le_bytes());
            out.extend_from_slice(r);
            ends.push(out.len());
        }
        (out, ends)
    }

    /// Fed byte by byte, the framing reports exactly the unit boundaries.
    fn boundaries(bytes: &[u8]) -> Vec<usize> {
        let mut f = Framing::default();
        let mut seen = Vec::new();
        let mut base = 0;
        for end in 1..=bytes.len() {
            let whole = f.whole(&bytes[base..end]);
            if whole > 0 {
                base += whole;
                seen.push(base);
            }
        }
        seen
    }

    #[test]
    fn pcap_records_are_forwarded_whole() {
        let (bytes, ends) = pcap(&[b"abc", b"", &[7; 300]]);
        assert_eq!(boundaries(&bytes), ends);
    }

    #[test]
    fn pcapng_blocks_follow_each_sections_byte_order() {
        let block = |kind: u32, body: &[u8], big: bool| {
            let len = (12 + body.len()) as u32;
            let w = |x: u32| {
                if big {
                    x.to_be_bytes()
                } else {
                    x.to_le_bytes()
                }
            };
            let mut b = Vec::new();
            b.extend_from_slice(&w(kind));
            b.extend_from_slice(&w(len));
            b.extend_from_slice(body);
            b.extend_from_slice(&w(len));
            b
        };
        let shb = |big: bool| {
            let bom = if big {
                PCAPNG_BOM.to_be_bytes()
            } else {
                PCAPNG_BOM.to_le_bytes()
            };
            let mut body = bom.to_vec();
            body.extend_from_slice(&[0; 12]);
            block(PCAPNG_SHB, &body, big)
        };
        let mut bytes = Vec::new();
        let mut ends = Vec::new();
        for part in [
            shb(false),
            block(6, &[1; 20], false),
            shb(true),
            block(6, &[2; 8], true),
        ] {
            bytes.extend_from_slice(&part);
            ends.push(bytes.len());
        }
        assert_eq!(boundaries(&bytes), ends);
    }

    #[test]
    fn unframed_input_is_forwarded_as_it_comes() {
        let mut f = Framing::default();
        assert_eq!(f.whole(b"not a capture"), 13);
        assert_eq!(f.whole(b"x"), 1);
        // A record longer than the library accepts: forwarded for the
        // library to report.
        let mut bytes = pcap(&[]).0;
        bytes.extend_from_slice(&[0; 8]);
        bytes.extend_from_slice(&u32::MAX.to_le_bytes());
        bytes.extend_from_slice(&[0; 4]);
        let mut f = Framing::default();
        assert_eq!(f.whole(&bytes), bytes.len());
        assert_eq!(f.whole(b"more"), 4);
    }
}
