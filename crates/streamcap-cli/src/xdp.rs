//! `--xdp`: subzero copy on a live interface. The XDP flow-drop program
//! ([`streamcap::subzero`]) is attached before capture starts and
//! detached when the run ends; the workers list the streams past their
//! cutoff in its map, and the summary gets an `xdp` line.

use crate::Common;
#[cfg(feature = "xdp")]
use std::sync::Arc;
use streamcap::subzero::{SubzeroConfig, SubzeroStats};

/// When `--xdp` applies.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum XdpWhen {
    /// Required: the run fails (exit 2) if XDP cannot be used.
    On,
    /// Used when it can be; otherwise a note on stderr and the run goes on.
    Auto,
}

/// Most entries the map may be given (each costs about 160 bytes of
/// kernel memory with the hash table's overhead).
const MAX_ENTRIES: u32 = 1 << 24;
/// Kernel memory per entry, roughly, for the physical-memory bound.
const ENTRY_BYTES: u64 = 160;

/// What the summary and `--stats-json` report of the XDP stage.
#[derive(Clone, Debug)]
pub(crate) struct XdpOutcome {
    /// `native` or `generic`.
    pub mode: String,
    /// Packets and IP bytes the program dropped (its own counters: with
    /// a program shared by a fan-out group, every process's).
    pub pkts: u64,
    pub bytes: u64,
    /// Entries the map holds at most.
    pub capacity: u32,
    /// Whether the program was attached by another process of the same
    /// fan-out group and shared.
    pub joined: bool,
}

/// The attached program. Without the `xdp` feature none can exist.
pub(crate) struct Attached {
    prog: Program,
    #[cfg_attr(not(feature = "xdp"), allow(dead_code))]
    timeout: u64,
}

#[cfg(feature = "xdp")]
type Program = Arc<streamcap::subzero::xdp::XdpFlowDrop>;
/// Without the `xdp` feature, no program (an empty type).
#[cfg(not(feature = "xdp"))]
enum Program {}

impl Attached {
    /// The workers' configuration: the program's map, the first timeout.
    pub(crate) fn config(&self) -> SubzeroConfig {
        #[cfg(not(feature = "xdp"))]
        match self.prog {}
        #[cfg(feature = "xdp")]
        SubzeroConfig {
            map: self.prog.clone(),
            timeout: self.timeout,
        }
    }

    /// The program, for the AF_XDP source to redirect through.
    #[cfg(feature = "xdp")]
    pub(crate) fn program(&self) -> Program {
        self.prog.clone()
    }

    /// The program's counters now.
    pub(crate) fn outcome(&self) -> XdpOutcome {
        #[cfg(not(feature = "xdp"))]
        match self.prog {}
        #[cfg(feature = "xdp")]
        {
            let t = self.prog.totals();
            XdpOutcome {
                mode: self.prog.mode().to_string(),
                pkts: t.pkts,
                bytes: t.bytes,
                capacity: self.prog.capacity(),
                joined: self.prog.joined(),
            }
        }
    }
}

/// Checks the `--xdp` options of a live run on `iface` and attaches the
/// program. `Ok(None)`: not asked for, or `auto` and not possible (a note
/// on stderr says why). `Err`: the message of a usage error (exit 2).
pub(crate) fn attach(c: &Common, iface: &str) -> Result<Option<Attached>, String> {
    let Some(when) = c.xdp else {
        return Ok(None);
    };
    let skip = |why: String| -> Result<Option<Attached>, String> {
        match when {
            XdpWhen::On => Err(format!("--xdp: {why}")),
            XdpWhen::Auto => {
                eprintln!("streamcap: --xdp=auto: {why}; capturing without it");
                Ok(None)
            }
        }
    };
    if !(c.xdp_timeout.is_finite() && c.xdp_timeout > 0.0 && c.xdp_timeout <= 86_400.0) {
        return Err(format!(
            "--xdp-timeout {}: expected 0 to 86400 seconds",
            c.xdp_timeout
        ));
    }
    if c.xdp_entries == 0 || c.xdp_entries > MAX_ENTRIES {
        return Err(format!(
            "--xdp-entries {}: expected 1 to {MAX_ENTRIES}",
            c.xdp_entries
        ));
    }
    if let Some(phys) = streamcap::source::physical_memory() {
        let need = u64::from(c.xdp_entries) * ENTRY_BYTES;
        if need > phys / 4 {
            return Err(format!(
                "--xdp-entries {}: about {need} bytes of kernel memory, more than a quarter of the machine's {phys}",
                c.xdp_entries
            ));
        }
    }
    if iface == streamcap::source::ANY_INTERFACE {
        return skip("XDP attaches to one interface, not to `any`".into());
    }
    attach_program(c, iface, when, skip)
}

#[cfg(feature = "xdp")]
fn attach_program(
    c: &Common,
    iface: &str,
    _when: XdpWhen,
    skip: impl Fn(String) -> Result<Option<Attached>, String>,
) -> Result<Option<Attached>, String> {
    use streamcap::subzero::xdp::{AttachMode, XdpFlowDrop};
    let Some(mode) = AttachMode::parse(&c.xdp_mode) else {
        return Err(format!(
            "--xdp-mode {}: expected auto, native or generic",
            c.xdp_mode
        ));
    };
    match XdpFlowDrop::attach(iface, c.xdp_entries, mode, c.group) {
        Ok(prog) => Ok(Some(Attached {
            prog: Arc::new(prog),
            timeout: (c.xdp_timeout * 1e9) as u64,
        })),
        Err(e) => skip(e.message),
    }
}

/// What an XDP option or path says in a build without the `xdp` feature:
/// `what` names it (empty for the `--xdp` options); `libxdp` adds that
/// AF_XDP also needs libxdp at run time.
#[cfg(not(feature = "xdp"))]
pub(crate) fn built_without_xdp(what: &str, libxdp: bool) -> String {
    format!(
        "{what}{}this streamcap was built without XDP; rebuild it with \
         `cargo build --release --features xdp` (needs clang and libbpf-dev{})",
        if what.is_empty() { "" } else { ": " },
        if libxdp { "; libxdp1 at run time" } else { "" }
    )
}

#[cfg(not(feature = "xdp"))]
fn attach_program(
    _c: &Common,
    _iface: &str,
    _when: XdpWhen,
    skip: impl Fn(String) -> Result<Option<Attached>, String>,
) -> Result<Option<Attached>, String> {
    skip(built_without_xdp("", false))
}

/// The summary's `xdp` line: what was dropped of this capture's streams
/// (and by the whole program, when a fan-out group shares it), and what
/// the workers did with the map.
pub(crate) fn summary_line(x: &XdpOutcome, s: &SubzeroStats) -> String {
    let shared = if x.joined || x.pkts != s.pkts {
        format!(
            ", program shared in the fan-out group: {} packets in all",
            x.pkts
        )
    } else {
        String::new()
    };
    format!(
        "{} packets ({} bytes) dropped in XDP ({} mode{shared}); {} streams listed, {} listed again, {} timed out, {} not listed (map of {} full)",
        s.pkts, s.bytes, x.mode, s.installed, s.reinstalled, s.timed_out, s.map_full, x.capacity
    )
}
