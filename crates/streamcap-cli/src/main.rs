//! `streamcap`: flow records and reassembled streams from capture files.

mod handler;
mod output;
mod record;
mod size;
mod tcpflow;
mod zeek;

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use handler::{CliHandler, Failure, SharedFailure};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use output::{Format, RecordWriter};
use std::cell::RefCell;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;
use std::time::Instant;
use streamcap::capture::{Progress, RunHooks, Verdict};
use streamcap::decode::DecodeError;
use streamcap::deliver::EndReason;
use streamcap::filter::{Filter, FilterError};
use streamcap::stats::ProtoClass;
use streamcap::{
    Capture, Config, FileSource, GlobalStats, OverlapPolicy, RawPacket, ReassemblyMode,
};

const EXAMPLES: &str = "\
Examples:
  streamcap flows -r trace.pcap                        one JSON record per connection
  streamcap flows -r trace.pcap --digest port 80       plus SHA-256 of each direction's stream
  streamcap flows -r trace.pcap --format zeek -o conn.log
  streamcap flows -r trace.pcap --format csv tcp and host 10.0.0.1
  streamcap streams -r trace.pcap -w out/              tcpflow-style stream files + out/streams.jsonl
  streamcap streams -r trace.pcap --cutoff 1MiB -q     reassemble, deliver, print records only
  streamcap completions bash > ~/.local/share/bash-completion/completions/streamcap

Exit status: 0 ok, 1 input error (the records before it are still printed), 2 usage error.";

const FLOWS_EXAMPLES: &str = "\
Examples:
  streamcap flows -r trace.pcap
  streamcap flows -r trace.pcap --digest 'tcp port 80'
  streamcap flows -r trace.pcapng --format zeek -o conn.log -q
  streamcap flows -r trace.pcap -c 10000 --timeout 30 udp";

const STREAMS_EXAMPLES: &str = "\
Examples:
  streamcap streams -r trace.pcap -w out/               files named like tcpflow's
  streamcap streams -r trace.pcap -w out/ --cutoff 64KiB port 80
  streamcap streams -r trace.pcap --chunk 64KiB -q      benchmark: deliver every stream, no files";

/// Flow records and reassembled TCP/UDP streams from pcap and pcapng files.
#[derive(Parser)]
#[command(name = "streamcap", version, after_help = EXAMPLES)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// One record per connection, emitted when it ends (FIN/RST, timeout, end of input).
    ///
    /// Statistics only by default (cutoff 0: no payload is copied); --digest
    /// adds the SHA-256 of each direction's reassembled stream.
    #[command(after_help = FLOWS_EXAMPLES)]
    Flows(FlowsArgs),
    /// Reassemble every stream; with -w write each direction to its own file.
    ///
    /// Files are named like tcpflow's (SRCIP.SRCPORT-DSTIP.DSTPORT) and
    /// DIR/streams.jsonl gets one record per connection with the file names.
    /// Without -w the chunks go to a no-op consumer and only the records are
    /// printed (pure stream-delivery benchmark).
    #[command(after_help = STREAMS_EXAMPLES)]
    Streams(StreamsArgs),
    /// Print a shell completion script.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Generate the project's sample capture and print its flow records.
    ///
    /// The sample (about 40 flows: HTTP, TLS, SSH, SMTP, DNS, IPv6, VLAN,
    /// reordering, loss, a conflicting overlap, fragments) is made by the
    /// deterministic generator in streamcap-gen; the same capture ships as
    /// samples/sample.pcap.
    Demo {
        /// Where to write the sample (default: a file in the temporary directory).
        #[arg(short = 'w', long = "write", value_name = "FILE")]
        out: Option<PathBuf>,
    },
}

#[derive(Args)]
struct FlowsArgs {
    /// Add the SHA-256 of each direction's delivered stream (cutoff then defaults to unlimited).
    #[arg(long)]
    digest: bool,
    #[command(flatten)]
    common: Common,
}

#[derive(Args)]
struct StreamsArgs {
    /// Write each direction's bytes to DIR (created if missing).
    #[arg(short = 'w', long = "write", value_name = "DIR")]
    dir: Option<PathBuf>,
    #[command(flatten)]
    common: Common,
}

#[derive(Copy, Clone, ValueEnum)]
enum ModeArg {
    /// Best effort; picks up connections mid-stream.
    Fast,
    /// Evasion-safe; only connections with a handshake.
    Strict,
}

#[derive(Copy, Clone, ValueEnum)]
enum PolicyArg {
    First,
    Last,
    Linux,
    Bsd,
    Windows,
    Solaris,
}

/// A size or `unlimited`.
#[derive(Copy, Clone, Debug)]
struct Limit(Option<u64>);

