//! Taps: further sinks of the flow records (IPFIX, Kafka, and the Parquet
//! file of `--format parquet`), fed by the record output's writer thread
//! ([`crate::sink::SharedOutput`]) with every record it writes, in the
//! order it writes them. A tap runs on that one thread, so one tap serves
//! the whole run (one IPFIX exporter: one sequence of message numbers, one
//! pace; one Kafka producer), whatever the number of workers.
//!
//! The record output stays byte for byte what it is without taps: a tap
//! sees each record beside its formatted line and writes elsewhere.
//!
//! A text output (alerts, protocol logs: [`crate::sink::text_output`])
//! can have taps too: they get each line the output writes
//! ([`RecordTap::line`]) instead of records.

use crate::record::FlowRecord;
use std::io;

/// What a tap did, for the summary and `--stats-json`.
#[derive(Clone, Debug, PartialEq)]
pub struct TapReport {
    /// The tap's kind, the summary's label and the `kind` of its entry in
    /// `--stats-json`'s `exports` list: `ipfix`, `kafka`, `parquet`.
    pub kind: &'static str,
    /// Its figures as the summary prints them (one line).
    pub line: String,
    /// Its figures for `--stats-json`.
    pub json: serde_json::Value,
    /// What it failed to deliver, if anything (Kafka: records the brokers
    /// never acknowledged): the run reports it and exits with status 1,
    /// after the summary and `--stats-json`.
    pub failure: Option<String>,
}

/// A sink of flow records beside the record output. Its calls come from
/// the output's writer thread, one at a time.
///
/// An error returned by a call stops the run as a write error of the
/// output would (the run reports it with the tap's name, exit status 1);
/// a tap that can lose records without stopping (UDP export) counts its
/// failures and reports them in its [`TapReport`] instead.
///
/// A tap is dropped on the writer thread, after `finish` or, when the run
/// ends without it (an abort by a second signal, an input error), instead
/// of it: a tap whose output is only readable once closed (Parquet's
/// footer) closes it in its `Drop`.
pub trait RecordTap: Send {
    /// The tap's name in messages: `ipfix udp://127.0.0.1:4739`.
    fn name(&self) -> &str;
    /// One record, with its line as the output wrote it (JSON line, CSV
    /// row or conn.log row, with its newline).
    fn record(&mut self, r: &FlowRecord, line: &[u8]) -> io::Result<()>;
    /// One line of a text output (an EVE alert, a protocol log record),
    /// without its newline. Only taps that serve text outputs (Kafka)
    /// take lines; the others are never given to one.
    fn line(&mut self, line: &[u8]) -> io::Result<()> {
        let _ = line;
        Err(io::Error::other("this export takes flow records only"))
    }
    /// Sends or writes what is pending: the output is being flushed (a
    /// worker's flush, a live capture's tick about once a second, the end).
    fn flush(&mut self) -> io::Result<()>;
    /// The end of the run (after every record and a flush): closes, and
    /// says what was done.
    fn finish(&mut self) -> io::Result<TapReport>;
}

/// An error of a tap, as the writer thread keeps it: the run reports it
/// as it is (`streamcap: ipfix tcp://…: …`), not as a write error of the
/// record output.
#[derive(Debug)]
pub struct TapError(pub String);

impl std::fmt::Display for TapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TapError {}

/// `e`, met by the tap named `name`, as an error the run reports with
/// that name (and that is never taken for a reader that went away).
pub fn tap_error(name: &str, e: &io::Error) -> io::Error {
    io::Error::other(TapError(format!("{name}: {e}")))
}

/// The tap's message if `e` is a tap's error.
pub fn as_tap_error(e: &io::Error) -> Option<&TapError> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<TapError>())
}
