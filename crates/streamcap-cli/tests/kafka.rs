//! `--kafka` against a real Apache Kafka broker (4.1, KRaft mode, one node
//! on 127.0.0.1, started by scripts/kafka-broker.sh): every record a run
//! writes to `-o` is consumed back from the topic exactly once (the
//! multiset of the messages' values equals the lines of `-o`; the topic
//! holds no more messages than that), keyed by the connection's uid, and
//! the records of one connection are in one partition; flow records of
//! the sample, of corpus captures and of a generated trace with interim
//! records and two workers (`-o` as CSV, the messages still JSON), EVE
//! alerts of `nids` and `http.log` records of `http`. A broker stopped in
//! the middle of a paced run and started again loses nothing. The
//! ```` ```console kafka ```` examples of docs/ run against the broker.
//!
//! Needs the `kafka` feature (`cargo test -p streamcap-cli --features kafka
//! --test kafka`, or scripts/test-kafka.sh), a JDK and Maven (the broker's
//! jars are fetched once); skips with a message without them. Without the
//! feature, checks that `--kafka` is refused with a message saying how to
//! rebuild.

mod common;

use common::run;

/// A build without the `kafka` feature refuses `--kafka` before the run
/// (exit 2), saying how to rebuild; the options are still known.
#[cfg(not(feature = "kafka"))]
#[test]
fn without_the_feature_kafka_is_refused_with_how_to_rebuild() {
    common::skip("the Kafka tests need `--features kafka` (scripts/test-kafka.sh)");
    let out = run(&[
        "flows",
        "-r",
        &common::examples::repo()
            .join("samples/sample.pcap")
            .display()
            .to_string(),
        "--kafka",
        "127.0.0.1:9092",
        "--topic",
        "flows",
        "-o",
        "/dev/null",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no Kafka support") && err.contains("--features kafka"),
        "{err}"
    );
}

/// `--kafka` needs `--topic` and the reverse, in any build.
#[test]
fn kafka_and_topic_go_together() {
    for args in [
        &["flows", "-r", "x.pcap", "--kafka", "127.0.0.1:9092"][..],
        &["flows", "-r", "x.pcap", "--topic", "t"][..],
        &["flows", "-r", "x.pcap", "--kafka", "h", "--topic", "t"][..],
        &["flows", "-r", "x.pcap", "--kafka", "h:1", "--topic", "a/b"][..],
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

#[cfg(feature = "kafka")]
mod broker {
    use super::common::examples::{self, repo};
    use super::common::{
        captures, corpus, json_lines, run, skip, tempdir, TestDir, TestFile, BIN, COMPARE_FILES,
    };
    use rdkafka::config::ClientConfig;
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::message::Message;
    use rdkafka::{Offset, TopicPartitionList};
    use std::collections::{BTreeMap, HashMap};
    use std::net::TcpListener;
    use std::path::{Path, PathBuf};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    /// A broker started by scripts/kafka-broker.sh, stopped when dropped.
    pub struct Broker {
        /// Removed after the broker stops (kept when the test fails).
        dir: TestDir,
        port: u16,
    }

    fn script() -> PathBuf {
        repo().join("scripts/kafka-broker.sh")
    }

    /// A port whose successor is free too (the controller's).
    fn free_ports() -> u16 {
        for _ in 0..50 {
            let Ok(a) = TcpListener::bind("127.0.0.1:0") else {
                continue;
            };
            let Ok(addr) = a.local_addr() else { continue };
            let p = addr.port();
            if p < 65535 && TcpListener::bind(("127.0.0.1", p + 1)).is_ok() {
                return p;
            }
        }
        panic!("no two free ports in a row");
    }

    impl Broker {
        /// Starts a broker in a folder of its own; `None` (with a message)
        /// when Java, Maven or the jars are missing.
        pub fn start(name: &str) -> Option<Broker> {
            for (tool, arg, why) in [
                (
                    "java",
                    "-version",
                    "a JDK runs the broker (apt-get install default-jdk-headless)",
                ),
                (
                    "mvn",
                    "-v",
                    "Maven fetches the broker's jars (apt-get install maven)",
                ),
            ] {
                if !super::common::have(tool, arg) {
                    skip(format!("Kafka tests: {tool} not found: {why}"));
                    return None;
                }
            }
            let fetched = Command::new("bash").arg(script()).arg("fetch").status();
            if !fetched.is_ok_and(|s| s.success()) {
                skip("Kafka tests: scripts/kafka-broker.sh fetch could not fetch Kafka's jars (Maven Central unreachable?)");
                return None;
            }
            let b = Broker {
                dir: tempdir(&format!("kafka-broker-{name}")),
                port: free_ports(),
            };
            b.launch();
            Some(b)
        }

        fn launch(&self) {
            let started = Instant::now();
            let out = Command::new("bash")
                .arg(script())
                .arg("start")
                .arg(&self.dir)
                .arg(self.port.to_string())
                .output()
                .expect("run kafka-broker.sh");
            assert!(
                out.status.success(),
                "the broker did not start: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            eprintln!(
                "kafka: broker on {} started in {:.1} s",
                self.addr(),
                started.elapsed().as_secs_f64()
            );
        }

        /// `127.0.0.1:PORT`.
        pub fn addr(&self) -> String {
            format!("127.0.0.1:{}", self.port)
        }

        /// Stops the broker (its data stays).
        pub fn stop(&self) {
            let _ = Command::new("bash")
                .arg(script())
                .arg("stop")
                .arg(&self.dir)
                .status();
        }

        /// Kills the broker at once (SIGKILL: a crash; its data stays).
        pub fn kill(&self) {
            let _ = Command::new("bash")
                .arg(script())
                .arg("kill")
                .arg(&self.dir)
                .status();
        }

        /// Starts it again on the same data.
        pub fn restart(&self) {
            self.launch();
        }
    }

    impl Drop for Broker {
        fn drop(&mut self) {
            self.stop();
            if std::thread::panicking() {
                // The broker's log tells what it met.
                let log = std::fs::read_to_string(self.dir.join("kafka.log")).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(40).collect();
                eprintln!(
                    "kafka: the broker's log ({}), last lines:\n{}",
                    self.dir.display(),
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                );
            }
        }
    }

    /// One message: partition, key, value, and its time (ms since the
    /// epoch: when the producer took it).
    pub type Msg = (i32, Option<String>, String, i64);

    /// Every message of `topic`, from the start, until `want` have come
    /// and nothing more came for 2 s (or 60 s have passed); and the
    /// number of messages the topic holds (the partitions' high
    /// watermarks: a duplicate would count, even one never read).
    pub fn consume(brokers: &str, topic: &str, want: usize) -> (Vec<Msg>, i64) {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", brokers)
            .set("group.id", "streamcap-test")
            .set("enable.auto.commit", "false")
            .create()
            .expect("consumer");
        let md = consumer
            .fetch_metadata(Some(topic), Duration::from_secs(10))
            .expect("metadata");
        let parts = md
            .topics()
            .first()
            .map_or(0, |t| t.partitions().len() as i32);
        assert!(parts > 0, "topic {topic} has no partitions");
        let mut tpl = TopicPartitionList::new();
        for p in 0..parts {
            tpl.add_partition_offset(topic, p, Offset::Beginning)
                .expect("partition");
        }
        consumer.assign(&tpl).expect("assign");
        let (mut got, start, mut last) = (Vec::new(), Instant::now(), Instant::now());
        while start.elapsed() < Duration::from_secs(60) {
            match consumer.poll(Duration::from_millis(200)) {
                Some(Ok(m)) => {
                    let text =
                        |b: Option<&[u8]>| b.map(|b| String::from_utf8_lossy(b).into_owned());
                    got.push((
                        m.partition(),
                        text(m.key()),
                        text(m.payload()).unwrap_or_default(),
                        m.timestamp().to_millis().unwrap_or(0),
                    ));
                    last = Instant::now();
                }
                Some(Err(e)) => panic!("consuming {topic}: {e}"),
                None if got.len() >= want && last.elapsed() > Duration::from_secs(2) => break,
                None => {}
            }
        }
        let mut held = 0;
        for p in 0..parts {
            let (low, high) = consumer
                .fetch_watermarks(topic, p, Duration::from_secs(10))
                .expect("watermarks");
            held += high - low;
        }
        (got, held)
    }

    /// The lines of a file.
    pub fn lines(path: &Path) -> Vec<String> {
        std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn counts(v: &[String]) -> BTreeMap<&str, usize> {
        let mut m = BTreeMap::new();
        for s in v {
            *m.entry(s.as_str()).or_insert(0) += 1;
        }
        m
    }

    /// The messages' values are `want`, as multisets (each record exactly
    /// once), the topic holds no more, and each key is in one partition.
    pub fn check_exactly_once(what: &str, got: &[Msg], held: i64, want: &[String]) {
        let values: Vec<String> = got.iter().map(|m| m.2.clone()).collect();
        let (g, w) = (counts(&values), counts(want));
        if g != w {
            let extra: Vec<_> = g
                .iter()
                .filter(|(k, n)| w.get(*k) < Some(n))
                .take(3)
                .collect();
            let missing: Vec<_> = w
                .iter()
                .filter(|(k, n)| g.get(*k) < Some(n))
                .take(3)
                .collect();
            panic!(
                "{what}: {} messages, {} lines; extra or repeated {extra:?}; missing {missing:?}",
                got.len(),
                want.len()
            );
        }
        assert_eq!(
            held,
            want.len() as i64,
            "{what}: the topic holds more than the records"
        );
        let mut partition_of: HashMap<&str, i32> = HashMap::new();
        for (p, k, _, _) in got {
            if let Some(k) = k {
                let first = *partition_of.entry(k.as_str()).or_insert(*p);
                assert_eq!(first, *p, "{what}: key {k} in partitions {first} and {p}");
            }
        }
    }

    /// The text of a field of a JSON line (`"ts":1.000005`), as written.
    fn raw<'a>(line: &'a str, key: &str) -> &'a str {
        let pat = format!("\"{key}\":");
        let at = line.find(&pat).unwrap_or_else(|| panic!("{key} in {line}")) + pat.len();
        let rest = &line[at..];
        rest[..rest.find([',', '}']).unwrap_or(rest.len())].trim_matches('"')
    }

    /// Each flow record's key is its connection's uid, as `conn` (a
    /// conn.log) names it.
    fn check_flow_keys(what: &str, got: &[Msg], conn: &Path) {
        let mut uid = HashMap::new();
        for l in lines(conn).iter().filter(|l| !l.starts_with('#')) {
            let f: Vec<&str> = l.split('\t').collect();
            // ts uid orig_h orig_p resp_h resp_p proto
            let id = (
                f[0].to_string(),
                f[2].to_string(),
                f[3].to_string(),
                f[4].to_string(),
                f[5].to_string(),
                f[6].to_string(),
            );
            uid.insert(id, f[1].to_string());
        }
        for (_, key, v, _) in got {
            let id = (
                raw(v, "ts").to_string(),
                raw(v, "src_ip").to_string(),
                raw(v, "src_port").to_string(),
                raw(v, "dst_ip").to_string(),
                raw(v, "dst_port").to_string(),
                raw(v, "proto").to_string(),
            );
            let want = uid
                .get(&id)
                .unwrap_or_else(|| panic!("{what}: no conn.log row for {v}"));
            assert_eq!(key.as_deref(), Some(want.as_str()), "{what}: key of {v}");
        }
    }

    /// Runs `streamcap ARGS` and checks its `--stats-json` Kafka export:
    /// `records` records, all delivered. Returns its stderr.
    pub fn produce(args: &[&str], stats: &Path, records: usize) -> String {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--stats-json", stats.to_str().expect("utf-8")]);
        let out = run(&all);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{args:?}: {err}");
        let s: serde_json::Value =
            serde_json::from_slice(&std::fs::read(stats).expect("stats")).expect("stats JSON");
        let k = s["exports"]
            .as_array()
            .and_then(|a| a.iter().find(|e| e["kind"] == "kafka"))
            .unwrap_or_else(|| panic!("no kafka export in {s}"));
        assert_eq!(k["records"], records as u64, "{k}");
        assert_eq!(k["delivered"], records as u64, "{k}");
        assert_eq!(k["lost"], 0, "{k}");
        err
    }

    /// A generated campus trace of `packets` packets on a link of `gbps`.
    pub fn campus(name: &str, packets: u64, gbps: f64) -> (TestFile, f64) {
        let p = tempdir(&format!("kafka-campus-{name}")).into_file("campus.pcap");
        let cfg = streamcap_gen::CampusConfig {
            packets,
            link_gbps: gbps,
            ..Default::default()
        };
        let (bytes, _, st) = streamcap_gen::Campus::new(cfg).to_bytes();
        std::fs::write(&p, bytes).expect("write trace");
        (p, st.duration_ns as f64 / 1e9)
    }

    /// The ```` ```console kafka ```` examples of docs/ against `broker`
    /// (127.0.0.1:9092 in the pages), with this build first on PATH and
    /// `samples/` and `scripts/` in each block's folder.
    pub fn doc_examples(broker: &Broker) {
        let addr = broker.addr();
        let replace = [("127.0.0.1:9092", addr.as_str())];
        let ran = examples::run_examples(
            "streamcap-kafka-docs",
            &["samples", "scripts"],
            &replace,
            |ex| {
                if ex.kafka {
                    examples::Pick::Run
                } else {
                    examples::Pick::Other
                }
            },
        );
        assert!(ran >= 3, "only {ran} kafka examples found in docs/");
        eprintln!("kafka: {ran} examples of docs/ ran");
    }

    /// Flow records (sample, corpus, a generated trace with two workers,
    /// interim records and `-o` in CSV), alerts and http.log records: each
    /// consumed exactly once, keyed by uid, one partition per connection.
    #[test]
    fn every_record_is_consumed_exactly_once_keyed_by_its_uid() {
        let Some(broker) = Broker::start("once") else {
            return;
        };
        let b = broker.addr();
        let dir = tempdir("kafka-once");
        let sample = repo().join("samples/sample.pcap");
        let sample_s = sample.to_str().expect("utf-8");
        let at = |name: &str| dir.join(name).display().to_string();

        // The sample's flow records: values are -o's lines.
        let out = at("sample.json");
        let err = produce(
            &[
                "flows",
                "-r",
                sample_s,
                "--kafka",
                &b,
                "--topic",
                "test-sample",
                "-o",
                &out,
            ],
            &dir.join("s1.json"),
            40,
        );
        assert!(
            err.contains("  kafka        "),
            "the summary's kafka line: {err}"
        );
        let want = lines(Path::new(&out));
        let (got, held) = consume(&b, "test-sample", want.len());
        check_exactly_once("sample", &got, held, &want);
        // One worker: the uids are those of any run of the same input.
        let conn = at("sample.log");
        assert!(
            run(&["flows", "-r", sample_s, "-q", "--format", "zeek", "-o", &conn])
                .status
                .success()
        );
        check_flow_keys("sample", &got, Path::new(&conn));
        eprintln!(
            "kafka: sample: {} records, {} messages",
            want.len(),
            got.len()
        );

        // -o as CSV: the messages are still the JSON records.
        let csv = at("sample.csv");
        produce(
            &[
                "flows", "-r", sample_s, "--format", "csv", "-q", "--kafka", &b, "--topic",
                "test-csv", "-o", &csv,
            ],
            &dir.join("s1.json"),
            40,
        );
        let (got, held) = consume(&b, "test-csv", want.len());
        check_exactly_once("csv", &got, held, &want);

        // A generated trace, two workers, interim records, -o as conn.log:
        // the messages are the JSON records of another run, their keys the
        // uids of this run's conn.log (with several workers a connection's
        // serial number, and so its uid, depends on the run).
        let (trace, secs) = campus("once", 200_000, 0.1);
        let t = trace.to_str().expect("utf-8");
        let opts = ["--workers", "2", "--active-timeout", "5s"];
        let json = at("campus.json");
        let mut a = vec!["flows", "-r", t, "-q", "-o", &json];
        a.extend(opts);
        assert!(run(&a).status.success());
        let want = lines(Path::new(&json));
        let conn = at("campus.log");
        let mut a = vec![
            "flows",
            "-r",
            t,
            "-q",
            "--format",
            "zeek",
            "-o",
            &conn,
            "--kafka",
            &b,
            "--topic",
            "test-campus",
        ];
        a.extend(opts);
        produce(&a, &dir.join("s2.json"), want.len());
        let (got, held) = consume(&b, "test-campus", want.len());
        check_exactly_once("campus", &got, held, &want);
        check_flow_keys("campus", &got, Path::new(&conn));
        let mut per_key: HashMap<&str, usize> = HashMap::new();
        for (_, k, _, _) in &got {
            *per_key.entry(k.as_deref().unwrap_or_default()).or_insert(0) += 1;
        }
        let several = per_key.values().filter(|n| **n > 1).count();
        assert!(several > 100, "connections with interim records: {several}");
        eprintln!(
            "kafka: campus ({secs:.0} s of traffic): {} records of {} connections ({several} with several records), {} messages",
            want.len(),
            per_key.len(),
            got.len()
        );

        // Corpus captures, each a run of its own, into one topic.
        if let Some(c) = corpus() {
            let files: Vec<PathBuf> = captures(&c)
                .into_iter()
                .filter(|p| COMPARE_FILES.iter().any(|f| p.ends_with(f)))
                .collect();
            let mut want = Vec::new();
            for (i, f) in files.iter().enumerate() {
                let out = at(&format!("corpus-{i}.json"));
                let f = f.to_str().expect("utf-8");
                let n = json_lines(&run(&["flows", "-r", f, "-q"]).stdout).len();
                produce(
                    &[
                        "flows",
                        "-r",
                        f,
                        "-q",
                        "--kafka",
                        &b,
                        "--topic",
                        "test-corpus",
                        "-o",
                        &out,
                    ],
                    &dir.join("s3.json"),
                    n,
                );
                want.extend(lines(Path::new(&out)));
            }
            let (got, held) = consume(&b, "test-corpus", want.len());
            check_exactly_once("corpus", &got, held, &want);
            eprintln!(
                "kafka: corpus: {} captures, {} records",
                files.len(),
                want.len()
            );
        }

        // EVE alerts: the lines of -o, keyed by their uid.
        let rules = repo().join("samples/sample.rules");
        let eve = at("eve.json");
        let out = run(&[
            "nids",
            "-r",
            sample_s,
            "-S",
            rules.to_str().expect("utf-8"),
            "-q",
            "-o",
            &eve,
            "--kafka",
            &b,
            "--topic",
            "test-alerts",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let want = lines(Path::new(&eve));
        assert!(want.len() > 10, "alerts: {}", want.len());
        let (got, held) = consume(&b, "test-alerts", want.len());
        check_exactly_once("alerts", &got, held, &want);
        for (_, k, v, _) in &got {
            let a: serde_json::Value = serde_json::from_str(v).expect("EVE JSON");
            assert_eq!(k.as_deref(), a["uid"].as_str(), "{v}");
        }
        let fast = run(&[
            "nids",
            "-r",
            sample_s,
            "-S",
            rules.to_str().expect("utf-8"),
            "--format",
            "fast",
            "--kafka",
            &b,
            "--topic",
            "test-alerts",
        ]);
        assert_eq!(fast.status.code(), Some(2), "fast.log is not sent");

        // http.log as Zeek JSON.
        let http = at("http.json");
        let out = run(&[
            "http",
            "-r",
            sample_s,
            "-q",
            "-o",
            &http,
            "--kafka",
            &b,
            "--topic",
            "test-http",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let want = lines(Path::new(&http));
        assert!(!want.is_empty());
        let (got, held) = consume(&b, "test-http", want.len());
        check_exactly_once("http", &got, held, &want);
        for (_, k, v, _) in &got {
            let r: serde_json::Value = serde_json::from_str(v).expect("JSON");
            assert_eq!(k.as_deref(), r["uid"].as_str(), "{v}");
        }

        if let Some(d) = trace.parent() {
            let _ = std::fs::remove_dir_all(d);
        }

        // The commands of docs/.
        doc_examples(&broker);

        // No broker there: refused before the run.
        let closed = format!("127.0.0.1:{}", free_ports());
        let out = run(&[
            "flows",
            "-r",
            sample_s,
            "--kafka",
            &closed,
            "--topic",
            "x",
            "-o",
            "/dev/null",
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("no answer from the brokers"), "{err}");
        let _ = std::fs::remove_dir_all(dir);
    }

    /// The broker is stopped in the middle of a paced run (records made
    /// meanwhile wait in the producer's queue) and started again, then
    /// killed (SIGKILL, with batches in flight) and started again: every
    /// record reaches the topic once, none is counted lost.
    #[test]
    fn a_broker_restarted_mid_run_loses_nothing() {
        let Some(broker) = Broker::start("restart") else {
            return;
        };
        let b = broker.addr();
        let dir = tempdir("kafka-restart");
        // About 29 s of traffic, replayed at 2x: some 15 s of records.
        let (trace, secs) = campus("restart", 100_000, 0.02);
        let out = dir.join("flows.json");
        let stats = dir.join("stats.json");
        let started = Instant::now();
        let child = Command::new(BIN)
            .args([
                "flows",
                "-r",
                trace.to_str().expect("utf-8"),
                "--speed",
                "2x",
                "--active-timeout",
                "5s",
            ])
            .args([
                "--kafka",
                &b,
                "--topic",
                "restart",
                "--kafka-flush-timeout",
                "60s",
                "-q",
            ])
            .arg("-o")
            .arg(&out)
            .arg("--stats-json")
            .arg(&stats)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run streamcap");
        let now_ms = || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64)
        };
        std::thread::sleep(Duration::from_secs(3));
        broker.stop();
        let (stopped, stopped_ms) = (started.elapsed().as_secs_f64(), now_ms());
        std::thread::sleep(Duration::from_secs(3));
        let restart_ms = now_ms();
        broker.restart();
        let restarted = started.elapsed().as_secs_f64();
        std::thread::sleep(Duration::from_secs(1));
        broker.kill();
        let (killed, killed_ms) = (started.elapsed().as_secs_f64(), now_ms());
        std::thread::sleep(Duration::from_secs(2));
        let kill_restart_ms = now_ms();
        broker.restart();
        let up_again = started.elapsed().as_secs_f64();
        let done = child.wait_with_output().expect("wait");
        let err = String::from_utf8_lossy(&done.stderr);
        assert!(done.status.success(), "{err}");
        let want = lines(&out);
        let s: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&stats).expect("stats")).expect("stats JSON");
        let k = &s["exports"][0];
        assert_eq!(k["kind"], "kafka");
        let (got, held) = consume(&b, "restart", want.len());
        // Records the producer took while the broker was away.
        let during = got
            .iter()
            .filter(|m| (stopped_ms..restart_ms).contains(&m.3))
            .count();
        let before = got.iter().filter(|m| m.3 < stopped_ms).count();
        let while_killed = got
            .iter()
            .filter(|m| (killed_ms..kill_restart_ms).contains(&m.3))
            .count();
        eprintln!(
            "kafka restart: {secs:.0} s of traffic at 2x; broker stopped at {stopped:.1} s, up again at {restarted:.1} s, killed at {killed:.1} s, up again at {up_again:.1} s, run over at {:.1} s; \
             {} records ({before} before the stop, {during} while the broker was stopped, {while_killed} while it was killed), {} consumed, the topic holds {held}; \
             export: delivered {}, lost {}, client errors {}, waited {} s for room; stderr:\n{err}",
            started.elapsed().as_secs_f64(),
            want.len(),
            got.len(),
            k["delivered"],
            k["lost"],
            k["client_errors"],
            k["waited_s"],
        );
        assert!(during > 0, "no record was made while the broker was down");
        assert_eq!(k["records"], want.len() as u64);
        assert_eq!(k["lost"], 0, "{k}");
        assert_eq!(k["delivered"], want.len() as u64, "{k}");
        check_exactly_once("restart", &got, held, &want);
        let _ = std::fs::remove_dir_all(dir);
        if let Some(d) = trace.parent() {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}
