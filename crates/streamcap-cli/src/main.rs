//! `streamcap`: flow records and reassembled streams from capture files and
//! live interfaces.

mod apps;
mod args;
mod community_id;
mod forward;
mod handler;
mod ipfix;
mod kafka;
mod limits;
mod live;
mod nids;
mod output;
mod parquet_out;
mod paths;
mod pump;
mod rate;
mod record;
mod replay;
mod run;
mod signals;
mod sink;
mod size;
mod stage;
mod stats_json;
mod tap;
mod tcpflow;
mod with;
mod xdp;
mod xsk;
mod zeek;

use args::CpuList;
use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use output::Format;
use run::usage;
use std::io;
use std::path::PathBuf;
use std::process::ExitCode;
// The JSON writer of the flow records (`record.rs`), as `crate::json` for the
// Python package, which includes `record.rs` and `json.rs` by path.
use streamcap_apps::json;

/// Blocks of 2 MiB and more (above all the flow table's slab of
/// connections) on transparent huge pages: 200,000 new connections of a SYN
/// flood take 6,400 page faults instead of 14,800 (see
/// `streamcap::huge_pages`).
#[global_allocator]
static ALLOC: streamcap::huge_pages::HugePageAlloc = streamcap::huge_pages::HugePageAlloc;

const EXAMPLES: &str = "\
Examples:
  streamcap flows -r trace.pcap                        one JSON record per connection
  streamcap flows -r trace.pcap --digest port 80       plus SHA-256 of each direction's stream
  streamcap flows -r trace.pcap --format zeek -o conn.log
  streamcap flows -r trace.pcap --format csv tcp and host 10.0.0.1
  streamcap flows -r trace.pcap --format parquet -o flows.parquet   typed columns for DuckDB, pandas
  zcat trace.pcap.gz | streamcap flows -r -            a capture on standard input
  streamcap streams -r trace.pcap -w out/              tcpflow-style stream files + out/streams.jsonl
  streamcap streams -r trace.pcap --cutoff 1MiB -q     reassemble, deliver, print records only
  streamcap streams -r trace.pcap --workers 2 -q       two worker threads, same records
  sudo streamcap flows -i eth0 --digest tcp            live; Ctrl-C flushes and prints the summary
  sudo streamcap flows -i eth0 --workers 2 --group 7   live, in kernel fan-out group 7
  streamcap completions bash > ~/.local/share/bash-completion/completions/streamcap

Exit status: 0 ok, 1 input error (the records before it are still printed), 2 usage error.";

const FLOWS_EXAMPLES: &str = "\
Examples:
  streamcap flows -r trace.pcap
  streamcap flows -r trace.pcap --digest 'tcp port 80'
  streamcap flows -r trace.pcapng --format zeek -o conn.log -q
  streamcap flows -r trace.pcap --app --format parquet -o flows.parquet
  streamcap flows -r trace.pcap -c 10000 --timeout 30 udp
  streamcap flows -r trace.pcap --kafka 127.0.0.1:9092 --topic flows -o flows.json   (build with --features kafka)";

const NIDS_EXAMPLES: &str = "\
Examples:
  streamcap nids -r trace.pcap --rules local.rules                 EVE JSON alerts on stdout
  streamcap nids -r trace.pcap -S a.rules -S b.rules -o eve.json
  streamcap nids -r trace.pcap --rules local.rules --format fast -q
  streamcap nids -r trace.pcap --rules web.rules --vars /etc/suricata/suricata.yaml 'tcp port 80'
  streamcap nids -r trace.pcap --rules web.rules --set 'HOME_NET=[10.0.0.0/8]' --cutoff 10KiB
  sudo streamcap nids -i eth0 --rules local.rules --workers 2";

const HTTP_EXAMPLES: &str = "\
Examples:
  streamcap http -r trace.pcap                       http.log as Zeek JSON lines on stdout
  streamcap http -r trace.pcap --format zeek -o http.log
  streamcap http -r trace.pcap --hash-bodies 'tcp port 8080'";

