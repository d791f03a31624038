//! The classifier against nDPI 4.2 (`ndpiReader` from Debian's
//! libndpi-bin), flow by flow, on every capture of the corpus. The rules
//! of the comparison, the figures and every difference are in the section
//! "Against nDPI" of docs/apps.md, which this test reads:
//!
//! * nDPI runs as `ndpiReader -t -i FILE -C flows.csv -v 2 -q`: each
//!   flow's protocol and first packet time come from the CSV, its
//!   confidence (`DPI`, `Match by port`, `Match by IP`, `Unknown`) from the
//!   verbose listing;
//! * nDPI's protocol (its master protocol, else its application) is
//!   mapped to one of our labels ([`label_of`]), or is outside them;
//! * flows are matched by (transport, unordered endpoints), then by time:
//!   each streamcap connection goes with the last nDPI flow of its 5-tuple
//!   that started before it (nDPI keeps one flow per 5-tuple where a RST,
//!   a FIN or an idle time starts a new connection for streamcap);
//! * a flow is compared when nDPI's content inspection (`DPI`) gives one of
//!   our labels, or when streamcap gives a label and nDPI's answer (a
//!   guess included) is one of ours or `Unknown`; the agreement (at least
//!   95 %) is over those flows;
//! * every disagreement, every flow nDPI only guesses (by port or IP)
//!   where streamcap says `unknown`, every flow streamcap labels and nDPI
//!   puts outside our labels must be a row of the page with its cause (a
//!   row may count the flows of a capture that share labels, confidence and
//!   cause), and so must the flows only one tool has (counted per
//!   capture); every row must still be measured, and the figures must be
//!   the measured ones.
//!
//! Skips with a message without `ndpiReader` 4.2 or the corpus. Set
//! `STREAMCAP_NDPI_DRAFT=FILE` to get the measured tables written there
//! (causes left `?`), to redo the page after a change.

#[path = "../../streamcap/tests/support/shared.rs"]
mod shared;

use shared::{captures, corpus_dir, skip};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;
use streamcap::Capture;
use streamcap_apps::classify::{App, Classify};
use streamcap_apps::compose::Apps;

/// The section of docs/apps.md this test reads.
const SECTION: &str = "Against nDPI";

/// The agreement the comparison must reach on the flows both know.
const MIN_AGREEMENT: f64 = 0.95;

