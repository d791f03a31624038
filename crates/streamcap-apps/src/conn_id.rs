//! Names of a connection that every application's output shares: Zeek's
//! `uid` (`C` and 17 base62 characters, as in `conn.log`) and a numeric
//! flow id for EVE JSON. Both derive from one SHA-256 of the connection's
//! first timestamp, protocol, endpoints, VLAN key, serial number and
//! tunnel, so the same connection gets the same names in every log of a
//! run, and the same input the same names in every run.

use sha2::{Digest, Sha256};
use std::net::IpAddr;
use streamcap::deliver::{FlowEnd, Stream};
use streamcap::flow::Direction;
use streamcap::Timestamp;

/// What identifies one connection of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnId {
    /// Time of the connection's first packet.
    pub first: Timestamp,
    /// Transport protocol number.
    pub proto: u8,
    /// Initiator address and port.
    pub orig: (IpAddr, u16),
    /// Responder address and port.
    pub resp: (IpAddr, u16),
    /// The flow key's folded VLAN tags (`FlowKey::vlan_key`).
    pub vlan_key: u32,
    /// The connection's serial number (`StreamInfo::conn_id`).
    pub conn_id: u64,
    /// The tunnels it came through, as `streamcap::flow::Tunnel` prints them.
    pub tunnel: Option<String>,
}

impl ConnId {
    /// The connection of a stream, from inside a callback: its first
    /// packet is the earlier start of the two directions (the other's
    /// descriptor is built for it).
    pub fn of_stream<S>(s: &Stream<'_, S>) -> ConnId {
        let info = s.info();
        let opp = s.opposite();
        let first = if opp.created {
            info.start.min(opp.start)
        } else {
            info.start
        };
        let (orig, resp) = match info.direction {
            Direction::Orig => (s.src(), s.dst()),
            Direction::Resp => (s.dst(), s.src()),
        };
        let key = s.key();
        ConnId {
            first,
            proto: s.proto(),
            orig,
            resp,
            vlan_key: key.vlan_key(),
            conn_id: info.conn_id,
            tunnel: key.tunnel().map(|t| t.to_string()),
        }
    }

    /// The connection that ended.
    pub fn of_flow<S>(fe: &FlowEnd<'_, S>) -> ConnId {
        let key = fe.key();
        ConnId {
            first: fe.first_ts(),
            proto: fe.proto(),
            orig: fe.orig_endpoint(),
            resp: fe.resp_endpoint(),
            vlan_key: key.vlan_key(),
            conn_id: fe.stream(Direction::Orig).conn_id,
            tunnel: key.tunnel().map(|t| t.to_string()),
        }
    }

    fn digest(&self) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(self.first.as_nanos().to_be_bytes());
        h.update([self.proto]);
        h.update(self.orig.0.to_string().as_bytes());
        h.update(self.orig.1.to_be_bytes());
        h.update(b"|");
        h.update(self.resp.0.to_string().as_bytes());
        h.update(self.resp.1.to_be_bytes());
        h.update(self.vlan_key.to_be_bytes());
        h.update(self.conn_id.to_be_bytes());
        if let Some(t) = &self.tunnel {
            h.update(b"|");
            h.update(t.as_bytes());
        }
        h.finalize().into()
    }

    /// Zeek's `uid`: "C" and 17 base62 characters.
    pub fn uid(&self) -> String {
        base62_uid(&self.digest())
    }

    /// Both names at once ([`ConnId::flow_id`], [`ConnId::uid`]), for one
    /// digest instead of two.
    pub fn names(&self) -> (u64, String) {
        let d = self.digest();
        (flow_id_of(&d), base62_uid(&d))
    }

    /// A flow id for EVE JSON: 51 bits, so that every JSON reader holds it
    /// exactly (a double has a 53-bit mantissa).
    pub fn flow_id(&self) -> u64 {
        flow_id_of(&self.digest())
    }
}

/// The flow id of a connection's digest: 51 bits of it.
fn flow_id_of(d: &[u8; 32]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[16..24]);
    u64::from_be_bytes(b) & ((1 << 51) - 1)
}

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// 62^10, the largest power of 62 whose remainders fit a `u64` digit loop.
const BASE62_POW10: u128 = 839_299_365_868_340_224;

/// "C" and 17 base62 characters of the first 16 bytes of `d`: its 17 lowest
/// base62 digits, lowest first.
pub fn base62_uid(d: &[u8; 32]) -> String {
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    let v = u128::from_be_bytes(b);
    // Two 128-bit divisions instead of 34: the ten lowest digits come from
    // the remainder by 62^10, the next seven from the quotient, each in
    // 64-bit arithmetic.
    let low = (v % BASE62_POW10) as u64;
    let high = (v / BASE62_POW10 % 62u128.pow(7)) as u64;
    let mut out = String::with_capacity(18);
    out.push('C');
    for (mut part, digits) in [(low, 10), (high, 7)] {
        for _ in 0..digits {
            out.push(char::from(BASE62[(part % 62) as usize]));
            part /= 62;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uids_equal_the_plain_digit_loop() {
        let plain = |d: &[u8; 32]| {
            let mut b = [0u8; 16];
            b.copy_from_slice(&d[..16]);
            let mut v = u128::from_be_bytes(b);
            let mut out = String::from("C");
            for _ in 0..17 {
                out.push(char::from(BASE62[(v % 62) as usize]));
                v /= 62;
            }
            out
        };
        assert_eq!(BASE62_POW10, 62u128.pow(10));
        let mut d = [0u8; 32];
        for seed in 0u8..=255 {
            for (i, b) in d.iter_mut().enumerate() {
                *b = seed
                    .wrapping_mul(31)
                    .wrapping_add(i as u8)
                    .rotate_left(u32::from(seed % 8));
            }
            assert_eq!(base62_uid(&d), plain(&d));
        }
        assert_eq!(base62_uid(&[0xff; 32]), plain(&[0xff; 32]));
        assert_eq!(base62_uid(&[0; 32]), plain(&[0; 32]));
    }

    #[test]
    fn names_are_stable_and_distinct() {
        let c = ConnId {
            first: Timestamp(1_000),
            proto: 6,
            orig: ("10.0.0.1".parse().unwrap(), 1234),
            resp: ("10.0.0.2".parse().unwrap(), 80),
            vlan_key: 0,
            conn_id: 1,
            tunnel: None,
        };
        let uid = c.uid();
        assert_eq!(uid.len(), 18);
        assert!(uid.starts_with('C'));
        assert_eq!(uid, c.clone().uid());
        let other = ConnId {
            conn_id: 2,
            ..c.clone()
        };
        assert_ne!(other.uid(), uid);
        assert_ne!(other.flow_id(), c.flow_id());
        assert!(c.flow_id() < 1 << 51);
    }
}
