//! `streamcap-gen`: command-line front end of the generator.
//!
//! ```text
//! streamcap-gen sample -o samples/sample.pcap [--truth samples/sample.truth.jsonl] [--seed N]
//! streamcap-gen campus -o FILE.pcap [--truth FILE.jsonl] [--packets N] [--seed N] ...
//! streamcap-gen attack --profile NAME -o FILE.pcap [--packets N] [--seed N]
//! streamcap-gen nids -o FILE.pcap [--truth FILE.jsonl] [--rules FILE.rules] [options]
//! streamcap-gen apps -o FILE.pcap [--truth FILE.jsonl] [--seed N] [--flows N] [--nonstandard F]
//! streamcap-gen http -o FILE.pcap [--truth FILE.jsonl] [--seed N] [--connections N]
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use streamcap_gen::apps::{self, AppsConfig};
use streamcap_gen::attack::{generate_file, Profile};
use streamcap_gen::campus::timed;
use streamcap_gen::http::{self, HttpConfig};
use streamcap_gen::nids::{generate, NidsConfig};
use streamcap_gen::{sample, Campus, CampusConfig, SAMPLE_DEFAULT_SEED};

const USAGE: &str = "\
usage: streamcap-gen sample -o FILE.pcap [--truth FILE.jsonl] [--seed N]
       streamcap-gen campus -o FILE.pcap [--truth FILE.jsonl] [options]
       streamcap-gen attack --profile NAME -o FILE.pcap [--packets N] [--seed N]
       streamcap-gen nids -o FILE.pcap [--truth FILE.jsonl] [--rules FILE.rules] [options]
       streamcap-gen apps -o FILE.pcap [--truth FILE.jsonl] [options]
       streamcap-gen http -o FILE.pcap [--truth FILE.jsonl] [options]

sample: writes the deterministic sample capture (about 40 mixed flows) and,
optionally, its ground truth as JSON lines. The same seed always produces
byte-identical files (default seed: 1).

campus: streams a university access-link trace (heavy-tailed flows, about
95 % TCP, HTTP/TLS/SSH/SMTP/FTP/DNS payloads) in constant memory, with one
truth line per flow. Options (defaults in brackets):
  --packets N        pcap records to write [2000000]
  --seed N           seed [1]
  --gbps X           link rate spacing the timestamps [10]
  --concurrency N    concurrently open flows [5000]
  --small-packets    MSS 64 (packet-rate stress)
  --elephants N      elephant flows kept open [4]
  --reorder F        per data segment probability [0]
  --dup F            per data packet probability [0]
  --loss F           per data packet probability [0]
  --conflict F       conflicting overlapping retransmission, per segment [0]
  --fragment F       IPv4 packets sent as two fragments [0]
  --ipv6 F           fraction of IPv6 flows [0.1]
  --vlan F           fraction of VLAN-tagged flows [0.05]
  --signature STR    pattern to plant (repeatable; replaces the defaults)
  --signature-rate F fraction of flows with one planted pattern [0.02]

attack: an adversarial capture (Ethernet, IPv4) of N packets [100000],
deterministic from the seed [1]. Profiles (`--profile list` describes them):
  syn-flood, hash-collision, tiny-segments, ooo-flood, overlap-storm,
  fragment-flood, seq-abuse, endless-streams, normal (campus baseline)

nids: traffic for testing a NIDS: HTTP, SMTP, FTP, TLS, SSH, DNS and other
TCP/UDP flows with signatures planted in URIs, headers, bodies, FTP
arguments, DNS labels, TLS SNI and opaque payloads (about half of the TCP
ones across a segment boundary). --truth writes one JSON line per planted
occurrence (flow, direction, signature, sid, stream offset, boundary,
presence under overlap policies first and last); --rules writes one
`alert tcp|udp any any -> any any` content rule per signature (sid 1000001
up). Options (defaults in brackets):
  --seed N           seed [1]
  --flows N          flows [400]
  --reorder F        fraction of TCP flows with reordered segments [0.25]
  --conflict F       fraction of TCP flows with conflicting overlapping
                     retransmissions over their signatures [0.2]
  --midstream F      fraction of TCP flows whose handshake precedes the
                     capture [0.15]
  --ipv6 F           fraction of IPv6 flows [0.2]
  --clean F          fraction of flows without signature [0.15]

