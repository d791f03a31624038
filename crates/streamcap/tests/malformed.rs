//! Malformed input: broken capture files and broken packets, built by hand.
//!
//! Files: a damaged file never loses the packets before the damage; the
//! error names the file and the record (1-based packet record number) and
//! says what is wrong ([`SourceErrorKind`]).
//!
//! Packets: a frame that cannot be decoded is counted in
//! `GlobalStats::decode_errors` under its [`DecodeError`] kind and creates
//! no flow; a frame whose lengths disagree is read as far as the lengths
//! that can be trusted go (and flagged when bytes are missing). Checksums
//! are **not validated**: a packet with a bad IP, TCP or UDP checksum is
//! processed and counted like any other (a monitor cannot know whether the
//! receiver's NIC offload would have accepted it, and captures of locally
//! sent packets routinely carry unfilled checksums).

mod support;

use etherparse::PacketBuilder;
use std::path::Path;
use streamcap::decode::DecodeError;
use streamcap::deliver::StreamErrors;
use streamcap::source::{FileSource, SourceErrorKind};
use streamcap::Worker;
use streamcap::{Capture, Config, GlobalStats, LinkType, PacketSource, RawPacket, Timestamp};
use support::*;

fn client() -> Ep {
    ep("10.0.0.1", 40000)
}
fn server() -> Ep {
    ep("10.0.0.2", 80)
}

/// Runs `(frame, orig_len)` pairs of link type `link` through one worker.
fn run_link(link: LinkType, frames: &[(Vec<u8>, u32)]) -> (Recorder, GlobalStats) {
    let mut w = Worker::new(Config::default(), Recorder::default());
    for (i, (f, orig_len)) in frames.iter().enumerate() {
        w.process(&RawPacket {
            ts: Timestamp::from_secs_nanos(1_000, i as u64 * 1_000_000),
            link,
            data: f,
            orig_len: *orig_len,
            record: i as u64 + 1,
            interface: 0,
        });
    }
    let stats = w.finish();
    assert!(stats.totals.invariant_holds(), "{:?}", stats.totals);
    (w.into_handler(), stats)
}

/// Runs whole Ethernet frames (nothing cut by a snapshot length).
fn run(frames: &[Vec<u8>]) -> (Recorder, GlobalStats) {
    run_worker(Config::default(), frames)
}

/// `frame` with `bytes` written at `at`.
fn patch(mut frame: Vec<u8>, at: usize, bytes: &[u8]) -> Vec<u8> {
    frame[at..at + bytes.len()].copy_from_slice(bytes);
    frame
}

// Offsets in an untagged Ethernet/IPv4 frame with a 20-byte IP header.
const IP: usize = 14;
const IP_TOTAL_LEN: usize = IP + 2;
const IP_CHECKSUM: usize = IP + 10;
const L4: usize = IP + 20;
const TCP_DATA_OFFSET: usize = L4 + 12;
const TCP_CHECKSUM: usize = L4 + 16;
const UDP_LEN: usize = L4 + 4;
const UDP_CHECKSUM: usize = L4 + 6;

/// A client→server TCP segment with `payload` (no handshake: picked up mid-stream).
fn tcp_frame(payload: &[u8]) -> Vec<u8> {
    tcp(client(), server(), 1000, 1, ACK | PSH, payload)
}

/// Asserts that exactly one frame was seen, counted as `kind`, and that it
/// created no flow.
fn assert_decode_error(r: &Recorder, stats: &GlobalStats, kind: DecodeError, ctx: &str) {
    assert_eq!(stats.packets, 1, "{ctx}: the frame is counted");
    assert_eq!(stats.decode_error(kind), 1, "{ctx}: counted as {kind:?}");
    let total: u64 = stats.decode_errors.iter().sum();
    assert_eq!(total, 1, "{ctx}: under one kind only");
    assert!(r.flows.is_empty(), "{ctx}: no flow created");
    assert_eq!(stats.flows_created.iter().sum::<u64>(), 0, "{ctx}");
}

// ---------------------------------------------------------------------------
// Link layer and non-IP frames
// ---------------------------------------------------------------------------

