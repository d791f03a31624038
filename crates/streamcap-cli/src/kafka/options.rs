//! The Kafka options (`flows`, `nids`, `http`) and the syntax of their
//! values.

/// The local queue of records waiting for the brokers when
/// `--kafka-queue-size` is not given.
pub const DEFAULT_QUEUE: u64 = 64 << 20;

/// The smallest `--kafka-queue-size`: one message of the largest size
/// librdkafka sends by default (`message.max.bytes`, 1,000,000 bytes)
/// must fit.
pub const MIN_QUEUE: u64 = 1 << 20;

/// How long the end of a run waits for the brokers by default, seconds.
pub const DEFAULT_FLUSH_TIMEOUT_S: u64 = 30;

/// How long the brokers have to answer before the run, seconds.
pub const CONNECT_TIMEOUT_S: u64 = 10;

/// The Kafka options.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct KafkaArgs {
    /// Also send every record to Kafka: the brokers to start from,
    /// HOST:PORT[,HOST:PORT...]. A message's value is the record's JSON
    /// line (without its newline), its key the connection's uid
    /// (docs/export.md). Needs --topic and a build with the `kafka`
    /// feature.
    #[arg(long, value_name = "BROKERS", value_parser = parse_brokers, requires = "topic")]
    pub kafka: Option<String>,
    /// The topic of --kafka.
    #[arg(long, value_name = "TOPIC", value_parser = parse_topic, requires = "kafka")]
    pub topic: Option<String>,
    /// A librdkafka setting for --kafka, as KEY=VALUE (e.g.
    /// security.protocol=SASL_PLAINTEXT, sasl.mechanism=PLAIN,
    /// compression.type=gzip, message.timeout.ms=600000); repeatable,
    /// applied after streamcap's own settings (docs/export.md).
    #[arg(long = "kafka-option", value_name = "KEY=VALUE", value_parser = parse_option, requires = "kafka")]
    pub kafka_option: Vec<(String, String)>,
    /// Memory for records on their way to the brokers (librdkafka's
    /// queue.buffering.max.kbytes; 1 MiB to the machine's memory). When it
    /// is full (a broker away) the output waits for room, so the run slows
    /// down rather than dropping records. [default: 64 MiB]
    #[arg(long, value_name = "BYTES", value_parser = parse_queue_size, requires = "kafka")]
    pub kafka_queue_size: Option<u64>,
    /// At the end of the run, how long to wait for the brokers to
    /// acknowledge the records still queued (e.g. 30s, 2m); those still
    /// unacknowledged then are counted as lost. [default: 30s]
    #[arg(long, value_name = "SECS", value_parser = crate::args::parse_timeout, requires = "kafka")]
    pub kafka_flush_timeout: Option<u64>,
}

impl KafkaArgs {
    /// `--kafka-queue-size`, or its default.
    pub fn queue_size(&self) -> u64 {
        self.kafka_queue_size.unwrap_or(DEFAULT_QUEUE)
    }

    /// `--kafka-flush-timeout`, or its default.
    pub fn flush_timeout(&self) -> std::time::Duration {
        self.kafka_flush_timeout.map_or(
            std::time::Duration::from_secs(DEFAULT_FLUSH_TIMEOUT_S),
            std::time::Duration::from_nanos,
        )
    }
}

/// Parses a broker list: `HOST:PORT[,HOST:PORT...]` (an IPv6 host in
/// brackets), as librdkafka's bootstrap.servers takes it.
pub fn parse_brokers(s: &str) -> Result<String, String> {
    let mut out = Vec::new();
    for b in s.split(',').map(str::trim) {
        if b.is_empty() {
            continue;
        }
        let Some((host, port)) = b.rsplit_once(':') else {
            return Err(format!(
                "{b:?}: no port (expected HOST:PORT, e.g. 127.0.0.1:9092)"
            ));
        };
        if host.is_empty() || host == "[]" {
            return Err(format!("{b:?}: no host"));
        }
        if host.contains(':') && !(host.starts_with('[') && host.ends_with(']')) {
            return Err(format!(
                "{b:?}: an IPv6 address goes in brackets ([::1]:9092)"
            ));
        }
        match port.parse::<u16>() {
            Ok(p) if p > 0 => {}
            _ => return Err(format!("{b:?}: {port:?} is not a port (1 to 65535)")),
        }
        out.push(b);
    }
    if out.is_empty() {
        return Err("no broker (expected HOST:PORT[,HOST:PORT...])".into());
    }
    Ok(out.join(","))
}

/// Parses a topic name as Kafka accepts it: 1 to 249 characters of ASCII
/// letters, digits, `.`, `_` and `-`, not `.` or `..`.
pub fn parse_topic(s: &str) -> Result<String, String> {
    let ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if s.is_empty() || s.len() > 249 || s == "." || s == ".." || !s.chars().all(ok) {
        return Err(format!(
            "{s:?}: a topic is 1 to 249 letters, digits, '.', '_' or '-' (not '.' or '..')"
        ));
    }
    Ok(s.to_string())
}

/// Parses `KEY=VALUE` (the first `=` separates them; a value may hold
/// `=` itself, as a JAAS configuration does).
pub fn parse_option(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: expected KEY=VALUE, e.g. compression.type=zstd"))?;
    let k = k.trim();
    if k.is_empty() {
        return Err(format!("{s:?}: the key is empty"));
    }
    Ok((k.to_string(), v.trim().to_string()))
}

/// Parses `--kafka-queue-size`: a size of at least [`MIN_QUEUE`] (the
/// bound by physical memory is checked when the producer is made).
pub fn parse_queue_size(s: &str) -> Result<u64, String> {
    let n = crate::size::parse_size(s)?;
    if n < MIN_QUEUE {
        return Err(format!(
            "{s:?}: at least {} (one message of the largest size must fit)",
            crate::size::binary(MIN_QUEUE)
        ));
    }
    // librdkafka takes KiB in an int.
    if n / 1024 > i32::MAX as u64 {
        return Err(format!("{s:?}: at most 2 TiB"));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brokers() {
        assert_eq!(parse_brokers("127.0.0.1:9092"), Ok("127.0.0.1:9092".into()));
        assert_eq!(
            parse_brokers("a:1, b.example:9093,[::1]:9094"),
            Ok("a:1,b.example:9093,[::1]:9094".into())
        );
        for bad in [
            "", ",", "host", ":9092", "h:0", "h:70000", "::1:9092", "h:x",
        ] {
            assert!(parse_brokers(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn topics_options_sizes() {
        assert_eq!(parse_topic("flows.v1_a-b"), Ok("flows.v1_a-b".into()));
        for bad in ["", ".", "..", "a b", "a/b", &"x".repeat(250)] {
            assert!(parse_topic(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_option("sasl.jaas.config=a=b c=d"),
            Ok(("sasl.jaas.config".into(), "a=b c=d".into()))
        );
        assert!(parse_option("novalue").is_err());
        assert!(parse_option("=x").is_err());
        assert_eq!(parse_queue_size("64MiB"), Ok(64 << 20));
        assert!(parse_queue_size("100KiB").is_err());
        assert!(parse_queue_size("4TiB").is_err());
    }
}
