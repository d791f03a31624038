//! `--format parquet`: the flow records as an Apache Parquet file, one row
//! per record, with typed columns (docs/export.md has the schema).
//!
//! The file is written by a tap ([`crate::tap`]) on the record output's
//! writer thread, which gets every record of every worker; the record
//! output itself writes nothing. Rows are buffered column by column and
//! written as a row group of [`ROW_GROUP_ROWS`] rows when that many are
//! buffered, and once more at the end, so memory stays bounded however
//! long the run (a full row group is some 15 MiB without digests). The footer (the
//! file's metadata, without which no reader opens it) is written when the
//! run ends: normally, on a stop (the first SIGINT, SIGTERM or SIGHUP,
//! `--duration`), on an input error, and on an abort (a second signal),
//! where the writer thread closes its taps before it ends.
//!
//! The columns are the JSON record's fields, flattened as CSV flattens
//! them (`orig_pkts`, …): the one function [`fields`] lists them, in
//! order, for the schema and for each row, so the two cannot disagree.
//! Compression: zstd (level 1), page by page; strings are dictionary
//! encoded (parquet's default, given up by the writer when a dictionary
//! grows past 1 MiB) except in the columns of [`NO_DICTIONARY`].

use crate::record::{DirRecord, FlowRecord, Ts};
use crate::tap::{RecordTap, TapReport};
use bytes::Bytes;
use parquet::basic::{Compression, ZstdLevel};
use parquet::column::writer::ColumnWriter;
use parquet::data_type::ByteArray;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use parquet::schema::types::ColumnPath;
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::Path;
use std::sync::Arc;

/// Rows per row group: a row group is written when this many records are
/// buffered (and at the end with the rest).
pub const ROW_GROUP_ROWS: usize = 65_536;

/// Columns written without a dictionary: their values rarely repeat.
const NO_DICTIONARY: [&str; 5] = [
    "community_id",
    "orig_sha256",
    "resp_sha256",
    "orig_file",
    "resp_file",
];

/// The optional columns of a file.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    /// `orig_file` and `resp_file` (`streams -w DIR`).
    pub files: bool,
    /// `app` (`--app`).
    pub app: bool,
}

/// The names of one direction's columns.
struct DirNames {
    pkts: &'static str,
    bytes: &'static str,
    stream_bytes: &'static str,
    captured: &'static str,
    discarded: &'static str,
    dropped: &'static str,
    missing: &'static str,
    sha256: &'static str,
    file: &'static str,
    priority: &'static str,
}

const ORIG: DirNames = DirNames {
    pkts: "orig_pkts",
    bytes: "orig_bytes",
    stream_bytes: "orig_stream_bytes",
    captured: "orig_captured",
    discarded: "orig_discarded",
    dropped: "orig_dropped",
    missing: "orig_missing",
    sha256: "orig_sha256",
    file: "orig_file",
    priority: "orig_priority",
};

const RESP: DirNames = DirNames {
    pkts: "resp_pkts",
    bytes: "resp_bytes",
    stream_bytes: "resp_stream_bytes",
    captured: "resp_captured",
    discarded: "resp_discarded",
    dropped: "resp_dropped",
    missing: "resp_missing",
    sha256: "resp_sha256",
    file: "resp_file",
    priority: "resp_priority",
};