#[test]
fn non_ip_and_unknown_ethertypes_are_not_ip() {
    for (name, ethertype) in [
        ("ARP", 0x0806u16),
        ("LLDP", 0x88cc),
        ("local experimental", 0x88b5),
    ] {
        let mut f = vec![0xff; 12];
        f.extend_from_slice(&ethertype.to_be_bytes());
        f.extend_from_slice(&[0u8; 46]);
        let (r, stats) = run(&[f]);
        assert_decode_error(&r, &stats, DecodeError::NotIp, name);
        // Not IP is not malformed input.
        assert_eq!(stats.malformed(), 0, "{name}");
        assert_eq!(stats.ip_packets, 0, "{name}");
    }
}

#[test]
fn frames_cut_inside_the_link_header_are_truncated_link() {
    let vlan_cut = {
        // An 802.1Q tag announced, its tag cut off.
        let mut f = vec![0xff; 12];
        f.extend_from_slice(&0x8100u16.to_be_bytes());
        f.push(0);
        f
    };
    for (name, f) in [
        ("empty frame", Vec::new()),
        ("10-byte frame", vec![0xff; 10]),
        ("802.1Q tag cut", vlan_cut),
    ] {
        let (r, stats) = run(&[f]);
        assert_decode_error(&r, &stats, DecodeError::TruncatedLink, name);
        assert_eq!(stats.malformed(), 1, "{name}");
    }
}

#[test]
fn unsupported_link_type_is_counted() {
    let f = tcp_frame(b"x");
    let (r, stats) = run_link(LinkType(147), &[(f.clone(), f.len() as u32)]);
    assert_decode_error(&r, &stats, DecodeError::UnsupportedLink, "link 147");
}

// ---------------------------------------------------------------------------
// IPv4 / IPv6 headers
// ---------------------------------------------------------------------------

#[test]
fn ipv4_ihl_below_five_is_a_bad_ip_header() {
    for ihl in 0u8..5 {
        let f = patch(tcp_frame(b"data"), IP, &[0x40 | ihl]);
        let (r, stats) = run(&[f]);
        assert_decode_error(&r, &stats, DecodeError::BadIpHeader, &format!("ihl {ihl}"));
    }
}

#[test]
fn ipv4_header_longer_than_the_frame_is_a_bad_ip_header() {
    // IHL 15 (60 bytes) but only 20 + 20 + 4 bytes of IP in the frame.
    let f = patch(tcp_frame(b"data"), IP, &[0x4f]);
    let (r, stats) = run(&[f]);
    assert_decode_error(&r, &stats, DecodeError::BadIpHeader, "ihl 15");
}

#[test]
fn ipv4_cut_inside_the_header_is_a_bad_ip_header() {
    let f = tcp_frame(b"data")[..IP + 12].to_vec();
    let (r, stats) = run(&[f]);
    assert_decode_error(&r, &stats, DecodeError::BadIpHeader, "12-byte IPv4 header");
}

/// A total length of 0 (TSO/GSO captures: the NIC fills it in after the
/// capture point) is not trusted: the packet extends to the end of the frame.
#[test]
fn ipv4_total_length_zero_falls_back_to_the_frame() {
    let f = patch(tcp_frame(b"hello"), IP_TOTAL_LEN, &0u16.to_be_bytes());
    let (r, stats) = run(&[f]);
    assert_eq!(stats.malformed(), 0);
    let o = r.get(0, "orig");
    assert_eq!(o.data, b"hello");
    let info = o.closed.as_ref().expect("closed");
    assert_eq!(info.counters.bytes, 45, "IP length = bytes present");
    assert!(!info.errors.contains(StreamErrors::TRUNCATED));
}

/// Any other total length below the header length is dropped as the host
/// drops it (Linux `ip_rcv_core`): a bad IP header, no flow, no data.
#[test]
fn ipv4_total_length_below_the_header_is_a_bad_ip_header() {
    for total in [1u16, 10, 19] {
        let f = patch(tcp_frame(b"hello"), IP_TOTAL_LEN, &total.to_be_bytes());
        let (r, stats) = run(&[f]);
        assert_decode_error(
            &r,
            &stats,
            DecodeError::BadIpHeader,
            &format!("total {total}"),
        );
    }
}

