//! What a packet is: link layer, VLAN tags, IP, transport headers.
//!
//! Decoding borrows from the captured bytes and never copies payload. Link
//! layers (Ethernet, 802.1Q/802.1ad, Linux SLL/SLL2, BSD loopback, raw IP) are
//! read here; IPv4 (with options) and IPv6 (with extension headers) are read
//! with [`etherparse`]'s lax slicer, which tolerates packets cut by the snapshot
//! length. A packet whose payload was cut is decoded as far as it goes and
//! flagged [`NetPacket::truncated`]; nothing is read past the captured bytes.
//!
//! Encapsulations: PPPoE sessions and MPLS label stacks are link layers
//! (`link`); IP-level tunnels (IP-in-IP, 6in4, GRE, ERSPAN, VXLAN, GENEVE,
//! GTP-U) are opened by [`tunnel::Decapsulator`] once the outer packet's
//! transport layer is known, and their inner packets decoded again from the
//! link layer they start with.

pub mod defrag;
mod ip_options;
mod link;
mod transport;
pub mod tunnel;

pub use link::{decode_link, LinkError};
pub use transport::{
    decode_transport, icmp_counterpart, IcmpMessage, TcpFlags, TcpSegment, Transport, UdpDatagram,
};

use std::net::IpAddr;

/// Why a frame produced no usable IP packet. Each kind is counted in the
/// global statistics; none of them stops processing.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum DecodeError {
    /// The link-layer header is cut short.
    TruncatedLink,
    /// Not IPv4/IPv6 (ARP, STP, LLDP, …): counted, not an error of the input.
    NotIp,
    /// The IP header is cut short or invalid (bad version, bad header length).
    BadIpHeader,
    /// The transport header is cut short or invalid (e.g. TCP data offset < 5).
    BadTransportHeader,
    /// The link type is not supported.
    UnsupportedLink,
    /// An encapsulation header (PPPoE, MPLS, GRE, ERSPAN, VXLAN, GENEVE,
    /// GTP-U, IP-in-IP) is cut short or invalid: the packet inside it is not
    /// decoded (the outer packet's own flow, if it has one, still counts it).
    BadEncapsulation,
    /// Tunnels nested deeper than [`crate::Config::max_tunnel_depth`], or a
    /// new tunnel when the tunnel table is full
    /// ([`crate::flow::MAX_TUNNELS`]): the inner packet is not decoded.
    EncapLimit,
}

impl DecodeError {
    /// How many kinds there are.
    pub const COUNT: usize = 7;

    /// Every kind, for reports.
    pub const ALL: [DecodeError; DecodeError::COUNT] = [
        DecodeError::TruncatedLink,
        DecodeError::NotIp,
        DecodeError::BadIpHeader,
        DecodeError::BadTransportHeader,
        DecodeError::UnsupportedLink,
        DecodeError::BadEncapsulation,
        DecodeError::EncapLimit,
    ];

    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            DecodeError::TruncatedLink => "truncated_link",
            DecodeError::NotIp => "not_ip",
            DecodeError::BadIpHeader => "bad_ip_header",
            DecodeError::BadTransportHeader => "bad_transport_header",
            DecodeError::UnsupportedLink => "unsupported_link",
            DecodeError::BadEncapsulation => "bad_encapsulation",
            DecodeError::EncapLimit => "encap_limit",
        }
    }

    /// Index into per-kind counters.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// An IP fragment's identity and position (present only on fragments).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FragmentInfo {
    /// IPv4 identification (16 bits) or IPv6 fragment identification.
    pub id: u32,
    /// Byte offset of this fragment's payload within the datagram payload.
    pub offset: u32,
    /// More fragments follow.
    pub more: bool,
}

