//! `--kafka BROKERS --topic TOPIC`: every record also goes to a Kafka
//! topic, by a tap on the output's writer thread ([`crate::tap`]): the
//! flow records of `flows`, the EVE alerts of `nids`, the `http.log`
//! records of `http`. A message's value is the record's JSON line exactly
//! (no envelope, no newline), its key the connection's uid, so the records
//! of one connection stay in one partition. docs/export.md describes it.
//!
//! The producer is librdkafka's (the `rdkafka` crate, built from its
//! bundled source with cmake): idempotent (a retried batch is never
//! written twice), LZ4-compressed batches, delivery reports counted. It is
//! compiled only with the cargo feature `kafka`; without it the options
//! exist and are refused with a message saying how to rebuild.
//!
//! - [`options`]: the command-line options and the syntax of their values.
//! - `producer` (feature `kafka`): the tap.

// Without the `kafka` feature the options are parsed, then refused.
#[cfg_attr(not(feature = "kafka"), allow(dead_code))]
pub mod options;
#[cfg(feature = "kafka")]
pub mod producer;

pub use options::KafkaArgs;

use crate::tap::RecordTap;

/// Why `--kafka` is refused by a build without the `kafka` feature.
#[cfg_attr(feature = "kafka", allow(dead_code))]
pub const MISSING: &str = "--kafka: this build has no Kafka support: rebuild with \
`cargo build --release --features kafka` (librdkafka is then built from source: it needs cmake \
and a C++ compiler; Debian: apt-get install cmake g++)";

/// What a tap's messages carry and how their keys are found.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Payload {
    /// Flow records: the value is the record as a JSON line (the output's
    /// own line when `-o` is JSON, else the record formatted as JSON with
    /// the Community ID of seed `community_seed`), the key its uid.
    Flows {
        /// `-o` is written as JSON lines: its lines are the values.
        json_output: bool,
        /// `--community-id-seed`.
        community_seed: u16,
    },
    /// Lines of a JSON text output (EVE alerts, Zeek JSON logs): the value
    /// is the line, the key its `"uid"` field.
    Lines,
}

/// The Kafka tap `args` ask for (none without `--kafka`), connected now:
/// no answer from the brokers, a wrong option, or a build without the
/// `kafka` feature is an error before the run (exit 2).
pub fn open(args: &KafkaArgs, payload: Payload) -> Result<Vec<Box<dyn RecordTap>>, String> {
    let Some(brokers) = &args.kafka else {
        return Ok(Vec::new());
    };
    let Some(topic) = &args.topic else {
        return Err("--kafka needs --topic TOPIC".to_string());
    };
    if let (Some(q), Some(phys)) = (args.kafka_queue_size, streamcap::source::physical_memory()) {
        if q > phys {
            return Err(format!(
                "--kafka-queue-size {}: more than this machine's physical memory ({})",
                crate::size::binary(q),
                crate::size::binary(phys)
            ));
        }
    }
    #[cfg(feature = "kafka")]
    {
        let tap = producer::KafkaTap::connect(brokers, topic, args, payload)?;
        Ok(vec![Box::new(tap)])
    }
    #[cfg(not(feature = "kafka"))]
    {
        let _ = (brokers, topic, payload);
        Err(MISSING.to_string())
    }
}

/// The `"uid"` string of a JSON line (an EVE alert, a Zeek JSON log
/// record), if it has one: the last `"uid":"…"` of the line (a field of
/// the record itself, after any nested object), without parsing the rest.
#[cfg_attr(not(feature = "kafka"), allow(dead_code))]
pub fn uid_of_line(line: &[u8]) -> Option<&[u8]> {
    const KEY: &[u8] = b"\"uid\":\"";
    let at = line.windows(KEY.len()).rposition(|w| w == KEY)? + KEY.len();
    let rest = line.get(at..)?;
    let end = rest.iter().position(|&b| b == b'"' || b == b'\\')?;
    // A uid is "C" and base62: never escaped, never empty.
    (end > 0 && rest.get(end) == Some(&b'"')).then(|| &rest[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uids_of_lines() {
        let eve = br#"{"timestamp":"x","flow_id":5,"alert":{"signature":"a \"uid\":\"no\""},"direction":"to_server","uid":"CabcDEF123"}"#;
        assert_eq!(uid_of_line(eve), Some(&b"CabcDEF123"[..]));
        let http = br#"{"ts":1.0,"uid":"Cxyz","id.orig_h":"10.0.0.1","method":"GET"}"#;
        assert_eq!(uid_of_line(http), Some(&b"Cxyz"[..]));
        assert_eq!(uid_of_line(br#"{"a":1}"#), None);
        assert_eq!(uid_of_line(br#"{"uid":""}"#), None);
        assert_eq!(uid_of_line(br#"{"uid":"C\u0041"}"#), None);
        assert_eq!(uid_of_line(br#"{"uid":"Cunterminated"#), None);
    }

    #[test]
    fn without_kafka_nothing_is_opened() {
        let taps = open(&KafkaArgs::default(), Payload::Lines).expect("no tap");
        assert!(taps.is_empty());
    }

    #[cfg(not(feature = "kafka"))]
    #[test]
    fn a_build_without_the_feature_says_how_to_rebuild() {
        let args = KafkaArgs {
            kafka: Some("127.0.0.1:9092".into()),
            topic: Some("t".into()),
            ..KafkaArgs::default()
        };
        let e = open(&args, Payload::Lines).err().expect("refused");
        assert!(e.contains("--features kafka") && e.contains("cmake"), "{e}");
    }
}