/// IPv4 options that a host rejects (Linux `ip_options_compile`: a length
/// running past the header, below 2, a bad record-route pointer) drop the
/// packet: a bad IP header, no flow, no data. Sound options do not.
#[test]
fn ipv4_malformed_options_are_a_bad_ip_header() {
    /// `opts` (a multiple of 4 bytes) inserted as IPv4 options.
    fn with_options(opts: &[u8]) -> Vec<u8> {
        let mut f = tcp_frame(b"x");
        f.splice(L4..L4, opts.iter().copied());
        f[IP] = 0x40 | (5 + opts.len() / 4) as u8;
        let total = u16::from_be_bytes([f[IP_TOTAL_LEN], f[IP_TOTAL_LEN + 1]]) + opts.len() as u16;
        f[IP_TOTAL_LEN..IP_TOTAL_LEN + 2].copy_from_slice(&total.to_be_bytes());
        f
    }
    for (name, opts) in [
        ("length past the header", &[0x94u8, 8, 0, 0][..]),
        ("length 1", &[1, 1, 0x44, 1][..]),
        ("kind without a length", &[1, 1, 1, 0x83][..]),
        ("record route pointer 3", &[7, 7, 3, 0, 0, 0, 0, 0][..]),
    ] {
        let (r, stats) = run(&[with_options(opts)]);
        assert_decode_error(&r, &stats, DecodeError::BadIpHeader, name);
    }
    for (name, opts) in [
        ("NOPs and EOL", &[1u8, 1, 1, 0][..]),
        ("router alert", &[0x94, 4, 0, 0][..]),
        ("record route", &[7, 7, 4, 0, 0, 0, 0, 0][..]),
    ] {
        let (r, stats) = run(&[with_options(opts)]);
        assert_eq!(stats.malformed(), 0, "{name}");
        assert_eq!(r.get(0, "orig").data, b"x", "{name}");
    }
}

/// A total length shorter than the frame bounds the packet: Ethernet padding
/// (or anything after the IP packet) is not payload.
#[test]
fn bytes_past_the_ipv4_total_length_are_not_payload() {
    let mut tcp_f = tcp_frame(b"hello");
    tcp_f.extend_from_slice(&[0xee; 6]);
    let mut udp_f = udp(client(), server(), b"dns?");
    udp_f.extend_from_slice(&[0xee; 6]);
    for (name, f, want) in [("tcp", tcp_f, &b"hello"[..]), ("udp", udp_f, &b"dns?"[..])] {
        let (r, stats) = run(&[f]);
        assert_eq!(stats.malformed(), 0, "{name}");
        let o = r.get(0, "orig");
        assert_eq!(o.data, want, "{name}: the padding is not delivered");
        let info = o.closed.as_ref().expect("closed");
        assert!(!info.errors.contains(StreamErrors::TRUNCATED), "{name}");
        assert_eq!(info.counters.stream_bytes, want.len() as u64, "{name}");
    }
}

/// A total length claiming more than the frame holds (the frame was not cut
/// by the snapshot length: the header lies): the packet is read as far as it
/// goes, the rest of the claimed payload is counted missing and the stream
/// flagged `truncated`.
#[test]
fn ipv4_total_length_beyond_the_frame_counts_the_rest_missing() {
    let f = patch(
        tcp_frame(b"hello"),
        IP_TOTAL_LEN,
        &(45u16 + 100).to_be_bytes(),
    );
    let (r, stats) = run(&[f]);
    assert_eq!(stats.malformed(), 0);
    let o = r.get(0, "orig");
    assert_eq!(o.data, b"hello");
    let info = o.closed.as_ref().expect("closed");
    assert_eq!(info.counters.stream_bytes, 105);
    assert_eq!(info.counters.captured, 5);
    assert_eq!(info.counters.missing, 100);
    assert!(info.errors.contains(StreamErrors::TRUNCATED));
}

#[test]
fn ipv6_cut_inside_the_fixed_header_is_a_bad_ip_header() {
    let f = tcp(ep("2001:db8::1", 1), ep("2001:db8::2", 2), 1, 1, ACK, b"x");
    let f = f[..IP + 30].to_vec();
    let (r, stats) = run(&[f]);
    assert_decode_error(&r, &stats, DecodeError::BadIpHeader, "30-byte IPv6 header");
}

