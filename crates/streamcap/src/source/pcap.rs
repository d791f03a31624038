//! Classic libpcap files: a 24-byte file header, then records of a 16-byte
//! header followed by the captured bytes.
//!
//! All four magic numbers are understood: `0xa1b2c3d4` (microsecond
//! timestamps) and `0xa1b23c4d` (nanosecond timestamps), each written in
//! either byte order. Files of format version 2.2 and older store a record's
//! captured and original lengths in the opposite order; like libpcap, the
//! reader swaps them back (and for version 2.3, where both orders exist, swaps
//! them when the captured length exceeds the original one).

use super::file::Fault;
use super::{LinkType, RawPacket, SourceErrorKind};
use crate::time::Timestamp;

/// The largest captured length (pcap `caplen`, pcapng block length) this
/// reader accepts: 16 MiB. Real captures stay far below it (tcpdump's default
/// snapshot length is 256 KiB, BIG TCP / GSO frames are under 512 KiB); a
/// larger value means the file is damaged, and following it would only skip
/// over garbage. Lengths below the bound that run past the end of the file are
/// reported as a truncated file instead.
pub(super) const MAX_CAPLEN: u32 = 16 * 1024 * 1024;

/// Length of the pcap file header.
pub(super) const FILE_HEADER_LEN: usize = 24;

/// Length of a pcap record header.
const RECORD_HEADER_LEN: usize = 16;

/// Byte order of the file being read.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Endian {
    /// Least significant byte first.
    Little,
    /// Most significant byte first.
    Big,
}

impl Endian {
    /// The `N` bytes at `at`, if present.
    fn bytes<const N: usize>(data: &[u8], at: usize) -> Option<[u8; N]> {
        data.get(at..at.checked_add(N)?)?.try_into().ok()
    }

    /// Reads a `u16` at `at`, or `None` past the end.
    pub(super) fn u16(self, data: &[u8], at: usize) -> Option<u16> {
        let b = Self::bytes::<2>(data, at)?;
        Some(match self {
            Endian::Little => u16::from_le_bytes(b),
            Endian::Big => u16::from_be_bytes(b),
        })
    }

    /// Reads a `u32` at `at`, or `None` past the end.
    pub(super) fn u32(self, data: &[u8], at: usize) -> Option<u32> {
        let b = Self::bytes::<4>(data, at)?;
        Some(match self {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        })
    }

    /// Reads an `i64` at `at`, or `None` past the end.
    pub(super) fn i64(self, data: &[u8], at: usize) -> Option<i64> {
        let b = Self::bytes::<8>(data, at)?;
        Some(match self {
            Endian::Little => i64::from_le_bytes(b),
            Endian::Big => i64::from_be_bytes(b),
        })
    }
}

/// The pcap magic numbers as they appear on disk (first four bytes).
const MAGIC_US_LE: [u8; 4] = [0xd4, 0xc3, 0xb2, 0xa1];
const MAGIC_US_BE: [u8; 4] = [0xa1, 0xb2, 0xc3, 0xd4];
const MAGIC_NS_LE: [u8; 4] = [0x4d, 0x3c, 0xb2, 0xa1];
const MAGIC_NS_BE: [u8; 4] = [0xa1, 0xb2, 0x3c, 0x4d];

/// Whether `magic` (the first four bytes of a file) is a pcap magic number.
pub(super) fn is_pcap_magic(magic: [u8; 4]) -> bool {
    matches!(magic, MAGIC_US_LE | MAGIC_US_BE | MAGIC_NS_LE | MAGIC_NS_BE)
}

/// Order of the two length fields in a record header, by file version.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum LengthOrder {
    /// Captured length, then original length (version 2.4 and everything else).
    Normal,
    /// Original length first (version 2.2 and older).
    Swapped,
    /// Version 2.3: written both ways; swapped when captured > original.
    Maybe,
}

/// Reading state of a pcap file; the bytes themselves live in the
/// [`FileSource`](super::FileSource).
#[derive(Debug)]
pub(super) struct PcapReader {
    endian: Endian,
    /// Nanoseconds per unit of a timestamp's fractional part (1 for
    /// nanosecond files, 1,000 for microsecond ones).
    frac_unit_ns: u64,
    link: LinkType,
    /// Whether the decoder understands `link` (checked once, reported at the
    /// first record).
    link_supported: bool,
    /// How the record header orders captured and original length.
    lengths: LengthOrder,
    /// Offset of the next record.
    pos: usize,
    /// Packet records yielded so far.
    records: u64,
}

