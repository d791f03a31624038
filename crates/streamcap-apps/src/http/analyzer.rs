//! The analyser: one per worker, driven by a handler's callbacks (its own
//! [`super::Http`] or a composite handler's), with each stream
//! direction's parser in the stream's user state ([`HttpState`], passed
//! separately as `nids::Detector` takes its state) and each connection's
//! transactions in a store keyed by the connection's serial number
//! (`StreamInfo::conn_id`, unique within a worker), removed at the
//! connection's end.

use super::exchange::{ConnMeta, Exchange, DEFAULT_MAX_PENDING};
use super::head::HeadOptions;
use super::parser::{Event, Input, Parser, ParserStats, Side};
use super::record::RecordSink;
use crate::compose::{Reply, Want};
use crate::conn_id::ConnId;
use std::collections::HashMap;
use streamcap::deliver::{Chunk, Delivery, Stream};
use streamcap::flow::Direction;
use streamcap::Timestamp;

/// Settings of the analyser.
#[derive(Clone, Debug)]
pub struct HttpConfig {
    /// Compute each body's SHA-256 (`request_body_sha256`,
    /// `response_body_sha256` in the JSON records). Bodies are then read
    /// to their end even when they run until the connection closes.
    pub hash_bodies: bool,
    /// Log Basic authentication's password (Zeek's
    /// `HTTP::default_capture_password`, off by default).
    pub capture_password: bool,
    /// Pending transactions per connection before they are all written
    /// out (Zeek's `HTTP::max_pending_requests`, 100; 0: no limit).
    pub max_pending: usize,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            hash_bodies: false,
            capture_password: false,
            max_pending: DEFAULT_MAX_PENDING,
        }
    }
}

/// Counters of one analyser; [`HttpStats::add`] sums workers'.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpStats {
    /// TCP stream directions looked at.
    pub streams: u64,
    /// Directions whose first bytes were not HTTP (discarded).
    pub not_http: u64,
    /// Connections with at least one HTTP message.
    pub connections: u64,
    /// Request heads.
    pub requests: u64,
    /// Response heads (interim ones included).
    pub responses: u64,
    /// Records written.
    pub records: u64,
    /// Directions stopped as tunnels (CONNECT, Upgrade).
    pub tunnels: u64,
    /// Times a connection's pending transactions overflowed.
    pub pending_overflows: u64,
    /// Response directions discarded after a head whose body runs until
    /// the close (counted from the stream's length, not read).
    pub bodies_skipped: u64,
    /// The parsers' counters, summed.
    pub parser: ParserStats,
}

impl HttpStats {
    /// Adds `o` into `self`.
    pub fn add(&mut self, o: &HttpStats) {
        self.streams += o.streams;
        self.not_http += o.not_http;
        self.connections += o.connections;
        self.requests += o.requests;
        self.responses += o.responses;
        self.records += o.records;
        self.tunnels += o.tunnels;
        self.pending_overflows += o.pending_overflows;
        self.bodies_skipped += o.bodies_skipped;
        add_parser(&mut self.parser, &o.parser);
    }
}

fn add_parser(a: &mut ParserStats, b: &ParserStats) {
    a.keeps += b.keeps;
    a.keep_refused += b.keep_refused;
    a.own_copies += b.own_copies;
    a.own_bytes += b.own_bytes;
    a.gaps += b.gaps;
    a.gap_bytes += b.gap_bytes;
    a.dropped += b.dropped;
    a.stalls += b.stalls;
}

/// A stream direction's parser (the engine's per-stream user state: one
/// pointer).
#[derive(Default)]
pub struct HttpState(Option<Box<Parser>>);

impl HttpState {
    /// Whether the direction is being parsed.
    pub fn is_active(&self) -> bool {
        self.0.as_ref().is_some_and(|p| !p.stopped())
    }
}

/// What a connection's transactions are, plus what the response side
/// needs to know of the request side.
struct Conn {
    exchange: Exchange,
    /// Per direction (orig, resp): stream offset past the last byte its
    /// parser was given, and whether it ended.
    seen: [u64; 2],
    done: [bool; 2],
    /// Per direction: the side its parser took, once it has one; whether
    /// it stopped.
    side: [Option<Side>; 2],
    stopped: [bool; 2],
    counted: bool,
}

