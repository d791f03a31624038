//! Criterion micro-benchmarks of streamcap's hot paths: decode, flow lookup,
//! in-order append, out-of-order insert and chunk (and segment) delivery.
//!
//! `cargo bench -p streamcap --bench hot_paths` (about two minutes on two cores).

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use etherparse::PacketBuilder;
use streamcap::decode::{decode_ip, decode_transport};
use streamcap::deliver::Budget;
use streamcap::deliver::{Callbacks, Delivery};
use streamcap::flow::FlowKey;
use streamcap::flow::{FlowTable, ListId};
use streamcap::reassembly::assembler::{Assembler, Incoming};
use streamcap::Worker;
use streamcap::{Config, LinkType, OverlapPolicy, RawPacket, Timestamp};

const MSS: usize = 1400;

/// One Ethernet/IPv4/TCP frame.
fn tcp_frame(client_to_server: bool, seq: u32, ack: u32, flags: &str, payload: &[u8]) -> Vec<u8> {
    let (c, s) = ([10, 0, 0, 1], [10, 0, 0, 2]);
    let (src, dst, sp, dp) = if client_to_server {
        (c, s, 40000, 80)
    } else {
        (s, c, 80, 40000)
    };
    let mut b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv4(src, dst, 64)
        .tcp(sp, dp, seq, 65535);
    if flags.contains('S') {
        b = b.syn();
    }
    if flags.contains('A') {
        b = b.ack(ack);
    }
    if flags.contains('F') {
        b = b.fin();
    }
    let mut out = Vec::with_capacity(b.size(payload.len()));
    b.write(&mut out, payload).expect("frame");
    out
}

/// A complete connection: handshake, `segments` in-order data segments of
/// MSS bytes from the client, FIN from both sides.
fn in_order_connection(segments: usize) -> Vec<Vec<u8>> {
    let payload: Vec<u8> = (0..MSS).map(|i| (i % 251) as u8).collect();
    let (ci, si) = (1000u32, 5000u32);
    let mut f = vec![
        tcp_frame(true, ci, 0, "S", &[]),
        tcp_frame(false, si, ci + 1, "SA", &[]),
        tcp_frame(true, ci + 1, si + 1, "A", &[]),
    ];
    let mut seq = ci + 1;
    for _ in 0..segments {
        f.push(tcp_frame(true, seq, si + 1, "A", &payload));
        seq += MSS as u32;
    }
    f.push(tcp_frame(true, seq, si + 1, "FA", &[]));
    f.push(tcp_frame(false, si + 1, seq + 1, "FA", &[]));
    f.push(tcp_frame(true, seq + 1, si + 2, "A", &[]));
    f
}

fn raw(frames: &[Vec<u8>]) -> Vec<RawPacket<'_>> {
    frames
        .iter()
        .enumerate()
        .map(|(i, d)| RawPacket {
            ts: Timestamp::from_secs_nanos(1_700_000_000, i as u64 * 1000),
            link: LinkType::ETHERNET,
            data: d,
            orig_len: d.len() as u32,
            record: i as u64 + 1,
            interface: 0,
        })
        .collect()
}

fn decode(c: &mut Criterion) {
    let frame = tcp_frame(true, 1, 1, "A", &[0u8; 512]);
    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Elements(1));
    g.bench_function("eth_ipv4_tcp", |b| {
        b.iter(|| {
            let net = decode_ip(LinkType::ETHERNET, black_box(&frame)).expect("ip");
            let t = decode_transport(net.proto, net.payload, net.payload_wire_len).expect("tcp");
            black_box(t);
        })
    });
    g.finish();
}

fn flow_lookup(c: &mut Criterion) {
    const N: u32 = 100_000;
    let key = |i: u32| {
        let a = IpAddr::V4(Ipv4Addr::from(0x0a00_0000 | (i >> 8)));
        let b = IpAddr::V4(Ipv4Addr::from(0xc0a8_0000 | (i & 0xff)));
        FlowKey::new(a, 1024 + (i % 50_000) as u16, b, 443, 6, 0).0
    };
    let mut table: FlowTable<u32> = FlowTable::new();
    for i in 0..N {
        table.insert(key(i), ListId::Tcp, Timestamp::ZERO, i);
    }
    // Hits spread over the table, and misses.
    let hits: Vec<FlowKey> = (0..4096u32)
        .map(|i| key(i.wrapping_mul(2_654_435_761) % N))
        .collect();
    let misses: Vec<FlowKey> = (0..4096u32).map(|i| key(N + i)).collect();
    let mut g = c.benchmark_group("flow_lookup_100k");
    g.throughput(Throughput::Elements(hits.len() as u64));
    g.bench_function("hit", |b| {
        b.iter(|| {
            for k in &hits {
                black_box(table.find(black_box(k)));
            }
        })
    });
    g.bench_function("miss", |b| {
        b.iter(|| {
            for k in &misses {
                black_box(table.find(black_box(k)));
            }
        })
    });
    g.finish();
}

fn run_worker(cfg: &Config, pkts: &[RawPacket<'_>]) -> u64 {
    let mut w = Worker::new(cfg.clone(), Callbacks::<()>::new());
    for p in pkts {
        w.process(p);
    }
    w.finish().totals.captured
}

fn in_order_append(c: &mut Criterion) {
    let frames = in_order_connection(1000);
    let pkts = raw(&frames);
    let cfg = Config {
        cutoff: None,
        ..Config::default()
    };
    let mut g = c.benchmark_group("in_order_append");
    g.throughput(Throughput::Bytes((1000 * MSS) as u64));
    g.bench_function("1000x1400B_chunk16KiB", |b| {
        b.iter(|| black_box(run_worker(&cfg, &pkts)))
    });
    g.finish();
}

fn chunk_delivery(c: &mut Criterion) {
    let frames = in_order_connection(1000);
    let pkts = raw(&frames);
    let mut g = c.benchmark_group("chunk_delivery");
    g.throughput(Throughput::Bytes((1000 * MSS) as u64));
    for chunk in [512usize, 4096] {
        let cfg = Config {
            cutoff: None,
            chunk_size: chunk,
            ..Config::default()
        };
        g.bench_function(format!("chunk_{chunk}B"), |b| {
            b.iter(|| black_box(run_worker(&cfg, &pkts)))
        });
    }
    // Segment delivery: each segment handed over in place, no copy.
    let cfg = Config {
        cutoff: None,
        delivery: Delivery::Segments,
        ..Config::default()
    };
    g.bench_function("segments", |b| {
        b.iter(|| black_box(run_worker(&cfg, &pkts)))
    });
    g.finish();
}

fn out_of_order_insert(c: &mut Criterion) {
    const SEGS: u64 = 256;
    let payload: Vec<u8> = (0..MSS).map(|i| (i % 251) as u8).collect();
    let mut g = c.benchmark_group("out_of_order_insert");
    g.throughput(Throughput::Elements(SEGS));
    g.bench_function("256_reversed_segments", |b| {
        b.iter_batched(
            || (Assembler::new(), Budget::new(1 << 30)),
            |(mut a, mut budget)| {
                for i in (0..SEGS).rev() {
                    let start = 1 + i * MSS as u64;
                    black_box(a.insert(
                        start,
                        start + MSS as u64,
                        Incoming::Data(&payload),
                        OverlapPolicy::default(),
                        0,
                        &mut budget,
                    ));
                }
                a.clear(&mut budget);
                a
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500))
        .sample_size(20)
}

criterion_group! {
    name = hot_paths;
    config = config();
    targets = decode, flow_lookup, in_order_append, out_of_order_insert, chunk_delivery
}
criterion_main!(hot_paths);
