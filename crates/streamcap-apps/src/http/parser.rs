//! The streaming parser of one direction of a connection: fed the
//! direction's bytes piece by piece (chunks or segments, with the gaps the
//! engine reports), it finds message heads, counts bodies and says where
//! each message ends.
//!
//! A head (or a chunk-size line, or a trailer) is parsed only with its
//! bytes contiguous. When one is incomplete at the end of the bytes given,
//! the parser asks the caller to keep them ([`Fed::keep`], Scap's
//! `scap_keep_stream_chunk`): the next call then re-presents them followed
//! by the new ones, and the parser goes on from where it stopped, by stream
//! offset, so no byte is handled twice. A caller that cannot keep (segment
//! delivery, where keeping copies the whole segment and is refused when the
//! memory budget is full) says so ([`Input::can_keep`]): the parser then
//! copies the incomplete part itself, at most [`HEAD_LIMIT`] bytes. If kept
//! bytes do not come back (refused after all), the structure they began is
//! dropped as if they had been lost to a gap.
//!
//! Gaps: inside a body of known length the missing bytes are counted and
//! parsing resumes after the body; anywhere else the message is dropped
//! and the parser looks for the next line that starts a request (or
//! status) line. Bytes that are not HTTP where a head should begin are
//! skipped the same way.

use super::body::{Body, BodyStats, Skip, Step};
use super::head::{
    head_end, looks_like_request, looks_like_response, parse_request, parse_response, Framing,
    HeadOptions, Looks, Parsed, RequestHead, ResponseHead,
};
use streamcap::deliver::{Chunk, DataReason};
use streamcap::Timestamp;

/// The most bytes a head may take (and the most the parser copies while
/// one is incomplete and the caller cannot keep it): 64 KiB. A longer
/// head is dropped as garbage.
pub const HEAD_LIMIT: usize = 64 << 10;

/// How far past missing or unexpected first bytes (a gap at the start,
/// or a stream picked up inside a message) the parser looks for a head
/// before it takes the direction for not HTTP: 1 MiB. A direction is
/// looked through so only when the other one is HTTP, or for the server's
/// direction, while the client's is not known yet; it stops as soon as
/// the other direction turns out not to be HTTP.
pub const HUNT_LIMIT: u64 = 1 << 20;

/// Which side of the conversation a parser reads.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Side {
    /// The client's direction (requests).
    Request,
    /// The server's direction (responses).
    Response,
}

impl Side {
    /// The other side.
    pub fn other(self) -> Side {
        match self {
            Side::Request => Side::Response,
            Side::Response => Side::Request,
        }
    }
}

/// One call's bytes: a chunk's or a segment's.
#[derive(Copy, Clone, Debug)]
pub struct Input<'a> {
    /// Contiguous stream bytes: re-presented (kept) or overlap bytes
    /// first, then new ones.
    pub data: &'a [u8],
    /// Stream offset of `data[0]`.
    pub offset: u64,
    /// Index of the first byte not presented before.
    pub new_from: usize,
    /// Bytes missing right before `data[new_from]`: (stream offset, length).
    pub gap: Option<(u64, u64)>,
    /// Whether the caller will keep the bytes if asked ([`Fed::keep`]).
    pub can_keep: bool,
    /// No byte follows in this direction.
    pub last: bool,
    /// When the new bytes arrived (the time given to heads that begin in
    /// them).
    pub ts: Timestamp,
}

impl<'a> Input<'a> {
    /// The input of a streamcap chunk (`last` when its reason says no
    /// byte follows).
    pub fn of_chunk(chunk: &Chunk<'a>, can_keep: bool, ts: Timestamp) -> Input<'a> {
        Input {
            ts,
            data: chunk.data,
            offset: chunk.offset,
            new_from: chunk.new_from.min(chunk.data.len()),
            gap: chunk.gap.map(|g| (g.offset, g.len)),
            can_keep,
            last: matches!(chunk.reason, DataReason::Termination | DataReason::Cutoff),
        }
    }
}

/// What the parser wants after a call.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Fed {
    /// Keep these bytes: an incomplete head or framing line ends them
    /// (only when [`Input::can_keep`]).
    pub keep: bool,
    /// The direction is done: not HTTP, or a tunnel (CONNECT, Upgrade).
    pub stop: bool,
    /// The stream offset up to which the next bytes are body bytes that
    /// are only counted (`u64::MAX`: until the connection closes); a
    /// caller may skip them.
    pub body_until: Option<u64>,
}