#[test]
fn ip_version_other_than_4_or_6_is_a_bad_ip_header() {
    let f = patch(tcp_frame(b"x"), IP, &[0x55]);
    let (r, stats) = run(&[f]);
    assert_decode_error(&r, &stats, DecodeError::BadIpHeader, "version 5");
}

/// An IPv6 payload length claiming more than the frame holds: as for IPv4,
/// the rest is missing and the stream is flagged `truncated`.
#[test]
fn ipv6_payload_length_beyond_the_frame_counts_the_rest_missing() {
    let f = tcp(
        ep("2001:db8::1", 1),
        ep("2001:db8::2", 2),
        1,
        1,
        ACK,
        b"hello",
    );
    let f = patch(f, IP + 4, &(20u16 + 5 + 50).to_be_bytes());
    let (r, stats) = run(&[f]);
    assert_eq!(stats.malformed(), 0);
    let o = r.get(0, "orig");
    assert_eq!(o.data, b"hello");
    let info = o.closed.as_ref().expect("closed");
    assert_eq!((info.counters.captured, info.counters.missing), (5, 50));
    assert!(info.errors.contains(StreamErrors::TRUNCATED));
}

// ---------------------------------------------------------------------------
// TCP / UDP headers
// ---------------------------------------------------------------------------

#[test]
fn tcp_data_offset_below_five_is_a_bad_transport_header() {
    for doff in 0u8..5 {
        let f = patch(tcp_frame(b"data"), TCP_DATA_OFFSET, &[doff << 4]);
        let (r, stats) = run(&[f]);
        let ctx = format!("data offset {doff}");
        assert_decode_error(&r, &stats, DecodeError::BadTransportHeader, &ctx);
        assert_eq!(stats.ip_packets, 1, "{ctx}: the IP layer was fine");
        assert_eq!(stats.proto_packets, [0; 4], "{ctx}");
    }
}

#[test]
fn tcp_data_offset_beyond_the_packet_is_a_bad_transport_header() {
    // 15 words = 60 bytes of header, but the IP payload is 24 bytes.
    let f = patch(tcp_frame(b"data"), TCP_DATA_OFFSET, &[0xf0]);
    let (r, stats) = run(&[f]);
    assert_decode_error(&r, &stats, DecodeError::BadTransportHeader, "offset 15");
}

#[test]
fn transport_headers_cut_short_are_bad_transport_headers() {
    // IP total lengths that leave 10 bytes of TCP header and 4 of UDP header.
    let t = tcp_frame(b"");
    let t = patch(t[..L4 + 10].to_vec(), IP_TOTAL_LEN, &30u16.to_be_bytes());
    let u = udp(client(), server(), b"");
    let u = patch(u[..L4 + 4].to_vec(), IP_TOTAL_LEN, &24u16.to_be_bytes());
    for (name, f) in [("tcp", t), ("udp", u)] {
        let (r, stats) = run(&[f]);
        assert_decode_error(&r, &stats, DecodeError::BadTransportHeader, name);
    }
}

/// The UDP length field bounds the payload when it is consistent (8 ≤ length
/// ≤ the IP payload); otherwise the IP length is used.
#[test]
fn udp_length_mismatches() {
    let payload = b"0123456789";
    // (UDP length field, delivered payload)
    let cases: [(u16, &[u8]); 4] = [
        (18, payload),  // consistent
        (12, b"0123"),  // shorter than the IP payload: bounds it
        (200, payload), // longer than the IP payload: IP length wins
        (3, payload),   // below the header size: IP length wins
    ];
    for (ulen, want) in cases {
        let f = patch(
            udp(client(), server(), payload),
            UDP_LEN,
            &ulen.to_be_bytes(),
        );
        let (r, stats) = run(&[f]);
        assert_eq!(stats.malformed(), 0, "udp length {ulen}");
        let o = r.get(0, "orig");
        assert_eq!(o.data, want, "udp length {ulen}");
        let info = o.closed.as_ref().expect("closed");
        assert_eq!(info.counters.missing, 0, "udp length {ulen}");
        assert!(
            !info.errors.contains(StreamErrors::TRUNCATED),
            "udp length {ulen}"
        );
    }
}