const RUN_EXAMPLES: &str = "\
Examples:
  streamcap run -r trace.pcap -w out --with flows --with app --with http --with dns --with tls
  streamcap run -r trace.pcap -w out --with flows,digest,cutoff=1MiB --with nids=local.rules,cutoff=10KiB
  streamcap run -r trace.pcap -w out --log-format zeek --with flows --with app --with http";

const STREAMS_EXAMPLES: &str = "\
Examples:
  streamcap streams -r trace.pcap -w out/               files named like tcpflow's
  streamcap streams -r trace.pcap -w out/ --cutoff 64KiB port 80
  streamcap streams -r trace.pcap --chunk 64KiB -q      benchmark: deliver every stream, no files
  streamcap streams -r trace.pcap --delivery segments -q   the same, segment by segment, no copy";

/// Flow records and reassembled TCP/UDP streams from pcap/pcapng files and live interfaces.
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
    /// Match Suricata/Snort content rules on the streams; alerts as EVE JSON or fast.log.
    ///
    /// TCP is matched as one stream per direction (patterns split across
    /// segments are found), UDP per datagram. Rules load from files in
    /// Suricata/Snort syntax (the content-signature subset: docs/nids.md);
    /// a rule with another keyword is rejected with its file, line and
    /// keyword, and the others load. Alerts go to -o (stdout without it),
    /// the summary with per-signature counts to stderr.
    #[command(after_help = NIDS_EXAMPLES)]
    Nids(nids::NidsArgs),
    /// HTTP/1.x transactions as Zeek's http.log (JSON or TSV), found by content on any port.
    ///
    /// Requests and responses are parsed with httparse, the head kept in
    /// one piece while it is incomplete (Scap's keep_chunk); persistent
    /// connections, pipelining, Content-Length, chunked and
    /// close-delimited bodies (counted, not copied), 1xx, HEAD, 204 and
    /// 304; requests left unanswered are written at the end. The `uid` is
    /// the conn.log uid of the same connection.
    #[command(after_help = HTTP_EXAMPLES)]
    Http(with::HttpArgs),
    /// Several applications in one pass: flows, app, http, dns, tls, nids.
    ///
    /// One capture, one reassembly: each stream is kept as long as any
    /// application still wants its bytes, and each application sees only
    /// the bytes it asked for (`,cutoff=BYTES`). Outputs go to -w DIR.
    #[command(after_help = RUN_EXAMPLES)]
    Run(with::RunArgs),
    /// Send the frames of a capture out of an interface, optionally at a fixed rate.
    Replay(replay::ReplayArgs),
    /// Forward the frames of one interface that pass a filter to another.
    ///
    /// `--via af_packet` (the default) captures on IN with a TPACKET_V3 ring,
    /// runs the filter on each frame and sends the accepted ones on OUT with
    /// sendmmsg(2); `--via devmap` runs the filter in an XDP program on IN and
    /// redirects the accepted frames through a devmap to OUT without a copy.
    /// Frames the filter rejects are dropped and counted (docs/forward.md).
    Forward(forward::ForwardArgs),
    /// Print the manual page (roff) of streamcap, or of one subcommand.
    ///
    /// `streamcap man > streamcap.1 && man ./streamcap.1`; `streamcap man
    /// flows` gives streamcap-flows(1).
    #[command(hide = true)]
    Man {
        /// A subcommand (flows, streams, replay, completions, demo).
        #[arg(value_name = "SUBCOMMAND")]
        page: Option<String>,
    },
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
        /// Where to write the sample, kept after the run (default: a private
        /// temporary file, removed at the end). A symlink is refused.
        #[arg(short = 'w', long = "write", value_name = "FILE")]
        out: Option<PathBuf>,
    },
}

