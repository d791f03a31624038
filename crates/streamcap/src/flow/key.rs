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
/// canonical order, the transport protocol, the VLAN tags and the tunnel it
/// came through (see [`crate::flow::tunnel_id`]).
///
/// Addresses are stored as 128-bit integers (an IPv4 address in the top 32
/// bits, so the canonical order is the order of the address bytes) with a
/// family flag, so keys are small, `Copy`, and cheap to order, compare and
/// hash.
#[derive(Copy, Clone)]
pub struct FlowKey {
    a: u128,
    b: u128,
    /// The other fields packed in one word, as [`FlowKey::pack`] lays them
    /// out: equality and hashing take the key as three words (the struct is
    /// 48 bytes either way).
    rest: u128,
}

/// An IPv4 address as the key stores it: in the top 32 bits of the word,
/// so that the canonical order is the order of the address bytes.
#[inline]
fn ipv4_bits(octets: [u8; 4]) -> u128 {
    u128::from(u32::from_be_bytes(octets)) << 96
}

#[inline]
fn addr_bits(ip: IpAddr) -> (u128, bool) {
    match ip {
        IpAddr::V4(v4) => (ipv4_bits(v4.octets()), false),
        IpAddr::V6(v6) => (v6.to_bits(), true),
    }
}

impl FlowKey {
    /// The fields other than the addresses in one word: ports (bits 0-31),
    /// protocol (32-39), family (40), VLAN tags (64-95); the tunnel number
    /// takes bits 96-127 ([`FlowKey::with_tunnel`]).
    #[inline]
    fn pack(a_port: u16, b_port: u16, proto: u8, v6: bool, vlan: u32) -> u128 {
        u128::from(a_port)
            | u128::from(b_port) << 16
            | u128::from(proto) << 32
            | u128::from(v6) << 40
            | u128::from(vlan) << 64
    }

    fn a_port(&self) -> u16 {
        self.rest as u16
    }

    fn b_port(&self) -> u16 {
        (self.rest >> 16) as u16
    }

    fn v6(&self) -> bool {
        (self.rest >> 40) & 1 != 0
    }

    /// This key for a packet that came through tunnel `id`
    /// ([`crate::flow::tunnel_id`]; 0: none).
    #[inline(always)]
    pub fn with_tunnel(mut self, id: u32) -> FlowKey {
        self.rest = (self.rest & !(u128::from(u32::MAX) << 96)) | u128::from(id) << 96;
        self
    }

    /// The number of the tunnel the flow came through (0: none).
    pub fn tunnel_id(&self) -> u32 {
        (self.rest >> 96) as u32
    }

    /// The tunnels the flow came through, outermost first (`None` outside
    /// tunnels).
    pub fn tunnel(&self) -> Option<crate::flow::Tunnel> {
        crate::flow::tunnel(self.tunnel_id())
    }
}

impl PartialEq for FlowKey {
    /// Field by field, without a branch per field (a key comparison is on
    /// every packet's path).
    #[inline]
    fn eq(&self, o: &Self) -> bool {
        ((self.a ^ o.a) | (self.b ^ o.b) | (self.rest ^ o.rest)) == 0
    }
}

impl Eq for FlowKey {}

impl Hash for FlowKey {
    /// Feeds every field to the (keyed) hasher as three words, consistent
    /// with `Eq` (which compares the same words): equal keys write equal
    /// words.
    #[inline]
    fn hash<H: Hasher>(&self, h: &mut H) {
        h.write_u128(self.a);
        h.write_u128(self.b);
        h.write_u128(self.rest);
    }
}

impl FlowKey {
    /// The key of a packet from `src:sport` to `dst:dport`, and which side of
    /// the key the sender is. Both directions of a connection give the same
    /// key and opposite sides. `vlan` is [`crate::decode::NetPacket::vlan_key`].
    #[inline]
    pub fn new(
        src: IpAddr,
        sport: u16,
        dst: IpAddr,
        dport: u16,
        proto: u8,
        vlan: u32,
    ) -> (FlowKey, Side) {
        let (s, s6) = addr_bits(src);
        let (d, d6) = addr_bits(dst);
        FlowKey::from_bits(s, sport, d, dport, proto, s6 || d6, vlan)
    }

    /// [`FlowKey::new`] for an untagged IPv4 packet whose addresses are
    /// given as their bytes (read straight from the header).
    #[inline]
    pub(crate) fn from_ipv4(
        src: [u8; 4],
        sport: u16,
        dst: [u8; 4],
        dport: u16,
        proto: u8,
    ) -> (FlowKey, Side) {
        FlowKey::from_bits(
            ipv4_bits(src),
            sport,
            ipv4_bits(dst),
            dport,
            proto,
            false,
            0,
        )
    }

    /// [`FlowKey::new`] from addresses as 128-bit words (see [`addr_bits`]),
    /// `v6` telling which family they are.
    #[inline]
    fn from_bits(
        s: u128,
        sport: u16,
        d: u128,
        dport: u16,
        proto: u8,
        v6: bool,
        vlan: u32,
    ) -> (FlowKey, Side) {
        // Branch-free: which side sorts first is a coin toss per packet, and
        // a branch on it was mispredicted for about half of them.
        let swap = (d < s) | ((d == s) & (dport < sport));
        let addr_mask = 0u128.wrapping_sub(u128::from(swap));
        let port_mask = 0u16.wrapping_sub(u16::from(swap));
        let (addrs, ports) = ((s ^ d) & addr_mask, (sport ^ dport) & port_mask);
        (
            FlowKey {
                a: s ^ addrs,
                b: d ^ addrs,
                rest: FlowKey::pack(sport ^ ports, dport ^ ports, proto, v6, vlan),
            },
            if swap { Side::B } else { Side::A },
        )
    }

