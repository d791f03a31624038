//! The AF_XDP source with its chunk pool, on a veth pair inside a network
//! namespace each test creates: frames arrive byte for byte, chunks the
//! application keeps stay out of the pool and come back whole, drops when
//! the pool is exhausted are counted as such, and the XDP program drops
//! listed flows before it redirects the rest to the socket.
//!
//! Needs the `xdp` feature (clang, libbpf-dev), libxdp and root; skips
//! with a message otherwise (`scripts/test-xdp.sh` runs it).
#![cfg(all(target_os = "linux", feature = "xdp"))]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};
use streamcap::source::af_xdp::{AfXdp, AfXdpConfig, BindMode, Chunk, PoolConfig, XskMode};
use streamcap::source::Injector;
use streamcap::subzero::xdp::{AttachMode, XdpFlowDrop};
use streamcap::subzero::{DropKey, FlowDropMap};
use support::netns::{setup, RX, TX};

/// A UDP frame of `len` bytes from port `sport`, numbered `n` in its payload.
fn frame(sport: u16, n: u32, len: usize) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
    let udp_len = len - 14 - 20;
    let ip_len = (20 + udp_len) as u16;
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&ip_len.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&9u16.to_be_bytes());
    f.extend_from_slice(&(udp_len as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(&n.to_be_bytes());
    while f.len() < len {
        f.push((f.len() as u8).wrapping_mul(7) ^ n as u8);
    }
    f
}

/// Sends `frames` in bursts small enough for the veth's own queue (256
/// frames), waiting between them for the receiver's side to take them.
fn send(tx: &mut Injector, frames: &[Vec<u8>]) {
    for burst in frames.chunks(64) {
        for f in burst {
            tx.send(f).expect("send");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The program on `RX` and a socket on its queue 0 with `pool`; `None`
/// (after saying why) when the machine cannot.
fn open(pool: PoolConfig) -> Option<(Arc<XdpFlowDrop>, AfXdp)> {
    let prog = match XdpFlowDrop::attach(RX, 1024, AttachMode::Auto, None) {
        Ok(p) => Arc::new(p),
        Err(e) => {
            support::skip(format!("cannot attach the XDP program: {e}"));
            return None;
        }
    };
    let cfg = AfXdpConfig {
        pool,
        bind: BindMode::Auto,
        ..AfXdpConfig::new(RX)
    };
    match AfXdp::open(&cfg, prog.clone()) {
        Ok(s) => Some((prog, s)),
        Err(e) => {
            support::skip(format!("cannot open an AF_XDP socket: {e}"));
            None
        }
    }
}

/// Frames received until `want` arrived or 5 s passed.
fn collect(sock: &mut AfXdp, want: usize) -> Vec<Vec<u8>> {
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    while seen.len() < want && Instant::now() < deadline {
        sock.next_block(Duration::from_millis(20), &mut |p| {
            assert_eq!(p.data.len() as u32, p.orig_len);
            seen.push(p.data.to_vec());
        })
        .expect("next_block");
    }
    seen
}

#[test]
fn frames_arrive_byte_identical_through_the_pool() {
    let Some(ns) = setup("xsk-identical") else {
        return;
    };
    ns.run(|| {
        let pool = PoolConfig {
            chunks: 8,
            frames_per_chunk: 32,
            frame_size: 2048,
        };
        let Some((_prog, mut sock)) = open(pool) else {
            return;
        };
        // A veth has no zero-copy mode.
        assert_eq!(sock.mode(), XskMode::Copy);
        let mut tx = Injector::open(TX).expect("injector");
        // More frames than the pool has, sent while the socket reads:
        // chunks must be recycled.
        let frames: Vec<Vec<u8>> = (0..2000u32)
            .map(|n| frame(1000, n, [60, 64, 200, 1000, 1514, 1792][n as usize % 6]))
            .collect();
        let seen = std::thread::scope(|s| {
            s.spawn(|| send(&mut tx, &frames));
            collect(&mut sock, frames.len())
        });
        assert_eq!(
            seen.len(),
            frames.len(),
            "frames received: {:?} {:?}",
            sock.xsk_stats(),
            sock.census()
        );
        for (i, (s, f)) in seen.iter().zip(&frames).enumerate() {
            assert!(
                s == f,
                "frame {i} differs ({} vs {} bytes)",
                s.len(),
                f.len()
            );
        }
        let stats = sock.xsk_stats();
        assert_eq!(stats.received, 2000);
        assert_eq!(stats.drops(), 0, "{stats:?}");
        assert!(stats.pool.recycled >= 2000 / 32 - 8, "{stats:?}");
        let census = sock.census();
        assert!(census.balanced(), "{census:?}");
        assert_eq!(census.held, 0);
        assert_eq!(census.in_rx, 0);
    });
}

#[test]
fn kept_chunks_stay_out_of_the_pool_and_come_back_whole() {
    let Some(ns) = setup("xsk-keep") else {
        return;
    };
    ns.run(|| {
        // 64 frames in all.
        let pool = PoolConfig {
            chunks: 4,
            frames_per_chunk: 16,
            frame_size: 2048,
        };
        let Some((_prog, mut sock)) = open(pool) else {
            return;
        };
        let mut tx = Injector::open(TX).expect("injector");
        let batch = |first: u32| -> Vec<Vec<u8>> {
            (first..first + 40).map(|n| frame(2000, n, 100)).collect()
        };
        // 40 frames, all kept by the application.
        send(&mut tx, &batch(0));
        let mut kept: Vec<Chunk> = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(5);
        while kept.iter().map(Chunk::len).sum::<usize>() < 40 && Instant::now() < deadline {
            if let Some(c) = sock
                .next_chunk(Duration::from_millis(20))
                .expect("next_chunk")
            {
                assert!(c.len() <= 16);
                kept.push(c);
            }
        }
        assert_eq!(kept.iter().map(Chunk::len).sum::<usize>(), 40);
        let census = sock.census();
        assert_eq!(census.held, 40, "{census:?}");
        assert!(census.balanced(), "{census:?}");
        // 40 more: 24 frames are left, so 16 packets find none.
        send(&mut tx, &batch(40));
        let seen = collect(&mut sock, 24);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(collect(&mut sock, 1).len(), 0);
        assert_eq!(seen.len(), 24);
        // The packets are the first 24 of the batch, unharmed by the
        // frames the application still reads.
        for (i, s) in seen.iter().enumerate() {
            assert_eq!(*s, frame(2000, 40 + i as u32, 100));
        }
        let stats = sock.xsk_stats();
        assert_eq!(stats.drops(), 16, "{stats:?}");
        assert_eq!(stats.pool_exhausted, 16, "{stats:?}");
        // The kept packets are still intact; then they go back from
        // another thread.
        let mut n = 0u32;
        for c in &kept {
            for p in c.packets() {
                assert_eq!(p.data, frame(2000, n, 100).as_slice());
                n += 1;
            }
        }
        std::thread::spawn(move || drop(kept))
            .join()
            .expect("thread");
        let census = sock.census();
        assert_eq!(census.held, 0);
        assert!(census.balanced(), "{census:?}");
        // Every frame is usable again.
        send(&mut tx, &batch(80));
        assert_eq!(collect(&mut sock, 40).len(), 40);
        let stats = sock.xsk_stats();
        assert_eq!(stats.drops(), 16, "{stats:?}");
        assert!(sock.census().balanced());
    });
}

#[test]
fn listed_flows_are_dropped_before_the_rest_is_redirected() {
    let Some(ns) = setup("xsk-drop") else {
        return;
    };
    ns.run(|| {
        let Some((prog, mut sock)) = open(PoolConfig {
            chunks: 4,
            frames_per_chunk: 64,
            frame_size: 2048,
        }) else {
            return;
        };
        let mut src = [0u8; 16];
        src[..4].copy_from_slice(&[10, 0, 0, 1]);
        let mut dst = [0u8; 16];
        dst[..4].copy_from_slice(&[10, 0, 0, 2]);
        let key = DropKey {
            src,
            dst,
            vlan: 0,
            sport: 3000,
            dport: 9,
            proto: 17,
            v6: 0,
            pad: [0; 2],
        };
        prog.insert(&key, None).expect("list the flow");
        let mut tx = Injector::open(TX).expect("injector");
        let frames: Vec<Vec<u8>> = (0..200u32)
            .map(|n| frame(if n % 2 == 0 { 3000 } else { 3001 }, n, 120))
            .collect();
        send(&mut tx, &frames);
        let seen = collect(&mut sock, 100);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            collect(&mut sock, 1).len(),
            0,
            "a listed packet came through"
        );
        let want: Vec<&Vec<u8>> = frames.iter().skip(1).step_by(2).collect();
        assert_eq!(seen.len(), 100);
        for (s, w) in seen.iter().zip(want) {
            assert_eq!(s, w);
        }
        let counts = prog.take(&key).expect("the entry");
        assert_eq!(counts.pkts, 100);
        assert_eq!(sock.xsk_stats().drops(), 0);
    });
}

/// The packets a verdict passes leave on a second interface from the
/// frames they were received in (a socket sharing the UMEM), byte for
/// byte and in order; the others are counted; every frame sent comes
/// back to the pool.
#[test]
fn forwarding_sends_what_the_verdict_passes_from_the_same_frames() {
    use streamcap::source::{AfPacket, LiveConfig};
    use support::netns::run_cmd;
    let Some(ns) = setup("xsk-forward") else {
        return;
    };
    let n = ns.name.as_str();
    for args in [
        &[
            "ip", "-n", n, "link", "add", "scc", "type", "veth", "peer", "name", "scd",
        ][..],
        &["ip", "-n", n, "link", "set", "scc", "up"],
        &["ip", "-n", n, "link", "set", "scd", "up"],
    ] {
        if let Err(e) = run_cmd(args) {
            support::skip(e);
            return;
        }
    }
    ns.run(|| {
        let Some((_prog, mut sock)) = open(PoolConfig {
            chunks: 8,
            frames_per_chunk: 32,
            frame_size: 2048,
        }) else {
            return;
        };
        if let Err(e) = sock.open_tx("scc", 0) {
            support::skip(format!("cannot open a send-only AF_XDP socket: {e}"));
            return;
        }
        let mut out = AfPacket::open(&LiveConfig::new("scd")).expect("capture on scd");
        let mut tx = Injector::open(TX).expect("injector");
        let frames: Vec<Vec<u8>> = (0..1000u32)
            .map(|i| {
                frame(
                    if i % 3 == 0 { 5001 } else { 5000 },
                    i,
                    60 + (i as usize * 7) % 1400,
                )
            })
            .collect();
        let want: Vec<&Vec<u8>> = frames
            .iter()
            .filter(|f| f[34..36] == 5000u16.to_be_bytes())
            .collect();
        let mut got = Vec::new();
        std::thread::scope(|s| {
            s.spawn(|| send(&mut tx, &frames));
            let deadline = Instant::now() + Duration::from_secs(5);
            let mut seen = 0;
            while seen < frames.len() && Instant::now() < deadline {
                seen += sock
                    .forward_block(Duration::from_millis(20), &mut |p| {
                        p.data[34..36] == 5000u16.to_be_bytes()
                    })
                    .expect("forward");
                out.next_block(Duration::ZERO, &mut |p| got.push(p.data.to_vec()))
                    .expect("capture");
            }
        });
        assert_eq!(
            sock.flush_tx(Duration::from_secs(2)),
            0,
            "frames still in flight"
        );
        let deadline = Instant::now() + Duration::from_secs(2);
        while got.len() < want.len() && Instant::now() < deadline {
            out.next_block(Duration::from_millis(20), &mut |p| {
                got.push(p.data.to_vec())
            })
            .expect("capture");
        }
        assert_eq!(got.len(), want.len(), "{:?}", sock.forward_stats());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(g == *w, "frame {i} differs");
        }
        let f = sock.forward_stats();
        assert_eq!(f.forwarded, want.len() as u64);
        assert_eq!(f.filtered, (frames.len() - want.len()) as u64);
        assert_eq!(f.completed, f.forwarded);
        assert_eq!(f.tx_ring_full, 0);
        let census = sock.census();
        assert!(census.balanced() && census.in_tx == 0, "{census:?}");
    });
}
