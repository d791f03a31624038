//! The records: one per transaction, with the fields of Zeek's `http.log`
//! (`base/protocols/http/main.zeek`), written as Zeek's JSON writer writes
//! them (one object per line, flat keys such as `"id.orig_h"`, unset
//! fields left out, `ts` as seconds with microseconds) or as its TSV
//! (ASCII) writer does (header lines, `-` for unset, `(empty)` for empty).
//!
//! Left out: `orig_fuids`, `orig_filenames`, `orig_mime_types` and their
//! `resp_` twins, which Zeek's file analysis adds
//! (`base/protocols/http/entities.zeek`): they need file identifiers and
//! content sniffing (libmagic signatures), which this crate does not have.

use std::io::{self, Write};
use std::net::IpAddr;
use streamcap::Timestamp;

/// One HTTP transaction: a request and its response (either may be
/// missing).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpRecord {
    /// Time of the request's first packet (the response's if there is no
    /// request).
    pub ts: Timestamp,
    /// The connection's Zeek uid ([`crate::conn_id::ConnId::uid`]).
    pub uid: String,
    /// Initiator address and port.
    pub orig: Option<(IpAddr, u16)>,
    /// Responder address and port.
    pub resp: Option<(IpAddr, u16)>,
    /// 1 for the connection's first transaction, 2 for the next...
    pub trans_depth: u64,
    /// Request method.
    pub method: Option<String>,
    /// `Host` header.
    pub host: Option<String>,
    /// Request URI, unescaped as Zeek does.
    pub uri: Option<String>,
    /// `Referer` header.
    pub referrer: Option<String>,
    /// The response's HTTP version (`1.1`): Zeek takes it from the reply.
    pub version: Option<String>,
    /// `User-Agent` header.
    pub user_agent: Option<String>,
    /// `Origin` header.
    pub origin: Option<String>,
    /// Request entity bytes (after de-chunking; missing ones included).
    pub request_body_len: u64,
    /// Response entity bytes (after de-chunking; missing ones included).
    pub response_body_len: u64,
    /// Status code (the last response's, interim ones included).
    pub status_code: Option<u16>,
    /// Reason phrase (`<empty>` when the status line has none).
    pub status_msg: Option<String>,
    /// The last interim (1xx) code.
    pub info_code: Option<u16>,
    /// Its reason phrase.
    pub info_msg: Option<String>,
    /// Zeek's tags (always empty here).
    pub tags: Vec<String>,
    /// Basic authentication user name.
    pub username: Option<String>,
    /// Basic authentication password: unset unless asked for, as Zeek's
    /// `HTTP::default_capture_password = F`.
    pub password: Option<String>,
    /// Proxy headers (`NAME -> value`); unset when none.
    pub proxied: Vec<String>,
    /// Not in Zeek's log: request entity bytes missing (gaps).
    pub request_missing: u64,
    /// Not in Zeek's log: response entity bytes missing (gaps).
    pub response_missing: u64,
    /// Not in Zeek's log: SHA-256 of the request entity (lowercase hex),
    /// when asked for and complete.
    pub request_sha256: Option<String>,
    /// Not in Zeek's log: SHA-256 of the response entity.
    pub response_sha256: Option<String>,
}

/// Where records go.
pub trait RecordSink {
    /// One record.
    fn record(&mut self, r: HttpRecord);
}

impl RecordSink for Vec<HttpRecord> {
    fn record(&mut self, r: HttpRecord) {
        self.push(r);
    }
}

/// A [`RecordSink`] made of a closure.
pub struct FnSink<F>(pub F);

impl<F: FnMut(HttpRecord)> RecordSink for FnSink<F> {
    fn record(&mut self, r: HttpRecord) {
        (self.0)(r)
    }
}

/// The `#fields` line's names, in Zeek's order.
pub const FIELDS: [&str; 24] = [
    "ts",
    "uid",
    "id.orig_h",
    "id.orig_p",
    "id.resp_h",
    "id.resp_p",
    "trans_depth",
    "method",
    "host",
    "uri",
    "referrer",
    "version",
    "user_agent",
    "origin",
    "request_body_len",
    "response_body_len",
    "status_code",
    "status_msg",
    "info_code",
    "info_msg",
    "tags",
    "username",
    "password",
    "proxied",
];

/// The `#types` line's types.
pub const TYPES: [&str; 24] = [
    "time",
    "string",
    "addr",
    "port",
    "addr",
    "port",
    "count",
    "string",
    "string",
    "string",
    "string",
    "string",
    "string",
    "string",
    "count",
    "count",
    "count",
    "string",
    "count",
    "string",
    "set[enum]",
    "string",
    "string",
    "set[string]",
];