/// What the response parser needs to know about the request a response
/// answers.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RequestInfo {
    /// A `HEAD` request: the response has no body.
    Head,
    /// A `CONNECT` request: a 2xx response starts a tunnel.
    Connect,
    /// Any other request, or none known.
    Other,
    /// Not parsed yet, but it may come: the response parser waits (keeps
    /// the head) until it does, at most [`HEAD_LIMIT`] bytes.
    Pending,
}

/// The other direction, as a parser sees it.
pub trait Peer {
    /// What is known of request `index` (0 for the connection's first).
    fn request(&self, index: u64) -> RequestInfo;
    /// Whether the direction other than `me` carried an HTTP message
    /// (`Some(true)`), turned out not to be HTTP (`Some(false)`), or is
    /// not known yet.
    fn other_is_http(&self, me: Side) -> Option<bool>;
}

/// A peer that knows nothing: every response is taken for one to a GET.
pub struct NoPeer;

impl Peer for NoPeer {
    fn request(&self, _: u64) -> RequestInfo {
        RequestInfo::Other
    }
    fn other_is_http(&self, _: Side) -> Option<bool> {
        None
    }
}

/// What the parser found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A request head, at this stream offset.
    Request {
        /// Stream offset of its first byte.
        at: u64,
        /// When its first byte arrived.
        ts: Timestamp,
        /// Its fields.
        head: Box<RequestHead>,
    },
    /// A response head (interim 1xx ones too).
    Response {
        /// Stream offset of its first byte.
        at: u64,
        /// When its first byte arrived.
        ts: Timestamp,
        /// Its fields.
        head: Box<ResponseHead>,
    },
    /// The message whose head came last ended (its body too).
    End {
        /// Stream offset just past it.
        at: u64,
        /// The body.
        body: BodyStats,
    },
    /// A message, or bytes where one should have begun, was lost: a head
    /// cut by a gap, too long, or not HTTP.
    Dropped {
        /// Stream offset where it began.
        at: u64,
    },
    /// The direction turned into a tunnel (CONNECT accepted, protocol
    /// switched, or bytes after such a request that are not a request).
    Tunnel {
        /// Stream offset where the tunnel begins.
        at: u64,
    },
    /// The direction does not start like HTTP.
    NotHttp,
}

/// Counters of one parser.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParserStats {
    /// Times the caller was asked to keep bytes.
    pub keeps: u64,
    /// Times kept bytes did not come back (keep refused).
    pub keep_refused: u64,
    /// Times the parser copied an incomplete structure itself.
    pub own_copies: u64,
    /// Bytes it copied.
    pub own_bytes: u64,
    /// Gaps met.
    pub gaps: u64,
    /// Bytes missing in them.
    pub gap_bytes: u64,
    /// Messages dropped (garbage, gaps in heads, heads too long).
    pub dropped: u64,
    /// Times a response waited for its request.
    pub stalls: u64,
}

