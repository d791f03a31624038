//! The NIDS trace: determinism, coverage, and the truth checked against an
//! independent reassembly of the pcap (and against tshark when installed).

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{attribute, read_pcap, Parsed};
use streamcap_gen::nids::signature::{parse_content, MARKER};
use streamcap_gen::nids::{
    generate, Carrier, NidsConfig, NidsTrace, Occurrence, Placement, SignatureIn,
};
use streamcap_gen::{Direction, FlowTruth, Protocol};

fn trace() -> NidsTrace {
    generate(&NidsConfig::default())
}

fn di(d: Direction) -> usize {
    usize::from(d == Direction::ToClient)
}

#[test]
fn deterministic() {
    let a = trace();
    let b = trace();
    assert_eq!(a.pcap_bytes(), b.pcap_bytes());
    assert_eq!(a.truth_jsonl(), b.truth_jsonl());
    assert_eq!(a.rules(), b.rules());
    let c = generate(&NidsConfig {
        seed: 2,
        ..NidsConfig::default()
    });
    assert_ne!(a.pcap_bytes(), c.pcap_bytes());
    assert_eq!(a.rules(), c.rules(), "the signature set is fixed");
}

#[test]
fn truth_round_trips_and_covers_everything() {
    let t = trace();
    let occ = &t.occurrences;
    assert_eq!(NidsTrace::parse_truth(&t.truth_jsonl()).unwrap(), *occ);
    let st = t.stats();
    eprintln!("{st:?}, pcap {} bytes", t.pcap_bytes().len());
    assert_eq!(st.flows, 400);
    assert!(st.occurrences > 400, "{st:?}");
    assert!(st.flows_with_signatures < st.flows, "some flows are clean");

    let carriers: BTreeSet<Carrier> = occ.iter().map(|o| o.carrier).collect();
    assert_eq!(carriers.len(), Carrier::ALL.len(), "every carrier");
    let sigs: BTreeSet<usize> = occ.iter().map(|o| o.signature).collect();
    assert_eq!(sigs.len(), t.signatures.len(), "every signature planted");
    for o in occ {
        let s = &t.signatures[o.signature];
        assert_eq!(
            (o.sid, o.carrier, o.len),
            (s.sid, s.carrier, s.bytes.len() as u64)
        );
        assert_eq!(o.proto, s.carrier.proto());
        if let Some(d) = s.carrier.direction() {
            assert_eq!(o.direction, d);
        }
        match o.proto {
            Protocol::Udp => {
                assert!(o.datagram.is_some() && !o.crosses_segment && !o.midstream);
                assert!(o.conflict.is_none() && !o.reordered);
            }
            Protocol::Tcp => assert!(o.datagram.is_none()),
        }
        assert_eq!(o.crosses_segment, o.split.is_some());
        if let Some(j) = o.split {
            assert!(j >= 1 && j < o.len);
        }
        if o.conflict.is_none() {
            assert!(o.present_first && o.present_last);
        } else {
            assert!(o.reordered && o.present_first != o.present_last);
        }
    }

    // About half of the TCP occurrences straddle, with splits after the
    // first byte, in the middle and before the last byte.
    let tcp: Vec<&Occurrence> = occ.iter().filter(|o| o.proto == Protocol::Tcp).collect();
    let crossing = tcp.iter().filter(|o| o.crosses_segment).count();
    let share = crossing as f64 / tcp.len() as f64;
    assert!(
        (0.45..=0.55).contains(&share),
        "{crossing} of {}",
        tcp.len()
    );
    assert!(tcp.iter().any(|o| o.split == Some(1)));
    assert!(tcp.iter().any(|o| o.split == Some(o.len / 2)));
    assert!(tcp.iter().any(|o| o.split == Some(o.len - 1)));
    for c in Carrier::ALL.iter().filter(|c| c.proto() == Protocol::Tcp) {
        for crosses in [false, true] {
            assert!(
                tcp.iter()
                    .any(|o| o.carrier == *c && o.crosses_segment == crosses),
                "{c:?} crossing={crosses}"
            );
        }
    }

    // Impairments: reordering, the four conflict variants (hiding the
    // signature under `first` and under `last`, crossing or not),
    // mid-stream flows with and without reordering, IPv6.
    assert!(tcp.iter().any(|o| o.reordered && o.conflict.is_none()));
    for placement in [Placement::Before, Placement::After] {
        for si in [SignatureIn::Original, SignatureIn::Retransmission] {
            assert!(
                tcp.iter().any(|o| o
                    .conflict
                    .is_some_and(|c| c.placement == placement && c.signature_in == si)),
                "{placement:?} {si:?}"
            );
        }
    }
    assert!(tcp.iter().any(|o| o.conflict.is_some() && !o.present_first));
    assert!(tcp.iter().any(|o| o.conflict.is_some() && !o.present_last));
    assert!(tcp
        .iter()
        .any(|o| o.conflict.is_some() && o.crosses_segment));
    assert!(tcp.iter().any(|o| o.midstream && o.reordered));
    assert!(tcp.iter().any(|o| o.midstream && o.conflict.is_some()));
    assert!(tcp.iter().any(|o| o.midstream && o.crosses_segment));
    assert!(occ.iter().any(|o| o.client.is_ipv6()));
    assert!(occ.iter().any(|o| o.client.is_ipv4()));
    // A signature is planted in several flows, a flow holds a few.
    let mut per_flow: BTreeMap<usize, usize> = BTreeMap::new();
    for o in occ {
        *per_flow.entry(o.flow).or_default() += 1;
    }
    assert!(per_flow.values().all(|&n| n <= 6));
    assert!(per_flow.values().any(|&n| n >= 3));
}