/// A field's value.
enum V<'a> {
    Time(Timestamp),
    Str(Option<&'a str>),
    Addr(Option<IpAddr>),
    Count(Option<u64>),
    /// A set; `None` unset.
    Set(Option<&'a [String]>),
}

impl HttpRecord {
    fn values(&self) -> [V<'_>; 24] {
        fn s(o: &Option<String>) -> V<'_> {
            V::Str(o.as_deref())
        }
        [
            V::Time(self.ts),
            V::Str(Some(&self.uid)),
            V::Addr(self.orig.map(|e| e.0)),
            V::Count(self.orig.map(|e| u64::from(e.1))),
            V::Addr(self.resp.map(|e| e.0)),
            V::Count(self.resp.map(|e| u64::from(e.1))),
            V::Count(Some(self.trans_depth)),
            s(&self.method),
            s(&self.host),
            s(&self.uri),
            s(&self.referrer),
            s(&self.version),
            s(&self.user_agent),
            s(&self.origin),
            V::Count(Some(self.request_body_len)),
            V::Count(Some(self.response_body_len)),
            V::Count(self.status_code.map(u64::from)),
            s(&self.status_msg),
            V::Count(self.info_code.map(u64::from)),
            s(&self.info_msg),
            V::Set(Some(&self.tags)),
            s(&self.username),
            s(&self.password),
            V::Set((!self.proxied.is_empty()).then_some(&self.proxied[..])),
        ]
    }

    /// The record as one line of Zeek JSON (no newline). The SHA-256
    /// fields, not Zeek's, follow when set.
    pub fn to_json(&self) -> String {
        let mut o = String::with_capacity(512);
        o.push('{');
        let mut first = true;
        let mut key = |o: &mut String, k: &str| {
            if !first {
                o.push(',');
            }
            first = false;
            o.push('"');
            o.push_str(k);
            o.push_str("\":");
        };
        for (name, v) in FIELDS.iter().zip(self.values()) {
            match v {
                V::Time(t) => {
                    key(&mut o, name);
                    o.push_str(&json_time(t));
                }
                V::Str(Some(s)) => {
                    key(&mut o, name);
                    o.push_str(&json_string(s));
                }
                V::Addr(Some(a)) => {
                    key(&mut o, name);
                    o.push_str(&json_string(&a.to_string()));
                }
                V::Count(Some(n)) => {
                    key(&mut o, name);
                    o.push_str(&n.to_string());
                }
                V::Set(Some(items)) => {
                    key(&mut o, name);
                    o.push('[');
                    for (i, it) in items.iter().enumerate() {
                        if i > 0 {
                            o.push(',');
                        }
                        o.push_str(&json_string(it));
                    }
                    o.push(']');
                }
                V::Str(None) | V::Addr(None) | V::Count(None) | V::Set(None) => {}
            }
        }
        for (name, v) in [
            ("request_body_sha256", &self.request_sha256),
            ("response_body_sha256", &self.response_sha256),
        ] {
            if let Some(h) = v {
                key(&mut o, name);
                o.push_str(&json_string(h));
            }
        }
        o.push('}');
        o
    }

    /// The record as one line of Zeek TSV (with newline).
    pub fn to_tsv(&self) -> String {
        let mut f: Vec<String> = Vec::with_capacity(24);
        for v in self.values() {
            f.push(match v {
                V::Time(t) => tsv_time(t),
                V::Str(Some(s)) => tsv_string(s, false),
                V::Addr(Some(a)) => a.to_string(),
                V::Count(Some(n)) => n.to_string(),
                V::Set(Some([])) => "(empty)".into(),
                V::Set(Some(items)) => items
                    .iter()
                    .map(|s| tsv_string(s, true))
                    .collect::<Vec<_>>()
                    .join(","),
                V::Str(None) | V::Addr(None) | V::Count(None) | V::Set(None) => "-".into(),
            });
        }
        let mut s = f.join("\t");
        s.push('\n');
        s
    }
}

/// `ts` as Zeek's JSON writer prints a time: a double of seconds with
/// microsecond precision, shortest form (`1300475168.783842`, `1.5`).
pub fn json_time(t: Timestamp) -> String {
    let micros = t.as_nanos() / 1000;
    let v = (micros / 1_000_000) as f64 + (micros % 1_000_000) as f64 / 1e6;
    serde_json::Number::from_f64(v).map_or_else(|| "null".into(), |n| n.to_string())
}

