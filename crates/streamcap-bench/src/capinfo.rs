//! Packet and wire-byte totals of a pcap or pcapng file (for Gbit/s and Mpps),
//! read block by block so that a capture of any size takes a few KiB.

use std::fs;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

/// (packets, bytes on the wire = sum of original lengths).
pub fn totals(path: &Path) -> io::Result<(u64, u64)> {
    totals_of(BufReader::with_capacity(1 << 20, fs::File::open(path)?))
}

/// Reads up to `buf.len()` bytes; fewer only at the end of the input.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

fn u32_at(b: &[u8], at: usize, le: bool) -> u32 {
    let mut w = [0u8; 4];
    if let Some(s) = b.get(at..at + 4) {
        w.copy_from_slice(s);
    }
    if le {
        u32::from_le_bytes(w)
    } else {
        u32::from_be_bytes(w)
    }
}

/// [`totals`] of any seekable reader. A truncated last record or block ends
/// the count (a pcap record whose header is complete is counted; a pcapng
/// block is counted when it is whole).
pub fn totals_of<R: Read + Seek>(mut r: R) -> io::Result<(u64, u64)> {
    let bad = |m: &str| io::Error::new(io::ErrorKind::InvalidData, m.to_string());
    let size = r.seek(SeekFrom::End(0))?;
    r.seek(SeekFrom::Start(0))?;
    let mut head = [0u8; 24];
    if read_full(&mut r, &mut head)? < 24 {
        return Err(bad("file too short"));
    }
    let magic = u32_at(&head, 0, true);
    let (mut pk, mut by) = (0u64, 0u64);
    if magic == 0x0a0d_0d0a {
        // pcapng: byte order from each section header's magic. `b` holds
        // the first bytes of the block: enough for an enhanced packet
        // block's original length (offset 24).
        let mut le = u32_at(&head, 8, true) == 0x1a2b_3c4d;
        let first = u64::from(u32_at(&head, 4, le));
        if first < 24 || first > size {
            return Ok((0, 0));
        }
        r.seek_relative(first as i64 - 24)?;
        let mut at = first;
        let mut b = [0u8; 28];
        loop {
            let got = read_full(&mut r, &mut b[..12])?;
            if got < 12 {
                break;
            }
            if u32_at(&b, 0, true) == 0x0a0d_0d0a {
                le = u32_at(&b, 8, true) == 0x1a2b_3c4d;
            }
            let btype = u32_at(&b, 0, le);
            let len = u32_at(&b, 4, le) as usize;
            if len < 12 || at + len as u64 > size {
                break;
            }
            at += len as u64;
            let want = len.min(28);
            if read_full(&mut r, &mut b[12..want])? < want - 12 {
                break;
            }
            match btype {
                6 if len >= 32 => {
                    pk += 1;
                    by += u64::from(u32_at(&b, 24, le));
                }
                3 if len >= 16 => {
                    pk += 1;
                    by += u64::from(u32_at(&b, 8, le));
                }
                _ => {}
            }
            r.seek_relative((len - want) as i64)?;
        }
        return Ok((pk, by));
    }
    let le = match magic {
        0xa1b2_c3d4 | 0xa1b2_3c4d => true,
        0xd4c3_b2a1 | 0x4d3c_b2a1 => false,
        _ => return Err(bad("not a pcap or pcapng file")),
    };
    let mut rec = [0u8; 16];
    while read_full(&mut r, &mut rec)? == 16 {
        pk += 1;
        by += u64::from(u32_at(&rec, 12, le));
        r.seek_relative(i64::from(u32_at(&rec, 8, le)))?;
    }
    Ok((pk, by))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn pcap(records: &[(u32, u32)]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        v.extend_from_slice(&[2, 0, 4, 0]);
        v.extend_from_slice(&[0; 8]);
        v.extend_from_slice(&65535u32.to_le_bytes());
        v.extend_from_slice(&1u32.to_le_bytes());
        for &(incl, orig) in records {
            v.extend_from_slice(&[0; 8]);
            v.extend_from_slice(&incl.to_le_bytes());
            v.extend_from_slice(&orig.to_le_bytes());
            v.extend(std::iter::repeat_n(0xab, incl as usize));
        }
        v
    }

    fn block(btype: u32, body: &[u8]) -> Vec<u8> {
        let len = 12 + body.len() as u32;
        let mut v = btype.to_le_bytes().to_vec();
        v.extend_from_slice(&len.to_le_bytes());
        v.extend_from_slice(body);
        v.extend_from_slice(&len.to_le_bytes());
        v
    }

    #[test]
    fn pcap_totals_and_truncation() {
        let d = pcap(&[(60, 60), (100, 1514), (4, 4)]);
        assert_eq!(totals_of(Cursor::new(&d)).unwrap(), (3, 1578));
        // The last record's body cut short: its header still counts.
        let cut = &d[..d.len() - 2];
        assert_eq!(totals_of(Cursor::new(cut)).unwrap(), (3, 1578));
        // Its header cut short: it does not.
        let cut = &d[..d.len() - 4 - 10];
        assert_eq!(totals_of(Cursor::new(cut)).unwrap(), (2, 1574));
        assert!(totals_of(Cursor::new(&d[..10])).is_err());
        assert!(totals_of(Cursor::new(vec![0u8; 40])).is_err());
    }

    #[test]
    fn pcapng_totals() {
        let mut shb = 0x1a2b_3c4du32.to_le_bytes().to_vec();
        shb.extend_from_slice(&[1, 0, 0, 0]);
        shb.extend_from_slice(&[0xff; 8]);
        let mut d = block(0x0a0d_0d0a, &shb);
        d.extend(block(1, &[1, 0, 0, 0, 0, 0, 0, 0]));
        // Enhanced packet block: interface, ts hi, ts lo, caplen, origlen, data.
        let mut epb = Vec::new();
        for w in [0u32, 0, 0, 8, 1514] {
            epb.extend_from_slice(&w.to_le_bytes());
        }
        epb.extend_from_slice(&[0; 8]);
        d.extend(block(6, &epb));
        // Simple packet block: origlen, data.
        let mut spb = 60u32.to_le_bytes().to_vec();
        spb.extend_from_slice(&[0; 60]);
        d.extend(block(3, &spb));
        assert_eq!(totals_of(Cursor::new(&d)).unwrap(), (2, 1574));
        // A block cut short ends the count.
        let cut = &d[..d.len() - 30];
        assert_eq!(totals_of(Cursor::new(cut)).unwrap(), (1, 1514));
    }
}
