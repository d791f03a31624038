//! The devmap forwarder's XDP program (`bpf/forward.bpf.c`, compiled by the
//! build script with clang): loading it with a cBPF filter in its `insns`
//! map, and reading its per-CPU counters.
//!
//! The program interprets the cBPF instructions libpcap emits for
//! DLT_EN10MB; its tests run it through `BPF_PROG_TEST_RUN` on the frames
//! of the shared corpus and compare every verdict with libpcap's own
//! (`pcap_offline_filter`).

use super::ForwardCounts;
use crate::filter::bpf::{Insn, Program};
use crate::subzero::xdp::XdpError;
use libbpf_rs::{ErrorKind, MapCore, MapFlags, ObjectBuilder};

/// The compiled program (an ELF object for the `bpf` target).
static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/forward.bpf.o"));

/// The `insns` map's size: the longest program the kernel takes (BPF_MAXINSNS).
pub(crate) const MAX_INSNS: usize = 4096;

/// The program's name in the object.
pub(crate) const PROGRAM: &str = "forward";

/// `struct cbpf_insn` in the map: code, jt, jf, k, in native byte order.
fn encode(i: &Insn) -> [u8; 8] {
    let mut v = [0u8; 8];
    v[..2].copy_from_slice(&i.code.to_ne_bytes());
    v[2] = i.jt;
    v[3] = i.jf;
    v[4..].copy_from_slice(&i.k.to_ne_bytes());
    v
}

/// Loads the object into the kernel with `filter` in its `insns` map (an
/// empty filter accepts every frame). Attached nowhere yet; `interface`
/// names the interface in errors.
pub(crate) fn load(interface: &str, filter: &[Insn]) -> Result<libbpf_rs::Object, XdpError> {
    let fail = |message: String| XdpError {
        interface: interface.to_string(),
        message,
    };
    // "Accept everything": a program of one `ret #262144`.
    let accept = [Insn::new(0x06, 0, 0, 262_144)];
    let filter = if filter.is_empty() {
        &accept[..]
    } else {
        filter
    };
    if filter.len() > MAX_INSNS {
        return Err(fail(format!(
            "the filter has {} instructions, more than the {MAX_INSNS} the program holds",
            filter.len()
        )));
    }
    Program::new(filter.to_vec()).map_err(|e| fail(format!("the filter: {e}")))?;
    let open = ObjectBuilder::default()
        .open_memory(OBJECT)
        .map_err(|e| fail(format!("opening the forwarding program: {e}")))?;
    let object = open.load().map_err(|e| {
        fail(match e.kind() {
            ErrorKind::PermissionDenied => {
                "loading a BPF program needs root (CAP_BPF and CAP_NET_ADMIN)".into()
            }
            _ => format!("loading the forwarding program: {e} (a kernel with BPF, XDP and bpf_loop, 5.17 or later, is needed)"),
        })
    })?;
    {
        let map = |name: &str| {
            object
                .maps()
                .find(|m| m.name() == name)
                .ok_or_else(|| fail(format!("the forwarding program has no {name} map")))
        };
        let insns = map("insns")?;
        for (i, insn) in filter.iter().enumerate() {
            let key = u32::try_from(i).unwrap_or(u32::MAX);
            insns
                .update(&key.to_ne_bytes(), &encode(insn), MapFlags::ANY)
                .map_err(|e| fail(format!("writing filter instruction {i}: {e}")))?;
        }
        let len = u32::try_from(filter.len()).unwrap_or(0);
        let mut cfg = [0u8; 8];
        cfg[..4].copy_from_slice(&len.to_ne_bytes());
        map("config")?
            .update(&0u32.to_ne_bytes(), &cfg, MapFlags::ANY)
            .map_err(|e| fail(format!("writing the filter's length: {e}")))?;
    }
    Ok(object)
}