apps: labelled traffic for an L7 classifier: HTTP, TLS, SSH, DNS, SMTP, FTP,
IMAP, POP3, QUIC, SMB, RDP, SIP, NTP, DHCP, BitTorrent, MQTT, Redis,
PostgreSQL, MySQL and `unknown` flows (random bytes, text of no protocol),
each with its first messages both ways; part of them on non-standard server
ports. --truth writes one JSON line per flow (5-tuple, label, standard port
or not, SNI/ALPN, SSH banners, DNS query, HTTP host). Options:
  --seed N           seed [1]
  --flows N          flows [600]
  --nonstandard F    fraction of labelled flows on a non-standard port [0.3]
  --ipv6 F           fraction of IPv6 flows [0.1]

http: HTTP/1.x connections (persistent, pipelined, chunked with extensions
and trailers, close-delimited, 1xx, HEAD/204/304, request bodies,
unanswered requests, heads cut at awkward places). --truth writes one JSON
line per transaction, after Zeek's http.log. Options:
  --seed N           seed [1]
  --connections N    connections [200]
  --reorder F        fraction of connections with reordered segments [0.1]
  --ipv6 F           fraction of IPv6 connections [0.1]";

enum Cmd {
    Sample,
    Campus(CampusConfig),
}

struct Args {
    cmd: Cmd,
    out: PathBuf,
    truth: Option<PathBuf>,
    seed: u64,
}

fn parse(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
    let campus = match it.next().as_deref() {
        Some("sample") => false,
        Some("campus") => true,
        Some("-h" | "--help") | None => return Err(String::new()),
        Some(other) => return Err(format!("unknown command `{other}`")),
    };
    let mut out = None;
    let mut truth = None;
    let mut seed = SAMPLE_DEFAULT_SEED;
    let mut c = CampusConfig::default();
    let mut sigs: Vec<Vec<u8>> = Vec::new();
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        fn num<T: std::str::FromStr>(name: &str, v: String) -> Result<T, String> {
            v.parse()
                .map_err(|_| format!("invalid value `{v}` for {name}"))
        }
        let only_campus = |name: &str| {
            if campus {
                Ok(())
            } else {
                Err(format!("{name} is a campus option"))
            }
        };
        match a.as_str() {
            "-o" | "--output" => out = Some(PathBuf::from(value("-o")?)),
            "--truth" => truth = Some(PathBuf::from(value("--truth")?)),
            "--seed" => {
                let v = value("--seed")?;
                seed = v.parse().map_err(|_| format!("invalid seed `{v}`"))?;
            }
            "-h" | "--help" => return Err(String::new()),
            "--small-packets" => {
                only_campus(&a)?;
                c.small_packets = true;
            }
            name @ ("--packets" | "--gbps" | "--concurrency" | "--elephants" | "--reorder"
            | "--loss" | "--dup" | "--conflict" | "--fragment" | "--ipv6" | "--vlan"
            | "--signature" | "--signature-rate") => {
                only_campus(name)?;
                let v = value(name)?;
                match name {
                    "--packets" => c.packets = num(name, v)?,
                    "--gbps" => c.link_gbps = num(name, v)?,
                    "--concurrency" => c.concurrency = num(name, v)?,
                    "--elephants" => c.elephants = num(name, v)?,
                    "--reorder" => c.reorder = num(name, v)?,
                    "--loss" => c.loss = num(name, v)?,
                    "--dup" => c.duplicate = num(name, v)?,
                    "--conflict" => c.conflict = num(name, v)?,
                    "--fragment" => c.fragment = num(name, v)?,
                    "--ipv6" => c.ipv6 = num(name, v)?,
                    "--vlan" => c.vlan = num(name, v)?,
                    "--signature-rate" => c.signature_rate = num(name, v)?,
                    _ => sigs.push(v.into_bytes()),
                }
            }
            other => return Err(format!("unexpected argument `{other}`")),
        }
    }
    let out = out.ok_or("missing -o FILE")?;
    if c.link_gbps.is_nan() || c.link_gbps <= 0.0 {
        return Err("--gbps must be positive".into());
    }
    let cmd = if campus {
        c.seed = seed;
        if !sigs.is_empty() {
            c.signatures = sigs;
        }
        Cmd::Campus(c)
    } else {
        Cmd::Sample
    };
    Ok(Args {
        cmd,
        out,
        truth,
        seed,
    })
}

