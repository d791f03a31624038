//! The DNS parser and `dns.log` (`streamcap-apps`): arbitrary bytes as a
//! DNS message. Input: a flag byte (bit 0: NetBIOS port, bit 1: TCP), then
//! the message. Checks: no panic; the answers read are at most the
//! header's count, all of them when the message read whole; names are
//! within their limit; the message fed to a connection as a query, as a
//! response and again gives records whose TSV lines have every field;
//! over TCP, the message with its length prefix comes out of the framer
//! whole whatever the pieces; the classifier's DNS check agrees with the
//! parser (what it accepts as DNS has a question the parser reads).
//!
//! Not in `checks/mod.rs` (see `rules.rs`); the stored inputs run through
//! `crates/streamcap-apps/tests/fuzz_regressions_classify.rs`.
use streamcap::Timestamp;
use streamcap_apps::classify::probe::datagram::plausible_dns;
use streamcap_apps::logs::dns::wire::{layout, NameLimits, MAX_NAME};
use streamcap_apps::logs::dns::{DnsFlow, DnsProto, Message, TcpDnsFramer, FIELDS};

/// Runs the checks on one input (panics on a violation).
pub fn run(data: &[u8]) {
    let Some((&flags, msg)) = data.split_first() else {
        return;
    };
    let netbios = flags & 1 == 1;
    let tcp = flags & 2 == 2;
    if let Some(m) = Message::parse(msg, netbios) {
        assert!(m.answers.len() <= usize::from(m.header.ancount));
        if m.complete {
            assert_eq!(m.answers.len(), usize::from(m.header.ancount));
        }
        if let Some(q) = &m.question {
            assert!(q.name.len() <= MAX_NAME);
        }
        for a in &m.answers {
            assert!(a.owner.len() <= MAX_NAME);
        }
    } else {
        assert!(msg.len() < 12);
    }
    let limits = if netbios {
        NameLimits::NetBios
    } else {
        NameLimits::Dns
    };
    if let Ok(l) = layout(msg, limits) {
        assert!(l.end <= msg.len() && l.answers_at <= l.end);
    }
    if plausible_dns(msg, true).is_some() {
        let m = Message::parse(msg, false).expect("a header");
        assert!(m.header.qdcount == 0 || m.question.is_some());
    }
    let resp_port = if netbios { 137 } else { 53 };
    let proto = if tcp { DnsProto::Tcp } else { DnsProto::Udp };
    let mut flow = DnsFlow::new(
        "Cfuzz".into(),
        ("10.0.0.1".parse().expect("addr"), 3333),
        ("10.0.0.2".parse().expect("addr"), resp_port),
        proto,
    );
    let mut out = Vec::new();
    for i in 0..3u64 {
        flow.message(Timestamp::from_secs_nanos(1, i * 1000), msg, &mut out);
    }
    flow.finish(&mut out);
    for r in &out {
        let line = r.tsv_line();
        assert_eq!(line.matches('\t').count(), FIELDS.len() - 1, "{line:?}");
        assert!(line.ends_with('\n') && !line[..line.len() - 1].contains('\n'));
        let j = r.json();
        assert!(j.starts_with('{') && j.ends_with('}'));
    }
    if tcp && msg.len() <= usize::from(u16::MAX) {
        let mut framed = (msg.len() as u16).to_be_bytes().to_vec();
        framed.extend_from_slice(msg);
        let step = usize::from(flags >> 2).max(1);
        let mut f = TcpDnsFramer::new();
        let mut got = Vec::new();
        for c in framed.chunks(step) {
            f.push(c, |m| got.push(m.to_vec()));
        }
        f.finish(|m| got.push(m.to_vec()));
        if msg.is_empty() {
            assert!(got.is_empty() || got == [Vec::<u8>::new()]);
        } else {
            assert_eq!(got, [msg.to_vec()]);
        }
    }
}
