//! The Information Elements streamcap exports and the two templates made of
//! them (IPv4, IPv6): IANA's, their RFC 5103 reverses, and streamcap's own
//! under [`STREAMCAP_PEN`].

/// The Private Enterprise Number of RFC 5103's reverse Information
/// Elements: an IANA element's number under this PEN is the same element
/// for the reverse direction of a biflow.
pub const REVERSE_PEN: u32 = 29305;

/// The Private Enterprise Number of streamcap's own elements.
///
/// **A placeholder**: streamcap has no Private Enterprise Number of its
/// own. 32473 is the number IANA reserves for documentation and examples
/// (RFC 5612), so it can never be mistaken for a vendor's elements; a
/// registered number is to replace it (see docs/export.md).
pub const STREAMCAP_PEN: u32 = 32473;

/// The bit that makes an enterprise-specific element the reverse of the
/// one without it (RFC 5103 §6.2: enterprise-specific elements are
/// reversed within their own PEN by setting bit 14 of the element id).
pub const REVERSE_BIT: u16 = 0x4000;

/// The field length that marks a variable-length field (RFC 7011 §7).
pub const VARIABLE_LENGTH: u16 = 65535;

/// One field of a template: an Information Element and its length.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct FieldSpec {
    /// The element's number (without the enterprise bit).
    pub id: u16,
    /// Its length in a data record ([`VARIABLE_LENGTH`]: variable).
    pub len: u16,
    /// Its Private Enterprise Number, 0 for IANA's elements.
    pub pen: u32,
}

impl FieldSpec {
    /// An IANA element.
    pub const fn iana(id: u16, len: u16) -> FieldSpec {
        FieldSpec { id, len, pen: 0 }
    }
    /// An enterprise-specific element.
    pub const fn enterprise(pen: u32, id: u16, len: u16) -> FieldSpec {
        FieldSpec { id, len, pen }
    }
    /// Bytes it takes in a template record: 4, or 8 with a PEN.
    pub const fn spec_len(&self) -> usize {
        if self.pen == 0 {
            4
        } else {
            8
        }
    }
}

/// IANA element numbers used here (the IANA "IPFIX Information Elements"
/// registry).
pub mod iana {
    /// octetDeltaCount (unsigned64).
    pub const OCTET_DELTA_COUNT: u16 = 1;
    /// packetDeltaCount (unsigned64).
    pub const PACKET_DELTA_COUNT: u16 = 2;
    /// protocolIdentifier (unsigned8).
    pub const PROTOCOL_IDENTIFIER: u16 = 4;
    /// tcpControlBits (unsigned16, RFC 7125).
    pub const TCP_CONTROL_BITS: u16 = 6;
    /// sourceTransportPort (unsigned16).
    pub const SOURCE_TRANSPORT_PORT: u16 = 7;
    /// sourceIPv4Address.
    pub const SOURCE_IPV4_ADDRESS: u16 = 8;
    /// destinationTransportPort (unsigned16).
    pub const DESTINATION_TRANSPORT_PORT: u16 = 11;
    /// destinationIPv4Address.
    pub const DESTINATION_IPV4_ADDRESS: u16 = 12;
    /// sourceIPv6Address.
    pub const SOURCE_IPV6_ADDRESS: u16 = 27;
    /// destinationIPv6Address.
    pub const DESTINATION_IPV6_ADDRESS: u16 = 28;
    /// vlanId (unsigned16).
    pub const VLAN_ID: u16 = 58;
    /// flowEndReason (unsigned8).
    pub const FLOW_END_REASON: u16 = 136;
    /// flowStartMilliseconds (dateTimeMilliseconds).
    pub const FLOW_START_MILLISECONDS: u16 = 152;
    /// flowEndMilliseconds (dateTimeMilliseconds).
    pub const FLOW_END_MILLISECONDS: u16 = 153;
}

/// streamcap's elements under [`STREAMCAP_PEN`] (unsigned64 each, octets
/// of the reassembled stream in the forward direction; the reverse
/// direction's are the same numbers with [`REVERSE_BIT`]).
pub mod streamcap {
    /// Stream bytes delivered to the application (`captured`).
    pub const CAPTURED_OCTETS: u16 = 1;
    /// Stream bytes not delivered by decision: the cutoff (`discarded`).
    pub const DISCARDED_OCTETS: u16 = 2;
    /// Stream bytes not delivered for lack of memory (`dropped`).
    pub const DROPPED_OCTETS: u16 = 3;
    /// Stream bytes never seen (`missing`).
    pub const MISSING_OCTETS: u16 = 4;
}

