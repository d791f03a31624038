//! Link-layer headers: where the IP header starts and which VLANs tag it.
//!
//! Besides Ethernet, VLAN tags, Linux SLL/SLL2, BSD loopback and raw IP,
//! two link-level encapsulations are read here, behind any EtherType that
//! names them: PPPoE sessions (RFC 2516; IPv4 or IPv6 in PPP) and MPLS label
//! stacks (RFC 3032; IPv4 or IPv6 after the bottom label, or an Ethernet
//! pseudowire with its control word, RFC 4448). They are link layers, not
//! tunnels: no tunnel context is added to the flow, as VLAN tags are the
//! only link-layer field in the flow key.

use super::DecodeError;
use crate::LinkType;

/// The result of reading a link-layer header.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LinkInfo {
    /// Offset of the IP header in the frame.
    pub ip_offset: usize,
    /// Outer VLAN id.
    pub vlan: Option<u16>,
    /// Inner VLAN id (QinQ).
    pub inner_vlan: Option<u16>,
}

/// Alias kept for the public API: link errors are [`DecodeError`]s.
pub type LinkError = DecodeError;

const ETH_IPV4: u16 = 0x0800;
const ETH_IPV6: u16 = 0x86dd;
const ETH_VLAN: u16 = 0x8100;
const ETH_QINQ: u16 = 0x88a8;
const ETH_QINQ_OLD: u16 = 0x9100;
const ETH_PPPOE_SESSION: u16 = 0x8864;
const ETH_MPLS: u16 = 0x8847;
const ETH_MPLS_MULTICAST: u16 = 0x8848;
/// Link-level headers (VLAN tags, PPPoE, MPLS labels, pseudowire Ethernet
/// headers) read at most before the IP header: deeper is no real frame.
const MAX_LINK_HEADERS: usize = 24;

fn be16(b: &[u8], at: usize) -> Result<u16, DecodeError> {
    b.get(at..at + 2)
        .map(|s| u16::from_be_bytes([s[0], s[1]]))
        .ok_or(DecodeError::TruncatedLink)
}

/// Finds the IP header of a frame: reads Ethernet (with any number of VLAN
/// tags, the first two reported), Linux SLL/SLL2, BSD loopback and raw IP.
/// A frame whose EtherType is neither IPv4 nor IPv6 is
/// [`DecodeError::NotIp`] here, PPPoE and MPLS included; [`super::decode_ip`]
/// reads those through `encapsulated`.
#[inline]
pub fn decode_link(link: LinkType, frame: &[u8]) -> Result<LinkInfo, DecodeError> {
    let mut info = LinkInfo {
        ip_offset: 0,
        vlan: None,
        inner_vlan: None,
    };
    let (mut ethertype, mut off) = match link {
        LinkType::ETHERNET => (be16(frame, 12)?, 14),
        LinkType::LINUX_SLL => (be16(frame, 14)?, 16),
        LinkType::LINUX_SLL2 => (be16(frame, 0)?, 20),
        LinkType::NULL | LinkType::LOOP => {
            let b = frame.get(..4).ok_or(DecodeError::TruncatedLink)?;
            // The family is in the writer's byte order (NULL) or network order (LOOP):
            // accept either by looking at whichever end is non-zero.
            let fam = if b[0] == 0 && b[1] == 0 {
                u32::from(b[3])
            } else {
                u32::from(b[0])
            };
            let et = match fam {
                2 => ETH_IPV4,
                24 | 28 | 30 => ETH_IPV6,
                _ => return Err(DecodeError::NotIp),
            };
            (et, 4)
        }
        LinkType::RAW | LinkType::RAW_BSD12 | LinkType::RAW_BSD14 => {
            let v = frame.first().ok_or(DecodeError::TruncatedLink)? >> 4;
            match v {
                4 => (ETH_IPV4, 0),
                6 => (ETH_IPV6, 0),
                _ => return Err(DecodeError::BadIpHeader),
            }
        }
        LinkType::IPV4 => (ETH_IPV4, 0),
        LinkType::IPV6 => (ETH_IPV6, 0),
        _ => return Err(DecodeError::UnsupportedLink),
    };
    let mut tags = 0;
    while matches!(ethertype, ETH_VLAN | ETH_QINQ | ETH_QINQ_OLD) {
        let tci = be16(frame, off)?;
        let id = tci & 0x0fff;
        match tags {
            0 => info.vlan = Some(id),
            1 => info.inner_vlan = Some(id),
            _ => {}
        }
        tags += 1;
        if tags > 8 {
            return Err(DecodeError::TruncatedLink);
        }
        ethertype = be16(frame, off + 2)?;
        off += 4;
    }
    match ethertype {
        ETH_IPV4 | ETH_IPV6 => {
            info.ip_offset = off;
            if off >= frame.len() {
                return Err(DecodeError::TruncatedLink);
            }
            Ok(info)
        }
        // PPPoE and MPLS too: `decode_ip` reads them (`encapsulated`) off
        // the common path.
        _ => Err(DecodeError::NotIp),
    }
}

/// What follows an EtherType: the next header to read.
enum Next {
    /// Another EtherType at an offset.
    EtherType(u16, usize),
    /// An IP header at an offset.
    Ip(usize),
}