enum State {
    /// The first bytes of the direction (`first`), or those after a
    /// CONNECT or Upgrade request: a head must start here.
    Detect { first: bool },
    /// A head starts here (after blank lines).
    Head,
    /// In a body; then `then`.
    Body { body: Box<Body>, then: After },
    /// Looking for a line that starts a head (`line_start`: we are at the
    /// start of a line); `give_up`: past this stream offset without one,
    /// the direction is taken for not HTTP (its first bytes were missing).
    Resync {
        line_start: bool,
        give_up: Option<u64>,
    },
    /// Stopped: a tunnel.
    Tunnel,
    /// Stopped: not HTTP.
    NotHttp,
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum After {
    Head,
    Detect,
}

/// The parser of one direction.
pub struct Parser {
    side: Side,
    state: State,
    /// Stream offset of the next byte to handle.
    pos: u64,
    /// Stream offset past the last byte presented.
    seen: u64,
    /// An incomplete structure's bytes copied by the parser, from `own_at`.
    own: Vec<u8>,
    own_at: u64,
    own_active: bool,
    /// Where the search for the end of the head at `pos` stopped.
    scan: usize,
    opts: HeadOptions,
    hash: bool,
    /// Final responses parsed (the index of the request answered next).
    finals: u64,
    stalled: bool,
    /// The time of the current input's new bytes.
    now: Timestamp,
    /// Where the pending bytes began, and when they arrived.
    pending_since: Option<(u64, Timestamp)>,
    /// `seen` when the current input came.
    seen_before: u64,
    stats: ParserStats,
}

impl Parser {
    /// A parser of `side`; `hash`: compute bodies' SHA-256.
    pub fn new(side: Side, opts: HeadOptions, hash: bool) -> Parser {
        Parser {
            side,
            state: State::Detect { first: true },
            pos: 0,
            seen: 0,
            own: Vec::new(),
            own_at: 0,
            own_active: false,
            scan: 0,
            opts,
            hash,
            finals: 0,
            stalled: false,
            now: Timestamp::ZERO,
            pending_since: None,
            seen_before: 0,
            stats: ParserStats::default(),
        }
    }

    /// Which side it reads: the direction's (the client's is the
    /// initiator's), unless the direction's first bytes were the other
    /// side's (a capture that began inside the connection, with the
    /// server's packet) and the other direction had not taken that side.
    pub fn side(&self) -> Side {
        self.side
    }

    /// Stream offset of the next byte it will handle.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Its counters.
    pub fn stats(&self) -> &ParserStats {
        &self.stats
    }

    /// Whether it stopped (not HTTP, or a tunnel).
    pub fn stopped(&self) -> bool {
        matches!(self.state, State::Tunnel | State::NotHttp)
    }

    /// Whether it is still deciding whether the direction is HTTP.
    pub fn detecting(&self) -> bool {
        matches!(self.state, State::Detect { first: true })
    }

    /// Whether it found that the direction is not HTTP.
    pub fn is_not_http(&self) -> bool {
        matches!(self.state, State::NotHttp)
    }

    /// Final (non-1xx) responses parsed: the index of the request the
    /// next response answers.
    pub fn answered(&self) -> u64 {
        self.finals
    }

    /// Bytes it holds itself.
    pub fn held(&self) -> usize {
        self.own.len()
    }

    /// Stops it as a tunnel (the other direction saw the protocol switch).
    pub fn stop_tunnel(&mut self) {
        self.own = Vec::new();
        self.own_active = false;
        self.state = State::Tunnel;
    }

    fn fed(&self, keep: bool) -> Fed {
        let body_until = match &self.state {
            State::Body { body, .. } if self.pos == self.seen => {
                body.counted_ahead().map(|n| self.pos.saturating_add(n))
            }
            _ => None,
        };
        Fed {
            keep,
            stop: self.stopped(),
            body_until,
        }
    }

    /// The time of a head that begins at `at`: when its first byte came.
    fn head_ts(&self, at: u64) -> Timestamp {
        match self.pending_since {
            Some((p, ts)) if p <= at && at < self.seen_before => ts,
            _ => self.now,
        }
    }

