//! The Kafka tap: a librdkafka producer on the output's writer thread.
//!
//! Each record is handed to librdkafka's queue (bounded by
//! `--kafka-queue-size`), which batches, compresses and sends it;
//! librdkafka's delivery reports (served by the tap's polls: every
//! [`POLL_EVERY`] records, at each flush of the output, while it waits)
//! count what the brokers acknowledged and what failed. When the
//! queue is full (the brokers away, or slower than the capture) the tap
//! waits for room: the writer thread, and so the workers behind it, slow
//! down, and memory stays bounded. librdkafka retries a broker that went
//! away for `message.timeout.ms` (300 s unless set with `--kafka-option`);
//! a record that times out is reported failed. At the end the tap waits
//! `--kafka-flush-timeout` for what is still queued, then gives up on the
//! rest; every record not acknowledged is counted as lost, reported on
//! stderr and in `--stats-json`, and makes the exit status 1.

use super::{KafkaArgs, Payload};
use crate::record::FlowRecord;
use crate::tap::{RecordTap, TapReport};
use rdkafka::client::ClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{
    BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext, PurgeConfig,
};
use rdkafka::util::Timeout;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How often a broker error is repeated on stderr at most.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// Records handed over between two polls of the delivery reports.
const POLL_EVERY: u64 = 256;

/// How long a full queue is waited for before stderr says so.
const FULL_WARNING: Duration = Duration::from_secs(1);

/// What the producer's callbacks count (on librdkafka's threads).
#[derive(Default)]
struct Counters {
    /// Records the brokers acknowledged.
    delivered: AtomicU64,
    /// Records whose delivery failed (timed out, refused, purged).
    failed: AtomicU64,
    /// Errors of the client itself (a broker unreachable, ...).
    errors: AtomicU64,
    /// The first delivery failure's text.
    first_failure: Mutex<Option<String>>,
    /// The latest client error's text.
    last_error: Mutex<Option<String>>,
}

impl Counters {
    fn note_failure(&self, text: String) {
        let mut f = self
            .first_failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if f.is_none() {
            *f = Some(text);
        }
    }

