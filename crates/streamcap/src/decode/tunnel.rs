//! IP-level tunnels: what an outer packet carries inside.
//!
//! An outer IP packet is a tunnel when its protocol is IP-in-IP (4: IPv4
//! inside), IPv6 (41: IPv6 inside, "6in4" under IPv4) or GRE (47), or when
//! it is UDP to or from a configured VXLAN, GENEVE or GTP-U port (either
//! port, as tshark dispatches them). [`Decapsulator::inner`] reads the
//! tunnel header with checked slicing and returns the inner frame and how
//! to decode it: an Ethernet frame (VXLAN, GENEVE and GRE transparent
//! Ethernet bridging, ERSPAN types I to III) or an IP packet (IP-in-IP,
//! GRE with an IP or PPP payload, GENEVE with an IP payload, GTP-U G-PDUs).
//!
//! `etherparse` 0.21 reads none of these headers (it has Ethernet, VLAN,
//! MACsec, Linux SLL, ARP, IP, TCP, UDP and ICMP), so they are read here.
//! A tunnel header that is cut short or invalid is a
//! [`DecodeError::BadEncapsulation`]; a valid one carrying something other
//! than Ethernet or IP (a GTP-U echo, a GRE key-only keepalive, compressed
//! PPP) carries no inner packet and is no error.

use super::{decode_ip, DecodeError, NetPacket, Transport};
use crate::flow::{tunnel_depth, tunnel_id, TunnelHop};
use crate::LinkType;
use std::fmt;

/// The kind of an encapsulation that carries inner packets.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TunnelKind {
    /// IPv4 inside IPv4 or IPv6 (IP protocol 4).
    IpInIp,
    /// IPv6 inside IPv4 ("6in4", SIT) or IPv6 (IP protocol 41).
    Ipv6InIp,
    /// GRE (IP protocol 47) with an IP, Ethernet or PPP payload.
    Gre,
    /// ERSPAN type I or II mirrored frames (GRE protocol 0x88be).
    ErspanII,
    /// ERSPAN type III mirrored frames (GRE protocol 0x22eb).
    ErspanIII,
    /// VXLAN (UDP, port 4789 by default).
    Vxlan,
    /// GENEVE (UDP, port 6081 by default).
    Geneve,
    /// GTP-U user plane (UDP, port 2152 by default).
    GtpU,
}

impl TunnelKind {
    /// A short name for records and reports.
    pub fn name(self) -> &'static str {
        match self {
            TunnelKind::IpInIp => "ipip",
            TunnelKind::Ipv6InIp => "ip6ip",
            TunnelKind::Gre => "gre",
            TunnelKind::ErspanII => "erspan2",
            TunnelKind::ErspanIII => "erspan3",
            TunnelKind::Vxlan => "vxlan",
            TunnelKind::Geneve => "geneve",
            TunnelKind::GtpU => "gtpu",
        }
    }
}

impl fmt::Display for TunnelKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The UDP tunnels a port announces.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum UdpTunnel {
    Vxlan,
    Geneve,
    GtpU,
}

/// What a tunnel packet carries: the inner frame and how to read it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Inner<'a> {
    /// The encapsulation.
    pub kind: TunnelKind,
    /// The virtual network identifier of VXLAN and GENEVE (the same in both
    /// directions, so part of the tunnel's identity); `None` for the others.
    pub vni: Option<u32>,
    /// How the inner frame starts: [`LinkType::ETHERNET`], [`LinkType::IPV4`]
    /// or [`LinkType::IPV6`].
    pub link: LinkType,
    /// The inner frame's bytes present in the capture.
    pub frame: &'a [u8],
}

/// Finds tunnels in outer packets: the UDP ports that announce VXLAN,
/// GENEVE and GTP-U, and the header readers.
#[derive(Clone, Debug)]
pub struct Decapsulator {
    /// Bit `p % 64` is set for every tunnel port `p`: most UDP packets are
    /// told apart by one test of each port.
    bloom: u64,
    /// The tunnel ports, each with the tunnel it announces.
    ports: Vec<(u16, UdpTunnel)>,
    /// Tunnels opened at most inside one another (0: none).
    max_depth: usize,
}

