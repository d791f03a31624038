//! The engine under adversarial traffic (streamcap-gen's attack profiles)
//! with a small memory budget and tight limits: it must not panic, must stay
//! within its budget, must keep the byte accounting exact for every stream,
//! must count what it refused, evicted or dropped, and must end every flow it
//! created.

use streamcap::decode::defrag::DefragConfig;
use streamcap::deliver::{EndReason, FlowEnd, Handler, StreamCounters};
use streamcap::flow::Direction;
use streamcap::stats::ProtoClass;
use streamcap::{Capture, Config, FileSource, GlobalStats};
use streamcap_gen::attack::{generate_bytes, AttackStats, Profile};

/// Collects every ended flow's counters.
#[derive(Default)]
struct Ends {
    flows: u64,
    streams: Vec<StreamCounters>,
}

impl Handler for Ends {
    type State = ();
    fn on_flow_end(&mut self, f: &mut FlowEnd<'_, ()>) {
        self.flows += 1;
        for d in [Direction::Orig, Direction::Resp] {
            self.streams.push(f.stream(d).counters);
        }
    }
}

const MIB: usize = 1 << 20;

/// The limits every attack test runs with unless it says otherwise.
fn tight() -> Config {
    Config {
        memory_size: MIB,
        max_flows: 1000,
        max_ooo_bytes: 64 << 10,
        max_ooo_segments: 256,
        measure_processing_time: false,
        defrag: DefragConfig {
            max_datagrams: 64,
            max_bytes: 64 << 10,
            ..DefragConfig::default()
        },
        ..Config::default()
    }
}

/// Generates `profile`, runs it and checks what must hold for any input.
fn run(profile: Profile, packets: u64, cfg: Config) -> (GlobalStats, Ends, AttackStats) {
    let (pcap, truth) = generate_bytes(profile, packets, 11);
    assert_eq!(truth.packets, packets, "{profile}: generated packets");
    let max_flows = cfg.max_flows;
    let mut src = FileSource::from_bytes(profile.name(), pcap).expect("generated pcap opens");
    let report = Capture::builder()
        .config(cfg)
        .build()
        .run(&mut src, Ends::default());
    assert!(report.error.is_none(), "{profile}: {:?}", report.error);
    let s = report.stats;
    let ends = report.handler;
    assert_eq!(s.packets, packets, "{profile}: packets processed");
    assert!(
        s.memory_peak <= s.memory_limit,
        "{profile}: stream-data peak {} over the budget {}",
        s.memory_peak,
        s.memory_limit
    );
    assert!(
        s.totals.invariant_holds(),
        "{profile}: totals {:?}",
        s.totals
    );
    for (i, c) in ends.streams.iter().enumerate() {
        assert!(c.invariant_holds(), "{profile}: stream {i} {c:?}");
    }
    let created: u64 = s.flows_created.iter().sum();
    let ended: u64 = s.flows_ended.iter().sum();
    assert_eq!(created, ended, "{profile}: flows created vs ended");
    assert_eq!(ends.flows, ended, "{profile}: on_flow_end calls");
    assert!(
        s.max_flows <= max_flows as u64,
        "{profile}: flow table held {} flows, over max_flows",
        s.max_flows
    );
    (s, ends, truth)
}

#[test]
fn syn_flood_evicts_beyond_max_flows() {
    let (s, _, truth) = run(Profile::SynFlood, 5000, tight());
    assert_eq!(truth.flows, 5000);
    assert_eq!(s.created(ProtoClass::Tcp), 5000, "one flow per SYN");
    assert!(s.max_flows <= 1000, "table held {} flows", s.max_flows);
    assert_eq!(s.ended(EndReason::Evicted), 4000, "all but the last 1000");
    assert_eq!(s.ended(EndReason::Eof), 1000);
    assert_eq!(s.totals.stream_bytes, 0);
}