#[derive(Args)]
struct FlowsArgs {
    /// Add the SHA-256 of each direction's delivered stream (cutoff then defaults to unlimited).
    #[arg(long)]
    digest: bool,
    /// Record format; parquet writes an Apache Parquet file of typed
    /// columns (row groups of 65,536 rows, zstd) and needs -o FILE.
    #[arg(long, value_enum, default_value = "json")]
    format: Format,
    /// Name each connection's application protocol from its first bytes
    /// (`"app"` in JSON, CSV and Parquet, `service` in conn.log; per-label totals in
    /// the summary): http, tls, ssh, dns, smtp, ftp, imap, pop3, quic, smb,
    /// rdp, sip, ntp, dhcp, bittorrent, mqtt, redis, postgresql, mysql or
    /// unknown. Only the first bytes of each direction are copied.
    #[arg(long)]
    app: bool,
    /// Report a connection still open SECS of capture time after its
    /// first packet, and every SECS after in which a packet of it came,
    /// with an interim record
    /// (`"end":"active"`, its counters so far; IPFIX: the counters since
    /// the previous report, flowEndReason 2), e.g. 60s, 10, 1.5s, 500ms,
    /// 2m. [default: off]
    #[arg(long, value_name = "SECS", value_parser = args::parse_timeout)]
    active_timeout: Option<u64>,
    #[command(flatten)]
    ipfix: ipfix::IpfixArgs,
    #[command(flatten)]
    kafka: kafka::KafkaArgs,
    #[command(flatten)]
    common: Common,
}

