//! The IPFIX options of `flows` and the syntax of their values: the
//! collector (`udp://HOST:PORT`, `tcp://HOST:PORT`) and the pace
//! (`--ipfix-rate`).

use std::path::PathBuf;

/// Messages per second a UDP export sends at most by default: about
/// 14 MB/s of 1,400-byte messages, some 100,000 flows a second.
pub const DEFAULT_RATE: f64 = 10_000.0;

/// `flows`' IPFIX options.
#[derive(clap::Args, Debug, Default)]
pub struct IpfixArgs {
    /// Also export the flow records as IPFIX (RFC 7011, biflows of RFC
    /// 5103) to a collector: udp://HOST:PORT or tcp://HOST:PORT
    /// (docs/export.md). The records still go to -o. UDP is paced
    /// (--ipfix-rate) and sends the templates again every 60 s and every
    /// 1,000 messages; TCP sends them once.
    #[arg(long, value_name = "URL", value_parser = parse_target)]
    pub ipfix: Option<Target>,
    /// Also write the IPFIX messages to FILE (RFC 5655's file format: the
    /// messages back to back, the templates first).
    #[arg(long, value_name = "FILE")]
    pub ipfix_file: Option<PathBuf>,
    /// The Observation Domain ID of the IPFIX messages, 0 to 4294967295.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub observation_domain: u32,
    /// UDP export: at most RATE messages per second (10000, 10000/s,
    /// 5000msg/s), or bytes per second (20MB/s, 8MiB/s), or unlimited.
    /// [default: 10000 messages/s, about 14 MB/s]
    #[arg(long, value_name = "RATE", value_parser = parse_rate, requires = "ipfix")]
    pub ipfix_rate: Option<Rate>,
    /// UDP export: the socket's send buffer (SO_SNDBUF; the kernel caps it
    /// at net.core.wmem_max). [default: the system's]
    #[arg(long, value_name = "BYTES", value_parser = crate::size::parse_size, requires = "ipfix")]
    pub ipfix_sndbuf: Option<u64>,
}

impl IpfixArgs {
    /// The pace of a UDP export.
    pub fn rate(&self) -> Rate {
        self.ipfix_rate.unwrap_or(Rate::Messages(DEFAULT_RATE))
    }
}

/// Where a collector listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// TCP rather than UDP.
    pub tcp: bool,
    /// `HOST:PORT` as given.
    pub addr: String,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = if self.tcp { "tcp" } else { "udp" };
        write!(f, "{scheme}://{}", self.addr)
    }
}

/// Parses `udp://HOST:PORT` or `tcp://HOST:PORT` (an IPv6 host in
/// brackets: `udp://[::1]:4739`).
pub fn parse_target(s: &str) -> Result<Target, String> {
    let t = s.trim();
    let (tcp, rest) = if let Some(r) = t.strip_prefix("udp://") {
        (false, r)
    } else if let Some(r) = t.strip_prefix("tcp://") {
        (true, r)
    } else {
        return Err(format!(
            "{s:?}: expected udp://HOST:PORT or tcp://HOST:PORT (e.g. udp://127.0.0.1:4739)"
        ));
    };
    let Some((host, port)) = rest.rsplit_once(':') else {
        return Err(format!("{s:?}: no port (e.g. udp://127.0.0.1:4739)"));
    };
    if host.is_empty() || host == "[]" {
        return Err(format!("{s:?}: no host"));
    }
    if host.contains(':') && !(host.starts_with('[') && host.ends_with(']')) {
        return Err(format!(
            "{s:?}: an IPv6 address goes in brackets (udp://[::1]:4739)"
        ));
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 => {}
        _ => return Err(format!("{s:?}: {port:?} is not a port (1 to 65535)")),
    }
    Ok(Target {
        tcp,
        addr: rest.to_string(),
    })
}

/// A UDP export's pace.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Rate {
    /// Messages per second.
    Messages(f64),
    /// Bytes (of IPFIX messages) per second.
    Bytes(f64),
    /// As fast as the socket takes them.
    Unlimited,
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rate::Messages(n) => write!(f, "{n} msg/s"),
            Rate::Bytes(n) => write!(f, "{} B/s", *n as u64),
            Rate::Unlimited => f.write_str("unlimited"),
        }
    }
}

/// Parses a pace: `10000`, `10000/s`, `5000msg/s` (messages per second),
/// `20MB/s`, `8MiB/s`, `500kB/s` (bytes per second, units as sizes), or
/// `unlimited`.
pub fn parse_rate(s: &str) -> Result<Rate, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("unlimited") {
        return Ok(Rate::Unlimited);
    }
    let body = t.strip_suffix("/s").unwrap_or(t).trim();
    let bad = || {
        format!("{s:?}: expected messages per second (10000, 5000msg/s), bytes per second (20MB/s) or unlimited")
    };
    let (n, messages) = if let Some(m) = body.strip_suffix("msg") {
        (m.trim().parse::<f64>().map_err(|_| bad())?, true)
    } else if let Ok(n) = body.parse::<f64>() {
        (n, true)
    } else if t.ends_with("/s") {
        (
            crate::size::parse_size(body).map_err(|_| bad())? as f64,
            false,
        )
    } else {
        return Err(bad());
    };
    if !(1.0..=1e12).contains(&n) {
        return Err(format!(
            "{s:?}: the rate must be from 1 to 10^12 per second"
        ));
    }
    Ok(if messages {
        Rate::Messages(n)
    } else {
        Rate::Bytes(n)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        let t = parse_target("udp://127.0.0.1:4739").expect("parses");
        assert_eq!((t.tcp, t.addr.as_str()), (false, "127.0.0.1:4739"));
        assert_eq!(t.to_string(), "udp://127.0.0.1:4739");
        let t = parse_target("tcp://[::1]:9995").expect("parses");
        assert!(t.tcp);
        assert!(parse_target("tcp://collector.example:4739").is_ok());
        for bad in [
            "127.0.0.1:4739",
            "sctp://h:1",
            "udp://h",
            "udp://:4739",
            "udp://h:0",
            "udp://h:70000",
            "udp://::1:4739",
        ] {
            assert!(parse_target(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("10000"), Ok(Rate::Messages(10000.0)));
        assert_eq!(parse_rate("2500/s"), Ok(Rate::Messages(2500.0)));
        assert_eq!(parse_rate("5000msg/s"), Ok(Rate::Messages(5000.0)));
        assert_eq!(parse_rate("20MB/s"), Ok(Rate::Bytes(20e6)));
        assert_eq!(parse_rate("1MiB/s"), Ok(Rate::Bytes(1048576.0)));
        assert_eq!(parse_rate("unlimited"), Ok(Rate::Unlimited));
        for bad in ["", "0", "-5", "fast", "20MB", "NaN", "1e13"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
    }
}