/// A decoded IP packet: addresses, protocol and the IP payload (transport
/// header + data), borrowed from the frame.
#[derive(Clone, Debug)]
pub struct NetPacket<'a> {
    /// Outer VLAN id (802.1Q or 802.1ad), if tagged.
    pub vlan: Option<u16>,
    /// Inner VLAN id of a QinQ frame.
    pub inner_vlan: Option<u16>,
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Transport protocol number (after IPv6 extension headers).
    pub proto: u8,
    /// IP-layer length of the packet on the wire (IPv4 total length; IPv6 40 + payload length).
    pub ip_len: u32,
    /// Offset of the IP header within the frame it was decoded from (for a
    /// packet inside a tunnel: within the tunnel's inner frame).
    pub ip_offset: usize,
    /// Fragment position, for IP fragments.
    pub fragment: Option<FragmentInfo>,
    /// The IP payload bytes present in the capture.
    pub payload: &'a [u8],
    /// The IP payload length on the wire (per the IP header).
    pub payload_wire_len: u32,
    /// The capture cut this packet (fewer payload bytes present than on the wire).
    pub truncated: bool,
    /// The tunnel the packet came through ([`crate::flow::tunnel_id`]; 0
    /// for a packet that is not inside a tunnel): part of its flow key.
    pub tunnel: u32,
}

impl NetPacket<'_> {
    /// What tells this packet's fragments apart from other datagrams'
    /// beside addresses, identification and protocol: the folded VLAN tags,
    /// or inside a tunnel the tunnel's number with bit 31 set (folded VLAN
    /// tags never set it, and tunnel numbers stay below 2^31).
    pub fn fragment_context(&self) -> u32 {
        if self.tunnel == 0 {
            self.vlan_key()
        } else {
            0x8000_0000 | self.tunnel
        }
    }

    /// The VLAN tags folded into one number for flow keys (outer << 16 | inner, +1 each so that
    /// "untagged" differs from VLAN 0).
    pub fn vlan_key(&self) -> u32 {
        let o = self.vlan.map_or(0, |v| u32::from(v) + 1);
        let i = self.inner_vlan.map_or(0, |v| u32::from(v) + 1);
        (o << 16) | i
    }
}

/// Decodes the IP layer of a frame of the given link type.
///
/// IPv4 (the common case) and IPv6 without extension headers (TCP, UDP or
/// ICMPv6 right after the fixed header) are read by a few lines of checked
/// slicing; IPv6 with extension-header chains (and anything else) by
/// `etherparse`'s lax slicer. Measured on an Ethernet/IPv4/TCP frame (link
/// layer included), the IPv4 path takes 13.5 ns per packet against 38 ns
/// through etherparse (2.8×; +14 % packets per second for `flows` on the
/// echo-connections capture); the IPv6 path, about 60 instructions per packet
/// against 190 (callgrind, `flows` on the generated small-packet trace). Both
/// are checked against the etherparse path field by field, on valid, cut and
/// randomly corrupted headers (`tests::ipv4_fast_path_agrees_with_etherparse`,
/// `tests::ipv6_fast_path_agrees_with_etherparse`).
#[inline]
pub fn decode_ip(link: crate::LinkType, frame: &[u8]) -> Result<NetPacket<'_>, DecodeError> {
    let l = match decode_link(link, frame) {
        Ok(l) => l,
        Err(DecodeError::NotIp) => return decode_encapsulated(link, frame),
        Err(e) => return Err(e),
    };
    decode_ip_at(l, frame)
}

/// The IP layer of `frame`, whose IP header [`decode_link`] (or
/// [`link::encapsulated`]) found as `l`.
#[inline(always)]
fn decode_ip_at(l: link::LinkInfo, frame: &[u8]) -> Result<NetPacket<'_>, DecodeError> {
    let ip_bytes = frame.get(l.ip_offset..).ok_or(DecodeError::TruncatedLink)?;
    match ip_bytes.first() {
        Some(b) if b >> 4 == 4 => decode_ipv4(l, ip_bytes),
        Some(b) if b >> 4 == 6 => decode_ipv6(l, ip_bytes),
        _ => decode_ip_etherparse(l, ip_bytes),
    }
}