    /// Handles one call's bytes; what it finds goes to `out`.
    pub fn feed(&mut self, input: &Input<'_>, peer: &dyn Peer, out: &mut Vec<Event>) -> Fed {
        if self.stopped() {
            return self.fed(false);
        }
        self.now = input.ts;
        self.seen_before = self.seen;
        let data = input.data;
        let new_from = input.new_from.min(data.len());
        let data_end = input.offset + data.len() as u64;
        let usable_from = if input.gap.is_some() {
            input.offset + new_from as u64
        } else {
            input.offset
        };
        if self.own_active {
            if usable_from <= self.pos && data_end >= self.seen {
                // Re-presented after all: the input has everything.
                self.drop_own();
            } else if usable_from <= self.seen {
                if data_end > self.seen {
                    let from = (self.seen - input.offset) as usize;
                    self.own.extend_from_slice(&data[from..]);
                    self.stats.own_bytes += (data.len() - from) as u64;
                }
                self.seen = self.seen.max(data_end);
                let own = std::mem::take(&mut self.own);
                self.run(&own, self.own_at, input.last, peer, out);
                self.own = own;
                return self.after_run(input);
            } else {
                let seen = self.seen;
                self.drop_own();
                self.lose(seen, usable_from, out);
            }
        }
        if usable_from > self.pos {
            if self.pos < self.seen && input.gap.is_none() {
                self.stats.keep_refused += 1;
            }
            self.lose(self.pos, usable_from, out);
        }
        if self.pos >= data_end {
            self.seen = self.seen.max(data_end);
            if input.last {
                self.run(&[], data_end, true, peer, out);
            }
            return self.fed(false);
        }
        self.seen = self.seen.max(data_end);
        let from = (self.pos - input.offset) as usize;
        self.run(&data[from..], self.pos, input.last, peer, out);
        self.after_run(input)
    }

    /// After a run: asks to keep, or copies, what is pending.
    fn after_run(&mut self, input: &Input<'_>) -> Fed {
        self.pending_since = (self.pos < self.seen).then(|| {
            // Bytes from `pos` on wait for more: when did they come?
            let ts = match self.pending_since {
                Some((p, ts)) if p <= self.pos && self.pos < self.seen_before => ts,
                _ => input.ts,
            };
            (self.pos, ts)
        });
        if self.stopped() {
            self.drop_own();
            return self.fed(false);
        }
        if self.pos >= self.seen {
            self.drop_own();
            return self.fed(false);
        }
        if self.own_active {
            let done = (self.pos - self.own_at) as usize;
            self.own.drain(..done.min(self.own.len()));
            self.own_at = self.pos;
            return self.fed(false);
        }
        // While looking for a head, what waits is a line's start or a few
        // bytes: copied, rather than the whole chunk kept.
        let resync = matches!(self.state, State::Resync { .. });
        if input.can_keep && !resync {
            self.stats.keeps += 1;
            return self.fed(true);
        }
        let from = (self.pos - input.offset) as usize;
        self.own.clear();
        self.own
            .extend_from_slice(&input.data[from.min(input.data.len())..]);
        self.own_at = self.pos;
        self.own_active = true;
        self.stats.own_copies += 1;
        self.stats.own_bytes += self.own.len() as u64;
        self.fed(false)
    }

    fn drop_own(&mut self) {
        self.own_active = false;
        if self.own.capacity() > 4096 {
            self.own = Vec::new();
        } else {
            self.own.clear();
        }
    }

    /// The bytes `[self.pos, to)` cannot be had (missing, or pending bytes
    /// that were not kept): `from` is where the missing ones begin.
    fn lose(&mut self, from: u64, to: u64, out: &mut Vec<Event>) {
        if to <= self.pos {
            return;
        }
        self.stats.gaps += 1;
        self.stats.gap_bytes += to - from.max(self.pos);
        let pending = self.pos < self.seen;
        let n = to - self.pos;
        let state = std::mem::replace(
            &mut self.state,
            State::Resync {
                line_start: true,
                give_up: None,
            },
        );
        self.state = match state {
            // The direction's first bytes are missing: look for a head
            // in what follows, for a while.
            State::Detect { first: true } => State::Resync {
                line_start: true,
                give_up: Some(to.saturating_add(HUNT_LIMIT)),
            },
            State::Detect { first: false } => State::Detect { first: false },
            State::Head => {
                if pending {
                    self.stats.dropped += 1;
                    out.push(Event::Dropped { at: self.pos });
                }
                State::Resync {
                    line_start: true,
                    give_up: None,
                }
            }
            State::Body { mut body, then } => match body.skip(n) {
                Skip::Absorbed => State::Body { body, then },
                Skip::Ended(used) => {
                    out.push(Event::End {
                        at: self.pos + used,
                        body: body.finish(true),
                    });
                    match then {
                        _ if used < n => State::Resync {
                            line_start: true,
                            give_up: None,
                        },
                        After::Head => State::Head,
                        After::Detect => State::Detect { first: false },
                    }
                }
                Skip::Lost => {
                    out.push(Event::End {
                        at: self.pos,
                        body: body.finish(false),
                    });
                    State::Resync {
                        line_start: true,
                        give_up: None,
                    }
                }
            },
            s @ (State::Tunnel | State::NotHttp) => s,
            State::Resync { give_up, .. } => State::Resync {
                line_start: true,
                give_up,
            },
        };
        self.scan = 0;
        self.stalled = false;
        self.pos = to;
        self.seen = self.seen.max(to);
    }

