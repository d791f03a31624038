//! Labelled application traffic for testing an L7 classifier.
//!
//! [`generate`] builds, from an [`AppsConfig`], an [`AppsTrace`]: a
//! capture of flows of every [`Label`] (HTTP, TLS, SSH, DNS, SMTP, FTP,
//! IMAP, POP3, QUIC, SMB, RDP, SIP, NTP, DHCP, BitTorrent, MQTT, Redis,
//! PostgreSQL, MySQL) plus flows of no protocol (`unknown`: random bytes
//! over TCP and UDP, text lines and JSON of a made-up protocol), and the
//! **truth**: one [`AppFlow`] per flow.
//!
//! # The flows
//!
//! Each flow carries the first messages of its protocol in both
//! directions, in the order and format real clients and servers send them
//! (server-first protocols start with the server's greeting; SSH sometimes
//! with either banner). Some flows hold a second protocol after the first:
//! SMTP `STARTTLS` and FTP `AUTH TLS` are followed by a TLS ClientHello,
//! RDP's connection confirm by a TLS handshake; their label stays the
//! first protocol's. QUIC packets have real v1 long headers (Initial padded
//! to a datagram of 1200 bytes or more, Handshake packets coalesced) but
//! random protected payloads: the Initial cannot be decrypted, so no SNI is
//! expected from it. [`AppFlow::variant`] names the scenario of each flow.
//!
//! A share [`AppsConfig::nonstandard`] of the labelled flows (30 % by
//! default, rounded to whole flows) use a **non-standard server port**: half a
//! random port in 1024–32767 that is no label's well-known port, half the
//! well-known port of another label over the same transport (SSH on 443,
//! HTTP on 25, …), so that a port-based classifier fails on them. DHCP
//! always uses its own ports. `unknown` flows use another label's
//! well-known port half of the time (random bytes on 443, text on 80).
//! Client ports are in 32768–60999 (except DHCP's 67/68 and NTP clients
//! that use 123).
//!
//! With enough flows (at least 41), every label appears on a standard
//! port and (but DHCP) on a non-standard one, and each kind of `unknown`
//! flow (random and text, over TCP and UDP) appears: these flows are
//! placed first, then the others are drawn at random (HTTP and TLS twice
//! as often as most labels, DNS one and a half times), and the order is
//! shuffled. With a small non-standard share the forced non-standard flows
//! may exceed it; with 0 there are none.
//!
//! # The truth
//!
//! [`AppsTrace::truth_jsonl`] writes one [`AppFlow`] per line, in flow id
//! order: the 5-tuple, the expected label, whether the server port is
//! standard for it, what a port-based classifier would say, and the
//! details a classifier should extract: TLS SNI and the ALPN lists
//! (`tls`), SSH banners (`ssh`), the DNS query name (`dns`) and the HTTP
//! Host header (`http`). Details are those of the labelled protocol only
//! (not of a TLS hello after STARTTLS, nor RDP's).
//!
//! Random payloads never hold a protocol marker (`HTTP/`, `SSH-`,
//! `\xfeSMB`, the DHCP cookie, …) nor first bytes that look like a
//! protocol header (TLS record `16 03`, TPKT `03 00`, a length prefix equal
//! to the message length, a QUIC long header with a known version, a
//! 48-byte UDP datagram, …): each message is redrawn until it holds none.
//!
//! Everything is deterministic: the same config gives byte-identical pcap
//! and truth.

mod dialog;
mod infra;
mod label;
mod secure;
mod services;
mod text;
mod unknown;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;

use serde::{Deserialize, Serialize};

use self::dialog::{Ctx, Dialog};
pub use self::label::Label;
use crate::capture::{Capture, Direction, FlowGenerator};
use crate::prng::SplitMix64;
use crate::tcp::{Close, TcpConversation};
use crate::truth::Protocol;
use crate::udp::UdpFlow;

/// Time origin of the trace: 2024-05-01T12:00:00Z, in ns.
pub const APPS_START_NS: u64 = 1_714_564_800_000_000_000;