#[test]
fn hash_collision_flows_are_all_tracked_and_complete() {
    // One batch: 4096 colliding connections, 6 packets each.
    let cfg = Config {
        max_flows: 8192,
        ..tight()
    };
    let (s, ends, truth) = run(Profile::HashCollision, 4096 * 6, cfg);
    assert_eq!(truth.flows, 4096);
    assert_eq!(s.created(ProtoClass::Tcp), 4096);
    assert_eq!(s.max_flows, 4096, "all open at once");
    assert_eq!(s.ended(EndReason::Fin), 4096);
    assert_eq!(s.totals.captured, 4096 * 64);
    assert_eq!(s.totals.dropped + s.totals.missing + s.totals.discarded, 0);
    assert_eq!(
        ends.streams.iter().filter(|c| c.captured == 64).count(),
        4096
    );
}

#[test]
fn hash_collision_with_a_small_table_evicts_and_accounts() {
    let (s, _, _) = run(Profile::HashCollision, 4096 * 6, tight());
    assert!(s.max_flows <= 1000);
    assert!(s.ended(EndReason::Evicted) > 0);
}

#[test]
fn tiny_segments_are_all_captured() {
    let n = 20_000;
    let (s, _, truth) = run(Profile::TinySegments, n, tight());
    assert_eq!(truth.flows, 64);
    assert_eq!(s.created(ProtoClass::Tcp), 64);
    // 64 handshakes, then 1-byte segments only.
    let data_packets = n - 64 * 3;
    assert_eq!(s.totals.stream_bytes, data_packets);
    assert_eq!(s.totals.captured, data_packets);
    assert_eq!(s.totals.pkts_captured, data_packets);
    assert_eq!(s.memory_refusals, 0);
}

#[test]
fn ooo_flood_gives_up_holes_at_the_limit() {
    let (s, ends, truth) = run(Profile::OooFlood, 8000, tight());
    assert_eq!(s.created(ProtoClass::Tcp), truth.flows);
    // Every connection's first 100 bytes never came.
    assert!(
        s.totals.missing >= 100 * truth.flows,
        "missing {}",
        s.totals.missing
    );
    assert!(s.totals.captured > 0);
    assert!(ends.streams.iter().any(|c| c.missing > 0 && c.captured > 0));
}

#[test]
fn ooo_flood_over_a_tiny_budget_is_refused_and_counted() {
    let cfg = Config {
        memory_size: 128 << 10,
        max_ooo_bytes: 16 * MIB,
        max_ooo_segments: 1 << 20,
        ..tight()
    };
    let (s, _, _) = run(Profile::OooFlood, 8000, cfg);
    assert_eq!(s.memory_limit, 128 << 10);
    assert!(s.memory_refusals > 0, "the budget must refuse");
    assert!(s.totals.dropped > 0, "refused bytes are counted dropped");
}

#[test]
fn overlap_storm_counts_conflicts() {
    let (s, _, truth) = run(Profile::OverlapStorm, 3000, tight());
    assert_eq!(s.created(ProtoClass::Tcp), truth.flows);
    assert!(s.totals.overlap_conflicts > 0);
    assert!(s.totals.retransmitted > 0);
    assert!(s.totals.captured > 0);
}

#[test]
fn fragment_flood_is_bounded_by_the_defrag_limits() {
    let (s, _, _) = run(Profile::FragmentFlood, 3000, tight());
    let d = &s.defrag;
    assert_eq!(d.fragments, 3000);
    // The incomplete datagrams fill the 64 slots or the 64 KiB, and go.
    assert!(d.evicted + d.memory_full > 0, "{d:?}");
    assert!(d.fragments_dropped > 0, "{d:?}");
    assert!(d.overlaps > 0 && d.overlap_conflicts > 0, "{d:?}");
    assert!(d.reassembled > 0, "{d:?}");
    assert!(s.created(ProtoClass::Udp) > 0);
    // At the end of the run nothing is held: every fragment is in a
    // datagram passed on or dropped, for one reason each.
    assert_eq!(d.fragments_reassembled + d.fragments_dropped, d.fragments);
    assert_eq!(d.dropped.total(), d.fragments_dropped);
    // Every third datagram is complete (with a conflicting fragment):
    // none of them is lost to the two incomplete ones around it, since a
    // complete one needs only 4 of the 64 slots for 4 packets.
    assert_eq!(d.reassembled, 3000 / 7, "{d:?}");
    assert_eq!(s.created(ProtoClass::Udp), d.reassembled);
}

