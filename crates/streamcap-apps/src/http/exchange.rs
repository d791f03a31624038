//! Transactions: a connection's requests and responses paired in order,
//! as Zeek's `base/protocols/http/main.zeek` pairs them.
//!
//! Zeek keeps a table of pending transactions indexed by a request counter
//! and a response counter. A request takes the next request index (first
//! catching up with the response counter if responses ran ahead); a
//! response takes the next response index unless the transaction there is
//! still waiting for its final response (after a 1xx). A transaction is
//! written when its final response has ended; those still pending when the
//! connection ends are written then, in order. More than `max_pending`
//! pending transactions (pipelining far ahead of the responses, or a
//! server side that is not seen) are all written out at once and the
//! pairing starts again, as Zeek does with `HTTP::max_pending_requests`.
//!
//! One [`Exchange`] per connection, shared by its two directions: the
//! response parser asks it about the request a response answers
//! ([`Peer`]).

use super::parser::{Event, Peer, RequestInfo, Side};
use super::record::{HttpRecord, RecordSink};
use std::collections::{BTreeMap, VecDeque};
use std::net::IpAddr;
use streamcap::Timestamp;

/// Zeek's default `HTTP::max_pending_requests`.
pub const DEFAULT_MAX_PENDING: usize = 100;

/// What names a connection in its records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnMeta {
    /// Zeek uid.
    pub uid: String,
    /// Initiator address and port.
    pub orig: (IpAddr, u16),
    /// Responder address and port.
    pub resp: (IpAddr, u16),
}

/// The transactions of one connection.
pub struct Exchange {
    meta: ConnMeta,
    pending: BTreeMap<u64, HttpRecord>,
    cur_req: u64,
    cur_resp: u64,
    depth: u64,
    max_pending: usize,
    /// What the response parser needs of each request not yet answered,
    /// from request index `methods_base` on.
    methods: VecDeque<RequestInfo>,
    methods_base: u64,
    /// Request heads seen.
    requests: u64,
    /// Final responses seen.
    answered: u64,
    /// Whether a request the next response answers may still come (set by
    /// the caller before feeding the response direction).
    pub request_may_come: bool,
    /// The connection turned into a tunnel: both directions stop.
    pub tunnel: bool,
    /// Times the pending transactions overflowed.
    pub overflows: u64,
    /// Records written.
    pub records: u64,
    /// Per direction (orig, resp): carried an HTTP message (`Some(true)`),
    /// found not HTTP (`Some(false)`), not known yet.
    verdict: [Option<bool>; 2],
}

impl Exchange {
    /// The transactions of the connection `meta` names; at most
    /// `max_pending` pending (0: no limit).
    pub fn new(meta: ConnMeta, max_pending: usize) -> Exchange {
        Exchange {
            meta,
            pending: BTreeMap::new(),
            cur_req: 0,
            cur_resp: 0,
            depth: 0,
            max_pending,
            methods: VecDeque::new(),
            methods_base: 0,
            requests: 0,
            answered: 0,
            request_may_come: false,
            tunnel: false,
            overflows: 0,
            records: 0,
            verdict: [None, None],
        }
    }

    /// Request heads seen.
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// Whether nothing was seen (no request, no response).
    pub fn is_empty(&self) -> bool {
        self.depth == 0
    }

    fn open(&mut self, at: u64, ts: Timestamp) -> &mut HttpRecord {
        let (meta, depth) = (&self.meta, &mut self.depth);
        self.pending.entry(at).or_insert_with(|| {
            *depth += 1;
            HttpRecord {
                ts,
                uid: meta.uid.clone(),
                orig: Some(meta.orig),
                resp: Some(meta.resp),
                trans_depth: *depth,
                ..HttpRecord::default()
            }
        })
    }

    fn write(&mut self, key: u64, sink: &mut impl RecordSink) {
        if let Some(r) = self.pending.remove(&key) {
            self.records += 1;
            sink.record(r);
        }
    }