#[test]
fn rules_match_the_signatures() {
    let t = trace();
    let rules = t.rules();
    let lines: Vec<&str> = rules.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(lines.len(), t.signatures.len());
    for (l, s) in lines.iter().zip(&t.signatures) {
        let proto = match s.carrier.proto() {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
        };
        assert!(l.starts_with(&format!("alert {proto} any any -> any any (msg:")));
        let c = l.split("content:\"").nth(1).unwrap();
        let c = &c[..c.find('"').unwrap()];
        assert_eq!(parse_content(c).unwrap(), s.bytes);
        assert!(l.contains(&format!("; sid:{}; rev:1;)", s.sid)));
    }
}

/// Per-byte reassembly of one direction under overlap policy `first`
/// (`last_wins == false`) or `last`, as streamcap does it: bytes below the
/// delivery point are final, bytes not yet delivered are resolved by the
/// policy.
#[derive(Default)]
struct Model {
    next: u64,
    pending: BTreeMap<u64, u8>,
    out: Vec<u8>,
}

impl Model {
    fn insert(&mut self, off: u64, data: &[u8], last_wins: bool) {
        if off == self.next && self.pending.is_empty() {
            self.out.extend_from_slice(data);
            self.next += data.len() as u64;
            return;
        }
        for (i, &b) in data.iter().enumerate() {
            let o = off + i as u64;
            if o < self.next {
                continue;
            }
            if last_wins {
                self.pending.insert(o, b);
            } else {
                self.pending.entry(o).or_insert(b);
            }
        }
        while let Some(b) = self.pending.remove(&self.next) {
            self.out.push(b);
            self.next += 1;
        }
    }
}

/// What the independent reassembly found.
struct Reassembled {
    /// Per TCP flow and direction: the stream under `first` and `last`.
    tcp: HashMap<(usize, usize), [Vec<u8>; 2]>,
    /// Per TCP flow and direction: payload ranges of the captured segments.
    segments: HashMap<(usize, usize), Vec<(u64, u64)>>,
    /// Per UDP flow and direction: the datagrams.
    udp: HashMap<(usize, usize), Vec<Vec<u8>>>,
    /// TCP flows with a SYN in the capture.
    syn: BTreeSet<usize>,
}

