//! An in-memory flow-drop map that also gives the XDP program's verdict
//! on a frame ([`MemoryMap::offer`]): the same keys, the same counts, a
//! capacity. It runs the subzero path without a kernel (tests, fuzzing,
//! an application's own tests of its handler with `--xdp` semantics): put
//! it in a [`SubzeroConfig`](super::SubzeroConfig), offer each frame to it,
//! and hand the worker only the frames it does not drop.

use super::{DropCounts, DropKey, FlowDropMap, InsertError};
use crate::decode::{decode_ip, decode_transport, Transport};
use crate::source::RawPacket;
use std::collections::HashMap;
use std::sync::Mutex;

/// A segment ending further than this past the highest end so far does
/// not move the stream (the program's `MAX_SEQ_JUMP`).
const MAX_SEQ_JUMP: u32 = 1 << 30;

/// One listed key: the counts, and the highest TCP end so far.
#[derive(Default)]
struct Slot {
    counts: DropCounts,
    max_end: Option<u32>,
}

/// The flow-drop map and program, in memory.
pub struct MemoryMap {
    entries: Mutex<HashMap<DropKey, Slot>>,
    capacity: usize,
}

impl MemoryMap {
    /// A map that holds at most `capacity` keys.
    pub fn new(capacity: usize) -> MemoryMap {
        MemoryMap {
            entries: Mutex::new(HashMap::new()),
            capacity,
        }
    }

    /// Keys listed now.
    pub fn len(&self) -> usize {
        self.entries.lock().map_or(0, |e| e.len())
    }

    /// Whether no key is listed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What the XDP program does with `pkt`: true when it drops (and
    /// counts) it, false when it lets it through: Ethernet (VLAN tags
    /// included), IPv4 or IPv6 without fragments, TCP without SYN, FIN or
    /// RST, or UDP, of a listed key.
    pub fn offer(&self, pkt: &RawPacket<'_>) -> bool {
        let Ok(net) = decode_ip(pkt.link, pkt.data) else {
            return false;
        };
        if net.fragment.is_some() || net.tunnel != 0 {
            return false;
        }
        let Ok(t) = decode_transport(net.proto, net.payload, net.payload_wire_len) else {
            return false;
        };
        let (sport, dport, payload, seq) = match &t {
            Transport::Tcp(s) => {
                if s.flags.syn() || s.flags.fin() || s.flags.rst() {
                    return false;
                }
                (s.src_port, s.dst_port, s.payload_wire_len, Some(s.seq))
            }
            Transport::Udp(u) => (u.src_port, u.dst_port, u.payload_wire_len, None),
            _ => return false,
        };
        let mut key = DropKey {
            vlan: net.vlan_key(),
            sport,
            dport,
            proto: net.proto,
            ..DropKey::default()
        };
        match (net.src, net.dst) {
            (std::net::IpAddr::V4(s), std::net::IpAddr::V4(d)) => {
                key.src[..4].copy_from_slice(&s.octets());
                key.dst[..4].copy_from_slice(&d.octets());
            }
            (std::net::IpAddr::V6(s), std::net::IpAddr::V6(d)) => {
                key.src = s.octets();
                key.dst = d.octets();
                key.v6 = 1;
            }
            _ => return false,
        }
        let Ok(mut entries) = self.entries.lock() else {
            return false;
        };
        let Some(slot) = entries.get_mut(&key) else {
            return false;
        };
        let c = &mut slot.counts;
        c.pkts += 1;
        c.bytes += u64::from(net.ip_len);
        if payload > 0 {
            c.payload += u64::from(payload);
            c.data_pkts += 1;
        }
        c.last = Some(pkt.ts);
        if let Some(seq) = seq.filter(|_| payload > 0) {
            let end = seq.wrapping_add(payload);
            match slot.max_end {
                None => slot.max_end = Some(end),
                Some(m) => {
                    let step = end.wrapping_sub(m);
                    if (step as i32) > 0 && step <= MAX_SEQ_JUMP {
                        slot.max_end = Some(end);
                        c.advance += u64::from(step);
                    }
                }
            }
        }
        true
    }
}

