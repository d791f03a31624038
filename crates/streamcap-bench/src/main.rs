//! `streamcap-bench`: runs streamcap and peer tools on the same captures and
//! reports wall time, CPU time, peak RSS, Gbit/s, Mpps and what each found.
//!
//! ```text
//! streamcap-bench gen -o FILE --packets N [--concurrency C]
//! streamcap-bench run --streamcap BIN [--peers DIR] [--runs N] [--json FILE]
//!                     [--png FILE] [--tmp DIR] [--slow-limit SECS] NAME=FILE...
//! ```
//!
//! `bench/run.sh` drives it; see `bench/README.md`.

mod capinfo;
mod gen;
mod plot;
mod runner;

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "\
usage:
  streamcap-bench gen -o FILE --packets N [--concurrency C]
      fallback workload: copies of the generator's sample capture with
      distinct addresses, interleaved in time (about C copies at once)
  streamcap-bench run --streamcap BIN [--peers DIR] [--runs N] [--json FILE]
                      [--png FILE] [--tmp DIR] [--slow-limit SECS] NAME=FILE...
      runs every streamcap mode and every available peer on each workload";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let res = match args.first().map(String::as_str) {
        Some("gen") => cmd_gen(&args[1..]),
        Some("run") => runner::cmd_run(&args[1..]),
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