/// Options of [`generate`]. [`Default`] gives the acceptance trace.
#[derive(Clone, Debug, PartialEq)]
pub struct AppsConfig {
    /// Seed of every random choice.
    pub seed: u64,
    /// Number of flows.
    pub flows: usize,
    /// Fraction of the labelled flows (not `unknown`, not DHCP) on a
    /// non-standard server port (rounded to a whole number of flows).
    pub nonstandard: f64,
    /// Fraction of flows over IPv6 (DHCP is always IPv4).
    pub ipv6: f64,
}

impl Default for AppsConfig {
    /// Seed 1, 600 flows, 30 % on non-standard ports, 10 % IPv6.
    fn default() -> Self {
        Self {
            seed: 1,
            flows: 600,
            nonstandard: 0.3,
            ipv6: 0.1,
        }
    }
}

/// What a classifier should extract from a flow, when its protocol has it.
/// Absent fields are left out of the JSON.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppDetails {
    /// `tls`: the ClientHello's server name (absent when the hello has no
    /// SNI extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sni: Option<String>,
    /// `tls`: the ALPN protocols the ClientHello offers, in order (empty
    /// when it has no ALPN extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpn: Option<Vec<String>>,
    /// `tls`: the protocol a TLS 1.2 ServerHello selects (TLS 1.3 hides it
    /// in encrypted extensions, so it is never set there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpn_server: Option<String>,
    /// `ssh`: the client's identification string, without CR LF.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_client_banner: Option<String>,
    /// `ssh`: the server's identification string, without CR LF.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_server_banner: Option<String>,
    /// `dns`: the query name (no trailing dot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns_query: Option<String>,
    /// `http`: the request's Host header value (with the port when it is
    /// not 80).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_host: Option<String>,
}

/// One flow of the trace: a line of the truth.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppFlow {
    /// Flow id (index in the capture, as in [`FlowTruth::id`](crate::FlowTruth::id)).
    pub flow: usize,
    /// Transport protocol.
    pub proto: Protocol,
    /// Initiator endpoint (TCP client / first UDP sender).
    pub client: SocketAddr,
    /// Responder endpoint.
    pub server: SocketAddr,
    /// The label the classifier should give.
    pub label: Label,
    /// The scenario within the label (for example `tls13-grease`,
    /// `starttls`, `smb1-negotiate+smb2-negotiate`, `random-tcp`).
    pub variant: String,
    /// The server port is one of the label's well-known ports
    /// ([`Label::standard_ports`]); always false for `unknown`.
    pub standard_port: bool,
    /// What a port-based classifier would say: the label whose well-known
    /// port the server port is, or `null`.
    pub port_label: Option<Label>,
    /// Details the classifier should extract.
    #[serde(flatten)]
    pub details: AppDetails,
}

/// Counts describing a generated trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AppsStats {
    /// Flows in the capture.
    pub flows: usize,
    /// TCP flows.
    pub tcp_flows: usize,
    /// Flows per label.
    pub per_label: BTreeMap<Label, usize>,
    /// Flows per label on a non-standard port.
    pub nonstandard_per_label: BTreeMap<Label, usize>,
    /// Labelled (not `unknown`) flows.
    pub labelled: usize,
    /// Labelled flows on a non-standard port.
    pub nonstandard: usize,
    /// Flows whose port-based label differs from the truth's (non-standard
    /// labelled flows and `unknown` flows on a well-known port).
    pub port_misleading: usize,
    /// Pcap records.
    pub packets: usize,
}

/// A generated classifier test trace.
#[derive(Clone, Debug)]
pub struct AppsTrace {
    /// The flows (packets and per-flow truth with the intended streams).
    pub capture: Capture,
    /// One entry per flow, in id order.
    pub flows: Vec<AppFlow>,
}

impl AppsTrace {
    /// The pcap file as bytes (Ethernet, µs timestamps).
    pub fn pcap_bytes(&self) -> Vec<u8> {
        self.capture.to_pcap_bytes()
    }

    /// The truth as JSON lines, one [`AppFlow`] per line.
    pub fn truth_jsonl(&self) -> String {
        let mut s = String::new();
        for f in &self.flows {
            // Plain data with string keys: serialization cannot fail.
            s.push_str(&serde_json::to_string(f).unwrap_or_default());
            s.push('\n');
        }
        s
    }

