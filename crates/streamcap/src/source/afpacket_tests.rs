//! Unit tests of the live-capture socket's safe parts: the block walker
//! (VLAN tags, cooked headers, corrupt blocks), the ring geometry, fan-out
//! options, poll timeouts, the loopback filter prefix and error messages.

use super::*;

/// A block of `size` bytes holding `packets` (frame bytes, status, TCI,
/// TPID), laid out like the kernel does with PACKET_RESERVE = 4.
fn block(size: usize, packets: &[(&[u8], u32, u32, u16)]) -> Vec<u8> {
    // TPACKET_ALIGN(68 + 16) + 4 - 14, as the kernel computes it
    block_at(size, 86, packets)
}

/// A block whose packets' data start `mac` bytes after their header.
fn block_at(size: usize, mac: usize, packets: &[(&[u8], u32, u32, u16)]) -> Vec<u8> {
    let mut b = vec![0u8; size];
    let mut at = block_desc::SIZE;
    b[block_desc::BLOCK_STATUS..][..4].copy_from_slice(&TP_STATUS_USER.to_ne_bytes());
    b[block_desc::NUM_PKTS..][..4].copy_from_slice(&(packets.len() as u32).to_ne_bytes());
    b[block_desc::OFFSET_TO_FIRST_PKT..][..4].copy_from_slice(&(at as u32).to_ne_bytes());
    for (i, (frame, status, tci, tpid)) in packets.iter().enumerate() {
        let next = (mac + frame.len()).next_multiple_of(16);
        let put32 = |b: &mut Vec<u8>, off: usize, v: u32| {
            b[at + off..][..4].copy_from_slice(&v.to_ne_bytes())
        };
        let last = i + 1 == packets.len();
        put32(
            &mut b,
            pkt_hdr::NEXT_OFFSET,
            if last { 0 } else { next as u32 },
        );
        put32(&mut b, pkt_hdr::SEC, 1_700_000_000 + i as u32);
        put32(&mut b, pkt_hdr::NSEC, 5);
        put32(&mut b, pkt_hdr::SNAPLEN, frame.len() as u32);
        put32(&mut b, pkt_hdr::LEN, frame.len() as u32);
        put32(&mut b, pkt_hdr::STATUS, *status);
        b[at + pkt_hdr::MAC..][..2].copy_from_slice(&(mac as u16).to_ne_bytes());
        put32(&mut b, pkt_hdr::VLAN_TCI, *tci);
        b[at + pkt_hdr::VLAN_TPID..][..2].copy_from_slice(&tpid.to_ne_bytes());
        b[at + mac..][..frame.len()].copy_from_slice(frame);
        at += next;
    }
    b
}

fn collect(block: &mut [u8], snaplen: u32) -> (Walk, Vec<(Vec<u8>, u32, u64)>) {
    collect_link(block, snaplen, LinkType::ETHERNET)
}

fn collect_link(
    block: &mut [u8],
    snaplen: u32,
    link: LinkType,
) -> (Walk, Vec<(Vec<u8>, u32, u64)>) {
    let ctx = WalkContext {
        link,
        snaplen,
        first_record: 7,
    };
    let mut seen = Vec::new();
    let mut scratch = Vec::new();
    let walk = walk_block(block, &ctx, &mut scratch, &mut |p| {
        seen.push((p.data.to_vec(), p.orig_len, p.record))
    });
    (walk, seen)
}

fn frame(n: usize) -> Vec<u8> {
    (0..n).map(|i| i as u8).collect()
}

#[test]
fn walks_packets_in_order() {
    let (a, b) = (frame(60), frame(100));
    let mut blk = block(4096, &[(&a, 0, 0, 0), (&b, 0, 0, 0)]);
    let (walk, seen) = collect(&mut blk, MAX_SNAPLEN);
    assert_eq!(
        walk,
        Walk {
            packets: 2,
            corrupt: false
        }
    );
    assert_eq!(seen, vec![(a, 60, 7), (b, 100, 8)]);
}