/// Checksums are not validated: IPv4 header, TCP and UDP checksums that are
/// wrong change nothing — the packets are processed, counted and delivered.
#[test]
fn bad_checksums_are_processed_normally() {
    let bad = |f: Vec<u8>, at: usize| {
        let old = u16::from_be_bytes([f[at], f[at + 1]]);
        patch(f, at, &(old ^ 0x5a5a).to_be_bytes())
    };
    let mut c = Conv::new(client(), server(), 100, 500);
    c.handshake()
        .client(b"GET / HTTP/1.0\r\n\r\n", 6)
        .server(b"200", 6)
        .fin();
    let mut frames = Vec::new();
    for (i, f) in c.frames.iter().enumerate() {
        // Alternate between a bad IP checksum and a bad TCP checksum.
        let at = if i % 2 == 0 {
            IP_CHECKSUM
        } else {
            TCP_CHECKSUM
        };
        frames.push(bad(f.clone(), at));
    }
    frames.push(bad(
        bad(udp(client(), server(), b"dns?"), UDP_CHECKSUM),
        IP_CHECKSUM,
    ));
    let (r, stats) = run(&frames);
    assert_eq!(stats.decode_errors, [0; DecodeError::COUNT]);
    assert_eq!(stats.packets, frames.len() as u64);
    let o = r.get(0, "orig");
    assert_eq!(o.data, b"GET / HTTP/1.0\r\n\r\n");
    assert_eq!(r.get(0, "resp").data, b"200");
    let info = o.closed.as_ref().expect("closed");
    assert!(info.errors.is_empty(), "{:?}", info.errors);
    assert_eq!(r.flows[0].1, "fin");
    assert_eq!(r.get(1, "orig").data, b"dns?");
}

// ---------------------------------------------------------------------------
// Capture files
// ---------------------------------------------------------------------------

/// A little-endian, microsecond pcap file header.
fn pcap_header(snaplen: u32, link: u32) -> Vec<u8> {
    let mut v = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
    v.extend_from_slice(&[0; 8]);
    v.extend_from_slice(&snaplen.to_le_bytes());
    v.extend_from_slice(&link.to_le_bytes());
    v
}

/// A pcap record header and data.
fn pcap_record(out: &mut Vec<u8>, sec: u32, data: &[u8], caplen: u32, orig_len: u32) {
    out.extend_from_slice(&sec.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&caplen.to_le_bytes());
    out.extend_from_slice(&orig_len.to_le_bytes());
    out.extend_from_slice(data);
}

/// Three client segments "one", "two", "six" of a connection picked up
/// mid-stream, as Ethernet frames.
fn three_frames() -> Vec<Vec<u8>> {
    let mut c = Conv::new(client(), server(), 1000, 1);
    c.client(b"onetwosix", 3);
    c.frames
}

/// A pcap file with `three_frames`, and the offsets where each record starts.
fn pcap_file() -> (Vec<u8>, Vec<usize>) {
    let mut v = pcap_header(65535, 1);
    let mut starts = Vec::new();
    for (i, f) in three_frames().iter().enumerate() {
        starts.push(v.len());
        pcap_record(&mut v, 1_000 + i as u32, f, f.len() as u32, f.len() as u32);
    }
    (v, starts)
}

/// A little-endian pcapng file (SHB, one Ethernet IDB, one EPB per frame of
/// `three_frames`), and the offsets where each EPB starts.
fn pcapng_file() -> (Vec<u8>, Vec<usize>) {
    let frames: Vec<(u32, Vec<u8>)> = three_frames().into_iter().map(|f| (0, f)).collect();
    pcapng_of(&[1], &frames)
}

