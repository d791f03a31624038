//! `dns.log` records and the pairing of queries with responses, as Zeek's
//! `base/protocols/dns/main.zeek` does it.
//!
//! A [`DnsFlow`] holds one connection's pending messages. Messages are
//! paired by transaction id in arrival order (per id, first in, first
//! out); a response seen before its query waits for it too. A pair is
//! logged when its second message arrives; whatever is still unpaired
//! when the connection ends is logged by [`DnsFlow::finish`] (a query
//! without an answer, a second response to one query…). Only standard
//! queries (opcode 0) are tracked.
//!
//! Which message fills which field follows Zeek: `RD`, `TC`, `Z`, `query`,
//! `qtype` and `qclass` come from the query; `rcode` and `rejected` from
//! the response; `AA`, `RA`, `rtt`, `answers` and `TTLs` from the
//! response's answer section (a response without answers gives no `rtt`;
//! a response seen alone takes `query` from its first answer's owner).
//! `ts` is the time of the connection's message that opened the pair.
//!
//! Not done as Zeek does: NetBIOS names (port 137) are not decoded and
//! its SRV queries are not renamed NBSTAT; a first message that is a
//! response from the originator does not swap the connection's roles.

use super::message::Message;
use super::names::{qclass_name, qtype_name, rcode_name};
use crate::logs::zeek::{self, ZeekInterval, ZeekTime};
use serde::Serialize;
use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use streamcap::Timestamp;

/// Give up pairing the messages of one transaction id past this many
/// unpaired ones (Zeek's `DNS::max_pending_msgs`): they are logged.
pub const MAX_PENDING_MSGS: usize = 50;
/// Give up pairing when this many ids have unpaired messages (Zeek's
/// `DNS::max_pending_query_ids`): they are all logged.
pub const MAX_PENDING_IDS: usize = 50;

/// The transport of a DNS connection.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DnsProto {
    /// Datagrams.
    Udp,
    /// Length-prefixed messages on a stream.
    Tcp,
}

impl DnsProto {
    /// `udp` or `tcp`.
    pub fn name(self) -> &'static str {
        match self {
            DnsProto::Udp => "udp",
            DnsProto::Tcp => "tcp",
        }
    }
}

/// One line of `dns.log`. Serializes to Zeek's JSON (flat dotted keys,
/// unset fields left out).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[allow(non_snake_case)]
pub struct DnsRecord {
    /// Time of the message that opened the pair.
    pub ts: ZeekTime,
    /// The connection's uid (as in `conn.log`).
    pub uid: String,
    /// Originator address.
    #[serde(rename = "id.orig_h")]
    pub orig_h: IpAddr,
    /// Originator port.
    #[serde(rename = "id.orig_p")]
    pub orig_p: u16,
    /// Responder address.
    #[serde(rename = "id.resp_h")]
    pub resp_h: IpAddr,
    /// Responder port.
    #[serde(rename = "id.resp_p")]
    pub resp_p: u16,
    /// `udp` or `tcp`.
    pub proto: DnsProto,
    /// Transaction id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trans_id: Option<u16>,
    /// From the query to the response's first answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt: Option<ZeekInterval>,
    /// The name asked about (lowercased; non-printable bytes as `\xNN`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// QCLASS.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qclass: Option<u16>,
    /// QCLASS's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qclass_name: Option<String>,
    /// QTYPE.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qtype: Option<u16>,
    /// QTYPE's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qtype_name: Option<String>,
    /// The response code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rcode: Option<u16>,
    /// The response code's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rcode_name: Option<String>,
    /// Authoritative answer.
    pub AA: bool,
    /// Truncated (from the query).
    pub TC: bool,
    /// Recursion desired.
    pub RD: bool,
    /// Recursion available.
    pub RA: bool,
    /// The three bits after RA (from the query).
    pub Z: u8,
    /// The answers, as Zeek writes them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answers: Option<Vec<String>>,
    /// The answers' TTLs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub TTLs: Option<Vec<ZeekInterval>>,
    /// The server rejected the query (an error without a question, or a
    /// response with no record at all).
    pub rejected: bool,
}

/// The `#fields` of `dns.log`.
pub const FIELDS: [&str; 24] = [
    "ts",
    "uid",
    "id.orig_h",
    "id.orig_p",
    "id.resp_h",
    "id.resp_p",
    "proto",
    "trans_id",
    "rtt",
    "query",
    "qclass",
    "qclass_name",
    "qtype",
    "qtype_name",
    "rcode",
    "rcode_name",
    "AA",
    "TC",
    "RD",
    "RA",
    "Z",
    "answers",
    "TTLs",
    "rejected",
];