impl PcapReader {
    /// Parses the file header. `data` must start with a pcap magic number.
    pub(super) fn new(data: &[u8]) -> Result<PcapReader, Fault> {
        let magic: [u8; 4] = match data.get(..4).and_then(|m| m.try_into().ok()) {
            Some(m) => m,
            None => return Err(header_truncated(data.len())),
        };
        let (endian, nanos) = match magic {
            MAGIC_US_LE => (Endian::Little, false),
            MAGIC_US_BE => (Endian::Big, false),
            MAGIC_NS_LE => (Endian::Little, true),
            MAGIC_NS_BE => (Endian::Big, true),
            _ => {
                return Err(Fault::header(
                    0,
                    SourceErrorKind::BadMagic(u32::from_be_bytes(magic)),
                ))
            }
        };
        if data.len() < FILE_HEADER_LEN {
            return Err(header_truncated(data.len()));
        }
        // The link-type field carries the LINKTYPE_ value in its low 16 bits;
        // the upper bits hold the FCS-length flag and length, which we ignore.
        let linktype = endian
            .u32(data, 20)
            .ok_or_else(|| header_truncated(data.len()))?;
        let major = endian.u16(data, 4).unwrap_or(0);
        let minor = endian.u16(data, 6).unwrap_or(0);
        let lengths = match (major, minor) {
            (2, 0..=2) => LengthOrder::Swapped,
            (2, 3) => LengthOrder::Maybe,
            _ => LengthOrder::Normal,
        };
        let link = LinkType((linktype & 0xffff) as u16);
        Ok(PcapReader {
            endian,
            frac_unit_ns: if nanos { 1 } else { 1_000 },
            lengths,
            link,
            link_supported: link.is_supported(),
            pos: FILE_HEADER_LEN,
            records: 0,
        })
    }

    /// Bytes consumed so far.
    pub(super) fn position(&self) -> usize {
        self.pos
    }

    /// Moves the position back by `by` bytes: the caller dropped that many
    /// bytes from the front of the data it passes (a sliding window).
    pub(super) fn rebase(&mut self, by: usize) {
        self.pos = self.pos.saturating_sub(by);
    }

    /// Whether `data` holds the whole next record, or enough of it to tell
    /// that it is broken: `false` when more bytes are needed to decide.
    /// Changes nothing.
    pub(super) fn next_is_ready(&self, data: &[u8]) -> bool {
        let Some((h, body)) = data
            .get(self.pos..)
            .and_then(|r| r.split_first_chunk::<RECORD_HEADER_LEN>())
        else {
            return false;
        };
        let (_, _, caplen, _) = self.header(h);
        caplen > MAX_CAPLEN || body.len() >= caplen as usize
    }