/// Timestamps of the two tools' flows of one 5-tuple are compared with
/// this slack (nDPI's CSV has milliseconds).
const TIME_SLACK: f64 = 0.0015;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `ndpiReader`'s version line, if an nDPI 4.2 runs here.
fn ndpi_42() -> Option<String> {
    let out = match Command::new("ndpiReader")
        .arg("-h")
        .stdin(Stdio::null())
        .output()
    {
        Ok(o) => o,
        Err(_) => {
            skip("ndpiReader not installed (Debian: apt-get install libndpi-bin)");
            return None;
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("nDPI"))
        .unwrap_or_default()
        .trim()
        .to_string();
    if !line.contains("nDPI 4.2") {
        skip(format!(
            "the documented differences are nDPI 4.2's; ndpiReader says {line:?}"
        ));
        return None;
    }
    Some(line)
}

/// One flow as nDPI reports it.
#[derive(Clone, Debug)]
struct NdpiFlow {
    proto: u8,
    src: String,
    dst: String,
    first: f64,
    /// `TLS.Google`, `HTTP`, `Unknown`…
    name: String,
    confidence: String,
    /// Payload bytes client to server and back (nDPI's goodput bytes).
    payload: Option<(u64, u64)>,
}

impl NdpiFlow {
    /// The protocol before the application: `TLS` of `TLS.Google`.
    fn master(&self) -> &str {
        self.name.split_once('.').map_or(&self.name, |(m, _)| m)
    }
    /// nDPI recognised the content (rather than guessing from a port or an
    /// address list).
    fn by_content(&self) -> bool {
        self.confidence.starts_with("DPI")
    }
    fn no_payload(&self) -> bool {
        self.payload == Some((0, 0))
    }
}

/// One connection as streamcap labels it.
#[derive(Clone, Debug)]
struct OurFlow {
    proto: u8,
    orig: String,
    resp: String,
    first: f64,
    app: App,
}

/// An endpoint as `ip:port` (IPv6 in brackets), the address in its
/// canonical form. nDPI 4.2 prints some IPv6 addresses wrongly (with two
/// `::`): those are kept as printed, and match nothing.
fn endpoint(ip: &str, port: &str) -> String {
    match (ip.parse::<IpAddr>(), port.parse::<u16>()) {
        (Ok(a), Ok(p)) => SocketAddr::new(a, p).to_string(),
        _ if ip.contains(':') => format!("[{ip}]:{port}"),
        _ => format!("{ip}:{port}"),
    }
}

/// An endpoint as the verbose listing prints it (`[v6]:port`, `v4:port`).
fn printed_endpoint(s: &str) -> String {
    match s.rsplit_once(':') {
        Some((ip, port)) => endpoint(ip.trim_start_matches('[').trim_end_matches(']'), port),
        None => s.to_string(),
    }
}

/// (transport, source, destination, protocol name) -> the confidences of
/// such flows, in the order listed.
type Confidences = BTreeMap<(u8, String, String, String), Vec<String>>;

/// The flows of `ndpiReader -v 2`: lines `\tN\tTCP a <-> b [...][proto:
/// X/NAME][...][Confidence: C]...`.
fn parse_verbose(text: &str) -> Confidences {
    let mut out = Confidences::new();
    for line in text.lines() {
        let Some((n, rest)) = line.strip_prefix('\t').and_then(|r| r.split_once('\t')) else {
            continue;
        };
        if n.parse::<u64>().is_err() {
            continue;
        }
        let (proto, rest) = if let Some(r) = rest.strip_prefix("TCP ") {
            (6, r)
        } else if let Some(r) = rest.strip_prefix("UDP ") {
            (17, r)
        } else {
            continue;
        };
        let mut words = rest.splitn(4, ' ');
        let (Some(src), Some(_arrow), Some(dst), Some(tail)) =
            (words.next(), words.next(), words.next(), words.next())
        else {
            continue;
        };
        let field = |key: &str| {
            tail.split_once(key)
                .and_then(|(_, p)| p.split_once(']'))
                .map(|(p, _)| p)
        };
        let Some(proto_field) = field("[proto: ") else {
            panic!("no protocol in {line:?}");
        };
        // `91.126/TLS.Google`, or `GTP:7/HTTP` inside a tunnel.
        let name = proto_field.split_once('/').map_or(proto_field, |(_, n)| n);
        let confidence = field("[Confidence: ").unwrap_or("?");
        out.entry((
            proto,
            printed_endpoint(src),
            printed_endpoint(dst),
            name.to_string(),
        ))
        .or_default()
        .push(confidence.to_string());
    }
    out
}

/// Runs `ndpiReader` on `pcap` (its files in `dir`); its TCP and UDP flows.
fn ndpi(pcap: &Path, dir: &Path) -> Vec<NdpiFlow> {
    let csv = dir.join("flows.csv");
    let _ = std::fs::remove_file(&csv);
    let out = Command::new("ndpiReader")
        .arg("-t")
        .arg("-i")
        .arg(pcap)
        .arg("-C")
        .arg(&csv)
        .args(["-v", "2", "-q"])
        .stdin(Stdio::null())
        .output()
        .expect("run ndpiReader");
    assert!(
        out.status.success(),
        "ndpiReader on {}: {}\n{}",
        pcap.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let mut confidences = parse_verbose(&String::from_utf8_lossy(&out.stdout));
    let text = std::fs::read_to_string(&csv).unwrap_or_default();
    let mut flows = Vec::new();
    // #flow_id,protocol,first_seen,last_seen,duration,src_ip,src_port,
    // dst_ip,dst_port,ndpi_proto_num,ndpi_proto,server_name_sni,
    // c_to_s_pkts,c_to_s_bytes,c_to_s_goodput_bytes,s_to_c_pkts,
    // s_to_c_bytes,s_to_c_goodput_bytes,...
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split(',').collect();
        assert!(f.len() >= 18, "{}: short CSV line {line:?}", pcap.display());
        let proto: u8 = f[1].parse().unwrap_or(0);
        if proto != 6 && proto != 17 {
            continue;
        }
        let (src, dst) = (endpoint(f[5], f[6]), endpoint(f[7], f[8]));
        let name = f[10].to_string();
        let confidence = confidences
            .get_mut(&(proto, src.clone(), dst.clone(), name.clone()))
            .filter(|v| !v.is_empty())
            .map(|v| v.remove(0))
            .unwrap_or_else(|| panic!("{}: {line:?} is not listed", pcap.display()));
        flows.push(NdpiFlow {
            proto,
            src,
            dst,
            first: f[2]
                .parse()
                .unwrap_or_else(|_| panic!("first_seen in {line:?}")),
            name,
            confidence,
            // A comma in the SNI would shift the columns: then unknown.
            payload: f[14].parse().ok().zip(f[17].parse().ok()),
        });
    }
    flows
}

/// streamcap's connections in `pcap`, each with its label.
fn ours(pcap: &Path) -> Vec<OurFlow> {
    let report = Capture::builder()
        .build()
        .run_file(pcap, Apps::new(Classify::new(()).keep_results()))
        .unwrap_or_else(|e| panic!("{}: {e}", pcap.display()));
    report
        .handler
        .into_inner()
        .results()
        .iter()
        .map(|(id, c)| OurFlow {
            proto: id.proto,
            orig: SocketAddr::new(id.orig.0, id.orig.1).to_string(),
            resp: SocketAddr::new(id.resp.0, id.resp.1).to_string(),
            first: id.first.as_secs_f64(),
            app: c.app,
        })
        .collect()
}

/// What nDPI's protocol name says in our labels.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Theirs {
    /// nDPI's `Unknown`.
    Unknown,
    /// One of our labels.
    Label(App),
    /// A protocol outside our labels.
    Outside,
}