impl Decapsulator {
    /// The decapsulator a configuration asks for
    /// ([`crate::Config::vxlan_ports`] and the fields after it).
    pub fn from_config(cfg: &crate::Config) -> Decapsulator {
        let mut d = Decapsulator::new(&cfg.vxlan_ports, &cfg.geneve_ports, &cfg.gtp_ports);
        d.max_depth = cfg.max_tunnel_depth;
        if d.max_depth == 0 {
            (d.bloom, d.ports) = (0, Vec::new());
        }
        d
    }

    /// A decapsulator that takes the given UDP ports for VXLAN, GENEVE and
    /// GTP-U (a port listed twice goes to the first of those), opening
    /// tunnels up to [`crate::Config::default`]'s depth.
    pub fn new(vxlan: &[u16], geneve: &[u16], gtp: &[u16]) -> Decapsulator {
        let mut ports: Vec<(u16, UdpTunnel)> = Vec::new();
        let tagged = vxlan
            .iter()
            .map(|&p| (p, UdpTunnel::Vxlan))
            .chain(geneve.iter().map(|&p| (p, UdpTunnel::Geneve)))
            .chain(gtp.iter().map(|&p| (p, UdpTunnel::GtpU)));
        for (p, t) in tagged {
            if !ports.iter().any(|&(q, _)| q == p) {
                ports.push((p, t));
            }
        }
        let bloom = ports.iter().fold(0u64, |b, &(p, _)| b | 1 << (p % 64));
        Decapsulator {
            bloom,
            ports,
            max_depth: 4,
        }
    }

    /// The UDP tunnel announced by either port, if any.
    #[inline(always)]
    fn udp_tunnel(&self, src: u16, dst: u16) -> Option<UdpTunnel> {
        if (self.bloom >> (src % 64)) & 1 == 0 && (self.bloom >> (dst % 64)) & 1 == 0 {
            return None;
        }
        self.udp_tunnel_slow(src, dst)
    }

    #[inline(never)]
    fn udp_tunnel_slow(&self, src: u16, dst: u16) -> Option<UdpTunnel> {
        // The destination port first: a VXLAN packet's source port is an
        // arbitrary hash, which may happen to be another tunnel's port.
        [dst, src]
            .iter()
            .find_map(|&p| self.ports.iter().find(|&&(q, _)| q == p).map(|&(_, t)| t))
    }

    /// Whether UDP between ports `src` and `dst` is tunnel traffic: what the
    /// fast paths test before they take a UDP datagram as a plain flow.
    #[inline(always)]
    pub fn udp_carrier(&self, src: u16, dst: u16) -> bool {
        self.udp_tunnel(src, dst).is_some()
    }

    /// Whether a decoded packet of IP protocol `proto` may carry a tunnel
    /// ([`Decapsulator::inner`] is worth calling).
    #[inline(always)]
    pub fn carrier(&self, proto: u8, t: &Transport<'_>) -> bool {
        // By protocol number first: TCP, the common case, is one test.
        match proto {
            6 => false,
            17 => matches!(t, Transport::Udp(u) if self.udp_carrier(u.src_port, u.dst_port)),
            4 | 41 | 47 => self.max_depth > 0,
            _ => false,
        }
    }

    /// The packet inside tunnel packet `outer` (whose transport layer is
    /// `t`), decoded, its [`NetPacket::tunnel`] naming the tunnel (inside
    /// `outer`'s own, if any). `Ok(None)` when `outer` is no tunnel or
    /// carries nothing to decode; [`DecodeError::EncapLimit`] past the
    /// nesting depth or when the tunnel table is full; otherwise the error
    /// of the tunnel header or of the inner packet's own headers.
    pub fn open<'a>(
        &self,
        outer: &NetPacket<'_>,
        t: &Transport<'a>,
    ) -> Result<Option<NetPacket<'a>>, DecodeError> {
        let Some(inner) = self.inner(outer.proto, t)? else {
            return Ok(None);
        };
        if outer.tunnel != 0 && tunnel_depth(outer.tunnel) >= self.max_depth {
            return Err(DecodeError::EncapLimit);
        }
        let hop = TunnelHop::new(
            inner.kind,
            outer.src,
            outer.dst,
            inner.vni,
            outer.vlan_key(),
        );
        let id = tunnel_id(outer.tunnel, hop)?;
        let mut net = decode_ip(inner.link, inner.frame)?;
        net.tunnel = id;
        Ok(Some(net))
    }

    /// The inner frame of a tunnel packet of IP protocol `proto` whose
    /// transport layer is `t`: `Ok(None)` when it is no tunnel or carries
    /// nothing to decode, [`DecodeError::BadEncapsulation`] when the tunnel
    /// header is cut short or invalid.
    pub fn inner<'a>(
        &self,
        proto: u8,
        t: &Transport<'a>,
    ) -> Result<Option<Inner<'a>>, DecodeError> {
        match (proto, t) {
            (17, Transport::Udp(u)) => match self.udp_tunnel(u.src_port, u.dst_port) {
                Some(UdpTunnel::Vxlan) => vxlan(u.payload).map(Some),
                Some(UdpTunnel::Geneve) => geneve(u.payload),
                Some(UdpTunnel::GtpU) => gtp_u(u.payload),
                None => Ok(None),
            },
            (4, Transport::Other { payload, .. }) => ip_in_ip(TunnelKind::IpInIp, payload),
            (41, Transport::Other { payload, .. }) => ip_in_ip(TunnelKind::Ipv6InIp, payload),
            (47, Transport::Other { payload, .. }) => gre(payload),
            _ => Ok(None),
        }
    }
}