/// HTTP/1.x analysis of one worker's TCP streams.
pub struct HttpAnalyzer {
    config: HttpConfig,
    conns: HashMap<u64, Conn>,
    events: Vec<Event>,
    stats: HttpStats,
}

impl HttpAnalyzer {
    /// An analyser with these settings.
    pub fn new(config: HttpConfig) -> HttpAnalyzer {
        HttpAnalyzer {
            config,
            conns: HashMap::new(),
            events: Vec::new(),
            stats: HttpStats::default(),
        }
    }

    /// The settings.
    pub fn config(&self) -> &HttpConfig {
        &self.config
    }

    /// The counters so far (those of streams not closed yet excepted).
    pub fn stats(&self) -> &HttpStats {
        &self.stats
    }

    /// Connections whose transactions are held.
    pub fn open_connections(&self) -> usize {
        self.conns.len()
    }

    /// Sets a new stream's delivery as the analyser prefers it: the
    /// request direction segment by segment ([`Delivery::Segments`]), so
    /// that every request reaches the analyser before its response (in
    /// 16 KiB chunks a short request would wait in its chunk while the
    /// response's chunks are delivered) and request bodies are not
    /// copied. The response direction keeps the configured delivery.
    pub fn prepare<S>(s: &mut Stream<'_, S>) {
        if s.proto() == 6 && s.direction() == Direction::Orig {
            s.set_delivery(Delivery::Segments);
        }
    }

    /// A stream starts: TCP streams get a parser, others are not wanted.
    pub fn start<S>(&mut self, s: &Stream<'_, S>, state: &mut HttpState) -> Want {
        if s.proto() != 6 {
            return Want::Nothing;
        }
        let side = match s.direction() {
            Direction::Orig => Side::Request,
            Direction::Resp => Side::Response,
        };
        let opts = HeadOptions {
            capture_password: self.config.capture_password,
        };
        *state = HttpState(Some(Box::new(Parser::new(
            side,
            opts,
            self.config.hash_bodies,
        ))));
        self.stats.streams += 1;
        Want::All
    }

    /// New bytes of a stream: parses them, writes the transactions they
    /// complete to `sink`, and asks for the chunk to be kept ([`Reply::keep`]) when a head
    /// is incomplete and the stream's delivery is in chunks. Returns what
    /// is still wanted: nothing once the direction is not HTTP or a
    /// tunnel, or once a response body runs until the close (its length
    /// is then the stream's, at [`HttpAnalyzer::close`]) unless bodies are
    /// hashed.
    pub fn data<S>(
        &mut self,
        s: &Stream<'_, S>,
        state: &mut HttpState,
        chunk: &Chunk<'_>,
        sink: &mut impl RecordSink,
    ) -> Reply {
        let Some(p) = state.0.as_mut() else {
            return Want::Nothing.into();
        };
        if p.stopped() {
            return Want::Nothing.into();
        }
        let conn_id = s.info().conn_id;
        let conn = match self.conns.get_mut(&conn_id) {
            Some(c) => c,
            None => {
                let meta = meta_of(s);
                self.conns.entry(conn_id).or_insert(Conn {
                    exchange: Exchange::new(meta, self.config.max_pending),
                    seen: [0; 2],
                    done: [false; 2],
                    side: [None; 2],
                    stopped: [false; 2],
                    counted: false,
                })
            }
        };
        if conn.exchange.tunnel {
            p.stop_tunnel();
            self.stats.tunnels += 1;
            return Want::Nothing.into();
        }
        let can_keep = s.info().params.delivery == Delivery::Chunks;
        let new_at = chunk.offset + chunk.new_from as u64;
        let input = Input::of_chunk(chunk, can_keep, ts_at(chunk, new_at, s.info().end));
        let d = dir_index(s.direction());
        if p.side() == Side::Response {
            // Only when the next response's request is not known yet: did
            // bytes of the other direction arrive that it was not given
            // yet (in a chunk still filling)?
            let o = 1 - d;
            conn.exchange.request_may_come = conn.exchange.requests() <= p.answered()
                && !conn.done[o]
                && !conn.stopped[o]
                && conn.side[o] != Some(Side::Response)
                && s.opposite().counters.stream_bytes > conn.seen[o];
        }
        self.events.clear();
        let fed = p.feed(&input, &conn.exchange, &mut self.events);
        let side = p.side();
        conn.seen[d] = conn.seen[d].max(chunk.offset + chunk.data.len() as u64);
        conn.side[d] = (!p.detecting()).then_some(side);
        conn.stopped[d] = p.stopped();
        for mut ev in self.events.drain(..) {
            if let Event::Request { at, ts, .. } | Event::Response { at, ts, .. } = &mut ev {
                if *at >= new_at {
                    // In this chunk: the packet records, if any, are exact.
                    *ts = ts_at(chunk, *at, *ts);
                }
            }
            match &ev {
                Event::Request { .. } => self.stats.requests += 1,
                Event::Response { .. } => self.stats.responses += 1,
                Event::Tunnel { .. } => self.stats.tunnels += 1,
                Event::NotHttp => self.stats.not_http += 1,
                _ => {}
            }
            if !conn.counted && matches!(ev, Event::Request { .. } | Event::Response { .. }) {
                conn.counted = true;
                self.stats.connections += 1;
            }
            conn.exchange.apply(side, ev, sink);
        }
        let (overflows, records) = (conn.exchange.overflows, conn.exchange.records);
        self.stats.pending_overflows += overflows;
        self.stats.records += records;
        conn.exchange.overflows = 0;
        conn.exchange.records = 0;
        let keep = fed.keep;
        if fed.stop {
            // The entry stays until the connection ends: the other
            // direction learns from it that this one is not HTTP.
            return Reply {
                want: Want::Nothing,
                keep,
            };
        }
        if side == Side::Response && !self.config.hash_bodies && fed.body_until == Some(u64::MAX) {
            self.stats.bodies_skipped += 1;
            return Reply {
                want: Want::Nothing,
                keep,
            };
        }
        Reply {
            want: Want::All,
            keep,
        }
    }

