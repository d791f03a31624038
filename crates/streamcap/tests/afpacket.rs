//! Live capture and injection on veth pairs inside network namespaces that
//! each test creates and deletes.
//!
//! Needs root (or CAP_NET_ADMIN + CAP_NET_RAW + CAP_SYS_ADMIN) and `ip`;
//! without them every test prints `skipping: <reason>` and passes. All
//! traffic stays inside the test's own namespace: both ends of the veth pair
//! live there, IPv6 is disabled before the links come up and no address is
//! configured, so the kernel itself sends nothing on them.
#![cfg(target_os = "linux")]

mod support;

use support::netns::{is_root, run_cmd, setup, Netns, RX, TX};

use std::collections::{HashMap, HashSet};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use streamcap::filter::libpcap::Libpcap;
use streamcap::source::{
    replay, AfPacket, FanoutJoin, Injector, KernelFanout, LiveConfig, LiveErrorKind, RingConfig,
};
use streamcap::{FileSource, LinkType};

// ---------------------------------------------------------------------------
// Frames
// ---------------------------------------------------------------------------

const CLIENT_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 1];
const SERVER_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 2];

/// Ethernet (with optional VLAN tags, outermost first) + IPv4 + `l4`.
fn eth_ipv4(src: [u8; 4], dst: [u8; 4], proto: u8, l4: &[u8], tags: &[(u16, u16)]) -> Vec<u8> {
    let (smac, dmac) = if src < dst {
        (CLIENT_MAC, SERVER_MAC)
    } else {
        (SERVER_MAC, CLIENT_MAC)
    };
    let mut f = Vec::with_capacity(64 + l4.len());
    f.extend_from_slice(&dmac);
    f.extend_from_slice(&smac);
    for (tpid, tci) in tags {
        f.extend_from_slice(&tpid.to_be_bytes());
        f.extend_from_slice(&tci.to_be_bytes());
    }
    f.extend_from_slice(&0x0800u16.to_be_bytes());
    let total = (20 + l4.len()) as u16;
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&total.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, 64, proto, 0, 0]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    f.extend_from_slice(l4);
    while f.len() < 60 {
        f.push(0);
    }
    f
}