/// The `#types` of `dns.log`.
pub const TYPES: [&str; 24] = [
    "time",
    "string",
    "addr",
    "port",
    "addr",
    "port",
    "enum",
    "count",
    "interval",
    "string",
    "count",
    "string",
    "count",
    "string",
    "count",
    "string",
    "bool",
    "bool",
    "bool",
    "bool",
    "count",
    "vector[string]",
    "vector[interval]",
    "bool",
];

/// The header of a TSV `dns.log` (`open`: the `#open` time, see
/// [`zeek::log_time`]).
pub fn tsv_header(open: &str) -> String {
    zeek::tsv_header("dns", &FIELDS, &TYPES, open)
}

impl DnsRecord {
    /// The record as one TSV line (with its newline).
    pub fn tsv_line(&self) -> String {
        let f = [
            self.ts.text(),
            zeek::escape(&self.uid, false),
            self.orig_h.to_string(),
            self.orig_p.to_string(),
            self.resp_h.to_string(),
            self.resp_p.to_string(),
            self.proto.name().to_string(),
            zeek::opt(self.trans_id),
            zeek::opt(self.rtt.map(ZeekInterval::text)),
            zeek::opt_str(self.query.as_deref()),
            zeek::opt(self.qclass),
            zeek::opt_str(self.qclass_name.as_deref()),
            zeek::opt(self.qtype),
            zeek::opt_str(self.qtype_name.as_deref()),
            zeek::opt(self.rcode),
            zeek::opt_str(self.rcode_name.as_deref()),
            zeek::bool_field(self.AA).to_string(),
            zeek::bool_field(self.TC).to_string(),
            zeek::bool_field(self.RD).to_string(),
            zeek::bool_field(self.RA).to_string(),
            self.Z.to_string(),
            zeek::vector(self.answers.as_ref()),
            zeek::vector(
                self.TTLs
                    .as_ref()
                    .map(|v| v.iter().map(|t| t.text()).collect::<Vec<_>>()),
            ),
            zeek::bool_field(self.rejected).to_string(),
        ];
        zeek::tsv_line(&f)
    }

    /// The record as one line of Zeek JSON (without a newline).
    pub fn json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

struct Pending {
    rec: DnsRecord,
    saw_query: bool,
    saw_reply: bool,
    /// Arrival order, for logging what stays unpaired in order.
    serial: u64,
}

/// One connection's DNS messages, paired into [`DnsRecord`]s.
pub struct DnsFlow {
    uid: String,
    orig: (IpAddr, u16),
    resp: (IpAddr, u16),
    proto: DnsProto,
    queries: HashMap<u16, VecDeque<Pending>>,
    replies: HashMap<u16, VecDeque<Pending>>,
    serial: u64,
}

impl DnsFlow {
    /// A connection named `uid` from `orig` to `resp`.
    pub fn new(uid: String, orig: (IpAddr, u16), resp: (IpAddr, u16), proto: DnsProto) -> DnsFlow {
        DnsFlow {
            uid,
            orig,
            resp,
            proto,
            queries: HashMap::new(),
            replies: HashMap::new(),
            serial: 0,
        }
    }

    /// One DNS message (a UDP payload, or a TCP message without its
    /// length) seen at `ts`; pairs completed by it go to `out`. Messages
    /// shorter than a header, and other opcodes than 0, are ignored.
    pub fn message(&mut self, ts: Timestamp, msg: &[u8], out: &mut Vec<DnsRecord>) {
        let Some(m) = Message::parse(msg, self.resp.1 == 137) else {
            return;
        };
        if m.header.opcode() != 0 {
            return;
        }
        let id = m.header.id;
        let is_query = !m.header.qr();
        let matched = if is_query {
            pop(&mut self.replies, id)
        } else {
            pop(&mut self.queries, id)
        };
        let mut p = matched.unwrap_or_else(|| {
            self.serial += 1;
            Pending {
                rec: self.new_record(ts, id),
                saw_query: false,
                saw_reply: false,
                serial: self.serial,
            }
        });
        apply(&mut p.rec, &m, ts);
        if is_query {
            p.saw_query = true;
        } else {
            p.saw_reply = true;
        }
        if p.saw_query && p.saw_reply {
            out.push(p.rec);
            return;
        }
        let table = if is_query {
            &mut self.queries
        } else {
            &mut self.replies
        };
        if !table.contains_key(&id) && table.len() > MAX_PENDING_IDS {
            flush_all(table, out);
        }
        let q = table.entry(id).or_default();
        if q.len() > MAX_PENDING_MSGS {
            out.extend(q.drain(..).map(|p| p.rec));
        }
        q.push_back(p);
    }