/// nDPI's protocol names (4.2) for our labels, on a transport (6, 17)
/// between two ports.
fn one_label(name: &str, proto: u8, ports: (u16, u16)) -> Option<App> {
    let tcp = proto == 6;
    let udp = proto == 17;
    Some(match name {
        "HTTP" | "HTTP_Proxy" | "HTTP_Connect" if tcp => App::Http,
        // TLS, and the implicit-TLS ports nDPI names apart (DNS over TLS,
        // SMTPS, IMAPS, POP3S).
        "TLS" | "DoH_DoT" | "SMTPS" | "IMAPS" | "POPS" if tcp => App::Tls,
        "SSH" if tcp => App::Ssh,
        "DNS" | "MDNS" | "LLMNR" => App::Dns,
        // The NetBIOS name service (our DNS label takes it); NetBIOS on 138
        // (datagrams) and 139 (sessions) is not.
        "NetBIOS" if udp && (ports.0 == 137 || ports.1 == 137) => App::Dns,
        "SMTP" if tcp => App::Smtp,
        "FTP_CONTROL" if tcp => App::Ftp,
        "IMAP" if tcp => App::Imap,
        "POP3" if tcp => App::Pop3,
        "QUIC" if udp => App::Quic,
        "SMBv1" | "SMBv23" if tcp => App::Smb,
        "RDP" if tcp => App::Rdp,
        "SIP" => App::Sip,
        "NTP" if udp => App::Ntp,
        "DHCP" if udp => App::Dhcp,
        "BitTorrent" => App::Bittorrent,
        "MQTT" if tcp => App::Mqtt,
        "Redis" if tcp => App::Redis,
        "PostgreSQL" if tcp => App::Postgresql,
        "MySQL" if tcp => App::Mysql,
        _ => return None,
    })
}

/// nDPI's `MASTER.APP` in our labels: the master protocol's label, else
/// the application's (`NetBIOS.SMBv23` is SMB).
fn label_of(name: &str, proto: u8, ports: (u16, u16)) -> Theirs {
    if name == "Unknown" {
        return Theirs::Unknown;
    }
    let (master, app) = name.split_once('.').unwrap_or((name, ""));
    match one_label(master, proto, ports).or_else(|| one_label(app, proto, ports)) {
        Some(a) => Theirs::Label(a),
        None => Theirs::Outside,
    }
}

fn port(endpoint: &str) -> u16 {
    endpoint
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or(0)
}

/// Where a matched flow goes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    /// Compared, same label.
    Agree,
    /// Compared, different labels.
    Disagree,
    /// nDPI guesses one of our labels by port or address, streamcap says
    /// `unknown`: neither knows from content.
    Guess,
    /// Both say unknown.
    BothUnknown,
    /// nDPI's protocol is outside our labels, streamcap gives one.
    OutsideLabelled,
    /// nDPI's protocol is outside our labels, streamcap says `unknown`.
    Outside,
}