#[derive(Args)]
struct StreamsArgs {
    /// Write each direction's bytes to DIR (created if missing). A DIR that
    /// already holds files is refused unless --force or --append is given.
    #[arg(short = 'w', long = "write", value_name = "DIR")]
    dir: Option<PathBuf>,
    /// With -w: replace streamcap's files in DIR (streams.jsonl and the
    /// stream files of an earlier run; other files stay).
    #[arg(long, requires = "dir", conflicts_with = "append")]
    force: bool,
    /// With -w: add to what DIR holds (taken stream file names get tcpflow's
    /// c1, c2... suffix; records are appended to streams.jsonl).
    #[arg(long, requires = "dir")]
    append: bool,
    /// Record format; parquet writes an Apache Parquet file of typed
    /// columns and needs -o FILE.
    #[arg(long, value_enum, default_value = "json")]
    format: Format,
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

#[derive(Copy, Clone, ValueEnum)]
enum DeliveryArg {
    Chunks,
    Segments,
}

/// A size or `unlimited`.
#[derive(Copy, Clone, Debug)]
struct Limit(Option<u64>);

fn parse_limit(s: &str) -> Result<Limit, String> {
    size::parse_limit(s).map(Limit)
}

#[derive(Args)]
#[command(group(clap::ArgGroup::new("input").required(true).multiple(false)))]
struct Common {
    /// The capture file (pcap or pcapng); `-` reads standard input (one worker).
    #[arg(short = 'r', long = "read", value_name = "FILE", group = "input")]
    read: Option<PathBuf>,
    /// Capture live from a network interface (AF_PACKET; needs root or
    /// CAP_NET_RAW, and CAP_NET_ADMIN for promiscuous mode); `any` captures
    /// every interface (Linux cooked capture, no promiscuous mode).
    #[arg(short = 'i', long = "interface", value_name = "IFACE", group = "input")]
    interface: Option<String>,
    /// TCP reassembly mode.
    #[arg(long, value_enum, default_value = "fast")]
    mode: ModeArg,
    /// Overlap policy for conflicting retransmissions.
    #[arg(long, value_enum, default_value = "bsd")]
    policy: PolicyArg,
    /// Bytes delivered per stream (e.g. 0, 512, 10KiB, 1MB, 1M, unlimited).
    /// A cutoff limits what is delivered, not what is held in memory.
    /// [default: 0 for flows (statistics only); unlimited for flows --digest
    /// and streams]
    #[arg(long, value_name = "BYTES", value_parser = parse_limit)]
    cutoff: Option<Limit>,
    /// Cutoff for the initiator's direction. [default: --cutoff]
    #[arg(long, value_name = "BYTES", value_parser = parse_limit)]
    cutoff_orig: Option<Limit>,
    /// Cutoff for the responder's direction. [default: --cutoff]
    #[arg(long, value_name = "BYTES", value_parser = parse_limit)]
    cutoff_resp: Option<Limit>,
    /// A cutoff for the connections whose first packet matches a filter, as
    /// FILTER=BYTES (e.g. 'port 80=1MiB', 'udp=0'); repeatable, the first
    /// match wins (Scap cutoff classes).
    #[arg(long, value_name = "FILTER=BYTES", value_parser = args::parse_class)]
    cutoff_class: Vec<args::ClassArg>,
    /// Default stream priority for overload control, 0 to 255 (larger is
    /// more important): under memory pressure, lower priorities lose their
    /// payload first (prioritized packet loss).
    #[arg(long, value_name = "N", default_value_t = 0)]
    priority: u8,
    /// A priority for the connections whose first packet matches a filter,
    /// as FILTER=N (e.g. 'tcp port 22=1'); repeatable, the first match wins.
    #[arg(long, value_name = "FILTER=N", value_parser = args::parse_priority_class)]
    priority_class: Vec<args::PriorityClassArg>,
    /// Share of --memory in use below which prioritized packet loss drops
    /// nothing (e.g. 0.5 or 50%); above it each priority level has a
    /// watermark past which its payload is dropped.
    #[arg(long, value_name = "FRACTION", default_value = "0.5", value_parser = args::parse_fraction)]
    base_threshold: f64,
    /// Under overload, drop first the packets that lie past this many bytes
    /// of their stream (Scap's overload cutoff). [default: none]
    #[arg(long, value_name = "BYTES", value_parser = size::parse_size)]
    overload_cutoff: Option<u64>,
    /// Chunk size (bytes per data event); at most a worker's share of
    /// --memory. [default: 16 KiB]
    #[arg(long, value_name = "BYTES", value_parser = size::parse_size)]
    chunk: Option<u64>,
    /// UDP ports (either side) carrying VXLAN; repeatable or a comma list,
    /// replaces the default 4789.
    #[arg(long = "vxlan-port", value_name = "PORT", value_delimiter = ',')]
    vxlan_port: Vec<u16>,
    /// UDP ports carrying GENEVE, as --vxlan-port (default 6081).
    #[arg(long = "geneve-port", value_name = "PORT", value_delimiter = ',')]
    geneve_port: Vec<u16>,
    /// UDP ports carrying GTP-U, as --vxlan-port (default 2152).
    #[arg(long = "gtp-port", value_name = "PORT", value_delimiter = ',')]
    gtp_port: Vec<u16>,
    /// How stream bytes reach the consumer: chunks (copied into a buffer per
    /// stream and handed over every --chunk bytes, Scap's model) or segments
    /// (each in-order segment handed over at once from the packet, without a
    /// copy, libnids' model; with -w that is one file write per segment).
    #[arg(long, value_enum, default_value = "chunks")]
    delivery: DeliveryArg,
    /// Inactivity timeout of every flow, seconds of capture time.
    /// [default: TCP 300, UDP and other protocols 60; a closed TCP
    /// connection lingers 5]
    #[arg(long, value_name = "SECS")]
    timeout: Option<f64>,
    /// Memory for stream data, split evenly between the workers; at most
    /// the machine's physical memory. [default: 512 MiB]
    #[arg(long, value_name = "BYTES", value_parser = size::parse_size)]
    memory: Option<u64>,
    /// Stop after COUNT packets that pass the filter (as tcpdump's -c).
    /// [default: no limit]
    #[arg(short = 'c', long = "count", value_name = "COUNT")]
    count: Option<u64>,
    /// Stop after SECS seconds (open streams are flushed, as on Ctrl-C).
    /// [default: no limit]
    #[arg(long, value_name = "SECS")]
    duration: Option<f64>,
    /// Worker threads, each owning a shard of the flows.
    #[arg(long, value_name = "N", default_value_t = 1)]
    workers: u32,
    /// Analysis threads per worker: 0 runs the digests and stream files in
    /// the worker itself (inline); N hands reassembled chunks to N threads
    /// of their own, so a slow analysis does not slow capture (memory in
    /// transit counts against --memory; prioritized packet loss chooses
    /// what is lost). [default: 0 for files, 1 for live capture and paced
    /// replay (--rate, --speed)]
    #[arg(long, value_name = "N")]
    analysis_threads: Option<usize>,
    /// Locality buffering: each worker gathers N packets of its input and
    /// processes them grouped by the lower of each packet's two ports, so
    /// that the packets of one service and of each connection come back to
    /// back (same records; docs/engine.md, Locality buffering). 0 turns it
    /// off; at most 1000000.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        allow_hyphen_values = true
    )]
    locality_batch: usize,
    /// Live, with --locality-batch: process a partial batch once its first
    /// packet has waited MS milliseconds, 1 to 60000. [default: 100]
    #[arg(long, value_name = "MS", allow_hyphen_values = true)]
    locality_timeout: Option<u64>,
    /// How packets are split between workers (and processes): hash (files
    /// and live, the kernel's hash fan-out) or locality (files only). Both
    /// keep a connection's two directions on one worker; the kernel's other
    /// fan-out modes (lb, cpu, rollover, rnd, qm) do not, so flows and
    /// streams refuse them.
    #[arg(long, value_name = "MODE", default_value = "hash")]
    fanout: String,
    /// Live: join kernel fan-out group ID, shared with other processes that
    /// name the same ID. [default: a group of this process's workers]
    #[arg(long, value_name = "ID")]
    group: Option<u16>,
    /// Pin worker i to the i-th CPU of the list (e.g. 0,1 or 0-3).
    /// [default: not pinned]
    #[arg(long, value_name = "CPUS", value_parser = args::parse_cpus)]
    pin: Option<CpuList>,
    /// Live: the kernel ring of each worker's socket (a 100 ms burst at
    /// 1 Gbit/s plus per-packet overhead); the rings of all workers and
    /// --memory must fit in physical memory. A file paced by --rate or
    /// --speed: the modelled ring that drops what the capture stage cannot
    /// take in time. [default: 32 MiB]
    #[arg(long, value_name = "BYTES", value_parser = size::parse_size)]
    ring_size: Option<u64>,
    /// File: replay at RATE instead of as fast as possible, counting each
    /// packet's length on the wire (no preamble or inter-frame gap):
    /// bit/s, kbit/s, Mbit/s, Gbit/s (also bps, kbps, Mbps, Gbps: bits) or
    /// pps, kpps, Mpps, e.g. 2Gbit/s, 0.85Gbit/s, 500kpps. Packets that fall
    /// due while the ring (--ring-size) is full are ring drops. One worker.
    #[arg(
        long,
        value_name = "RATE",
        value_parser = rate::parse_rate,
        conflicts_with = "speed",
        allow_hyphen_values = true
    )]
    rate: Option<streamcap::source::pace::Pace>,
    /// File: replay at FACTOR times the capture's own pace, from its
    /// timestamps (4x, 0.5x, 4), with the ring drops of --rate. One worker.
    #[arg(
        long,
        value_name = "FACTOR",
        value_parser = rate::parse_speed,
        allow_hyphen_values = true
    )]
    speed: Option<streamcap::source::pace::Pace>,
    /// Live: bytes captured of each packet, 1 to 262144.
    /// [default: 262144 (whole frames)]
    #[arg(long, value_name = "N")]
    snaplen: Option<u32>,
    /// Live: do not put the interface into promiscuous mode (as tcpdump -p).
    #[arg(short = 'p', long = "no-promiscuous-mode")]
    no_promisc: bool,
    /// Live: drop the packets of streams past their cutoff (or discarded)
    /// in XDP, before the kernel stack and the capture socket, counting them
    /// so that records stay exact (subzero copy; docs/xdp.md). `--xdp` (or
    /// `--xdp=on`) requires it and exits 2 with the reason when it cannot be
    /// used; `--xdp=auto` uses it when it can. Needs root and a build with
    /// `--features xdp`.
    #[arg(
        long,
        value_enum,
        value_name = "WHEN",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "on"
    )]
    xdp: Option<xdp::XdpWhen>,
    /// Live, --xdp: where the program runs: auto (the driver's own hook
    /// where it has one, else the generic hook), native or generic.
    #[arg(long, value_name = "MODE", default_value = "auto")]
    xdp_mode: String,
    /// Live, --xdp: stream directions the XDP map holds at once (about 160
    /// bytes of kernel memory each); a stream that finds it full is
    /// discarded in user space.
    #[arg(long, value_name = "N", default_value_t = 65_536)]
    xdp_entries: u32,
    /// Live, --xdp: seconds before a stream's entry is taken back and its
    /// counts added; a stream still active is listed again with twice the
    /// timeout (Scap V-E).
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    xdp_timeout: f64,
    /// Live: how packets reach user space: af_packet (a TPACKET_V3 ring per
    /// worker in a kernel fan-out group) or af_xdp (an AF_XDP socket on one
    /// receive queue whose memory is a pool of --pool-chunks chunks of
    /// --chunk-frames frames; docs/capture.md). af_xdp needs root and a
    /// build with `--features xdp`.
    #[arg(long, value_enum, value_name = "SOURCE", default_value = "af-packet")]
    source: live::SourceKind,
    /// Live, --source af_xdp: the first receive queue to bind; --workers N
    /// binds queues Q to Q+N-1, one worker each.
    #[arg(long, value_name = "Q", default_value_t = 0)]
    queue: u32,
    /// Live, --source af_xdp with several workers: flows (every packet goes
    /// to the worker that owns its flow-hash bucket, whatever queue it came
    /// in on, and a worker whose backlog is above --offload-threshold moves
    /// its busiest buckets, with their connections, to the least loaded
    /// one) or off (each worker processes its own queue: connections stay
    /// whole only with a symmetric RSS key).
    #[arg(long, value_name = "MODE", default_value = "flows")]
    offload: String,
    /// Live, --source af_xdp, --offload flows: the backlog, in packets,
    /// above which a worker moves buckets. [default: a quarter of a pool]
    #[arg(long, value_name = "PACKETS")]
    offload_threshold: Option<u64>,
    /// Live, --source af_xdp: R, the pool's chunks.
    #[arg(long, value_name = "R", default_value_t = 256)]
    pool_chunks: u32,
    /// Live, --source af_xdp: M, frames per chunk (a chunk is the unit the
    /// pool hands to the kernel and takes back).
    #[arg(long, value_name = "M", default_value_t = 256)]
    chunk_frames: u32,
    /// Live, --source af_xdp: bytes per frame, 2048 or 4096; a frame holds
    /// a packet of up to this minus 256 bytes, longer ones are dropped.
    #[arg(long, value_name = "BYTES", default_value_t = 2048)]
    frame_size: u32,
    /// Live, --source af_xdp: auto (zero-copy where the driver has it, else
    /// copy), copy or zero-copy.
    #[arg(long, value_name = "MODE", default_value = "auto")]
    xsk_bind: String,
    /// Write the records to PATH (not the input file). [default: stdout]
    #[arg(short = 'o', long = "output", value_name = "PATH")]
    output: Option<PathBuf>,
    /// Seed of the records' Community ID flow hashes (`community_id`), as
    /// Zeek's and Suricata's community-id seed: 0 to 65535.
    #[arg(long, value_name = "N", default_value_t = 0)]
    community_id_seed: u16,
    /// No progress bar, no summary.
    #[arg(short = 'q', long)]
    quiet: bool,
    /// Also write the summary's figures to FILE as one JSON object (even
    /// with -q): packets, ring and kernel drops, flows, streams, memory,
    /// what each priority lost, the analysis stage.
    #[arg(long, value_name = "FILE")]
    stats_json: Option<PathBuf>,
    /// A tcpdump-syntax filter, e.g. `tcp port 80 and host 10.0.0.1`.
    #[arg(value_name = "FILTER")]
    filter: Vec<String>,
    /// The active timeout, nanoseconds (`flows --active-timeout`).
    #[arg(skip)]
    active_timeout: Option<u64>,
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
        Cmd::Man { page } => man(page.as_deref()),
        Cmd::Demo { out } => demo(out),
        Cmd::Replay(a) => replay::run(a),
        Cmd::Forward(a) => forward::run(a),
        Cmd::Nids(a) => nids::run(a),
        Cmd::Http(a) => with::http(a),
        Cmd::Run(a) => with::run(a),
        Cmd::Flows(mut a) => {
            a.common.active_timeout = a.active_timeout;
            if let Some(f) = &a.ipfix.ipfix_file {
                let (read, out) = (a.common.read.as_deref(), a.common.output.as_deref());
                if let Err(e) = paths::check_extra(read, out, f, "--ipfix-file", "IPFIX") {
                    return usage(e);
                }
            }
            let (export, kafka) = (a.ipfix, a.kafka);
            let format = a.format;
            // The IPFIX exporters, then the Kafka producer: connected (or
            // refused) before the run.
            let taps = move |c: &Common| -> Result<Vec<Box<dyn tap::RecordTap>>, String> {
                let mut taps = ipfix::open(&export)?;
                let payload = kafka::Payload::Flows {
                    json_output: format == Format::Json,
                    community_seed: c.community_id_seed,
                };
                taps.extend(kafka::open(&kafka, payload)?);
                Ok(taps)
            };
            if a.app {
                let choice = apps::AppChoice {
                    classify: Some(u64::MAX),
                    flows: Some((u64::MAX, a.format, a.digest)),
                    ..apps::AppChoice::default()
                };
                return run::run(a.common, None, |c, _| {
                    let mut choice = choice;
                    choice.flow_taps = taps(c)?;
                    apps::AppSet::open(c, choice)
                });
            }
            let digest = a.digest;
            run::run(a.common, None, |c, dir| {
                let taps = taps(c)?;
                run::Outputs::open(c, format, digest, false, dir, false, taps)
            })
        }
        Cmd::Streams(a) => {
            let mode = if a.force {
                paths::DirMode::Force
            } else if a.append {
                paths::DirMode::Append
            } else {
                paths::DirMode::Fresh
            };
            let dir = a.dir.map(|path| paths::OutDir { path, mode });
            let format = a.format;
            run::run(a.common, dir, |c, dir| {
                run::Outputs::open(c, format, false, true, dir, false, Vec::new())
            })
        }
    }
}