    /// The connection ended: logs every unpaired message, in arrival order.
    pub fn finish(mut self, out: &mut Vec<DnsRecord>) {
        let mut left: Vec<Pending> = self
            .queries
            .drain()
            .chain(self.replies.drain())
            .flat_map(|(_, q)| q)
            .collect();
        left.sort_by_key(|p| p.serial);
        out.extend(left.into_iter().map(|p| p.rec));
    }

    fn new_record(&self, ts: Timestamp, id: u16) -> DnsRecord {
        DnsRecord {
            ts: ZeekTime(ts),
            uid: self.uid.clone(),
            orig_h: self.orig.0,
            orig_p: self.orig.1,
            resp_h: self.resp.0,
            resp_p: self.resp.1,
            proto: self.proto,
            trans_id: Some(id),
            rtt: None,
            query: None,
            qclass: None,
            qclass_name: None,
            qtype: None,
            qtype_name: None,
            rcode: None,
            rcode_name: None,
            AA: false,
            TC: false,
            RD: false,
            RA: false,
            Z: 0,
            answers: None,
            TTLs: None,
            rejected: false,
        }
    }
}

fn pop(table: &mut HashMap<u16, VecDeque<Pending>>, id: u16) -> Option<Pending> {
    let q = table.get_mut(&id)?;
    let p = q.pop_front();
    if q.is_empty() {
        table.remove(&id);
    }
    p
}

fn flush_all(table: &mut HashMap<u16, VecDeque<Pending>>, out: &mut Vec<DnsRecord>) {
    let mut left: Vec<Pending> = table.drain().flat_map(|(_, q)| q).collect();
    left.sort_by_key(|p| p.serial);
    out.extend(left.into_iter().map(|p| p.rec));
}

/// Fills a record from one message, the way Zeek's event handlers do.
fn apply(rec: &mut DnsRecord, m: &Message, ts: Timestamp) {
    let h = &m.header;
    if !h.qr() {
        if let Some(q) = &m.question {
            rec.RD = h.rd();
            rec.TC = h.tc();
            rec.qclass = Some(q.qclass);
            rec.qclass_name = Some(qclass_name(q.qclass));
            rec.qtype = Some(q.qtype);
            rec.qtype_name = Some(qtype_name(q.qtype));
            rec.Z = h.z();
            rec.query = Some(zeek::text(&q.name));
        }
        return;
    }
    rec.rcode = Some(u16::from(h.rcode()));
    rec.rcode_name = Some(rcode_name(u16::from(h.rcode())));
    if h.rcode() != 0 && h.qdcount == 0 {
        rec.rejected = true;
    }
    if m.question.is_some() && h.ancount == 0 && h.nscount == 0 && h.arcount == 0 {
        rec.rejected = true;
    }
    for a in &m.answers {
        let Some(text) = &a.text else {
            continue;
        };
        if rec.query.is_none() {
            rec.query = Some(zeek::text(&a.owner));
        }
        rec.AA = h.aa();
        rec.RA = h.ra();
        if rec.rtt.is_none() {
            let d = ts.nanos_since(rec.ts.0);
            if d > 0 {
                rec.rtt = Some(ZeekInterval(d));
            }
        }
        if !text.is_empty() {
            rec.answers
                .get_or_insert_with(Vec::new)
                .push(zeek::text(text));
            rec.TTLs
                .get_or_insert_with(Vec::new)
                .push(ZeekInterval::from_secs(u64::from(a.ttl)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::message::tests::{query, response};
    use super::*;

    fn flow() -> DnsFlow {
        DnsFlow::new(
            "CtestUid".into(),
            ("10.0.0.1".parse().unwrap(), 5353),
            ("10.0.0.53".parse().unwrap(), 53),
            DnsProto::Udp,
        )
    }

    fn t(ms: u64) -> Timestamp {
        Timestamp::from_secs_nanos(1_700_000_000, ms * 1_000_000)
    }

    #[test]
    fn a_query_and_its_response_make_one_record() {
        let mut f = flow();
        let mut out = Vec::new();
        f.message(t(0), &query(0x1234, "Example.COM", 1), &mut out);
        assert!(out.is_empty());
        let r = response(
            0x1234,
            "example.com",
            1,
            0,
            &[(1, 3600, vec![93, 184, 216, 34]), (1, 60, vec![1, 2, 3, 4])],
        );
        f.message(t(25), &r, &mut out);
        assert_eq!(out.len(), 1);
        let rec = &out[0];
        assert_eq!(rec.query.as_deref(), Some("example.com"));
        assert_eq!(rec.rtt, Some(ZeekInterval(25_000_000)));
        assert_eq!(rec.qtype_name.as_deref(), Some("A"));
        assert_eq!(rec.rcode_name.as_deref(), Some("NOERROR"));
        assert!(rec.RD && rec.RA && !rec.AA && !rec.rejected);
        let line = rec.tsv_line();
        let cols: Vec<&str> = line.trim_end().split('\t').collect();
        assert_eq!(cols.len(), FIELDS.len());
        assert_eq!(cols[0], "1700000000.000000");
        assert_eq!(cols[6], "udp");
        assert_eq!(cols[7], "4660");
        assert_eq!(cols[8], "0.025000");
        assert_eq!(cols[21], "93.184.216.34,1.2.3.4");
        assert_eq!(cols[22], "3600.000000,60.000000");
        let j: serde_json::Value = serde_json::from_str(&rec.json()).unwrap();
        assert_eq!(j["id.orig_h"], "10.0.0.1");
        assert_eq!(j["id.resp_p"], 53);
        assert_eq!(j["answers"][0], "93.184.216.34");
        assert_eq!(j["TTLs"][0], 3600.0);
        assert_eq!(j["rtt"], 0.025);
        assert_eq!(j["AA"], false);
        assert!(rec.json().starts_with("{\"ts\":1700000000.000000,"));
        assert!(tsv_header("x").contains("#fields\tts\tuid\tid.orig_h"));
        f.finish(&mut out);
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn unanswered_and_extra_messages_are_logged_at_the_end() {
        let mut f = flow();
        let mut out = Vec::new();
        f.message(t(0), &query(1, "a.example", 28), &mut out);
        f.message(t(1), &query(2, "b.example", 1), &mut out);
        // Response to 2 (NXDOMAIN, no records: rejected), then a second one.
        f.message(t(2), &response(2, "b.example", 1, 3, &[]), &mut out);
        f.message(t(3), &response(2, "b.example", 1, 3, &[]), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].query.as_deref(), Some("b.example"));
        assert_eq!(out[0].rcode_name.as_deref(), Some("NXDOMAIN"));
        assert!(out[0].rejected);
        assert_eq!(out[0].rtt, None);
        f.finish(&mut out);
        assert_eq!(out.len(), 3);
        // The unanswered query, then the lone response.
        assert_eq!(out[1].query.as_deref(), Some("a.example"));
        assert_eq!(out[1].rcode, None);
        assert_eq!(out[2].query, None);
        assert_eq!(out[2].rcode, Some(3));
        let cols: Vec<String> = out[1]
            .tsv_line()
            .trim_end()
            .split('\t')
            .map(String::from)
            .collect();
        assert_eq!(cols[8], "-");
        assert_eq!(cols[21], "-");
    }

    #[test]
    fn a_response_before_its_query_still_pairs() {
        let mut f = flow();
        let mut out = Vec::new();
        let r = response(9, "c.example", 1, 0, &[(1, 5, vec![9, 9, 9, 9])]);
        f.message(t(0), &r, &mut out);
        assert!(out.is_empty());
        f.message(t(1), &query(9, "c.example", 1), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].answers.as_ref().unwrap(), &["9.9.9.9"]);
        assert_eq!(out[0].qtype, Some(1));
    }

    #[test]
    fn garbage_is_ignored_or_logged_without_panic() {
        let mut f = flow();
        let mut out = Vec::new();
        let mut x: u64 = 7;
        for i in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 80) as usize;
            let bytes: Vec<u8> = (0..len).map(|k| (x >> (k % 56)) as u8 ^ k as u8).collect();
            f.message(t(i), &bytes, &mut out);
        }
        f.finish(&mut out);
        for r in &out {
            assert_eq!(r.tsv_line().matches('\t').count(), FIELDS.len() - 1);
        }
    }

    #[test]
    fn pending_limits_flush() {
        let mut f = flow();
        let mut out = Vec::new();
        for id in 0..=(MAX_PENDING_IDS as u16 + 1) {
            f.message(t(0), &query(id, "x.y", 1), &mut out);
        }
        assert_eq!(out.len(), MAX_PENDING_IDS + 1);
        for _ in 0..=MAX_PENDING_MSGS + 1 {
            f.message(t(0), &query(500, "x.y", 1), &mut out);
        }
        assert!(out.len() > MAX_PENDING_IDS + MAX_PENDING_MSGS);
    }
}