    /// Parses a document written by [`truth_jsonl`](Self::truth_jsonl).
    ///
    /// # Errors
    /// The first JSON error.
    pub fn parse_truth(text: &str) -> Result<Vec<AppFlow>, serde_json::Error> {
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(serde_json::from_str)
            .collect()
    }

    /// Counts of the trace.
    pub fn stats(&self) -> AppsStats {
        let mut st = AppsStats {
            flows: self.flows.len(),
            packets: self.capture.flows().iter().map(|f| f.packets.len()).sum(),
            ..AppsStats::default()
        };
        for f in &self.flows {
            *st.per_label.entry(f.label).or_default() += 1;
            if f.proto == Protocol::Tcp {
                st.tcp_flows += 1;
            }
            if f.label != Label::Unknown {
                st.labelled += 1;
                if !f.standard_port {
                    st.nonstandard += 1;
                    *st.nonstandard_per_label.entry(f.label).or_default() += 1;
                }
            }
            if f.port_label != Some(f.label)
                && (f.label != Label::Unknown || f.port_label.is_some())
            {
                st.port_misleading += 1;
            }
        }
        st
    }

    /// Writes the pcap to `pcap` and, when given, the truth to `truth`.
    ///
    /// # Errors
    /// I/O errors creating or writing the files.
    pub fn write_files(&self, pcap: &Path, truth: Option<&Path>) -> io::Result<()> {
        let f = BufWriter::new(File::create(pcap)?);
        self.capture.write_pcap(f)?.flush()?;
        if let Some(t) = truth {
            std::fs::write(t, self.truth_jsonl())?;
        }
        Ok(())
    }
}

/// What a flow is: a labelled protocol, or one of the unknown kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    App(Label),
    Random { udp: bool },
    Text { udp: bool },
}

impl Kind {
    fn label(self) -> Label {
        match self {
            Kind::App(l) => l,
            _ => Label::Unknown,
        }
    }
}

/// Weights of the kinds among randomly drawn flows.
const WEIGHTS: &[(Kind, u64)] = &[
    (Kind::App(Label::Http), 8),
    (Kind::App(Label::Tls), 8),
    (Kind::App(Label::Dns), 6),
    (Kind::App(Label::Ssh), 4),
    (Kind::App(Label::Smtp), 4),
    (Kind::App(Label::Ftp), 4),
    (Kind::App(Label::Imap), 4),
    (Kind::App(Label::Pop3), 4),
    (Kind::App(Label::Quic), 4),
    (Kind::App(Label::Smb), 4),
    (Kind::App(Label::Rdp), 4),
    (Kind::App(Label::Sip), 4),
    (Kind::App(Label::Ntp), 4),
    (Kind::App(Label::Dhcp), 4),
    (Kind::App(Label::Bittorrent), 4),
    (Kind::App(Label::Mqtt), 4),
    (Kind::App(Label::Redis), 4),
    (Kind::App(Label::Postgresql), 4),
    (Kind::App(Label::Mysql), 4),
    (Kind::Random { udp: false }, 4),
    (Kind::Random { udp: true }, 4),
    (Kind::Text { udp: false }, 4),
    (Kind::Text { udp: true }, 1),
];

fn draw(rng: &mut SplitMix64) -> Kind {
    let total: u64 = WEIGHTS.iter().map(|(_, w)| w).sum();
    let mut x = rng.below(total);
    for &(k, w) in WEIGHTS {
        if x < w {
            return k;
        }
        x -= w;
    }
    Kind::App(Label::Http)
}

/// `true` with probability `p` (never for 0 or NaN, always for 1).
fn chance(rng: &mut SplitMix64, p: f64) -> bool {
    let x = (rng.next_u64() >> 11) as f64;
    p > 0.0 && x < p * (1u64 << 53) as f64
}

/// The transport of a flow of `kind`.
fn transport(kind: Kind, rng: &mut SplitMix64) -> Protocol {
    let udp = match kind {
        Kind::Random { udp } | Kind::Text { udp } => udp,
        Kind::App(Label::Quic | Label::Ntp | Label::Dhcp) => true,
        Kind::App(Label::Dns) => !rng.chance(3, 20),
        Kind::App(Label::Sip) => !rng.chance(1, 5),
        Kind::App(Label::Bittorrent) => rng.chance(9, 20),
        Kind::App(_) => false,
    };
    if udp {
        Protocol::Udp
    } else {
        Protocol::Tcp
    }
}