const BAD: DecodeError = DecodeError::BadEncapsulation;

fn be16(b: &[u8], at: usize) -> Result<u16, DecodeError> {
    b.get(at..at + 2)
        .map(|s| u16::from_be_bytes([s[0], s[1]]))
        .ok_or(BAD)
}

fn tail(b: &[u8], at: usize) -> Result<&[u8], DecodeError> {
    b.get(at..).ok_or(BAD)
}

/// An inner IP packet whose version must match what the outer protocol
/// announced (4 for IP-in-IP, 6 for protocol 41).
fn ip_in_ip(kind: TunnelKind, b: &[u8]) -> Result<Option<Inner<'_>>, DecodeError> {
    let (version, link) = match kind {
        TunnelKind::IpInIp => (4, LinkType::IPV4),
        _ => (6, LinkType::IPV6),
    };
    match b.first() {
        Some(v) if v >> 4 == version => Ok(Some(Inner {
            kind,
            vni: None,
            link,
            frame: b,
        })),
        _ => Err(BAD),
    }
}

/// An inner IP packet, its version read from its first nibble.
fn ip_by_version(kind: TunnelKind, vni: Option<u32>, b: &[u8]) -> Result<Inner<'_>, DecodeError> {
    let link = match b.first().map(|v| v >> 4) {
        Some(4) => LinkType::IPV4,
        Some(6) => LinkType::IPV6,
        _ => return Err(BAD),
    };
    Ok(Inner {
        kind,
        vni,
        link,
        frame: b,
    })
}

/// An inner frame by its EtherType (GRE and GENEVE protocol types):
/// Ethernet, IPv4 or IPv6; `None` for anything else.
fn by_ethertype(
    kind: TunnelKind,
    vni: Option<u32>,
    ethertype: u16,
    b: &[u8],
) -> Result<Option<Inner<'_>>, DecodeError> {
    let link = match ethertype {
        0x6558 => LinkType::ETHERNET,
        0x0800 => LinkType::IPV4,
        0x86dd => LinkType::IPV6,
        _ => return Ok(None),
    };
    if link != LinkType::ETHERNET {
        // The inner header must be of the announced version.
        let want = if link == LinkType::IPV4 { 4 } else { 6 };
        if b.first().map(|v| v >> 4) != Some(want) {
            return Err(BAD);
        }
    }
    Ok(Some(Inner {
        kind,
        vni,
        link,
        frame: b,
    }))
}

/// VXLAN (RFC 7348): 8 bytes, the I flag set, a 24-bit VNI; Ethernet inside.
fn vxlan(b: &[u8]) -> Result<Inner<'_>, DecodeError> {
    let h = b.get(..8).ok_or(BAD)?;
    if h[0] & 0x08 == 0 {
        return Err(BAD);
    }
    Ok(Inner {
        kind: TunnelKind::Vxlan,
        vni: Some(u32::from_be_bytes([0, h[4], h[5], h[6]])),
        link: LinkType::ETHERNET,
        frame: &b[8..],
    })
}

