//! The binary on malformed input built by hand (no corpus needed): a file cut
//! inside a record, a file cut inside its header, and a file of frames that
//! cannot be decoded. Checksums in these frames are left at zero: streamcap
//! does not validate them.

mod common;

use common::*;
use std::path::Path;

/// An Ethernet/IPv4/TCP frame 10.0.0.1:40000 → 10.0.0.2:80, ACK|PSH, with
/// `payload`; checksums zero.
fn frame(seq: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    let total = (40 + payload.len()) as u16;
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&total.to_be_bytes());
    f.extend_from_slice(&[0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    f.extend_from_slice(&40000u16.to_be_bytes());
    f.extend_from_slice(&80u16.to_be_bytes());
    f.extend_from_slice(&seq.to_be_bytes());
    f.extend_from_slice(&1u32.to_be_bytes());
    f.extend_from_slice(&[0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
    f.extend_from_slice(payload);
    f
}

/// A little-endian microsecond pcap file (Ethernet) holding `frames`.
fn pcap(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut v = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    v.extend_from_slice(&65535u32.to_le_bytes());
    v.extend_from_slice(&1u32.to_le_bytes());
    for (i, f) in frames.iter().enumerate() {
        v.extend_from_slice(&(1_000 + i as u32).to_le_bytes());
        v.extend_from_slice(&0u32.to_le_bytes());
        v.extend_from_slice(&(f.len() as u32).to_le_bytes());
        v.extend_from_slice(&(f.len() as u32).to_le_bytes());
        v.extend_from_slice(f);
    }
    v
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).expect("write capture");
    p.to_str().expect("utf-8 temp path").to_string()
}

/// Cut inside record 3's data: exit 1 with an error naming the file and
/// record 3, after the flow records of the two packets before it.
#[test]
fn file_cut_inside_a_record_reports_it_after_the_records() {
    let dir = tempdir("malformed-cut");
    let whole = pcap(&[
        frame(1000, b"one"),
        frame(1003, b"two"),
        frame(1006, b"six"),
    ]);
    let path = write(&dir, "cut.pcap", &whole[..whole.len() - 5]);
    let o = run(&["flows", "-r", &path]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("streamcap: {path}: record 3 (byte offset ")),
        "{err}"
    );
    assert!(err.contains("file cut short"), "{err}");
    let recs = json_lines(&o.stdout);
    assert_eq!(recs.len(), 1, "one flow from the first two packets");
    // `flows` keeps statistics only: the 6 bytes are seen, not copied.
    assert_eq!(
        recs[0]["orig"]["stream_bytes"].as_u64(),
        Some(6),
        "{}",
        recs[0]
    );
    assert_eq!(recs[0]["end"].as_str(), Some("eof"), "{}", recs[0]);
    assert_eq!(recs[0]["orig"]["pkts"].as_u64(), Some(2), "{}", recs[0]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Cut inside the file header: exit 1, the file named, nothing printed.
#[test]
fn file_cut_inside_its_header_is_an_input_error() {
    let dir = tempdir("malformed-header");
    let whole = pcap(&[frame(1000, b"one")]);
    let path = write(&dir, "head.pcap", &whole[..20]);
    let o = run(&["flows", "-r", &path]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("streamcap: {path}")), "{err}");
    assert!(err.contains("file cut short"), "{err}");
    assert!(json_lines(&o.stdout).is_empty());
    assert!(!err.contains("panicked"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Frames that cannot be decoded (ARP, IHL 3, TCP data offset 2, a 6-byte
/// frame) are not input errors: exit 0, no flow records, no panic.
#[test]
fn undecodable_frames_are_not_input_errors() {
    let dir = tempdir("malformed-frames");
    let mut arp = vec![0xff; 12];
    arp.extend_from_slice(&[0x08, 0x06]);
    arp.extend_from_slice(&[0; 28]);
    let mut ihl = frame(1, b"x");
    ihl[14] = 0x43;
    let mut doff = frame(1, b"x");
    doff[14 + 20 + 12] = 0x20;
    let path = write(&dir, "junk.pcap", &pcap(&[arp, ihl, doff, vec![1; 6]]));
    let o = run(&["flows", "-r", &path]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(json_lines(&o.stdout).is_empty(), "no flows");
    assert!(!err.contains("panicked"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
