//! The classifier against the generator's known answers: 19 protocols and
//! random payloads, 30 % of them on ports that are not theirs (another
//! protocol's or a random one). At least 99 % of the flows get the right
//! label; TLS SNI and ALPN, SSH banners are extracted as sent.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use streamcap::Capture;
use streamcap_apps::classify::Classify;
use streamcap_apps::compose::Apps;
use streamcap_gen::apps::{generate, AppsConfig};

type Key = (u8, SocketAddr, SocketAddr);

fn key(proto: u8, a: SocketAddr, b: SocketAddr) -> Key {
    if a <= b {
        (proto, a, b)
    } else {
        (proto, b, a)
    }
}

#[test]
fn labels_match_the_generators_on_any_port() {
    for seed in [1, 2] {
        let trace = generate(&AppsConfig {
            seed,
            ..AppsConfig::default()
        });
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("apps.pcap");
        std::fs::write(&path, trace.pcap_bytes()).unwrap();
        let report = Capture::builder()
            .build()
            .run_file(&path, Apps::new(Classify::new(()).keep_results()))
            .unwrap();
        let got: HashMap<Key, _> = report
            .handler
            .into_inner()
            .results()
            .iter()
            .map(|(id, c)| {
                let k = key(
                    id.proto,
                    SocketAddr::new(id.orig.0, id.orig.1),
                    SocketAddr::new(id.resp.0, id.resp.1),
                );
                (k, c.clone())
            })
            .collect();
        let (mut right, mut wrong) = (0, Vec::new());
        let mut by_label: BTreeMap<&str, (u32, u32)> = BTreeMap::new();
        for f in &trace.flows {
            let proto = match f.proto {
                streamcap_gen::Protocol::Tcp => 6,
                streamcap_gen::Protocol::Udp => 17,
            };
            let c = got.get(&key(proto, f.client, f.server));
            let label = c.map_or("(no record)", |c| c.app.name());
            let e = by_label.entry(f.label.name()).or_default();
            e.1 += 1;
            if label == f.label.name() {
                right += 1;
                e.0 += 1;
            } else {
                wrong.push(format!(
                    "{} {} {}->{}: got {label}",
                    f.label.name(),
                    f.variant,
                    f.client,
                    f.server
                ));
            }
            // Details the generator knows.
            if let (Some(c), Some(sni)) = (c, &f.details.sni) {
                assert_eq!(c.sni(), Some(sni.as_str()), "{} {}", f.variant, f.client);
            }
            if let (Some(c), Some(banner)) = (c, &f.details.ssh_client_banner) {
                assert_eq!(
                    c.ssh_client.as_deref(),
                    Some(banner.as_str()),
                    "{}",
                    f.variant
                );
            }
        }
        let total = trace.flows.len();
        let share = right as f64 / total as f64;
        eprintln!(
            "seed {seed}: {right} of {total} right ({:.2} %); per label {by_label:?}",
            share * 100.0
        );
        for w in &wrong {
            eprintln!("  {w}");
        }
        assert!(share >= 0.99, "seed {seed}: {right}/{total}: {wrong:#?}");
    }
}
