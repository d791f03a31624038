//! The application model of the NIDS trace: which applications there are,
//! which carriers each can hold, and conversations as lists of messages with
//! the positions of the signatures planted in them (the messages themselves
//! are written by `dialogs`). Segmentation and impairments are decided
//! later (`plan`).

use crate::capture::Direction;
use crate::prng::SplitMix64;

use super::dialogs::{dns, ftp, http, smtp, ssh, tcp_other, tls, udp_other};
use super::signature::{Carrier, Signature, MARKER};

/// The application of a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum App {
    Http,
    Smtp,
    Ftp,
    Tls,
    Ssh,
    TcpOther,
    Dns,
    UdpOther,
}

impl App {
    /// Every application with its weight among the generated flows.
    pub(super) const WEIGHTED: [(App, u64); 8] = [
        (App::Http, 28),
        (App::Smtp, 10),
        (App::Ftp, 10),
        (App::Tls, 14),
        (App::Ssh, 4),
        (App::TcpOther, 12),
        (App::Dns, 12),
        (App::UdpOther, 10),
    ];

    pub(super) fn name(self) -> &'static str {
        match self {
            App::Http => "http",
            App::Smtp => "smtp",
            App::Ftp => "ftp",
            App::Tls => "tls",
            App::Ssh => "ssh",
            App::TcpOther => "tcp",
            App::Dns => "dns",
            App::UdpOther => "udp",
        }
    }

    pub(super) fn is_udp(self) -> bool {
        matches!(self, App::Dns | App::UdpOther)
    }

    /// The carriers this application can hold.
    pub(super) fn carriers(self) -> &'static [Carrier] {
        match self {
            App::Http => &[
                Carrier::HttpUri,
                Carrier::HttpHeader,
                Carrier::HttpRequestBody,
                Carrier::HttpResponseBody,
            ],
            App::Smtp => &[Carrier::SmtpBody],
            App::Ftp => &[Carrier::FtpArgument],
            App::Tls => &[Carrier::TlsSni],
            App::Ssh => &[],
            App::TcpOther => &[Carrier::TcpPayload],
            App::Dns => &[Carrier::DnsLabel],
            App::UdpOther => &[Carrier::UdpPayload],
        }
    }

    /// Most signatures one flow of this application gets.
    pub(super) fn max_signatures(self) -> usize {
        match self {
            App::Tls => 1,
            App::Dns => 2,
            App::Ssh => 0,
            _ => 3,
        }
    }
}

/// A signature planted in a message: its index and where it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Mark {
    pub sig: usize,
    pub at: usize,
}

/// One application message (a TCP send or a UDP datagram).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Msg {
    pub dir: Direction,
    pub bytes: Vec<u8>,
    /// Sorted by position, non-overlapping.
    pub marks: Vec<Mark>,
}

impl Msg {
    pub(super) fn new(dir: Direction, bytes: impl Into<Vec<u8>>) -> Self {
        Msg {
            dir,
            bytes: bytes.into(),
            marks: Vec::new(),
        }
    }

    /// A message made of `head`, then `filler` with the signatures inserted
    /// at random positions at least 16 bytes apart, then `tail`.
    pub(super) fn with(
        dir: Direction,
        head: &[u8],
        filler: Vec<u8>,
        tail: &[u8],
        sigs: &[&Signature],
        rng: &mut SplitMix64,
    ) -> Self {
        let mut bytes = head.to_vec();
        let mut marks = Vec::new();
        let k = sigs.len();
        let region = filler.len() / k.max(1);
        let mut from = 0;
        for (i, s) in sigs.iter().enumerate() {
            let lo = (i * region + 16).min(filler.len());
            let hi = ((i + 1) * region).max(lo);
            let cut = rng.range(lo as u64, hi as u64) as usize;
            bytes.extend_from_slice(&filler[from..cut]);
            marks.push(Mark {
                sig: s.index,
                at: bytes.len(),
            });
            bytes.extend_from_slice(&s.bytes);
            from = cut;
        }
        bytes.extend_from_slice(&filler[from..]);
        bytes.extend_from_slice(tail);
        Msg { dir, bytes, marks }
    }

    /// Marks the (only) occurrence of `sig` in the message.
    pub(super) fn mark_found(mut self, sig: Option<&Signature>) -> Self {
        if let Some(s) = sig {
            if let Some(at) = find(&self.bytes, &s.bytes) {
                self.marks.push(Mark { sig: s.index, at });
                self.marks.sort_by_key(|m| m.at);
            }
        }
        self
    }

    /// Whether every `scnids` marker in the message lies in a planted
    /// signature (random bytes could form one by chance).
    fn clean(&self, set: &[Signature]) -> bool {
        let mut at = 0;
        while let Some(k) = find(&self.bytes[at..], MARKER) {
            let p = at + k;
            if !self
                .marks
                .iter()
                .any(|m| m.at <= p && p < m.at + set[m.sig].bytes.len())
            {
                return false;
            }
            at = p + 1;
        }
        true
    }
}

/// First position of `needle` in `hay`.
pub(super) fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// An application conversation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Script {
    pub app: App,
    pub server_port: u16,
    pub msgs: Vec<Msg>,
}

/// Builds the conversation of `app` carrying the signatures `sigs` (all of
/// carriers `app` can hold). Random filler never contains the marker; if
/// random protocol fields happen to form it, the conversation is built again
/// (`None` after 16 tries, which does not happen in practice).
pub(super) fn script(
    app: App,
    sigs: &[usize],
    set: &[Signature],
    rng: &mut SplitMix64,
) -> Option<Script> {
    let sigs: Vec<&Signature> = sigs.iter().map(|&i| &set[i]).collect();
    for _ in 0..16 {
        let s = build(app, &sigs, rng);
        if s.msgs.iter().all(|m| m.clean(set)) {
            return Some(s);
        }
    }
    None
}

fn build(app: App, sigs: &[&Signature], rng: &mut SplitMix64) -> Script {
    let (server_port, msgs) = match app {
        App::Http => (*rng.pick(&[80, 80, 8080]), http(sigs, rng)),
        App::Smtp => (25, smtp(sigs, rng)),
        App::Ftp => (21, ftp(sigs, rng)),
        App::Tls => (443, tls(sigs.first().copied(), rng)),
        App::Ssh => (22, ssh(rng)),
        App::TcpOther => (
            *rng.pick(&[1337, 4444, 5555, 7001, 9001, 12345]),
            tcp_other(sigs, rng),
        ),
        App::Dns => (53, dns(sigs, rng)),
        App::UdpOther => (*rng.pick(&[5004, 7777, 27015, 33434]), udp_other(sigs, rng)),
    };
    Script {
        app,
        server_port,
        msgs,
    }
}
