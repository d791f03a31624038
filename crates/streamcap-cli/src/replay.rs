//! `streamcap replay`: send the frames of a capture file out of an interface,
//! optionally at a fixed packet rate. Ctrl-C stops it and still prints the
//! summary.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use streamcap::source::{replay_with, Injector, LiveErrorKind, ReplayError, ReplayOptions};
use streamcap::FileSource;

/// Examples shown after the subcommand's help.
pub const REPLAY_EXAMPLES: &str = "\
Examples:
  streamcap replay -r trace.pcap -i veth0                as fast as possible
  streamcap replay -r trace.pcap -i veth0 --pps 10000    10 000 frames per second
  streamcap replay -r trace.pcapng -i eth1 -c 1000       the first 1000 frames

Only Ethernet frames are sent; others, and frames longer than the interface's
MTU allows, are skipped and counted. Needs root or CAP_NET_RAW.
Exit status: 0 ok, 1 input or send error, 2 usage error (a bad option, an
interface that does not exist).";

/// Arguments of `streamcap replay`.
#[derive(clap::Args, Debug)]
#[command(after_help = REPLAY_EXAMPLES)]
pub struct ReplayArgs {
    /// The capture file (pcap or pcapng).
    #[arg(short = 'r', long = "read", value_name = "FILE")]
    pub read: PathBuf,
    /// The interface to send on.
    #[arg(short = 'i', long = "interface", value_name = "IFACE")]
    pub interface: String,
    /// Frames per second (default: as fast as possible).
    #[arg(long, value_name = "N", value_parser = parse_pps)]
    pub pps: Option<f64>,
    /// Stop after N frames have been sent.
    #[arg(short = 'c', long = "count", value_name = "N")]
    pub count: Option<u64>,
}

/// Parses a packet rate: a finite number above zero.
fn parse_pps(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        Ok(_) => Err(format!("the rate must be a number above 0, not {s}")),
        Err(e) => Err(format!("{s:?} is not a number: {e}")),
    }
}

/// Runs the replay and prints a one-line summary to stderr: 0 when every
/// frame was read and sent (or skipped), 1 on an input or send error, 2 on a
/// usage error.
pub fn run(args: ReplayArgs) -> ExitCode {
    if let Some(pps) = args.pps {
        if let Err(e) = parse_pps(&pps.to_string()) {
            eprintln!("streamcap: --pps: {e}");
            return ExitCode::from(2);
        }
    }
    let mut source = match FileSource::open(&args.read) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("streamcap: {e}");
            return ExitCode::from(1);
        }
    };
    let mut injector = match Injector::open(&args.interface) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("streamcap: {e}");
            // An interface that does not exist is a usage error.
            return ExitCode::from(match e.kind() {
                LiveErrorKind::NoSuchInterface => 2,
                _ => 1,
            });
        }
    };
    let opts = ReplayOptions {
        pps: args.pps,
        max_frames: args.count,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let stopper = crate::signals::Stopper::new(stop.clone());
    let _signals = match crate::signals::install(&stopper, None) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("streamcap: {e}");
            return ExitCode::from(1);
        }
    };
    let report = replay_with(&mut source, &mut injector, &opts, &stop);
    let skipped = match report.skip_reasons() {
        r if r.is_empty() => "0 skipped".to_string(),
        r => format!("{} skipped ({r})", report.skipped()),
    };
    eprintln!(
        "streamcap: {} frames sent on {}, {skipped}, {:.3} s, {:.0} pps, {:.1} Mbit/s",
        report.sent,
        injector.interface(),
        report.elapsed.as_secs_f64(),
        report.pps(),
        report.mbit_per_s()
    );
    match &report.error {
        None => ExitCode::SUCCESS,
        Some(e) => {
            let what = match e {
                ReplayError::Input(_) => "input error",
                ReplayError::Send(_) => "send error",
            };
            eprintln!("streamcap: {what}: {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_validated() {
        assert_eq!(parse_pps("2500"), Ok(2500.0));
        assert_eq!(parse_pps("0.5"), Ok(0.5));
        assert!(parse_pps("0").is_err());
        assert!(parse_pps("-3").is_err());
        assert!(parse_pps("inf").is_err());
        assert!(parse_pps("fast").unwrap_err().contains("not a number"));
    }

    #[test]
    fn missing_file_exits_1_and_missing_interface_2() {
        let args = ReplayArgs {
            read: PathBuf::from("/nonexistent/trace.pcap"),
            interface: "lo".into(),
            pps: None,
            count: None,
        };
        assert_eq!(run(args), ExitCode::from(1));
        let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/../../samples/sample.pcap");
        let args = ReplayArgs {
            read: PathBuf::from(sample),
            interface: "nonexistent0".into(),
            pps: Some(10.0),
            count: Some(1),
        };
        assert_eq!(run(args), ExitCode::from(2));
    }
}