/// One matched flow.
#[derive(Clone, Debug)]
struct Matched {
    capture: String,
    /// `a <-> b`, the endpoints sorted.
    flow: String,
    ours: App,
    ndpi: NdpiFlow,
    theirs: Theirs,
    class: Class,
}

/// What the comparison of the corpus came to.
#[derive(Default)]
struct Measured {
    flows: Vec<Matched>,
    /// Per capture: connections only streamcap has, flows only nDPI has.
    unmatched: BTreeMap<String, (usize, usize)>,
    /// streamcap connections folded into an earlier one's nDPI flow.
    merged: usize,
}

type Key = (u8, String, String);

fn key(proto: u8, a: &str, b: &str) -> Key {
    if a <= b {
        (proto, a.into(), b.into())
    } else {
        (proto, b.into(), a.into())
    }
}

/// Matches one capture's flows and classifies them.
fn compare(capture: &str, theirs: Vec<NdpiFlow>, mine: Vec<OurFlow>, m: &mut Measured) {
    let mut groups: BTreeMap<Key, (Vec<NdpiFlow>, Vec<OurFlow>)> = BTreeMap::new();
    for t in theirs {
        groups
            .entry(key(t.proto, &t.src, &t.dst))
            .or_default()
            .0
            .push(t);
    }
    for o in mine {
        groups
            .entry(key(o.proto, &o.orig, &o.resp))
            .or_default()
            .1
            .push(o);
    }
    for ((proto, a, b), (mut t, mut o)) in groups {
        t.sort_by(|x, y| x.first.total_cmp(&y.first));
        o.sort_by(|x, y| x.first.total_cmp(&y.first));
        if t.is_empty() {
            m.unmatched.entry(capture.to_string()).or_default().0 += o.len();
            continue;
        }
        // Each connection to the last nDPI flow started before it.
        let mut mine_of: Vec<Vec<&OurFlow>> = vec![Vec::new(); t.len()];
        for c in &o {
            let i = t
                .iter()
                .rposition(|f| f.first <= c.first + TIME_SLACK)
                .unwrap_or(0);
            mine_of[i].push(c);
        }
        for (f, cs) in t.iter().zip(&mine_of) {
            if cs.is_empty() {
                m.unmatched.entry(capture.to_string()).or_default().1 += 1;
                continue;
            }
            m.merged += cs.len() - 1;
            // Several connections: the label of the first that has one.
            let ours = cs
                .iter()
                .map(|c| c.app)
                .find(|&x| x != App::Unknown)
                .unwrap_or(App::Unknown);
            let theirs = label_of(&f.name, proto, (port(&a), port(&b)));
            let class = match theirs {
                Theirs::Outside if ours == App::Unknown => Class::Outside,
                Theirs::Outside => Class::OutsideLabelled,
                Theirs::Unknown if ours == App::Unknown => Class::BothUnknown,
                Theirs::Unknown => Class::Disagree,
                Theirs::Label(x) if x == ours => Class::Agree,
                Theirs::Label(_) if ours == App::Unknown && !f.by_content() => Class::Guess,
                Theirs::Label(_) => Class::Disagree,
            };
            m.flows.push(Matched {
                capture: capture.to_string(),
                flow: format!("{a} <-> {b}"),
                ours,
                ndpi: f.clone(),
                theirs,
                class,
            });
        }
    }
}

/// The section "Against nDPI" of docs/apps.md, cut into its `###`
/// subsections.
fn page() -> BTreeMap<String, String> {
    let path = repo().join("docs/apps.md");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let section = text
        .split("\n## ")
        .find(|s| s.starts_with(SECTION))
        .unwrap_or_else(|| panic!("a \"## {SECTION}\" section in docs/apps.md"));
    section
        .split("\n### ")
        .skip(1)
        .map(|s| {
            let (title, body) = s.split_once('\n').unwrap_or((s, ""));
            (title.trim().to_string(), body.to_string())
        })
        .collect()
}