/// [`decode_ip`] for a frame whose EtherType is not IP: PPPoE sessions and
/// MPLS label stacks lead to IP ([`link::encapsulated`]); anything else is
/// [`DecodeError::NotIp`].
#[cold]
#[inline(never)]
fn decode_encapsulated(link: crate::LinkType, frame: &[u8]) -> Result<NetPacket<'_>, DecodeError> {
    let l = link::encapsulated(link, frame)?;
    decode_ip_at(l, frame)
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// The IP-layer length of an IPv4 packet of `present` bytes whose header is
/// `ihl` bytes long and whose total-length field says `total`, as a receiver
/// takes it: a total length of 0 is what a capture of TCP segmentation
/// offload shows (the NIC fills it in later; Wireshark's heuristic), so the
/// bytes present count; any other total length below the header's is
/// invalid and the packet is dropped, as Linux drops it (`ip_rcv_core`),
/// instead of taking the bytes present as its payload (an insertion).
#[inline(always)]
fn ipv4_ip_len(total: usize, ihl: usize, present: usize) -> Result<usize, DecodeError> {
    match total {
        0 => Ok(present),
        t if t < ihl => Err(DecodeError::BadIpHeader),
        t => Ok(t),
    }
}

/// IPv4 with options, lax about lengths like etherparse's lax slicer (a
/// total length past the bytes present means a cut packet) except where a
/// host drops the packet: a total length below the header length other than
/// 0 ([`ipv4_ip_len`]) and malformed options
/// ([`ip_options::ipv4_options_valid`]) are [`DecodeError::BadIpHeader`].
#[inline]
fn decode_ipv4(l: link::LinkInfo, b: &[u8]) -> Result<NetPacket<'_>, DecodeError> {
    let h = b.get(..20).ok_or(DecodeError::BadIpHeader)?;
    let ihl = usize::from(h[0] & 0x0f) * 4;
    if ihl < 20 || b.len() < ihl {
        return Err(DecodeError::BadIpHeader);
    }
    let ip_len = ipv4_ip_len(usize::from(be16(h, 2)), ihl, b.len())?;
    if ihl > 20 && !ip_options::ipv4_options_valid(&b[20..ihl]) {
        return Err(DecodeError::BadIpHeader);
    }
    let end = ip_len.min(b.len());
    let flags = be16(h, 6);
    let (more, offset) = (flags & 0x2000 != 0, u32::from(flags & 0x1fff) * 8);
    let fragment = (more || offset != 0).then(|| FragmentInfo {
        id: u32::from(be16(h, 4)),
        offset,
        more,
    });
    let payload = &b[ihl..end];
    let payload_wire_len = (ip_len - ihl) as u32;
    Ok(NetPacket {
        vlan: l.vlan,
        inner_vlan: l.inner_vlan,
        src: IpAddr::V4(std::net::Ipv4Addr::new(h[12], h[13], h[14], h[15])),
        dst: IpAddr::V4(std::net::Ipv4Addr::new(h[16], h[17], h[18], h[19])),
        proto: h[9],
        ip_len: ip_len as u32,
        ip_offset: l.ip_offset,
        fragment,
        payload,
        payload_wire_len,
        truncated: (payload.len() as u32) < payload_wire_len,
        tunnel: 0,
    })
}

/// IPv6 whose next header is TCP, UDP or ICMPv6 (no extension headers),
/// lax about lengths like etherparse's lax slicer: a payload length of zero
/// (jumbograms, TSO captures) or beyond the bytes present falls back to the
/// bytes present. Other next headers go to the etherparse path.
#[inline]
fn decode_ipv6(l: link::LinkInfo, b: &[u8]) -> Result<NetPacket<'_>, DecodeError> {
    let h = b.get(..40).ok_or(DecodeError::BadIpHeader)?;
    let proto = h[6];
    if !matches!(proto, 6 | 17 | 58) {
        return decode_ip_etherparse(l, b);
    }
    let addr = |at: usize| -> Result<IpAddr, DecodeError> {
        let a: [u8; 16] = h[at..at + 16]
            .try_into()
            .map_err(|_| DecodeError::BadIpHeader)?;
        Ok(IpAddr::V6(a.into()))
    };
    let rest = &b[40..];
    let payload_len = usize::from(be16(h, 4));
    let (ip_len, payload) = if payload_len == 0 {
        (b.len(), rest)
    } else {
        (40 + payload_len, rest.get(..payload_len).unwrap_or(rest))
    };
    let payload_wire_len = (ip_len - 40) as u32;
    Ok(NetPacket {
        vlan: l.vlan,
        inner_vlan: l.inner_vlan,
        src: addr(8)?,
        dst: addr(24)?,
        proto,
        ip_len: ip_len as u32,
        ip_offset: l.ip_offset,
        fragment: None,
        payload,
        payload_wire_len,
        truncated: (payload.len() as u32) < payload_wire_len,
        tunnel: 0,
    })
}