fn parse_limit(s: &str) -> Result<Limit, String> {
    size::parse_limit(s).map(Limit)
}

#[derive(Args)]
struct Common {
    /// The capture file (pcap or pcapng).
    #[arg(short = 'r', long = "read", value_name = "FILE")]
    read: PathBuf,
    /// TCP reassembly mode.
    #[arg(long, value_enum, default_value = "fast")]
    mode: ModeArg,
    /// Overlap policy for conflicting retransmissions.
    #[arg(long, value_enum, default_value = "bsd")]
    policy: PolicyArg,
    /// Bytes delivered per stream (e.g. 0, 512, 10KiB, 1MB, 1M, unlimited).
    #[arg(long, value_name = "BYTES", value_parser = parse_limit)]
    cutoff: Option<Limit>,
    /// Cutoff for the initiator's direction.
    #[arg(long, value_name = "BYTES", value_parser = parse_limit)]
    cutoff_orig: Option<Limit>,
    /// Cutoff for the responder's direction.
    #[arg(long, value_name = "BYTES", value_parser = parse_limit)]
    cutoff_resp: Option<Limit>,
    /// Chunk size (bytes per data event).
    #[arg(long, value_name = "BYTES", value_parser = size::parse_size)]
    chunk: Option<u64>,
    /// Inactivity timeout of every flow, seconds of capture time.
    #[arg(long, value_name = "SECS")]
    timeout: Option<f64>,
    /// Memory for stream data.
    #[arg(long, value_name = "BYTES", value_parser = size::parse_size)]
    memory: Option<u64>,
    /// Stop after COUNT packets that pass the filter (as tcpdump's -c).
    #[arg(short = 'c', long = "count", value_name = "COUNT")]
    count: Option<u64>,
    /// Worker threads (only 1 for now).
    #[arg(long, value_name = "N", default_value_t = 1)]
    workers: u32,
    /// Write the records to PATH instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "PATH")]
    output: Option<PathBuf>,
    /// Record format.
    #[arg(long, value_enum, default_value = "json")]
    format: Format,
    /// No progress bar, no summary.
    #[arg(short = 'q', long)]
    quiet: bool,
    /// A tcpdump-syntax filter, e.g. `tcp port 80 and host 10.0.0.1`.
    #[arg(value_name = "FILTER")]
    filter: Vec<String>,
}

fn main() -> ExitCode {
    dispatch(Cli::parse().cmd)
}

fn dispatch(cmd: Cmd) -> ExitCode {
    match cmd {
        Cmd::Completions { shell } => {
            let mut cmd = Cli::command();
            clap_complete::generate(shell, &mut cmd, "streamcap", &mut io::stdout());
            ExitCode::SUCCESS
        }
        Cmd::Demo { out } => {
            let path = out.unwrap_or_else(|| std::env::temp_dir().join("streamcap-sample.pcap"));
            let bytes = streamcap_gen::sample(streamcap_gen::SAMPLE_DEFAULT_SEED).to_pcap_bytes();
            if let Err(e) = std::fs::write(&path, bytes) {
                eprintln!("streamcap: cannot write {}: {e}", path.display());
                return ExitCode::from(1);
            }
            eprintln!("streamcap: generated sample capture {}", path.display());
            let args = [
                "streamcap".as_ref(),
                "flows".as_ref(),
                "--digest".as_ref(),
                "-r".as_ref(),
                path.as_os_str(),
            ];
            match Cli::try_parse_from(args) {
                Ok(cli) => dispatch(cli.cmd),
                Err(e) => usage(e),
            }
        }
        Cmd::Flows(a) => run(a.common, a.digest, None, false),
        Cmd::Streams(a) => run(a.common, false, a.dir, true),
    }
}

fn usage(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("streamcap: {msg}");
    ExitCode::from(2)
}

/// Hooks of the run: the filter, the stop flag, the progress bar.
struct Hooks {
    filter: Option<Filter>,
    failure: SharedFailure,
    bar: Option<ProgressBar>,
    start: Instant,
}

impl RunHooks for Hooks {
    fn inspect(&mut self, pkt: &RawPacket<'_>) -> Verdict {
        if self.failure.borrow().error.is_some() {
            return Verdict::Stop;
        }
        match self.filter.as_mut() {
            Some(f) => f.inspect(pkt),
            None => Verdict::Process,
        }
    }

    fn progress(&mut self, p: &Progress) {
        let Some(bar) = &self.bar else { return };
        if p.done {
            bar.finish_and_clear();
            return;
        }
        if let Some((pos, _)) = p.position {
            bar.set_position(pos);
        }
        let secs = self.start.elapsed().as_secs_f64().max(1e-9);
        bar.set_message(format!(
            "{:.0} pkt/s  {:.2} Gbit/s",
            p.packets_read as f64 / secs,
            p.wire_bytes as f64 * 8.0 / secs / 1e9
        ));
    }