#[test]
fn reinserts_stripped_vlan_tags() {
    let a = frame(60);
    let status = TP_STATUS_VLAN_VALID | TP_STATUS_VLAN_TPID_VALID;
    let mut blk = block(
        4096,
        &[
            (&a, status, 0x2064, 0x88a8),
            (&a, TP_STATUS_VLAN_VALID, 5, 0),
        ],
    );
    let (walk, seen) = collect(&mut blk, MAX_SNAPLEN);
    assert_eq!(walk.packets, 2);
    let mut want = a[..12].to_vec();
    want.extend_from_slice(&[0x88, 0xa8, 0x20, 0x64]);
    want.extend_from_slice(&a[12..]);
    assert_eq!(seen[0], (want.clone(), 64, 7));
    want[12..16].copy_from_slice(&[0x81, 0x00, 0x00, 0x05]);
    assert_eq!(seen[1], (want, 64, 8));
    // The snapshot length still bounds the captured bytes.
    let mut blk = block(4096, &[(&a, status, 1, 0x8100)]);
    let (_, seen) = collect(&mut blk, 60);
    assert_eq!((seen[0].0.len(), seen[0].1), (60, 64));
}

#[test]
fn vlan_without_headroom_goes_through_scratch() {
    let a = frame(60);
    let mut blk = block(4096, &[(&a, TP_STATUS_VLAN_VALID, 9, 0)]);
    // Move the frame right after the sockaddr_ll: no headroom left.
    let at = block_desc::SIZE;
    blk.copy_within(at + 86..at + 86 + 60, at + TPACKET3_HDRLEN);
    blk[at + pkt_hdr::MAC..][..2].copy_from_slice(&(TPACKET3_HDRLEN as u16).to_ne_bytes());
    let (walk, seen) = collect(&mut blk, MAX_SNAPLEN);
    assert_eq!(walk.packets, 1);
    assert_eq!(&seen[0].0[12..16], &[0x81, 0x00, 0x00, 0x09]);
    assert_eq!(&seen[0].0[16..], &a[12..]);
}

#[test]
fn corrupt_headers_end_the_block() {
    let a = frame(60);
    // Snap length reaching past the end of the block.
    let mut blk = block(4096, &[(&a, 0, 0, 0), (&a, 0, 0, 0)]);
    let second = block_desc::SIZE + (86usize + 60).next_multiple_of(16);
    blk[second + pkt_hdr::SNAPLEN..][..4].copy_from_slice(&100_000u32.to_ne_bytes());
    let (walk, seen) = collect(&mut blk, MAX_SNAPLEN);
    assert_eq!(
        walk,
        Walk {
            packets: 1,
            corrupt: true
        }
    );
    assert_eq!(seen.len(), 1);
    // More packets claimed than there are: a zero next offset stops it.
    let mut blk = block(4096, &[(&a, 0, 0, 0)]);
    blk[block_desc::NUM_PKTS..][..4].copy_from_slice(&3u32.to_ne_bytes());
    assert_eq!(
        collect(&mut blk, MAX_SNAPLEN).0,
        Walk {
            packets: 1,
            corrupt: true
        }
    );
    // First packet offset outside the block, or inside the descriptor.
    for first in [u32::MAX, 4090, 8] {
        let mut blk = block(4096, &[(&a, 0, 0, 0)]);
        blk[block_desc::OFFSET_TO_FIRST_PKT..][..4].copy_from_slice(&first.to_ne_bytes());
        assert_eq!(
            collect(&mut blk, MAX_SNAPLEN).0,
            Walk {
                packets: 0,
                corrupt: true
            }
        );
    }
    // A next offset pointing past the end.
    let mut blk = block(4096, &[(&a, 0, 0, 0), (&a, 0, 0, 0)]);
    blk[block_desc::SIZE..][..4].copy_from_slice(&u32::MAX.to_ne_bytes());
    assert_eq!(
        collect(&mut blk, MAX_SNAPLEN).0,
        Walk {
            packets: 1,
            corrupt: true
        }
    );
    // A block too short to hold its descriptor.
    assert_eq!(
        collect(&mut [0u8; 10], MAX_SNAPLEN).0,
        Walk {
            packets: 0,
            corrupt: true
        }
    );
}

