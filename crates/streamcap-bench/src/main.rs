//! `streamcap-bench`: runs streamcap and peer tools on the same captures and
//! reports wall time, CPU time, peak RSS, Gbit/s, Mpps and what each found.
//!
//! ```text
//! streamcap-bench gen -o FILE --packets N [--concurrency C]
//! streamcap-bench conns -o FILE --connections N
//! streamcap-bench run --streamcap BIN [--streamcap-plain BIN] [--peers DIR]
//!                     [--runs N] [--json FILE] [--png FILE] [--tmp DIR] [--slow-limit SECS]
//!                     [--max-run SECS] [--one-cpu CPU|none] [--commit ID]
//!                     [--idle-conns N,N...] [--idle-baseline N] [NAME=FILE...]
//! streamcap-bench live --streamcap BIN --pcap FILE [--frames N] [--rates R,R,max]
//! streamcap-bench attacks --streamcap BIN [--packets N] [--memory BYTES] [--runs N] [--json FILE]
//! streamcap-bench overload --pcap FILE [--json FILE] [--png PREFIX] [--memory BYTES]
//!                          [--chunk BYTES] [--high FILTER] [--rounds N]
//! streamcap-bench overload-live --pcap FILE --peers DIR --streamcap BIN
//!                               [--rounds N] [--rates G,G,...,max] [--json FILE] [--tmp DIR]
//! streamcap-bench xdp-cutoff --streamcap BIN --pcap FILE [--peers DIR] [--rate R]
//!                            [--cutoffs C,C,...] [--packets N] [--wait-idle CPUS]
//!                            [--max-others CPUS] [--tries N] [--json FILE] [--png FILE]
//!                            [--nic-path]
//! streamcap-bench nids-rules --count N -o FILE [--seed S]
//! streamcap-bench nids --streamcap BIN [--streamcap-plain BIN] [--peers DIR] [--suricata BIN|none] [--runs N]
//!                      [--rules N,N,...] [--other-rules N,...] [--seed S] [--json FILE]
//!                      [--png FILE] [--tmp DIR] [--slow-limit SECS] [--one-cpu CPU|none]
//!                      [--wait-idle CPUS] [--commit ID] NAME=FILE...
//! streamcap-bench nids --replot JSON [--png FILE]
//! streamcap-bench apps --streamcap BIN [--ndpi BIN|none] [--tshark BIN|none] [--runs N]
//!                      [--rules N | --rules-file FILE] [--seed S] [--json FILE] [--tmp DIR]
//!                      [--slow-limit SECS] [--one-cpu CPU|none] [--unpinned none|streamcap|all]
//!                      [--wait-idle CPUS] [--commit ID] NAME=FILE...
//! streamcap-bench apps --replot JSON
//! streamcap-bench pcap-plot --json FILE --png PREFIX
//! streamcap-bench bursts [--bursts N,N,...] [--cost-ns NS] [--size BYTES] [--pool R,M]
//!                        [--ring BYTES] [--rounds N] [--receivers NAME,...] [--json FILE] [--png FILE]
//! streamcap-bench forward-plot --in FILE --png FILE
//! streamcap-bench imbalance [--rate PPS] [--seconds S] [--flows N] [--cost-ns NS] [--pool R,M]
//!                           [--rounds N] [--json FILE] [--png FILE]
//! ```
//!
//! `bench/run.sh` drives it; `bench/pcap-locality.sh` draws its charts
//! with `pcap-plot`; see `bench/README.md`.