impl FlowDropMap for MemoryMap {
    fn insert(&self, key: &DropKey, seq: Option<u32>) -> Result<(), InsertError> {
        let mut e = self
            .entries
            .lock()
            .map_err(|e| InsertError::Failed(e.to_string()))?;
        if !e.contains_key(key) && e.len() >= self.capacity {
            return Err(InsertError::Full);
        }
        e.entry(*key).or_insert(Slot {
            counts: DropCounts::default(),
            max_end: seq,
        });
        Ok(())
    }

    fn take(&self, key: &DropKey) -> Option<DropCounts> {
        self.entries.lock().ok()?.remove(key).map(|s| s.counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Timestamp;
    use crate::LinkType;
    use etherparse::PacketBuilder;

    fn segment(seq: u32, len: usize) -> Vec<u8> {
        let mut v = Vec::new();
        PacketBuilder::ethernet2([1; 6], [2; 6])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .tcp(40000, 80, seq, 65535)
            .ack(1)
            .write(&mut v, &vec![0; len])
            .expect("frame");
        v
    }

    fn offer(m: &MemoryMap, frame: &[u8]) -> bool {
        m.offer(&RawPacket {
            ts: Timestamp(1),
            link: LinkType::ETHERNET,
            data: frame,
            orig_len: frame.len() as u32,
            record: 0,
            interface: 0,
        })
    }

    fn key() -> DropKey {
        let mut k = DropKey {
            sport: 40000,
            dport: 80,
            proto: 6,
            ..DropKey::default()
        };
        k.src[..4].copy_from_slice(&[10, 0, 0, 1]);
        k.dst[..4].copy_from_slice(&[10, 0, 0, 2]);
        k
    }

    /// The advance is counted in 64 bits across sequence wrap-arounds;
    /// a jump past 2^30 and pure ACKs do not move it.
    #[test]
    fn the_advance_survives_wrap_arounds() {
        let m = MemoryMap::new(4);
        let start = u32::MAX - 1000;
        m.insert(&key(), Some(start)).expect("insert");
        let mut seq = start;
        let step = (1u32 << 30) - 100;
        for _ in 0..5 {
            // Bytes missing before each segment: a step just under 2^30.
            seq = seq.wrapping_add(step - 100);
            assert!(offer(&m, &segment(seq, 100)));
            seq = seq.wrapping_add(100);
        }
        // A segment 2^30 + 1 past the end, and a pure ACK.
        assert!(offer(&m, &segment(seq.wrapping_add((1 << 30) + 1), 10)));
        assert!(offer(&m, &segment(seq.wrapping_add(5), 0)));
        let c = m.take(&key()).expect("listed");
        assert_eq!(c.advance, 5 * u64::from(step));
        assert!(c.advance > 1 << 32);
        assert_eq!((c.pkts, c.data_pkts, c.payload), (7, 6, 510));
        assert!(m.is_empty());
    }

    /// SYN, FIN, RST, fragments and keys not listed pass; a full map
    /// refuses a new key but not one already listed.
    #[test]
    fn what_passes_and_a_full_map() {
        let m = MemoryMap::new(1);
        assert!(!offer(&m, &segment(1, 10)), "not listed");
        m.insert(&key(), Some(1)).expect("insert");
        let mut other = key();
        other.sport = 1;
        assert_eq!(m.insert(&other, None), Err(InsertError::Full));
        assert_eq!(m.insert(&key(), Some(5)), Ok(()));
        for flags in ["S", "F", "R"] {
            let mut v = Vec::new();
            let b = PacketBuilder::ethernet2([1; 6], [2; 6])
                .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
                .tcp(40000, 80, 1, 65535);
            let b = match flags {
                "S" => b.syn(),
                "F" => b.fin(),
                _ => b.rst(),
            };
            b.write(&mut v, &[]).expect("frame");
            assert!(!offer(&m, &v), "{flags} passes");
        }
        assert!(offer(&m, &segment(1, 10)));
    }
}
