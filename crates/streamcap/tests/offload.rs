//! Flow-affine offloading is exact: workers fed by a router that sends each
//! packet to the owner of its flow-hash bucket, with buckets moved between
//! them every K packets (connections handed over with all their state),
//! report exactly the connections, counters and stream contents of one
//! worker that saw everything, and their statistics add up to its own.

mod support;

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::PathBuf;
use streamcap::deliver::{Chunk, EndReason, FlowEnd, Handler, Stream};
use streamcap::dispatch::offload::{BucketSet, Buckets, IndirectionTable, Route};
use streamcap::flow::Direction;
use streamcap::stats::DefragMerge;
use streamcap::{Config, FileSource, GlobalStats, PacketSource, Worker};

const MS: u64 = 1_000_000;

/// One record per connection (end or active-timeout update): everything
/// but the connection id, which is kept apart.
#[derive(Default)]
struct Records {
    lines: Vec<String>,
    ids: Vec<u64>,
}

impl Records {
    fn record(&mut self, f: &mut FlowEnd<'_, Sha256>) {
        let mut line = format!(
            "{} {:?} {:?} {:?} {:?} p{} {} {} {:?}",
            if f.is_update() { "update" } else { "end" },
            f.orig_endpoint(),
            f.resp_endpoint(),
            f.key().vlan(),
            f.key().tunnel().map(|t| t.to_string()),
            f.proto(),
            f.end_reason().name(),
            f.history(),
            (f.first_ts(), f.last_ts()),
        );
        for d in [Direction::Orig, Direction::Resp] {
            let s = f.stream(d).clone();
            let sha = if f.is_update() {
                hex::encode(f.state(d).clone().finalize())
            } else {
                hex::encode(std::mem::take(f.state(d)).finalize())
            };
            line.push_str(&format!(
                " | {:?} {:?} {:?} chunks {} {sha}",
                s.counters, s.errors, s.status, s.chunks
            ));
        }
        if !f.is_update() {
            self.ids.push(f.stream(Direction::Orig).conn_id);
        }
        self.lines.push(line);
    }
}

impl Handler for Records {
    type State = Sha256;
    fn on_data(&mut self, s: &mut Stream<'_, Sha256>, c: &Chunk<'_>) {
        s.state().update(c.new_data());
    }
    fn on_flow_end(&mut self, f: &mut FlowEnd<'_, Sha256>) {
        self.record(f);
    }
    fn on_flow_update(&mut self, f: &mut FlowEnd<'_, Sha256>) {
        self.record(f);
    }
}

/// A tiny deterministic generator for the moves.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// What a run produced: sorted records, connection ids, statistics.
struct Outcome {
    records: Vec<String>,
    ids: Vec<u64>,
    stats: GlobalStats,
}

/// How the moves went.
#[derive(Default, Debug)]
struct Moves {
    handovers: u64,
    flows: u64,
    closed: u64,
    /// Hand-overs that carried buffered stream bytes.
    with_bytes: u64,
}

fn source(input: &Input) -> FileSource {
    match input {
        Input::Bytes(name, b) => FileSource::from_bytes(*name, b.clone()).expect("capture"),
        Input::File(p) => FileSource::open(p).expect("capture"),
    }
}