/// The rows of the tables of a subsection (cells trimmed, code quotes
/// removed), header and rule lines left out.
fn rows(page: &BTreeMap<String, String>, title: &str) -> Vec<Vec<String>> {
    let body = page
        .get(title)
        .unwrap_or_else(|| panic!("a \"### {title}\" subsection under \"## {SECTION}\""));
    let mut out = Vec::new();
    let mut header = true;
    for line in body.lines().map(str::trim) {
        if !line.starts_with('|') {
            header = true;
            continue;
        }
        if header {
            if line.starts_with("|-") || line.starts_with("| -") || line.starts_with("|:") {
                header = false;
            }
            continue;
        }
        let cells: Vec<String> = line
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().trim_matches('`').to_string())
            .collect();
        out.push(cells);
    }
    out
}

/// The cause that says nDPI saw no payload in the flow (checked).
const NO_PAYLOAD: &str = "no-payload";

/// The subsections listing flows, and the classes each lists.
const LISTS: [(&str, Class); 3] = [
    ("Disagreements", Class::Disagree),
    ("Guesses", Class::Guess),
    ("Outside our labels", Class::OutsideLabelled),
];

/// How a listed flow is grouped: (capture, streamcap, nDPI master,
/// confidence, no payload).
type Group = (String, String, String, String, bool);

fn group_of(f: &Matched) -> Group {
    (
        f.capture.clone(),
        f.ours.name().to_string(),
        f.ndpi.master().to_string(),
        f.ndpi.confidence.clone(),
        f.ndpi.no_payload(),
    )
}

/// A row of a flow list: one flow, or a count of flows of a group.
struct Row {
    group: Group,
    flow: Option<String>,
    count: usize,
    cause: String,
}

/// The rows of a flow list: capture, flow (or `N flows`), streamcap,
/// nDPI, confidence, cause.
fn list_rows(page: &BTreeMap<String, String>, title: &str, causes: &BTreeSet<String>) -> Vec<Row> {
    rows(page, title)
        .into_iter()
        .map(|r| {
            let [capture, flow, ours, ndpi, confidence, cause, ..] = r.as_slice() else {
                panic!(
                    "{title}: a row of capture, flow, streamcap, nDPI, confidence, cause: {r:?}"
                );
            };
            assert!(causes.contains(cause), "{title}: unknown cause in {r:?}");
            let count = flow
                .strip_suffix(" flows")
                .or_else(|| flow.strip_suffix(" flow"));
            let (flow, count) = match count {
                Some(n) => (
                    None,
                    n.parse()
                        .unwrap_or_else(|_| panic!("{title}: bad count in {r:?}")),
                ),
                None => (Some(flow.clone()), 1),
            };
            Row {
                group: (
                    capture.clone(),
                    ours.clone(),
                    ndpi.clone(),
                    confidence.clone(),
                    cause == NO_PAYLOAD,
                ),
                flow,
                count,
                cause: cause.clone(),
            }
        })
        .collect()
}

/// Checks a flow list against the measured flows of its class; what is
/// wrong goes to `wrong`.
fn check_list(title: &str, rows: &[Row], flows: &[&Matched], wrong: &mut Vec<String>) {
    // Flows listed one by one.
    let mut listed: BTreeMap<(String, String), &Row> = BTreeMap::new();
    for r in rows {
        if let Some(f) = &r.flow {
            if listed.insert((r.group.0.clone(), f.clone()), r).is_some() {
                wrong.push(format!("{title}: {} {f} is listed twice", r.group.0));
            }
        }
    }
    let mut counted: BTreeMap<Group, usize> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    for f in flows {
        let k = (f.capture.clone(), f.flow.clone());
        match listed.get(&k) {
            Some(r) => {
                seen.insert(k.clone());
                if r.group != group_of(f) {
                    wrong.push(format!(
                        "{title}: {} {}: measured (streamcap, nDPI, confidence, no payload) {:?}, the page says {:?} ({})",
                        f.capture,
                        f.flow,
                        (&group_of(f).1, &group_of(f).2, &group_of(f).3, group_of(f).4),
                        (&r.group.1, &r.group.2, &r.group.3, r.group.4),
                        r.cause
                    ));
                }
            }
            None => *counted.entry(group_of(f)).or_default() += 1,
        }
    }
    for k in listed.keys().filter(|k| !seen.contains(*k)) {
        wrong.push(format!("{title}: {} {} is no longer measured", k.0, k.1));
    }
    let mut want: BTreeMap<Group, usize> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.flow.is_none()) {
        *want.entry(r.group.clone()).or_default() += r.count;
    }
    let groups: BTreeSet<&Group> = counted.keys().chain(want.keys()).collect();
    for g in groups {
        let (got, exp) = (
            counted.get(g).copied().unwrap_or(0),
            want.get(g).copied().unwrap_or(0),
        );
        if got != exp {
            wrong.push(format!(
                "{title}: {} streamcap {} nDPI {} ({}){}: {got} flows measured, the page counts {exp}",
                g.0,
                g.1,
                g.2,
                g.3,
                if g.4 { ", no payload" } else { "" }
            ));
        }
    }
}

