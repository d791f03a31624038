//! `flows --ipfix`: the flow records exported as IPFIX (RFC 7011) to a
//! collector over UDP or TCP, or into a file (RFC 5655), beside the record
//! output, by a tap on its writer thread ([`crate::tap`]).
//!
//! - [`options`]: the command-line options and their values.
//! - [`convert`]: a flow record as an IPFIX flow, with delta counters
//!   after interim reports (`--active-timeout`).
//! - [`transport`]: where the messages go (paced UDP, TCP, a file).
//! - [`exporter`]: the tap: messages, templates and their timer, sequence
//!   numbers, the report.
//!
//! The encoding is `streamcap_apps::export::ipfix`'s; docs/export.md
//! describes what is exported.

pub mod convert;
pub mod exporter;
pub mod options;
pub mod transport;

pub use options::IpfixArgs;

use crate::tap::RecordTap;

/// The taps `args` ask for (none without `--ipfix` or `--ipfix-file`):
/// connected (TCP), created (file) or bound (UDP) now, so that an
/// unreachable collector or an unwritable file is reported before the run.
pub fn open(args: &IpfixArgs) -> Result<Vec<Box<dyn RecordTap>>, String> {
    let mut taps: Vec<Box<dyn RecordTap>> = Vec::new();
    if let Some(target) = &args.ipfix {
        let t = transport::Transport::connect(target, args.rate(), args.ipfix_sndbuf)?;
        taps.push(Box::new(exporter::IpfixTap::new(
            t,
            args.observation_domain,
        )));
    }
    if let Some(path) = &args.ipfix_file {
        let t = transport::Transport::file(path)?;
        taps.push(Box::new(exporter::IpfixTap::new(
            t,
            args.observation_domain,
        )));
    }
    Ok(taps)
}