    /// Applies one event of the parser of side `side`.
    pub fn apply(&mut self, side: Side, ev: Event, sink: &mut impl RecordSink) {
        let d = match side {
            Side::Request => 0,
            Side::Response => 1,
        };
        match ev {
            Event::Request { .. } | Event::Response { .. } => self.verdict[d] = Some(true),
            Event::NotHttp if self.verdict[d].is_none() => self.verdict[d] = Some(false),
            _ => {}
        }
        match (side, ev) {
            (_, Event::Request { head, ts, .. }) => {
                if self.cur_req < self.cur_resp {
                    self.cur_req = self.cur_resp;
                }
                if self.max_pending > 0 && self.pending.len() > self.max_pending {
                    self.overflows += 1;
                    if self.cur_resp == 0 {
                        self.cur_resp += 1;
                    }
                    while self.cur_resp < self.cur_req {
                        self.write(self.cur_resp, sink);
                        self.cur_resp += 1;
                    }
                }
                self.cur_req += 1;
                if self.methods.is_empty() {
                    self.methods_base = self.requests;
                }
                self.requests += 1;
                self.methods.push_back(if head.is_head() {
                    RequestInfo::Head
                } else if head.is_connect() {
                    RequestInfo::Connect
                } else {
                    RequestInfo::Other
                });
                let h = *head;
                let r = self.open(self.cur_req, ts);
                r.method = Some(h.method);
                r.uri = Some(h.uri);
                r.host = h.host;
                r.referrer = h.referrer;
                r.user_agent = h.user_agent;
                r.origin = h.origin;
                r.username = h.username;
                r.password = h.password;
                r.proxied = h.proxied;
            }
            (Side::Request, Event::End { body, .. }) => {
                if let Some(r) = self.pending.get_mut(&self.cur_req) {
                    r.request_body_len = body.len;
                    r.request_missing = body.missing;
                    r.request_sha256 = body.sha256.map(hex::encode);
                }
            }
            (_, Event::Response { head, ts, .. }) => {
                let interim_open = self
                    .pending
                    .get(&self.cur_resp)
                    .is_some_and(|r| r.status_code.is_none_or(|c| (100..200).contains(&c)));
                if !interim_open {
                    self.cur_resp += 1;
                }
                let interim = (100..200).contains(&head.code);
                if !interim {
                    self.answered += 1;
                    while self.methods_base < self.answered && !self.methods.is_empty() {
                        self.methods.pop_front();
                        self.methods_base += 1;
                    }
                }
                let h = *head;
                let msg = h.reason.unwrap_or_else(|| "<empty>".into());
                let r = self.open(self.cur_resp, ts);
                r.status_code = Some(h.code);
                r.version = Some(h.version);
                if interim {
                    r.info_code = Some(h.code);
                    r.info_msg = Some(msg.clone());
                }
                r.status_msg = Some(msg);
            }
            (Side::Response, Event::End { body, .. }) => {
                let Some(r) = self.pending.get_mut(&self.cur_resp) else {
                    return;
                };
                r.response_body_len = body.len;
                r.response_missing = body.missing;
                r.response_sha256 = body.sha256.map(hex::encode);
                if !r.status_code.is_some_and(|c| (100..200).contains(&c)) {
                    self.write(self.cur_resp, sink);
                }
            }
            (Side::Response, Event::Tunnel { .. }) => self.tunnel = true,
            (_, Event::Tunnel { .. } | Event::Dropped { .. } | Event::NotHttp) => {}
        }
    }

    /// The connection ended: writes the transactions still pending, in
    /// order.
    pub fn finish(&mut self, sink: &mut impl RecordSink) {
        for (_, r) in std::mem::take(&mut self.pending) {
            self.records += 1;
            sink.record(r);
        }
    }
}

impl Peer for Exchange {
    fn other_is_http(&self, me: Side) -> Option<bool> {
        match me {
            Side::Request => self.verdict[1],
            Side::Response => self.verdict[0],
        }
    }

    fn request(&self, index: u64) -> RequestInfo {
        if index < self.methods_base {
            return RequestInfo::Other;
        }
        match self.methods.get((index - self.methods_base) as usize) {
            Some(&m) => m,
            None if self.request_may_come => RequestInfo::Pending,
            None => RequestInfo::Other,
        }
    }
}