/// The program's counters, summed over the CPUs: forwarded, their bytes,
/// filtered out, and redirects the devmap refused (as `send_errors`).
pub(crate) fn counts(object: &libbpf_rs::Object) -> ForwardCounts {
    let mut c = ForwardCounts::default();
    let Some(map) = object.maps().find(|m| m.name() == "counts") else {
        return c;
    };
    if let Ok(Some(per_cpu)) = map.lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY) {
        for v in per_cpu {
            c.forwarded += read_u64(&v, 0);
            c.forwarded_bytes += read_u64(&v, 8);
            c.filtered_out += read_u64(&v, 16);
            c.send_errors += read_u64(&v, 32);
        }
    }
    c
}

fn read_u64(v: &[u8], at: usize) -> u64 {
    v.get(at..at + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_ne_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::libpcap::Libpcap;
    use crate::source::LinkType;
    use crate::PacketSource;

    /// `XDP_ABORTED`, `XDP_DROP`: what the program returns for a frame the
    /// filter accepted (with no outgoing interface in the devmap) and for
    /// one it rejected.
    const XDP_ABORTED: u32 = 0;
    const XDP_DROP: u32 = 1;

    /// The largest frame BPF_PROG_TEST_RUN takes in one buffer (a page
    /// less the XDP headroom and the shared info).
    const TEST_RUN_MAX: usize = 3_000;

    /// Expressions that make libpcap emit every instruction class it has:
    /// absolute, indirect and MSH loads of each size, LEN, scratch memory
    /// (ST, STX, LD/LDX MEM), every ALU operation with K and X (NEG
    /// included), JA, JEQ, JGT, JGE and JSET with K and X, RET K and A,
    /// TAX and TXA; loads past the frame; VLAN, MPLS, IPv6.
    const EXPRESSIONS: &[&str] = &[
        "",
        "tcp",
        "udp",
        "ip",
        "ip6",
        "arp",
        "icmp or icmp6",
        "vlan",
        "vlan and tcp",
        "vlan 100",
        "vlan and vlan",
        "mpls",
        "tcp port 80",
        "port 53",
        "udp port 53 or tcp port 443",
        "host 10.0.0.1 or net 192.168.0.0/16",
        "ip6 and tcp",
        "ip6 host fe80::1 or ip6 net 2001:db8::/32",
        "tcp portrange 1-1024",
        "tcp[tcpflags] & (tcp-syn|tcp-fin) != 0",
        "tcp[13] = 18",
        "ip[6:2] & 0x1fff != 0",
        "greater 100",
        "less 80",
        "len >= 1000",
        "ip[2:2] - ((ip[0]&0xf)<<2) - ((tcp[12]&0xf0)>>2) > 0",
        "udp[8:4] * 3 / 2 % 7 = 1",
        "ip[0] ^ 0x45 = 0",
        "-ip[1] = 0",
        "ip[1] | 4 = 4",
        "ip[8] > 60 and ip[8] >= 64",
        "tcp[4:4] > tcp[8:4]",
        "tcp[4:4] >= tcp[8:4]",
        "tcp[4:4] & tcp[8:4] != 0",
        "ip[0] & 0xf = ip[9] - 2",
        "udp[8] / udp[9] = 1",
        "udp[8] % udp[9] = 1",
        "ip[ip[0] & 0xf] = 0",
        "tcp[1000:4] = 0",
        "udp[100] = 0",
        "ether broadcast or ether multicast",
        "ip multicast",
        "ether[0] & 1 = 0 and ip[16] >= 224",
        "ip[0] >> 4 = 4 and ip[0] << 28 != 0",
        "tcp[12] >> 4 > 5",
        "(ip or ip6) and (tcp or udp) and not port 22",
        "ip proto 47 or ip6 proto 58",
        "ip6 and udp and ip6[40:2] > 1024",
        "ether proto 0x88cc",
        "len - 14 = ip[2:2]",
    ];

    /// Every frame of the corpus's Ethernet captures through every
    /// expression: the program in the kernel and libpcap agree on each.
    /// Needs root (BPF_PROG_TEST_RUN) and the corpus; skips otherwise.
    #[test]
    fn the_xdp_interpreter_agrees_with_libpcap_on_the_corpus() {
        let pcap = match Libpcap::load() {
            Ok(l) => l,
            Err(e) => return crate::skip(format!("libpcap not available ({e})")),
        };
        let (root, files) = crate::corpus_captures();
        if files.is_empty() {
            return crate::skip(format!("no corpus at {}", root.display()));
        }
        // Frames: every Ethernet frame of each capture, whole (the wire
        // length is what was captured, as on an interface).
        let mut frames: Vec<Vec<u8>> = Vec::new();
        let mut too_long = 0usize;
        for path in &files {
            let Ok(mut src) = crate::FileSource::open(path) else {
                continue;
            };
            while let Some(Ok(p)) = src.next_packet() {
                if p.link != LinkType::ETHERNET || p.data.len() < 14 {
                    continue;
                }
                if p.data.len() > TEST_RUN_MAX {
                    too_long += 1;
                    continue;
                }
                frames.push(p.data.to_vec());
            }
        }
        assert!(frames.len() > 1000, "only {} frames", frames.len());
        let mut checked = 0u64;
        let mut accepted = 0u64;
        for expr in EXPRESSIONS {
            let insns = pcap
                .compile(expr, 1, 262_144)
                .unwrap_or_else(|e| panic!("{expr:?}: {e}"));
            let object = match load("(test)", &insns) {
                Ok(o) => o,
                Err(e) => {
                    return crate::skip(format!(
                        "the forwarding program cannot be loaded here ({e})"
                    ))
                }
            };
            let prog = object
                .progs_mut()
                .find(|p| p.name() == PROGRAM)
                .expect("the forward program");
            for f in &frames {
                let want = pcap
                    .offline_filter(&insns, f, f.len() as u32)
                    .expect("pcap_offline_filter")
                    != 0;
                let input = libbpf_rs::ProgramInput {
                    data_in: Some(f),
                    ..Default::default()
                };
                let got = prog.test_run(input).expect("test run").return_value;
                let got = match got {
                    XDP_ABORTED => true,
                    XDP_DROP => false,
                    other => panic!("{expr:?}: the program returned {other}"),
                };
                assert_eq!(
                    got,
                    want,
                    "{expr:?} on a frame of {} bytes: XDP {got}, libpcap {want}; frame {:02x?}",
                    f.len(),
                    &f[..f.len().min(64)]
                );
                checked += 1;
                accepted += u64::from(want);
            }
            let c = counts(&object);
            assert_eq!(
                c.filtered_out + c.send_errors,
                frames.len() as u64,
                "{expr:?}"
            );
            assert_eq!(c.forwarded, 0);
        }
        assert!(accepted > 0 && accepted < checked);
        eprintln!(
            "{checked} verdicts agree ({} expressions, {} frames; {too_long} frames above {TEST_RUN_MAX} bytes left out)",
            EXPRESSIONS.len(),
            frames.len()
        );
    }

    /// Hand-written programs libpcap would not emit for these frames: a
    /// load right at the end of the frame and one byte past it, division
    /// by a zero X, RET A, TXA, LDX LEN, scratch memory.
    #[test]
    fn edge_cases_agree_with_libpcap() {
        let pcap = match Libpcap::load() {
            Ok(l) => l,
            Err(e) => return crate::skip(format!("libpcap not available ({e})")),
        };
        let frame: Vec<u8> = (0u8..60).collect();
        let n = frame.len() as u32;
        let programs: Vec<Vec<Insn>> = vec![
            // ld [n-4]; ret a
            vec![Insn::new(0x20, 0, 0, n - 4), Insn::new(0x16, 0, 0, 0)],
            // ld [n-3] (one byte past): rejected
            vec![Insn::new(0x20, 0, 0, n - 3), Insn::new(0x06, 0, 0, 1)],
            // ldh [n-2]; ret a
            vec![Insn::new(0x28, 0, 0, n - 2), Insn::new(0x16, 0, 0, 0)],
            // ldb [n]: rejected
            vec![Insn::new(0x30, 0, 0, n), Insn::new(0x06, 0, 0, 1)],
            // ldx #0; ld #5; div x: rejected
            vec![
                Insn::new(0x01, 0, 0, 0),
                Insn::new(0x00, 0, 0, 5),
                Insn::new(0x3c, 0, 0, 0),
                Insn::new(0x06, 0, 0, 1),
            ],
            // ldx len; txa; st M[3]; ld #0; ld M[3]; ret a
            vec![
                Insn::new(0x81, 0, 0, 0),
                Insn::new(0x87, 0, 0, 0),
                Insn::new(0x02, 0, 0, 3),
                Insn::new(0x00, 0, 0, 0),
                Insn::new(0x60, 0, 0, 3),
                Insn::new(0x16, 0, 0, 0),
            ],
            // ldx #0xffffffff; ld [x+2]: the offset wraps in 32 bits in
            // no interpreter: rejected
            vec![
                Insn::new(0x01, 0, 0, u32::MAX),
                Insn::new(0x40, 0, 0, 2),
                Insn::new(0x06, 0, 0, 1),
            ],
            // ldxb 4*([14]&0xf); ldb [x+14]; ret a
            vec![
                Insn::new(0xb1, 0, 0, 14),
                Insn::new(0x50, 0, 0, 14),
                Insn::new(0x16, 0, 0, 0),
            ],
            // ldx #40; ld #1; lsh x; ret a (a shift past 31 bits)
            vec![
                Insn::new(0x01, 0, 0, 40),
                Insn::new(0x00, 0, 0, 1),
                Insn::new(0x6c, 0, 0, 0),
                Insn::new(0x16, 0, 0, 0),
            ],
            // ldx #3; ld #0x80; rsh x; ret a
            vec![
                Insn::new(0x01, 0, 0, 3),
                Insn::new(0x00, 0, 0, 0x80),
                Insn::new(0x7c, 0, 0, 0),
                Insn::new(0x16, 0, 0, 0),
            ],
            // ld #1; ja +1; ret #0; ret a
            vec![
                Insn::new(0x00, 0, 0, 1),
                Insn::new(0x05, 0, 0, 1),
                Insn::new(0x06, 0, 0, 0),
                Insn::new(0x16, 0, 0, 0),
            ],
        ];
        for insns in programs {
            let object = match load("(test)", &insns) {
                Ok(o) => o,
                Err(e) => {
                    return crate::skip(format!(
                        "the forwarding program cannot be loaded here ({e})"
                    ))
                }
            };
            let prog = object
                .progs_mut()
                .find(|p| p.name() == PROGRAM)
                .expect("the forward program");
            let want = pcap
                .offline_filter(&insns, &frame, n)
                .expect("pcap_offline_filter")
                != 0;
            let input = libbpf_rs::ProgramInput {
                data_in: Some(&frame),
                ..Default::default()
            };
            let got = prog.test_run(input).expect("test run").return_value == XDP_ABORTED;
            assert_eq!(got, want, "{insns:?}");
        }
    }

    #[test]
    fn too_long_and_invalid_filters_are_refused() {
        let long = vec![Insn::new(0x06, 0, 0, 1); MAX_INSNS + 1];
        let e = load("eth9", &long).expect_err("too long");
        assert!(
            e.to_string().contains("eth9") && e.message.contains("4096"),
            "{e}"
        );
        // A jump past the end.
        let bad = vec![Insn::new(0x05, 0, 0, 7), Insn::new(0x06, 0, 0, 1)];
        let e = load("eth9", &bad).expect_err("invalid");
        assert!(e.message.contains("the filter"), "{e}");
    }
}