/// GENEVE (RFC 8926): version 0, options of 4-byte units, a protocol type
/// and a 24-bit VNI.
fn geneve(b: &[u8]) -> Result<Option<Inner<'_>>, DecodeError> {
    let h = b.get(..8).ok_or(BAD)?;
    if h[0] >> 6 != 0 {
        return Err(BAD);
    }
    let opts = usize::from(h[0] & 0x3f) * 4;
    let vni = u32::from_be_bytes([0, h[4], h[5], h[6]]);
    let inner = tail(b, 8 + opts)?;
    by_ethertype(TunnelKind::Geneve, Some(vni), be16(h, 2)?, inner)
}

/// GTP-U (3GPP TS 29.281): version 1, protocol type GTP, the optional
/// sequence/N-PDU/extension fields and the extension header chain; a G-PDU
/// (message type 255) carries an IP packet, other messages (echo, error
/// indication, end marker) nothing.
fn gtp_u(b: &[u8]) -> Result<Option<Inner<'_>>, DecodeError> {
    let h = b.get(..8).ok_or(BAD)?;
    let flags = h[0];
    if flags >> 5 != 1 || flags & 0x10 == 0 {
        return Err(BAD);
    }
    let mut at = 8;
    if flags & 0x07 != 0 {
        // Sequence number (2), N-PDU number (1), next extension type (1).
        let opt = b.get(8..12).ok_or(BAD)?;
        at = 12;
        // The next extension type means something only with the E flag.
        let mut next = if flags & 0x04 != 0 { opt[3] } else { 0 };
        // Each extension: a length in 4-byte units (at least 1), its
        // content, and the next type in its last byte.
        for _ in 0..16 {
            if next == 0 {
                break;
            }
            let len = usize::from(*b.get(at).ok_or(BAD)?) * 4;
            if len == 0 {
                return Err(BAD);
            }
            next = *b.get(at + len - 1).ok_or(BAD)?;
            at += len;
        }
        if next != 0 {
            return Err(BAD);
        }
    }
    if h[1] != 0xff {
        return Ok(None);
    }
    let inner = tail(b, at)?;
    if inner.is_empty() {
        return Ok(None);
    }
    ip_by_version(TunnelKind::GtpU, None, inner).map(Some)
}

/// GRE (RFC 2784/2890, version 0; and PPTP's enhanced GRE, version 1, RFC
/// 2637): the optional checksum, key and sequence fields, then the payload
/// by protocol type: IP, transparent Ethernet bridging, ERSPAN, PPP.
fn gre(b: &[u8]) -> Result<Option<Inner<'_>>, DecodeError> {
    let flags = be16(b, 0)?;
    let proto = be16(b, 2)?;
    let version = flags & 0x7;
    // Routing present (RFC 1701): Linux discards it (`gre_parse_header`).
    if flags & 0x4000 != 0 {
        return Err(BAD);
    }
    let (checksum, key, seq) = (
        flags & 0x8000 != 0,
        flags & 0x2000 != 0,
        flags & 0x1000 != 0,
    );
    let payload = match version {
        0 => {
            let at = 4 + 4 * (usize::from(checksum) + usize::from(key) + usize::from(seq));
            tail(b, at)?
        }
        1 => {
            // Enhanced GRE: no checksum, a key (payload length and call
            // id), optional sequence and acknowledgment numbers, PPP inside.
            let ack = flags & 0x0080 != 0;
            if checksum || !key || proto != 0x880b {
                return Err(BAD);
            }
            let at = 8 + 4 * (usize::from(seq) + usize::from(ack));
            return ppp(tail(b, at)?);
        }
        _ => return Err(BAD),
    };
    match proto {
        0x88be if seq => erspan_ii(payload).map(Some),
        // ERSPAN type I: no ERSPAN header, no sequence number.
        0x88be => Ok(Some(Inner {
            kind: TunnelKind::ErspanII,
            vni: None,
            link: LinkType::ETHERNET,
            frame: payload,
        })),
        0x22eb => erspan_iii(payload),
        0x880b => ppp(payload),
        _ => by_ethertype(TunnelKind::Gre, None, proto, payload),
    }
}