/// `streamcap demo`: writes the sample capture and runs `flows --digest` on it.
///
/// Without `-w` the capture goes to a new private file in the temporary
/// directory (created exclusively, mode 0600, with a random name: nothing
/// another user planted there, a symlink above all, is ever written
/// through), removed after the run. With `-w FILE` the file is kept; a
/// symlink at FILE is refused rather than followed.
fn demo(out: Option<PathBuf>) -> ExitCode {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let bytes = streamcap_gen::sample(streamcap_gen::SAMPLE_DEFAULT_SEED).to_pcap_bytes();
    let (path, temp) = match out {
        Some(p) => {
            let written = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&p)
                .and_then(|mut f| f.write_all(&bytes));
            if let Err(e) = written {
                let hint = if e.raw_os_error() == Some(libc::ELOOP) {
                    " (a symlink: not followed)"
                } else {
                    ""
                };
                eprintln!("streamcap: cannot write {}: {e}{hint}", p.display());
                return ExitCode::from(1);
            }
            (p, None)
        }
        None => {
            let made = tempfile::Builder::new()
                .prefix("streamcap-sample-")
                .suffix(".pcap")
                .tempfile()
                .and_then(|mut f| f.write_all(&bytes).and_then(|()| f.flush()).map(|()| f));
            match made {
                Ok(f) => (f.path().to_path_buf(), Some(f)),
                Err(e) => {
                    eprintln!(
                        "streamcap: cannot create a temporary file in {}: {e}",
                        std::env::temp_dir().display()
                    );
                    return ExitCode::from(1);
                }
            }
        }
    };
    let kept = if temp.is_some() {
        " (removed at the end; -w FILE keeps a copy)"
    } else {
        ""
    };
    eprintln!(
        "streamcap: generated sample capture {}{kept}",
        path.display()
    );
    let args = [
        "streamcap".as_ref(),
        "flows".as_ref(),
        "--digest".as_ref(),
        "-r".as_ref(),
        path.as_os_str(),
    ];
    let code = match Cli::try_parse_from(args) {
        Ok(cli) => dispatch(cli.cmd),
        Err(e) => usage(e),
    };
    drop(temp);
    code
}