    fn first_failure(&self) -> Option<String> {
        self.first_failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn last_error(&self) -> Option<String> {
        self.last_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The producer's context: counts delivery reports and client errors.
struct Context(Arc<Counters>);

impl ClientContext for Context {
    fn error(&self, error: KafkaError, reason: &str) {
        self.0.errors.fetch_add(1, Ordering::Relaxed);
        *self
            .0
            .last_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(format!("{error}: {reason}"));
    }
}

impl ProducerContext for Context {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(_) => {
                self.0.delivered.fetch_add(1, Ordering::Relaxed);
            }
            Err((e, _)) => {
                self.0.failed.fetch_add(1, Ordering::Relaxed);
                self.0.note_failure(e.to_string());
            }
        }
    }
}

/// A Kafka producer fed by an output's writer thread.
pub struct KafkaTap {
    producer: BaseProducer<Context>,
    counters: Arc<Counters>,
    name: String,
    brokers: String,
    topic: String,
    payload: Payload,
    queue_size: u64,
    flush_timeout: Duration,
    /// A record formatted as JSON (flows whose `-o` is not JSON).
    buf: Vec<u8>,
    /// Records handed to librdkafka.
    produced: u64,
    /// Records librdkafka refused outright (too large, a fatal error).
    refused: u64,
    /// Lines without a uid, sent without a key.
    unkeyed: u64,
    /// Bytes of the values handed over.
    bytes: u64,
    /// Time spent waiting for room in the queue, and how many waits.
    waited: Duration,
    waits: u64,
    /// What stderr was told of the client's errors.
    teller: Teller,
}

/// Client errors already reported on stderr, and when last.
#[derive(Default)]
struct Teller {
    errors: u64,
    at: Option<Instant>,
}

impl Teller {
    /// Says on stderr what the client met since the last time (a broker
    /// away), at most every [`WARN_EVERY`].
    fn tell(&mut self, counters: &Counters, name: &str) {
        let errors = counters.errors.load(Ordering::Relaxed);
        if errors == self.errors || self.at.is_some_and(|t| t.elapsed() < WARN_EVERY) {
            return;
        }
        let last = counters.last_error().unwrap_or_default();
        eprintln!(
            "streamcap: {name}: {last} ({errors} errors so far; librdkafka retries, the records wait in its queue)"
        );
        self.errors = errors;
        self.at = Some(Instant::now());
    }
}

impl KafkaTap {
    /// A producer to `topic` of the brokers `brokers` with the settings
    /// of `args`, for `payload`; fails (a usage error) on a setting
    /// librdkafka refuses, or when no broker answers within
    /// [`super::options::CONNECT_TIMEOUT_S`] seconds.
    pub fn connect(
        brokers: &str,
        topic: &str,
        args: &KafkaArgs,
        payload: Payload,
    ) -> Result<KafkaTap, String> {
        let name = format!("kafka {brokers} topic {topic}");
        let queue_size = args.queue_size();
        let mut cfg = ClientConfig::new();
        cfg.set("bootstrap.servers", brokers)
            .set("client.id", "streamcap")
            // No duplicates when a batch is retried, in order per
            // partition; implies acks=all.
            .set("enable.idempotence", "true")
            .set("acks", "all")
            .set("compression.type", "lz4")
            .set("linger.ms", "5")
            // Java's partitioner: a key goes to the partition a Java
            // producer would choose.
            .set("partitioner", "murmur2_random")
            .set(
                "queue.buffering.max.kbytes",
                (queue_size / 1024).to_string(),
            )
            // The bytes bound the queue, not the count.
            .set("queue.buffering.max.messages", "10000000");
        for (k, v) in &args.kafka_option {
            cfg.set(k, v);
        }
        let counters = Arc::new(Counters::default());
        let producer: BaseProducer<Context> = cfg
            .create_with_context(Context(counters.clone()))
            .map_err(|e| format!("{name}: {e}"))?;
        let timeout = Duration::from_secs(super::options::CONNECT_TIMEOUT_S);
        producer
            .client()
            .fetch_metadata(Some(topic), Timeout::After(timeout))
            .map_err(|e| {
                format!(
                    "{name}: no answer from the brokers within {} s: {e}",
                    timeout.as_secs()
                )
            })?;
        Ok(KafkaTap {
            producer,
            counters,
            name,
            brokers: brokers.to_string(),
            topic: topic.to_string(),
            payload,
            queue_size,
            flush_timeout: args.flush_timeout(),
            buf: Vec::new(),
            produced: 0,
            refused: 0,
            unkeyed: 0,
            bytes: 0,
            waited: Duration::ZERO,
            waits: 0,
            teller: Teller::default(),
        })
    }

    /// Says on stderr what the client met since the last time.
    fn tell_errors(&mut self) {
        self.teller.tell(&self.counters, &self.name);
    }
}

/// Hands one message to `t`'s producer, waiting for room while its queue
/// is full (the value may be `t`'s own buffer, taken out meanwhile).
fn send(t: &mut KafkaTap, key: Option<&[u8]>, value: &[u8]) -> io::Result<()> {
    let mut record: BaseRecord<'_, [u8], [u8]> = BaseRecord::to(&t.topic).payload(value);
    if let Some(k) = key {
        record = record.key(k);
    }
    let mut full_since: Option<Instant> = None;
    let mut warned = false;
    loop {
        match t.producer.send(record) {
            Ok(()) => {
                t.produced += 1;
                t.bytes += value.len() as u64;
                if t.produced % POLL_EVERY == 0 {
                    // Serves the delivery reports that came meanwhile.
                    t.producer.poll(Duration::ZERO);
                }
                break;
            }
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                record = back;
                let since = *full_since.get_or_insert_with(Instant::now);
                if !warned && since.elapsed() >= FULL_WARNING {
                    warned = true;
                    eprintln!(
                        "streamcap: {}: the queue ({}) is full: the output waits for the brokers",
                        t.name,
                        crate::size::binary(t.queue_size)
                    );
                }
                if crate::signals::aborting() {
                    t.refused += 1;
                    t.waited += since.elapsed();
                    return Err(io::Error::other(
                        "stopped while waiting for room in the queue (a second signal)",
                    ));
                }
                // Serves delivery reports (which free room) meanwhile.
                t.producer.poll(Duration::from_millis(5));
                t.teller.tell(&t.counters, &t.name);
            }
            Err((e, _)) => {
                t.refused += 1;
                t.counters.note_failure(e.to_string());
                break;
            }
        }
    }
    if let Some(since) = full_since {
        t.waited += since.elapsed();
        t.waits += 1;
    }
    Ok(())
}

