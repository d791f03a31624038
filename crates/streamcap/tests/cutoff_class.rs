//! Cutoff classes: the connections whose first packet matches a filter get
//! the class's cutoff in both directions; the first matching class wins; the
//! others keep the configured cutoff.

mod support;

use streamcap::deliver::{FlowEnd, Handler};
use streamcap::filter::CutoffClass;
use streamcap::flow::Direction;
use streamcap::{Capture, Config, FileSource};

/// (destination port, protocol, captured per direction, stream bytes per
/// direction); VLAN-tagged connections are left out: as with tcpdump, an
/// expression without `vlan` does not match tagged frames.
#[derive(Default)]
struct Seen(Vec<(u16, u8, [u64; 2], [u64; 2])>);

impl Handler for Seen {
    type State = ();
    fn on_flow_end(&mut self, f: &mut FlowEnd<'_, ()>) {
        if f.key().vlan().is_some() {
            return;
        }
        let d = [Direction::Orig, Direction::Resp];
        self.0.push((
            f.resp_endpoint().1,
            f.proto(),
            d.map(|d| f.stream(d).counters.captured),
            d.map(|d| f.stream(d).counters.stream_bytes),
        ));
    }
}

fn classes(list: &[(&str, u64)]) -> Option<Vec<CutoffClass>> {
    let mut out = Vec::new();
    for (expr, cutoff) in list {
        match CutoffClass::new(expr, *cutoff) {
            Ok(c) => out.push(c),
            Err(e) => {
                support::skip(e);
                return None;
            }
        }
    }
    Some(out)
}

fn run(classes: Vec<CutoffClass>, cutoff: Option<u64>) -> Vec<(u16, u8, [u64; 2], [u64; 2])> {
    let pcap = streamcap_gen::sample(streamcap_gen::SAMPLE_DEFAULT_SEED).to_pcap_bytes();
    let mut src = FileSource::from_bytes("sample", pcap).expect("sample opens");
    let cfg = Config {
        cutoff,
        cutoff_classes: classes,
        ..Config::default()
    };
    Capture::builder()
        .config(cfg)
        .build()
        .run(&mut src, Seen::default())
        .handler
        .0
}

#[test]
fn matching_connections_get_the_class_cutoff() {
    let Some(c) = classes(&[("tcp port 80", 100), ("udp", 0), ("port 80", 5)]) else {
        return;
    };
    let seen = run(c, None);
    let (mut web, mut udp, mut other) = (0, 0, 0);
    for (port, proto, captured, total) in &seen {
        for i in 0..2 {
            let want = match (proto, port) {
                // The first matching class wins (100, not 5).
                (6, 80) => total[i].min(100),
                (17, _) => 0,
                // No class: the configured cutoff (unlimited).
                _ => total[i],
            };
            assert_eq!(captured[i], want, "port {port} proto {proto} direction {i}");
        }
        match (proto, port) {
            (6, 80) => web += 1,
            (17, _) => udp += 1,
            _ => other += 1,
        }
    }
    assert!(web > 5 && udp > 5 && other > 3, "{web} {udp} {other}");
}

#[test]
fn a_class_can_raise_the_cutoff_above_the_default() {
    let Some(c) = classes(&[("port 443", u64::MAX)]) else {
        return;
    };
    for (port, _, captured, total) in run(c, Some(0)) {
        let want = if port == 443 { total } else { [0, 0] };
        assert_eq!(captured, want, "port {port}");
    }
}

#[test]
fn a_bad_expression_is_refused() {
    match CutoffClass::new("portx 80", 1) {
        Err(streamcap::filter::FilterError::Unavailable(e)) => support::skip(e),
        Err(e) => assert!(e.to_string().contains("portx 80"), "{e}"),
        Ok(_) => panic!("libpcap accepted a bad expression"),
    }
}
