//! Target-based overlap policies: which bytes win when two segments (or two IP
//! fragments) cover the same sequence range with possibly different contents.
//!
//! Operating systems resolve overlapping data differently, and an attacker can
//! exploit the difference between what a monitor reassembles and what the
//! target host reassembles (Ptacek & Newsham 1998; Novak, "Target-Based TCP
//! Stream Reassembly", 2007). streamcap lets the user pick the target's policy,
//! as a default and per stream.
//!
//! A policy only decides between bytes the application has **not yet
//! received**. Bytes already delivered are final; a later segment that
//! contradicts them is counted and flagged as an overlap conflict.
//!
//! The rules are stated for one *old* (stored, undelivered) segment `O =
//! [os, oe)` and one *new* segment `N = [ns, ne)` that overlap. Three shapes
//! exist:
//!
//! | shape | condition | first | last | linux | bsd | windows | solaris |
//! |---|---|---|---|---|---|---|---|
//! | left overlap: `O` begins first | `os < ns` | old | new | old | old | old | new, unless `O` also covers the end of `N` |
//! | right overlap: `N` begins first, ends inside `O` | `ns < os`, `ne < oe` | old | new | new | new | new | old |
//! | same start, `N` shorter | `ns == os`, `ne < oe` | old | new | old | old | old | old |
//! | `N` covers `O` | `ns <= os`, `ne >= oe` | old | new | new if `ns < os`, or if `ns == os` and `ne > oe` | new if `ns < os` | new if `ns < os` | old if `N` and `O` are the same range and a hole lies just before them, else new |
//!
//! (For linux, bsd and windows this reduces to: the new segment wins where it
//! starts strictly before the old one; at the same start only linux takes a
//! longer new segment. This is what FreeBSD's `tcp_reass` and Linux's
//! out-of-order queue do.)
//!
//! In words:
//! - **first**: the first bytes seen for an offset always win (Windows Vista, proxies).
//! - **last**: the latest bytes always win (old Linux, Cisco IOS).
//! - **linux**: keep old data a new segment starts inside of; a new segment wins
//!   where it starts earlier, or starts at the same place and is longer.
//! - **bsd**: keep old data unless the new segment starts strictly before it
//!   (FreeBSD, NetBSD, OpenBSD, macOS, HP-UX 10).
//! - **windows**: as `bsd` for TCP (Windows XP/2003/7+ share the rule).
//! - **solaris**: new data wins where it starts inside old data or covers it,
//!   old data wins where the new segment ends inside it; an exact
//!   retransmission of an out-of-order segment keeps the first copy (Solaris, HP-UX 11).

use std::fmt;
use std::str::FromStr;

/// How overlapping, not-yet-delivered bytes are resolved.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum OverlapPolicy {
    /// The first bytes seen win.
    First,
    /// The last bytes seen win.
    Last,
    /// Linux rules (see the module docs).
    Linux,
    /// BSD rules (see the module docs). The default, as in Suricata and Snort.
    #[default]
    Bsd,
    /// Windows rules (see the module docs).
    Windows,
    /// Solaris rules (see the module docs).
    Solaris,
}

impl OverlapPolicy {
    /// Every policy, in the order the documentation lists them.
    pub const ALL: [OverlapPolicy; 6] = [
        OverlapPolicy::First,
        OverlapPolicy::Last,
        OverlapPolicy::Linux,
        OverlapPolicy::Bsd,
        OverlapPolicy::Windows,
        OverlapPolicy::Solaris,
    ];

    /// The policy's name as accepted by [`FromStr`] and the CLI.
    pub fn name(self) -> &'static str {
        match self {
            OverlapPolicy::First => "first",
            OverlapPolicy::Last => "last",
            OverlapPolicy::Linux => "linux",
            OverlapPolicy::Bsd => "bsd",
            OverlapPolicy::Windows => "windows",
            OverlapPolicy::Solaris => "solaris",
        }
    }

    /// Decides whether the new segment's bytes replace the old segment's bytes
    /// in the range where they overlap.
    ///
    /// `old` and `new` are half-open ranges `(start, end)` that overlap.
    /// `hole_before_old` tells whether the byte just before `old` is missing
    /// (only the Solaris rule looks at it).
    pub fn new_wins(self, old: (u64, u64), new: (u64, u64), hole_before_old: bool) -> bool {
        let (os, oe) = old;
        let (ns, ne) = new;
        match self {
            OverlapPolicy::First => false,
            OverlapPolicy::Last => true,
            OverlapPolicy::Linux | OverlapPolicy::Bsd | OverlapPolicy::Windows => {
                if ns < os {
                    // The new segment starts first: it wins where it overlaps.
                    true
                } else if os < ns {
                    false
                } else {
                    // Same start: only Linux takes a longer new segment.
                    self == OverlapPolicy::Linux && ne > oe
                }
            }
            OverlapPolicy::Solaris => {
                if os < ns {
                    // Old begins first: new wins unless old covers it on both sides.
                    oe < ne
                } else if ne < oe {
                    false
                } else {
                    !(ns == os && ne == oe && hole_before_old)
                }
            }
        }
    }
}

impl fmt::Display for OverlapPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error for an unknown policy name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown overlap policy {0:?} (expected first, last, linux, bsd, windows or solaris)")]
pub struct UnknownPolicy(pub String);

impl FromStr for OverlapPolicy {
    type Err = UnknownPolicy;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        OverlapPolicy::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownPolicy(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for p in OverlapPolicy::ALL {
            assert_eq!(p.name().parse::<OverlapPolicy>().unwrap(), p);
        }
        assert!("vista".parse::<OverlapPolicy>().is_err());
    }

    #[test]
    fn table() {
        // (old, new, hole) -> expected per policy in ALL order.
        let left = ((10, 20), (15, 25));
        let inside = ((10, 30), (15, 25));
        let right = ((10, 20), (5, 15));
        let cover_earlier = ((10, 20), (5, 25));
        let same_start_longer = ((10, 20), (10, 25));
        let same = ((10, 20), (10, 20));
        type Case = (((u64, u64), (u64, u64)), bool, [bool; 6]);
        let same_start_shorter = ((10, 20), (10, 15));
        let cases: [Case; 8] = [
            (
                same_start_shorter,
                false,
                [false, true, false, false, false, false],
            ),
            (left, false, [false, true, false, false, false, true]),
            (inside, false, [false, true, false, false, false, false]),
            (right, false, [false, true, true, true, true, false]),
            (cover_earlier, false, [false, true, true, true, true, true]),
            (
                same_start_longer,
                false,
                [false, true, true, false, false, true],
            ),
            (same, true, [false, true, false, false, false, false]),
            (same, false, [false, true, false, false, false, true]),
        ];
        for ((old, new), hole, want) in cases {
            for (p, w) in OverlapPolicy::ALL.into_iter().zip(want) {
                assert_eq!(
                    p.new_wins(old, new, hole),
                    w,
                    "{p} old={old:?} new={new:?} hole={hole}"
                );
            }
        }
    }
}