    /// The head at `pos` (at least a byte of it in view) is not one: the
    /// search for the next starts past its first byte.
    fn drop_message(&mut self, out: &mut Vec<Event>) {
        self.stats.dropped += 1;
        out.push(Event::Dropped { at: self.pos });
        self.pos += 1;
        self.state = State::Resync {
            line_start: false,
            give_up: None,
        };
        self.scan = 0;
    }

    /// Whether `b` starts the other side's message (`NeedMore` only when
    /// more bytes may come).
    fn looks_other(&self, b: &[u8], last: bool) -> Looks {
        let l = match self.side {
            Side::Request => looks_like_response(b),
            Side::Response => looks_like_request(b),
        };
        if l == Looks::NeedMore && last {
            Looks::No
        } else {
            l
        }
    }

    fn looks(&self, b: &[u8]) -> Looks {
        match self.side {
            Side::Request => looks_like_request(b),
            Side::Response => looks_like_response(b),
        }
    }

    fn start_body(&mut self, framing: Framing, then: After, out: &mut Vec<Event>) {
        let next = match then {
            After::Head => State::Head,
            After::Detect => State::Detect { first: false },
        };
        if framing == Framing::None {
            out.push(Event::End {
                at: self.pos,
                body: Body::new(framing, self.hash).finish(true),
            });
            self.state = next;
        } else {
            self.state = State::Body {
                body: Box::new(Body::new(framing, self.hash)),
                then,
            };
        }
    }