/// `streamcap-gen attack ...`.
fn run_attack(mut it: impl Iterator<Item = String>) -> ExitCode {
    let mut profile = None;
    let mut out = None;
    let mut packets = 100_000u64;
    let mut seed = 1u64;
    let res: Result<(), String> = (|| {
        while let Some(a) = it.next() {
            let mut value = || it.next().ok_or_else(|| format!("{a} needs a value"));
            match a.as_str() {
                "--profile" => profile = Some(value()?),
                "-o" | "--output" => out = Some(PathBuf::from(value()?)),
                "--packets" => {
                    let v = value()?;
                    packets = v.parse().map_err(|_| format!("invalid --packets `{v}`"))?;
                }
                "--seed" => {
                    let v = value()?;
                    seed = v.parse().map_err(|_| format!("invalid seed `{v}`"))?;
                }
                other => return Err(format!("unexpected argument `{other}`")),
            }
        }
        Ok(())
    })();
    if let Err(e) = res {
        eprintln!("error: {e}\n\n{USAGE}");
        return ExitCode::from(2);
    }
    let Some(name) = profile else {
        eprintln!("error: missing --profile NAME\n\n{USAGE}");
        return ExitCode::from(2);
    };
    if name == "list" {
        for p in Profile::ALL {
            println!("{:<16} {}", p.name(), p.description());
        }
        return ExitCode::SUCCESS;
    }
    let p: Profile = match name.parse() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let Some(out) = out else {
        eprintln!("error: missing -o FILE\n\n{USAGE}");
        return ExitCode::from(2);
    };
    match generate_file(p, packets, seed, &out) {
        Ok(st) => {
            eprintln!(
                "wrote {} ({p}, seed {seed}): {} packets, {} flows, {:.1} MB; {}",
                out.display(),
                st.packets,
                st.flows,
                st.pcap_bytes as f64 / 1e6,
                p.description()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: writing {}: {e}", out.display());
            ExitCode::FAILURE
        }
    }
}

/// `streamcap-gen nids ...`.
fn run_nids(mut it: impl Iterator<Item = String>) -> ExitCode {
    let mut c = NidsConfig::default();
    let mut out = None;
    let mut truth = None;
    let mut rules = None;
    let res: Result<(), String> = (|| {
        fn num<T: std::str::FromStr>(name: &str, v: String) -> Result<T, String> {
            v.parse()
                .map_err(|_| format!("invalid value `{v}` for {name}"))
        }
        fn fraction(name: &str, v: String) -> Result<f64, String> {
            let f: f64 = num(name, v)?;
            if (0.0..=1.0).contains(&f) {
                Ok(f)
            } else {
                Err(format!("{name} must be between 0 and 1"))
            }
        }
        while let Some(a) = it.next() {
            let mut value = || it.next().ok_or_else(|| format!("{a} needs a value"));
            match a.as_str() {
                "-o" | "--output" => out = Some(PathBuf::from(value()?)),
                "--truth" => truth = Some(PathBuf::from(value()?)),
                "--rules" => rules = Some(PathBuf::from(value()?)),
                "--seed" => c.seed = num(&a, value()?)?,
                "--flows" => c.flows = num(&a, value()?)?,
                "--reorder" => c.reorder = fraction(&a, value()?)?,
                "--conflict" => c.conflict = fraction(&a, value()?)?,
                "--midstream" => c.midstream = fraction(&a, value()?)?,
                "--ipv6" => c.ipv6 = fraction(&a, value()?)?,
                "--clean" => c.clean = fraction(&a, value()?)?,
                "-h" | "--help" => return Err(String::new()),
                other => return Err(format!("unexpected argument `{other}`")),
            }
        }
        Ok(())
    })();
    match res {
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("error: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
        Ok(()) => {}
    }
    let Some(out) = out else {
        eprintln!("error: missing -o FILE\n\n{USAGE}");
        return ExitCode::from(2);
    };
    let t = std::time::Instant::now();
    let trace = generate(&c);
    let secs = t.elapsed().as_secs_f64();
    if let Err(e) = trace.write_files(&out, truth.as_deref(), rules.as_deref()) {
        eprintln!("error: writing {}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    let st = trace.stats();
    let size = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "wrote {} (seed {}): {} flows ({} TCP, {} mid-stream, {} with signatures), {} packets, \
         {:.1} MB; generated in {secs:.2} s",
        out.display(),
        c.seed,
        st.flows,
        st.tcp_flows,
        st.midstream_flows,
        st.flows_with_signatures,
        st.packets,
        size as f64 / 1e6
    );
    eprintln!(
        "{} occurrences ({} TCP: {} across a segment boundary, {} reordered, {} with a \
         conflicting overlap), {} (flow, signature) pairs, {} rules",
        st.occurrences,
        st.tcp_occurrences,
        st.crossing,
        st.reordered,
        st.conflicts,
        st.pairs,
        trace.signatures.len()
    );
    ExitCode::SUCCESS
}

/// Options shared by `apps` and `http`: output files and named numbers.
struct Opts {
    out: Option<PathBuf>,
    truth: Option<PathBuf>,
    values: Vec<(String, String)>,
}

/// Parses `-o`, `--truth` and `--NAME VALUE` for the names in `allowed`.
/// `Ok(None)` means help was asked for.
fn parse_opts(
    mut it: impl Iterator<Item = String>,
    allowed: &[&str],
) -> Result<Option<Opts>, String> {
    let mut o = Opts {
        out: None,
        truth: None,
        values: Vec::new(),
    };
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "-o" | "--output" => o.out = Some(PathBuf::from(value()?)),
            "--truth" => o.truth = Some(PathBuf::from(value()?)),
            "-h" | "--help" => return Ok(None),
            name if allowed.contains(&name) => {
                let v = value()?;
                o.values.push((a.clone(), v));
            }
            other => return Err(format!("unexpected argument `{other}`")),
        }
    }
    Ok(Some(o))
}

fn num<T: std::str::FromStr>(name: &str, v: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| format!("invalid value `{v}` for {name}"))
}