impl RecordTap for KafkaTap {
    fn name(&self) -> &str {
        &self.name
    }

    fn record(&mut self, r: &FlowRecord, line: &[u8]) -> io::Result<()> {
        let key = crate::zeek::uid(r);
        match self.payload {
            Payload::Flows {
                json_output: true, ..
            } => send(
                self,
                Some(key.as_bytes()),
                line.strip_suffix(b"\n").unwrap_or(line),
            ),
            Payload::Flows { community_seed, .. } => {
                let mut buf = std::mem::take(&mut self.buf);
                buf.clear();
                let cid = crate::community_id::of_record(r, community_seed);
                let cid = cid.as_ref().map(crate::community_id::CommunityId::as_str);
                crate::record::write_json(r, cid, &mut buf);
                let res = send(self, Some(key.as_bytes()), &buf);
                self.buf = buf;
                res
            }
            Payload::Lines => Err(io::Error::other("a flow record on a text output")),
        }
    }

    fn line(&mut self, line: &[u8]) -> io::Result<()> {
        let key = super::uid_of_line(line);
        if key.is_none() {
            self.unkeyed += 1;
        }
        send(self, key, line)
    }

    fn flush(&mut self) -> io::Result<()> {
        // librdkafka sends on its own (linger.ms): only the delivery
        // reports to serve.
        self.producer.poll(Duration::ZERO);
        self.tell_errors();
        Ok(())
    }

    fn finish(&mut self) -> io::Result<TapReport> {
        let started = Instant::now();
        // Sends what lingers, then serves the delivery reports until every
        // record has one, or the time is up (rdkafka's `flush` would wait
        // in steps of 100 ms).
        let _ = self.producer.flush(Timeout::After(Duration::ZERO));
        while self.producer.in_flight_count() > 0 && started.elapsed() < self.flush_timeout {
            self.producer.poll(Duration::ZERO);
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut gave_up = 0;
        if self.producer.in_flight_count() > 0 {
            gave_up = u64::try_from(self.producer.in_flight_count()).unwrap_or(0);
            // What is left is given up: its delivery reports (failures)
            // come with the next poll.
            self.producer
                .purge(PurgeConfig::default().queue().inflight());
            let _ = self.producer.flush(Timeout::After(Duration::from_secs(1)));
        }
        let flush_s = started.elapsed().as_secs_f64();
        self.tell_errors();
        let delivered = self.counters.delivered.load(Ordering::Relaxed);
        let failed = self.counters.failed.load(Ordering::Relaxed);
        let errors = self.counters.errors.load(Ordering::Relaxed);
        // Handed over but neither acknowledged nor reported failed.
        let unreported = self.produced.saturating_sub(delivered + failed);
        let records = self.produced + self.refused;
        let lost = records.saturating_sub(delivered);
        let first = self.counters.first_failure();
        let line = format!(
            "{} topic {}: {records} records, {delivered} delivered, {lost} lost ({failed} failed, {unreported} unacknowledged, {} refused); {} bytes of values; waited {:.3} s for room in the {} queue, {:.3} s at the end; {errors} client errors",
            self.brokers,
            self.topic,
            self.refused,
            self.bytes,
            self.waited.as_secs_f64(),
            crate::size::binary(self.queue_size),
            flush_s,
        );
        let failure = (lost > 0).then(|| {
            let why = first
                .clone()
                .or_else(|| self.counters.last_error())
                .unwrap_or_else(|| "no acknowledgement".into());
            let timeout = if gave_up > 0 {
                format!(
                    "; {gave_up} were still queued after --kafka-flush-timeout {} s",
                    self.flush_timeout.as_secs_f64()
                )
            } else {
                String::new()
            };
            format!(
                "{}: {lost} of {records} records were not delivered ({why}){timeout}",
                self.name
            )
        });
        let json = serde_json::json!({
            "brokers": self.brokers,
            "topic": self.topic,
            "records": records,
            "produced": self.produced,
            "delivered": delivered,
            "failed": failed,
            "unacknowledged": unreported,
            "refused": self.refused,
            "lost": lost,
            "unkeyed": self.unkeyed,
            "bytes": self.bytes,
            "queue_size": self.queue_size,
            "waits": self.waits,
            "waited_s": self.waited.as_secs_f64(),
            "flush_s": flush_s,
            "client_errors": errors,
            "first_failure": first,
        });
        Ok(TapReport {
            kind: "kafka",
            line,
            json,
            failure,
        })
    }
}

#[cfg(test)]
mod tests {
    //! Against librdkafka's mock cluster (in the process, no Java): what
    //! is acknowledged is counted delivered; with the broker away, a full
    //! queue makes the tap wait (bounded memory) and every record that
    //! times out is counted lost and reported.
    use super::*;
    use rdkafka::mocking::MockCluster;