/// A PPP frame inside GRE: the optional address and control bytes (ff 03),
/// the protocol (one byte when compressed), IPv4 (0x21) or IPv6 (0x57)
/// inside. Other protocols (LCP, compressed or encrypted data) carry no
/// inner packet; an empty payload (a bare acknowledgment) neither.
fn ppp(b: &[u8]) -> Result<Option<Inner<'_>>, DecodeError> {
    if b.is_empty() {
        return Ok(None);
    }
    let b = match b {
        [0xff, 0x03, rest @ ..] => rest,
        _ => b,
    };
    let (proto, rest) = match b {
        [p, rest @ ..] if p & 1 == 1 => (u16::from(*p), rest),
        [hi, lo, rest @ ..] => (u16::from_be_bytes([*hi, *lo]), rest),
        _ => return Err(BAD),
    };
    let link = match proto {
        0x21 => LinkType::IPV4,
        0x57 => LinkType::IPV6,
        _ => return Ok(None),
    };
    let want = if link == LinkType::IPV4 { 4 } else { 6 };
    if rest.first().map(|v| v >> 4) != Some(want) {
        return Err(BAD);
    }
    Ok(Some(Inner {
        kind: TunnelKind::Gre,
        vni: None,
        link,
        frame: rest,
    }))
}

/// ERSPAN type II: an 8-byte header of version 1, Ethernet inside.
fn erspan_ii(b: &[u8]) -> Result<Inner<'_>, DecodeError> {
    let h = b.get(..8).ok_or(BAD)?;
    if h[0] >> 4 != 1 {
        return Err(BAD);
    }
    Ok(Inner {
        kind: TunnelKind::ErspanII,
        vni: None,
        link: LinkType::ETHERNET,
        frame: &b[8..],
    })
}