/// The template id of flows between IPv4 addresses.
pub const TEMPLATE_V4: u16 = 256;
/// The template id of flows between IPv6 addresses.
pub const TEMPLATE_V6: u16 = 257;

const fn rev(id: u16, len: u16) -> FieldSpec {
    FieldSpec::enterprise(REVERSE_PEN, id, len)
}

const fn own(id: u16) -> FieldSpec {
    FieldSpec::enterprise(STREAMCAP_PEN, id, 8)
}

/// The fields of a template, in record order: the addresses (IPv4 or
/// IPv6), then the same fields for both.
const fn fields(v6: bool) -> [FieldSpec; 23] {
    use iana::*;
    use streamcap::*;
    let (src, dst, alen) = if v6 {
        (SOURCE_IPV6_ADDRESS, DESTINATION_IPV6_ADDRESS, 16)
    } else {
        (SOURCE_IPV4_ADDRESS, DESTINATION_IPV4_ADDRESS, 4)
    };
    [
        FieldSpec::iana(src, alen),
        FieldSpec::iana(dst, alen),
        FieldSpec::iana(SOURCE_TRANSPORT_PORT, 2),
        FieldSpec::iana(DESTINATION_TRANSPORT_PORT, 2),
        FieldSpec::iana(PROTOCOL_IDENTIFIER, 1),
        FieldSpec::iana(VLAN_ID, 2),
        FieldSpec::iana(FLOW_START_MILLISECONDS, 8),
        FieldSpec::iana(FLOW_END_MILLISECONDS, 8),
        FieldSpec::iana(FLOW_END_REASON, 1),
        // The reverse flags before the forward ones: nfdump 1.7 reads a
        // reverse tcpControlBits as the forward one, and the later wins.
        rev(TCP_CONTROL_BITS, 2),
        FieldSpec::iana(TCP_CONTROL_BITS, 2),
        FieldSpec::iana(PACKET_DELTA_COUNT, 8),
        FieldSpec::iana(OCTET_DELTA_COUNT, 8),
        rev(PACKET_DELTA_COUNT, 8),
        rev(OCTET_DELTA_COUNT, 8),
        own(CAPTURED_OCTETS),
        own(DISCARDED_OCTETS),
        own(DROPPED_OCTETS),
        own(MISSING_OCTETS),
        own(CAPTURED_OCTETS | REVERSE_BIT),
        own(DISCARDED_OCTETS | REVERSE_BIT),
        own(DROPPED_OCTETS | REVERSE_BIT),
        own(MISSING_OCTETS | REVERSE_BIT),
    ]
}

/// The IPv4 template's fields.
pub const FIELDS_V4: [FieldSpec; 23] = fields(false);
/// The IPv6 template's fields.
pub const FIELDS_V6: [FieldSpec; 23] = fields(true);

/// The bytes of one data record of a template of fixed-length `fields`.
pub const fn record_len(fields: &[FieldSpec]) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < fields.len() {
        n += fields[i].len as usize;
        i += 1;
    }
    n
}

/// A data record of the IPv4 template: 132 bytes.
pub const RECORD_LEN_V4: usize = record_len(&FIELDS_V4);
/// A data record of the IPv6 template: 156 bytes.
pub const RECORD_LEN_V6: usize = record_len(&FIELDS_V6);

/// The bytes of one template record of `fields` (its 4-byte header and a
/// field specifier per field).
pub const fn template_len(fields: &[FieldSpec]) -> usize {
    let mut n = 4;
    let mut i = 0;
    while i < fields.len() {
        n += fields[i].spec_len();
        i += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_and_template_sizes() {
        assert_eq!(RECORD_LEN_V4, 132);
        assert_eq!(RECORD_LEN_V6, 156);
        // 12 IANA fields, 3 reverse and 8 of streamcap's (with a PEN).
        assert_eq!(template_len(&FIELDS_V4), 4 + 12 * 4 + 11 * 8);
        assert_eq!(template_len(&FIELDS_V6), template_len(&FIELDS_V4));
        assert!(FIELDS_V4.iter().all(|f| f.id & 0x8000 == 0));
    }
}
