//! Idle-connection workload: `N` TCP connections that each complete a
//! three-way handshake (SYN, SYN-ACK, ACK) and then stay open, silent, to
//! the end of the file (no data, no FIN, no RST).
//!
//! Frames are Ethernet II + IPv4 (20 bytes, DF) + TCP (20 bytes, no
//! options): 54 bytes each, with valid IPv4 and TCP checksums. Connection
//! `i` goes from `10.1.(h >> 8).(h & 255)` port `1024 + i / 65536`
//! (`h = i % 65536`) to `192.0.2.1:443`, so every 5-tuple is distinct. The
//! handshakes follow one another, one packet per microsecond, so a million
//! connections span 3 seconds of capture time: far below any inactivity
//! timeout (streamcap's TCP default is 300 s; libnids has none for
//! established connections).

use std::fs::File;
use std::io::{self, BufWriter};
use std::path::Path;

use streamcap_gen::PcapWriter;

/// Most connections the address plan can make distinct (65,536 client
/// addresses × 64,512 client ports).
pub const MAX_CONNECTIONS: u64 = 65_536 * 64_512;

/// Capture time of the first packet (2024-05-01 12:00:00 UTC, the sample
/// capture's start).
const START_NS: u64 = streamcap_gen::sample::SAMPLE_START_NS;

/// Bytes of every frame (Ethernet 14 + IPv4 20 + TCP 20).
const FRAME_LEN: usize = 54;

const SERVER_IP: [u8; 4] = [192, 0, 2, 1];
const SERVER_PORT: u16 = 443;
const CLIENT_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
const SERVER_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];

/// TCP flag bits.
const SYN: u8 = 0x02;
const ACK: u8 = 0x10;

/// Client address and port of connection `i`.
fn client(i: u64) -> ([u8; 4], u16) {
    let h = (i % 65_536) as u16;
    let [hi, lo] = h.to_be_bytes();
    // i < MAX_CONNECTIONS, so i / 65536 < 64512 and the port stays below 65536.
    let port = 1024 + (i / 65_536) as u16;
    ([10, 1, hi, lo], port)
}

/// A deterministic, well-spread initial sequence number.
fn isn(i: u64, salt: u64) -> u32 {
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt;
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    (x >> 32) as u32
}

/// Folds a one's-complement sum to 16 bits and complements it.
fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn sum16(data: &[u8]) -> u32 {
    data.chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c.get(1).copied().unwrap_or(0)])))
        .sum()
}

/// Fills `f` with one segment of a handshake.
#[allow(clippy::too_many_arguments)]
fn segment(
    f: &mut [u8; FRAME_LEN],
    from_client: bool,
    cip: [u8; 4],
    cport: u16,
    ip_id: u16,
    flags: u8,
    seq: u32,
    ack: u32,
) {
    let (smac, dmac) = if from_client {
        (CLIENT_MAC, SERVER_MAC)
    } else {
        (SERVER_MAC, CLIENT_MAC)
    };
    let (sip, dip, sport, dport) = if from_client {
        (cip, SERVER_IP, cport, SERVER_PORT)
    } else {
        (SERVER_IP, cip, SERVER_PORT, cport)
    };
    // Ethernet II.
    f[0..6].copy_from_slice(&dmac);
    f[6..12].copy_from_slice(&smac);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    // IPv4.
    let ip = &mut f[14..34];
    ip[0] = 0x45;
    ip[1] = 0;
    ip[2..4].copy_from_slice(&40u16.to_be_bytes());
    ip[4..6].copy_from_slice(&ip_id.to_be_bytes());
    ip[6..8].copy_from_slice(&0x4000u16.to_be_bytes());
    ip[8] = 64;
    ip[9] = 6;
    ip[10..12].copy_from_slice(&[0, 0]);
    ip[12..16].copy_from_slice(&sip);
    ip[16..20].copy_from_slice(&dip);
    let c = fold(sum16(ip));
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    // TCP.
    let tcp = &mut f[34..54];
    tcp[0..2].copy_from_slice(&sport.to_be_bytes());
    tcp[2..4].copy_from_slice(&dport.to_be_bytes());
    tcp[4..8].copy_from_slice(&seq.to_be_bytes());
    tcp[8..12].copy_from_slice(&ack.to_be_bytes());
    tcp[12] = 5 << 4;
    tcp[13] = flags;
    tcp[14..16].copy_from_slice(&65_535u16.to_be_bytes());
    tcp[16..20].copy_from_slice(&[0, 0, 0, 0]);
    // Pseudo-header: addresses, protocol, TCP length.
    let pseudo = sum16(&sip) + sum16(&dip) + 6 + 20;
    let c = fold(pseudo + sum16(tcp));
    tcp[16..18].copy_from_slice(&c.to_be_bytes());
}