/// Cooked packets (`any`) get libpcap's 16-byte header from their
/// sockaddr_ll in place of their link-layer header, the protocol from
/// the frame's Ethernet type, a stripped VLAN tag after the header's
/// first 14 bytes; in place, or without room in the scratch buffer.
#[test]
fn cooked_packets_get_a_linux_sll_header() {
    let ip = frame(40);
    let eth = |ethertype: &[u8], rest: &[u8]| {
        [&[0xaa; 6][..], &[2, 0, 0, 0, 0, 9], ethertype, rest].concat()
    };
    let plain = eth(&[0x08, 0x00], &ip);
    // QinQ with the outer tag stripped: the inner one is in the frame.
    let qinq = eth(
        &[0x81, 0x00],
        &[&[0x00, 0x2a, 0x08, 0x00][..], &ip].concat(),
    );
    let packets: [(&[u8], u32, u32, u16); 2] = [
        (&plain, 0, 0, 0),
        (
            &qinq,
            TP_STATUS_VLAN_VALID | TP_STATUS_VLAN_TPID_VALID,
            0x2064,
            0x88a8,
        ),
    ];
    let mut sll = [0u8; SOCKADDR_LL_SIZE];
    sll[0..2].copy_from_slice(&17u16.to_ne_bytes());
    sll[2..4].copy_from_slice(&0x0800u16.to_be_bytes());
    sll[4..8].copy_from_slice(&3i32.to_ne_bytes());
    sll[8..10].copy_from_slice(&ARPHRD_ETHER.to_ne_bytes());
    sll[10] = 4; // PACKET_OUTGOING
    sll[11] = 6;
    sll[12..18].copy_from_slice(&[2, 0, 0, 0, 0, 9]);
    let head = [0, 4, 0, 1, 0, 6, 2, 0, 0, 0, 0, 9, 0, 0];
    let want_plain = [&head[..], &[0x08, 0x00], &ip].concat();
    let want_qinq = [
        &head[..],
        &[0x88, 0xa8, 0x20, 0x64, 0x81, 0x00, 0x00, 0x2a, 0x08, 0x00],
        &ip,
    ]
    .concat();
    // As the kernel places a frame (mac 86), and a slot too small to
    // hold the header in place.
    for mac in [86, 72] {
        let mut blk = block_at(4096, mac, &packets);
        let mut at = block_desc::SIZE;
        for (f, ..) in &packets {
            blk[at + SOCKADDR_LL_AT..][..SOCKADDR_LL_SIZE].copy_from_slice(&sll);
            blk[at + pkt_hdr::NET..][..2].copy_from_slice(&(mac as u16 + 14).to_ne_bytes());
            at += (mac + f.len()).next_multiple_of(16);
        }
        let (walk, seen) = collect_link(&mut blk, MAX_SNAPLEN, LinkType::LINUX_SLL);
        assert_eq!(walk.packets, 2);
        assert!(!walk.corrupt);
        assert_eq!(seen[0].0, want_plain, "mac {mac}");
        assert_eq!(seen[0].1, 56);
        assert_eq!(seen[1].0, want_qinq, "mac {mac}");
        assert_eq!(seen[1].1, 64);
        let info = crate::decode::decode_link(LinkType::LINUX_SLL, &seen[1].0);
        let info = info.map(|i| (i.ip_offset, i.vlan, i.inner_vlan));
        assert_eq!(info, Ok((24, Some(0x064), Some(42))));
    }
}

#[test]
fn loopback_prefix_drops_outgoing_on_lo_only() {
    let user = [Insn::new(BPF_RET_K, 0, 0, 96)];
    let p = drop_loopback_outgoing(1, &user);
    assert_eq!(p.len(), 7);
    // Every jump lands inside the program, and the user's program
    // starts with a cleared accumulator.
    for (pc, insn) in p.iter().enumerate() {
        if insn.code == BPF_JEQ_K {
            assert!(pc + 1 + usize::from(insn.jt.max(insn.jf)) < p.len());
        }
    }
    assert_eq!(p[1 + 1 + 3], Insn::new(BPF_LD_IMM, 0, 0, 0));
    assert_eq!(p[1 + 1 + 2], Insn::new(BPF_RET_K, 0, 0, 0));
    assert_eq!(p[6], user[0]);
}