/// Per label: (flows either tool gives that label, flows both give it).
fn per_label(m: &Measured) -> BTreeMap<&'static str, (usize, usize)> {
    let mut out: BTreeMap<&'static str, (usize, usize)> = BTreeMap::new();
    for f in m
        .flows
        .iter()
        .filter(|f| matches!(f.class, Class::Agree | Class::Disagree))
    {
        let theirs = match f.theirs {
            Theirs::Label(a) => a,
            _ => App::Unknown,
        };
        let mut labels = vec![f.ours, theirs];
        labels.dedup();
        for l in labels.into_iter().filter(|&l| l != App::Unknown) {
            let e = out.entry(l.name()).or_default();
            e.0 += 1;
            e.1 += usize::from(f.class == Class::Agree);
        }
    }
    out
}

/// The counts of the "Flows" table, by name.
fn flow_counts(m: &Measured) -> BTreeMap<&'static str, usize> {
    let n = |c: Class| m.flows.iter().filter(|f| f.class == c).count();
    let (agree, disagree) = (n(Class::Agree), n(Class::Disagree));
    BTreeMap::from([
        ("compared", agree + disagree),
        ("agree", agree),
        ("disagree", disagree),
        ("nDPI guesses, streamcap unknown", n(Class::Guess)),
        ("both unknown", n(Class::BothUnknown)),
        (
            "nDPI outside our labels, streamcap unknown",
            n(Class::Outside),
        ),
        (
            "nDPI outside our labels, streamcap labels",
            n(Class::OutsideLabelled),
        ),
        (
            "streamcap connections in an earlier one's nDPI flow",
            m.merged,
        ),
        (
            "streamcap only",
            m.unmatched.values().map(|u| u.0).sum::<usize>(),
        ),
        (
            "nDPI only",
            m.unmatched.values().map(|u| u.1).sum::<usize>(),
        ),
    ])
}

/// The measured tables, as the page writes them (causes `?`): flows
/// without payload counted, others listed one by one up to 3 of a group,
/// counted beyond.
fn draft(m: &Measured) -> String {
    let mut s = String::new();
    s.push_str("| label | flows | agree |\n|---|---:|---:|\n");
    for (l, (n, a)) in per_label(m) {
        s.push_str(&format!("| `{l}` | {n} | {a} |\n"));
    }
    s.push_str("\n| flows | count |\n|---|---:|\n");
    for (k, v) in flow_counts(m) {
        s.push_str(&format!("| {k} | {v} |\n"));
    }
    for (title, class) in LISTS {
        s.push_str(&format!(
            "\n### {title}\n\n| capture | flow | streamcap | nDPI | confidence | cause |\n|---|---|---|---|---|---|\n"
        ));
        let mut groups: BTreeMap<Group, Vec<&Matched>> = BTreeMap::new();
        for f in m.flows.iter().filter(|f| f.class == class) {
            groups.entry(group_of(f)).or_default().push(f);
        }
        for (g, fs) in groups {
            let cause = if g.4 { NO_PAYLOAD } else { "?" };
            let cells = |flow: &str| {
                format!(
                    "| `{}` | {flow} | `{}` | `{}` | {} | `{cause}` |\n",
                    g.0, g.1, g.2, g.3
                )
            };
            if g.4 || fs.len() > 3 {
                let n = fs.len();
                s.push_str(&cells(&format!(
                    "{n} flow{}",
                    if n == 1 { "" } else { "s" }
                )));
            } else {
                for f in fs {
                    s.push_str(&cells(&f.flow));
                }
            }
        }
    }
    s.push_str("\n### Unmatched\n\n| capture | streamcap only | nDPI only | cause |\n|---|---:|---:|---|\n");
    for (c, (a, b)) in &m.unmatched {
        s.push_str(&format!("| `{c}` | {a} | {b} | `?` |\n"));
    }
    s
}