#[test]
fn seq_abuse_rsts_outside_the_window_do_not_close() {
    let (s, _, truth) = run(Profile::SeqAbuse, 1000, tight());
    assert!(truth.flows >= 9);
    assert!(s.invalid_rsts > 0);
    assert_eq!(s.ended(EndReason::Rst), 0, "no RST was in the window");
    assert!(s.totals.captured > 0);
}

#[test]
fn endless_streams_stay_within_a_chunk_per_stream() {
    let (s, ends, truth) = run(Profile::EndlessStreams, 5000, tight());
    assert_eq!(truth.flows, 8);
    assert_eq!(s.created(ProtoClass::Tcp), 8);
    assert_eq!(s.ended(EndReason::Eof), 8);
    assert_eq!(s.memory_refusals, 0);
    assert_eq!(s.totals.dropped, 0);
    // Each of the 8 sending streams holds at most one partial 16 KiB chunk.
    assert!(s.memory_peak <= 8 * (16 << 10), "peak {}", s.memory_peak);
    let to_server: Vec<_> = ends.streams.iter().filter(|c| c.captured > 0).collect();
    assert_eq!(to_server.len(), 8);
}

#[test]
fn normal_baseline_accounts_every_flow() {
    let (s, _, truth) = run(Profile::Normal, 5000, tight());
    assert!(truth.flows > 0);
    assert!(s.totals.captured > 0);
}

#[test]
fn every_profile_under_a_64k_budget_in_both_modes() {
    use streamcap::ReassemblyMode;
    for mode in [ReassemblyMode::Fast, ReassemblyMode::Strict] {
        for p in Profile::ALL {
            let cfg = Config {
                memory_size: 64 << 10,
                max_flows: 256,
                mode,
                ..tight()
            };
            let (s, _, _) = run(p, 3000, cfg);
            assert_eq!(s.memory_limit, 64 << 10, "{p} {mode}");
        }
    }
}

#[test]
fn endless_streams_over_a_budget_below_their_chunks_are_refused() {
    // 8 streams each filling a 16 KiB chunk need more than 64 KiB.
    let cfg = Config {
        memory_size: 64 << 10,
        ..tight()
    };
    let (s, _, _) = run(Profile::EndlessStreams, 3000, cfg);
    assert!(s.memory_refusals > 0);
    assert!(s.totals.dropped > 0);
    assert!(s.totals.captured > 0, "some streams still deliver");
}

#[test]
fn closed_streams_free_their_tail_at_the_fin_not_after_the_linger() {
    // seq-abuse: ~109 packets per connection, 12,000 data bytes each, all
    // closed by FIN; at 1 µs per packet the whole capture is within the
    // default 5 s linger. A direction whose FIN is reached in order delivers
    // its last chunk and frees its buffer at once, so lingering connections
    // hold no stream data: the peak is the same as with no linger at all,
    // far below one 12,000-byte tail per connection (which is what the
    // lingering connections held before).
    let lingering = run(Profile::SeqAbuse, 3000, tight()).0;
    let cfg = Config {
        close_linger: 0,
        ..tight()
    };
    let prompt = run(Profile::SeqAbuse, 3000, cfg).0;
    eprintln!(
        "peak with linger {} B, without {} B",
        lingering.memory_peak, prompt.memory_peak
    );
    assert!(
        lingering.memory_peak < 4 * 12_000,
        "{}",
        lingering.memory_peak
    );
    assert_eq!(lingering.memory_peak, prompt.memory_peak);
    assert_eq!(prompt.totals.captured, lingering.totals.captured);
    assert!(lingering.totals.captured > 20 * 12_000);
}
