//! Kernel fan-out for libpcap handles (`pcap-fanout.txt` VI): a live
//! handle's packet socket joins a `PACKET_FANOUT` group of its interface,
//! so that the processes or threads of one group share its traffic instead
//! of each receiving a copy.
//!
//! `hash` (the default) is the kernel's symmetric flow hash, with IP
//! fragments reassembled first (`PACKET_FANOUT_FLAG_DEFRAG`), so every
//! packet of a connection, both directions, reaches the same member: the
//! only mode that keeps flow affinity. The other modes share packets
//! without regard to flows.

use std::fmt;

use std::os::fd::BorrowedFd;
use streamcap::source::{FanoutJoin, KernelFanout};

/// A fan-out mode with its rollover flag: `hash`, `lb` (also
/// `round_robin`), `cpu`, `rollover`, `rnd` or `qm`, optionally followed
/// by `+rollover` (a socket whose backlog is full passes the packet on to
/// the next one).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct FanoutSpec {
    /// The kernel's `PACKET_FANOUT_*` mode.
    pub mode: KernelFanout,
    /// Whether `PACKET_FANOUT_FLAG_ROLLOVER` is set.
    pub rollover: bool,
}

impl Default for FanoutSpec {
    /// `hash`, without rollover.
    fn default() -> FanoutSpec {
        FanoutSpec {
            mode: KernelFanout::Hash,
            rollover: false,
        }
    }
}

impl FanoutSpec {
    /// Reads a mode such as `hash`, `round_robin` or `lb+rollover`
    /// (case-insensitive; whitespace around the mode and the flag is
    /// trimmed).
    pub fn parse(text: &str) -> Result<FanoutSpec, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("empty fan-out mode".to_string());
        }
        let (name, flag) = match text.split_once('+') {
            Some((name, flag)) => (name.trim(), Some(flag.trim())),
            None => (text, None),
        };
        let mode = if name.eq_ignore_ascii_case("round_robin") {
            Some(KernelFanout::Lb)
        } else {
            KernelFanout::parse(name)
        };
        let Some(mode) = mode else {
            return Err(format!(
                "unknown fan-out mode `{}`: expected hash, lb, round_robin, cpu, rollover, rnd or qm, optionally followed by +rollover",
                crate::config::quote(name)
            ));
        };
        let rollover = match flag {
            None => false,
            Some(f) if f.eq_ignore_ascii_case("rollover") => true,
            Some(f) => {
                return Err(format!(
                    "unknown fan-out flag `+{}`: only +rollover is supported",
                    crate::config::quote(f)
                ))
            }
        };
        Ok(FanoutSpec { mode, rollover })
    }

    /// The group membership: `hash` reassembles IP fragments first, so that
    /// a fragmented datagram follows its flow.
    pub fn join(self, group: u16) -> FanoutJoin {
        FanoutJoin {
            group,
            mode: self.mode,
            defrag: self.mode == KernelFanout::Hash,
            rollover: self.rollover,
        }
    }
}

impl fmt::Display for FanoutSpec {
    /// The kernel name of the mode, with `+rollover` when the flag is set.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mode.name())?;
        if self.rollover {
            f.write_str("+rollover")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for FanoutSpec {
    type Err = String;

    /// As [`FanoutSpec::parse`].
    fn from_str(s: &str) -> Result<FanoutSpec, String> {
        FanoutSpec::parse(s)
    }
}

/// Joins packet socket `fd` to fan-out `group` with `spec`; the error says
/// what the kernel refused, in words.
pub fn join(fd: BorrowedFd<'_>, group: u16, spec: FanoutSpec) -> Result<(), String> {
    let j = spec.join(group);
    j.apply(fd).map_err(|e| {
        let why = match e.raw_os_error() {
            Some(libc::EINVAL) => "the group exists with another mode or flags, or the socket is not bound to an interface".to_string(),
            Some(libc::EALREADY) => "the socket is in a fan-out group already".to_string(),
            Some(libc::EPERM) => "not permitted".to_string(),
            _ => e.to_string(),
        };
        format!(
            "joining fan-out group {group} (mode {}{}): {why}",
            spec.mode,
            if spec.rollover { "+rollover" } else { "" }
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_as_the_paper_names_them() {
        let p = |s| FanoutSpec::parse(s);
        assert_eq!(p("hash"), Ok(FanoutSpec::default()));
        assert_eq!(p("round_robin").map(|s| s.mode), Ok(KernelFanout::Lb));
        assert_eq!(p("LB").map(|s| s.mode), Ok(KernelFanout::Lb));
        for m in ["cpu", "rollover", "rnd", "qm"] {
            assert_eq!(p(m).map(|s| s.mode.name()), Ok(m));
        }
        assert_eq!(
            p("hash+rollover"),
            Ok(FanoutSpec {
                mode: KernelFanout::Hash,
                rollover: true
            })
        );
        assert!(p("hash+defrag").unwrap_err().contains("+rollover"));
        assert!(p("fastest").unwrap_err().contains("round_robin"));
    }

    #[test]
    fn hash_reassembles_fragments_and_others_do_not() {
        assert!(FanoutSpec::default().join(7).defrag);
        let rnd = FanoutSpec::parse("rnd").map(|s| s.join(7));
        assert_eq!(rnd.map(|j| (j.defrag, j.group)), Ok((false, 7)));
    }
}
