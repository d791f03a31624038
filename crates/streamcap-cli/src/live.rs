//! Live capture from a network interface (`-i`).

use crate::run::usage;
use crate::Common;
use std::path::PathBuf;
use std::process::ExitCode;

/// Runs `flows` / `streams` on a live interface.
pub fn run(c: Common, _digest: bool, _dir: Option<PathBuf>, _streams: bool) -> ExitCode {
    usage(format!(
        "-i {}: live capture is being integrated on this branch",
        c.interface.unwrap_or_default()
    ))
}