#[test]
fn corpus_flows_agree_with_ndpi_but_for_documented_causes() {
    let Some(version) = ndpi_42() else { return };
    let Some(dir) = corpus_dir() else { return };
    let started = Instant::now();
    let work = tempfile::tempdir().expect("a temporary directory");
    let files = captures(&dir);
    let mut m = Measured::default();
    for f in &files {
        let rel = f.strip_prefix(&dir).unwrap_or(f).display().to_string();
        let theirs = ndpi(f, work.path());
        compare(&rel, theirs, ours(f), &mut m);
    }
    if let Some(path) = std::env::var_os("STREAMCAP_NDPI_DRAFT") {
        std::fs::write(&path, draft(&m)).expect("write the draft");
    }

    let page = page();
    let mut wrong = Vec::new();
    let causes: BTreeSet<String> = rows(&page, "Causes")
        .into_iter()
        .map(|r| r.first().cloned().unwrap_or_default())
        .collect();
    assert!(
        causes.contains(NO_PAYLOAD),
        "the cause {NO_PAYLOAD} is on the page"
    );

    // Every flow of the lists, and nothing else.
    for (title, class) in LISTS {
        let rows = list_rows(&page, title, &causes);
        let flows: Vec<&Matched> = m.flows.iter().filter(|f| f.class == class).collect();
        check_list(title, &rows, &flows, &mut wrong);
    }
    // Flows only one tool has, per capture.
    let unmatched: BTreeMap<String, (usize, usize)> = rows(&page, "Unmatched")
        .into_iter()
        .map(|r| {
            let [capture, ours, theirs, cause, ..] = r.as_slice() else {
                panic!("Unmatched: a row of capture, streamcap only, nDPI only, cause: {r:?}");
            };
            assert!(causes.contains(cause), "Unmatched: unknown cause in {r:?}");
            let n = |s: &str| -> usize {
                s.parse()
                    .unwrap_or_else(|_| panic!("Unmatched: bad count in {r:?}"))
            };
            (capture.clone(), (n(ours), n(theirs)))
        })
        .collect();
    if unmatched != m.unmatched {
        wrong.push(format!(
            "flows only one tool has, per capture (streamcap, nDPI): measured {:?}, the page says {unmatched:?}",
            m.unmatched
        ));
    }
    // The figures.
    let labels: BTreeMap<String, (usize, usize)> = rows(&page, "Agreement")
        .into_iter()
        .filter(|r| r.len() == 3)
        .map(|r| {
            let n = |i: usize| -> usize {
                r[i].parse()
                    .unwrap_or_else(|_| panic!("bad figures row {r:?}"))
            };
            (r[0].clone(), (n(1), n(2)))
        })
        .collect();
    let got_labels: BTreeMap<String, (usize, usize)> = per_label(&m)
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    if labels != got_labels {
        wrong.push(format!(
            "per-label figures (flows, agree): measured {got_labels:?}, the page says {labels:?}"
        ));
    }
    let counts: BTreeMap<String, usize> = rows(&page, "Agreement")
        .into_iter()
        .filter(|r| r.len() == 2)
        .map(|r| {
            (
                r[0].clone(),
                r[1].parse()
                    .unwrap_or_else(|_| panic!("bad count row {r:?}")),
            )
        })
        .collect();
    let got_counts: BTreeMap<String, usize> = flow_counts(&m)
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    if counts != got_counts {
        wrong.push(format!(
            "flow counts: measured {got_counts:?}, the page says {counts:?}"
        ));
    }

    let c = flow_counts(&m);
    let share = c["agree"] as f64 / c["compared"].max(1) as f64;
    {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "{version}: {} captures; {} of {} flows both know agree ({:.2} %); {} nDPI guesses \
             where streamcap says unknown; per label (flows, agree) {got_labels:?}; {:.0} s",
            files.len(),
            c["agree"],
            c["compared"],
            share * 100.0,
            c["nDPI guesses, streamcap unknown"],
            started.elapsed().as_secs_f64()
        );
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(
        share >= MIN_AGREEMENT,
        "{} of {} flows agree ({:.2} %): below {} %",
        c["agree"],
        c["compared"],
        share * 100.0,
        MIN_AGREEMENT * 100.0
    );
}
