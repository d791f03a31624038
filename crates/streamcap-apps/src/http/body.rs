//! Message bodies: counted, never copied. `Content-Length` bodies,
//! chunked bodies (chunk-size lines with extensions, chunk data, the CR LF
//! after it, trailer fields) and bodies that run until the connection
//! closes; the entity length is the length after de-chunking. Bytes
//! missing inside a body (a gap) are counted in its length, as Zeek
//! counts them, and separately as missing; a SHA-256 of the entity is
//! computed when asked (and given only if no byte was missing).

use super::head::Framing;
use sha2::{Digest, Sha256};

/// The longest chunk-size line, CR LF after chunk data, or trailer line
/// the parser waits for (longer ones make the body invalid).
pub const MAX_LINE: usize = 8 << 10;

/// What a finished body amounted to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BodyStats {
    /// Entity bytes (after de-chunking), missing ones included.
    pub len: u64,
    /// Entity bytes that were missing from the stream (gaps).
    pub missing: u64,
    /// SHA-256 of the entity, when asked for and nothing was missing.
    pub sha256: Option<[u8; 32]>,
    /// The body ended where its framing said (not cut by the end of the
    /// connection, a lost chunk boundary or an invalid chunk line).
    pub complete: bool,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Phase {
    /// A chunk-size line.
    Size,
    /// Chunk data (`remaining` bytes left).
    Data,
    /// The line ending after chunk data.
    DataEnd,
    /// Trailer fields, up to an empty line.
    Trailer,
}

/// What [`Body::step`] did with the bytes it was given.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Consumed this many bytes; the body goes on.
    Consumed(usize),
    /// A line of the chunked framing is not complete: the bytes from here
    /// are needed again, with more.
    NeedMore,
    /// The body ended after this many bytes.
    Done(usize),
    /// The chunked framing is broken here.
    Invalid,
}

/// What [`Body::skip`] did with missing bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Skip {
    /// All inside the body, which goes on.
    Absorbed,
    /// The body ended after this many of them (the others follow it).
    Ended(u64),
    /// The framing is lost (a chunk boundary was missing).
    Lost,
}

/// A body being counted.
pub struct Body {
    framing: Framing,
    phase: Phase,
    remaining: u64,
    len: u64,
    missing: u64,
    hasher: Option<Box<Sha256>>,
}

impl Body {
    /// A body with this framing; `hash`: compute its SHA-256.
    pub fn new(framing: Framing, hash: bool) -> Body {
        Body {
            framing,
            phase: Phase::Size,
            remaining: match framing {
                Framing::Length(n) => n,
                _ => 0,
            },
            len: 0,
            missing: 0,
            hasher: hash.then(|| Box::new(Sha256::new())),
        }
    }

    /// The framing.
    pub fn framing(&self) -> Framing {
        self.framing
    }

    /// Stream bytes from here that are entity bytes only counted (for a
    /// caller that could skip them): `None` while a framing line is
    /// expected, `Some(u64::MAX)` until the connection closes.
    pub fn counted_ahead(&self) -> Option<u64> {
        match (self.framing, self.phase) {
            (Framing::Length(_), _) | (Framing::Chunked, Phase::Data) => Some(self.remaining),
            (Framing::UntilClose, _) => Some(u64::MAX),
            _ => None,
        }
    }

    fn count(&mut self, b: &[u8]) {
        self.len += b.len() as u64;
        if let Some(h) = &mut self.hasher {
            h.update(b);
        }
    }

    /// Consumes the bytes at the start of `b` (the stream bytes right
    /// after what was consumed before).
    pub fn step(&mut self, b: &[u8]) -> Step {
        match self.framing {
            Framing::None => Step::Done(0),
            Framing::UntilClose => {
                self.count(b);
                Step::Consumed(b.len())
            }
            Framing::Length(_) => {
                let n = (b.len() as u64).min(self.remaining) as usize;
                self.count(&b[..n]);
                self.remaining -= n as u64;
                if self.remaining == 0 {
                    Step::Done(n)
                } else {
                    Step::Consumed(n)
                }
            }
            Framing::Chunked => self.chunked(b),
        }
    }