/// ERSPAN type III: a 12-byte header of version 2, an 8-byte platform
/// subheader when its O flag is set, then an Ethernet frame (frame type 0)
/// or an IP packet (frame type 2); other frame types carry nothing decoded.
fn erspan_iii(b: &[u8]) -> Result<Option<Inner<'_>>, DecodeError> {
    let h = b.get(..12).ok_or(BAD)?;
    if h[0] >> 4 != 2 {
        return Err(BAD);
    }
    let frame_type = (h[10] >> 2) & 0x1f;
    let at = if h[11] & 0x01 != 0 { 20 } else { 12 };
    let inner = tail(b, at)?;
    match frame_type {
        0 => Ok(Some(Inner {
            kind: TunnelKind::ErspanIII,
            vni: None,
            link: LinkType::ETHERNET,
            frame: inner,
        })),
        2 => ip_by_version(TunnelKind::ErspanIII, None, inner).map(Some),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn other(payload: &[u8]) -> Transport<'_> {
        Transport::Other {
            payload,
            payload_wire_len: payload.len() as u32,
        }
    }

    fn udp(src: u16, dst: u16, payload: &[u8]) -> Transport<'_> {
        Transport::Udp(super::super::UdpDatagram {
            src_port: src,
            dst_port: dst,
            payload,
            payload_wire_len: payload.len() as u32,
        })
    }

    const V4: [u8; 4] = [0x45, 0, 0, 20];
    const V6: [u8; 4] = [0x60, 0, 0, 0];

    fn d() -> Decapsulator {
        Decapsulator::new(&[4789], &[6081], &[2152])
    }

    #[test]
    fn ports_either_way_and_only_configured() {
        let d = d();
        assert!(d.udp_carrier(4789, 40000));
        assert!(d.udp_carrier(40000, 4789));
        assert!(d.udp_carrier(2152, 2152));
        assert!(!d.udp_carrier(53, 40000));
        // 4789 + 64 shares the bloom bit but is no tunnel port.
        assert!(!d.udp_carrier(4789 + 64, 1));
        let none = Decapsulator::new(&[], &[], &[]);
        assert!(!none.udp_carrier(4789, 4789));
    }

    #[test]
    fn vxlan_and_geneve() {
        let d = d();
        let mut v = vec![0x08, 0, 0, 0, 0, 0, 42, 0];
        v.extend_from_slice(&[0xee; 14]);
        let i = d.inner(17, &udp(1234, 4789, &v)).unwrap().unwrap();
        assert_eq!(
            (i.kind, i.vni, i.link, i.frame.len()),
            (TunnelKind::Vxlan, Some(42), LinkType::ETHERNET, 14)
        );
        v[0] = 0;
        assert_eq!(d.inner(17, &udp(1234, 4789, &v)), Err(BAD));
        assert_eq!(d.inner(17, &udp(1234, 4789, &v[..7])), Err(BAD));
        // GENEVE with 4 bytes of options and IPv4 inside.
        let mut g = vec![0x01, 0, 0x08, 0x00, 0, 0, 7, 0, 1, 2, 3, 4];
        g.extend_from_slice(&V4);
        let i = d.inner(17, &udp(6081, 1, &g)).unwrap().unwrap();
        assert_eq!(
            (i.kind, i.vni, i.link, i.frame),
            (TunnelKind::Geneve, Some(7), LinkType::IPV4, &V4[..])
        );
        assert_eq!(d.inner(17, &udp(6081, 1, &g[..10])), Err(BAD));
        g[0] = 0x41;
        assert_eq!(d.inner(17, &udp(6081, 1, &g)), Err(BAD));
    }

    #[test]
    fn gtp_u_with_and_without_extensions() {
        let d = d();
        let mut g = vec![0x30, 0xff, 0, 4, 0, 0, 0, 1];
        g.extend_from_slice(&V6);
        let i = d.inner(17, &udp(2152, 2152, &g)).unwrap().unwrap();
        assert_eq!(
            (i.kind, i.link, i.frame),
            (TunnelKind::GtpU, LinkType::IPV6, &V6[..])
        );
        // E flag: one extension header (PDU session container, 4 bytes), then none.
        let mut e = vec![0x34, 0xff, 0, 12, 0, 0, 0, 1, 0, 0, 0, 0x85, 1, 0x10, 0, 0];
        e.extend_from_slice(&V4);
        let i = d.inner(17, &udp(2152, 2152, &e)).unwrap().unwrap();
        assert_eq!(i.frame, &V4[..]);
        // An extension of length 0, or one running past the packet.
        let mut z = e.clone();
        z[12] = 0;
        assert_eq!(d.inner(17, &udp(2152, 2152, &z)), Err(BAD));
        assert_eq!(d.inner(17, &udp(2152, 2152, &e[..14])), Err(BAD));
        // The S flag alone: the next-extension byte is there but means
        // nothing (whatever a sender leaves in it).
        let mut s = vec![0x32, 0xff, 0, 4, 0, 7, 0, 1, 0, 9, 0, 0x85];
        s.extend_from_slice(&V4);
        let i = d.inner(17, &udp(2152, 2152, &s)).unwrap().unwrap();
        assert_eq!(i.frame, &V4[..]);
        // An echo request carries nothing; GTP' / version 2 is no GTP-U.
        let echo = [0x32, 0x01, 0, 4, 0, 0, 0, 0, 0, 1, 0, 0];
        assert_eq!(d.inner(17, &udp(2152, 2152, &echo)), Ok(None));
        let v2 = [0x48, 0xff, 0, 4, 0, 0, 0, 0];
        assert_eq!(d.inner(17, &udp(2152, 2152, &v2)), Err(BAD));
    }

    #[test]
    fn gre_variants() {
        let d = d();
        let with = |flags: u16, proto: u16, extra: &[u8], inner: &[u8]| {
            let mut v = flags.to_be_bytes().to_vec();
            v.extend_from_slice(&proto.to_be_bytes());
            v.extend_from_slice(extra);
            v.extend_from_slice(inner);
            v
        };
        let ip = with(0, 0x0800, &[], &V4);
        let i = d.inner(47, &other(&ip)).unwrap().unwrap();
        assert_eq!(
            (i.kind, i.link, i.frame),
            (TunnelKind::Gre, LinkType::IPV4, &V4[..])
        );
        // Checksum and key present.
        let ck = with(0xa000, 0x86dd, &[0; 8], &V6);
        assert_eq!(d.inner(47, &other(&ck)).unwrap().unwrap().frame, &V6[..]);
        // Ethernet bridging.
        let eth = with(0, 0x6558, &[], &[0xee; 14]);
        assert_eq!(
            d.inner(47, &other(&eth)).unwrap().unwrap().link,
            LinkType::ETHERNET
        );
        // Wrong inner version, routing bit, cut optional fields.
        assert_eq!(d.inner(47, &other(&with(0, 0x0800, &[], &V6))), Err(BAD));
        assert_eq!(
            d.inner(47, &other(&with(0x4000, 0x0800, &[], &V4))),
            Err(BAD)
        );
        assert_eq!(
            d.inner(47, &other(&with(0x3000, 0x0800, &[0; 4], &[]))),
            Err(BAD)
        );
        // Other protocol types carry nothing decoded.
        assert_eq!(
            d.inner(47, &other(&with(0, 0x0806, &[], &[0; 28]))),
            Ok(None)
        );
        // ERSPAN II (sequence number, version 1 header), type I (none), III with subheader and IP.
        let e2 = with(
            0x1000,
            0x88be,
            &[0, 0, 0, 1, 0x10, 0, 0, 0, 0, 0, 0, 0],
            &[0xee; 14],
        );
        let i = d.inner(47, &other(&e2)).unwrap().unwrap();
        assert_eq!(
            (i.kind, i.link, i.frame.len()),
            (TunnelKind::ErspanII, LinkType::ETHERNET, 14)
        );
        let e1 = with(0, 0x88be, &[], &[0xee; 14]);
        assert_eq!(d.inner(47, &other(&e1)).unwrap().unwrap().frame.len(), 14);
        let mut h3 = vec![0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2 << 2, 1];
        h3.extend_from_slice(&[0; 8]);
        let e3 = with(
            0x1000,
            0x22eb,
            &[0, 0, 0, 1],
            &[h3.as_slice(), &V4].concat(),
        );
        let i = d.inner(47, &other(&e3)).unwrap().unwrap();
        assert_eq!(
            (i.kind, i.link, i.frame),
            (TunnelKind::ErspanIII, LinkType::IPV4, &V4[..])
        );
        // PPTP enhanced GRE with PPP (address/control, IPv4), and without data.
        let pptp = with(
            0x3081,
            0x880b,
            &[0, 6, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1],
            &[&[0xff, 0x03, 0, 0x21][..], &V4].concat(),
        );
        let i = d.inner(47, &other(&pptp)).unwrap().unwrap();
        assert_eq!(
            (i.kind, i.link, i.frame),
            (TunnelKind::Gre, LinkType::IPV4, &V4[..])
        );
        let ack_only = with(0x2081, 0x880b, &[0, 0, 0, 1, 0, 0, 0, 1], &[]);
        assert_eq!(d.inner(47, &other(&ack_only)), Ok(None));
        let lcp = with(0x2001, 0x880b, &[0, 4, 0, 1], &[0xff, 0x03, 0xc0, 0x21]);
        assert_eq!(d.inner(47, &other(&lcp)), Ok(None));
    }

    #[test]
    fn ip_in_ip_checks_the_version() {
        let d = d();
        assert_eq!(
            d.inner(4, &other(&V4)).unwrap().unwrap().link,
            LinkType::IPV4
        );
        assert_eq!(
            d.inner(41, &other(&V6)).unwrap().unwrap().link,
            LinkType::IPV6
        );
        assert_eq!(d.inner(4, &other(&V6)), Err(BAD));
        assert_eq!(d.inner(41, &other(&[])), Err(BAD));
    }

    /// Every prefix of every valid header decodes or fails, never panics.
    #[test]
    fn every_prefix_is_safe() {
        let d = d();
        let samples: [(u8, u16, Vec<u8>); 4] = [
            (
                17,
                4789,
                [&[0x08, 0, 0, 0, 0, 0, 1, 0][..], &[0; 14]].concat(),
            ),
            (
                17,
                6081,
                [&[0x02, 0, 0x65, 0x58, 0, 0, 1, 0][..], &[0; 8], &[0; 14]].concat(),
            ),
            (
                17,
                2152,
                [
                    &[
                        0x34, 0xff, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0x85, 2, 0, 0, 0, 0, 0, 0, 0,
                    ][..],
                    &V4,
                ]
                .concat(),
            ),
            (
                47,
                0,
                [
                    &[0xb0, 0, 0x88, 0xbe][..],
                    &[0; 12],
                    &[0x10, 0, 0, 0, 0, 0, 0, 0],
                    &[0; 14],
                ]
                .concat(),
            ),
        ];
        for (proto, port, bytes) in &samples {
            for n in 0..=bytes.len() {
                let cut = &bytes[..n];
                let t = if *proto == 17 {
                    udp(1, *port, cut)
                } else {
                    other(cut)
                };
                let _ = d.inner(*proto, &t);
            }
        }
    }
}