/// `streamcap man [SUBCOMMAND]`: the manual page, generated from the option
/// definitions (clap_mangen), on stdout.
fn man(page: Option<&str>) -> ExitCode {
    let top = Cli::command();
    let cmd = match page {
        None => top,
        Some(name) => match top.find_subcommand(name) {
            Some(sub) if name != "man" => {
                let title = format!("streamcap-{name}");
                sub.clone()
                    .name(title.clone())
                    .bin_name(title)
                    .version(env!("CARGO_PKG_VERSION"))
            }
            _ => return usage(format!("man {name}: no such subcommand")),
        },
    };
    let mut out = Vec::new();
    if let Err(e) = clap_mangen::Man::new(cmd).render(&mut out) {
        eprintln!("streamcap: cannot render the manual page: {e}");
        return ExitCode::from(1);
    }
    match io::Write::write_all(&mut io::stdout(), &out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("streamcap: stdout: {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The help text states the library's own defaults.
    #[test]
    fn help_states_the_defaults() {
        let mut cmd = Cli::command();
        let flows = cmd.find_subcommand_mut("flows").expect("flows");
        // Wrapped at the terminal's width: compare with single spaces.
        let help = flows.render_long_help().to_string();
        let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
        let cfg = streamcap::Config::default();
        for want in [
            format!("[default: {}]", size::binary(cfg.chunk_size as u64)),
            format!("[default: {}]", size::binary(cfg.memory_size as u64)),
            format!(
                "[default: {}]",
                size::binary(streamcap::source::RingConfig::default().total_size() as u64)
            ),
            format!("[default: {}", streamcap::source::MAX_SNAPLEN),
            format!(
                "TCP {}, UDP and other protocols {}",
                cfg.tcp_timeout / 1_000_000_000,
                cfg.udp_timeout / 1_000_000_000
            ),
            format!("lingers {}]", cfg.close_linger / 1_000_000_000),
            "[default: 0 for flows".to_string(),
            "[default: fast]".to_string(),
            "[default: bsd]".to_string(),
            "[default: json]".to_string(),
            "[default: 1]".to_string(),
            "[default: hash]".to_string(),
            "[default: chunks]".to_string(),
            format!(
                "waited MS milliseconds, 1 to 60000. [default: {}]",
                streamcap::dispatch::locality::DEFAULT_LOCALITY_TIMEOUT.as_millis()
            ),
            format!(
                "at most {}",
                streamcap::dispatch::locality::MAX_LOCALITY_BATCH
            ),
            "[default: stdout]".to_string(),
            format!("[default: {}]", size::binary(kafka::options::DEFAULT_QUEUE)),
            format!("[default: {}s]", kafka::options::DEFAULT_FLUSH_TIMEOUT_S),
        ] {
            assert!(help.contains(&want), "{want:?} not in the help:\n{help}");
        }
    }
}