/// Writes the workload of `n` idle connections to `out`; returns the
/// number of packets (3 × `n`).
///
/// # Errors
/// I/O errors, or `InvalidInput` when `n` exceeds [`MAX_CONNECTIONS`].
pub fn write_conns(out: &Path, n: u64) -> io::Result<u64> {
    if n > MAX_CONNECTIONS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("at most {MAX_CONNECTIONS} distinct connections"),
        ));
    }
    let file = BufWriter::with_capacity(1 << 20, File::create(out)?);
    let mut w = PcapWriter::new(file)?;
    let mut f = [0u8; FRAME_LEN];
    let mut ts = START_NS;
    for i in 0..n {
        let (cip, cport) = client(i);
        let (ic, is) = (isn(i, 0x5eed_c11e), isn(i, 0x5eed_5e7e));
        let id = (i as u16).wrapping_mul(3);
        let plan = [
            (true, id, SYN, ic, 0),
            (false, id.wrapping_add(1), SYN | ACK, is, ic.wrapping_add(1)),
            (
                true,
                id.wrapping_add(2),
                ACK,
                ic.wrapping_add(1),
                is.wrapping_add(1),
            ),
        ];
        for (from_client, ip_id, flags, seq, ack) in plan {
            segment(&mut f, from_client, cip, cport, ip_id, flags, seq, ack);
            w.write_packet(ts, &f)?;
            ts += 1_000;
        }
    }
    w.flush()?;
    Ok(w.records())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Bytes one connection adds to the pcap file: 3 × (16-byte record header + frame).
    const FILE_BYTES_PER_CONN: u64 = 3 * (16 + FRAME_LEN as u64);

    #[test]
    fn handshakes_are_valid_and_distinct() {
        let dir = std::env::temp_dir().join(format!("streamcap-conns-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("conns.pcap");
        let n = 70_000; // crosses the 65,536-address wrap into the next port
        assert_eq!(write_conns(&path, n).unwrap(), 3 * n);
        let d = std::fs::read(&path).unwrap();
        assert_eq!(d.len() as u64, 24 + n * FILE_BYTES_PER_CONN);
        let mut tuples = HashSet::new();
        let mut at = 24;
        let mut k = 0u64;
        while at < d.len() {
            let len = u32::from_le_bytes(d[at + 8..at + 12].try_into().unwrap()) as usize;
            let f = &d[at + 16..at + 16 + len];
            assert_eq!(len, FRAME_LEN);
            // IPv4 header and TCP checksums verify to zero.
            assert_eq!(fold(sum16(&f[14..34])), 0);
            let pseudo = sum16(&f[26..30]) + sum16(&f[30..34]) + 6 + 20;
            assert_eq!(fold(pseudo + sum16(&f[34..54])), 0);
            let flags = f[47];
            let expect = [SYN, SYN | ACK, ACK][(k % 3) as usize];
            assert_eq!(flags, expect);
            if k % 3 == 0 {
                assert!(tuples.insert(f[26..38].to_vec()), "duplicate 5-tuple");
            }
            at += 16 + len;
            k += 1;
        }
        assert_eq!(k, 3 * n);
        assert_eq!(tuples.len() as u64, n);
        assert!(write_conns(&path, MAX_CONNECTIONS + 1).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
