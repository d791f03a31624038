//! The HTTP analyser against the generator's known transactions:
//! persistent and pipelined connections, Content-Length, chunked (with
//! extensions and trailers) and close-delimited bodies, 1xx, HEAD, 204,
//! 304, request bodies, heads split across segments at awkward places,
//! reordering, port 80 and high ports, requests left unanswered. Every
//! transaction is found with its method, host, URI, version, user agent,
//! status, 1xx and body lengths, and nothing else, with chunk and segment
//! delivery, one and two workers.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use streamcap::deliver::Delivery;
use streamcap::Capture;
use streamcap_apps::http::{Http, HttpConfig, HttpRecord};
use streamcap_gen::http::{generate, HttpConfig as GenConfig};

/// What is compared, per connection (client, server) and depth.
type Row = (
    String,
    Option<String>,
    String,
    Option<String>,
    Option<String>,
    u64,
    u64,
    Option<u16>,
    Option<String>,
    Option<u16>,
);

fn key(orig: SocketAddr, resp: SocketAddr, depth: u64) -> (SocketAddr, SocketAddr, u64) {
    (orig, resp, depth)
}

#[test]
fn every_generated_transaction_is_found_exactly() {
    for seed in [1, 2] {
        let trace = generate(&GenConfig {
            seed,
            ..GenConfig::default()
        });
        let mut want: BTreeMap<_, Row> = BTreeMap::new();
        for t in &trace.transactions {
            want.insert(
                key(t.client, t.server, u64::from(t.trans_depth)),
                (
                    t.method.clone(),
                    t.host.clone(),
                    t.uri.clone(),
                    t.version.clone(),
                    t.user_agent.clone(),
                    t.request_body_len,
                    t.response_body_len,
                    t.status_code,
                    t.status_msg.clone(),
                    t.info_code,
                ),
            );
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("http.pcap");
        std::fs::write(&path, trace.pcap_bytes()).unwrap();
        for (delivery, chunk, workers) in [
            (Delivery::Chunks, 16 << 10, 1),
            (Delivery::Chunks, 7, 2),
            (Delivery::Segments, 64 << 10, 1),
            (Delivery::Segments, 100, 2),
        ] {
            let cap = Capture::builder()
                .delivery(delivery)
                .chunk_size(chunk)
                .build();
            let par = streamcap::dispatch::workers::Parallel::workers(workers);
            let report = cap
                .run_file_parallel(&path, &par, |_| {
                    (
                        Http::new(HttpConfig::default(), Vec::<HttpRecord>::new()),
                        (),
                    )
                })
                .unwrap();
            let mut got: BTreeMap<_, Row> = BTreeMap::new();
            for w in &report.workers {
                for r in &w.handler.sink {
                    let (Some(o), Some(p)) = (r.orig, r.resp) else {
                        panic!("a record without endpoints: {r:?}");
                    };
                    let k = key(
                        SocketAddr::new(o.0, o.1),
                        SocketAddr::new(p.0, p.1),
                        r.trans_depth,
                    );
                    let row = (
                        r.method.clone().unwrap_or_default(),
                        r.host.clone(),
                        r.uri.clone().unwrap_or_default(),
                        r.version.clone(),
                        r.user_agent.clone(),
                        r.request_body_len,
                        r.response_body_len,
                        r.status_code,
                        r.status_msg.clone(),
                        r.info_code,
                    );
                    assert!(got.insert(k, row).is_none(), "two records for {k:?}");
                }
            }
            let missing: Vec<_> = want
                .iter()
                .filter(|(k, v)| got.get(*k) != Some(*v))
                .collect();
            let extra: Vec<_> = got.keys().filter(|k| !want.contains_key(*k)).collect();
            assert!(
                missing.is_empty() && extra.is_empty(),
                "seed {seed}, {delivery} chunk {chunk}, {workers} workers: {} of {} differ: {:#?}\ngot: {:#?}\nextra {extra:?}",
                missing.len(),
                want.len(),
                missing.iter().take(5).collect::<Vec<_>>(),
                missing.iter().take(5).map(|(k, _)| got.get(*k)).collect::<Vec<_>>(),
            );
        }
    }
}
