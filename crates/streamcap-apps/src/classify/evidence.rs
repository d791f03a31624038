//! What one direction of a connection has shown: its first bytes, read by
//! the probes, and the walk of its TLS records.
//!
//! An [`Evidence`] is meant to be a stream's user state: it is one
//! pointer, allocated at the first byte fed. TCP bytes are fed with their
//! stream offset, in any pieces: only the contiguous run from the first
//! byte fed is inspected, at most [`INSPECT_LIMIT`] bytes of it (a gap
//! ends the run), plus the TLS record headers up to
//! [`TLS_WALK_LIMIT`](super::tls::TLS_WALK_LIMIT) when the direction
//! starts like TLS. UDP datagrams are fed one by one, at most
//! [`MAX_DATAGRAMS`] of them, each read up to [`INSPECT_LIMIT`] bytes.
//! [`Evidence::feed_stream`] and [`Evidence::feed_datagram`] say when the
//! direction has shown all it will: from then on the caller can discard it
//! (Scap's early discard) and only count.

use super::probe::{self, Hint};
use super::tls::{may_start_record, TlsWalk};
use super::INSPECT_LIMIT;
use streamcap::deliver::Chunk;

use super::Transport;

/// Datagrams of a direction read at most.
pub const MAX_DATAGRAMS: u32 = 4;

/// Whether a direction still wants bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Progress {
    /// More bytes may tell more.
    More,
    /// Nothing more will be learned: the direction can be discarded.
    Done,
}

/// One direction's evidence (the per-stream state: `Default` and one
/// pointer in size).
#[derive(Default, Debug, Clone)]
pub struct Evidence(Option<Box<Inner>>);

#[derive(Debug, Clone, Default)]
struct Inner {
    /// The first bytes (dropped once the probes have settled).
    buf: Vec<u8>,
    /// Stream offset of the next expected byte.
    next: u64,
    /// The probes' settled answer.
    settled: Option<Option<Hint>>,
    /// The TLS record walk, when the direction's first byte may start a record.
    tls: Option<TlsWalk>,
    /// A gap (or the end) stopped the TLS walk.
    walk_stopped: bool,
    datagrams: u32,
    inspected: u64,
}

impl Evidence {
    /// No bytes seen.
    pub fn new() -> Evidence {
        Evidence::default()
    }

    fn inner(&mut self) -> &mut Inner {
        self.0.get_or_insert_with(Box::default)
    }

    /// Stream bytes starting at stream `offset`. Bytes before the next
    /// expected offset (already seen) are skipped; bytes after it (a gap)
    /// end the inspection.
    pub fn feed_stream(&mut self, offset: u64, data: &[u8]) -> Progress {
        if data.is_empty() && self.0.is_none() {
            return Progress::More;
        }
        let first = self.0.is_none();
        let d = self.inner();
        if first {
            d.next = offset;
            if data.first().is_some_and(|&b| may_start_record(b)) {
                d.tls = Some(TlsWalk::new());
            }
        }
        if d.is_done() || data.is_empty() {
            return d.progress();
        }
        let end = offset + data.len() as u64;
        if end <= d.next {
            return d.progress();
        }
        if offset > d.next {
            d.close();
            return d.progress();
        }
        let data = &data[(d.next - offset) as usize..];
        d.next = end;
        if d.settled.is_none() {
            let room = INSPECT_LIMIT - d.buf.len();
            let take = room.min(data.len());
            d.inspected += take as u64;
            if d.buf.is_empty() {
                // Most first segments settle the probes alone: no copy.
                let first = &data[..take];
                match probe::stream(first, first.len() >= INSPECT_LIMIT) {
                    Some(answer) => d.settle(answer),
                    None => d.buf.extend_from_slice(first),
                }
            } else {
                d.buf.extend_from_slice(&data[..take]);
                let last = d.buf.len() >= INSPECT_LIMIT;
                if let Some(answer) = probe::stream(&d.buf, last) {
                    d.settle(answer);
                }
            }
        }
        if let Some(w) = &mut d.tls {
            if !d.walk_stopped && !w.is_done() {
                w.feed(data);
            }
        }
        d.progress()
    }

    /// A data event of a stream ([`Chunk::new_data`] at its offset), or
    /// of a datagram protocol (each event one datagram: give UDP streams
    /// segment delivery, see [`super::prepare`]).
    pub fn feed_chunk(&mut self, transport: Transport, chunk: &Chunk<'_>) -> Progress {
        match transport {
            Transport::Tcp => {
                self.feed_stream(chunk.offset + chunk.new_from as u64, chunk.new_data())
            }
            Transport::Udp => self.feed_datagram(chunk.new_data()),
        }
    }

    /// One datagram.
    pub fn feed_datagram(&mut self, data: &[u8]) -> Progress {
        let d = self.inner();
        if d.is_done() {
            return Progress::Done;
        }
        d.datagrams += 1;
        let d_len = data.len().min(INSPECT_LIMIT);
        d.inspected += d_len as u64;
        if let Some(h) = probe::datagram(&data[..d_len]) {
            d.settle(Some(h));
        } else if d.datagrams >= MAX_DATAGRAMS {
            d.settle(None);
        }
        d.progress()
    }

    /// The direction ended (or will not be fed any more): what was seen is
    /// all there is.
    pub fn finish(&mut self) {
        if let Some(d) = &mut self.0 {
            d.close();
        }
    }

    /// Whether nothing more will be learned.
    /// Whether the label is settled, though the TLS walk may still want
    /// bytes (for [`TlsInfo::established`](super::TlsInfo)): the probes
    /// have answered, and a TLS direction's hello is parsed.
    pub fn is_labelled(&self) -> bool {
        self.0.as_ref().is_some_and(|d| {
            d.settled.is_some()
                && (d.walk_stopped
                    || d.tls
                        .as_ref()
                        .is_none_or(|w| w.is_done() || w.hello().is_some()))
        })
    }

    /// Whether nothing more is wanted.
    pub fn is_done(&self) -> bool {
        self.0.as_ref().is_some_and(|d| d.is_done())
    }

    /// Whether any byte or datagram was fed.
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// Bytes read: buffered for the probes, datagram bytes, and bytes
    /// walked over by the TLS record walk.
    pub fn inspected(&self) -> u64 {
        self.0.as_ref().map_or(0, |d| {
            d.inspected.max(d.tls.as_ref().map_or(0, TlsWalk::walked))
        })
    }

    /// What the probes found: their settled answer, or else the answer on
    /// the bytes seen so far, as if no more would come.
    pub fn hint(&self) -> Option<Hint> {
        let d = self.0.as_ref()?;
        match &d.settled {
            Some(h) => h.clone(),
            None => probe::stream(&d.buf, true).flatten(),
        }
    }

    /// The TLS record walk, if the direction started like TLS.
    pub fn tls(&self) -> Option<&TlsWalk> {
        self.0.as_ref()?.tls.as_ref()
    }
}

impl Inner {
    fn settle(&mut self, answer: Option<Hint>) {
        self.settled = Some(answer);
        self.buf = Vec::new();
    }

    /// No more bytes will reach the probes or the walk.
    fn close(&mut self) {
        if self.settled.is_none() {
            let answer = probe::stream(&self.buf, true).flatten();
            self.settle(answer);
        }
        self.walk_stopped = true;
    }

    fn is_done(&self) -> bool {
        self.settled.is_some()
            && (self.walk_stopped || self.tls.as_ref().is_none_or(TlsWalk::is_done))
    }

    fn progress(&self) -> Progress {
        if self.is_done() {
            Progress::Done
        } else {
            Progress::More
        }
    }
}
