//! The IPFIX encoder and decoder (`streamcap-apps`, `export::ipfix`).
//! Input: a configuration byte (message size limit, how often the
//! templates are repeated, the observation domain), then flows drawn from
//! the bytes (family, addresses, ports, protocol, VLAN, times, end reason,
//! flags and counters; zeros once the input runs out). Checks: the encoder
//! never panics and keeps every message within its limit; decoding the
//! messages gives back every flow exactly, in order (two addresses of
//! different families as IPv6, the IPv4 one mapped), with sequence numbers
//! counting the records before each message; the decoder never panics on
//! the raw input, on the raw input after the templates, nor on an encoded
//! message with one byte changed.
//!
//! Not in `checks/mod.rs` (see `rules.rs`); the stored inputs run through
//! `crates/streamcap-apps/tests/fuzz_regressions_ipfix.rs`.
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use streamcap_apps::export::ipfix::{Decoder, DirCounts, IpfixFlow, MessageBuilder};

/// Most flows drawn from one input.
const MAX_FLOWS: usize = 2000;

/// The input as a source of numbers (zeros past its end).
struct Bytes<'a> {
    data: &'a [u8],
    at: usize,
}

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        let b = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }
    fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.u8(), self.u8()])
    }
    fn u32(&mut self) -> u32 {
        u32::from_be_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    /// A counter: small, large or extreme, as the selector byte says.
    fn count(&mut self) -> u64 {
        match self.u8() % 4 {
            0 => u64::from(self.u8()),
            1 => u64::from(self.u32()),
            2 => u64::MAX - u64::from(self.u8()),
            _ => u64::from(self.u32()) << 32 | u64::from(self.u32()),
        }
    }
    fn addr(&mut self, v6: bool) -> IpAddr {
        if v6 {
            let mut o = [0u8; 16];
            for b in &mut o {
                *b = self.u8();
            }
            IpAddr::V6(Ipv6Addr::from(o))
        } else {
            IpAddr::V4(Ipv4Addr::from(self.u32()))
        }
    }
    fn dir(&mut self) -> DirCounts {
        DirCounts {
            packets: self.count(),
            octets: self.count(),
            tcp_flags: self.u16(),
            captured: self.count(),
            discarded: self.count(),
            dropped: self.count(),
            missing: self.count(),
        }
    }
    fn flow(&mut self) -> IpfixFlow {
        let fam = self.u8();
        IpfixFlow {
            src: self.addr(fam & 1 != 0),
            dst: self.addr(fam & 2 != 0),
            src_port: self.u16(),
            dst_port: self.u16(),
            proto: self.u8(),
            vlan: self.u16(),
            start_ms: self.count(),
            end_ms: self.count(),
            end_reason: self.u8(),
            fwd: self.dir(),
            rev: self.dir(),
        }
    }
}

/// What a flow decodes as: both addresses IPv6 when their families differ.
fn as_decoded(mut f: IpfixFlow) -> IpfixFlow {
    if f.src.is_ipv4() != f.dst.is_ipv4() {
        let v6 = |a: IpAddr| match a {
            IpAddr::V4(v4) => IpAddr::V6(v4.to_ipv6_mapped()),
            v6 => v6,
        };
        f.src = v6(f.src);
        f.dst = v6(f.dst);
    }
    f
}

/// Runs the checks on one input (panics on a violation).
pub fn run(data: &[u8]) {
    let Some((&cfg, rest)) = data.split_first() else {
        return;
    };
    // The raw bytes as a message: never a panic.
    let _ = Decoder::default().decode(rest);
    let limit = match cfg % 4 {
        0 => 512,
        1 => 1400,
        2 => 600 + usize::from(cfg) * 200,
        _ => 65_535,
    };
    let refresh = u64::from(cfg >> 4) + 1;
    let domain = u32::from(cfg).wrapping_mul(0x0101_0101);
    let mut src = Bytes { data: rest, at: 0 };
    let mut flows = Vec::new();
    while src.at < rest.len() && flows.len() < MAX_FLOWS {
        flows.push(src.flow());
    }
    // Encode: templates first and every `refresh` messages.
    let mut b = MessageBuilder::new(domain, limit);
    let mut messages: Vec<(u32, Vec<u8>)> = Vec::new();
    let mut seq = 0u32;
    let mut it = flows.iter().peekable();
    loop {
        b.start(cfg.into(), seq);
        if messages.len() as u64 % refresh == 0 {
            assert!(b.push_templates(), "the templates fit any message");
        }
        while let Some(f) = it.peek() {
            if !b.push(f) {
                assert!(
                    b.records() > 0 || !b.is_empty(),
                    "a record fits an empty message"
                );
                break;
            }
            it.next();
        }
        let records = b.records();
        let bytes = b.finish().to_vec();
        assert!(bytes.len() <= limit.max(512), "{} > {limit}", bytes.len());
        assert_eq!(
            usize::from(u16::from_be_bytes([bytes[2], bytes[3]])),
            bytes.len()
        );
        messages.push((seq, bytes));
        seq = seq.wrapping_add(records);
        if it.peek().is_none() {
            break;
        }
    }
    // Decode: every flow back, in order.
    let mut dec = Decoder::default();
    let mut back = Vec::new();
    for (s, m) in &messages {
        let msg = dec.decode(m).expect("an encoded message decodes");
        assert_eq!((msg.sequence, msg.domain), (*s, domain));
        assert_eq!(msg.unknown_sets, 0);
        back.extend(msg.flows());
    }
    let want: Vec<IpfixFlow> = flows.into_iter().map(as_decoded).collect();
    assert_eq!(back, want);
    // The raw bytes after the templates (data sets of known templates),
    // and a message with one byte changed: never a panic.
    let _ = dec.decode(rest);
    if let Some((_, m)) = messages.last() {
        let mut m = m.clone();
        let at = usize::from(src.u16()) % m.len();
        m[at] ^= src.u8() | 1;
        let _ = dec.decode(&m);
    }
}
