//! Writing flow records: JSON lines, CSV, or a Zeek conn.log (Parquet is
//! written by its own tap, [`crate::parquet_out`]).

use crate::record::{DirRecord, FlowRecord};
use crate::zeek;
use std::io::{self, Write};

/// Output format.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One JSON object per line (docs/json-format.md).
    Json,
    /// The JSON fields flattened, with a header row.
    Csv,
    /// A Zeek conn.log (TSV with Zeek's header).
    Zeek,
    /// An Apache Parquet file of typed columns (needs -o FILE).
    Parquet,
}

const DIR_FIELDS: [&str; 8] = [
    "pkts",
    "bytes",
    "stream_bytes",
    "captured",
    "discarded",
    "dropped",
    "missing",
    "sha256",
];

/// The CSV header row (no newline). `files` adds `orig_file` /
/// `resp_file`, `app` the classifier's `app` column.
pub fn csv_header(files: bool, app: bool) -> String {
    let mut h: Vec<String> = [
        "ts", "last_ts", "proto", "src_ip", "src_port", "dst_ip", "dst_port", "vlan",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for d in ["orig", "resp"] {
        for f in DIR_FIELDS {
            h.push(format!("{d}_{f}"));
        }
        if files {
            h.push(format!("{d}_file"));
        }
        h.push(format!("{d}_priority"));
    }
    h.push("end".into());
    h.push("errors".into());
    h.push("tunnel".into());
    if app {
        h.push("app".into());
    }
    h.push("community_id".into());
    h.join(",")
}

fn csv_dir(out: &mut Vec<String>, d: &DirRecord, files: bool) {
    for v in [
        d.pkts,
        d.bytes,
        d.stream_bytes,
        d.captured,
        d.discarded,
        d.dropped,
        d.missing,
    ] {
        out.push(v.to_string());
    }
    out.push(d.sha256.clone().unwrap_or_default());
    if files {
        out.push(d.file.clone().flatten().unwrap_or_default());
    }
    out.push(d.priority.to_string());
}

/// One CSV row (no newline). Empty cells stand for null. `community_id`
/// is the record's Community ID (see [`crate::community_id::of_record`]).
pub fn csv_row(r: &FlowRecord, files: bool, app: bool, community_id: Option<&str>) -> String {
    let mut v = vec![
        r.ts.text(),
        r.last_ts.text(),
        r.proto.text(),
        r.src_ip.to_string(),
        r.src_port.to_string(),
        r.dst_ip.to_string(),
        r.dst_port.to_string(),
        r.vlan.map(|x| x.to_string()).unwrap_or_default(),
    ];
    csv_dir(&mut v, &r.orig, files);
    csv_dir(&mut v, &r.resp, files);
    v.push(r.end.to_string());
    v.push(r.errors.names().collect::<Vec<_>>().join(";"));
    v.push(r.tunnel.clone().unwrap_or_default());
    if app {
        v.push(r.app.unwrap_or_default().to_string());
    }
    v.push(community_id.unwrap_or_default().to_string());
    v.join(",")
}

/// How records are formatted: the format, and whether the per-direction
/// file columns (CSV) / fields (JSON) are written.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RecordFormat {
    /// Output format.
    pub format: Format,
    /// Write the `-w` file names.
    pub files: bool,
    /// The seed of the records' Community IDs (`--community-id-seed`).
    pub community_seed: u16,
    /// The records carry the classifier's label (`--app`): a CSV column.
    pub app: bool,
}

impl RecordFormat {
    /// Appends `r` as one whole line (or Zeek row) to `out`. The Community
    /// ID is computed here, where the records are formatted (on the output's
    /// thread when there is one worker), not by the worker that ends the flow.
    pub fn append(self, r: &FlowRecord, out: &mut Vec<u8>) {
        if self.format == Format::Parquet {
            return;
        }
        let cid = crate::community_id::of_record(r, self.community_seed);
        let cid = cid.as_ref().map(crate::community_id::CommunityId::as_str);
        match self.format {
            Format::Json => {
                crate::record::write_json(r, cid, out);
                out.push(b'\n');
            }
            Format::Csv => {
                out.extend_from_slice(csv_row(r, self.files, self.app, cid).as_bytes());
                out.push(b'\n');
            }
            Format::Zeek => out.extend_from_slice(zeek::line(r, cid).as_bytes()),
            // No text: the Parquet tap encodes the records themselves.
            Format::Parquet => {}
        }
    }
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Writes an output's framing: the header before any record (CSV, Zeek)
/// and the trailer after the last one (Zeek). The records themselves go
/// through [`RecordSink`](crate::sink::RecordSink)s and are formatted by
/// the output's thread ([`RecordFormat`]).
pub struct FramingWriter {
    out: Box<dyn Write + Send>,
    format: RecordFormat,
    started: bool,
}

impl FramingWriter {
    /// A writer of the framing of records in `format`.
    pub fn new(out: Box<dyn Write + Send>, format: RecordFormat) -> FramingWriter {
        FramingWriter {
            out,
            format,
            started: false,
        }
    }

    /// Writes the header (CSV, zeek), once.
    pub fn begin(&mut self) -> io::Result<()> {
        if self.started {
            return Ok(());
        }
        self.started = true;
        match self.format.format {
            Format::Json | Format::Parquet => Ok(()),
            Format::Csv => writeln!(
                self.out,
                "{}",
                csv_header(self.format.files, self.format.app)
            ),
            Format::Zeek => self
                .out
                .write_all(zeek::header(&zeek::log_time(now_secs())).as_bytes()),
        }
    }

    /// Flushes what was written so far.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Writes the trailer (zeek) and flushes.
    pub fn finish(&mut self) -> io::Result<()> {
        self.begin()?;
        if self.format.format == Format::Zeek {
            self.out
                .write_all(zeek::footer(&zeek::log_time(now_secs())).as_bytes())?;
        }
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_header_row() {
        assert_eq!(
            csv_header(false, false),
            "ts,last_ts,proto,src_ip,src_port,dst_ip,dst_port,vlan,\
orig_pkts,orig_bytes,orig_stream_bytes,orig_captured,orig_discarded,orig_dropped,orig_missing,orig_sha256,orig_priority,\
resp_pkts,resp_bytes,resp_stream_bytes,resp_captured,resp_discarded,resp_dropped,resp_missing,resp_sha256,resp_priority,\
end,errors,tunnel,community_id"
        );
        let h = csv_header(true, false);
        assert!(h.contains(",orig_sha256,orig_file,orig_priority,resp_pkts,"));
        assert!(h.ends_with(",resp_sha256,resp_file,resp_priority,end,errors,tunnel,community_id"));
    }
}
