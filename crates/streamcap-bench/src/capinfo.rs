//! Packet and wire-byte totals of a pcap or pcapng file (for Gbit/s and Mpps).

use std::fs;
use std::io;
use std::path::Path;

/// (packets, bytes on the wire = sum of original lengths).
pub fn totals(path: &Path) -> io::Result<(u64, u64)> {
    let d = fs::read(path)?;
    let bad = |m: &str| io::Error::new(io::ErrorKind::InvalidData, m.to_string());
    if d.len() < 24 {
        return Err(bad("file too short"));
    }
    let magic = u32::from_le_bytes([d[0], d[1], d[2], d[3]]);
    let (mut pk, mut by) = (0u64, 0u64);
    if magic == 0x0a0d_0d0a {
        // pcapng: byte order from each section header's magic.
        let mut at = 0usize;
        let mut le = true;
        while at + 12 <= d.len() {
            let rd = |o: usize, le: bool| {
                let b = [d[o], d[o + 1], d[o + 2], d[o + 3]];
                if le {
                    u32::from_le_bytes(b)
                } else {
                    u32::from_be_bytes(b)
                }
            };
            let btype = u32::from_le_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]]);
            if btype == 0x0a0d_0d0a {
                le = u32::from_le_bytes([d[at + 8], d[at + 9], d[at + 10], d[at + 11]])
                    == 0x1a2b_3c4d;
            }
            let btype = rd(at, le);
            let len = rd(at + 4, le) as usize;
            if len < 12 || at + len > d.len() {
                break;
            }
            match btype {
                6 if len >= 32 => {
                    pk += 1;
                    by += u64::from(rd(at + 24, le));
                }
                3 if len >= 16 => {
                    pk += 1;
                    by += u64::from(rd(at + 8, le));
                }
                _ => {}
            }
            at += len;
        }
        return Ok((pk, by));
    }
    let le = match magic {
        0xa1b2_c3d4 | 0xa1b2_3c4d => true,
        0xd4c3_b2a1 | 0x4d3c_b2a1 => false,
        _ => return Err(bad("not a pcap or pcapng file")),
    };
    let rd = |o: usize| {
        let b = [d[o], d[o + 1], d[o + 2], d[o + 3]];
        if le {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        }
    };
    let mut at = 24usize;
    while at + 16 <= d.len() {
        let incl = rd(at + 8) as usize;
        pk += 1;
        by += u64::from(rd(at + 12));
        at += 16 + incl;
    }
    Ok((pk, by))
}