    /// A stream ends: its parser finishes (a body until the close ends
    /// at the stream's length), and its counters join the analyser's.
    pub fn close<S>(
        &mut self,
        s: &Stream<'_, S>,
        state: &mut HttpState,
        sink: &mut impl RecordSink,
    ) {
        let Some(mut p) = state.0.take() else {
            return;
        };
        let conn_id = s.info().conn_id;
        if let Some(conn) = self.conns.get_mut(&conn_id) {
            let side = p.side();
            conn.done[dir_index(s.direction())] = true;
            conn.exchange.request_may_come = false;
            self.events.clear();
            if conn.exchange.tunnel {
                p.stop_tunnel();
            }
            if !p.stopped() {
                p.finish(
                    s.info().counters.stream_bytes,
                    &conn.exchange,
                    &mut self.events,
                );
            }
            for ev in self.events.drain(..) {
                match &ev {
                    Event::Request { .. } => self.stats.requests += 1,
                    Event::Response { .. } => self.stats.responses += 1,
                    _ => {}
                }
                conn.exchange.apply(side, ev, sink);
            }
            self.stats.records += conn.exchange.records;
            conn.exchange.records = 0;
        }
        add_parser(&mut self.stats.parser, p.stats());
    }

    /// A connection ended: its pending transactions are written and its
    /// entry removed. Call it after both streams' [`HttpAnalyzer::close`].
    pub fn flow_end(&mut self, conn_id: u64, sink: &mut impl RecordSink) {
        if let Some(mut conn) = self.conns.remove(&conn_id) {
            conn.exchange.finish(sink);
            self.stats.records += conn.exchange.records;
            self.stats.pending_overflows += conn.exchange.overflows;
        }
    }
}

fn dir_index(d: Direction) -> usize {
    match d {
        Direction::Orig => 0,
        Direction::Resp => 1,
    }
}

/// The time of the packet holding stream offset `at`: from the chunk's
/// packet records when it has them, else the stream's last packet (exact
/// with segment delivery).
fn ts_at(chunk: &Chunk<'_>, at: u64, end: Timestamp) -> Timestamp {
    chunk
        .packets
        .iter()
        .filter(|r| r.offset <= at && at < r.offset + u64::from(r.len).max(1))
        .map(|r| r.ts)
        .next_back()
        .unwrap_or(end)
}

/// The connection's names, as every log of the run gives them.
fn meta_of<S>(s: &Stream<'_, S>) -> ConnMeta {
    let id = ConnId::of_stream(s);
    ConnMeta {
        uid: id.uid(),
        orig: id.orig,
        resp: id.resp,
    }
}
