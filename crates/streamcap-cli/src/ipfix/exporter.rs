//! The IPFIX tap: each flow record becomes a data record of a message;
//! full messages go out at once, a partial one at each flush. The
//! templates lead the first message, and over UDP every
//! [`TEMPLATE_REFRESH`] of wall time or every [`TEMPLATE_REFRESH_MESSAGES`]
//! messages, whichever comes first. Sequence numbers count the data
//! records sent before each message (mod 2^32), per exporter and domain,
//! lost messages included, so a collector sees losses as gaps.

use super::convert::Deltas;
use super::transport::Transport;
use crate::record::FlowRecord;
use crate::tap::{RecordTap, TapReport};
use std::io;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use streamcap_apps::export::ipfix::MessageBuilder;

/// Wall time after which a UDP export sends the templates again.
pub const TEMPLATE_REFRESH: Duration = Duration::from_secs(60);

/// Messages after which a UDP export sends the templates again (so that a
/// collector started late learns them soon however fast the run).
pub const TEMPLATE_REFRESH_MESSAGES: u64 = 1000;

/// Seconds since the Unix epoch now (the messages' export time).
fn export_time() -> u32 {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    u32::try_from(secs).unwrap_or(u32::MAX)
}

/// An IPFIX exporter fed by the record output's writer thread.
#[derive(Debug)]
pub struct IpfixTap {
    transport: Transport,
    builder: MessageBuilder,
    deltas: Deltas,
    /// A message is being filled.
    open: bool,
    /// Data records sent (mod 2^32): the next message's sequence number.
    sequence: u32,
    /// When, and after how many messages, the templates last went out.
    templates_at: Option<(Instant, u64)>,
    messages: u64,
    records: u64,
    interim: u64,
    bytes: u64,
    template_sets: u64,
    send_errors: u64,
    domain: u32,
}

impl IpfixTap {
    /// An exporter of messages of observation domain `domain` to
    /// `transport`.
    pub fn new(transport: Transport, domain: u32) -> IpfixTap {
        let builder = MessageBuilder::new(domain, transport.max_message());
        IpfixTap {
            transport,
            builder,
            deltas: Deltas::default(),
            open: false,
            sequence: 0,
            templates_at: None,
            messages: 0,
            records: 0,
            interim: 0,
            bytes: 0,
            template_sets: 0,
            send_errors: 0,
            domain,
        }
    }

    /// Whether the next message must carry the templates.
    fn templates_due(&self) -> bool {
        match self.templates_at {
            None => true,
            Some((at, messages)) => {
                self.transport.is_lossy()
                    && (at.elapsed() >= TEMPLATE_REFRESH
                        || self.messages - messages >= TEMPLATE_REFRESH_MESSAGES)
            }
        }
    }

    /// Starts a message, with the templates when they are due.
    fn begin(&mut self) {
        self.builder.start(export_time(), self.sequence);
        if self.templates_due() && self.builder.push_templates() {
            self.templates_at = Some((Instant::now(), self.messages));
            self.template_sets += 1;
        }
        self.open = true;
    }

    /// Sends the message being filled.
    fn send(&mut self) -> io::Result<()> {
        if !self.open {
            return Ok(());
        }
        self.open = false;
        let records = self.builder.records();
        let msg = self.builder.finish();
        let len = msg.len();
        if !self.transport.send(msg)? {
            self.send_errors += 1;
        }
        self.sequence = self.sequence.wrapping_add(records);
        self.messages += 1;
        self.bytes += len as u64;
        Ok(())
    }
}

impl RecordTap for IpfixTap {
    fn name(&self) -> &str {
        self.transport.name()
    }

    fn record(&mut self, r: &FlowRecord, _line: &[u8]) -> io::Result<()> {
        let Some(flow) = self.deltas.next(r) else {
            return Ok(());
        };
        if !self.open {
            self.begin();
        }
        if !self.builder.push(&flow) {
            self.send()?;
            self.begin();
            if !self.builder.push(&flow) {
                // A message of the smallest limit holds a record with the
                // templates: not reached.
                return Err(io::Error::other("a record larger than a message"));
            }
        }
        self.records += 1;
        self.interim += u64::from(r.extra.interim);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.open && self.builder.records() > 0 {
            self.send()?;
        }
        self.transport.flush()
    }

    fn finish(&mut self) -> io::Result<TapReport> {
        if self.messages == 0 && !self.open {
            // No flow: the templates alone, so that a file is never empty.
            self.begin();
        }
        if self.open {
            self.send()?;
        }
        self.transport.close()?;
        let (pace, waited, sndbuf) = match &self.transport {
            Transport::Udp { pacer, sndbuf, .. } => (
                Some(pacer.rate().to_string()),
                pacer.waited.as_secs_f64(),
                Some(*sndbuf),
            ),
            _ => (None, 0.0, None),
        };
        let mut line = format!(
            "{}: {} messages, {} records ({} interim), {} bytes, {} template sets, {} send errors",
            self.transport.name().trim_start_matches("ipfix "),
            self.messages,
            self.records,
            self.interim,
            self.bytes,
            self.template_sets,
            self.send_errors
        );
        if let (Some(p), Some(b)) = (&pace, sndbuf) {
            line.push_str(&format!(
                "; paced at {p} (waited {waited:.3} s), send buffer {b} B"
            ));
        }
        let json = serde_json::json!({
            "target": self.transport.name().trim_start_matches("ipfix "),
            "observation_domain": self.domain,
            "messages": self.messages,
            "records": self.records,
            "interim_records": self.interim,
            "interim_skipped": self.deltas.skipped,
            "bytes": self.bytes,
            "template_sets": self.template_sets,
            "send_errors": self.send_errors,
            "rate": pace,
            "paced_s": waited,
            "sndbuf": sndbuf,
        });
        Ok(TapReport {
            kind: "ipfix",
            line,
            json,
            failure: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use streamcap_apps::export::ipfix::Decoder;

    /// A file export: the templates once, then the records, whole
    /// messages with sequence numbers counting the records before them.
    #[test]
    fn a_file_holds_templates_then_records() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.ipfix");
        let mut tap = IpfixTap::new(Transport::file(&path).expect("creates"), 9);
        let n = 1200u16;
        for i in 0..n {
            tap.record(&FlowRecord::for_test(i), b"").expect("record");
        }
        let report = tap.finish().expect("finish");
        assert_eq!(report.json["records"], u64::from(n));
        assert_eq!(report.json["template_sets"], 1);
        let bytes = std::fs::read(&path).expect("read");
        let mut dec = Decoder::default();
        let (mut at, mut seq, mut ports) = (0, 0u32, Vec::new());
        while at < bytes.len() {
            let len =
                streamcap_apps::export::ipfix::decode::message_len(&bytes[at..]).expect("length");
            let m = dec.decode(&bytes[at..at + len]).expect("decodes");
            assert_eq!((m.domain, m.sequence), (9, seq));
            seq += m.records.len() as u32;
            ports.extend(m.flows().iter().map(|f| f.src_port));
            at += len;
        }
        assert_eq!(ports, (0..n).collect::<Vec<_>>());
        assert_eq!(
            report.json["messages"], 3,
            "65,535-byte messages of 132-byte records"
        );
    }
}
