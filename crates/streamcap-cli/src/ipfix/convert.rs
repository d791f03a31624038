//! A flow record as an IPFIX flow: the end reason, the TCP flags from the
//! history letters, and delta counters when a connection was reported
//! before (`--active-timeout`), so that the IPFIX records of a connection
//! add up to its final flow record.

use crate::record::{DirRecord, FlowRecord};
use std::collections::HashMap;
use std::net::IpAddr;
use streamcap_apps::export::ipfix::{end_reason, tcp_flags, DirCounts, IpfixFlow};

/// Connections with an interim report kept at most (their counters so
/// far); past it, an interim record is not exported (the connection's next
/// record then carries what it would have: the sums stay right).
pub const MAX_OPEN: usize = 1 << 22;

/// The flowEndReason of a record.
pub fn end_reason(r: &FlowRecord) -> u8 {
    if r.extra.interim {
        return end_reason::ACTIVE_TIMEOUT;
    }
    match r.end {
        "fin" | "rst" => end_reason::END_OF_FLOW,
        "timeout" => end_reason::IDLE_TIMEOUT,
        "evicted" => end_reason::LACK_OF_RESOURCES,
        _ => end_reason::FORCED_END,
    }
}

/// The TCP flags the history letters show for each direction (uppercase:
/// the initiator, lowercase: the responder): `S` SYN, `H` SYN and ACK, `A`
/// ACK (a pure ACK), `F` FIN, `R` RST. `D` (data), `T` (retransmission)
/// and `G` (gap) name no flag, and PSH, URG, ECE and CWR are not recorded:
/// a lower bound of the flags sent (a FIN that also acknowledged shows as
/// FIN alone unless the direction sent a pure ACK too).
pub fn history_flags(history: &str) -> (u16, u16) {
    let (mut orig, mut resp) = (0, 0);
    for c in history.bytes() {
        let bits = match c.to_ascii_uppercase() {
            b'S' => tcp_flags::SYN,
            b'H' => tcp_flags::SYN | tcp_flags::ACK,
            b'A' => tcp_flags::ACK,
            b'F' => tcp_flags::FIN,
            b'R' => tcp_flags::RST,
            _ => 0,
        };
        if c.is_ascii_uppercase() {
            orig |= bits;
        } else {
            resp |= bits;
        }
    }
    (orig, resp)
}

/// Milliseconds since the Unix epoch (truncated).
fn millis(ts: crate::record::Ts) -> u64 {
    ts.0.as_nanos() / 1_000_000
}

/// One direction's counters as IPFIX has them (the flags apart).
fn counts(d: &DirRecord) -> DirCounts {
    DirCounts {
        packets: d.pkts,
        octets: d.bytes,
        tcp_flags: 0,
        captured: d.captured,
        discarded: d.discarded,
        dropped: d.dropped,
        missing: d.missing,
    }
}

/// `now - before`, counter by counter (never below 0), with `now`'s flags.
fn minus(now: &DirCounts, before: &DirCounts) -> DirCounts {
    DirCounts {
        packets: now.packets.saturating_sub(before.packets),
        octets: now.octets.saturating_sub(before.octets),
        tcp_flags: now.tcp_flags,
        captured: now.captured.saturating_sub(before.captured),
        discarded: now.discarded.saturating_sub(before.discarded),
        dropped: now.dropped.saturating_sub(before.dropped),
        missing: now.missing.saturating_sub(before.missing),
    }
}

/// `r` as an IPFIX flow with its counters so far (cumulative).
pub fn flow(r: &FlowRecord) -> IpfixFlow {
    let (fwd_flags, rev_flags) = if r.proto.0 == 6 {
        history_flags(r.extra.history.as_str())
    } else {
        (0, 0)
    };
    IpfixFlow {
        src: r.src_ip,
        dst: r.dst_ip,
        src_port: r.src_port,
        dst_port: r.dst_port,
        proto: r.proto.0,
        vlan: r.vlan.unwrap_or(0),
        start_ms: millis(r.ts),
        end_ms: millis(r.last_ts),
        end_reason: end_reason(r),
        fwd: DirCounts {
            tcp_flags: fwd_flags,
            ..counts(&r.orig)
        },
        rev: DirCounts {
            tcp_flags: rev_flags,
            ..counts(&r.resp)
        },
    }
}

/// What names a connection across its records: its serial number, first
/// packet and 5-tuple (serial numbers are per worker).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct ConnKey {
    conn_id: u64,
    first_ns: u64,
    src: IpAddr,
    dst: IpAddr,
    ports: (u16, u16),
    proto: u8,
    vlan_key: u32,
}