/// A server port: standard for `label`, or not (another label's
/// well-known port over `proto`, or a port in 1024..=32767 that is no
/// label's). `Unknown` is never standard.
fn server_port(label: Label, proto: Protocol, nonstandard: bool, rng: &mut SplitMix64) -> u16 {
    let own = label.standard_ports(proto);
    if !nonstandard && !own.is_empty() {
        return if rng.chance(7, 10) {
            own[0]
        } else {
            *rng.pick(own)
        };
    }
    let others: Vec<u16> = Label::well_known(proto)
        .into_iter()
        .filter(|&(_, l)| l != label)
        .map(|(p, _)| p)
        .collect();
    if rng.chance(1, 2) && !others.is_empty() {
        return *rng.pick(&others);
    }
    loop {
        let p = rng.range(1024, 32767) as u16;
        if Label::by_port(Protocol::Tcp, p).is_none() && Label::by_port(Protocol::Udp, p).is_none()
        {
            return p;
        }
    }
}

fn client_ip(i: usize, v6: bool) -> IpAddr {
    let h = i as u32 + 1;
    if v6 {
        IpAddr::V6(Ipv6Addr::new(
            0x2001,
            0xdb8,
            0xa,
            0,
            0,
            0,
            (h >> 16) as u16,
            h as u16,
        ))
    } else {
        IpAddr::V4(Ipv4Addr::new(
            10,
            64 + (h >> 16) as u8,
            (h >> 8) as u8,
            h as u8,
        ))
    }
}

fn server_ip(rng: &mut SplitMix64, v6: bool) -> IpAddr {
    let k = rng.range(1, 250);
    if v6 {
        IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0x5, 0, 0, 0, 0, k as u16))
    } else if rng.chance(1, 2) {
        IpAddr::V4(Ipv4Addr::new(198, 51, 100, k as u8))
    } else {
        IpAddr::V4(Ipv4Addr::new(203, 0, 113, k as u8))
    }
}

fn build(kind: Kind, ctx: &mut Ctx, rng: &mut SplitMix64) -> Dialog {
    match kind {
        Kind::Random { udp } => unknown::random(rng, udp),
        Kind::Text { udp } => unknown::text(rng, udp),
        Kind::App(l) => match l {
            Label::Http => text::http(ctx, rng),
            Label::Tls => secure::tls(ctx, rng),
            Label::Ssh => secure::ssh(ctx, rng),
            Label::Dns => infra::dns(ctx, rng),
            Label::Smtp => text::smtp(ctx, rng),
            Label::Ftp => text::ftp(ctx, rng),
            Label::Imap => text::imap(ctx, rng),
            Label::Pop3 => text::pop3(ctx, rng),
            Label::Quic => secure::quic(ctx, rng),
            Label::Smb => infra::smb(ctx, rng),
            Label::Rdp => secure::rdp(ctx, rng),
            Label::Sip => text::sip(ctx, rng),
            Label::Ntp => infra::ntp(ctx, rng),
            Label::Dhcp => infra::dhcp(ctx, rng),
            Label::Bittorrent => services::bittorrent(ctx, rng),
            Label::Mqtt => services::mqtt(ctx, rng),
            Label::Redis => text::redis(ctx, rng),
            Label::Postgresql => services::postgresql(ctx, rng),
            Label::Mysql => services::mysql(ctx, rng),
            Label::Unknown => unknown::random(rng, ctx.proto == Protocol::Udp),
        },
    }
}

