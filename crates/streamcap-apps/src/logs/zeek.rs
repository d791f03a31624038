//! What every Zeek log this crate writes shares: the ASCII (TSV) writer's
//! header and value formats, and the JSON writer's value formats.
//!
//! TSV, as Zeek's ASCII writer: fields separated by a tab, set and vector
//! elements by `,`, an unset field written `-` and an empty set or vector
//! `(empty)`; in strings every byte outside printable ASCII, and the
//! separators, are written `\xNN`, and a string that would read as `-` or
//! `(empty)` has its first byte escaped. Times and intervals are seconds
//! with 6 decimals, booleans `T` and `F`.
//!
//! JSON, as Zeek's JSON writer (`LogAscii::use_json`): one object per
//! line, flat keys such as `"id.orig_h"`, unset fields left out, times as
//! seconds (with the 6 decimals of the TSV form), intervals as seconds,
//! booleans as `true`/`false`, vectors as arrays.

use serde::{Serialize, Serializer};
use std::fmt::Write as _;
use streamcap::Timestamp;

/// A Zeek `time`: written as seconds with exactly 6 decimals (microseconds,
/// truncated from the capture's nanoseconds), in TSV and JSON alike.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ZeekTime(pub Timestamp);

impl ZeekTime {
    /// `secs.micros`.
    pub fn text(self) -> String {
        format!("{}.{:06}", self.0.secs(), self.0.subsec_nanos() / 1000)
    }
}

impl Serialize for ZeekTime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let raw = serde_json::value::RawValue::from_string(self.text())
            .map_err(serde::ser::Error::custom)?;
        raw.serialize(s)
    }
}

/// A Zeek `interval`, in nanoseconds: written as seconds with 6 decimals
/// in TSV, as a number of seconds in JSON.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ZeekInterval(pub u64);

impl ZeekInterval {
    /// An interval of whole seconds.
    pub fn from_secs(secs: u64) -> ZeekInterval {
        ZeekInterval(secs.saturating_mul(1_000_000_000))
    }
    /// Seconds with 6 decimals (the TSV form).
    pub fn text(self) -> String {
        format!(
            "{}.{:06}",
            self.0 / 1_000_000_000,
            self.0 % 1_000_000_000 / 1000
        )
    }
    /// Seconds.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
}

impl Serialize for ZeekInterval {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.as_secs_f64())
    }
}

/// The unset-field mark.
pub const UNSET: &str = "-";
/// The empty-container mark.
pub const EMPTY: &str = "(empty)";

/// `#open`/`#close` time: `YYYY-MM-DD-HH-MM-SS` (UTC) of `ts`.
pub fn log_time(ts: Timestamp) -> String {
    let u = ts.utc();
    format!(
        "{:04}-{:02}-{:02}-{:02}-{:02}-{:02}",
        u.year, u.month, u.day, u.hour, u.minute, u.second
    )
}

/// The header of a Zeek TSV log named `path` (`dns`, `ssl`…) with the
/// given field names and types, each line ending in a newline.
pub fn tsv_header(path: &str, fields: &[&str], types: &[&str], open: &str) -> String {
    format!(
        "#separator \\x09\n#set_separator\t,\n#empty_field\t{EMPTY}\n#unset_field\t{UNSET}\n#path\t{path}\n#open\t{open}\n#fields\t{}\n#types\t{}\n",
        fields.join("\t"),
        types.join("\t")
    )
}

/// The trailer line of a Zeek TSV log.
pub fn tsv_footer(close: &str) -> String {
    format!("#close\t{close}\n")
}

/// Zeek's text of raw bytes: printable ASCII kept, every other byte
/// written `\xNN` (as Zeek writes non-printable bytes of a string, in
/// TSV and JSON alike).
pub fn text(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if (0x20..0x7f).contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

/// A string value (already [`text`]) for a TSV field: tabs and, inside a
/// set or vector (`in_set`), commas written `\xNN`; a value reading as
/// `-` or `(empty)` gets its first byte escaped.
pub fn escape(s: &str, in_set: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\t' | '\n' | '\r' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            ',' if in_set => out.push_str("\\x2c"),
            _ => out.push(c),
        }
    }
    if out == UNSET || out == EMPTY {
        let first = out.as_bytes()[0];
        out = format!("\\x{first:02x}{}", &out[1..]);
    }
    out
}

/// An optional string field.
pub fn opt_str(v: Option<&str>) -> String {
    v.map_or_else(|| UNSET.to_string(), |s| escape(s, false))
}