#[test]
fn ring_geometry_is_validated() {
    let page = 4096;
    assert!(RingConfig::default().validate(page).is_ok());
    assert_eq!(RingConfig::default().total_size(), 32 << 20);
    let r = RingConfig::with_total_size(100 << 20);
    assert_eq!((r.block_size, r.block_count), (1 << 20, 100));
    assert!(r.validate(page).is_ok());
    let r = RingConfig::with_total_size(1000);
    assert_eq!((r.block_size, r.block_count), (1 << 16, 1));
    assert!(r.validate(page).is_ok());
    let bad = |f: fn(&mut RingConfig)| {
        let mut r = RingConfig::default();
        f(&mut r);
        r.validate(page).unwrap_err()
    };
    assert!(
        bad(|r| r.block_size = 5000).contains("page size"),
        "{}",
        bad(|r| r.block_size = 5000)
    );
    assert!(bad(|r| r.frame_size = 2050).contains("multiple of 16"));
    assert!(bad(|r| r.frame_size = 32).contains("at least"));
    assert!(bad(|r| {
        r.block_size = 4096;
        r.frame_size = 8192
    })
    .contains("larger than block_size"));
    assert!(bad(|r| r.block_count = 0).contains("block_count"));
    assert!(bad(|r| r.block_count = usize::MAX / 2).contains("32-bit"));
}

#[test]
fn fanout_modes_and_option_value() {
    for m in KernelFanout::ALL {
        assert_eq!(KernelFanout::parse(m.name()), Some(m));
        assert_eq!(m.name().parse::<KernelFanout>(), Ok(m));
        assert_eq!(m.keeps_flow_affinity(), m == KernelFanout::Hash);
    }
    assert_eq!(KernelFanout::parse("HASH"), Some(KernelFanout::Hash));
    assert!("spray"
        .parse::<KernelFanout>()
        .unwrap_err()
        .contains("hash, lb"));
    let j = FanoutJoin {
        group: 0x1234,
        mode: KernelFanout::Lb,
        defrag: true,
        rollover: true,
    };
    assert_eq!(j.option_value(), 0x1234 | ((1 | 0x8000 | 0x1000) << 16));
}

#[test]
fn poll_timeouts_round_up() {
    assert_eq!(poll_timeout_ms(None), Some(-1));
    assert_eq!(poll_timeout_ms(Some(Duration::ZERO)), None);
    assert_eq!(poll_timeout_ms(Some(Duration::from_micros(1))), Some(1));
    assert_eq!(poll_timeout_ms(Some(Duration::from_millis(250))), Some(250));
    assert_eq!(
        poll_timeout_ms(Some(Duration::from_secs(u64::MAX))),
        Some(c_int::MAX)
    );
}

#[test]
fn errors_name_interface_and_cause() {
    let e = LiveError::os("eth9", "bind", io::Error::from_raw_os_error(libc::EPERM));
    assert_eq!(e.kind(), LiveErrorKind::PermissionDenied);
    let s = e.to_string();
    assert!(s.starts_with("eth9: bind failed: "), "{s}");
    assert!(s.contains("CAP_NET_RAW"), "{s}");
    let e = LiveError::os("eth9", "bind", io::Error::from_raw_os_error(libc::ENODEV));
    assert_eq!(e.kind(), LiveErrorKind::NoSuchInterface);
    assert_eq!(e.raw_os_error(), Some(libc::ENODEV));
    let e = interface_index("a-name-much-too-long-for-linux").unwrap_err();
    assert_eq!(e.kind(), LiveErrorKind::NoSuchInterface);
    assert_eq!(
        interface_index("a\0b").unwrap_err().kind(),
        LiveErrorKind::NoSuchInterface
    );
}