/// A little-endian pcapng file: the SHB, one IDB per link type of `links`
/// (interfaces 0, 1, …), one EPB per `(interface, frame)` (one second
/// apart), and the offsets where each EPB starts.
fn pcapng_of(links: &[u16], frames: &[(u32, Vec<u8>)]) -> (Vec<u8>, Vec<usize>) {
    let mut v = Vec::new();
    // Section header block.
    v.extend_from_slice(&0x0a0d_0d0au32.to_le_bytes());
    v.extend_from_slice(&28u32.to_le_bytes());
    v.extend_from_slice(&0x1a2b_3c4du32.to_le_bytes());
    v.extend_from_slice(&1u16.to_le_bytes());
    v.extend_from_slice(&0u16.to_le_bytes());
    v.extend_from_slice(&(-1i64).to_le_bytes());
    v.extend_from_slice(&28u32.to_le_bytes());
    // Interface description blocks.
    for link in links {
        v.extend_from_slice(&1u32.to_le_bytes());
        v.extend_from_slice(&20u32.to_le_bytes());
        v.extend_from_slice(&link.to_le_bytes());
        v.extend_from_slice(&0u16.to_le_bytes());
        v.extend_from_slice(&65535u32.to_le_bytes());
        v.extend_from_slice(&20u32.to_le_bytes());
    }
    let mut starts = Vec::new();
    for (i, (iface, f)) in frames.iter().enumerate() {
        starts.push(v.len());
        let padded = f.len().div_ceil(4) * 4;
        let len = (32 + padded) as u32;
        v.extend_from_slice(&6u32.to_le_bytes());
        v.extend_from_slice(&len.to_le_bytes());
        v.extend_from_slice(&iface.to_le_bytes());
        let ts = (1_000 + i as u64) * 1_000_000;
        v.extend_from_slice(&((ts >> 32) as u32).to_le_bytes());
        v.extend_from_slice(&(ts as u32).to_le_bytes());
        v.extend_from_slice(&(f.len() as u32).to_le_bytes());
        v.extend_from_slice(&(f.len() as u32).to_le_bytes());
        v.extend_from_slice(f);
        v.resize(v.len() + padded - f.len(), 0);
        v.extend_from_slice(&len.to_le_bytes());
    }
    (v, starts)
}

/// Runs a file held in memory as `name`; the header must be valid.
fn run_bytes(name: &str, data: Vec<u8>) -> streamcap::Report<Recorder> {
    let mut src = FileSource::from_bytes(name, data).expect("the file header is valid");
    assert_eq!(src.name(), name);
    Capture::builder()
        .build()
        .run(&mut src, Recorder::default())
}

#[test]
fn files_cut_inside_the_file_header_fail_to_open() {
    let (pcap, _) = pcap_file();
    let (ng, _) = pcapng_file();
    for (name, data) in [
        ("cut.pcap", pcap[..2].to_vec()),
        ("cut.pcap", pcap[..20].to_vec()),
        ("cut.pcapng", ng[..2].to_vec()),
        ("cut.pcapng", ng[..11].to_vec()),
        ("cut.pcapng", ng[..20].to_vec()),
    ] {
        let len = data.len();
        let err = FileSource::from_bytes(name, data).expect_err("header cut");
        assert!(
            matches!(err.kind, SourceErrorKind::Truncated(_)),
            "{len}: {err}"
        );
        assert_eq!(err.record, None, "{len}: the file header, not a record");
        assert_eq!(err.file, Path::new(name));
        // "cut.pcap (byte offset 0): file cut short: ..."
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!("{name} (byte offset 0): ")),
            "{msg}"
        );
        assert!(msg.contains("file cut short"), "{msg}");
    }
    let err = FileSource::from_bytes("x.cap", b"GIF89a..".to_vec()).expect_err("not a capture");
    assert!(
        matches!(err.kind, SourceErrorKind::BadMagic(0x4749_4638)),
        "{err}"
    );
}