    fn ip(&self, bits: u128) -> IpAddr {
        if self.v6() {
            IpAddr::V6(Ipv6Addr::from_bits(bits))
        } else {
            IpAddr::V4(Ipv4Addr::from_bits((bits >> 96) as u32))
        }
    }

    /// The address and port of one side.
    pub fn endpoint(&self, side: Side) -> (IpAddr, u16) {
        match side {
            Side::A => (self.ip(self.a), self.a_port()),
            Side::B => (self.ip(self.b), self.b_port()),
        }
    }

    /// Whether the protocol carries ports in the key (TCP, UDP).
    pub fn has_ports(&self) -> bool {
        matches!(self.proto(), 6 | 17)
    }

    /// The lower of the two ports (the service port, usually): the locality
    /// fan-out's bucket.
    pub fn min_port(&self) -> u16 {
        self.a_port().min(self.b_port())
    }

    /// The transport protocol number.
    pub fn proto(&self) -> u8 {
        (self.rest >> 32) as u8
    }

    /// The folded VLAN tags (0 when untagged).
    pub fn vlan_key(&self) -> u32 {
        (self.rest >> 64) as u32
    }

    /// The outer VLAN id, if tagged.
    pub fn vlan(&self) -> Option<u16> {
        let o = self.vlan_key() >> 16;
        (o != 0).then(|| (o - 1) as u16)
    }

    /// The inner VLAN id of a QinQ frame.
    pub fn inner_vlan(&self) -> Option<u16> {
        let i = self.vlan_key() & 0xffff;
        (i != 0).then(|| (i - 1) as u16)
    }
}

impl fmt::Debug for FlowKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (a, ap) = self.endpoint(Side::A);
        let (b, bp) = self.endpoint(Side::B);
        write!(f, "{} {a}:{ap} <-> {b}:{bp}", self.proto())?;
        if self.vlan_key() != 0 {
            write!(f, " vlan {:#x}", self.vlan_key())?;
        }
        if self.tunnel_id() != 0 {
            write!(f, " tunnel {}", self.tunnel_id())?;
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

    /// Keys that differ in any one field are unequal (the branch-free
    /// comparison packs the ports, protocol, family and VLAN tags in one
    /// word: no field may shadow another).
    #[test]
    fn every_field_takes_part_in_equality() {
        let x: IpAddr = "10.0.0.1".parse().unwrap();
        let y: IpAddr = "10.0.0.2".parse().unwrap();
        let (base, _) = FlowKey::new(x, 1000, y, 80, 6, 0);
        let mut others = vec![
            FlowKey::new("10.0.0.3".parse().unwrap(), 1000, y, 80, 6, 0).0,
            FlowKey::new(x, 1000, "10.0.0.4".parse().unwrap(), 80, 6, 0).0,
            FlowKey::new(x, 1001, y, 80, 6, 0).0,
            FlowKey::new(x, 1000, y, 81, 6, 0).0,
            FlowKey::new(x, 1000, y, 80, 17, 0).0,
            FlowKey::new(x, 1000, y, 80, 6, 1).0,
            FlowKey::new(x, 1000, y, 80, 6, 1 << 31).0,
            base.with_tunnel(1),
            base.with_tunnel(1 << 31),
        ];
        // The same address bits, but IPv6.
        let mut v6 = base;
        v6.rest |= 1 << 40;
        others.push(v6);
        for o in others {
            assert_ne!(base, o, "{o:?}");
        }
        assert_eq!(base, FlowKey::new(y, 80, x, 1000, 6, 0).0);
        let t = base.with_tunnel(7);
        assert_eq!((t.tunnel_id(), t.with_tunnel(0)), (7, base));
        assert_eq!(t.endpoint(Side::A), base.endpoint(Side::A));
        assert_eq!((t.proto(), t.vlan_key()), (base.proto(), base.vlan_key()));
        assert_eq!(std::mem::size_of::<FlowKey>(), 48);
    }

    /// Side A is the endpoint that sorts first by (address, port), ties
    /// included: the branch-free choice agrees with the tuple order for
    /// every combination of lower, equal and higher addresses and ports,
    /// in both families.
    #[test]
    fn side_a_sorts_first() {
        let v4: [IpAddr; 3] = ["10.0.0.1", "10.0.0.2", "200.0.0.1"].map(|a| a.parse().unwrap());
        let v6: [IpAddr; 3] = ["::1", "2001:db8::1", "ff02::1"].map(|a| a.parse().unwrap());
        let ports = [0, 80, 65535];
        for addrs in [v4, v6] {
            let cases = addrs
                .iter()
                .flat_map(|&s| addrs.iter().map(move |&d| (s, d)));
            for (s, d) in cases {
                for (sp, dp) in ports.iter().flat_map(|&sp| ports.map(|dp| (sp, dp))) {
                    let (k, side) = FlowKey::new(s, sp, d, dp, 6, 0);
                    let expected = if (s, sp) <= (d, dp) { Side::A } else { Side::B };
                    assert_eq!(side, expected, "{s}:{sp} -> {d}:{dp}");
                    assert_eq!(k.endpoint(side), (s, sp));
                    assert_eq!(k.endpoint(side.other()), (d, dp));
                    let (back, back_side) = FlowKey::new(d, dp, s, sp, 6, 0);
                    assert_eq!(back, k);
                    let expected = if (d, dp) <= (s, sp) { Side::A } else { Side::B };
                    assert_eq!(back_side, expected, "{d}:{dp} -> {s}:{sp}");
                }
            }
        }
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