enum Input {
    Bytes(&'static str, Vec<u8>),
    File(PathBuf),
}

/// Feeds every packet of `input` to `each`, in order.
fn for_each_packet(input: &Input, mut each: impl FnMut(&streamcap::RawPacket<'_>)) {
    let mut src = source(input);
    while let Some(Ok(p)) = src.next_packet() {
        each(&p);
    }
}

/// One worker over the whole input.
fn single(input: &Input, cfg: &Config) -> Outcome {
    let mut w = Worker::new(cfg.clone(), Records::default());
    for_each_packet(input, |p| w.process(p));
    let stats = w.finish();
    let mut r = w.into_handler();
    r.lines.sort();
    Outcome {
        records: r.lines,
        ids: r.ids,
        stats,
    }
}

/// `n` workers behind a bucket router; every `k` packets a random share of
/// one worker's buckets moves to another.
fn moving(input: &Input, cfg: &Config, n: usize, k: u64, seed: u64) -> (Outcome, Moves) {
    let buckets = Buckets::new(cfg);
    let mut table = IndirectionTable::spread(n);
    let mut ws: Vec<Worker<Records>> = (0..n)
        .map(|i| {
            Worker::new(cfg.clone(), Records::default())
                .with_buckets(buckets.clone(), table.buckets_of(i))
                .with_conn_ids(i as u64, n as u64)
        })
        .collect();
    let mut rng = Rng(seed | 1);
    let mut moves = Moves::default();
    let mut count = 0u64;
    for_each_packet(input, |p| {
        match buckets.route(p) {
            Route::Bucket(b) => {
                let owner = table.owner(b);
                for (i, w) in ws.iter_mut().enumerate() {
                    if i == owner {
                        w.process(p);
                    } else {
                        w.advance_clock(p.ts);
                    }
                }
            }
            Route::Every => ws.iter_mut().for_each(|w| w.process(p)),
        }
        count += 1;
        if count % k == 0 {
            let from = rng.below(n as u64) as usize;
            let to = (from + 1 + rng.below(n as u64 - 1) as usize) % n;
            // A random subset of its buckets: from a few to all of them.
            let share = 1 + rng.below(4);
            let set: BucketSet = table
                .buckets_of(from)
                .iter()
                .filter(|_| rng.below(4) < share)
                .collect();
            table.assign(&set, to);
            let h = ws[from].export_buckets(&set);
            moves.handovers += 1;
            moves.flows += h.flows() as u64;
            moves.closed += h.closed() as u64;
            moves.with_bytes += u64::from(h.bytes() > 0);
            ws[to].import_handover(h);
        }
    });
    let mut stats = GlobalStats::default();
    let mut records = Vec::new();
    let mut ids = Vec::new();
    for (i, mut w) in ws.into_iter().enumerate() {
        let s = w.finish();
        assert_eq!(
            w.buckets().map(BucketSet::len),
            Some(table.buckets_of(i).len()),
            "worker {i} owns what the table says"
        );
        stats.merge(&s, DefragMerge::Replicated);
        let r = w.into_handler();
        records.extend(r.lines);
        ids.extend(r.ids);
    }
    records.sort();
    (
        Outcome {
            records,
            ids,
            stats,
        },
        moves,
    )
}

fn same_stats(a: &GlobalStats, b: &GlobalStats, ctx: &str) {
    support::same_traffic_stats(a, b, ctx);
    assert_eq!(a.chunks, b.chunks, "{ctx}: chunks");
    assert_eq!(a.defrag, b.defrag, "{ctx}: defragmentation");
    assert_eq!(a.invalid_rsts, b.invalid_rsts, "{ctx}: invalid RSTs");
    assert_eq!(a.late_packets, b.late_packets, "{ctx}: late packets");
    assert_eq!(a.overload, b.overload, "{ctx}: overload levels");
    assert_eq!(a.memory_refusals, b.memory_refusals, "{ctx}: refusals");
}

/// Checks `input` under `cfg` for each worker count and move period;
/// returns the reference statistics and the moves summed over the runs.
fn check(input: &Input, name: &str, cfg: &Config, periods: &[u64]) -> (GlobalStats, Moves) {
    let want = single(input, cfg);
    let mut total = Moves::default();
    for n in [2usize, 3, 4] {
        for &k in periods {
            let ctx = format!("{name}: {n} workers, moves every {k} packets");
            let (got, moves) = moving(input, cfg, n, k, 0x5eed ^ (n as u64) << 8 ^ k);
            if got.records != want.records {
                let miss: Vec<_> = want
                    .records
                    .iter()
                    .filter(|r| !got.records.contains(r))
                    .take(3)
                    .collect();
                let extra: Vec<_> = got
                    .records
                    .iter()
                    .filter(|r| !want.records.contains(r))
                    .take(3)
                    .collect();
                panic!(
                    "{ctx}: records differ ({} vs {}); missing {miss:#?}; unexpected {extra:#?}",
                    got.records.len(),
                    want.records.len()
                );
            }
            same_stats(&got.stats, &want.stats, &ctx);
            let mut ids = got.ids.clone();
            ids.sort_unstable();
            ids.dedup();
            assert_eq!(ids.len(), want.ids.len(), "{ctx}: connection ids unique");
            total.handovers += moves.handovers;
            total.flows += moves.flows;
            total.closed += moves.closed;
            total.with_bytes += moves.with_bytes;
        }
    }
    (want.stats, total)
}

/// The generated campus trace with every impairment (reordering,
/// duplicates, loss, conflicting retransmissions, fragments, IPv6, VLANs),
/// short timeouts so that flows time out after moving, flush and active
/// timeouts (timers that move), packet records, and buffered data.
#[test]
fn generated_traffic_with_moves() {
    let pcap = support::impaired_campus(11, 12_000, 300);
    let input = Input::Bytes("campus.pcap", pcap);
    let (mut first, mut last) = (None, 0);
    for_each_packet(&input, |p| {
        first.get_or_insert(p.ts.0);
        last = p.ts.0;
    });
    eprintln!("campus trace: {} ns", last - first.unwrap_or(0));
    // The trace lasts about 7 ms: timeouts to match.
    let cfg = Config {
        tcp_timeout: 2 * MS,
        udp_timeout: MS / 2,
        other_timeout: MS / 2,
        close_linger: MS / 5,
        flush_timeout: Some(MS / 10),
        active_timeout: Some(MS),
        need_packets: true,
        measure_processing_time: false,
        ..Config::default()
    };
    let (stats, moves) = check(&input, "campus", &cfg, &[7, 61, 500]);
    eprintln!("campus: {moves:?}");
    assert!(stats.defrag.reassembled > 0, "the trace has fragments");
    assert!(stats.ended(EndReason::Timeout) > 0, "flows time out");
    assert!(stats.late_packets > 0 || stats.ended(EndReason::Fin) > 0);
    assert!(moves.with_bytes > 0, "flows moved with buffered data");
    assert!(moves.closed > 0, "closed connections moved");
    assert!(
        moves.flows > 10 * stats.created(streamcap::stats::ProtoClass::Tcp),
        "flows moved many times each: {moves:?}"
    );
    // Default settings too (long timeouts: everything ends at the end).
    let plain = Config {
        measure_processing_time: false,
        ..Config::default()
    };
    check(&input, "campus, defaults", &plain, &[7, 997]);
}

/// Locality buffering in the workers: a hand-over first processes the
/// packets each side has gathered, and the records stay those of one
/// worker without it.
#[test]
fn locality_buffering_with_moves() {
    let pcap = support::impaired_campus(12, 6_000, 200);
    let input = Input::Bytes("campus-locality.pcap", pcap);
    let plain = Config {
        measure_processing_time: false,
        ..Config::default()
    };
    let want = single(&input, &plain);
    let mut cfg = plain.clone();
    cfg.locality.batch = 64;
    for (n, k) in [(2, 7), (3, 100)] {
        let (got, moves) = moving(&input, &cfg, n, k, 77);
        assert!(moves.flows > 0);
        assert!(
            got.records == want.records,
            "{n} workers with locality, moves every {k}: records differ"
        );
        same_stats(&got.stats, &want.stats, "locality");
    }
}

/// Tunnelled traffic: inner connections move with their carrier's bucket.
#[test]
fn generated_tunnels_with_moves() {
    let pcap = streamcap_gen::tunnel::tunnel_capture().expect("capture");
    let input = Input::Bytes("tunnels.pcap", pcap);
    let cfg = Config {
        measure_processing_time: false,
        ..Config::default()
    };
    check(&input, "tunnels", &cfg, &[7, 3]);
}

/// Real captures from the shared corpus (skipped without it).
#[test]
fn corpus_captures_with_moves() {
    let Some(root) = support::corpus_dir() else {
        return;
    };
    let cfg = Config {
        measure_processing_time: false,
        ..Config::default()
    };
    let mut checked = BTreeMap::new();
    for dir in [
        "ipv6-vlan-frag",
        "tcp-edge",
        "malformed",
        "dns-udp",
        "http",
        "app-smtp-ftp-ssh",
        "tls",
    ] {
        for f in support::captures(&root.join(dir)) {
            if FileSource::open(&f).is_err() {
                continue; // not a capture this reader opens
            }
            let name = f.display().to_string();
            let (_, moves) = check(&Input::File(f), &name, &cfg, &[7, 50]);
            checked.insert(name, moves.flows);
        }
    }
    eprintln!(
        "corpus: {} captures, {} flow moves",
        checked.len(),
        checked.values().sum::<u64>()
    );
    assert!(checked.len() >= 20, "only {} captures", checked.len());
    assert!(checked.values().sum::<u64>() > 0, "flows moved");
}

/// The time rule: the importing worker's clock advances to the exporter's
/// (a clock behind never keeps a connection past a deadline of the clock
/// it came from, and a clock ahead ends at once a connection whose
/// deadline it has passed); the memory charge moves with the connection.
#[test]
fn the_time_rule_and_the_memory_charge() {
    use streamcap::{LinkType, RawPacket, Timestamp};
    let cfg = Config {
        udp_timeout: 1_000 * MS,
        ..Config::default()
    };
    let frame = support::udp(
        support::ep("10.0.0.1", 5000),
        support::ep("10.0.0.2", 53),
        &[7u8; 100],
    );
    let at = |ms: u64| Timestamp::from_secs_nanos(1_000, ms * MS);
    let packet = RawPacket {
        ts: at(0),
        link: LinkType::ETHERNET,
        data: &frame,
        orig_len: frame.len() as u32,
        record: 1,
        interface: 0,
    };
    let end = EndReason::Timeout.name();
    for importer_ahead in [false, true] {
        let buckets = Buckets::new(&cfg);
        let mut a = Worker::new(cfg.clone(), Records::default())
            .with_buckets(buckets.clone(), BucketSet::all())
            .with_conn_ids(0, 2);
        let mut b = Worker::new(cfg.clone(), Records::default())
            .with_buckets(buckets, BucketSet::new())
            .with_conn_ids(1, 2);
        a.process(&packet);
        let used = a.memory_used();
        assert!(used >= 100, "the datagram waits in the chunk buffer");
        if importer_ahead {
            b.advance_clock(at(1_500));
        }
        let h = a.export_buckets(&BucketSet::all());
        assert_eq!((h.flows(), h.bytes(), h.time()), (1, used, at(0)));
        assert_eq!((a.memory_used(), a.active_flows()), (0, 0));
        assert_eq!(a.buckets().map(BucketSet::len), Some(0));
        b.import_handover(h);
        assert_eq!(
            b.buckets().map(BucketSet::len),
            Some(BucketSet::all().len())
        );
        if importer_ahead {
            // Its deadline (1 s after its packet) is behind this clock.
            assert_eq!((b.active_flows(), b.memory_used()), (0, 0));
        } else {
            assert_eq!(b.now(), at(0), "the clock moved up to the exporter's");
            assert_eq!((b.active_flows(), b.memory_used()), (1, used));
            b.advance_clock(at(999));
            assert_eq!(b.active_flows(), 1);
            b.advance_clock(at(1_000));
            assert_eq!(b.active_flows(), 0);
        }
        let stats = b.finish();
        let r = b.into_handler();
        assert_eq!(r.lines.len(), 1);
        assert!(r.lines[0].contains(&format!(" {end} ")), "{}", r.lines[0]);
        assert_eq!(r.ids, [0], "the connection keeps its id");
        assert_eq!(stats.ended(EndReason::Timeout), 1);
        assert_eq!(stats.flows_created, [0; 4], "created where it was created");
        let sa = a.finish();
        assert_eq!(sa.flows_created.iter().sum::<u64>(), 1);
    }
}