    fn args(options: &[(&str, &str)], queue: Option<u64>, flush_ms: u64) -> KafkaArgs {
        KafkaArgs {
            kafka_option: options
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            kafka_queue_size: queue,
            kafka_flush_timeout: Some(flush_ms * 1_000_000),
            ..KafkaArgs::default()
        }
    }

    fn line(i: usize) -> Vec<u8> {
        format!(
            r#"{{"n":{i},"pad":"{}","uid":"C{}"}}"#,
            "x".repeat(900),
            i % 17
        )
        .into_bytes()
    }

    #[test]
    fn acknowledged_records_are_counted_delivered() {
        let mock = MockCluster::new(1).expect("mock cluster");
        mock.create_topic("t", 3, 1).expect("topic");
        let mut tap = KafkaTap::connect(
            &mock.bootstrap_servers(),
            "t",
            &args(&[], None, 10_000),
            Payload::Lines,
        )
        .expect("connects");
        for i in 0..500 {
            tap.line(&line(i)).expect("line");
        }
        tap.line(br#"{"no":"uid"}"#).expect("line");
        tap.flush().expect("flush");
        let r = tap.finish().expect("finish");
        assert_eq!(r.kind, "kafka");
        assert_eq!(r.json["records"], 501);
        assert_eq!(r.json["delivered"], 501, "{}", r.json);
        assert_eq!(r.json["lost"], 0);
        assert_eq!(r.json["unkeyed"], 1);
        assert!(r.failure.is_none());
        assert!(
            r.line.contains("501 records, 501 delivered, 0 lost"),
            "{}",
            r.line
        );
    }

    #[test]
    fn a_broker_away_fills_the_queue_then_every_lost_record_is_counted() {
        let mock = MockCluster::new(1).expect("mock cluster");
        mock.create_topic("t", 1, 1).expect("topic");
        // Records time out after 1 s in the queue; the queue holds 1 MiB,
        // about a thousand of these records.
        let options = [("message.timeout.ms", "1000")];
        let mut tap = KafkaTap::connect(
            &mock.bootstrap_servers(),
            "t",
            &args(&options, Some(1 << 20), 500),
            Payload::Lines,
        )
        .expect("connects");
        mock.broker_down(1).expect("broker down");
        let n = 3000;
        for i in 0..n {
            tap.line(&line(i)).expect("line");
        }
        let r = tap.finish().expect("finish");
        assert_eq!(r.json["records"], n as u64);
        assert_eq!(r.json["delivered"], 0, "{}", r.json);
        assert_eq!(r.json["lost"], n as u64, "{}", r.json);
        assert!(
            r.json["waits"].as_u64() > Some(0),
            "the full queue was waited for: {}",
            r.json
        );
        assert!(r.json["waited_s"].as_f64() > Some(0.5), "{}", r.json);
        let f = r.failure.expect("the loss is reported");
        assert!(
            f.contains(&format!("{n} of {n} records were not delivered")),
            "{f}"
        );
    }

    #[test]
    fn librdkafka_refuses_a_bad_setting_before_the_run() {
        let mock = MockCluster::new(1).expect("mock cluster");
        let e = KafkaTap::connect(
            &mock.bootstrap_servers(),
            "t",
            &args(&[("no.such.setting", "1")], None, 1000),
            Payload::Lines,
        )
        .err()
        .expect("refused");
        assert!(e.contains("no.such.setting"), "{e}");
    }
}