fn reassemble(pcap: &[u8], flows: &[FlowTruth]) -> Reassembled {
    let (_, _, recs) = read_pcap(pcap);
    let mut base: HashMap<(usize, usize), u32> = HashMap::new();
    let mut r = Reassembled {
        tcp: HashMap::new(),
        segments: HashMap::new(),
        udp: HashMap::new(),
        syn: BTreeSet::new(),
    };
    let mut models: HashMap<(usize, usize), [Model; 2]> = HashMap::new();
    for (id, dir, p) in attribute(&recs, flows) {
        let key = (id, di(dir));
        let Parsed { tcp, payload, .. } = p;
        let Some((seq, _, syn, ..)) = tcp else {
            r.udp.entry(key).or_default().push(payload);
            continue;
        };
        if syn {
            r.syn.insert(id);
            base.insert(key, seq.wrapping_add(1));
            continue;
        }
        // Mid-stream: the stream starts at the first sequence number seen.
        let b = *base.entry(key).or_insert(seq);
        if payload.is_empty() {
            continue;
        }
        let off = u64::from(seq.wrapping_sub(b));
        r.segments
            .entry(key)
            .or_default()
            .push((off, off + payload.len() as u64));
        let m = models.entry(key).or_default();
        m[0].insert(off, &payload, false);
        m[1].insert(off, &payload, true);
    }
    for (key, [first, last]) in models {
        assert!(first.pending.is_empty() && last.pending.is_empty());
        r.tcp.insert(key, [first.out, last.out]);
    }
    r
}

/// Every (signature, offset) in `data`, and every marker position.
fn find_all(data: &[u8], t: &NidsTrace) -> (Vec<(usize, u64)>, Vec<u64>) {
    let mut found = Vec::new();
    let mut markers = Vec::new();
    let mut at = 0;
    while let Some(k) = data[at..].windows(MARKER.len()).position(|w| w == MARKER) {
        let p = at + k;
        markers.push(p as u64);
        for s in &t.signatures {
            let mo = s
                .bytes
                .windows(MARKER.len())
                .position(|w| w == MARKER)
                .unwrap();
            if p >= mo && data[p - mo..].starts_with(&s.bytes) {
                found.push((s.index, (p - mo) as u64));
            }
        }
        at = p + 1;
    }
    (found, markers)
}

/// The independent reassembly finds every signature exactly where the
/// truth says (under both policies), and nowhere else; every marker in the
/// traffic belongs to a planted occurrence; boundaries are where the truth
/// says; streams of flows without conflicts equal the intended streams.
#[test]
fn truth_matches_an_independent_reassembly() {
    for seed in [1, 7] {
        let t = generate(&NidsConfig {
            seed,
            ..NidsConfig::default()
        });
        check_against_reassembly(&t);
    }
}

