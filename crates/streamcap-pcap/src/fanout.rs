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

use std::os::fd::BorrowedFd;
use streamcap::source::{FanoutJoin, KernelFanout};

/// A fan-out mode with its rollover flag, as the configuration file, the
/// environment and `pcap_fanout` name it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FanoutSpec {
    /// How packets are spread over the group.
    pub mode: KernelFanout,
    /// `PACKET_FANOUT_FLAG_ROLLOVER`: when the chosen member is full, the
    /// packet goes to another instead of being dropped.
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
    /// Parses `hash`, `lb` (or `round_robin`), `cpu`, `rollover`, `rnd`,
    /// `qm` (case-insensitive), optionally followed by `+rollover`
    /// (`hash+rollover`). The error lists the valid names.
    pub fn parse(s: &str) -> Result<FanoutSpec, String> {
        let s = s.trim();
        let (name, rollover) = match s.split_once('+') {
            Some((name, flag)) if flag.trim().eq_ignore_ascii_case("rollover") => {
                (name.trim(), true)
            }
            Some((_, flag)) => {
                return Err(format!(
                    "unknown fan-out flag {:?} in {s:?} (the only flag is +rollover)",
                    flag.trim()
                ))
            }
            None => (s, false),
        };
        let mode = if name.eq_ignore_ascii_case("round_robin") {
            KernelFanout::Lb
        } else {
            name.parse::<KernelFanout>()
                .map_err(|e| format!("{e}, or round_robin"))?
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