/// A frame of link type `link` whose EtherType (after any VLAN tags) is
/// neither IPv4 nor IPv6: reads its headers again from the start, through
/// VLAN tags, PPPoE sessions and MPLS label stacks, to the IP header. A
/// header cut short or invalid is [`DecodeError::BadEncapsulation`]; a
/// payload that is not IP (PPP control protocols, non-IP pseudowires, and
/// any other EtherType) is [`DecodeError::NotIp`].
pub(super) fn encapsulated(link: LinkType, frame: &[u8]) -> Result<LinkInfo, DecodeError> {
    let (mut ethertype, mut off) = match link {
        LinkType::ETHERNET => (be16(frame, 12)?, 14),
        LinkType::LINUX_SLL => (be16(frame, 14)?, 16),
        LinkType::LINUX_SLL2 => (be16(frame, 0)?, 20),
        _ => return Err(DecodeError::NotIp),
    };
    let (mut info, mut tags) = (
        LinkInfo {
            ip_offset: 0,
            vlan: None,
            inner_vlan: None,
        },
        0,
    );
    const BAD: DecodeError = DecodeError::BadEncapsulation;
    let at = |at: usize| be16(frame, at).map_err(|_| BAD);
    for _ in 0..MAX_LINK_HEADERS {
        let next = match ethertype {
            ETH_IPV4 | ETH_IPV6 => Next::Ip(off),
            ETH_VLAN | ETH_QINQ | ETH_QINQ_OLD => {
                let id = at(off)? & 0x0fff;
                match tags {
                    0 => info.vlan = Some(id),
                    1 => info.inner_vlan = Some(id),
                    _ => {}
                }
                tags += 1;
                Next::EtherType(at(off + 2)?, off + 4)
            }
            ETH_PPPOE_SESSION => {
                // Version and type 1, code 0 (session data), session id,
                // length, then the PPP protocol.
                let h = frame.get(off..off + 8).ok_or(BAD)?;
                if h[0] != 0x11 || h[1] != 0 {
                    return Err(BAD);
                }
                match u16::from_be_bytes([h[6], h[7]]) {
                    0x0021 => Next::EtherType(ETH_IPV4, off + 8),
                    0x0057 => Next::EtherType(ETH_IPV6, off + 8),
                    _ => return Err(DecodeError::NotIp),
                }
            }
            ETH_MPLS | ETH_MPLS_MULTICAST => mpls(frame, off)?,
            _ => return Err(DecodeError::NotIp),
        };
        match next {
            Next::Ip(ip) => {
                if ip >= frame.len() {
                    return Err(BAD);
                }
                info.ip_offset = ip;
                return Ok(info);
            }
            Next::EtherType(e, o) => (ethertype, off) = (e, o),
        }
    }
    Err(BAD)
}

/// An MPLS label stack at `off`: the labels up to the bottom of the stack,
/// then by the first nibble an IPv4 (4) or IPv6 (6) packet, or an Ethernet
/// pseudowire (0: a control word, then an Ethernet header).
fn mpls(frame: &[u8], mut off: usize) -> Result<Next, DecodeError> {
    const BAD: DecodeError = DecodeError::BadEncapsulation;
    for _ in 0..MAX_LINK_HEADERS {
        let entry = frame.get(off..off + 4).ok_or(BAD)?;
        off += 4;
        if entry[2] & 0x01 == 0 {
            continue;
        }
        let first = *frame.get(off).ok_or(BAD)?;
        return match first >> 4 {
            4 | 6 => Ok(Next::Ip(off)),
            0 => {
                let ethertype = be16(frame, off + 4 + 12).map_err(|_| BAD)?;
                Ok(Next::EtherType(ethertype, off + 4 + 14))
            }
            _ => Err(DecodeError::NotIp),
        };
    }
    Err(BAD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sll_and_sll2_and_null() {
        let mut sll = vec![0u8; 16];
        sll[14..16].copy_from_slice(&ETH_IPV6.to_be_bytes());
        sll.push(0x60);
        assert_eq!(
            decode_link(LinkType::LINUX_SLL, &sll).unwrap().ip_offset,
            16
        );
        let mut sll2 = vec![0u8; 20];
        sll2[0..2].copy_from_slice(&ETH_IPV4.to_be_bytes());
        sll2.push(0x45);
        assert_eq!(
            decode_link(LinkType::LINUX_SLL2, &sll2).unwrap().ip_offset,
            20
        );
        let null = [2u8, 0, 0, 0, 0x45];
        assert_eq!(decode_link(LinkType::NULL, &null).unwrap().ip_offset, 4);
        let lo = [0u8, 0, 0, 30, 0x60];
        assert_eq!(decode_link(LinkType::LOOP, &lo).unwrap().ip_offset, 4);
    }

    #[test]
    fn qinq_and_arp() {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&ETH_QINQ.to_be_bytes());
        f.extend_from_slice(&100u16.to_be_bytes());
        f.extend_from_slice(&ETH_VLAN.to_be_bytes());
        f.extend_from_slice(&200u16.to_be_bytes());
        f.extend_from_slice(&ETH_IPV4.to_be_bytes());
        f.push(0x45);
        let i = decode_link(LinkType::ETHERNET, &f).unwrap();
        assert_eq!(
            (i.vlan, i.inner_vlan, i.ip_offset),
            (Some(100), Some(200), 22)
        );
        let mut arp = vec![0u8; 12];
        arp.extend_from_slice(&0x0806u16.to_be_bytes());
        arp.push(0);
        assert_eq!(
            decode_link(LinkType::ETHERNET, &arp),
            Err(DecodeError::NotIp)
        );
        assert_eq!(
            decode_link(LinkType::ETHERNET, &arp[..5]),
            Err(DecodeError::TruncatedLink)
        );
    }
}