    /// The next packet, an error, or `None` at the end of the file.
    ///
    /// The common case stays small enough to be inlined into the batch
    /// loop; every fault is built by [`PcapReader::fault`], out of line.
    #[inline(always)]
    pub(super) fn next<'a>(&mut self, data: &'a [u8]) -> Option<Result<RawPacket<'a>, Fault>> {
        self.next_with(data, |p| p)
    }

    /// [`PcapReader::next`], handing the packet to `emit` in place.
    #[inline(always)]
    pub(super) fn next_with<'a, R>(
        &mut self,
        data: &'a [u8],
        emit: impl FnOnce(RawPacket<'a>) -> R,
    ) -> Option<Result<R, Fault>> {
        let pos = self.pos;
        let rest = data.get(pos..).filter(|r| !r.is_empty())?;
        // The whole record header at once: one bounds check, and the four
        // fields are then read from a fixed-size array.
        if let Some((h, body)) = rest.split_first_chunk::<RECORD_HEADER_LEN>() {
            let (secs, frac, caplen, orig_len) = self.header(h);
            if caplen <= MAX_CAPLEN && self.link_supported {
                if let Some(bytes) = body.get(..caplen as usize) {
                    let record = self.records.saturating_add(1);
                    self.pos = pos + RECORD_HEADER_LEN + caplen as usize;
                    self.records = record;
                    return Some(Ok(emit(RawPacket {
                        ts: Timestamp::from_secs_nanos(
                            u64::from(secs),
                            u64::from(frac) * self.frac_unit_ns,
                        ),
                        link: self.link,
                        data: bytes,
                        // A record claiming less on the wire than it captured
                        // is inconsistent but harmless: trust the captured bytes.
                        orig_len: orig_len.max(caplen),
                        record,
                        interface: 0,
                    })));
                }
            }
        }
        Some(Err(self.fault(rest)))
    }

    /// A record header's fields in file order: seconds, fraction, captured
    /// length, original length (the lengths put back in that order for
    /// files of version 2.3 and older).
    #[inline(always)]
    fn header(&self, h: &[u8; RECORD_HEADER_LEN]) -> (u32, u32, u32, u32) {
        let field = |i: usize| {
            let b = [h[i], h[i + 1], h[i + 2], h[i + 3]];
            match self.endian {
                Endian::Little => u32::from_le_bytes(b),
                Endian::Big => u32::from_be_bytes(b),
            }
        };
        let (secs, frac, caplen, orig_len) = (field(0), field(4), field(8), field(12));
        if self.lengths == LengthOrder::Swapped
            || (self.lengths == LengthOrder::Maybe && caplen > orig_len)
        {
            (secs, frac, orig_len, caplen)
        } else {
            (secs, frac, caplen, orig_len)
        }
    }

    /// What is wrong with the record at the reader's position, `rest` being
    /// the file from there on (not empty); [`PcapReader::next`] comes here
    /// only when the record cannot be read.
    #[cold]
    #[inline(never)]
    fn fault(&self, rest: &[u8]) -> Fault {
        let record = self.records.saturating_add(1);
        let at = |kind| Fault::at(record, self.pos, kind);
        let Some((h, body)) = rest.split_first_chunk::<RECORD_HEADER_LEN>() else {
            return at(SourceErrorKind::Truncated(format!(
                "record header needs {RECORD_HEADER_LEN} bytes, only {} left",
                rest.len()
            )));
        };
        let (_, _, caplen, _) = self.header(h);
        if caplen > MAX_CAPLEN {
            return at(SourceErrorKind::BadLength(format!(
                "captured length {caplen} exceeds the {MAX_CAPLEN}-byte limit (damaged file?)"
            )));
        }
        if body.len() < caplen as usize {
            return at(SourceErrorKind::Truncated(format!(
                "record needs {caplen} bytes of packet data, only {} left",
                body.len()
            )));
        }
        at(SourceErrorKind::UnsupportedLinkType(self.link.0))
    }
}

/// The error for a file too short for the pcap file header.
fn header_truncated(len: usize) -> Fault {
    Fault::header(
        0,
        SourceErrorKind::Truncated(format!(
            "pcap file header needs {FILE_HEADER_LEN} bytes, the file has {len}"
        )),
    )
}

#[cfg(test)]
mod tests {
    use crate::source::{FileSource, LinkType, PacketSource, SourceErrorKind};

