//! Transport headers: TCP (with options), UDP, ICMP and ICMPv6.

use super::DecodeError;
use std::fmt;
use std::ops::BitOr;

/// TCP header flags.
#[derive(Copy, Clone, Default, PartialEq, Eq, Hash)]
pub struct TcpFlags(pub u8);

impl TcpFlags {
    /// No more data from sender.
    pub const FIN: TcpFlags = TcpFlags(0x01);
    /// Synchronize sequence numbers.
    pub const SYN: TcpFlags = TcpFlags(0x02);
    /// Reset the connection.
    pub const RST: TcpFlags = TcpFlags(0x04);
    /// Push function.
    pub const PSH: TcpFlags = TcpFlags(0x08);
    /// Acknowledgment field is significant.
    pub const ACK: TcpFlags = TcpFlags(0x10);
    /// Urgent pointer field is significant.
    pub const URG: TcpFlags = TcpFlags(0x20);

    /// Whether every flag of `other` is set.
    pub fn contains(self, other: TcpFlags) -> bool {
        self.0 & other.0 == other.0
    }
    /// SYN set.
    pub fn syn(self) -> bool {
        self.contains(Self::SYN)
    }
    /// ACK set.
    pub fn ack(self) -> bool {
        self.contains(Self::ACK)
    }
    /// FIN set.
    pub fn fin(self) -> bool {
        self.contains(Self::FIN)
    }
    /// RST set.
    pub fn rst(self) -> bool {
        self.contains(Self::RST)
    }
}

impl BitOr for TcpFlags {
    type Output = TcpFlags;
    fn bitor(self, rhs: TcpFlags) -> TcpFlags {
        TcpFlags(self.0 | rhs.0)
    }
}

impl fmt::Debug for TcpFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const NAMES: [(u8, char); 6] = [
            (0x02, 'S'),
            (0x10, 'A'),
            (0x08, 'P'),
            (0x01, 'F'),
            (0x04, 'R'),
            (0x20, 'U'),
        ];
        for (bit, c) in NAMES {
            if self.0 & bit != 0 {
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

/// A TCP segment's header fields and payload.
#[derive(Clone, Debug)]
pub struct TcpSegment<'a> {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgment number (meaningful when ACK is set).
    pub ack: u32,
    /// Flags.
    pub flags: TcpFlags,
    /// Advertised window (unscaled).
    pub window: u16,
    /// Window scale option (SYN segments only).
    pub window_scale: Option<u8>,
    /// Header length in bytes (with options).
    pub header_len: u16,
    /// Payload bytes present in the capture.
    pub payload: &'a [u8],
    /// Payload length on the wire (per the IP length), ≥ `payload.len()`.
    pub payload_wire_len: u32,
}

/// A UDP datagram's ports and payload.
#[derive(Clone, Debug)]
pub struct UdpDatagram<'a> {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Payload bytes present in the capture.
    pub payload: &'a [u8],
    /// Payload length on the wire, ≥ `payload.len()`.
    pub payload_wire_len: u32,
}

/// An ICMP or ICMPv6 message.
#[derive(Clone, Debug)]
pub struct IcmpMessage<'a> {
    /// ICMPv6 (protocol 58) rather than ICMP (1).
    pub v6: bool,
    /// Message type.
    pub icmp_type: u8,
    /// Message code.
    pub code: u8,
    /// The whole ICMP message present in the capture (header included).
    pub payload: &'a [u8],
    /// Message length on the wire.
    pub payload_wire_len: u32,
}

impl IcmpMessage<'_> {
    /// The "ports" that identify the message's flow, as Zeek keys ICMP
    /// connections and the Community ID spec hashes them: a request or a
    /// reply of a pair (echo, timestamp, information, address mask, router
    /// and neighbour discovery, …) gives (its type, its counterpart's type),
    /// so that a request and its reply make one flow; any other message
    /// (destination unreachable, time exceeded, …) gives (type, code).
    pub fn flow_ports(&self) -> (u16, u16) {
        let t = self.icmp_type;
        match icmp_counterpart(self.v6, t) {
            Some(c) => (u16::from(t), u16::from(c)),
            None => (u16::from(t), u16::from(self.code)),
        }
    }
}

/// The type of the other half of an ICMP (`v6`: ICMPv6) request/reply
/// pair, or `None` for a message that has no answer (the Community ID
/// spec's table, version 1).
pub fn icmp_counterpart(v6: bool, icmp_type: u8) -> Option<u8> {
    let c = if v6 {
        match icmp_type {
            128 => 129, // echo request, reply
            129 => 128,
            133 => 134, // router solicitation, advertisement
            134 => 133,
            135 => 136, // neighbour solicitation, advertisement
            136 => 135,
            130 => 131, // multicast listener query, report
            131 => 130,
            139 => 140, // node information query, reply
            140 => 139,
            144 => 145, // home agent address discovery request, reply
            145 => 144,
            _ => return None,
        }
    } else {
        match icmp_type {
            8 => 0, // echo request, reply
            0 => 8,
            13 => 14, // timestamp
            14 => 13,
            15 => 16, // information
            16 => 15,
            10 => 9, // router solicitation, advertisement
            9 => 10,
            17 => 18, // address mask
            18 => 17,
            _ => return None,
        }
    };
    Some(c)
}