/// What a column is given, field by field: [`Schema`] declares the
/// columns, [`Rows`] buffers the values.
trait Fields {
    /// A required TIMESTAMP (microseconds since the epoch, UTC).
    fn timestamp(&mut self, name: &'static str, ts: Ts);
    /// A required unsigned 64-bit counter.
    fn counter(&mut self, name: &'static str, v: u64);
    /// An unsigned integer of `bits` (8 or 16) bits; `optional`: nullable.
    fn small(&mut self, name: &'static str, bits: u8, optional: bool, v: Option<u32>);
    /// A string; `optional`: nullable.
    fn text(&mut self, name: &'static str, optional: bool, v: Option<&str>);
    /// A required list of strings (may be empty).
    fn text_list(&mut self, name: &'static str, v: &mut dyn Iterator<Item = &'static str>);
}

/// Microseconds since the epoch (as the JSON record's six decimals).
fn micros(ts: Ts) -> i64 {
    let secs = i64::try_from(ts.0.secs()).unwrap_or(i64::MAX);
    secs.saturating_mul(1_000_000)
        .saturating_add(i64::from(ts.0.subsec_nanos() / 1000))
}

fn dir(f: &mut dyn Fields, d: &DirRecord, n: &DirNames, shape: Shape) {
    f.counter(n.pkts, d.pkts);
    f.counter(n.bytes, d.bytes);
    f.counter(n.stream_bytes, d.stream_bytes);
    f.counter(n.captured, d.captured);
    f.counter(n.discarded, d.discarded);
    f.counter(n.dropped, d.dropped);
    f.counter(n.missing, d.missing);
    f.text(n.sha256, true, d.sha256.as_deref());
    if shape.files {
        f.text(n.file, true, d.file.as_ref().and_then(|x| x.as_deref()));
    }
    f.small(n.priority, 8, false, Some(u32::from(d.priority)));
}

/// Every column of a row, in the file's order: the one list both the
/// schema and the rows come from.
fn fields(f: &mut dyn Fields, r: &FlowRecord, cid: Option<&str>, shape: Shape, ip: &mut IpText) {
    f.timestamp("ts", r.ts);
    f.timestamp("last_ts", r.last_ts);
    match r.proto.name() {
        Some(n) => f.text("proto", false, Some(n)),
        None => f.text("proto", false, Some(ip.number(r.proto.0))),
    }
    f.small("ip_proto", 8, false, Some(u32::from(r.proto.0)));
    f.text("src_ip", false, Some(ip.addr(r.src_ip)));
    f.small("src_port", 16, false, Some(u32::from(r.src_port)));
    f.text("dst_ip", false, Some(ip.addr(r.dst_ip)));
    f.small("dst_port", 16, false, Some(u32::from(r.dst_port)));
    f.small("vlan", 16, true, r.vlan.map(u32::from));
    dir(f, &r.orig, &ORIG, shape);
    dir(f, &r.resp, &RESP, shape);
    f.text("end", false, Some(r.end));
    f.text_list("errors", &mut r.errors.names());
    f.text("tunnel", true, r.tunnel.as_deref());
    if shape.app {
        f.text("app", true, r.app);
    }
    f.text("community_id", true, cid);
}

/// A scratch buffer for the text of addresses and protocol numbers.
#[derive(Default)]
struct IpText(String);

impl IpText {
    fn addr(&mut self, ip: std::net::IpAddr) -> &str {
        use std::fmt::Write;
        self.0.clear();
        match ip {
            // Digit by digit: the formatter's machinery cost a twentieth
            // of a SYN flood's run (a row per packet).
            std::net::IpAddr::V4(v4) => {
                for (i, o) in v4.octets().into_iter().enumerate() {
                    if i > 0 {
                        self.0.push('.');
                    }
                    if o >= 100 {
                        self.0.push(char::from(b'0' + o / 100));
                    }
                    if o >= 10 {
                        self.0.push(char::from(b'0' + o / 10 % 10));
                    }
                    self.0.push(char::from(b'0' + o % 10));
                }
            }
            std::net::IpAddr::V6(_) => {
                let _ = write!(self.0, "{ip}");
            }
        }
        &self.0
    }

    fn number(&mut self, n: u8) -> &str {
        use std::fmt::Write;
        self.0.clear();
        let _ = write!(self.0, "{n}");
        &self.0
    }
}

/// One column's buffered values.
enum Values {
    /// INT64: timestamps and counters (a `u64` as its bit pattern, as
    /// Parquet stores UINT_64).
    I64(Vec<i64>),
    /// INT32: ports, VLAN, protocol, priorities.
    I32(Vec<i32>),
    /// BYTE_ARRAY: the strings, back to back, and where each one ends.
    Text { arena: Vec<u8>, ends: Vec<usize> },
}

/// One column: its values, and its definition levels (a nullable column
/// or a list) and repetition levels (a list).
struct Column {
    values: Values,
    defs: Option<Vec<i16>>,
    reps: Option<Vec<i16>>,
}

impl Column {
    fn new(values: Values, optional: bool, list: bool) -> Column {
        Column {
            values,
            defs: (optional || list).then(Vec::new),
            reps: list.then(Vec::new),
        }
    }

    fn push_text(&mut self, s: &str) {
        if let Values::Text { arena, ends } = &mut self.values {
            arena.extend_from_slice(s.as_bytes());
            ends.push(arena.len());
        }
    }

    fn clear(&mut self) {
        match &mut self.values {
            Values::I64(v) => v.clear(),
            Values::I32(v) => v.clear(),
            Values::Text { arena, ends } => {
                arena.clear();
                ends.clear();
            }
        }
        for levels in [&mut self.defs, &mut self.reps].into_iter().flatten() {
            levels.clear();
        }
    }
}

/// Builds the schema (the text of a Parquet message type) and the empty
/// columns.
#[derive(Default)]
struct Schema {
    text: String,
    columns: Vec<Column>,
}

impl Schema {
    fn line(&mut self, optional: bool, decl: &str, name: &str, logical: &str) {
        let rep = if optional { "optional" } else { "required" };
        self.text
            .push_str(&format!("  {rep} {decl} {name} ({logical});\n"));
    }
}

impl Fields for Schema {
    fn timestamp(&mut self, name: &'static str, _: Ts) {
        self.line(false, "int64", name, "TIMESTAMP(MICROS,true)");
        self.columns
            .push(Column::new(Values::I64(Vec::new()), false, false));
    }
    fn counter(&mut self, name: &'static str, _: u64) {
        self.line(false, "int64", name, "INTEGER(64,false)");
        self.columns
            .push(Column::new(Values::I64(Vec::new()), false, false));
    }
    fn small(&mut self, name: &'static str, bits: u8, optional: bool, _: Option<u32>) {
        self.line(optional, "int32", name, &format!("INTEGER({bits},false)"));
        self.columns
            .push(Column::new(Values::I32(Vec::new()), optional, false));
    }
    fn text(&mut self, name: &'static str, optional: bool, _: Option<&str>) {
        self.line(optional, "binary", name, "STRING");
        let values = Values::Text {
            arena: Vec::new(),
            ends: Vec::new(),
        };
        self.columns.push(Column::new(values, optional, false));
    }
    fn text_list(&mut self, name: &'static str, _: &mut dyn Iterator<Item = &'static str>) {
        // The three-level list of the Parquet format's LogicalTypes.md.
        self.text.push_str(&format!(
            "  required group {name} (LIST) {{\n    repeated group list {{\n      required binary element (STRING);\n    }}\n  }}\n"
        ));
        let values = Values::Text {
            arena: Vec::new(),
            ends: Vec::new(),
        };
        self.columns.push(Column::new(values, false, true));
    }
}

/// The buffered rows of the next row group.
struct Rows {
    columns: Vec<Column>,
    /// The column the next field goes to.
    at: usize,
    len: usize,
}

impl Rows {
    fn next(&mut self) -> Option<&mut Column> {
        let c = self.columns.get_mut(self.at);
        self.at += 1;
        c
    }
}

impl Fields for Rows {
    fn timestamp(&mut self, _: &'static str, ts: Ts) {
        if let Some(Column {
            values: Values::I64(v),
            ..
        }) = self.next()
        {
            v.push(micros(ts));
        }
    }
    fn counter(&mut self, _: &'static str, n: u64) {
        if let Some(Column {
            values: Values::I64(v),
            ..
        }) = self.next()
        {
            // UINT_64 is stored as the bits of an INT64.
            v.push(n as i64);
        }
    }
    fn small(&mut self, _: &'static str, _: u8, _: bool, n: Option<u32>) {
        if let Some(Column {
            values: Values::I32(v),
            defs,
            ..
        }) = self.next()
        {
            if let Some(n) = n {
                // At most 16 bits: the value fits.
                v.push(n as i32);
            }
            if let Some(d) = defs {
                d.push(i16::from(n.is_some()));
            }
        }
    }
    fn text(&mut self, _: &'static str, _: bool, s: Option<&str>) {
        if let Some(c) = self.next() {
            if let Some(s) = s {
                c.push_text(s);
            }
            if let Some(d) = &mut c.defs {
                d.push(i16::from(s.is_some()));
            }
        }
    }
    fn text_list(&mut self, _: &'static str, items: &mut dyn Iterator<Item = &'static str>) {
        let Some(c) = self.next() else {
            return;
        };
        let mut n = 0;
        for s in items {
            c.push_text(s);
            // Definition level 1: an element; repetition level 0 starts a
            // row's list, 1 continues it.
            if let (Some(d), Some(r)) = (&mut c.defs, &mut c.reps) {
                d.push(1);
                r.push(i16::from(n > 0));
            }
            n += 1;
        }
        if n == 0 {
            // An empty list: level 0 both ways, no value.
            if let (Some(d), Some(r)) = (&mut c.defs, &mut c.reps) {
                d.push(0);
                r.push(0);
            }
        }
    }
}

/// A Parquet error as an I/O error (the taps' error type).
fn io_error(e: parquet::errors::ParquetError) -> io::Error {
    io::Error::other(e.to_string())
}

/// The Parquet writer: a tap fed by the record output's writer thread.
pub struct ParquetTap {
    name: String,
    path: String,
    writer: Option<SerializedFileWriter<BufWriter<File>>>,
    rows: Rows,
    shape: Shape,
    community_seed: u16,
    ip: IpText,
    records: u64,
    interim: u64,
    row_groups: u64,
}

impl ParquetTap {
    /// Creates `path` (truncating it) for records with the columns of
    /// `shape`; `community_seed` seeds the `community_id` column.
    pub fn create(path: &Path, shape: Shape, community_seed: u16) -> Result<ParquetTap, String> {
        let shown = path.display().to_string();
        let mut schema = Schema::default();
        fields(
            &mut schema,
            &FlowRecord::placeholder(),
            None,
            shape,
            &mut IpText::default(),
        );
        let text = format!("message flow {{\n{}}}\n", schema.text);
        let schema_type = parse_message_type(&text)
            .map_err(|e| format!("{shown}: the Parquet schema is refused: {e}"))?;
        let zstd = ZstdLevel::try_new(1).map_err(|e| format!("{shown}: {e}"))?;
        let mut props = WriterProperties::builder().set_compression(Compression::ZSTD(zstd));
        // Columns of (nearly) one value per connection: a dictionary would
        // only be built to be given up.
        for unique in NO_DICTIONARY {
            props = props.set_column_dictionary_enabled(ColumnPath::from(unique), false);
        }
        let props = props.build();
        let file = File::create(path).map_err(|e| format!("{shown}: cannot create: {e}"))?;
        let writer = SerializedFileWriter::new(
            BufWriter::with_capacity(1 << 16, file),
            Arc::new(schema_type),
            Arc::new(props),
        )
        .map_err(|e| format!("{shown}: cannot start the Parquet file: {e}"))?;
        Ok(ParquetTap {
            name: format!("parquet {shown}"),
            path: shown,
            writer: Some(writer),
            rows: Rows {
                columns: schema.columns,
                at: 0,
                len: 0,
            },
            shape,
            community_seed,
            ip: IpText::default(),
            records: 0,
            interim: 0,
            row_groups: 0,
        })
    }

    /// Writes the buffered rows as one row group (nothing if none).
    fn write_row_group(&mut self) -> io::Result<()> {
        if self.rows.len == 0 {
            return Ok(());
        }
        let Some(writer) = self.writer.as_mut() else {
            return Err(io::Error::other("the Parquet file is closed"));
        };
        let mut group = writer.next_row_group().map_err(io_error)?;
        for c in &mut self.rows.columns {
            let Some(mut out) = group.next_column().map_err(io_error)? else {
                return Err(io::Error::other("fewer columns in the schema than rows"));
            };
            let (defs, reps) = (c.defs.as_deref(), c.reps.as_deref());
            let written = match (&mut c.values, out.untyped()) {
                (Values::I64(v), ColumnWriter::Int64ColumnWriter(w)) => {
                    w.write_batch(v, defs, reps)
                }
                (Values::I32(v), ColumnWriter::Int32ColumnWriter(w)) => {
                    w.write_batch(v, defs, reps)
                }
                (Values::Text { arena, ends }, ColumnWriter::ByteArrayColumnWriter(w)) => {
                    // One allocation for all of the column's strings: each
                    // value is a slice of it.
                    let all = Bytes::from(std::mem::take(arena));
                    let mut start = 0;
                    let values: Vec<ByteArray> = ends
                        .iter()
                        .map(|&end| {
                            let v = ByteArray::from(all.slice(start..end));
                            start = end;
                            v
                        })
                        .collect();
                    w.write_batch(&values, defs, reps)
                }
                _ => return Err(io::Error::other("a column of another type than its data")),
            };
            written.map_err(io_error)?;
            out.close().map_err(io_error)?;
            c.clear();
        }
        group.close().map_err(io_error)?;
        self.rows.len = 0;
        self.row_groups += 1;
        Ok(())
    }

    /// Writes what is buffered and the footer; the file is complete.
    fn close(&mut self) -> io::Result<()> {
        self.write_row_group()?;
        match self.writer.take() {
            Some(w) => w.close().map(|_| ()).map_err(io_error),
            None => Ok(()),
        }
    }
}

impl RecordTap for ParquetTap {
    fn name(&self) -> &str {
        &self.name
    }

    fn record(&mut self, r: &FlowRecord, _line: &[u8]) -> io::Result<()> {
        let cid = crate::community_id::of_record(r, self.community_seed);
        let cid = cid.as_ref().map(crate::community_id::CommunityId::as_str);
        self.rows.at = 0;
        fields(&mut self.rows, r, cid, self.shape, &mut self.ip);
        self.rows.len += 1;
        self.records += 1;
        self.interim += u64::from(r.extra.interim);
        if self.rows.len >= ROW_GROUP_ROWS {
            self.write_row_group()?;
        }
        Ok(())
    }

    /// Nothing: rows wait for their row group (a file is only readable
    /// once its footer is written, at the end).
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn finish(&mut self) -> io::Result<TapReport> {
        self.close()?;
        let bytes = std::fs::metadata(&self.path).map_or(0, |m| m.len());
        let line = format!(
            "{}: {} rows ({} interim) in {} row group{}, {} bytes, zstd",
            self.path,
            self.records,
            self.interim,
            self.row_groups,
            if self.row_groups == 1 { "" } else { "s" },
            bytes
        );
        let json = serde_json::json!({
            "path": self.path,
            "rows": self.records,
            "interim_rows": self.interim,
            "row_groups": self.row_groups,
            "bytes": bytes,
            "compression": "zstd",
        });
        Ok(TapReport {
            kind: "parquet",
            line,
            json,
            failure: None,
        })
    }
}

impl Drop for ParquetTap {
    /// A run that ends without [`RecordTap::finish`] (an abort, an input
    /// error) still leaves a readable file: the rows buffered so far and
    /// the footer are written here.
    fn drop(&mut self) {
        let _ = self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;

    /// More rows than a row group holds: several row groups, every row
    /// back in order, the counters' full u64 range, nulls and lists.
    #[test]
    fn rows_come_back_in_row_groups() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.parquet");
        let shape = Shape {
            files: true,
            app: true,
        };
        let mut tap = ParquetTap::create(&path, shape, 0).expect("creates");
        let n = ROW_GROUP_ROWS + 10;
        for i in 0..n {
            let mut r = FlowRecord::for_test(i as u16);
            r.orig.pkts = u64::MAX - i as u64;
            r.vlan = (i % 2 == 0).then_some(7);
            r.errors = streamcap::deliver::StreamErrors(i as u16 % 4);
            r.app = (i % 3 == 0).then_some("http");
            r.resp.file = Some(Some(format!("f{i}")));
            tap.record(&r, b"").expect("record");
        }
        let report = tap.finish().expect("finish");
        assert_eq!(report.json["rows"], n as u64);
        assert_eq!(report.json["row_groups"], 2);
        let reader = SerializedFileReader::new(File::open(&path).expect("open")).expect("reader");
        assert_eq!(reader.metadata().num_row_groups(), 2);
        let rows: Vec<_> = reader
            .get_row_iter(None)
            .expect("rows")
            .collect::<Result<_, _>>()
            .expect("read");
        assert_eq!(rows.len(), n);
        for (i, row) in rows.iter().enumerate() {
            let get = |name: &str| {
                row.get_column_iter()
                    .find(|(k, _)| k.as_str() == name)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_else(|| panic!("no column {name}"))
            };
            assert_eq!(get("src_port"), Field::UShort(i as u16));
            assert_eq!(get("orig_pkts"), Field::ULong(u64::MAX - i as u64));
            assert_eq!(get("ts"), Field::TimestampMicros(100_000_000));
            let vlan = if i % 2 == 0 {
                Field::UShort(7)
            } else {
                Field::Null
            };
            assert_eq!(get("vlan"), vlan);
            let app = if i % 3 == 0 {
                Field::Str("http".into())
            } else {
                Field::Null
            };
            assert_eq!(get("app"), app);
            assert_eq!(get("resp_file"), Field::Str(format!("f{i}")));
            assert_eq!(get("orig_file"), Field::Null);
            let Field::ListInternal(errors) = get("errors") else {
                panic!("errors is a list");
            };
            let names: Vec<Field> = streamcap::deliver::StreamErrors(i as u16 % 4)
                .names()
                .map(|s| Field::Str(s.to_string()))
                .collect();
            assert_eq!(errors.elements(), names.as_slice());
        }
    }

    /// Addresses are written as `IpAddr`'s `Display` writes them.
    #[test]
    fn address_text_is_the_standard_one() {
        let mut t = IpText::default();
        let mut x = 0x9e37_79b9u32;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let v4 = std::net::IpAddr::from(x.to_be_bytes());
            assert_eq!(t.addr(v4), v4.to_string());
        }
        for a in [
            "0.0.0.0",
            "255.255.255.255",
            "10.0.100.9",
            "2001:db8::1",
            "::",
        ] {
            let ip: std::net::IpAddr = a.parse().expect("address");
            assert_eq!(t.addr(ip), a);
        }
    }

    /// A tap dropped without `finish` (an abort) leaves a complete file.
    #[test]
    fn dropping_writes_the_footer() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.parquet");
        let shape = Shape {
            files: false,
            app: false,
        };
        let mut tap = ParquetTap::create(&path, shape, 0).expect("creates");
        for i in 0..5 {
            tap.record(&FlowRecord::for_test(i), b"").expect("record");
        }
        drop(tap);
        let reader = SerializedFileReader::new(File::open(&path).expect("open")).expect("reader");
        assert_eq!(reader.metadata().file_metadata().num_rows(), 5);
    }
}
