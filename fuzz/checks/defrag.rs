//! IP fragment reassembly driven by arbitrary fragments of a few datagrams.
//!
//! Input: a configuration byte (overlap policy, tight or default limits),
//! then 6-byte fragment records: datagram selector, offset (two bytes, in
//! 8-byte units), flags (more fragments, cut by the snaplen), length, time
//! step. Checks after every fragment: the memory held and the datagrams stay
//! within the limits; a completed datagram is no larger than the maximum and
//! was carried by at least one fragment, its bytes no more than its length
//! on the wire. At the end, once everything expired, every fragment fed is
//! accounted for exactly once: part of a datagram passed on or counted as
//! dropped, under exactly one reason.

use std::net::{IpAddr, Ipv4Addr};
use streamcap::decode::defrag::{DefragConfig, DefragOutcome, Defragmenter, FragKey, Fragment};
use streamcap::{OverlapPolicy, Timestamp};

/// Runs the checks on one input (panics on a violation).
pub fn run(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let tight = sel & 0x80 != 0;
    let cfg = DefragConfig {
        policy: OverlapPolicy::ALL[usize::from(sel & 0x0f) % OverlapPolicy::ALL.len()],
        max_fragments_per_datagram: if tight { 4 } else { 1024 },
        max_datagrams: if tight { 2 } else { 4096 },
        max_datagram_size: if tight { 600 } else { 65535 },
        max_bytes: if tight { 1024 } else { 16 << 20 },
        timeout_ns: 1_000_000_000,
    };
    let mut d = Defragmenter::new(cfg.clone());
    let mut now = 0u64;
    let mut fed = 0u64;
    let mut carried = 0u64;
    let mut payload = Vec::new();
    for rec in rest.chunks_exact(6) {
        let key = FragKey {
            src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1 + (rec[0] & 3))),
            dst: IpAddr::V4(Ipv4Addr::new(10, 0, 1, 1)),
            id: u32::from(rec[0] >> 2 & 3),
            proto: 17,
            vlan: 0,
        };
        let offset = u32::from(u16::from_be_bytes([rec[1], rec[2]]) & 0x1fff) * 8;
        let more = rec[3] & 1 != 0;
        let cut = rec[3] & 2 != 0;
        let wire_len = u32::from(rec[4]) * 4;
        now += u64::from(rec[5]) * 20_000_000;
        payload.clear();
        payload.extend((0..wire_len).map(|i| (i as u8) ^ rec[3]));
        let present = if cut {
            &payload[..payload.len() / 2]
        } else {
            &payload[..]
        };
        let frag = Fragment { offset, more };
        fed += 1;
        match d.process(Timestamp(now), key, frag, present, wire_len) {
            DefragOutcome::Pending => {}
            DefragOutcome::Complete(r) => {
                assert!(
                    r.wire_len as usize <= cfg.max_datagram_size,
                    "datagram too large"
                );
                assert!(
                    r.data.len() <= r.wire_len as usize,
                    "more bytes than on the wire"
                );
                assert!(r.fragments >= 1);
                carried += u64::from(r.fragments);
            }
        }
        assert!(d.bytes_held() <= cfg.max_bytes, "bytes held over the limit");
        assert!(
            d.in_progress() <= cfg.max_datagrams,
            "datagrams over the limit"
        );
        assert_eq!(d.stats().fragments, fed);
    }
    d.expire(Timestamp(u64::MAX));
    assert_eq!(d.in_progress(), 0);
    // Buffers kept for reuse stay, within the limit.
    assert!(d.bytes_held() <= cfg.max_bytes, "bytes held over the limit");
    assert_eq!(carried, d.stats().fragments_reassembled);
    assert_eq!(d.stats().fragments_dropped, d.stats().dropped.total());
    assert_eq!(
        carried + d.stats().fragments_dropped,
        fed,
        "every fragment is in a datagram or dropped: {:?}",
        d.stats()
    );
}