mod apps;
mod attacks;
mod bursts;
mod capinfo;
mod conns;
mod forward_plot;
mod gen;
mod host;
mod idle;
mod imbalance;
mod live;
mod nic_path;
mod nids;
mod nids_rules;
mod overload;
mod overload_live;
mod pcap_plot;
mod plot;
mod replay_window;
mod report;
mod runner;
mod stats;
mod table;
mod xdp_cutoff;

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "\
usage:
  streamcap-bench gen -o FILE --packets N [--concurrency C]
      fallback workload: copies of the generator's sample capture with
      distinct addresses, interleaved in time (about C copies at once)
  streamcap-bench conns -o FILE --connections N
      N TCP connections that complete a handshake and stay open, idle,
      to the end of the file (3 packets each, 1 packet per microsecond)
  streamcap-bench run --streamcap BIN [--streamcap-plain BIN] [--peers DIR]
                      [--runs N] [--json FILE] [--png FILE] [--tmp DIR] [--slow-limit SECS]
                      [--max-run SECS] [--one-cpu CPU|none] [--commit ID]
                      [--idle-conns N,N...] [--idle-baseline N] [NAME=FILE...]
      runs every streamcap mode and every available peer on each workload,
      round-robin, --runs times (default 5); prints a Markdown report at the
      end (medians, min-max, user and sys CPU s, paired ratios to
      nids_streams and pcap_flows) and writes every run to --json;
      --streamcap-plain adds `flows` and `streams` rows of a second build
      (bench/run.sh: the plain release build next to the PGO one);
      --one-cpu adds rows of streamcap's flows, streams and segments modes
      and of the C peers pinned to that CPU with taskset (default: the
      first CPU this process may use, when it may use two or more; `none`:
      no such rows); --commit records the commit measured in the report;
      a tool whose first run shows that its runs would exceed --slow-limit
      (90 s) runs fewer times; one whose single run would exceed --max-run
      (300 s) at its rate per packet on the largest workload before is
      skipped on that workload; a workload FILE with a FILE.about beside it
      has that file's first line printed under its title;
      --idle-conns also measures peak memory per idle TCP connection
      (streamcap flows and the libnids peers on `conns` files of N
      connections in --tmp, against --idle-baseline connections, default 1000)
  streamcap-bench live --streamcap BIN --pcap FILE [--frames N]
                       [--rates PPS,PPS,...,max] [--json FILE]
      (root) the highest replay rate without kernel drops for
      `streamcap flows -i` and `tcpdump -w /dev/null` on a veth pair in a
      namespace of its own
  streamcap-bench attacks --streamcap BIN [--packets N] [--memory BYTES]
                          [--runs N] [--json FILE] [--tmp DIR] [--seed S]
      every streamcap-gen attack profile and the normal baseline (N packets
      each, default 200000) through `streamcap streams` and `streamcap flows`
      with --memory BYTES (default 32 MiB); prints a Markdown table with
      peak RSS, stream-data peak, packets/s against normal, the byte
      accounting and pass/FAIL against the bounds (exit 0 either way)
  streamcap-bench overload --pcap FILE [--json FILE] [--png PREFIX]
                           [--memory BYTES] [--chunk BYTES] [--high FILTER]
                           [--rounds N]
      overload control: the capture stage alone and the analysis alone
      (SHA-256 of every chunk, N rounds; default: enough rounds for the
      analysis to run at about 1/2.5 of the capture stage's rate), then the
      file replayed at 0.5 to 2 times the analysis rate: bytes lost per
      priority (FILTER gets priority 1; default 'tcp port 22'), streams
      delivered completely, decoupled with prioritized packet loss and
      inline; the highest loss-free rate with 1 and 2 analysis threads; the
      M/M/1/N loss beside PPL simulated on Poisson arrivals; a Markdown
      report on stdout, PREFIX-{priorities,rate-loss,threads,queueing}.png
      (defaults: --memory 33554432, --chunk 4096)
  streamcap-bench overload-live --pcap FILE --peers DIR --streamcap BIN
                                [--rounds N] [--rates G,G,...,max] [--json FILE] [--tmp DIR]
      (root, tcpreplay) rate vs loss on a live interface: FILE replayed by
      `tcpreplay --mbps` at each rate (Gbit/s; max: --topspeed; default
      0.2,0.5,1,2) onto a veth pair in a namespace of its own, captured in
      turn by libnids (DIR/nids_analyse: SHA-256 of every chunk, N rounds,
      default 1) and by `streamcap flows -i --digest` with 1 analysis thread
      and inline; streams delivered as the same receiver delivers them from
      the file, kernel and veth drops; a Markdown table on stdout
  streamcap-bench xdp-cutoff --streamcap BIN --pcap FILE [--peers DIR] [--rate R]
                             [--cutoffs C,C,...] [--packets N] [--wait-idle CPUS]
                             [--max-others CPUS] [--tries N] [--json FILE] [--png FILE]
                             [--nic-path]
      (root, tcpreplay) Scap's cutoff experiment: FILE (first N packets)
      replayed by tcpreplay at one fixed rate R (Gbit/s, or 500mbps,
      70000pps; default 0.5) onto a veth pair in a namespace of its own,
      captured in turn by `streamcap flows -i --cutoff C -o /dev/null`
      (discard in user space) and the same with --xdp (skipped, with the
      reason, where the build or the kernel has no XDP) for each cutoff
      (default 0,1KiB,10KiB,100KiB,1MiB,unlimited), by libnids
      (DIR/nids_analyse -n 0) and tcpdump -w /dev/null once each, and by
      nothing (the replay's own cost, before and after); the whole
      machine's CPU (/proc/stat: all CPUs less their idle time) and
      softirq while packets flow, the receiver's CPU seconds, packets lost
      (dropped in XDP counts as handled); a run in which other processes
      kept more than --max-others CPUs busy (default 0.1) runs again, up
      to --tries times (default 3); Markdown tables on stdout, every run in
      --json, CPU, softirq and loss against the cutoff in --png;
      --wait-idle as for nids. --nic-path: the receivers capture on a
      second veth pair fed by an XDP redirect (clang), where frames arrive
      as XDP frames before any sk_buff, as from a NIC's driver
  streamcap-bench nids-rules --count N -o FILE [--seed S]
      N content rules in Suricata syntax (tcp and some udp, 4-32 bytes, some
      nocase): the campus model's planted signatures, strings of its
      payloads and random patterns; the N-rule set is the first N rules of
      one sequence per seed (default 1)
  streamcap-bench nids --streamcap BIN [--streamcap-plain BIN] [--peers DIR]
                       [--suricata BIN|none] [--runs N]
                       [--rules N,N,...] [--other-rules N,...] [--seed S] [--json FILE]
                       [--png FILE] [--tmp DIR] [--slow-limit SECS] [--one-cpu CPU|none]
                       [--wait-idle CPUS] [--commit ID] NAME=FILE...
      streamcap nids (engine auto, aho-corasick, --cutoff 10KiB and 1MiB,
      --delivery segments; engine auto of --streamcap-plain's build too)
      against Suricata (--runmode single, default
      configuration and app-layer off) and DIR/nids_match (libnids +
      Hyperscan), with the nids-rules sets of --rules rules (default
      100,1000,10000) on the first workload and of --other-rules (default
      1000) on the others; --runs runs per row (default 5), round-robin;
      1-CPU rows (taskset) and start-up rows (an empty capture); alerts per
      tool; ratios, the cutoff's effect, engines and delivery modes as a
      Markdown report, every run in --json, Gbit/s against rules in --png;
      --wait-idle waits before each round until other processes keep at
      most CPUS CPUs busy (3 s samples); a row whose runs would exceed
      --slow-limit (300 s) runs fewer times
  streamcap-bench nids --replot JSON [--png FILE]
      prints the report of a `nids --json` file again (and draws --png)
  streamcap-bench apps --streamcap BIN [--ndpi BIN|none] [--tshark BIN|none] [--runs N]
                       [--rules N | --rules-file FILE] [--seed S] [--json FILE] [--tmp DIR]
                       [--slow-limit SECS] [--one-cpu CPU|none] [--unpinned none|streamcap|all]
                       [--wait-idle CPUS] [--commit ID] NAME=FILE...
      the applications: streamcap flows and flows --app against ndpiReader
      (-q, and -q -C with a CSV line per flow), streamcap http against
      tshark -Y http -T fields, streamcap nids, and streamcap run --with
      flows --with http --with nids=RULES (and with --with app) against
      the same applications run separately (their sum and the slowest);
      every row pinned to one CPU with taskset (default: the first CPU this
      process may use, on a machine with two or more; `none`: unpinned),
      --unpinned adds unpinned rows of streamcap's commands (default) or of
      all; the rules are `nids-rules --count N` (default 1000) or
      --rules-file; --runs runs per row (default 5), round-robin; a row
      whose runs would exceed --slow-limit (300 s) runs fewer times;
      --wait-idle as for nids; a Markdown report, every run in --json
  streamcap-bench apps --replot JSON
      prints the report of an `apps --json` file again
  streamcap-bench pcap-plot --json FILE --png PREFIX
      draws bench/pcap-locality.sh's result file (bench/results/pcap-locality.json):
      ndpiReader's misses per packet (PREFIX-misses.png) and run time
      (PREFIX-time.png) against the locality batch size
  streamcap-bench bursts [--bursts N,N,...] [--cost-ns NS] [--size BYTES]
                         [--pool R,M] [--ring BYTES] [--rounds N]
                         [--receivers af_packet,af_packet_pool,af_xdp,tcpdump]
                         [--json FILE] [--png FILE]
      (root; af_xdp needs --features xdp) WireCAP's burst experiment on a
      veth pair: bursts of N frames sent as fast as one thread can, read by
      a consumer that spends NS per packet (default 4000); loss per burst
      size for AF_PACKET with streamcap's ring, AF_PACKET with a ring as
      large as the AF_XDP pool, AF_XDP with the pool (default 256 x 256
      frames) and tcpdump -w /dev/null; median of --rounds (3)
  streamcap-bench imbalance [--rate PPS] [--seconds S] [--flows N] [--cost-ns NS]
                            [--pool R,M] [--rounds N] [--json FILE] [--png FILE]
      (root, --features xdp) WireCAP's imbalance experiment: N hot UDP flows
      (64) at PPS (60000) for S seconds (3), all arriving on queue 0 of a
      two-queue veth; two AF_XDP workers spending NS per packet (20000) as a
      buddy group with offload off, packets and flows: loss, throughput,
      each worker's share, moves; median of --rounds (3)
  streamcap-bench forward-plot --in FILE --png FILE
      draws the table bench/forward.sh printed (FILE: its output) as a
      chart of forwarded packets per second and CPU seconds per path";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let res = match args.first().map(String::as_str) {
        Some("gen") => cmd_gen(&args[1..]),
        Some("conns") => cmd_conns(&args[1..]),
        Some("run") => runner::cmd_run(&args[1..]),
        Some("live") => live::cmd_live(&args[1..]),
        Some("attacks") => attacks::cmd_attacks(&args[1..]),
        Some("overload") => overload::cmd_overload(&args[1..]),
        Some("overload-live") => overload_live::cmd_overload_live(&args[1..]),
        Some("xdp-cutoff") => xdp_cutoff::cmd_xdp_cutoff(&args[1..]),
        Some("nids-rules") => nids_rules::cmd_nids_rules(&args[1..]),
        Some("nids") => nids::cmd_nids(&args[1..]),
        Some("apps") => apps::cmd_apps(&args[1..]),
        Some("pcap-plot") => pcap_plot::cmd_pcap_plot(&args[1..]),
        Some("bursts") => bursts::cmd_bursts(&args[1..]),
        Some("imbalance") => imbalance::cmd_imbalance(&args[1..]),
        Some("forward-plot") => forward_plot::cmd_forward_plot(&args[1..]),
        Some("-h" | "--help") => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => Err(format!("expected a subcommand\n\n{USAGE}")),
    };
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("streamcap-bench: {e}");
            ExitCode::from(2)
        }
    }
}