    fn progress_every(&self) -> u64 {
        if self.bar.is_some() {
            16_384
        } else {
            u64::MAX
        }
    }
}

fn open_output(path: Option<&Path>) -> io::Result<Box<dyn Write>> {
    Ok(match path {
        Some(p) if p != Path::new("-") => Box::new(io::BufWriter::with_capacity(
            1 << 16,
            std::fs::File::create(p)?,
        )),
        _ => Box::new(io::BufWriter::with_capacity(1 << 16, io::stdout())),
    })
}

fn run(c: Common, digest: bool, dir: Option<PathBuf>, streams: bool) -> ExitCode {
    if c.workers != 1 {
        return usage(format!(
            "--workers {}: multi-core processing is not built yet; only --workers 1 is supported",
            c.workers
        ));
    }
    if let Some(t) = c.timeout {
        if !t.is_finite() || t < 0.0 {
            return usage(format!("--timeout {t}: expected a number of seconds >= 0"));
        }
    }
    if c.chunk == Some(0) {
        return usage("--chunk 0: the chunk size must be at least 1 byte");
    }
    // The filter is checked before any packet is read.
    let filter = if c.filter.is_empty() {
        None
    } else {
        let expr = c.filter.join(" ");
        match Filter::new(&expr) {
            Ok(f) => Some(f),
            Err(FilterError::Unavailable(e)) => {
                return usage(format!(
                    "a filter was given but libpcap could not be loaded; install libpcap0.8 to use filters ({e})"
                ))
            }
            Err(FilterError::Compile { expr, message, .. }) => {
                return usage(format!("invalid filter {expr:?}: {message}"))
            }
            Err(e) => return usage(e),
        }
    };

    let default_cutoff = if digest || streams { None } else { Some(0) };
    let mut cfg = Config {
        mode: match c.mode {
            ModeArg::Fast => ReassemblyMode::Fast,
            ModeArg::Strict => ReassemblyMode::Strict,
        },
        policy: match c.policy {
            PolicyArg::First => OverlapPolicy::First,
            PolicyArg::Last => OverlapPolicy::Last,
            PolicyArg::Linux => OverlapPolicy::Linux,
            PolicyArg::Bsd => OverlapPolicy::Bsd,
            PolicyArg::Windows => OverlapPolicy::Windows,
            PolicyArg::Solaris => OverlapPolicy::Solaris,
        },
        cutoff: c.cutoff.map_or(default_cutoff, |l| l.0),
        cutoff_orig: c.cutoff_orig.map(|l| l.0.unwrap_or(u64::MAX)),
        cutoff_resp: c.cutoff_resp.map(|l| l.0.unwrap_or(u64::MAX)),
        // No output format carries callback processing time.
        measure_processing_time: false,
        ..Config::default()
    };
    if let Some(chunk) = c.chunk {
        cfg.chunk_size = usize::try_from(chunk).unwrap_or(usize::MAX).max(1);
    }
    if let Some(m) = c.memory {
        cfg.memory_size = usize::try_from(m).unwrap_or(usize::MAX);
    }
    let mut builder = Capture::builder().config(cfg);
    if let Some(t) = c.timeout {
        builder = builder.inactivity_timeout(t);
    }
    if let Some(n) = c.count {
        builder = builder.max_packets(n);
    }
    let capture = builder.build();

    // Outputs.
    let out = match open_output(c.output.as_deref()) {
        Ok(o) => o,
        Err(e) => {
            let p = c.output.as_deref().unwrap_or(Path::new("-"));
            return usage(format!("{}: cannot create: {e}", p.display()));
        }
    };
    let out_name = c
        .output
        .as_ref()
        .map_or_else(|| "stdout".to_string(), |p| p.display().to_string());
    let files = dir.is_some();
    let writer = RecordWriter::new(out, c.format, files);
    let dir_part = match dir {
        Some(d) => {
            if let Err(e) = std::fs::create_dir_all(&d) {
                return usage(format!("{}: cannot create the directory: {e}", d.display()));
            }
            let jl = d.join("streams.jsonl");
            match std::fs::File::create(&jl) {
                Ok(f) => Some((
                    d,
                    RecordWriter::new(Box::new(io::BufWriter::new(f)), Format::Json, true),
                )),
                Err(e) => return usage(format!("{}: cannot create: {e}", jl.display())),
            }
        }
        None => None,
    };

    // Input.
    let size = std::fs::metadata(&c.read).map(|m| m.len()).unwrap_or(0);
    let mut src = match FileSource::open(&c.read) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("streamcap: {e}");
            return ExitCode::from(1);
        }
    };
    let failure: SharedFailure = Rc::new(RefCell::new(Failure::default()));
    let handler = CliHandler::new(writer, out_name, digest, dir_part, failure.clone());
    let bar = (!c.quiet && size > 50_000_000 && io::stderr().is_terminal()).then(|| {
        let bar = ProgressBar::with_draw_target(Some(size), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template(
            "{bar:40.cyan/blue} {percent:>3}% {bytes}/{total_bytes}  {msg}  eta {eta}",
        ) {
            bar.set_style(style);
        }
        bar
    });
    let mut hooks = Hooks {
        filter,
        failure: failure.clone(),
        bar,
        start: Instant::now(),
    };
    let t0 = Instant::now();
    let report = capture.run_with(&mut src, handler, &mut hooks);
    let wall = t0.elapsed().as_secs_f64();
    let mut h = report.handler;
    h.finish();

    let fail = failure.borrow_mut().error.take();
    if let Some((what, e)) = fail {
        if e.kind() == io::ErrorKind::BrokenPipe {
            return ExitCode::SUCCESS;
        }
        eprintln!("streamcap: {what}: write error: {e}");
        return ExitCode::from(1);
    }
    let filter_error = hooks.filter.as_mut().and_then(Filter::take_error);
    if !c.quiet {
        summary(
            &c.read,
            &report.stats,
            report.packets_read,
            hooks.filter.as_ref(),
            &h,
            wall,
        );
    }
    if let Some(e) = filter_error {
        return usage(e);
    }
    if let Some(e) = report.error {
        eprintln!("streamcap: {e}");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

fn human(n: f64) -> String {
    if n >= 1e9 {
        format!("{:.2} G", n / 1e9)
    } else if n >= 1e6 {
        format!("{:.2} M", n / 1e6)
    } else if n >= 1e3 {
        format!("{:.1} k", n / 1e3)
    } else {
        format!("{n:.0} ")
    }
}

fn summary(
    file: &Path,
    s: &GlobalStats,
    read: u64,
    filter: Option<&Filter>,
    h: &CliHandler,
    wall: f64,
) {
    let mut e = io::stderr().lock();
    let secs = wall.max(1e-9);
    let _ = writeln!(e, "streamcap: {}", file.display());
    let mut pk = format!("{read} read");
    if let Some(f) = filter {
        pk.push_str(&format!(", {} matched {:?}", f.accepted, f.expr()));
    }
    pk.push_str(&format!(
        ", {} IP, {} truncated",
        s.ip_packets, s.truncated_packets
    ));
    let _ = writeln!(e, "  packets      {pk}");
    let _ = writeln!(
        e,
        "  bytes        {}B on the wire (processed packets)",
        human(s.wire_bytes as f64)
    );
    let flows: u64 = s.flows_created.iter().sum();
    let by_proto: Vec<String> = ProtoClass::ALL
        .iter()
        .map(|p| format!("{} {}", p.name(), s.created(*p)))
        .collect();
    let ended: Vec<String> = [
        EndReason::Fin,
        EndReason::Rst,
        EndReason::Timeout,
        EndReason::Eof,
        EndReason::Evicted,
    ]
    .iter()
    .map(|r| format!("{} {}", r.name(), s.ended(*r)))
    .collect();
    let _ = writeln!(
        e,
        "  flows        {flows} ({}); ended: {}",
        by_proto.join(", "),
        ended.join(", ")
    );
    let t = &s.totals;
    let _ = writeln!(
        e,
        "  streams      {}: {} stream bytes = captured {} + discarded {} + dropped {} + missing {}",
        s.streams, t.stream_bytes, t.captured, t.discarded, t.dropped, t.missing
    );
    let _ = writeln!(
        e,
        "  memory       stream data peak {}B of the {}B budget, {} refusals (budget full)",
        human(s.memory_peak as f64),
        human(s.memory_limit as f64),
        s.memory_refusals
    );
    if h.files > 0 {
        let _ = writeln!(
            e,
            "  files        {} written, {} bytes",
            h.files, h.file_bytes
        );
    }
    let errs: Vec<String> = DecodeError::ALL
        .iter()
        .filter(|k| s.decode_error(**k) > 0)
        .map(|k| format!("{} {}", k.name(), s.decode_error(*k)))
        .collect();
    let _ = writeln!(
        e,
        "  decode       {}",
        if errs.is_empty() {
            "no errors".to_string()
        } else {
            errs.join(", ")
        }
    );
    let _ = writeln!(
        e,
        "  time         {wall:.3} s, {}pkt/s, {:.3} Gbit/s",
        human(read as f64 / secs),
        s.wire_bytes as f64 * 8.0 / secs / 1e9
    );
}