/// The kind of every flow and whether it is on a non-standard port: first
/// one flow per label on a standard port and one (if the label moves) on a
/// non-standard one, one per unknown kind; then random draws; then the
/// non-standard quota is filled from the drawn labelled flows, and the
/// order shuffled.
fn plan(config: &AppsConfig, rng: &mut SplitMix64) -> Vec<(Kind, bool)> {
    let n = config.flows;
    let mut slots: Vec<(Kind, bool)> = Vec::new();
    for l in Label::ALL.into_iter().filter(|&l| l != Label::Unknown) {
        slots.push((Kind::App(l), false));
        if l.moves_port() && config.nonstandard > 0.0 {
            slots.push((Kind::App(l), true));
        }
    }
    for udp in [false, true] {
        slots.push((Kind::Random { udp }, false));
        slots.push((Kind::Text { udp }, false));
    }
    slots.truncate(n);
    let forced = slots.len();
    while slots.len() < n {
        slots.push((draw(rng), false));
    }
    let movable = |k: Kind| k.label().moves_port();
    let labelled = slots
        .iter()
        .filter(|(k, _)| k.label() != Label::Unknown)
        .count();
    let target = (config.nonstandard.clamp(0.0, 1.0) * labelled as f64).round() as usize;
    let have = slots.iter().filter(|(_, ns)| *ns).count();
    let mut free: Vec<usize> = (forced..n).filter(|&i| movable(slots[i].0)).collect();
    rng.shuffle(&mut free);
    let mut spare: Vec<usize> = (0..forced)
        .filter(|&i| movable(slots[i].0) && !slots[i].1)
        .collect();
    rng.shuffle(&mut spare);
    free.extend(spare);
    for i in free.into_iter().take(target.saturating_sub(have)) {
        slots[i].1 = true;
    }
    rng.shuffle(&mut slots);
    slots
}

/// Generates the trace described by `config`. Flows start spread over
/// `flows × 20 ms` from [`APPS_START_NS`] and interleave in the capture.
pub fn generate(config: &AppsConfig) -> AppsTrace {
    let mut rng = SplitMix64::new(config.seed);
    let slots = plan(config, &mut rng);
    let span_ns = (config.flows as u64).max(1) * 20_000_000;
    let mut capture = Capture::new();
    let mut flows = Vec::with_capacity(slots.len());
    for (i, (kind, nonstandard)) in slots.into_iter().enumerate() {
        let mut r = rng.fork();
        let label = kind.label();
        let proto = transport(kind, &mut r);
        let v6 = chance(&mut r, config.ipv6) && label != Label::Dhcp;
        let port = server_port(label, proto, nonstandard, &mut r);
        let mut ctx = Ctx {
            proto,
            client: SocketAddr::new(client_ip(i, v6), r.range(32768, 60999) as u16),
            server: SocketAddr::new(server_ip(&mut r, v6), port),
        };
        let dialog = build(kind, &mut ctx, &mut r);
        let start_ns = APPS_START_NS + r.below(span_ns);
        let step_ns = r.range(50_000, 5_000_000);
        let seed = r.next_u64();
        let flow = match proto {
            Protocol::Tcp => {
                let close = match r.below(10) {
                    0..=5 => Close::Fin {
                        first: Direction::ToServer,
                    },
                    6..=8 => Close::Fin {
                        first: Direction::ToClient,
                    },
                    _ => Close::Rst {
                        from: Direction::ToServer,
                    },
                };
                let mut conv = TcpConversation::new(ctx.client, ctx.server)
                    .seed(seed)
                    .timing(start_ns, step_ns)
                    .mss(*r.pick(&[536, 1200, 1380, 1460]))
                    .close(close)
                    .label(label.name());
                for (dir, bytes) in dialog.msgs {
                    conv = conv.send(dir, bytes);
                }
                conv.generate()
            }
            Protocol::Udp => {
                let mut f = UdpFlow::new(ctx.client, ctx.server)
                    .seed(seed)
                    .timing(start_ns, step_ns)
                    .label(label.name());
                for (dir, bytes) in dialog.msgs {
                    f = f.datagram(dir, bytes);
                }
                f.generate()
            }
        };
        let id = capture.add_generated(flow);
        let standard_port = label.standard_ports(proto).contains(&ctx.server.port());
        flows.push(AppFlow {
            flow: id,
            proto,
            client: ctx.client,
            server: ctx.server,
            label,
            variant: dialog.variant,
            standard_port,
            port_label: Label::by_port(proto, ctx.server.port()),
            details: dialog.details,
        });
    }
    AppsTrace { capture, flows }
}
