//! The classifier and the DNS and TLS logs on real captures: every pcap
//! and pcapng of the shared corpus (skipped without it), reassembled
//! by streamcap with a small handler built on the library's API; and on
//! the generator's sample capture, whose flows are labelled.
//!
//! Per-label flow counts are printed (`--nocapture`); the assertions are
//! that nothing panics and that the HTTP, TLS, DNS and SSH/SMTP/FTP
//! captures come out mostly as what they are.

#[path = "../../streamcap/tests/support/shared.rs"]
mod shared;

use shared::{captures, corpus_dir, skip};
use std::collections::BTreeMap;
use std::path::Path;
use streamcap::deliver::{Chunk, FlowEnd, Handler, Stream};
use streamcap::flow::Direction;
use streamcap::{Capture, Timestamp};
use streamcap_apps::classify::{self, decide, App, Classification, Evidence, Progress, Transport};
use streamcap_apps::conn_id::ConnId;
use streamcap_apps::logs::dns::{DnsFlow, DnsProto, DnsRecord, TcpDnsFramer};
use streamcap_apps::logs::tls::SslRecord;

/// Per-direction state: the classifier's evidence, and (on DNS ports) the
/// DNS messages with their times.
#[derive(Default)]
struct State {
    evidence: Evidence,
    dns: Option<Box<DnsDir>>,
}

#[derive(Default)]
struct DnsDir {
    framer: TcpDnsFramer,
    messages: Vec<(Timestamp, Vec<u8>)>,
}

/// What one flow came to.
struct FlowOut {
    transport: Transport,
    class: Classification,
    inspected: u64,
    stream_bytes: u64,
}

#[derive(Default)]
struct L7 {
    flows: Vec<FlowOut>,
    dns: Vec<DnsRecord>,
    ssl: Vec<SslRecord>,
}

fn is_dns_port(p: u16) -> bool {
    matches!(p, 53 | 5353 | 5355 | 137)
}

impl Handler for L7 {
    type State = State;

    fn on_create(&mut self, s: &mut Stream<'_, State>) {
        classify::prepare(s);
        let (a, b) = (s.src().1, s.dst().1);
        if is_dns_port(a) || is_dns_port(b) {
            s.state().dns = Some(Box::default());
        }
    }

    fn on_data(&mut self, s: &mut Stream<'_, State>, chunk: &Chunk<'_>) {
        let Some(t) = Transport::from_ip_proto(s.proto()) else {
            s.discard();
            return;
        };
        let ts = s.info().end;
        let st = s.state();
        let done = st.evidence.feed_chunk(t, chunk) == Progress::Done;
        if let Some(d) = &mut st.dns {
            match t {
                Transport::Udp => d.messages.push((ts, chunk.new_data().to_vec())),
                Transport::Tcp => {
                    if chunk.gap.is_some() {
                        d.framer.gap();
                    }
                    let DnsDir { framer, messages } = &mut **d;
                    framer.push(chunk.new_data(), |m| messages.push((ts, m.to_vec())));
                }
            }
            return;
        }
        if done {
            s.discard();
        }
    }

    fn on_flow_end(&mut self, fe: &mut FlowEnd<'_, State>) {
        let Some(t) = Transport::from_ip_proto(fe.proto()) else {
            return;
        };
        let orig_ep = fe.orig_endpoint();
        let resp_ep = fe.resp_endpoint();
        let mut orig = std::mem::take(fe.state(Direction::Orig));
        let mut resp = std::mem::take(fe.state(Direction::Resp));
        orig.evidence.finish();
        resp.evidence.finish();
        let class = decide(t, orig_ep.1, resp_ep.1, &orig.evidence, &resp.evidence);
        let info_o = fe.stream(Direction::Orig);
        let info_r = fe.stream(Direction::Resp);
        let conn = ConnId {
            first: fe.first_ts(),
            proto: fe.proto(),
            orig: orig_ep,
            resp: resp_ep,
            vlan_key: fe.key().vlan_key(),
            conn_id: info_o.conn_id,
            tunnel: fe.key().tunnel().map(|t| t.to_string()),
        };
        let uid = conn.uid();
        if let Some(tls) = &class.tls {
            self.ssl.push(SslRecord::new(
                fe.first_ts(),
                uid.clone(),
                orig_ep,
                resp_ep,
                tls,
            ));
        }
        if orig.dns.is_some() || resp.dns.is_some() {
            let proto = match t {
                Transport::Udp => DnsProto::Udp,
                Transport::Tcp => DnsProto::Tcp,
            };
            let mut flow = DnsFlow::new(uid, orig_ep, resp_ep, proto);
            let mut msgs: Vec<(Timestamp, Vec<u8>)> = Vec::new();
            for d in [orig.dns.take(), resp.dns.take()].into_iter().flatten() {
                let DnsDir {
                    framer,
                    mut messages,
                } = *d;
                let ts = messages.last().map_or(fe.last_ts(), |m| m.0);
                framer.finish(|m| messages.push((ts, m.to_vec())));
                msgs.extend(messages);
            }
            msgs.sort_by_key(|m| m.0);
            for (ts, m) in &msgs {
                flow.message(*ts, m, &mut self.dns);
            }
            flow.finish(&mut self.dns);
        }
        self.flows.push(FlowOut {
            transport: t,
            class,
            inspected: orig.evidence.inspected() + resp.evidence.inspected(),
            stream_bytes: info_o.counters.stream_bytes + info_r.counters.stream_bytes,
        });
    }
}

