//! Encapsulations from arbitrary bytes: the tunnel header readers (IP-in-IP,
//! 6in4, GRE, ERSPAN, VXLAN, GENEVE, GTP-U), the link-level ones (PPPoE,
//! MPLS) and the whole worker on an outer frame carrying the bytes. Never
//! panics; an inner frame and a decoded payload lie inside the input; the
//! global counters add up, and the same frames processed in a group give the
//! per-packet statistics.
use super::common::{checking_callbacks, config, feed, finish};
use streamcap::decode::tunnel::Decapsulator;
use streamcap::decode::{decode_ip, Transport, UdpDatagram};
use streamcap::Worker;
use streamcap::{LinkType, RawPacket, Timestamp};

/// Whether `inner` lies inside `outer`.
fn within(inner: &[u8], outer: &[u8]) -> bool {
    let (o, i) = (outer.as_ptr() as usize, inner.as_ptr() as usize);
    inner.is_empty() || (i >= o && i + inner.len() <= o + outer.len())
}

/// The outer protocols and UDP ports the selector picks from.
const OUTER: [(u8, u16); 6] = [(4, 0), (41, 0), (47, 0), (17, 4789), (17, 6081), (17, 2152)];

/// Link-level EtherTypes put in front of the bytes.
const LINK: [u16; 4] = [0x8864, 0x8847, 0x8848, 0x8100];

/// An Ethernet/IPv4 frame of protocol `proto` (with a UDP header to `port`
/// for 17) carrying `body`.
fn outer_frame(proto: u8, port: u16, body: &[u8]) -> Vec<u8> {
    let udp = if proto == 17 { 8 } else { 0 };
    let total = (20 + udp + body.len()).min(usize::from(u16::MAX)) as u16;
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&total.to_be_bytes());
    f.extend_from_slice(&[0, 1, 0, 0, 64, proto, 0, 0, 192, 0, 2, 1, 192, 0, 2, 2]);
    if proto == 17 {
        let ulen = (8 + body.len()).min(usize::from(u16::MAX)) as u16;
        f.extend_from_slice(&40000u16.to_be_bytes());
        f.extend_from_slice(&port.to_be_bytes());
        f.extend_from_slice(&ulen.to_be_bytes());
        f.extend_from_slice(&[0, 0]);
    }
    f.extend_from_slice(body);
    f
}

/// Runs the checks on one input (panics on a violation).
pub fn run(data: &[u8]) {
    let Some((&sel, body)) = data.split_first() else {
        return;
    };
    let d = Decapsulator::new(&[4789], &[6081], &[2152]);
    let (proto, port) = OUTER[usize::from(sel) % OUTER.len()];
    let t = if proto == 17 {
        Transport::Udp(UdpDatagram {
            src_port: 40000,
            dst_port: port,
            payload: body,
            payload_wire_len: body.len() as u32,
        })
    } else {
        Transport::Other {
            payload: body,
            payload_wire_len: body.len() as u32,
        }
    };
    assert!(d.carrier(proto, &t));
    if let Ok(Some(inner)) = d.inner(proto, &t) {
        assert!(within(inner.frame, body), "inner frame outside the input");
        assert!(matches!(
            inner.link,
            LinkType::ETHERNET | LinkType::IPV4 | LinkType::IPV6
        ));
        if let Ok(net) = decode_ip(inner.link, inner.frame) {
            assert!(within(net.payload, inner.frame));
            assert!(net.payload.len() as u64 <= u64::from(net.payload_wire_len));
        }
    }

    // Link level: the bytes behind an Ethernet header announcing PPPoE,
    // MPLS, or a VLAN tag (whose EtherType the bytes give).
    let ethertype = LINK[usize::from(sel / 6) % LINK.len()];
    let mut frame = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
    frame.extend_from_slice(&ethertype.to_be_bytes());
    frame.extend_from_slice(body);
    if let Ok(net) = decode_ip(LinkType::ETHERNET, &frame) {
        assert!(within(net.payload, &frame));
        assert!(net.payload.len() as u64 <= u64::from(net.payload_wire_len));
    }

    // The whole worker: the outer frame twice (a flow and its lookup), the
    // link-level frame, per packet and in one group.
    let frames = [outer_frame(proto, port, body), frame];
    let frames = [&frames[0][..], &frames[1][..], &frames[0][..]];
    let mut cfg = config(sel.rotate_left(3));
    cfg.max_tunnel_depth = usize::from(sel >> 6) + 1;
    let (cb, _seen) = checking_callbacks();
    let mut w = Worker::new(cfg.clone(), cb);
    for (i, f) in frames.iter().enumerate() {
        feed(
            &mut w,
            1_000_000 * i as u64,
            f,
            f.len() as u32,
            i as u64 + 1,
        );
    }
    let one = finish(&mut w);
    let (cb, _seen) = checking_callbacks();
    let mut w = Worker::new(cfg, cb);
    let pkts: Vec<RawPacket<'_>> = frames
        .iter()
        .enumerate()
        .map(|(i, f)| RawPacket {
            ts: Timestamp(1_000_000 * i as u64),
            link: LinkType::ETHERNET,
            data: f,
            orig_len: f.len() as u32,
            record: i as u64 + 1,
            interface: 0,
        })
        .collect();
    w.process_batch(&pkts);
    let grouped = finish(&mut w);
    assert_eq!(one.decode_errors, grouped.decode_errors);
    assert_eq!(one.proto_packets, grouped.proto_packets);
    assert_eq!(one.flows_created, grouped.flows_created);
    assert_eq!(one.totals, grouped.totals);
}