/// A time as Zeek's TSV writer prints it (`%.6f`).
pub fn tsv_time(t: Timestamp) -> String {
    let micros = t.as_nanos() / 1000;
    format!("{}.{:06}", micros / 1_000_000, micros % 1_000_000)
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// A string as Zeek's TSV writer escapes it: the separator, control
/// characters and (inside sets) the set separator as `\xNN`; a value that
/// reads as the unset or empty marker escaped so that it does not.
fn tsv_string(s: &str, in_set: bool) -> String {
    if s.is_empty() {
        return if in_set {
            String::new()
        } else {
            "(empty)".into()
        };
    }
    if s == "-" {
        return "\\x2d".into();
    }
    let mut out = String::with_capacity(s.len());
    if s == "(empty)" {
        out.push_str("\\x28");
        out.push_str(&s[1..]);
        return out;
    }
    for c in s.chars() {
        if (c as u32) < 0x20 || c == '\x7f' || (in_set && c == ',') {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// The TSV header lines (`#separator` ... `#types`), each with a newline;
/// `open` is the `#open` time (`YYYY-MM-DD-HH-MM-SS`).
pub fn tsv_header(open: &str) -> String {
    format!(
        "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n#path\thttp\n#open\t{open}\n#fields\t{}\n#types\t{}\n",
        FIELDS.join("\t"),
        TYPES.join("\t")
    )
}

/// The TSV trailer line.
pub fn tsv_footer(close: &str) -> String {
    format!("#close\t{close}\n")
}

/// `YYYY-MM-DD-HH-MM-SS` (UTC) of a time, as `#open` and `#close` show it.
pub fn log_time(t: Timestamp) -> String {
    let u = t.utc();
    format!(
        "{:04}-{:02}-{:02}-{:02}-{:02}-{:02}",
        u.year, u.month, u.day, u.hour, u.minute, u.second
    )
}

/// Writes records as JSON lines. Write errors are kept: the first one is
/// returned by [`JsonLines::finish`].
pub struct JsonLines<W: Write> {
    out: W,
    error: Option<io::Error>,
}

impl<W: Write> JsonLines<W> {
    /// A writer to `out`.
    pub fn new(out: W) -> JsonLines<W> {
        JsonLines { out, error: None }
    }
    /// Flushes; returns the writer or the first error.
    pub fn finish(mut self) -> io::Result<W> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

impl<W: Write> RecordSink for JsonLines<W> {
    fn record(&mut self, r: HttpRecord) {
        if self.error.is_none() {
            let mut l = r.to_json();
            l.push('\n');
            if let Err(e) = self.out.write_all(l.as_bytes()) {
                self.error = Some(e);
            }
        }
    }
}

/// Writes records as Zeek TSV: the header when created, the `#close`
/// line at [`ZeekTsv::finish`].
pub struct ZeekTsv<W: Write> {
    out: W,
    error: Option<io::Error>,
}

impl<W: Write> ZeekTsv<W> {
    /// A writer to `out`; `open` for the `#open` line ([`log_time`]).
    pub fn new(mut out: W, open: &str) -> ZeekTsv<W> {
        let error = out.write_all(tsv_header(open).as_bytes()).err();
        ZeekTsv { out, error }
    }
    /// Writes `#close`, flushes; returns the writer or the first error.
    pub fn finish(mut self, close: &str) -> io::Result<W> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.write_all(tsv_footer(close).as_bytes())?;
        self.out.flush()?;
        Ok(self.out)
    }
}

impl<W: Write> RecordSink for ZeekTsv<W> {
    fn record(&mut self, r: HttpRecord) {
        if self.error.is_none() {
            if let Err(e) = self.out.write_all(r.to_tsv().as_bytes()) {
                self.error = Some(e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> HttpRecord {
        HttpRecord {
            ts: Timestamp(1_300_475_168_783_842_123),
            uid: "CabcdefghijklmnopQ".into(),
            orig: Some(("10.0.0.1".parse().unwrap(), 49152)),
            resp: Some(("10.0.0.2".parse().unwrap(), 80)),
            trans_depth: 1,
            method: Some("GET".into()),
            host: Some("example.com".into()),
            uri: Some("/a\tb".into()),
            version: Some("1.1".into()),
            user_agent: Some("-".into()),
            request_body_len: 0,
            response_body_len: 12,
            status_code: Some(200),
            status_msg: Some("OK".into()),
            proxied: vec!["VIA -> 1.1 a,b".into()],
            ..HttpRecord::default()
        }
    }

    #[test]
    fn json_as_zeek_writes_it() {
        assert_eq!(
            sample().to_json(),
            r#"{"ts":1300475168.783842,"uid":"CabcdefghijklmnopQ","id.orig_h":"10.0.0.1","id.orig_p":49152,"id.resp_h":"10.0.0.2","id.resp_p":80,"trans_depth":1,"method":"GET","host":"example.com","uri":"/a\tb","version":"1.1","user_agent":"-","request_body_len":0,"response_body_len":12,"status_code":200,"status_msg":"OK","tags":[],"proxied":["VIA -> 1.1 a,b"]}"#
        );
        assert_eq!(json_time(Timestamp(1_500_000_000)), "1.5");
        assert_eq!(json_time(Timestamp(2_000_000_000)), "2.0");
    }

    #[test]
    fn tsv_as_zeek_writes_it() {
        let l = sample().to_tsv();
        assert_eq!(
            l,
            "1300475168.783842\tCabcdefghijklmnopQ\t10.0.0.1\t49152\t10.0.0.2\t80\t1\tGET\texample.com\t/a\\x09b\t-\t1.1\t\\x2d\t-\t0\t12\t200\tOK\t-\t-\t(empty)\t-\t-\tVIA -> 1.1 a\\x2cb\n"
        );
        let h = tsv_header("2024-01-01-00-00-00");
        let lines: Vec<&str> = h.lines().collect();
        assert_eq!(lines[0], "#separator \\x09");
        assert_eq!(lines[4], "#path\thttp");
        assert_eq!(lines[6].split('\t').count(), 25);
        assert_eq!(lines[7].split('\t').count(), 25);
        assert_eq!(
            log_time(Timestamp(1_700_000_000_000_000_000)),
            "2023-11-14-22-13-20"
        );
    }
}