/// Cutting a file inside the third record (its header or its data) keeps the
/// first two packets: they are processed, their stream delivered, and the
/// error names the file and record 3.
#[test]
fn files_cut_inside_a_record_keep_the_packets_before_it() {
    let (pcap, ps) = pcap_file();
    let (ng, ns) = pcapng_file();
    let cases = [
        (
            "pcap, inside record header",
            "a.pcap",
            pcap[..ps[2] + 9].to_vec(),
            "record header",
        ),
        (
            "pcap, inside record data",
            "a.pcap",
            pcap[..ps[2] + 16 + 20].to_vec(),
            "packet data",
        ),
        (
            "pcapng, inside block header",
            "a.pcapng",
            ng[..ns[2] + 5].to_vec(),
            "block header",
        ),
        (
            "pcapng, inside block body",
            "a.pcapng",
            ng[..ns[2] + 40].to_vec(),
            "block of",
        ),
    ];
    for (ctx, name, data, says) in cases {
        let rep = run_bytes(name, data);
        let err = rep.error.as_ref().expect("the cut is reported");
        assert!(
            matches!(err.kind, SourceErrorKind::Truncated(_)),
            "{ctx}: {err}"
        );
        assert_eq!(err.record, Some(3), "{ctx}: {err}");
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!("{name}: record 3")),
            "{ctx}: {msg}"
        );
        assert!(msg.contains(says), "{ctx}: {msg}");
        assert_eq!(rep.packets_read, 2, "{ctx}");
        assert_eq!(rep.stats.packets, 2, "{ctx}");
        assert_eq!(rep.handler.get(0, "orig").data, b"onetwo", "{ctx}");
    }
}

/// Whole files of both formats read completely (the builders above are right).
#[test]
fn intact_files_read_completely() {
    for (name, data) in [("ok.pcap", pcap_file().0), ("ok.pcapng", pcapng_file().0)] {
        let rep = run_bytes(name, data);
        assert!(rep.error.is_none(), "{name}: {:?}", rep.error);
        assert_eq!(rep.packets_read, 3, "{name}");
        assert_eq!(rep.handler.get(0, "orig").data, b"onetwosix", "{name}");
    }
}

/// A pcapng file whose second interface has a link type the decoder does
/// not read (284, DSA-tagged Ethernet): that interface's packets are
/// counted as `unsupported_link` and the run goes on with the rest.
#[test]
fn pcapng_interface_of_an_unsupported_link_type_is_skipped_and_counted() {
    let [one, two, six]: [Vec<u8>; 3] = three_frames().try_into().expect("three frames");
    let frames = [
        (1, one.clone()),
        (0, one),
        (1, two.clone()),
        (0, two),
        (0, six.clone()),
        (1, six),
    ];
    let (ng, _) = pcapng_of(&[1, 284], &frames);
    let rep = run_bytes("mixed.pcapng", ng);
    assert!(rep.error.is_none(), "{:?}", rep.error);
    assert_eq!(rep.packets_read, 6);
    assert_eq!(rep.stats.packets, 6);
    assert_eq!(rep.stats.decode_error(DecodeError::UnsupportedLink), 3);
    assert_eq!(rep.stats.ip_packets, 3);
    assert_eq!(rep.handler.get(0, "orig").data, b"onetwosix");
}

/// A classic pcap file has one link type for all its packets: if the
/// decoder does not read it, nothing can be, and the run stops with an
/// error that names the file and the link type.
#[test]
fn pcap_file_of_an_unsupported_link_type_is_an_error_naming_it() {
    let mut data = pcap_header(65535, 284);
    for (i, f) in three_frames().iter().enumerate() {
        pcap_record(
            &mut data,
            1_000 + i as u32,
            f,
            f.len() as u32,
            f.len() as u32,
        );
    }
    let rep = run_bytes("dsa.pcap", data);
    let err = rep.error.as_ref().expect("an error");
    assert!(
        matches!(err.kind, SourceErrorKind::UnsupportedLinkType(284)),
        "{err}"
    );
    let msg = err.to_string();
    assert!(msg.starts_with("dsa.pcap: "), "{msg}");
    assert!(msg.contains("link type 284"), "{msg}");
    assert_eq!(rep.packets_read, 0);
}