    /// Parses `buf`, whose first byte is at stream offset `base` (at or
    /// before `self.pos`); stops at its end or where more bytes are
    /// needed.
    fn run(&mut self, buf: &[u8], base: u64, last: bool, peer: &dyn Peer, out: &mut Vec<Event>) {
        let end = base + buf.len() as u64;
        loop {
            let avail = &buf[(self.pos - base) as usize..];
            match &mut self.state {
                State::Tunnel | State::NotHttp => {
                    self.pos = end;
                    return;
                }
                State::Detect { first } => {
                    let first = *first;
                    if avail.is_empty() && !last {
                        return;
                    }
                    match self.looks(avail) {
                        Looks::Yes => self.state = State::Head,
                        Looks::NeedMore if !last => return,
                        _ if avail.is_empty() => return,
                        // The first bytes of a direction that is the
                        // other side's (a capture that began with the
                        // server's packet): the parser takes that side, if
                        // the other direction has not.
                        _ if first
                            && peer.other_is_http(self.side) != Some(true)
                            && self.looks_other(avail, last) != Looks::No =>
                        {
                            if self.looks_other(avail, last) == Looks::NeedMore {
                                return;
                            }
                            self.side = self.side.other();
                            self.state = State::Head;
                        }
                        _ => {
                            let other = peer.other_is_http(self.side);
                            let hunt = match other {
                                Some(http) => http,
                                None => self.side == Side::Response,
                            };
                            if first && hunt {
                                // The other direction is HTTP (or, for a
                                // server, not known yet): this one may have
                                // been picked up inside a message.
                                self.state = State::Resync {
                                    line_start: false,
                                    give_up: Some(self.pos.saturating_add(HUNT_LIMIT)),
                                };
                                continue;
                            } else if first {
                                self.state = State::NotHttp;
                                out.push(Event::NotHttp);
                            } else {
                                self.state = State::Tunnel;
                                out.push(Event::Tunnel { at: self.pos });
                            }
                            self.pos = end;
                            return;
                        }
                    }
                }
                State::Head => {
                    let blank = avail
                        .iter()
                        .take_while(|&&c| c == b'\r' || c == b'\n')
                        .count();
                    if blank > 0 {
                        self.pos += blank as u64;
                        self.scan = 0;
                        continue;
                    }
                    if avail.is_empty() {
                        return;
                    }
                    match self.looks(avail) {
                        Looks::Yes => {}
                        Looks::NeedMore if !last => return,
                        _ => {
                            self.drop_message(out);
                            continue;
                        }
                    }
                    let window = &avail[..avail.len().min(HEAD_LIMIT)];
                    let Some(len) = head_end(window, &mut self.scan) else {
                        if avail.len() >= HEAD_LIMIT || last {
                            self.drop_message(out);
                            continue;
                        }
                        return;
                    };
                    if !self.head(&avail[..len], avail.len(), last, peer, out) {
                        return;
                    }
                }
                State::Body { body, then } => {
                    if avail.is_empty() && !last {
                        return;
                    }
                    let then = *then;
                    let until_close = body.framing() == Framing::UntilClose;
                    match body.step(avail) {
                        Step::Consumed(n) if n > 0 => self.pos += n as u64,
                        // A body until the close ends at `finish`, which
                        // knows the stream's length (bytes discarded after
                        // the head count too).
                        Step::Consumed(_) if !last || until_close => return,
                        Step::NeedMore if !last => return,
                        Step::Done(n) => {
                            self.pos += n as u64;
                            self.end_body(true, then, out);
                        }
                        Step::Consumed(_) | Step::NeedMore | Step::Invalid => {
                            // The end of the stream, or broken framing.
                            self.end_body(false, then, out);
                            self.state = State::Resync {
                                line_start: false,
                                give_up: None,
                            };
                        }
                    }
                }
                State::Resync {
                    line_start,
                    give_up,
                } => {
                    let (line_start, give_up) = (*line_start, *give_up);
                    if give_up.is_some_and(|g| {
                        self.pos >= g || peer.other_is_http(self.side) == Some(false)
                    }) {
                        self.state = State::NotHttp;
                        out.push(Event::NotHttp);
                        self.pos = end;
                        return;
                    }
                    self.state = State::Resync {
                        line_start: false,
                        give_up,
                    };
                    if line_start {
                        match self.looks(avail) {
                            Looks::Yes => {
                                self.state = State::Head;
                                continue;
                            }
                            Looks::NeedMore if !last && !avail.is_empty() => {
                                self.state = State::Resync {
                                    line_start: true,
                                    give_up,
                                };
                                return;
                            }
                            _ if avail.is_empty() => {
                                self.state = State::Resync {
                                    line_start: true,
                                    give_up,
                                };
                                return;
                            }
                            _ => {}
                        }
                    }
                    // The next candidate: a request line starts a line; a
                    // status line may follow a body that did not end in a
                    // line feed, so `HTTP/1.` anywhere is one.
                    // (The byte at `pos` was looked at if at a line start.)
                    let from = usize::from(line_start).min(avail.len());
                    let next = match self.side {
                        Side::Request => memchr::memchr(b'\n', avail).map(|p| p + 1),
                        Side::Response => {
                            memchr::memmem::find(&avail[from..], STATUS_PREFIX).map(|p| p + from)
                        }
                    };
                    match next {
                        Some(p) => {
                            self.pos += p as u64;
                            self.state = State::Resync {
                                line_start: true,
                                give_up,
                            };
                        }
                        None => {
                            // A status line may begin in the last bytes.
                            let tail = match self.side {
                                Side::Request => 0,
                                Side::Response => prefix_tail(&avail[from..]),
                            };
                            self.pos = end - tail as u64;
                            self.state = State::Resync {
                                line_start: tail > 0,
                                give_up,
                            };
                            return;
                        }
                    }
                }
            }
        }
    }

    fn end_body(&mut self, complete: bool, then: After, out: &mut Vec<Event>) {
        let state = std::mem::replace(&mut self.state, State::Head);
        if let State::Body { body, .. } = state {
            out.push(Event::End {
                at: self.pos,
                body: body.finish(complete),
            });
        }
        self.state = match then {
            After::Head => State::Head,
            After::Detect => State::Detect { first: false },
        };
    }

