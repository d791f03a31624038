//! Active timeouts: a connection still open at its active timeout, and at
//! every interval after, is reported with its counters so far; one that
//! ends first is not; the reports go through the analysis stage alike.

use std::net::SocketAddr;
use streamcap::deliver::{FlowEnd, Handler};
use streamcap::dispatch::analysis::Decoupled;
use streamcap::flow::Direction;
use streamcap::{Capture, Config, FileSource};
use streamcap_gen::{Capture as Gen, Direction as Dir, TcpConversation};

const SEC: u64 = 1_000_000_000;

/// (is update, packets both ways, last packet time) per report, in order.
#[derive(Default)]
struct Reports(Vec<(bool, u64, u64, u16)>);

impl Handler for Reports {
    type State = ();
    fn on_flow_update(&mut self, f: &mut FlowEnd<'_, ()>) {
        assert!(f.is_update());
        let pk = f.stream(Direction::Orig).counters.pkts + f.stream(Direction::Resp).counters.pkts;
        self.0
            .push((true, pk, f.last_ts().as_nanos(), f.orig_endpoint().1));
    }
    fn on_flow_end(&mut self, f: &mut FlowEnd<'_, ()>) {
        assert!(!f.is_update());
        let pk = f.stream(Direction::Orig).counters.pkts + f.stream(Direction::Resp).counters.pkts;
        self.0
            .push((false, pk, f.last_ts().as_nanos(), f.orig_endpoint().1));
    }
}

fn ep(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// A 10-second connection (a packet every 100 ms) and a short one.
fn pcap() -> Vec<u8> {
    let long = TcpConversation::new(ep("10.0.0.1:40000"), ep("10.0.0.2:80"))
        .timing(1_000 * SEC, SEC / 10)
        .mss(100)
        .send(Dir::ToServer, vec![b'a'; 4000])
        .send(Dir::ToClient, vec![b'b'; 4000]);
    let short = TcpConversation::new(ep("10.0.0.3:40001"), ep("10.0.0.2:80"))
        .timing(1_000 * SEC + SEC / 2, SEC / 1000)
        .send(Dir::ToServer, b"hello".to_vec());
    let mut g = Gen::new();
    g.add(&long);
    g.add(&short);
    g.to_pcap_bytes()
}

fn run<H: Handler>(active: Option<u64>, handler: H) -> H {
    let mut src = FileSource::from_bytes("t", pcap()).expect("the capture opens");
    let cfg = Config {
        active_timeout: active,
        ..Config::default()
    };
    Capture::builder()
        .config(cfg)
        .build()
        .run(&mut src, handler)
        .handler
}

#[test]
fn long_connections_are_reported_every_interval() {
    let r = run(Some(3 * SEC), Reports::default()).0;
    let long: Vec<_> = r.iter().filter(|x| x.3 == 40000).collect();
    let short: Vec<_> = r.iter().filter(|x| x.3 == 40001).collect();
    // The short connection ends before its timeout: its end only.
    assert_eq!(short.len(), 1);
    assert!(!short[0].0);
    // The long one (8.7 s): an update at 3 and 6 s, then its end; the counts
    // only grow, and the end has them all.
    let updates: Vec<_> = long.iter().filter(|x| x.0).collect();
    assert_eq!(updates.len(), 2, "{long:?}");
    assert!(
        long.windows(2)
            .all(|w| w[0].1 <= w[1].1 && w[0].2 <= w[1].2),
        "{long:?}"
    );
    assert!(!long.last().unwrap().0, "the end comes last");
    let total = long.last().unwrap().1;
    assert!(updates.iter().all(|u| u.1 < total));
    // Without an active timeout, ends only.
    let plain = run(None, Reports::default()).0;
    assert_eq!(plain.len(), 2);
    assert!(plain.iter().all(|x| !x.0));
    assert_eq!(plain.iter().find(|x| x.3 == 40000).unwrap().1, total);
}

#[test]
fn the_analysis_stage_passes_updates_on() {
    let inline = run(Some(3 * SEC), Reports::default()).0;
    let threads = Decoupled::spawn(1, |_| Reports::default()).unwrap();
    let mut d = run(Some(3 * SEC), threads);
    let (handlers, _) = d.join();
    let got: Vec<_> = handlers.into_iter().flat_map(|h| h.0).collect();
    assert_eq!(got, inline);
}

/// A capture whose clock leaps a year while a connection is open: one
/// report at most for the leap, not one per interval leapt over; and an
/// interval without a packet of the connection gives no report.
#[test]
fn a_leap_of_the_clock_gives_one_report_not_one_per_interval() {
    use streamcap_gen::Close;
    const YEAR: u64 = 365 * 24 * 3600 * SEC;
    // Open, 2 s of data (a packet every 100 ms), never closed.
    let open = TcpConversation::new(ep("10.0.0.1:40000"), ep("10.0.0.2:80"))
        .timing(1_000 * SEC, SEC / 10)
        .mss(100)
        .send(Dir::ToServer, vec![b'a'; 1000])
        .close(Close::None);
    // A year later, another connection.
    let later = TcpConversation::new(ep("10.0.0.3:40001"), ep("10.0.0.2:80"))
        .timing(1_000 * SEC + YEAR, SEC / 1000)
        .send(Dir::ToServer, b"hello".to_vec());
    let mut g = Gen::new();
    g.add(&open);
    g.add(&later);
    let mut src = FileSource::from_bytes("t", g.to_pcap_bytes()).expect("the capture opens");
    let cfg = Config {
        active_timeout: Some(SEC / 2),
        ..Config::default()
    };
    let r = Capture::builder()
        .config(cfg)
        .build()
        .run(&mut src, Reports::default())
        .handler
        .0;
    let open: Vec<_> = r.iter().filter(|x| x.3 == 40000).collect();
    let updates = open.iter().filter(|x| x.0).count();
    // About 1.6 s of packets: reports at 0.5, 1.0 and 1.5 s, perhaps one
    // more for the last packets; then the inactivity timeout ends it.
    assert!((3..=4).contains(&updates), "{open:?}");
    assert!(!open.last().expect("its end").0, "{open:?}");
}