fn check_against_reassembly(t: &NidsTrace) {
    let flows = t.flows();
    let r = reassemble(&t.pcap_bytes(), &flows);
    type Key = (usize, usize, Option<u64>, usize, u64);
    let key =
        |o: &Occurrence| -> Key { (o.flow, di(o.direction), o.datagram, o.signature, o.offset) };
    let mut by_flow_dir: HashMap<(usize, usize), Vec<&Occurrence>> = HashMap::new();
    for o in &t.occurrences {
        by_flow_dir
            .entry((o.flow, di(o.direction)))
            .or_default()
            .push(o);
    }
    for policy in 0..2 {
        let want: BTreeSet<Key> = t
            .occurrences
            .iter()
            .filter(|o| {
                if policy == 0 {
                    o.present_first
                } else {
                    o.present_last
                }
            })
            .map(key)
            .collect();
        let mut got = BTreeSet::new();
        for (&(flow, d), streams) in &r.tcp {
            let (found, markers) = find_all(&streams[policy], t);
            got.extend(found.into_iter().map(|(s, off)| (flow, d, None, s, off)));
            let planted = by_flow_dir.get(&(flow, d)).cloned().unwrap_or_default();
            for m in markers {
                assert!(
                    planted
                        .iter()
                        .any(|o| o.offset <= m && m < o.offset + o.len),
                    "flow {flow} dir {d}: marker at {m} outside planted signatures"
                );
            }
        }
        for (&(flow, d), dgrams) in &r.udp {
            for (i, dg) in dgrams.iter().enumerate() {
                let (found, markers) = find_all(dg, t);
                assert_eq!(found.len(), markers.len(), "flow {flow}: stray marker");
                got.extend(
                    found
                        .into_iter()
                        .map(|(s, off)| (flow, d, Some(i as u64), s, off)),
                );
            }
        }
        let missing: Vec<&Key> = want.difference(&got).collect();
        let extra: Vec<&Key> = got.difference(&want).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "policy {}: missing {missing:?}, extra {extra:?}",
            ["first", "last"][policy]
        );
    }

    // Segment boundaries.
    for o in t.occurrences.iter().filter(|o| o.proto == Protocol::Tcp) {
        let segs = &r.segments[&(o.flow, di(o.direction))];
        let end = o.offset + o.len;
        let whole = segs.iter().any(|&(s, e)| s <= o.offset && end <= e);
        assert_eq!(!whole, o.crosses_segment, "{o:?}");
        if let Some(j) = o.split {
            let cut = o.offset + j;
            assert!(
                segs.iter().any(|&(s, e)| s <= o.offset && e == cut),
                "{o:?}"
            );
            assert!(segs.iter().any(|&(s, e)| s == cut && end <= e), "{o:?}");
        }
        assert_eq!(!r.syn.contains(&o.flow), o.midstream, "{o:?}");
    }

    // Without conflicts, the reassembled streams are the intended ones.
    for f in flows.iter().filter(|f| f.proto == Protocol::Tcp) {
        for (d, dt) in [(0, &f.to_server), (1, &f.to_client)] {
            let got = r.tcp.get(&(f.id, d)).map_or(&[][..], |s| &s[0][..]);
            if dt.conflicts.is_empty() {
                assert_eq!(got, &dt.stream[..], "flow {} dir {d}", f.id);
                let last = &r.tcp.get(&(f.id, d)).map_or(&[][..], |s| &s[1][..]);
                assert_eq!(last, &&dt.stream[..]);
            } else {
                assert_eq!(got.len(), dt.stream.len());
            }
        }
    }
}

fn tshark() -> Option<PathBuf> {
    Command::new("tshark")
        .arg("-v")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| PathBuf::from("tshark"))
}