fn fraction(name: &str, v: &str) -> Result<f64, String> {
    let f: f64 = num(name, v)?;
    if (0.0..=1.0).contains(&f) {
        Ok(f)
    } else {
        Err(format!("{name} must be between 0 and 1"))
    }
}

/// Parses the options of `apps` or `http`; on help or error, the exit code.
fn sub_opts(
    it: impl Iterator<Item = String>,
    allowed: &[&str],
    apply: &mut dyn FnMut(&str, &str) -> Result<(), String>,
) -> Result<(PathBuf, Option<PathBuf>), ExitCode> {
    let res = parse_opts(it, allowed).and_then(|o| {
        let Some(o) = o else { return Ok(None) };
        for (k, v) in &o.values {
            apply(k, v)?;
        }
        let out = o.out.ok_or("missing -o FILE")?;
        Ok(Some((out, o.truth)))
    });
    match res {
        Ok(Some(r)) => Ok(r),
        Ok(None) => {
            println!("{USAGE}");
            Err(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("error: {e}\n\n{USAGE}");
            Err(ExitCode::from(2))
        }
    }
}

/// `streamcap-gen apps ...`.
fn run_apps(it: impl Iterator<Item = String>) -> ExitCode {
    let mut c = AppsConfig::default();
    let (out, truth) = match sub_opts(
        it,
        &["--seed", "--flows", "--nonstandard", "--ipv6"],
        &mut |k, v| {
            match k {
                "--seed" => c.seed = num(k, v)?,
                "--flows" => c.flows = num(k, v)?,
                "--nonstandard" => c.nonstandard = fraction(k, v)?,
                _ => c.ipv6 = fraction(k, v)?,
            }
            Ok(())
        },
    ) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let t = std::time::Instant::now();
    let trace = apps::generate(&c);
    let secs = t.elapsed().as_secs_f64();
    if let Err(e) = trace.write_files(&out, truth.as_deref()) {
        eprintln!("error: writing {}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    let st = trace.stats();
    let size = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "wrote {} (seed {}): {} flows ({} TCP), {} packets, {:.2} MB; generated in {secs:.2} s",
        out.display(),
        c.seed,
        st.flows,
        st.tcp_flows,
        st.packets,
        size as f64 / 1e6
    );
    eprintln!(
        "{} labelled flows, {} ({:.1} %) on a non-standard port; {} flows where the port \
         misleads a port-based classifier",
        st.labelled,
        st.nonstandard,
        100.0 * st.nonstandard as f64 / st.labelled.max(1) as f64,
        st.port_misleading
    );
    let per: Vec<String> = st
        .per_label
        .iter()
        .map(|(l, n)| {
            let ns = st.nonstandard_per_label.get(l).copied().unwrap_or(0);
            format!("{l}:{n}/{ns}")
        })
        .collect();
    eprintln!("flows per label (all/non-standard): {}", per.join(" "));
    ExitCode::SUCCESS
}

/// `streamcap-gen http ...`.
fn run_http(it: impl Iterator<Item = String>) -> ExitCode {
    let mut c = HttpConfig::default();
    let (out, truth) = match sub_opts(
        it,
        &["--seed", "--connections", "--reorder", "--ipv6"],
        &mut |k, v| {
            match k {
                "--seed" => c.seed = num(k, v)?,
                "--connections" => c.connections = num(k, v)?,
                "--reorder" => c.reorder = fraction(k, v)?,
                _ => c.ipv6 = fraction(k, v)?,
            }
            Ok(())
        },
    ) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let t = std::time::Instant::now();
    let trace = http::generate(&c);
    let secs = t.elapsed().as_secs_f64();
    if let Err(e) = trace.write_files(&out, truth.as_deref()) {
        eprintln!("error: writing {}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    let st = trace.stats();
    let size = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "wrote {} (seed {}): {} connections ({} reordered), {} packets, {:.2} MB; generated in \
         {secs:.2} s",
        out.display(),
        c.seed,
        st.connections,
        st.reordered,
        st.packets,
        size as f64 / 1e6
    );
    eprintln!(
        "{} transactions: {} pipelined, {} chunked responses, {} chunked requests, {} \
         close-delimited, {} with 1xx, {} unanswered, {} HEAD, {} 204/304, {} request bodies; \
         heads over several segments: {} requests, {} responses",
        st.transactions,
        st.pipelined,
        st.chunked,
        st.request_chunked,
        st.close_delimited,
        st.informational,
        st.unanswered,
        st.head,
        st.no_content,
        st.request_bodies,
        st.split_request_heads,
        st.split_response_heads
    );
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let mut argv = std::env::args().skip(1).peekable();
    match argv.peek().map(String::as_str) {
        Some("apps") => {
            argv.next();
            return run_apps(argv);
        }
        Some("http") => {
            argv.next();
            return run_http(argv);
        }
        _ => {}
    }
    if argv.peek().map(String::as_str) == Some("attack") {
        argv.next();
        return run_attack(argv);
    }
    if argv.peek().map(String::as_str) == Some("nids") {
        argv.next();
        return run_nids(argv);
    }
    let args = match parse(argv) {
        Ok(a) => a,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("error: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if let Cmd::Campus(c) = &args.cmd {
        return run_campus(c, &args);
    }
    let cap = sample(args.seed);
    if let Err(e) = cap.write_files(&args.out, args.truth.as_deref()) {
        eprintln!("error: writing {}: {e}", args.out.display());
        return ExitCode::FAILURE;
    }
    let packets = cap.packets().len();
    eprintln!(
        "wrote {} ({} flows, {packets} packets, seed {})",
        args.out.display(),
        cap.flows().len(),
        args.seed
    );
    ExitCode::SUCCESS
}

fn run_campus(c: &CampusConfig, args: &Args) -> ExitCode {
    let campus = Campus::new(c.clone());
    let (st, secs) = match timed(|| campus.write_files(&args.out, args.truth.as_deref())) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: writing {}: {e}", args.out.display());
            return ExitCode::FAILURE;
        }
    };
    let mb = st.pcap_bytes as f64 / 1e6;
    eprintln!(
        "wrote {} (seed {}): {} packets, {:.1} MB pcap, {} flows ({} finished, {} open at end)",
        args.out.display(),
        c.seed,
        st.packets,
        mb,
        st.flows,
        st.flows_finished,
        st.flows_open
    );
    eprintln!(
        "mean IP packet {:.1} B; TCP {:.1} % of packets; elephants {:.1} % of packets; \
         {:.3} s of traffic at {} Gbit/s",
        st.mean_ip_packet(),
        100.0 * st.tcp_packets as f64 / st.packets.max(1) as f64,
        100.0 * st.elephant_packets as f64 / st.packets.max(1) as f64,
        st.duration_ns as f64 / 1e9,
        c.link_gbps
    );
    let d = st
        .size_decades
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(i, n)| format!("1e{i}:{n}"))
        .collect::<Vec<_>>()
        .join(" ");
    eprintln!("flows by stream bytes (decade: count): {d}");
    eprintln!(
        "generated in {secs:.2} s: {:.0} MB/s, {:.0} packets/s",
        mb / secs,
        st.packets as f64 / secs
    );
    ExitCode::SUCCESS
}