/// The IP layer through etherparse's lax slicer (IPv6 with extension
/// headers, and the reference for both hand-written paths).
#[inline(never)]
fn decode_ip_etherparse(l: link::LinkInfo, ip_bytes: &[u8]) -> Result<NetPacket<'_>, DecodeError> {
    let (ip, _ext_err) =
        etherparse::LaxIpSlice::from_slice(ip_bytes).map_err(|_| DecodeError::BadIpHeader)?;
    let payload = ip.payload();
    let payload_start =
        (payload.payload.as_ptr() as usize).saturating_sub(ip_bytes.as_ptr() as usize);
    let mut final_dst = None;
    let (ip_len, fragment) = match &ip {
        etherparse::LaxIpSlice::Ipv4(v4) => {
            let h = v4.header();
            let frag = if h.more_fragments() || h.fragments_offset().value() != 0 {
                Some(FragmentInfo {
                    id: u32::from(h.identification()),
                    offset: u32::from(h.fragments_offset().value()) * 8,
                    more: h.more_fragments(),
                })
            } else {
                None
            };
            let ihl = usize::from(h.ihl()) * 4;
            let ip_len = ipv4_ip_len(usize::from(h.total_len()), ihl, ip_bytes.len())?;
            if !ip_options::ipv4_options_valid(h.options()) {
                return Err(DecodeError::BadIpHeader);
            }
            (ip_len as u32, frag)
        }
        etherparse::LaxIpSlice::Ipv6(v6) => {
            let plen = u32::from(v6.header().payload_length());
            let ip_len = if plen == 0 {
                ip_bytes.len() as u32
            } else {
                40 + plen
            };
            // The extension headers etherparse accepted lie between the fixed
            // header and the payload; walk them ourselves (etherparse's own
            // extension iterator reads out of bounds on some headers cut
            // short by the lax slicer: found by the `decode` fuzz target).
            let exts = ip_bytes.get(40..payload_start).unwrap_or(&[]);
            let e = ipv6_extensions(v6.header().next_header().0, exts);
            final_dst = e.final_dst;
            (ip_len, e.fragment)
        }
    };
    let payload_wire_len = ip_len.saturating_sub(payload_start as u32);
    let truncated = (payload.payload.len() as u64) < u64::from(payload_wire_len);
    Ok(NetPacket {
        vlan: l.vlan,
        inner_vlan: l.inner_vlan,
        src: ip.source_addr(),
        dst: final_dst.map_or_else(|| ip.destination_addr(), IpAddr::V6),
        proto: payload.ip_number.0,
        ip_len,
        ip_offset: l.ip_offset,
        fragment,
        payload: payload.payload,
        payload_wire_len: payload_wire_len.max(payload.payload.len() as u32),
        truncated,
        tunnel: 0,
    })
}

/// What the IPv6 extension headers of a packet change about it.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
struct Ipv6Exts {
    /// The fragment header's position, if it fragments the payload.
    fragment: Option<FragmentInfo>,
    /// The final destination named by a routing header with segments left:
    /// the packet's destination as its transport sees it (the pseudo-header
    /// of the transport checksum), and as tshark keys the conversation.
    final_dst: Option<std::net::Ipv6Addr>,
}