    /// A complete head `h` at `self.pos` (`avail` bytes are in view).
    /// Returns false when the parser must wait (the response's request is
    /// not known yet).
    fn head(
        &mut self,
        h: &[u8],
        avail: usize,
        last: bool,
        peer: &dyn Peer,
        out: &mut Vec<Event>,
    ) -> bool {
        let at = self.pos;
        match self.side {
            Side::Request => match parse_request(h, self.opts) {
                Parsed::Complete(head, _) => {
                    let framing = head.framing();
                    let then = if head.is_connect() || head.upgrade {
                        After::Detect
                    } else {
                        After::Head
                    };
                    out.push(Event::Request {
                        at,
                        ts: self.head_ts(at),
                        head: Box::new(head),
                    });
                    self.pos += h.len() as u64;
                    self.scan = 0;
                    self.start_body(framing, then, out);
                }
                _ => self.drop_message(out),
            },
            Side::Response => match parse_response(h) {
                Parsed::Complete(head, _) => {
                    let interim = (100..200).contains(&head.code);
                    let info = if interim {
                        RequestInfo::Other
                    } else {
                        peer.request(self.finals)
                    };
                    if info == RequestInfo::Pending && !last && avail < HEAD_LIMIT {
                        if !self.stalled {
                            self.stalled = true;
                            self.stats.stalls += 1;
                        }
                        return false;
                    }
                    self.stalled = false;
                    let code = head.code;
                    let tunnel =
                        code == 101 || (info == RequestInfo::Connect && (200..300).contains(&code));
                    let framing = if interim
                        || code == 204
                        || code == 304
                        || info == RequestInfo::Head
                        || tunnel
                    {
                        Framing::None
                    } else if head.chunked {
                        Framing::Chunked
                    } else {
                        match head.content_length {
                            Some(0) => Framing::None,
                            Some(n) => Framing::Length(n),
                            None => Framing::UntilClose,
                        }
                    };
                    if !interim {
                        self.finals += 1;
                    }
                    out.push(Event::Response {
                        at,
                        ts: self.head_ts(at),
                        head: Box::new(head),
                    });
                    self.pos += h.len() as u64;
                    self.scan = 0;
                    self.start_body(framing, After::Head, out);
                    if tunnel {
                        out.push(Event::Tunnel { at: self.pos });
                        self.state = State::Tunnel;
                    }
                }
                _ => self.drop_message(out),
            },
        }
        true
    }

    /// No byte follows; `end` is the stream's length. A body that runs
    /// until the close ends there (bytes past the parser's position that
    /// were never presented, because the caller discarded them, count as
    /// body bytes); an incomplete one ends incomplete; bytes the parser
    /// holds are parsed one last time.
    pub fn finish(&mut self, end: u64, peer: &dyn Peer, out: &mut Vec<Event>) {
        if self.own_active {
            let own = std::mem::take(&mut self.own);
            self.run(&own, self.own_at, true, peer, out);
            self.drop_own();
        } else if self.pos < self.seen {
            // Pending bytes that the caller kept but never re-presented.
            if let State::Head = self.state {
                self.stats.dropped += 1;
                out.push(Event::Dropped { at: self.pos });
            }
        }
        let state = std::mem::replace(
            &mut self.state,
            State::Resync {
                line_start: false,
                give_up: None,
            },
        );
        self.state = match state {
            State::Body { mut body, then } => {
                let until_close = body.framing() == Framing::UntilClose;
                if until_close && end > self.pos {
                    body.add_unseen(end - self.pos);
                }
                self.pos = self.pos.max(end);
                out.push(Event::End {
                    at: self.pos,
                    body: body.finish(until_close),
                });
                match then {
                    After::Head => State::Head,
                    After::Detect => State::Detect { first: false },
                }
            }
            s => s,
        };
    }
}

const STATUS_PREFIX: &[u8] = b"HTTP/1.";

/// The length of the longest end of `b` that begins `HTTP/1.` (at most 6).
fn prefix_tail(b: &[u8]) -> usize {
    (1..STATUS_PREFIX.len().min(b.len() + 1))
        .rev()
        .find(|&k| b.ends_with(&STATUS_PREFIX[..k]))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(data: &[u8], offset: u64, new_from: usize, can_keep: bool) -> Input<'_> {
        Input {
            data,
            offset,
            new_from,
            gap: None,
            can_keep,
            last: false,
            ts: Timestamp::ZERO,
        }
    }

