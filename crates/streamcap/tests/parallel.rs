//! Several workers on one file give the single-worker result, split between
//! them: every connection once, on one worker, with the same counters and
//! stream digests, and the same merged statistics.

mod support;

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use streamcap::deliver::{Chunk, FlowEnd, Handler, Stream};
use streamcap::dispatch::fanout::Fanout;
use streamcap::dispatch::workers::Parallel;
use streamcap::flow::Direction;
use streamcap::{Capture, GlobalStats};
use streamcap_gen::campus::{Campus, CampusConfig};

/// One record per connection: everything but the worker-specific id.
#[derive(Default)]
struct Records(Vec<String>);

impl Handler for Records {
    type State = Sha256;
    fn on_data(&mut self, s: &mut Stream<'_, Sha256>, c: &Chunk<'_>) {
        s.state().update(c.new_data());
    }
    fn on_flow_end(&mut self, f: &mut FlowEnd<'_, Sha256>) {
        let mut line = format!(
            "{:?} {:?} {:?} {:?} p{} {} {} {:?}",
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
            let c = f.stream(d).counters;
            let e = f.stream(d).errors;
            let sha = hex::encode(std::mem::take(f.state(d)).finalize());
            line.push_str(&format!(" | {c:?} {e:?} {sha}"));
        }
        self.0.push(line);
    }
}

fn temp_pcap(name: &str, bytes: &[u8]) -> PathBuf {
    let p = std::env::temp_dir().join(format!("streamcap-parallel-{}-{name}", std::process::id()));
    std::fs::write(&p, bytes).expect("write temp capture");
    p
}

fn same_stats(a: &GlobalStats, b: &GlobalStats, ctx: &str) {
    support::same_traffic_stats(a, b, ctx);
    assert_eq!(a.defrag, b.defrag, "{ctx}: defragmentation");
    assert_eq!(a.invalid_rsts, b.invalid_rsts, "{ctx}: invalid RSTs");
}

/// Runs `path` with one worker and with 2 and 3 workers in both flow-affine
/// modes, and checks the split result against the single one.
fn check_file(path: &Path, capture: &Capture) -> GlobalStats {
    let ctx = path.display().to_string();
    let single = capture.run_file(path, Records::default()).expect("opens");
    let mut want = single.handler.0.clone();
    want.sort();
    for workers in [2usize, 3] {
        for fanout in [Fanout::Hash, Fanout::Locality] {
            let par = Parallel {
                workers,
                fanout,
                ..Parallel::default()
            };
            let ctx = format!("{ctx} ({workers} workers, {fanout})");
            let rep = capture
                .run_file_parallel(path, &par, |_| (Records::default(), ()))
                .expect("opens");
            assert_eq!(rep.workers.len(), workers);
            assert_eq!(rep.packets_read, single.packets_read, "{ctx}: packets read");
            assert_eq!(rep.error.is_some(), single.error.is_some(), "{ctx}: error");
            let mut seen = BTreeMap::new();
            for (i, w) in rep.workers.iter().enumerate() {
                for r in &w.handler.0 {
                    assert!(
                        seen.insert(r.clone(), i).is_none(),
                        "{ctx}: a connection reported twice: {r}"
                    );
                }
            }
            let got: Vec<String> = seen.into_keys().collect();
            assert_eq!(got, want, "{ctx}: connections");
            same_stats(&rep.stats, &single.stats, &ctx);
            assert!(rep.stats.totals.invariant_holds(), "{ctx}: invariant");
        }
    }
    single.stats
}

/// Tunnelled traffic: a VXLAN or GENEVE sender picks the outer source port
/// per direction, yet both directions of each inner connection meet in one
/// worker, and the outer flows are split as the single worker has them.
#[test]
fn generated_tunnel_capture() {
    let pcap = streamcap_gen::tunnel::tunnel_capture().expect("capture");
    let path = temp_pcap("tunnels.pcap", &pcap);
    let stats = check_file(&path, &Capture::builder().build());
    assert_eq!(stats.malformed(), 0);
    let _ = std::fs::remove_file(path);
}

#[test]
fn generated_campus_trace_with_every_impairment() {
    let pcap = support::impaired_campus(5, 30_000, 300);
    let path = temp_pcap("campus.pcap", &pcap);
    let stats = check_file(&path, &Capture::builder().build());
    assert!(
        stats.defrag.reassembled > 0,
        "the trace has fragmented datagrams"
    );
    check_file(&path, &Capture::builder().cutoff(0).build());
    // The packet limit stops every worker at the same packet.
    check_file(&path, &Capture::builder().max_packets(12_345).build());
    let _ = std::fs::remove_file(path);
}

#[test]
fn work_is_shared() {
    let cfg = CampusConfig {
        seed: 9,
        packets: 20_000,
        concurrency: 400,
        ..CampusConfig::default()
    };
    let (pcap, _, _) = Campus::new(cfg).to_bytes();
    let path = temp_pcap("share.pcap", &pcap);
    let rep = Capture::builder()
        .build()
        .run_file_parallel(&path, &Parallel::workers(2), |_| (Records::default(), ()))
        .expect("opens");
    for w in &rep.workers {
        assert!(
            w.stats.packets > rep.stats.packets / 5,
            "each worker gets a fair share: {} of {}",
            w.stats.packets,
            rep.stats.packets
        );
    }
    let _ = std::fs::remove_file(path);
}

#[test]
fn corpus_captures() {
    let Some(root) = support::corpus_dir() else {
        return;
    };
    // Fragments, VLANs, IPv6, many connections, a broken file.
    let mut checked = 0;
    for dir in ["ipv6-vlan-frag", "mixed-large", "malformed", "tcp-edge"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        files.sort();
        for f in files {
            if Capture::builder()
                .build()
                .run_file(&f, Records::default())
                .is_err()
            {
                continue; // not a capture this reader opens
            }
            check_file(&f, &Capture::builder().build());
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} corpus captures checked");
}