/// Reads the extension headers `exts` (the chain that starts with
/// next-header `first`). Stops at the first header it does not know or that
/// does not fit. The first routing header with segments left names the
/// final destination: the last address of a type 0 (RFC 2460, deprecated
/// by RFC 5095) or type 2 (Mobile IPv6 home address) header, Segment
/// List\[0\] of a segment routing header (type 4, RFC 8754). Other types
/// (RPL's compressed type 3) leave the destination as it is.
fn ipv6_extensions(first: u8, exts: &[u8]) -> Ipv6Exts {
    let (mut next, mut at, mut out) = (first, 0usize, Ipv6Exts::default());
    // A chain longer than this is not a real packet; give up rather than loop.
    for _ in 0..32 {
        let h = exts.get(at..).unwrap_or(&[]);
        let len = match (next, h.get(1)) {
            // Hop-by-hop, routing, destination options: 8-octet units after the first 8.
            (0 | 43 | 60, Some(&n)) => (usize::from(n) + 1) * 8,
            // Authentication header: 4-octet units after the first 8.
            (51, Some(&n)) => (usize::from(n) + 2) * 4,
            (44, _) => {
                let Some(f) = h.get(..8) else {
                    return out;
                };
                let fo = u16::from_be_bytes([f[2], f[3]]);
                let (offset, more) = (u32::from(fo & 0xfff8), fo & 1 != 0);
                if offset != 0 || more {
                    out.fragment = Some(FragmentInfo {
                        id: u32::from_be_bytes([f[4], f[5], f[6], f[7]]),
                        offset,
                        more,
                    });
                }
                8
            }
            _ => return out,
        };
        let Some(header) = h.get(..len) else {
            return out;
        };
        if next == 43 && out.final_dst.is_none() {
            out.final_dst = routing_final_destination(header);
        }
        next = header[0];
        at += len;
    }
    out
}