    fn heads(ev: &[Event]) -> Vec<String> {
        ev.iter()
            .filter_map(|e| match e {
                Event::Request { at, head, .. } => {
                    Some(format!("{at} {} {}", head.method, head.uri))
                }
                Event::Response { at, head, .. } => Some(format!("{at} {}", head.code)),
                Event::End { at, body } => Some(format!("end {at} {}", body.len)),
                Event::Dropped { at } => Some(format!("drop {at}")),
                _ => None,
            })
            .collect()
    }

    /// Kept bytes come back with the new ones; each is handled once.
    #[test]
    fn kept_bytes_are_handled_once() {
        let conv =
            b"POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nxyzGET /b HTTP/1.1\r\nHost: h\r\n\r\n";
        let mut p = Parser::new(Side::Request, HeadOptions::default(), false);
        let mut ev = Vec::new();
        // The first chunk ends inside the second head.
        let cut = 50;
        let f = p.feed(&input(&conv[..cut], 0, 0, true), &NoPeer, &mut ev);
        assert!(f.keep);
        assert_eq!(heads(&ev), ["0 POST /a", "end 42 3"]);
        // Re-presented: the whole kept chunk, then the new bytes.
        let f = p.feed(&input(conv, 0, cut, true), &NoPeer, &mut ev);
        assert!(!f.keep);
        assert_eq!(
            heads(&ev),
            ["0 POST /a", "end 42 3", "42 GET /b", "end 70 0"]
        );
        assert_eq!(p.stats().keeps, 1);
    }

    #[test]
    fn without_keeping_the_parser_copies() {
        let conv = b"GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\n\r\n";
        let mut p = Parser::new(Side::Request, HeadOptions::default(), false);
        let mut ev = Vec::new();
        let mut off = 0;
        for piece in conv.chunks(3) {
            let f = p.feed(&input(piece, off, 0, false), &NoPeer, &mut ev);
            assert!(!f.keep);
            off += piece.len() as u64;
        }
        assert_eq!(
            heads(&ev),
            ["0 GET /a", "end 28 0", "28 GET /b", "end 47 0"]
        );
        assert!(p.stats().own_copies > 0);
        assert_eq!(p.held(), 0);
    }

    #[test]
    fn a_refused_keep_drops_the_head() {
        let conv = b"GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\n\r\n";
        let mut p = Parser::new(Side::Request, HeadOptions::default(), false);
        let mut ev = Vec::new();
        assert!(
            p.feed(&input(&conv[..20], 0, 0, true), &NoPeer, &mut ev)
                .keep
        );
        // Not re-presented: the next event starts at the new bytes.
        p.feed(&input(&conv[20..], 20, 0, true), &NoPeer, &mut ev);
        assert_eq!(heads(&ev), ["drop 0", "28 GET /b", "end 47 0"]);
        assert_eq!(p.stats().keep_refused, 1);
    }

    #[test]
    fn responses_wait_for_their_request() {
        struct Later(RequestInfo);
        impl Peer for Later {
            fn request(&self, _: u64) -> RequestInfo {
                self.0
            }
            fn other_is_http(&self, _: Side) -> Option<bool> {
                Some(true)
            }
        }
        let r = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nHTTP/1.1 200 OK\r\n\r\n";
        let mut p = Parser::new(Side::Response, HeadOptions::default(), false);
        let mut ev = Vec::new();
        let f = p.feed(&input(r, 0, 0, true), &Later(RequestInfo::Pending), &mut ev);
        assert!(f.keep && ev.is_empty());
        // The request turns out to be a HEAD: no body.
        p.feed(
            &input(r, 0, r.len(), true),
            &Later(RequestInfo::Head),
            &mut ev,
        );
        assert_eq!(heads(&ev), ["0 200", "end 38 0", "38 200", "end 57 0"]);
    }
}
