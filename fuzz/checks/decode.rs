//! Link, IP and transport decoding of arbitrary frames, for every supported
//! link type: never panics, never points past the frame.
use streamcap::decode::{decode_ip, decode_transport};
use streamcap::LinkType;

const LINKS: [LinkType; 10] = [
    LinkType::ETHERNET,
    LinkType::RAW,
    LinkType::IPV4,
    LinkType::IPV6,
    LinkType::LINUX_SLL,
    LinkType::LINUX_SLL2,
    LinkType::NULL,
    LinkType::LOOP,
    LinkType::RAW_BSD12,
    LinkType::RAW_BSD14,
];

/// Runs the checks on one input (panics on a violation).
pub fn run(data: &[u8]) {
    let Some((&sel, frame)) = data.split_first() else {
        return;
    };
    let link = LINKS[usize::from(sel) % LINKS.len()];
    if let Ok(net) = decode_ip(link, frame) {
        assert!(net.payload.len() <= frame.len());
        assert!(net.payload.len() as u64 <= u64::from(net.payload_wire_len));
        if net.fragment.is_none() {
            let _ = decode_transport(net.proto, net.payload, net.payload_wire_len);
        }
    }
}
