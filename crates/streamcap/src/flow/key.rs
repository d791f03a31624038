//! Bidirectional flow keys.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// One of the two endpoints of a connection, by the key's canonical order.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// The endpoint that sorts first (lower address, then lower port).
    A = 0,
    /// The other endpoint.
    B = 1,
}

impl Side {
    /// The other side.
    pub fn other(self) -> Side {
        match self {
            Side::A => Side::B,
            Side::B => Side::A,
        }
    }
    /// 0 for A, 1 for B.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// The direction of a stream relative to the connection's initiator.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// From the initiator (the sender of the first SYN, or of the first packet).
    Orig,
    /// From the responder.
    Resp,
}

impl Direction {
    /// "orig" or "resp".
    pub fn name(self) -> &'static str {
        match self {
            Direction::Orig => "orig",
            Direction::Resp => "resp",
        }
    }
}

/// A connection's identity, the same for both directions: the two endpoints in
/// canonical order, the transport protocol and the VLAN tags.
///
/// Addresses are stored as 16 bytes (IPv4 in the first four) with a family flag,
/// so keys are small, `Copy` and cheap to hash.
#[derive(Copy, Clone, PartialEq, Eq)]
pub struct FlowKey {
    a: [u8; 16],
    b: [u8; 16],
    a_port: u16,
    b_port: u16,
    proto: u8,
    v6: bool,
    vlan: u32,
}

fn addr_bytes(ip: IpAddr) -> ([u8; 16], bool) {
    match ip {
        IpAddr::V4(v4) => {
            let mut b = [0u8; 16];
            b[..4].copy_from_slice(&v4.octets());
            (b, false)
        }
        IpAddr::V6(v6) => (v6.octets(), true),
    }
}

impl Hash for FlowKey {
    /// Feeds the key to the hasher as four machine words (consistent with the
    /// derived `Eq`: equal keys write equal words).
    fn hash<H: Hasher>(&self, h: &mut H) {
        h.write_u128(u128::from_ne_bytes(self.a));
        h.write_u128(u128::from_ne_bytes(self.b));
        h.write_u64(
            u64::from(self.a_port)
                | u64::from(self.b_port) << 16
                | u64::from(self.proto) << 32
                | u64::from(self.v6) << 40,
        );
        h.write_u32(self.vlan);
    }
}

impl FlowKey {
    /// Builds the key of a packet from `src:sport` to `dst:dport` and tells
    /// which side of the key the sender is. `vlan` is the folded VLAN tag set
    /// (see [`crate::decode::NetPacket::vlan_key`]).
    pub fn new(
        src: IpAddr,
        sport: u16,
        dst: IpAddr,
        dport: u16,
        proto: u8,
        vlan: u32,
    ) -> (FlowKey, Side) {
        let (s, v6) = addr_bytes(src);
        let (d, _) = addr_bytes(dst);
        let v6 = v6 || dst.is_ipv6();
        if (s, sport) <= (d, dport) {
            (
                FlowKey {
                    a: s,
                    b: d,
                    a_port: sport,
                    b_port: dport,
                    proto,
                    v6,
                    vlan,
                },
                Side::A,
            )
        } else {
            (
                FlowKey {
                    a: d,
                    b: s,
                    a_port: dport,
                    b_port: sport,
                    proto,
                    v6,
                    vlan,
                },
                Side::B,
            )
        }
    }

    fn ip(&self, bytes: &[u8; 16]) -> IpAddr {
        if self.v6 {
            IpAddr::V6(Ipv6Addr::from(*bytes))
        } else {
            IpAddr::V4(Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3]))
        }
    }

    /// The address and port of `side`.
    pub fn endpoint(&self, side: Side) -> (IpAddr, u16) {
        match side {
            Side::A => (self.ip(&self.a), self.a_port),
            Side::B => (self.ip(&self.b), self.b_port),
        }
    }

    /// The transport protocol number.
    pub fn proto(&self) -> u8 {
        self.proto
    }

    /// The folded VLAN tags (0 when untagged).
    pub fn vlan_key(&self) -> u32 {
        self.vlan
    }

    /// The outer VLAN id, if tagged.
    pub fn vlan(&self) -> Option<u16> {
        let o = self.vlan >> 16;
        (o != 0).then(|| (o - 1) as u16)
    }

    /// The inner VLAN id of a QinQ frame.
    pub fn inner_vlan(&self) -> Option<u16> {
        let i = self.vlan & 0xffff;
        (i != 0).then(|| (i - 1) as u16)
    }
}

impl fmt::Debug for FlowKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (a, ap) = self.endpoint(Side::A);
        let (b, bp) = self.endpoint(Side::B);
        write!(f, "{} {a}:{ap} <-> {b}:{bp}", self.proto)?;
        if self.vlan != 0 {
            write!(f, " vlan {:#x}", self.vlan)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_directions_share_a_key() {
        let x: IpAddr = "10.0.0.2".parse().unwrap();
        let y: IpAddr = "10.0.0.1".parse().unwrap();
        let (k1, s1) = FlowKey::new(x, 1000, y, 80, 6, 0);
        let (k2, s2) = FlowKey::new(y, 80, x, 1000, 6, 0);
        assert_eq!(k1, k2);
        assert_ne!(s1, s2);
        assert_eq!(k1.endpoint(s1), (x, 1000));
        assert_eq!(k1.endpoint(s2), (y, 80));
        let (k3, _) = FlowKey::new(x, 1000, y, 80, 6, (5 + 1) << 16);
        assert_ne!(k1, k3);
        assert_eq!(k3.vlan(), Some(5));
        assert_eq!(k3.inner_vlan(), None);
    }

    #[test]
    fn ipv6_round_trip() {
        let x: IpAddr = "2001:db8::1".parse().unwrap();
        let y: IpAddr = "2001:db8::2".parse().unwrap();
        let (k, s) = FlowKey::new(x, 1, y, 2, 17, 0);
        assert_eq!(k.endpoint(s).0, x);
        assert_eq!(k.endpoint(s.other()).0, y);
    }
}