fn cmd_gen(args: &[String]) -> Result<(), String> {
    let mut out = None;
    let mut packets = 2_000_000u64;
    let mut concurrency = 64u64;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "-o" => out = Some(PathBuf::from(val()?)),
            "--packets" => packets = val()?.parse().map_err(|e| format!("--packets: {e}"))?,
            "--concurrency" => {
                concurrency = val()?.parse().map_err(|e| format!("--concurrency: {e}"))?
            }
            other => return Err(format!("unexpected argument {other}")),
        }
    }
    let out = out.ok_or("missing -o FILE")?;
    let (n, copies) = gen::write_fallback(&out, packets, concurrency)
        .map_err(|e| format!("writing {}: {e}", out.display()))?;
    eprintln!(
        "streamcap-bench: wrote {} ({n} packets, {copies} copies of the sample capture)",
        out.display()
    );
    Ok(())
}

fn cmd_conns(args: &[String]) -> Result<(), String> {
    let mut out = None;
    let mut n = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "-o" => out = Some(PathBuf::from(val()?)),
            "--connections" => {
                n = Some(
                    val()?
                        .parse::<u64>()
                        .map_err(|e| format!("--connections: {e}"))?,
                )
            }
            other => return Err(format!("unexpected argument {other}")),
        }
    }
    let out = out.ok_or("missing -o FILE")?;
    let n = n.ok_or("missing --connections N")?;
    let packets =
        conns::write_conns(&out, n).map_err(|e| format!("writing {}: {e}", out.display()))?;
    eprintln!(
        "streamcap-bench: wrote {} ({n} idle connections, {packets} packets)",
        out.display()
    );
    Ok(())
}