/// Record lengths: a captured length past the 16 MiB limit is a damaged file
/// (`BadLength`, record named, packets before it kept); one past the file's
/// snaplen, or past the record's own original length, is accepted as is (the
/// captured bytes are trusted, the frame is not counted truncated).
#[test]
fn pcap_record_lengths() {
    let frames = three_frames();
    // caplen > 16 MiB in record 2.
    let mut v = pcap_header(65535, 1);
    pcap_record(
        &mut v,
        1,
        &frames[0],
        frames[0].len() as u32,
        frames[0].len() as u32,
    );
    pcap_record(&mut v, 2, &frames[1], 20 << 20, 20 << 20);
    let rep = run_bytes("big.pcap", v);
    let err = rep.error.as_ref().expect("impossible length reported");
    assert!(matches!(err.kind, SourceErrorKind::BadLength(_)), "{err}");
    assert_eq!(err.record, Some(2));
    assert!(err.to_string().starts_with("big.pcap: record 2"), "{err}");
    assert_eq!(rep.handler.get(0, "orig").data, b"one");

    // snaplen 40 in the file header, whole 57-byte frames in the records;
    // and original lengths below the captured ones.
    let mut v = pcap_header(40, 1);
    for (i, f) in frames.iter().enumerate() {
        let orig = if i == 1 { 30 } else { f.len() as u32 };
        pcap_record(&mut v, i as u32, f, f.len() as u32, orig);
    }
    let rep = run_bytes("snap.pcap", v);
    assert!(rep.error.is_none(), "{:?}", rep.error);
    assert_eq!(rep.stats.truncated_packets, 0);
    let o = rep.handler.get(0, "orig");
    assert_eq!(o.data, b"onetwosix");
    assert!(o
        .closed
        .as_ref()
        .expect("closed")
        .errors
        .contains(StreamErrors::NO_HANDSHAKE));
}

/// pcapng: a captured length that does not fit in its block is `BadLength`
/// at that record; the packets before it are kept.
#[test]
fn pcapng_captured_length_beyond_the_block() {
    let (mut ng, ns) = pcapng_file();
    // Record 2's captured length field (after type, length, interface, ts).
    let at = ns[1] + 20;
    ng[at..at + 4].copy_from_slice(&500u32.to_le_bytes());
    let rep = run_bytes("epb.pcapng", ng);
    let err = rep.error.as_ref().expect("reported");
    assert!(matches!(err.kind, SourceErrorKind::BadLength(_)), "{err}");
    assert_eq!(err.record, Some(2));
    assert_eq!(rep.handler.get(0, "orig").data, b"one");
}

/// A zero-length record is a frame with nothing in it: read, counted, and
/// reported as a truncated link header; the packets around it are unaffected.
/// With an original length, it counts as a frame cut by the snapshot length.
#[test]
fn zero_length_records() {
    let frames = three_frames();
    let mut v = pcap_header(65535, 1);
    pcap_record(
        &mut v,
        1,
        &frames[0],
        frames[0].len() as u32,
        frames[0].len() as u32,
    );
    pcap_record(&mut v, 2, &[], 0, 0);
    pcap_record(&mut v, 3, &[], 0, 60);
    pcap_record(
        &mut v,
        4,
        &frames[1],
        frames[1].len() as u32,
        frames[1].len() as u32,
    );
    let rep = run_bytes("zero.pcap", v);
    assert!(rep.error.is_none(), "{:?}", rep.error);
    assert_eq!(rep.packets_read, 4);
    assert_eq!(rep.stats.packets, 4);
    assert_eq!(rep.stats.decode_error(DecodeError::TruncatedLink), 2);
    assert_eq!(rep.stats.truncated_packets, 1);
    assert_eq!(rep.handler.get(0, "orig").data, b"onetwo");
}

/// The header offsets the tests above patch are the right ones for the
/// frames `support` builds.
#[test]
fn frame_offsets_used_above_are_right() {
    let f = tcp_frame(b"abcd");
    assert_eq!(&f[12..14], &[0x08, 0x00]);
    assert_eq!(f[IP], 0x45);
    assert_eq!(
        u16::from_be_bytes([f[IP_TOTAL_LEN], f[IP_TOTAL_LEN + 1]]),
        44
    );
    assert_eq!(f[TCP_DATA_OFFSET] >> 4, 5);
    let u = udp(client(), server(), b"abcd");
    assert_eq!(u16::from_be_bytes([u[UDP_LEN], u[UDP_LEN + 1]]), 12);
    let mut built = Vec::new();
    PacketBuilder::ethernet2([2; 6], [4; 6])
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .udp(40000, 80)
        .write(&mut built, b"abcd")
        .expect("builds");
    assert_eq!(built, u);
}