/// A decoded transport layer.
#[derive(Clone, Debug)]
pub enum Transport<'a> {
    /// TCP.
    Tcp(TcpSegment<'a>),
    /// UDP.
    Udp(UdpDatagram<'a>),
    /// ICMP or ICMPv6.
    Icmp(IcmpMessage<'a>),
    /// Any other protocol: its payload as is.
    Other {
        /// Payload bytes present.
        payload: &'a [u8],
        /// Payload length on the wire.
        payload_wire_len: u32,
    },
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// Decodes the transport header of an (unfragmented or reassembled) IP payload.
///
/// `wire_len` is the payload length on the wire; `payload` may be shorter when
/// the capture cut the packet. A transport header that is itself cut short is
/// an error ([`DecodeError::BadTransportHeader`]); a cut payload is not.
#[inline]
pub fn decode_transport(
    proto: u8,
    payload: &[u8],
    wire_len: u32,
) -> Result<Transport<'_>, DecodeError> {
    let wire_len = wire_len.max(payload.len() as u32);
    match proto {
        6 => {
            let h = payload.get(..20).ok_or(DecodeError::BadTransportHeader)?;
            let hlen = usize::from(h[12] >> 4) * 4;
            if hlen < 20 {
                return Err(DecodeError::BadTransportHeader);
            }
            let header = payload.get(..hlen).ok_or(DecodeError::BadTransportHeader)?;
            let flags = TcpFlags(h[13] & 0x3f);
            let window_scale = if flags.syn() {
                window_scale_option(&header[20..])
            } else {
                None
            };
            Ok(Transport::Tcp(TcpSegment {
                src_port: be16(h, 0),
                dst_port: be16(h, 2),
                seq: u32::from_be_bytes([h[4], h[5], h[6], h[7]]),
                ack: u32::from_be_bytes([h[8], h[9], h[10], h[11]]),
                flags,
                window: be16(h, 14),
                window_scale,
                header_len: hlen as u16,
                payload: &payload[hlen..],
                payload_wire_len: wire_len.saturating_sub(hlen as u32),
            }))
        }
        17 => {
            let h = payload.get(..8).ok_or(DecodeError::BadTransportHeader)?;
            // The UDP length field bounds the payload when it is consistent.
            let ulen = u32::from(be16(h, 4));
            let wire = if ulen >= 8 && ulen <= wire_len {
                ulen - 8
            } else {
                wire_len - 8
            };
            let present = (payload.len() - 8).min(wire as usize);
            Ok(Transport::Udp(UdpDatagram {
                src_port: be16(h, 0),
                dst_port: be16(h, 2),
                payload: &payload[8..8 + present],
                payload_wire_len: wire,
            }))
        }
        1 | 58 => {
            let h = payload.get(..4).ok_or(DecodeError::BadTransportHeader)?;
            Ok(Transport::Icmp(IcmpMessage {
                v6: proto == 58,
                icmp_type: h[0],
                code: h[1],
                payload,
                payload_wire_len: wire_len,
            }))
        }
        _ => Ok(Transport::Other {
            payload,
            payload_wire_len: wire_len,
        }),
    }
}

fn window_scale_option(mut opts: &[u8]) -> Option<u8> {
    while let Some(&kind) = opts.first() {
        match kind {
            0 => return None,
            1 => opts = &opts[1..],
            _ => {
                let len = usize::from(*opts.get(1)?);
                if len < 2 || len > opts.len() {
                    return None;
                }
                if kind == 3 && len == 3 {
                    return Some(opts[2].min(14));
                }
                opts = &opts[len..];
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_options_and_bad_offsets() {
        let mut h = vec![0u8; 28];
        h[12] = 7 << 4;
        h[13] = 0x02;
        h[20..28].copy_from_slice(&[1, 3, 3, 7, 0, 0, 0, 0]);
        let Transport::Tcp(s) = decode_transport(6, &h, 28).unwrap() else {
            panic!()
        };
        assert_eq!(s.window_scale, Some(7));
        assert!(s.payload.is_empty());
        h[12] = 4 << 4;
        assert_eq!(
            decode_transport(6, &h, 28).unwrap_err(),
            DecodeError::BadTransportHeader
        );
        h[12] = 15 << 4;
        assert_eq!(
            decode_transport(6, &h, 28).unwrap_err(),
            DecodeError::BadTransportHeader
        );
        // A malformed option list does not panic.
        assert_eq!(window_scale_option(&[3, 9, 1]), None);
        assert_eq!(window_scale_option(&[2]), None);
    }

    #[test]
    fn udp_length_field() {
        let mut d = vec![0u8; 8];
        d[4..6].copy_from_slice(&11u16.to_be_bytes());
        d.extend_from_slice(b"abcXX"); // Ethernet padding after the datagram.
        let Transport::Udp(u) = decode_transport(17, &d, 13).unwrap() else {
            panic!()
        };
        assert_eq!(u.payload, b"abc");
        assert_eq!(u.payload_wire_len, 3);
    }
}