    /// Appends `v` in the chosen byte order.
    fn put32(out: &mut Vec<u8>, v: u32, big: bool) {
        out.extend_from_slice(&if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    }

    /// A pcap file header.
    fn header(nanos: bool, big: bool, snaplen: u32, linktype: u32) -> Vec<u8> {
        versioned_header(nanos, big, snaplen, linktype, 4)
    }

    /// A pcap file header of version 2.`minor`.
    fn versioned_header(
        nanos: bool,
        big: bool,
        snaplen: u32,
        linktype: u32,
        minor: u16,
    ) -> Vec<u8> {
        let mut out = Vec::new();
        put32(&mut out, if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 }, big);
        let major = 2u16;
        for v in [major, minor] {
            out.extend_from_slice(&if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            });
        }
        put32(&mut out, 0, big); // thiszone
        put32(&mut out, 0, big); // sigfigs
        put32(&mut out, snaplen, big);
        put32(&mut out, linktype, big);
        out
    }

    /// Appends one record; `caplen` may differ from `data.len()` to build broken files.
    fn record(
        out: &mut Vec<u8>,
        big: bool,
        secs: u32,
        frac: u32,
        caplen: u32,
        orig: u32,
        data: &[u8],
    ) {
        put32(out, secs, big);
        put32(out, frac, big);
        put32(out, caplen, big);
        put32(out, orig, big);
        out.extend_from_slice(data);
    }

    /// A well-formed record.
    fn rec(out: &mut Vec<u8>, big: bool, secs: u32, frac: u32, data: &[u8]) {
        record(
            out,
            big,
            secs,
            frac,
            data.len() as u32,
            data.len() as u32,
            data,
        );
    }

    fn open(bytes: Vec<u8>) -> FileSource {
        FileSource::from_bytes("test.pcap", bytes).expect("header parses")
    }

    #[test]
    fn windows_agree_with_the_whole_file_at_every_cut() {
        use crate::source::file::window_check::assert_windows_agree;
        for big in [false, true] {
            let mut f = header(false, big, 65535, 1);
            for (i, len) in [14usize, 60, 1, 300, 0, 77].into_iter().enumerate() {
                rec(&mut f, big, 100 + i as u32, 7, &vec![i as u8; len]);
            }
            for cut in 0..=f.len() {
                assert_windows_agree(&f[..cut], &format!("pcap-{big}-{cut}"));
            }
            // A damaged length and an unsupported link type, past a window.
            let mut bad = f.clone();
            record(&mut bad, big, 1, 2, 20_000_000, 60, &[0; 60]);
            assert_windows_agree(&bad, &format!("pcap-{big}-caplen"));
            let mut other = header(false, big, 65535, 147);
            rec(&mut other, big, 1, 2, &[0; 40]);
            assert_windows_agree(&other, &format!("pcap-{big}-link"));
        }
        // A generated capture of a few thousand packets.
        let pcap = streamcap_gen::Campus::new(streamcap_gen::CampusConfig {
            seed: 21,
            packets: 3_000,
            ..streamcap_gen::CampusConfig::default()
        })
        .to_bytes()
        .0;
        assert_windows_agree(&pcap, "campus");
        assert_windows_agree(&pcap[..pcap.len() - 5], "campus-cut");
    }

    #[test]
    fn all_four_magics() {
        for nanos in [false, true] {
            for big in [false, true] {
                let mut f = header(nanos, big, 65535, 1);
                rec(&mut f, big, 1_700_000_000, 123, &[1, 2, 3]);
                rec(&mut f, big, 1_700_000_001, 999_999, &[4; 60]);
                let total = f.len() as u64;
                let mut src = open(f);
                assert!(!src.is_pcapng());
                assert_eq!(src.progress(), Some((24, total)));
                let scale = if nanos { 1 } else { 1000 };
                let p = src.next_packet().unwrap().unwrap();
                assert_eq!(p.ts.secs(), 1_700_000_000);
                assert_eq!(u64::from(p.ts.subsec_nanos()), 123 * scale);
                assert_eq!(p.data, &[1, 2, 3]);
                assert_eq!((p.record, p.orig_len, p.interface), (1, 3, 0));
                assert_eq!(p.link, LinkType::ETHERNET);
                let p = src.next_packet().unwrap().unwrap();
                assert_eq!(p.ts.as_nanos(), 1_700_000_001_000_000_000 + 999_999 * scale);
                assert_eq!((p.record, p.data.len()), (2, 60));
                assert!(src.next_packet().is_none());
                assert!(src.next_packet().is_none());
                assert_eq!(src.progress(), Some((total, total)));
            }
        }
    }

    #[test]
    fn linktype_fcs_bits_ignored() {
        // FCS-length flag and length 4 in the upper bits, LINKTYPE_RAW below.
        let mut f = header(false, false, 65535, 0x1400_0000 | 101);
        rec(&mut f, false, 1, 0, &[0x45]);
        let mut src = open(f);
        assert_eq!(src.next_packet().unwrap().unwrap().link, LinkType::RAW);
    }

    #[test]
    fn odd_lengths_tolerated() {
        let mut f = header(false, true, 64, 1);
        // caplen > orig_len: trust caplen.
        record(&mut f, true, 1, 0, 10, 4, &[7; 10]);
        // caplen > snaplen but well under the bound.
        record(&mut f, true, 2, 0, 300_000, 300_000, &vec![8; 300_000]);
        // Truncated by snaplen: orig_len larger.
        record(&mut f, true, 3, 0, 4, 1500, &[9; 4]);
        let mut src = open(f);
        let p = src.next_packet().unwrap().unwrap();
        assert_eq!(
            (p.data.len(), p.orig_len, p.is_truncated()),
            (10, 10, false)
        );
        let p = src.next_packet().unwrap().unwrap();
        assert_eq!(p.data.len(), 300_000);
        let p = src.next_packet().unwrap().unwrap();
        assert_eq!(
            (p.data.len(), p.orig_len, p.is_truncated()),
            (4, 1500, true)
        );
        assert!(src.next_packet().is_none());
    }

    #[test]
    fn header_only_file_is_empty() {
        let mut src = open(header(false, false, 65535, 1));
        assert!(src.next_packet().is_none());
        // No packet, so an unsupported link type is never an error.
        let mut src = open(header(true, true, 65535, 284));
        assert!(src.next_packet().is_none());
    }

    #[test]
    fn bad_magic_and_short_header() {
        let err =
            FileSource::from_bytes("x.pcap", vec![0x12, 0x34, 0x56, 0x78, 0, 0, 0, 0]).unwrap_err();
        assert!(
            matches!(err.kind, SourceErrorKind::BadMagic(0x1234_5678)),
            "{err}"
        );
        assert_eq!(err.record, None);
        assert!(err.to_string().contains("x.pcap"));

        for len in [0, 3] {
            let err = FileSource::from_bytes("x.pcap", vec![0xd4; len]).unwrap_err();
            assert!(matches!(err.kind, SourceErrorKind::Truncated(_)), "{err}");
        }
        let mut f = header(false, false, 65535, 1);
        f.truncate(20);
        let err = FileSource::from_bytes("x.pcap", f).unwrap_err();
        assert!(matches!(err.kind, SourceErrorKind::Truncated(_)), "{err}");
        assert_eq!((err.record, err.offset), (None, Some(0)));
    }

    /// Two good records, then whatever `tail` appends; returns the error seen
    /// after exactly two packets.
    fn error_after_two(big: bool, tail: impl FnOnce(&mut Vec<u8>)) -> crate::source::SourceError {
        let mut f = header(false, big, 65535, 1);
        rec(&mut f, big, 1, 0, &[1; 20]);
        rec(&mut f, big, 2, 0, &[2; 30]);
        tail(&mut f);
        let mut src = open(f);
        assert_eq!(src.next_packet().unwrap().unwrap().data, &[1; 20]);
        assert_eq!(src.next_packet().unwrap().unwrap().data, &[2; 30]);
        let err = src.next_packet().expect("an error").expect_err("an error");
        assert!(src.next_packet().is_none());
        assert!(src.next_packet().is_none());
        err
    }

    #[test]
    fn truncated_last_record() {
        let err = error_after_two(false, |f| record(f, false, 3, 0, 100, 100, &[3; 40]));
        assert!(matches!(err.kind, SourceErrorKind::Truncated(_)), "{err}");
        assert_eq!((err.record, err.offset), (Some(3), Some(24 + 36 + 46)));
        let msg = err.to_string();
        assert!(
            msg.contains("test.pcap") && msg.contains("record 3") && msg.contains("cut short"),
            "{msg}"
        );
    }

    #[test]
    fn truncated_record_header() {
        let err = error_after_two(true, |f| f.extend_from_slice(&[0; 7]));
        assert!(matches!(err.kind, SourceErrorKind::Truncated(_)), "{err}");
        assert_eq!(err.record, Some(3));
    }

    #[test]
    fn impossible_caplen() {
        let err = error_after_two(false, |f| record(f, false, 3, 0, 0x5400_0000, 60, &[0; 64]));
        assert!(matches!(err.kind, SourceErrorKind::BadLength(_)), "{err}");
        assert_eq!((err.record, err.offset), (Some(3), Some(106)));
        // Just over the bound is impossible even if the bytes were there.
        let err = error_after_two(false, |f| {
            record(f, false, 3, 0, super::MAX_CAPLEN + 1, 60, &[])
        });
        assert!(matches!(err.kind, SourceErrorKind::BadLength(_)), "{err}");
    }

    #[test]
    fn unsupported_link_type_at_first_packet() {
        let mut f = header(false, false, 65535, 284);
        rec(&mut f, false, 1, 0, &[0; 14]);
        let mut src = open(f);
        let err = src.next_packet().unwrap().unwrap_err();
        assert!(
            matches!(err.kind, SourceErrorKind::UnsupportedLinkType(284)),
            "{err}"
        );
        assert_eq!(err.record, Some(1));
        assert!(src.next_packet().is_none());
    }

    #[test]
    fn old_versions_swap_lengths() {
        // Version 2.2: original length first, then captured length.
        let mut f = versioned_header(false, false, 65535, 1, 2);
        record(&mut f, false, 1, 0, 1500, 4, &[1; 4]);
        record(&mut f, false, 2, 0, 6, 6, &[2; 6]);
        let mut src = open(f);
        let p = src.next_packet().unwrap().unwrap();
        assert_eq!((p.data.len(), p.orig_len), (4, 1500));
        assert_eq!(src.next_packet().unwrap().unwrap().data, &[2; 6]);
        assert!(src.next_packet().is_none());
        // Version 2.3: either order; the smaller is the captured length.
        let mut f = versioned_header(true, true, 65535, 1, 3);
        record(&mut f, true, 1, 0, 1500, 4, &[1; 4]);
        record(&mut f, true, 2, 0, 3, 900, &[2; 3]);
        let mut src = open(f);
        let p = src.next_packet().unwrap().unwrap();
        assert_eq!((p.data.len(), p.orig_len), (4, 1500));
        let p = src.next_packet().unwrap().unwrap();
        assert_eq!((p.data.len(), p.orig_len), (3, 900));
        assert!(src.next_packet().is_none());
    }
}