fn run(tshark: &Path, args: &[&str]) -> String {
    let out = Command::new(tshark)
        .args(args)
        .output()
        .expect("run tshark");
    assert!(
        out.status.success(),
        "tshark {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// One `-z follow,tcp,raw` section: its two nodes and the bytes each sent.
#[derive(Default)]
struct Follow {
    nodes: [String; 2],
    from0: Vec<u8>,
    from1: Vec<u8>,
}

/// Parses the output of several `-z follow,tcp,raw,...` in one run (tshark
/// prints them in no promised order: they are told apart by their nodes).
fn parse_follows(text: &str) -> Vec<Follow> {
    let mut out = Vec::new();
    let mut cur: Option<Follow> = None;
    for line in text.lines() {
        if line.starts_with("Follow:") {
            out.extend(cur.take());
            cur = Some(Follow::default());
            continue;
        }
        let Some(c) = cur.as_mut() else { continue };
        if let Some(n) = line.strip_prefix("Node 0: ") {
            c.nodes[0] = n.trim().to_string();
        } else if let Some(n) = line.strip_prefix("Node 1: ") {
            c.nodes[1] = n.trim().to_string();
        } else if line.starts_with('=') || line.starts_with("Filter:") || line.trim().is_empty() {
        } else if let Some(h) = line.strip_prefix('\t') {
            c.from1.extend(hex::decode(h.trim()).expect("hex"));
        } else {
            c.from0.extend(hex::decode(line.trim()).expect("hex"));
        }
    }
    out.extend(cur);
    out
}

/// tshark's reassembly of TCP flows without conflicts (mid-stream,
/// reordered, IPv6 ones among them) holds every signature at the offset the
/// truth gives.
#[test]
fn tshark_agrees_with_truth_offsets() {
    let Some(tshark) = tshark() else {
        common::skip("tshark not installed: no tshark cross-check of the NIDS truth");
        return;
    };
    let t = trace();
    let dir = std::env::temp_dir().join(format!("streamcap-gen-nids-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("nids.pcap");
    t.write_files(&pcap, None, None).unwrap();
    let f = pcap.to_str().unwrap();
    let flows = t.flows();
    let conflicted: BTreeSet<usize> = flows
        .iter()
        .filter(|f| !f.to_server.conflicts.is_empty() || !f.to_client.conflicts.is_empty())
        .map(|f| f.id)
        .collect();
    // Up to 40 TCP flows with signatures, preferring impaired ones.
    let mut picked: Vec<usize> = Vec::new();
    for want in [
        |o: &Occurrence| o.midstream && o.reordered,
        |o: &Occurrence| o.midstream,
        |o: &Occurrence| o.reordered && o.crosses_segment,
        |o: &Occurrence| o.client.is_ipv6(),
        |o: &Occurrence| o.crosses_segment,
        |_: &Occurrence| true,
    ] {
        for o in &t.occurrences {
            if o.proto == Protocol::Tcp
                && !conflicted.contains(&o.flow)
                && want(o)
                && !picked.contains(&o.flow)
                && picked.len() < 40
            {
                picked.push(o.flow);
                if picked.len() % 8 == 0 {
                    break;
                }
            }
        }
    }
    let mut args: Vec<String> = vec!["-r".into(), f.into(), "-q".into()];
    for &id in &picked {
        let fl = &flows[id];
        args.push("-z".into());
        args.push(format!("follow,tcp,raw,{},{}", fl.client, fl.server));
    }
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let follows = parse_follows(&run(&tshark, &argv));
    assert_eq!(follows.len(), picked.len());
    let mut checked = 0;
    for &id in &picked {
        let fl = &flows[id];
        let (c, s) = (fl.client.to_string(), fl.server.to_string());
        let fo = follows
            .iter()
            .find(|f| f.nodes.contains(&c) && f.nodes.contains(&s))
            .unwrap_or_else(|| panic!("no follow output for flow {id}"));
        let (to_server, to_client) = if fo.nodes[0] == c {
            (&fo.from0, &fo.from1)
        } else {
            (&fo.from1, &fo.from0)
        };
        assert_eq!(to_server, &fl.to_server.stream, "flow {id}");
        assert_eq!(to_client, &fl.to_client.stream, "flow {id}");
        for o in t.occurrences.iter().filter(|o| o.flow == id) {
            let s = if o.direction == Direction::ToServer {
                to_server
            } else {
                to_client
            };
            let sig = &t.signatures[o.signature].bytes;
            let at = o.offset as usize;
            assert_eq!(s.get(at..at + sig.len()), Some(&sig[..]), "{o:?}");
            checked += 1;
        }
    }
    assert!(checked >= 40, "{checked}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn small_and_degenerate_configs() {
    for flows in [0, 1, 3] {
        let t = generate(&NidsConfig {
            flows,
            ..NidsConfig::default()
        });
        assert_eq!(t.capture.flows().len(), flows);
        check_against_reassembly(&t);
    }
    // Every impairment on every TCP flow, all IPv6.
    let t = generate(&NidsConfig {
        flows: 120,
        reorder: 1.0,
        conflict: 1.0,
        midstream: 1.0,
        ipv6: 1.0,
        clean: 0.0,
        seed: 3,
    });
    check_against_reassembly(&t);
    assert!(t
        .occurrences
        .iter()
        .all(|o| o.proto == Protocol::Udp || o.midstream));
}

/// The reassembly check is sharp: a truth off by one byte, or wrong about
/// presence under one policy, fails it.
#[test]
fn reassembly_check_notices_a_wrong_truth() {
    let t = generate(&NidsConfig {
        flows: 60,
        conflict: 1.0,
        ..NidsConfig::default()
    });
    let fails = |t: &NidsTrace| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check_against_reassembly(t)))
            .is_err()
    };
    assert!(!fails(&t));
    let mut off = t.clone();
    off.occurrences[0].offset += 1;
    assert!(fails(&off));
    let mut presence = t.clone();
    let c = presence
        .occurrences
        .iter_mut()
        .find(|o| o.conflict.is_some())
        .unwrap();
    c.present_first = !c.present_first;
    assert!(fails(&presence));
    let mut split = t.clone();
    let c = split
        .occurrences
        .iter_mut()
        .find(|o| o.crosses_segment)
        .unwrap();
    c.split = c.split.map(|j| j + 1);
    assert!(fails(&split));
}