fn tcp(sport: u16, dport: u16, seq: u32, payload: &[u8]) -> Vec<u8> {
    let mut h = Vec::with_capacity(20 + payload.len());
    h.extend_from_slice(&sport.to_be_bytes());
    h.extend_from_slice(&dport.to_be_bytes());
    h.extend_from_slice(&seq.to_be_bytes());
    h.extend_from_slice(&[0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
    h.extend_from_slice(payload);
    h
}

fn udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut h = Vec::with_capacity(8 + payload.len());
    h.extend_from_slice(&sport.to_be_bytes());
    h.extend_from_slice(&dport.to_be_bytes());
    h.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    h.extend_from_slice(&[0, 0]);
    h.extend_from_slice(payload);
    h
}

fn payload(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

const A: [u8; 4] = [10, 0, 0, 1];
const B: [u8; 4] = [10, 0, 0, 2];

/// A small test ring: 8 blocks of 256 KiB, 5 ms block timeout.
fn small_ring() -> RingConfig {
    RingConfig {
        block_size: 256 << 10,
        block_count: 8,
        frame_size: 2048,
        block_timeout_ms: 5,
    }
}

fn capture_config(snaplen: u32) -> LiveConfig {
    LiveConfig {
        ring: small_ring(),
        snaplen,
        ..LiveConfig::new(RX)
    }
}

/// One captured frame: (bytes, orig_len, record).
type Seen = (Vec<u8>, u32, u64);

/// Reads from `cap` until `want` frames arrived or `within` passed.
fn collect(cap: &mut AfPacket, want: usize, within: Duration) -> Vec<Seen> {
    let mut seen = Vec::new();
    let deadline = Instant::now() + within;
    while seen.len() < want && Instant::now() < deadline {
        cap.next_block(Duration::from_millis(50), &mut |p| {
            assert_eq!(p.link, LinkType::ETHERNET);
            assert_eq!(p.interface, 0);
            seen.push((p.data.to_vec(), p.orig_len, p.record));
        })
        .expect("next_block");
    }
    seen
}

/// Compares captured frames with the expected ones, briefly on failure.
fn assert_same_frames(seen: &[Seen], want: &[Vec<u8>]) {
    for (i, (s, w)) in seen.iter().zip(want).enumerate() {
        assert!(
            s.0 == *w,
            "frame {i} differs: {} bytes seen, {} expected",
            s.0.len(),
            w.len()
        );
    }
    assert_eq!(seen.len(), want.len(), "number of frames");
}

/// Makes sure nothing more arrives for a few block timeouts.
fn assert_quiet(cap: &mut AfPacket) {
    let extra = collect(cap, 1, Duration::from_millis(100));
    assert!(extra.is_empty(), "unexpected frames: {extra:?}");
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[test]
fn frames_arrive_byte_identical_with_vlan_tags_restored() {
    let Some(ns) = setup("identical") else { return };
    let mut frames = Vec::new();
    for (i, size) in [0usize, 10, 100, 1000, 1458, 4000, 8900]
        .into_iter()
        .enumerate()
    {
        frames.push(eth_ipv4(
            A,
            B,
            17,
            &udp(1000 + i as u16, 2000, &payload(size, i as u8)),
            &[],
        ));
        frames.push(eth_ipv4(
            B,
            A,
            6,
            &tcp(80, 40000, i as u32, &payload(size, 7)),
            &[],
        ));
    }
    frames.push(eth_ipv4(
        A,
        B,
        6,
        &tcp(1, 2, 3, b"vlan 100"),
        &[(0x8100, 100)],
    ));
    frames.push(eth_ipv4(
        A,
        B,
        6,
        &tcp(1, 2, 3, b"vlan prio"),
        &[(0x8100, (5 << 13) | 4000)],
    ));
    frames.push(eth_ipv4(
        A,
        B,
        17,
        &udp(5, 6, &payload(3000, 1)),
        &[(0x88a8, 7), (0x8100, 8)],
    ));
    frames.push(eth_ipv4(B, A, 17, &udp(5, 6, b"q"), &[(0x8100, 4095)]));

    let (mut cap, mut inj) = ns.run(|| {
        let cfg = LiveConfig {
            promiscuous: true,
            ..capture_config(262_144)
        };
        let cap = AfPacket::open(&cfg).expect("open capture");
        assert_eq!(cap.interface(), RX);
        assert_eq!(cap.link_type(), LinkType::ETHERNET);
        (cap, Injector::open(TX).expect("open injector"))
    });
    assert_eq!(inj.mtu(), 9000);
    // The capture is read on another thread while this one sends (AfPacket is Send).
    let want = frames.len();
    let reader = std::thread::spawn(move || {
        let seen = collect(&mut cap, want, Duration::from_secs(10));
        assert_quiet(&mut cap);
        (seen, cap.stats().expect("stats"), cap.corrupt_blocks())
    });
    for f in &frames {
        inj.send(f).expect("send");
    }
    let (seen, stats, corrupt) = reader.join().expect("reader thread");
    assert_eq!(seen.len(), frames.len());
    for (i, (f, (data, orig_len, record))) in frames.iter().zip(&seen).enumerate() {
        assert_eq!(data, f, "frame {i} differs");
        assert_eq!(*orig_len as usize, f.len(), "orig_len of frame {i}");
        assert_eq!(*record, i as u64 + 1);
    }
    assert_eq!(stats.packets, frames.len() as u64, "{stats:?}");
    assert_eq!(stats.drops, 0, "{stats:?}");
    assert_eq!(corrupt, 0);
}

#[test]
fn kernel_filter_drops_before_the_ring() {
    let lib = match Libpcap::load() {
        Ok(l) => l,
        Err(e) => {
            support::skip(format!("libpcap not available ({e})"));
            return;
        }
    };
    let Some(ns) = setup("filter") else { return };
    let program = lib.compile("udp port 53", 1, 262_144).expect("compile");
    let mut frames = Vec::new();
    let mut matching = Vec::new();
    for i in 0..40u16 {
        let (f, hit) = match i % 5 {
            0 => (eth_ipv4(A, B, 17, &udp(30000 + i, 53, b"query"), &[]), true),
            1 => (
                eth_ipv4(B, A, 17, &udp(53, 30000 + i, b"answer"), &[]),
                true,
            ),
            2 => (
                eth_ipv4(A, B, 17, &udp(30000 + i, 54, b"other"), &[]),
                false,
            ),
            3 => (
                eth_ipv4(A, B, 6, &tcp(30000 + i, 53, 1, b"dns over tcp"), &[]),
                false,
            ),
            _ => (eth_ipv4(A, B, 17, &udp(5353, 5354, b"mdns"), &[]), false),
        };
        if hit {
            matching.push(f.clone());
        }
        frames.push(f);
    }
    let (mut cap, mut inj) = ns.run(|| {
        let cfg = LiveConfig {
            filter: Some(program),
            ..capture_config(262_144)
        };
        (
            AfPacket::open(&cfg).expect("open"),
            Injector::open(TX).expect("injector"),
        )
    });
    for f in &frames {
        inj.send(f).expect("send");
    }
    let seen = collect(&mut cap, matching.len(), Duration::from_secs(10));
    assert_quiet(&mut cap);
    assert_same_frames(&seen, &matching);
    let stats = cap.stats().expect("stats");
    assert_eq!(stats.packets, matching.len() as u64, "{stats:?}");
    assert_eq!(stats.drops, 0);
    // Counters accumulate: a second read adds nothing new.
    assert_eq!(cap.stats().expect("stats"), stats);
}

/// The connection number a test frame belongs to (from the client port),
/// and the frame's unique id (its sequence number).
fn conn_and_id(frame: &[u8]) -> (u16, u32) {
    let l4 = &frame[34..];
    let (sport, dport) = (
        u16::from_be_bytes([l4[0], l4[1]]),
        u16::from_be_bytes([l4[2], l4[3]]),
    );
    let client_port = if sport == 80 { dport } else { sport };
    (
        client_port,
        u32::from_be_bytes([l4[4], l4[5], l4[6], l4[7]]),
    )
}

/// Opens two capture sockets in one fan-out group.
fn fanout_pair(ns: &Netns, join: FanoutJoin) -> (AfPacket, AfPacket, Injector) {
    ns.run(|| {
        let cfg = LiveConfig {
            fanout: Some(join),
            ..capture_config(262_144)
        };
        let a = AfPacket::open(&cfg).expect("open first member");
        let b = AfPacket::open(&cfg).expect("open second member");
        (a, b, Injector::open(TX).expect("injector"))
    })
}

/// Reads both sockets until `want` frames arrived in total.
fn collect_both(a: &mut AfPacket, b: &mut AfPacket, want: usize) -> [Vec<Vec<u8>>; 2] {
    let mut seen: [Vec<Vec<u8>>; 2] = [Vec::new(), Vec::new()];
    let deadline = Instant::now() + Duration::from_secs(10);
    while seen[0].len() + seen[1].len() < want && Instant::now() < deadline {
        for (i, cap) in [&mut *a, &mut *b].into_iter().enumerate() {
            cap.next_block(Duration::from_millis(10), &mut |p| {
                seen[i].push(p.data.to_vec())
            })
            .expect("next_block");
        }
    }
    seen
}

#[test]
fn hash_fanout_keeps_connections_together() {
    let Some(ns) = setup("fanout") else { return };
    let join = FanoutJoin {
        group: (std::process::id() & 0xffff) as u16,
        mode: KernelFanout::Hash,
        defrag: true,
        rollover: false,
    };
    let (mut a, mut b, mut inj) = fanout_pair(&ns, join);
    let mut frames = Vec::new();
    let mut id = 0u32;
    for conn in 0..200u16 {
        let client = [10, 1, (conn / 200) as u8, (conn % 200) as u8 + 1];
        let server = [10, 2, 0, 1];
        let port = 10_000 + conn;
        for step in 0..4 {
            id += 1;
            let f = if step % 2 == 0 {
                eth_ipv4(client, server, 6, &tcp(port, 80, id, b"request"), &[])
            } else {
                eth_ipv4(server, client, 6, &tcp(80, port, id, b"response"), &[])
            };
            frames.push(f);
        }
    }
    for (i, f) in frames.iter().enumerate() {
        inj.send(f).expect("send");
        if i % 200 == 199 {
            // Let the softirq drain the veth backlog (1000 packets by default).
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    let seen = collect_both(&mut a, &mut b, frames.len());
    assert_quiet(&mut a);
    assert_quiet(&mut b);
    let mut owner: HashMap<u16, usize> = HashMap::new();
    let mut ids = HashSet::new();
    for (sock, frames_seen) in seen.iter().enumerate() {
        for f in frames_seen {
            let (conn, id) = conn_and_id(f);
            assert!(ids.insert(id), "frame {id} seen twice");
            let first = *owner.entry(conn).or_insert(sock);
            assert_eq!(first, sock, "connection {conn} split across sockets");
        }
    }
    assert_eq!(ids.len(), frames.len(), "the union must be everything sent");
    assert!(
        !seen[0].is_empty() && !seen[1].is_empty(),
        "hash used one socket only"
    );
    let (sa, sb) = (a.stats().expect("stats"), b.stats().expect("stats"));
    assert_eq!(sa.packets + sb.packets, frames.len() as u64);
    assert_eq!(sa.drops + sb.drops, 0);
    drop((a, b));

    // Round robin in another group: both members get a fair share.
    let join = FanoutJoin {
        group: join.group ^ 1,
        mode: KernelFanout::Lb,
        defrag: false,
        rollover: false,
    };
    let (mut a, mut b, mut inj) = fanout_pair(&ns, join);
    let n = 200;
    for i in 0..n {
        inj.send(&eth_ipv4(
            A,
            B,
            17,
            &udp(1, 2, &(i as u32).to_be_bytes()),
            &[],
        ))
        .expect("send");
    }
    let seen = collect_both(&mut a, &mut b, n);
    let (na, nb) = (seen[0].len(), seen[1].len());
    assert_eq!(na + nb, n);
    assert!(
        na >= n / 4 && nb >= n / 4,
        "uneven round robin: {na} / {nb}"
    );
}

#[test]
fn snaplen_cuts_frames_and_keeps_orig_len() {
    let Some(ns) = setup("snaplen") else { return };
    let frames = vec![
        eth_ipv4(A, B, 17, &udp(1, 2, &payload(1000, 3)), &[]),
        eth_ipv4(A, B, 17, &udp(1, 2, &payload(8000, 4)), &[(0x8100, 42)]),
        eth_ipv4(A, B, 17, &udp(1, 2, &payload(100, 5)), &[]),
    ];
    let (mut cap, mut inj) = ns.run(|| {
        (
            AfPacket::open(&capture_config(64)).expect("open"),
            Injector::open(TX).expect("injector"),
        )
    });
    for f in &frames {
        inj.send(f).expect("send");
    }
    let seen = collect(&mut cap, frames.len(), Duration::from_secs(10));
    assert_eq!(seen.len(), frames.len());
    for (f, (data, orig_len, _)) in frames.iter().zip(&seen) {
        assert_eq!(data.len(), 64);
        assert_eq!(data[..], f[..64]);
        assert_eq!(*orig_len as usize, f.len());
    }
}

#[test]
fn idle_interface_times_out_with_zero() {
    let Some(ns) = setup("timeout") else { return };
    let mut cap = ns.run(|| AfPacket::open(&capture_config(262_144)).expect("open"));
    let n = cap
        .next_block(Duration::from_millis(150), &mut |p| {
            panic!("unexpected frame {p:?}")
        })
        .expect("next_block");
    assert_eq!(n, 0);
    let n = cap
        .next_block(Duration::ZERO, &mut |_| ())
        .expect("next_block");
    assert_eq!(n, 0);
    assert_eq!(cap.stats().expect("stats").packets, 0);
    // The interface going down is reported (ENETDOWN through POLLERR).
    run_cmd(&["ip", "-n", &ns.name, "link", "set", RX, "down"]).expect("link down");
    let err = cap
        .next_block(Duration::from_secs(5), &mut |_| ())
        .expect_err("interface down");
    assert_eq!(err.kind(), LiveErrorKind::InterfaceDown, "{err}");
    assert!(
        err.to_string().starts_with("scb: receiving failed: "),
        "{err}"
    );
}

#[test]
fn replay_sends_ethernet_frames_at_a_rate() {
    let Some(ns) = setup("replay") else { return };
    let frames: Vec<Vec<u8>> = (0..50u16)
        .map(|i| eth_ipv4(A, B, 17, &udp(i, 9, &payload(200, i as u8)), &[]))
        .collect();
    let mut too_long = frames.clone();
    too_long.insert(10, eth_ipv4(A, B, 17, &udp(1, 9, &payload(9100, 0)), &[]));
    let mut source = FileSource::from_bytes("test.pcap", pcap_file(1, &too_long)).expect("pcap");
    let (mut cap, mut inj) = ns.run(|| {
        (
            AfPacket::open(&capture_config(262_144)).expect("open"),
            Injector::open(TX).expect("injector"),
        )
    });
    let err = inj.send(&too_long[10]).expect_err("longer than the MTU");
    assert_eq!(err.kind(), LiveErrorKind::FrameTooLong);
    assert!(err.to_string().contains("9000"), "{err}");
    // Read while the replay runs: at 1000 frames/s each 5 ms block timeout
    // hands over a nearly empty block, and 8 unread blocks fill the ring.
    let want = frames.len();
    let reader = std::thread::spawn(move || {
        let seen = collect(&mut cap, want, Duration::from_secs(10));
        (seen, cap.stats().expect("stats"))
    });
    let stop = AtomicBool::new(false);
    let report = replay(&mut source, &mut inj, Some(1000.0), &stop);
    assert!(report.error.is_none(), "{:?}", report.error);
    assert_eq!(report.sent, 50);
    assert_eq!(report.skipped_too_long, 1);
    assert_eq!(
        report.bytes,
        frames.iter().map(|f| f.len() as u64).sum::<u64>()
    );
    // 50 frames at 1000/s: the last one is due 49 ms after the first.
    assert!(
        report.elapsed >= Duration::from_millis(49),
        "{:?}",
        report.elapsed
    );
    let (seen, stats) = reader.join().expect("reader thread");
    assert_same_frames(&seen, &frames);
    assert_eq!((stats.packets, stats.drops), (50, 0));

    // A raw-IP capture has no Ethernet frames: everything is skipped.
    let mut raw = FileSource::from_bytes("raw.pcap", pcap_file(101, &[frames[0][14..].to_vec()]))
        .expect("pcap");
    let report = replay(&mut raw, &mut inj, None, &stop);
    assert_eq!((report.sent, report.skipped_not_ethernet), (0, 1));
    assert_eq!(report.skip_reasons(), "1 not Ethernet");
}

/// A classic pcap file with the given link type and frames.
fn pcap_file(linktype: u32, frames: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&262_144u32.to_le_bytes());
    out.extend_from_slice(&linktype.to_le_bytes());
    for (i, f) in frames.iter().enumerate() {
        out.extend_from_slice(&1_700_000_000u32.to_le_bytes());
        out.extend_from_slice(&(i as u32).to_le_bytes());
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(f);
    }
    out
}

#[test]
fn missing_interface_and_bad_config_are_reported() {
    // Needs no privileges: the checks come before the socket is created.
    let err = AfPacket::open(&LiveConfig::new("nonexistent0")).expect_err("no such interface");
    assert_eq!(err.kind(), LiveErrorKind::NoSuchInterface, "{err}");
    assert!(err.to_string().starts_with("nonexistent0: "), "{err}");
    let err = Injector::open("nonexistent0").expect_err("no such interface");
    assert_eq!(err.kind(), LiveErrorKind::NoSuchInterface, "{err}");
    let cfg = LiveConfig {
        ring: RingConfig {
            block_size: 1000,
            ..RingConfig::default()
        },
        ..LiveConfig::new("lo")
    };
    let err = AfPacket::open(&cfg).expect_err("bad geometry");
    assert_eq!(err.kind(), LiveErrorKind::InvalidConfig);
    assert!(err.to_string().contains("page size"), "{err}");
    if !is_root() {
        // Without privileges the socket call itself is refused, with a hint.
        let lo = LiveConfig {
            ring: small_ring(),
            ..LiveConfig::new("lo")
        };
        match AfPacket::open(&lo) {
            Err(err) => {
                assert_eq!(err.kind(), LiveErrorKind::PermissionDenied, "{err}");
                assert!(err.to_string().contains("CAP_NET_RAW"), "{err}");
            }
            Ok(_) => eprintln!("note: CAP_NET_RAW without root; permission error not checked"),
        }
    }
    // And inside a namespace, where the socket calls succeed, too.
    let Some(ns) = setup("errors") else { return };
    ns.run(|| {
        let err = AfPacket::open(&LiveConfig::new("nonexistent0")).expect_err("no such interface");
        assert_eq!(err.kind(), LiveErrorKind::NoSuchInterface, "{err}");
        // Mismatched fan-out modes in one group are refused by the kernel.
        let join = |mode| FanoutJoin {
            group: 7,
            mode,
            defrag: false,
            rollover: false,
        };
        let first = LiveConfig {
            fanout: Some(join(KernelFanout::Hash)),
            ..capture_config(262_144)
        };
        let _a = AfPacket::open(&first).expect("first member");
        let second = LiveConfig {
            fanout: Some(join(KernelFanout::Lb)),
            ..capture_config(262_144)
        };
        let err = AfPacket::open(&second).expect_err("mode mismatch");
        assert!(err.to_string().contains("fan-out group 7"), "{err}");
        // Loopback captures as Ethernet.
        let lo = AfPacket::open(&LiveConfig {
            ring: small_ring(),
            ..LiveConfig::new("lo")
        })
        .expect("lo");
        assert_eq!(lo.link_type(), LinkType::ETHERNET);
    });
}

/// A ring larger than the machine's memory is refused before anything is
/// allocated (or even looked up: the interface here does not exist, so no
/// kernel ever tries to allocate it).
#[test]
fn rings_larger_than_physical_memory_are_refused() {
    let Some(phys) = streamcap::source::physical_memory() else {
        support::skip("the kernel does not report the physical memory");
        return;
    };
    let huge = usize::try_from(phys.saturating_mul(2)).unwrap_or(usize::MAX);
    let cfg = LiveConfig {
        ring: RingConfig::with_total_size(huge),
        ..LiveConfig::new("nonexistent0")
    };
    let err = AfPacket::open(&cfg).expect_err("refused");
    assert_eq!(err.kind(), LiveErrorKind::InvalidConfig, "{err}");
    assert!(err.to_string().contains("physical memory"), "{err}");
    // Rings that fit one by one but not all together.
    let half = usize::try_from(phys / 2 + (64 << 20)).unwrap_or(usize::MAX);
    let cfg = LiveConfig {
        ring: RingConfig::with_total_size(half),
        ..LiveConfig::new("nonexistent0")
    };
    let err = streamcap::dispatch::live::open_live(&cfg, 2).expect_err("refused");
    assert_eq!(err.kind(), LiveErrorKind::InvalidConfig, "{err}");
    assert!(err.to_string().contains("2 rings"), "{err}");
}