    fn chunked(&mut self, b: &[u8]) -> Step {
        match self.phase {
            Phase::Size => match httparse::parse_chunk_size(b) {
                Ok(httparse::Status::Complete((used, size))) => {
                    if size == 0 {
                        self.phase = Phase::Trailer;
                    } else {
                        self.phase = Phase::Data;
                        self.remaining = size;
                    }
                    Step::Consumed(used)
                }
                Ok(httparse::Status::Partial) if b.len() <= MAX_LINE => Step::NeedMore,
                _ => Step::Invalid,
            },
            Phase::Data => {
                let n = (b.len() as u64).min(self.remaining) as usize;
                self.count(&b[..n]);
                self.remaining -= n as u64;
                if self.remaining == 0 {
                    self.phase = Phase::DataEnd;
                }
                Step::Consumed(n)
            }
            // Whatever precedes the line feed is ignored, as Zeek does
            // ("inaccurate chunk size").
            Phase::DataEnd => match line(b) {
                Some(n) => {
                    self.phase = Phase::Size;
                    Step::Consumed(n)
                }
                None if b.len() <= MAX_LINE => Step::NeedMore,
                None => Step::Invalid,
            },
            Phase::Trailer => match line(b) {
                Some(n) => {
                    let l = &b[..n - 1];
                    if l.is_empty() || l == b"\r" {
                        Step::Done(n)
                    } else {
                        Step::Consumed(n)
                    }
                }
                None if b.len() <= MAX_LINE => Step::NeedMore,
                None => Step::Invalid,
            },
        }
    }

    /// `n` bytes right after what was consumed are missing.
    pub fn skip(&mut self, n: u64) -> Skip {
        let absorb = |b: &mut Body, k: u64| {
            b.len += k;
            b.missing += k;
            b.remaining -= k;
        };
        match (self.framing, self.phase) {
            (Framing::None, _) => Skip::Ended(0),
            (Framing::UntilClose, _) => {
                self.len += n;
                self.missing += n;
                Skip::Absorbed
            }
            (Framing::Length(_), _) => {
                let k = n.min(self.remaining);
                absorb(self, k);
                if self.remaining == 0 {
                    Skip::Ended(k)
                } else {
                    Skip::Absorbed
                }
            }
            (Framing::Chunked, Phase::Data) if n <= self.remaining => {
                absorb(self, n);
                if self.remaining == 0 {
                    self.phase = Phase::DataEnd;
                }
                Skip::Absorbed
            }
            (Framing::Chunked, Phase::Data) => {
                let k = self.remaining;
                absorb(self, k);
                Skip::Lost
            }
            (Framing::Chunked, _) => Skip::Lost,
        }
    }

    /// The body's figures (`complete`: it ended where its framing said).
    pub fn finish(self, complete: bool) -> BodyStats {
        let sha256 = match self.hasher {
            Some(h) if self.missing == 0 => Some(h.finalize().into()),
            _ => None,
        };
        BodyStats {
            len: self.len,
            missing: self.missing,
            sha256,
            complete,
        }
    }

    /// Adds `n` entity bytes that were not looked at (a body until close
    /// whose stream was discarded after the head).
    pub fn add_unseen(&mut self, n: u64) {
        self.len += n;
        self.hasher = None;
    }
}

/// The length of the line at the start of `b`, line feed included.
fn line(b: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', b).map(|p| p + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(framing: Framing, b: &[u8]) -> (usize, BodyStats) {
        let mut body = Body::new(framing, true);
        let mut at = 0;
        loop {
            match body.step(&b[at..]) {
                Step::Consumed(n) if n > 0 => at += n,
                Step::Done(n) => return (at + n, body.finish(true)),
                _ => return (at, body.finish(false)),
            }
        }
    }

    #[test]
    fn chunked_bodies_are_dechunked() {
        let b =
            b"4;ext=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nX-T: 1\r\n\r\nNEXT";
        let (used, st) = run(Framing::Chunked, b);
        assert_eq!(used, b.len() - 4);
        assert_eq!(st.len, 23);
        assert!(st.complete);
        let want: [u8; 32] = Sha256::digest(b"Wikipedia in\r\n\r\nchunks.").into();
        assert_eq!(st.sha256, Some(want));
        let (_, st) = run(Framing::Chunked, b"zz\r\n");
        assert!(!st.complete);
    }

    #[test]
    fn gaps_inside_bodies_are_counted() {
        let mut b = Body::new(Framing::Length(10), true);
        assert_eq!(b.step(b"abc"), Step::Consumed(3));
        assert_eq!(b.skip(4), Skip::Absorbed);
        assert_eq!(b.counted_ahead(), Some(3));
        assert_eq!(b.skip(5), Skip::Ended(3));
        let st = b.finish(true);
        assert_eq!((st.len, st.missing, st.sha256), (10, 7, None));
        let mut c = Body::new(Framing::Chunked, false);
        assert_eq!(c.step(b"a\r\n"), Step::Consumed(3));
        assert_eq!(c.skip(4), Skip::Absorbed);
        assert_eq!(c.skip(7), Skip::Lost);
        assert_eq!(c.finish(false).len, 10);
    }
}