impl ConnKey {
    fn of(r: &FlowRecord) -> ConnKey {
        ConnKey {
            conn_id: r.extra.conn_id,
            first_ns: r.ts.0.as_nanos(),
            src: r.src_ip,
            dst: r.dst_ip,
            ports: (r.src_port, r.dst_port),
            proto: r.proto.0,
            vlan_key: r.extra.vlan_key,
        }
    }
}

/// What was last reported of a connection still open: its counters then,
/// and its last packet's time.
#[derive(Clone, Copy, Debug)]
struct Reported {
    fwd: DirCounts,
    rev: DirCounts,
    end_ms: u64,
}

/// The counters last reported of each connection with an interim record,
/// to export deltas.
#[derive(Default, Debug)]
pub struct Deltas {
    open: HashMap<ConnKey, Reported>,
    /// Interim records not exported: nothing new since the last report,
    /// or [`MAX_OPEN`] connections already kept.
    pub skipped: u64,
}

impl Deltas {
    /// The IPFIX flow to export for `r` (None: nothing to export). Its
    /// counters are what `r` adds to the connection's earlier reports; a
    /// record after an interim one starts where that one ended (the
    /// engine keeps no first-packet time per interval), so a connection's
    /// records tile its lifetime.
    pub fn next(&mut self, r: &FlowRecord) -> Option<IpfixFlow> {
        let mut f = flow(r);
        if !r.extra.interim && self.open.is_empty() {
            // No connection was reported before (no active timeout, or
            // none fell due yet): nothing to look up.
            return Some(f);
        }
        let key = ConnKey::of(r);
        let before = if r.extra.interim {
            self.open.get(&key).copied()
        } else {
            self.open.remove(&key)
        };
        if let Some(b) = &before {
            f.fwd = minus(&f.fwd, &b.fwd);
            f.rev = minus(&f.rev, &b.rev);
            f.start_ms = b.end_ms.max(f.start_ms);
        }
        if r.extra.interim {
            if f.fwd.packets == 0 && f.rev.packets == 0 && before.is_some() {
                // Nothing since the last report.
                self.skipped += 1;
                return None;
            }
            if before.is_none() && self.open.len() >= MAX_OPEN {
                self.skipped += 1;
                return None;
            }
            let now = flow(r);
            self.open.insert(
                key,
                Reported {
                    fwd: now.fwd,
                    rev: now.rev,
                    end_ms: now.end_ms,
                },
            );
        }
        Some(f)
    }

    /// Connections with an interim report still open.
    #[cfg(test)]
    pub fn open(&self) -> usize {
        self.open.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_from_history() {
        use tcp_flags::*;
        assert_eq!(
            history_flags("ShADadFf"),
            (SYN | ACK | FIN, SYN | ACK | FIN)
        );
        assert_eq!(history_flags("Sr"), (SYN, RST));
        assert_eq!(history_flags("DTGdtg"), (0, 0));
        assert_eq!(history_flags(""), (0, 0));
    }

    fn rec(pkts: u64, last_s: u64, interim: bool) -> FlowRecord {
        let mut r = FlowRecord::for_test(5);
        r.orig.pkts = pkts;
        r.orig.bytes = pkts * 100;
        r.resp.pkts = pkts / 2;
        r.last_ts = crate::record::Ts(streamcap::Timestamp::from_secs_nanos(last_s, 0));
        r.extra.interim = interim;
        if interim {
            r.end = crate::record::INTERIM_END;
        }
        r
    }

    /// Interim records export what is new since the previous one, and
    /// the final record the rest: the sums are the final counters; the
    /// records tile the connection's time.
    #[test]
    fn deltas_add_up_to_the_final_record() {
        let mut d = Deltas::default();
        let a = d.next(&rec(10, 110, true)).expect("first interim");
        assert_eq!((a.fwd.packets, a.end_reason), (10, 2));
        assert_eq!((a.start_ms, a.end_ms), (100_000, 110_000));
        assert!(d.next(&rec(10, 110, true)).is_none(), "nothing new");
        let b = d.next(&rec(25, 120, true)).expect("second interim");
        assert_eq!((b.fwd.packets, b.fwd.octets, b.rev.packets), (15, 1500, 7));
        assert_eq!((b.start_ms, b.end_ms), (110_000, 120_000));
        let c = d.next(&rec(30, 125, false)).expect("the end");
        assert_eq!((c.fwd.packets, c.end_reason), (5, 4));
        assert_eq!(c.start_ms, 120_000);
        assert_eq!(a.fwd.packets + b.fwd.packets + c.fwd.packets, 30);
        assert_eq!(a.rev.packets + b.rev.packets + c.rev.packets, 15);
        assert_eq!(d.open(), 0);
        assert_eq!(d.skipped, 1);
        // A connection with no interim record: as it is.
        let whole = d.next(&rec(3, 101, false)).expect("record");
        assert_eq!((whole.fwd.packets, whole.start_ms), (3, 100_000));
    }
}