fn run(path: &Path) -> Option<L7> {
    let cap = Capture::builder().build();
    match cap.run_file(path, L7::default()) {
        Ok(report) => Some(report.handler),
        Err(e) => {
            eprintln!("{}: not read: {e}", path.display());
            None
        }
    }
}

fn counts(flows: &[FlowOut]) -> BTreeMap<&'static str, usize> {
    let mut m = BTreeMap::new();
    for f in flows {
        *m.entry(f.class.app.name()).or_insert(0) += 1;
    }
    m
}

/// Share of the flows of `app`'s transport that carried data and got `app`.
fn share(flows: &[FlowOut], app: App) -> f64 {
    let t = if app == App::Dns {
        None
    } else {
        Some(Transport::Tcp)
    };
    let with_data: Vec<&FlowOut> = flows
        .iter()
        .filter(|f| f.stream_bytes > 0 && t.is_none_or(|t| t == f.transport))
        .collect();
    if with_data.is_empty() {
        return 0.0;
    }
    with_data.iter().filter(|f| f.class.app == app).count() as f64 / with_data.len() as f64
}

#[test]
fn corpus_flows_per_label() {
    let Some(dir) = corpus_dir() else { return };
    let files = captures(&dir);
    if files.is_empty() {
        skip(format!("no capture under {}", dir.display()));
        return;
    }
    let mut total: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut per_theme: BTreeMap<String, BTreeMap<&'static str, usize>> = BTreeMap::new();
    let (mut inspected, mut bytes, mut dns_records, mut ssl_records) = (0u64, 0u64, 0usize, 0usize);
    for f in &files {
        let Some(out) = run(f) else { continue };
        let theme = f
            .parent()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let c = counts(&out.flows);
        eprintln!(
            "{}: {:?} (dns.log {}, ssl.log {})",
            f.file_name().unwrap_or_default().to_string_lossy(),
            c,
            out.dns.len(),
            out.ssl.len()
        );
        for (k, v) in &c {
            *total.entry(k).or_insert(0) += v;
            *per_theme
                .entry(theme.clone())
                .or_default()
                .entry(k)
                .or_insert(0) += v;
        }
        for r in &out.dns {
            let line = r.tsv_line();
            assert_eq!(line.matches('\t').count(), 23, "{line}");
            let _: serde_json::Value = serde_json::from_str(&r.json()).expect("dns json");
        }
        for r in &out.ssl {
            let _: serde_json::Value = serde_json::from_str(&r.json()).expect("ssl json");
        }
        inspected += out.flows.iter().map(|f| f.inspected).sum::<u64>();
        bytes += out.flows.iter().map(|f| f.stream_bytes).sum::<u64>();
        dns_records += out.dns.len();
        ssl_records += out.ssl.len();
        let name = f.file_name().unwrap_or_default().to_string_lossy();
        let expect = |app: App, min: f64| {
            let s = share(&out.flows, app);
            assert!(
                s >= min,
                "{name}: only {s:.2} of the flows with data are {app}: {c:?}"
            );
        };
        match theme.as_str() {
            "http" => expect(App::Http, 0.8),
            "tls" => expect(App::Tls, 0.8),
            _ => {}
        }
        if name.contains("dns-two-responses") || name.contains("dns-long-connection") {
            expect(App::Dns, 1.0);
        }
        if name.contains("ssh-single-conn") {
            expect(App::Ssh, 1.0);
        }
        if name.contains("smtp-") {
            expect(App::Smtp, 1.0);
        }
        if name == "zeek__smtp.pcap" {
            // Two SMTP sessions among other traffic.
            assert_eq!(c.get("smtp"), Some(&2), "{name}: {c:?}");
        }
        if name.contains("ftp-ipv") {
            // The control connection; the data connections carry files.
            assert!(c.get("ftp").copied().unwrap_or(0) >= 1, "{name}: {c:?}");
        }
    }
    eprintln!("per theme:");
    for (t, c) in &per_theme {
        eprintln!("  {t}: {c:?}");
    }
    eprintln!("all {} files: {total:?}", files.len());
    eprintln!(
        "bytes inspected {inspected} of {bytes} stream bytes; dns.log records {dns_records}, ssl.log records {ssl_records}"
    );
    assert!(total.get("http").copied().unwrap_or(0) > 0);
    assert!(total.get("tls").copied().unwrap_or(0) > 0);
    assert!(total.get("dns").copied().unwrap_or(0) > 0);
    assert!(dns_records > 0 && ssl_records > 0);
}

/// The generator's sample capture: its flows are labelled by scenario.
#[test]
fn sample_capture_flows_get_their_labels() {
    let cap = streamcap_gen::sample(1);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("sample.pcap");
    std::fs::write(&path, cap.to_pcap_bytes()).expect("write");
    let out = run(&path).expect("readable");
    let c = counts(&out.flows);
    eprintln!("sample: {c:?}");
    for (app, min) in [
        (App::Http, 5),
        (App::Tls, 1),
        (App::Ssh, 1),
        (App::Smtp, 1),
        (App::Dns, 1),
        (App::Ntp, 1),
    ] {
        assert!(
            c.get(app.name()).copied().unwrap_or(0) >= min,
            "sample: fewer than {min} {app}: {c:?}"
        );
    }
    assert!(out
        .ssl
        .iter()
        .any(|r| r.server_name.is_some() && r.version.is_some()));
    assert!(out.dns.iter().any(|r| r.answers.is_some()));
}
