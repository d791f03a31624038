//! One connection's conversation fed by hand: both directions' bytes in
//! pieces, with gaps, without a capture, in the order they were sent (a
//! response is never held back for a request fed later). The keeping of incomplete heads
//! is simulated as the engine does it (kept bytes re-presented before the
//! next piece), or refused, so the parser copies them itself. For
//! reassembled streams from elsewhere, and for tests and fuzzing.

use super::analyzer::HttpConfig;
use super::exchange::{ConnMeta, Exchange};
use super::head::HeadOptions;
use super::parser::{Event, Input, Parser, ParserStats, Side};
use super::record::RecordSink;
use streamcap::flow::Direction;
use streamcap::Timestamp;

struct Dir {
    parser: Parser,
    /// Stream offset of the next new byte.
    next: u64,
    kept: Vec<u8>,
    kept_at: u64,
    gap: Option<(u64, u64)>,
    closed: bool,
}

/// A connection fed by hand.
pub struct Session {
    dirs: [Dir; 2],
    exchange: Exchange,
    keep: bool,
    events: Vec<Event>,
}

impl Session {
    /// A conversation of the connection `meta`; `keep`: incomplete heads
    /// are kept and re-presented (chunk delivery) rather than copied by
    /// the parser (segment delivery).
    pub fn new(meta: ConnMeta, config: &HttpConfig, keep: bool) -> Session {
        let opts = HeadOptions {
            capture_password: config.capture_password,
        };
        let dir = |side| Dir {
            parser: Parser::new(side, opts, config.hash_bodies),
            next: 0,
            kept: Vec::new(),
            kept_at: 0,
            gap: None,
            closed: false,
        };
        Session {
            dirs: [dir(Side::Request), dir(Side::Response)],
            exchange: Exchange::new(meta, config.max_pending),
            keep,
            events: Vec::new(),
        }
    }

    fn idx(d: Direction) -> usize {
        match d {
            Direction::Orig => 0,
            Direction::Resp => 1,
        }
    }

    /// The next `bytes` of direction `d`, which arrived at `ts`.
    pub fn feed(&mut self, d: Direction, bytes: &[u8], ts: Timestamp, sink: &mut impl RecordSink) {
        let i = Self::idx(d);
        if self.dirs[i].closed || bytes.is_empty() {
            return;
        }
        if self.exchange.tunnel {
            // The other direction switched protocols: as the analyser does.
            self.dirs[i].parser.stop_tunnel();
            return;
        }
        let dir = &mut self.dirs[i];
        let mut joined;
        let (data, offset, new_from) = if dir.kept.is_empty() {
            (bytes, dir.next, 0)
        } else {
            joined = std::mem::take(&mut dir.kept);
            let n = joined.len();
            joined.extend_from_slice(bytes);
            (&joined[..], dir.kept_at, n)
        };
        let input = Input {
            data,
            offset,
            new_from,
            gap: dir.gap.take(),
            can_keep: self.keep,
            last: false,
            ts,
        };
        self.events.clear();
        let fed = dir.parser.feed(&input, &self.exchange, &mut self.events);
        dir.next += bytes.len() as u64;
        if fed.keep {
            dir.kept = data.to_vec();
            dir.kept_at = offset;
        }
        let side = dir.parser.side();
        for ev in self.events.drain(..) {
            self.exchange.apply(side, ev, sink);
        }
    }

    /// `len` bytes of direction `d` are missing.
    pub fn gap(&mut self, d: Direction, len: u64) {
        let dir = &mut self.dirs[Self::idx(d)];
        if len == 0 || dir.closed {
            return;
        }
        // As the engine does: kept bytes are released at a gap.
        dir.kept.clear();
        dir.gap = Some(match dir.gap {
            Some((o, l)) => (o, l + len),
            None => (dir.next, len),
        });
        dir.next += len;
    }

    /// Direction `d` ends.
    pub fn close(&mut self, d: Direction, ts: Timestamp, sink: &mut impl RecordSink) {
        let i = Self::idx(d);
        if self.dirs[i].closed {
            return;
        }
        self.dirs[i].closed = true;
        let dir = &mut self.dirs[i];
        if self.exchange.tunnel {
            dir.parser.stop_tunnel();
        }
        self.events.clear();
        if !dir.kept.is_empty() || dir.gap.is_some() {
            // Kept bytes come back one last time, as the stream's last chunk.
            let data = std::mem::take(&mut dir.kept);
            let input = Input {
                data: &data,
                offset: if data.is_empty() {
                    dir.next
                } else {
                    dir.kept_at
                },
                new_from: data.len(),
                gap: dir.gap.take(),
                can_keep: false,
                last: true,
                ts,
            };
            dir.parser.feed(&input, &self.exchange, &mut self.events);
        }
        dir.parser
            .finish(dir.next, &self.exchange, &mut self.events);
        let side = dir.parser.side();
        for ev in self.events.drain(..) {
            self.exchange.apply(side, ev, sink);
        }
    }

    /// The conversation ends: both directions close and the pending
    /// transactions are written.
    pub fn finish(mut self, ts: Timestamp, sink: &mut impl RecordSink) -> [ParserStats; 2] {
        self.close(Direction::Orig, ts, sink);
        self.close(Direction::Resp, ts, sink);
        self.exchange.finish(sink);
        let [a, b] = self.dirs;
        [a.parser.stats().clone(), b.parser.stats().clone()]
    }
}