/// An optional value written with `Display`.
pub fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| UNSET.to_string(), |x| x.to_string())
}

/// A boolean: `T` or `F`.
pub fn bool_field(b: bool) -> &'static str {
    if b {
        "T"
    } else {
        "F"
    }
}

/// An optional vector: `-` when unset, `(empty)` when empty, else the
/// elements joined by `,`.
pub fn vector<I, T>(v: Option<I>) -> String
where
    I: IntoIterator<Item = T>,
    T: AsRef<str>,
{
    let Some(v) = v else {
        return UNSET.to_string();
    };
    let parts: Vec<String> = v.into_iter().map(|s| escape(s.as_ref(), true)).collect();
    if parts.is_empty() {
        EMPTY.to_string()
    } else {
        parts.join(",")
    }
}

/// Joins the fields of one record with tabs and ends the line.
pub fn tsv_line(fields: &[String]) -> String {
    let mut s = fields.join("\t");
    s.push('\n');
    s
}

/// A record of one of Zeek's logs, written either way.
pub trait ZeekRecord {
    /// The log's name (`dns`, `ssl`, `http`): the `#path` and the file name.
    const PATH: &'static str;
    /// The header of a TSV log opened at `open` (`YYYY-MM-DD-HH-MM-SS`).
    fn tsv_header(open: &str) -> String;
    /// The record as one TSV line, with its newline.
    fn tsv_line(&self) -> String;
    /// The record as one line of Zeek JSON, without a newline.
    fn json(&self) -> String;
}

impl ZeekRecord for super::dns::DnsRecord {
    const PATH: &'static str = "dns";
    fn tsv_header(open: &str) -> String {
        super::dns::tsv_header(open)
    }
    fn tsv_line(&self) -> String {
        super::dns::DnsRecord::tsv_line(self)
    }
    fn json(&self) -> String {
        super::dns::DnsRecord::json(self)
    }
}

impl ZeekRecord for super::tls::SslRecord {
    const PATH: &'static str = "ssl";
    fn tsv_header(open: &str) -> String {
        super::tls::tsv_header(open)
    }
    fn tsv_line(&self) -> String {
        super::tls::SslRecord::tsv_line(self)
    }
    fn json(&self) -> String {
        super::tls::SslRecord::json(self)
    }
}

impl ZeekRecord for crate::http::HttpRecord {
    const PATH: &'static str = "http";
    fn tsv_header(open: &str) -> String {
        crate::http::record::tsv_header(open)
    }
    fn tsv_line(&self) -> String {
        self.to_tsv()
    }
    fn json(&self) -> String {
        self.to_json()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_like_zeek() {
        assert_eq!(text(b"plain.example"), "plain.example");
        assert_eq!(text(b"a\tb\x00\xff\\"), "a\\x09b\\x00\\xff\\");
        assert_eq!(escape("a\tb", false), "a\\x09b");
        assert_eq!(escape("a,b", true), "a\\x2cb");
        assert_eq!(escape("a,b", false), "a,b");
        assert_eq!(escape("-", false), "\\x2d");
        assert_eq!(escape("(empty)", false), "\\x28empty)");
        assert_eq!(vector(None::<Vec<String>>), "-");
        assert_eq!(vector(Some(Vec::<String>::new())), "(empty)");
        assert_eq!(vector(Some(vec!["a", "b,c"])), "a,b\\x2cc");
    }

    #[test]
    fn times_and_intervals() {
        let t = ZeekTime(Timestamp::from_secs_nanos(1_714_564_800, 123_456_789));
        assert_eq!(t.text(), "1714564800.123456");
        assert_eq!(serde_json::to_string(&t).unwrap(), "1714564800.123456");
        let i = ZeekInterval(1_500_000);
        assert_eq!(i.text(), "0.001500");
        assert_eq!(serde_json::to_string(&i).unwrap(), "0.0015");
        assert_eq!(ZeekInterval::from_secs(3600).text(), "3600.000000");
        assert_eq!(
            serde_json::to_string(&ZeekInterval::from_secs(3600)).unwrap(),
            "3600.0"
        );
        assert_eq!(
            log_time(Timestamp::from_secs_nanos(0, 0)),
            "1970-01-01-00-00-00"
        );
        let h = tsv_header("dns", &["ts", "uid"], &["time", "string"], "x");
        assert!(h.starts_with("#separator \\x09\n#set_separator\t,\n"));
        assert!(h.contains("#path\tdns\n#open\tx\n#fields\tts\tuid\n#types\ttime\tstring\n"));
    }
}