/// The final destination a routing header (`rh`, whole) names, if it has
/// segments left and is of a type that names one (see [`ipv6_extensions`]).
fn routing_final_destination(rh: &[u8]) -> Option<std::net::Ipv6Addr> {
    let (&kind, &segments_left) = (rh.get(2)?, rh.get(3)?);
    if segments_left == 0 {
        return None;
    }
    let addresses = rh.get(8..)?;
    let at = match kind {
        // The last of the addresses that fill the header.
        0 | 2 => (addresses.len() / 16).checked_sub(1)? * 16,
        // Segment List[0] is the last segment, the final destination.
        4 => 0,
        _ => return None,
    };
    let a: [u8; 16] = addresses.get(at..at + 16)?.try_into().ok()?;
    Some(a.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LinkType;
    use etherparse::PacketBuilder;

    fn tcp_frame(payload: &[u8]) -> Vec<u8> {
        let b = PacketBuilder::ethernet2([1; 6], [2; 6])
            .single_vlan(etherparse::VlanId::try_new(42).unwrap())
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .tcp(1234, 80, 1000, 65535)
            .psh()
            .ack(77);
        let mut v = Vec::new();
        b.write(&mut v, payload).unwrap();
        v
    }

    #[test]
    fn ethernet_vlan_ipv4_tcp() {
        let f = tcp_frame(b"hello");
        let p = decode_ip(LinkType::ETHERNET, &f).unwrap();
        assert_eq!(p.vlan, Some(42));
        assert_eq!(p.proto, 6);
        assert_eq!(p.ip_len, 20 + 20 + 5);
        assert!(!p.truncated);
        let t = decode_transport(p.proto, p.payload, p.payload_wire_len).unwrap();
        match t {
            Transport::Tcp(s) => {
                assert_eq!((s.src_port, s.dst_port, s.seq, s.ack), (1234, 80, 1000, 77));
                assert_eq!(s.payload, b"hello");
                assert!(s.flags.contains(TcpFlags::PSH | TcpFlags::ACK));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn snaplen_cut_is_flagged_not_overread() {
        let f = tcp_frame(&[7u8; 100]);
        let cut = &f[..f.len() - 60];
        let p = decode_ip(LinkType::ETHERNET, cut).unwrap();
        assert!(p.truncated);
        assert_eq!(p.ip_len, 140);
        let Transport::Tcp(s) = decode_transport(p.proto, p.payload, p.payload_wire_len).unwrap()
        else {
            panic!()
        };
        assert_eq!(s.payload.len(), 40);
        assert_eq!(s.payload_wire_len, 100);
    }

    /// Inputs the `decode` and `engine_frames` fuzz targets found: IPv6
    /// extension headers cut short, on which etherparse's extension iterator
    /// reads out of bounds (an unsafe precondition check fires in debug).
    #[test]
    fn fuzz_regressions_ipv6_extension_headers() {
        let decode_crash: &[u8] = &[
            0xd0, 0x67, 0x99, 0x0, 0x99, 0x0, 0x0, 0x0, 0x99, 0x99, 0x99, 0x99, 0x0, 0x0, 0x12,
            0xa, 0x99, 0x99, 0x99, 0x99, 0x99, 0x14, 0x99, 0x99, 0x99, 0x99, 0x99, 0x99, 0x99,
            0x99, 0x99, 0x99, 0x99, 0x99, 0x0, 0x0, 0x0, 0x0, 0x0, 0x99, 0x99, 0x0, 0x0, 0x12, 0xa,
            0x99, 0x31, 0x99, 0x99, 0x99, 0x99, 0x99, 0x99,
        ];
        // The fuzz target's first byte picks the link type (0xd0 % 10 = 8: RAW_BSD12).
        let _ = decode_ip(LinkType::RAW_BSD12, &decode_crash[1..]);
        for link in [LinkType::ETHERNET, LinkType::RAW, LinkType::IPV6] {
            for n in 0..decode_crash.len() {
                let _ = decode_ip(link, &decode_crash[n..]);
            }
        }
    }

    /// The extension-header walk finds the fragment header behind other
    /// extension headers and stops safely on any truncation.
    #[test]
    fn ipv6_fragment_header_behind_extensions() {
        // Hop-by-hop (8 bytes) -> destination options (16 bytes) -> fragment.
        let mut exts = vec![60, 0, 1, 4, 0, 0, 0, 0];
        exts.extend_from_slice(&[44, 1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        exts.extend_from_slice(&[17, 0, 0x05, 0xa9, 0xde, 0xad, 0xbe, 0xef]);
        let f = ipv6_extensions(0, &exts).fragment.expect("fragment found");
        assert_eq!((f.offset, f.more, f.id), (0x5a8, true, 0xdead_beef));
        for n in 0..exts.len() {
            assert!(ipv6_extensions(0, &exts[..n]).fragment.is_none());
        }
        // Offset 0 without "more": not a fragment.
        let atomic = [17, 0, 0, 0, 0, 0, 0, 1];
        assert!(ipv6_extensions(44, &atomic).fragment.is_none());
    }

    /// An IPv6 packet to `dst` whose extension headers `exts` (starting
    /// with a routing header) end in UDP 1111 -> 2222.
    fn routed_v6(dst: &str, exts: &[u8]) -> Vec<u8> {
        let ip = |s: &str| s.parse::<std::net::Ipv6Addr>().unwrap().octets();
        let mut udp = vec![0x04, 0x57, 0x08, 0xae, 0, 12, 0, 0];
        udp.extend_from_slice(b"abcd");
        let len = (exts.len() + udp.len()) as u16;
        let mut v = vec![0x60, 0, 0, 0];
        v.extend_from_slice(&len.to_be_bytes());
        v.extend_from_slice(&[43, 64]);
        v.extend_from_slice(&ip("2001:db8::1"));
        v.extend_from_slice(&ip(dst));
        v.extend_from_slice(exts);
        v.extend_from_slice(&udp);
        v
    }

    /// A routing header with segments left names the final destination,
    /// which is the packet's destination (as tshark keys conversations):
    /// the last address of types 0 and 2, Segment List\[0\] of type 4; with
    /// no segment left, or of another type, the header's destination stays.
    #[test]
    fn ipv6_routing_header_final_destination() {
        let ip = |s: &str| s.parse::<std::net::Ipv6Addr>().unwrap().octets();
        let rh = |kind: u8, left: u8, fixed: [u8; 4], addrs: &[&str]| {
            let mut h = vec![17, (addrs.len() * 2) as u8, kind, left];
            h.extend_from_slice(&fixed);
            for a in addrs {
                h.extend_from_slice(&ip(a));
            }
            h
        };
        let cases = [
            (
                rh(0, 2, [0; 4], &["2001:db8::a", "2001:db8::b"]),
                "2001:db8::b",
            ),
            (rh(2, 1, [0; 4], &["2001:db8::c"]), "2001:db8::c"),
            (
                rh(4, 1, [1, 0, 0, 0], &["2001:db8::d", "2001:db8::2"]),
                "2001:db8::d",
            ),
            (rh(0, 0, [0; 4], &["2001:db8::e"]), "2001:db8::2"),
            (rh(3, 1, [0; 4], &["2001:db8::f"]), "2001:db8::2"),
        ];
        for (exts, want) in cases {
            let f = routed_v6("2001:db8::2", &exts);
            let p = decode_ip(LinkType::RAW, &f).unwrap();
            assert_eq!(p.dst, want.parse::<IpAddr>().unwrap(), "{exts:02x?}");
            assert_eq!(p.src, "2001:db8::1".parse::<IpAddr>().unwrap());
            assert_eq!(p.proto, 17);
            // A cut routing header leaves the header's destination.
            for n in 0..exts.len() {
                let cut = routed_v6("2001:db8::2", &exts[..n]);
                let _ = decode_ip(LinkType::RAW, &cut);
            }
        }
    }

    #[test]
    fn every_prefix_decodes_without_panic() {
        let f = tcp_frame(b"0123456789");
        for n in 0..=f.len() {
            if let Ok(p) = decode_ip(LinkType::ETHERNET, &f[..n]) {
                let _ = decode_transport(p.proto, p.payload, p.payload_wire_len);
            }
        }
    }

    /// Asserts that a hand-written IP path and the etherparse path agree on
    /// frame `f`, field by field (or both fail); returns whether both decoded.
    fn agree_with_etherparse(
        fast: Result<NetPacket<'_>, DecodeError>,
        reference: Result<NetPacket<'_>, DecodeError>,
        f: &[u8],
    ) -> bool {
        let fields = |p: &NetPacket<'_>| {
            (
                p.src,
                p.dst,
                p.proto,
                p.ip_len,
                p.fragment,
                p.payload.to_vec(),
                p.payload_wire_len,
                p.truncated,
            )
        };
        match (fast, reference) {
            (Ok(a), Ok(b)) => {
                assert_eq!(fields(&a), fields(&b), "frame {f:02x?}");
                true
            }
            (Err(_), Err(_)) => false,
            (a, b) => panic!(
                "fast {:?} vs etherparse {:?} on {f:02x?}",
                a.map(|p| p.ip_len),
                b.map(|p| p.ip_len)
            ),
        }
    }

    /// The hand-written IPv6 path returns exactly what etherparse's does, on
    /// TCP, UDP and ICMPv6 packets, zero and oversized payload lengths, cut
    /// packets and random bytes (an extension header or another protocol
    /// sends it to etherparse itself).
    #[test]
    fn ipv6_fast_path_agrees_with_etherparse() {
        let v6 = |payload: &[u8], proto: u8| {
            let b = PacketBuilder::ethernet2([1; 6], [2; 6]).ipv6([1; 16], [2; 16], 64);
            let mut v = Vec::new();
            match proto {
                6 => b.tcp(1234, 80, 1000, 65535).ack(5).write(&mut v, payload),
                17 => b.udp(53, 5353).write(&mut v, payload),
                _ => b.icmpv6_echo_request(1, 2).write(&mut v, payload),
            }
            .unwrap();
            v
        };
        let mut frames = vec![
            v6(b"hello", 6),
            v6(&[1; 1400], 6),
            v6(b"", 17),
            v6(b"ping", 58),
        ];
        let mut zero_len = v6(b"jumbo", 6);
        zero_len[14 + 4] = 0;
        zero_len[14 + 5] = 0;
        frames.push(zero_len.clone());
        zero_len.truncate(14 + 40);
        frames.push(zero_len);
        let mut long = v6(b"long", 17);
        long[14 + 4] = 0x40;
        frames.push(long);
        let mut x: u64 = 0x0fed_cba9_8765_4321;
        let bases = [v6(b"random tails", 6), v6(b"udp tails", 17)];
        for i in 0..30_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut f = bases[i % 2].clone();
            let at = 14 + (x as usize % (f.len() - 14));
            f[at] = (x >> 32) as u8;
            if x & 1 == 1 {
                f[14] = 0x60 | (f[14] & 0x0f);
            }
            if x & 2 == 2 {
                // Keep the next header a fast-path one most of the time.
                f[14 + 6] = [6, 17, 58, 0][(x >> 8) as usize % 4];
            }
            f.truncate(14 + ((x >> 40) as usize % (f.len() - 13)));
            frames.push(f);
        }
        let mut fast_ok = 0;
        for f in &frames {
            let Ok(l) = decode_link(LinkType::ETHERNET, f) else {
                continue;
            };
            let ip = &f[l.ip_offset..];
            if ip.first().map(|b| b >> 4) != Some(6) {
                continue;
            }
            let fast = decode_ipv6(l, ip);
            let reference = decode_ip_etherparse(l, ip);
            if agree_with_etherparse(fast, reference, f) {
                fast_ok += 1;
            }
        }
        assert!(fast_ok > 10_000, "only {fast_ok} frames decoded");
    }

    /// The hand-written IPv4 path returns exactly what etherparse's does, on
    /// valid headers with options, fragments, cut packets and random bytes.
    #[test]
    fn ipv4_fast_path_agrees_with_etherparse() {
        let mut frames = vec![tcp_frame(b"hello"), tcp_frame(&[1; 1400]), tcp_frame(b"")];
        let mut opts = tcp_frame(b"opts");
        // Insert 8 bytes of IPv4 options (NOP NOP NOP EOL ...) and fix IHL and total length.
        opts.splice(18 + 20..18 + 20, [1u8, 1, 1, 0, 0, 0, 0, 0]);
        opts[18] = 0x47;
        let tl = u16::from_be_bytes([opts[20], opts[21]]) + 8;
        opts[20..22].copy_from_slice(&tl.to_be_bytes());
        frames.push(opts);
        let mut frag = tcp_frame(&[9; 64]);
        frag[18 + 6] = 0x20; // MF
        frag[18 + 7] = 0x03; // offset 3 * 8
        frames.push(frag);
        let mut zero_len = tcp_frame(b"tso");
        zero_len[18 + 2] = 0;
        zero_len[18 + 3] = 0;
        frames.push(zero_len);
        let mut x: u64 = 0x1234_5678_9abc_def1;
        let base = tcp_frame(b"random tails");
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut f = base.clone();
            let i = 18 + (x as usize % (f.len() - 18));
            f[i] = (x >> 32) as u8;
            if x & 1 == 1 {
                f[18] = 0x40 | (f[18] & 0x0f);
            }
            f.truncate(18 + ((x >> 40) as usize % (f.len() - 17)));
            frames.push(f);
        }
        for f in &frames {
            let l = decode_link(LinkType::ETHERNET, f).ok();
            let Some(l) = l else { continue };
            let ip = &f[l.ip_offset..];
            if ip.first().map(|b| b >> 4) != Some(4) {
                continue;
            }
            let fast = decode_ipv4(l, ip);
            let reference = decode_ip_etherparse(l, ip);
            agree_with_etherparse(fast, reference, f);
        }
    }

    #[test]
    fn ipv6_udp_raw() {
        let b = PacketBuilder::ipv6([1; 16], [2; 16], 5).udp(53, 5353);
        let mut v = Vec::new();
        b.write(&mut v, b"abc").unwrap();
        let p = decode_ip(LinkType::RAW, &v).unwrap();
        assert_eq!(p.proto, 17);
        assert_eq!(p.ip_len, 40 + 8 + 3);
        let Transport::Udp(u) = decode_transport(p.proto, p.payload, p.payload_wire_len).unwrap()
        else {
            panic!()
        };
        assert_eq!((u.src_port, u.dst_port, u.payload), (53, 5353, &b"abc"[..]));
    }
}
