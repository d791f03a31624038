//! pcapng files: a sequence of blocks, grouped in sections.
//!
//! Understood blocks: Section Header (either byte order; a file may hold
//! several sections, and interface numbering restarts in each), Interface
//! Description (link type, `if_tsresol`, `if_tsoffset`), Enhanced Packet,
//! Simple Packet and the obsolete Packet block. Every other block (name
//! resolution, interface statistics, decryption secrets, custom, ...) is
//! skipped.
//!
//! Packets are yielded with their interface's link type whether or not the
//! decoder reads it: a file may mix interfaces, and a packet of an interface
//! whose link type the decoder does not know is counted by the engine
//! (`DecodeError::UnsupportedLink`, `unsupported_link` in the summary)
//! instead of ending the run, so the other interfaces' packets are kept.

use super::file::Fault;
use super::pcap::{Endian, MAX_CAPLEN};
use super::{LinkType, RawPacket, SourceErrorKind};
use crate::time::Timestamp;

/// Block type of a Section Header Block (a palindrome: same in both byte orders).
const SHB: u32 = 0x0A0D_0D0A;
/// Interface Description Block.
const IDB: u32 = 0x0000_0001;
/// Obsolete Packet Block.
const PB: u32 = 0x0000_0002;
/// Simple Packet Block.
const SPB: u32 = 0x0000_0003;
/// Enhanced Packet Block.
const EPB: u32 = 0x0000_0006;

/// Smallest possible block: type, length, trailing length.
const MIN_BLOCK_LEN: u32 = 12;
/// Smallest Section Header Block: 12 + byte-order magic, version, section length.
const MIN_SHB_LEN: u32 = 28;
/// Largest block accepted: the packet bound plus room for headers and options.
const MAX_BLOCK_LEN: u32 = MAX_CAPLEN + 64 * 1024;

/// `if_tsresol` option code.
const OPT_IF_TSRESOL: u16 = 9;
/// `if_tsoffset` option code.
const OPT_IF_TSOFFSET: u16 = 14;

/// Whether `magic` (the first four bytes of a file) starts a pcapng file.
pub(super) fn is_pcapng_magic(magic: [u8; 4]) -> bool {
    u32::from_le_bytes(magic) == SHB
}

/// Timestamp units of an interface.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Resolution {
    /// Units of 10^-n seconds.
    Pow10(u8),
    /// Units of 2^-n seconds.
    Pow2(u8),
}

/// What a packet needs to know about its interface.
#[derive(Copy, Clone, Debug)]
struct Interface {
    link: LinkType,
    snaplen: u32,
    resolution: Resolution,
    /// `if_tsoffset`: seconds added to every timestamp.
    offset_secs: i64,
}

/// Converts a 64-bit pcapng timestamp to nanoseconds since the epoch without
/// overflow (u128/i128 arithmetic), saturating at the ends of [`Timestamp`].
fn convert_ts(ticks: u64, resolution: Resolution, offset_secs: i64) -> Timestamp {
    let ticks = u128::from(ticks);
    let nanos: u128 = match resolution {
        Resolution::Pow10(n) if n <= 9 => ticks * 10u128.pow(u32::from(9 - n)),
        // 10^38 is the largest power of ten in a u128; any tick count divided
        // by 10^20 or more is already zero.
        Resolution::Pow10(n) => match 10u128.checked_pow(u32::from(n - 9)) {
            Some(div) => ticks / div,
            None => 0,
        },
        // ticks * 10^9 < 2^94, so the product cannot overflow.
        Resolution::Pow2(n) => (ticks * 1_000_000_000)
            .checked_shr(u32::from(n))
            .unwrap_or(0),
    };
    let total = i128::try_from(nanos)
        .unwrap_or(i128::MAX)
        .saturating_add(i128::from(offset_secs) * 1_000_000_000);
    Timestamp(u64::try_from(total.max(0)).unwrap_or(u64::MAX))
}

/// Reading state of a pcapng file; the bytes themselves live in the
/// [`FileSource`](super::FileSource).
#[derive(Debug)]
pub(super) struct PcapngReader {
    /// Byte order of the current section.
    endian: Endian,
    /// Interfaces of the current section, by index.
    interfaces: Vec<Interface>,
    /// Offset of the next block.
    pos: usize,
    /// Packet records yielded so far.
    records: u64,
    /// Timestamp of the last packet, for Simple Packet Blocks (which have none).
    last_ts: Timestamp,
}

impl PcapngReader {
    /// Parses the first Section Header Block. `data` must start with the
    /// pcapng magic number.
    pub(super) fn new(data: &[u8]) -> Result<PcapngReader, Fault> {
        let mut reader = PcapngReader {
            endian: Endian::Little,
            interfaces: Vec::new(),
            pos: 0,
            records: 0,
            last_ts: Timestamp::ZERO,
        };
        reader.section_header(data, None)?;
        Ok(reader)
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

    /// Reads the whole, valid blocks at the position that are not packets
    /// (section and interface headers, statistics, custom blocks...), as
    /// [`PcapngReader::next`] would, and stops at a packet block, at a block
    /// that `data` does not hold whole, or at a broken block (left for
    /// `next` to report). A window that slides along the file calls this
    /// before [`PcapngReader::next_is_ready`], so that a long run of such
    /// blocks is consumed as it comes instead of widening the window.
    pub(super) fn skip_metadata(&mut self, data: &[u8]) {
        loop {
            let pos = self.pos;
            let Some(btype) = self.endian.u32(data, pos) else {
                return;
            };
            if matches!(btype, EPB | PB | SPB) {
                return;
            }
            if btype == SHB {
                // Changes nothing when it fails (cut short or broken).
                if self
                    .section_header(data, Some(self.records.saturating_add(1)))
                    .is_err()
                {
                    return;
                }
                continue;
            }
            let Ok(block) = block_at(data, pos, self.endian, MIN_BLOCK_LEN) else {
                return;
            };
            // Changes nothing when it fails.
            if btype == IDB && self.interface_description(block.body).is_err() {
                return;
            }
            self.pos = block.end;
        }
    }

    /// Whether `data` holds the block at the position whole, or enough of it
    /// to tell that it is broken: `false` when more bytes are needed to
    /// decide. Changes nothing. After [`PcapngReader::skip_metadata`] the
    /// block is a packet, or a block that is cut short or broken, so a
    /// ready block makes the next call of [`PcapngReader::next`] decide.
    pub(super) fn next_is_ready(&self, data: &[u8]) -> bool {
        let pos = self.pos;
        let Some(btype) = self.endian.u32(data, pos) else {
            return false;
        };
        let endian = if btype == SHB {
            // A section header is read in its own byte order.
            match data.get(pos + 8..pos + 12) {
                None => return false,
                Some([0x4d, 0x3c, 0x2b, 0x1a]) => Endian::Little,
                Some([0x1a, 0x2b, 0x3c, 0x4d]) => Endian::Big,
                // A bad byte-order magic: `next` reports it.
                Some(_) => return true,
            }
        } else {
            self.endian
        };
        !matches!(
            block_at(data, pos, endian, MIN_BLOCK_LEN),
            Err(SourceErrorKind::Truncated(_))
        )
    }

    /// Parses the Section Header Block at `self.pos` and moves past it.
    /// `record` is `None` for the file's first block.
    fn section_header(&mut self, data: &[u8], record: Option<u64>) -> Result<(), Fault> {
        let pos = self.pos;
        let fault = |kind| Fault {
            record,
            offset: pos as u64,
            kind,
        };
        let remaining = data.len().saturating_sub(pos);
        let Some(bom) = data.get(pos + 8..pos + 12) else {
            return Err(fault(SourceErrorKind::Truncated(format!(
                "section header block needs at least {MIN_SHB_LEN} bytes, only {remaining} left"
            ))));
        };
        let endian = match bom {
            [0x4d, 0x3c, 0x2b, 0x1a] => Endian::Little,
            [0x1a, 0x2b, 0x3c, 0x4d] => Endian::Big,
            _ => {
                return Err(fault(SourceErrorKind::Malformed(format!(
                    "section header block has a bad byte-order magic {:02x?}",
                    bom
                ))))
            }
        };
        let block = block_at(data, pos, endian, MIN_SHB_LEN).map_err(fault)?;
        let major = endian.u16(block.body, 4).unwrap_or(0);
        let minor = endian.u16(block.body, 6).unwrap_or(0);
        if major != 1 {
            return Err(fault(SourceErrorKind::Malformed(format!(
                "unsupported pcapng version {major}.{minor}"
            ))));
        }
        self.endian = endian;
        self.interfaces.clear();
        self.pos = block.end;
        Ok(())
    }

    /// The next packet, an error, or `None` at the end of the file.
    pub(super) fn next<'a>(&mut self, data: &'a [u8]) -> Option<Result<RawPacket<'a>, Fault>> {
        loop {
            let pos = self.pos;
            let remaining = data.len().checked_sub(pos)?;
            if remaining == 0 {
                return None;
            }
            let record = self.records.saturating_add(1);
            let fault = |kind| Fault::at(record, pos, kind);
            if remaining < 8 {
                return Some(Err(fault(SourceErrorKind::Truncated(format!(
                    "a block header needs 8 bytes, only {remaining} left"
                )))));
            }
            let e = self.endian;
            let btype = e.u32(data, pos).unwrap_or(0);
            if btype == SHB {
                if let Err(f) = self.section_header(data, Some(record)) {
                    return Some(Err(f));
                }
                continue;
            }
            let block = match block_at(data, pos, e, MIN_BLOCK_LEN) {
                Ok(b) => b,
                Err(kind) => return Some(Err(fault(kind))),
            };
            let packet = match btype {
                IDB => {
                    match self.interface_description(block.body) {
                        Ok(()) => {}
                        Err(kind) => return Some(Err(fault(kind))),
                    }
                    None
                }
                EPB => Some(self.enhanced_packet(block.body, record)),
                PB => Some(self.obsolete_packet(block.body, record)),
                SPB => Some(self.simple_packet(block.body, record)),
                _ => None,
            };
            match packet {
                None => self.pos = block.end,
                Some(Ok(p)) => {
                    self.pos = block.end;
                    self.records = record;
                    self.last_ts = p.ts;
                    return Some(Ok(p));
                }
                Some(Err(kind)) => return Some(Err(fault(kind))),
            }
        }
    }

    /// Records an Interface Description Block.
    fn interface_description(&mut self, body: &[u8]) -> Result<(), SourceErrorKind> {
        let e = self.endian;
        let (Some(link), Some(snaplen)) = (e.u16(body, 0), e.u32(body, 4)) else {
            return Err(SourceErrorKind::BadLength(format!(
                "interface description block body of {} bytes, need at least 8",
                body.len()
            )));
        };
        let mut iface = Interface {
            link: LinkType(link),
            snaplen,
            resolution: Resolution::Pow10(6),
            offset_secs: 0,
        };
        for (code, value) in options(body.get(8..).unwrap_or_default(), e) {
            match (code, value) {
                (OPT_IF_TSRESOL, [r]) => {
                    iface.resolution = if r & 0x80 == 0 {
                        Resolution::Pow10(*r)
                    } else {
                        Resolution::Pow2(r & 0x7f)
                    };
                }
                (OPT_IF_TSOFFSET, v) if v.len() == 8 => {
                    iface.offset_secs = e.i64(v, 0).unwrap_or(0);
                }
                _ => {}
            }
        }
        self.interfaces.push(iface);
        Ok(())
    }

    /// The interface a packet refers to (of any link type: see the module
    /// documentation).
    fn interface(&self, index: u32) -> Result<Interface, SourceErrorKind> {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.interfaces.get(i))
            .copied()
            .ok_or_else(|| {
                SourceErrorKind::Malformed(format!(
                    "packet refers to interface {index}, but this section defines {} interface(s)",
                    self.interfaces.len()
                ))
            })
    }

    /// A packet from the body of an Enhanced Packet Block.
    fn enhanced_packet<'a>(
        &self,
        body: &'a [u8],
        record: u64,
    ) -> Result<RawPacket<'a>, SourceErrorKind> {
        let e = self.endian;
        let (Some(iface), Some(hi), Some(lo), Some(caplen), Some(orig_len)) = (
            e.u32(body, 0),
            e.u32(body, 4),
            e.u32(body, 8),
            e.u32(body, 12),
            e.u32(body, 16),
        ) else {
            return Err(short_body("enhanced packet", body.len(), 20));
        };
        self.packet(body, 20, iface, hi, lo, caplen, orig_len, record)
    }

    /// A packet from the body of an obsolete Packet Block.
    fn obsolete_packet<'a>(
        &self,
        body: &'a [u8],
        record: u64,
    ) -> Result<RawPacket<'a>, SourceErrorKind> {
        let e = self.endian;
        let (Some(iface), Some(hi), Some(lo), Some(caplen), Some(orig_len)) = (
            e.u16(body, 0),
            e.u32(body, 4),
            e.u32(body, 8),
            e.u32(body, 12),
            e.u32(body, 16),
        ) else {
            return Err(short_body("packet", body.len(), 20));
        };
        self.packet(body, 20, u32::from(iface), hi, lo, caplen, orig_len, record)
    }

    /// The common part of Enhanced and obsolete Packet Blocks.
    #[allow(clippy::too_many_arguments)]
    fn packet<'a>(
        &self,
        body: &'a [u8],
        data_at: usize,
        iface_index: u32,
        ts_high: u32,
        ts_low: u32,
        caplen: u32,
        orig_len: u32,
        record: u64,
    ) -> Result<RawPacket<'a>, SourceErrorKind> {
        if caplen > MAX_CAPLEN {
            return Err(SourceErrorKind::BadLength(format!(
                "captured length {caplen} exceeds the {MAX_CAPLEN}-byte limit (damaged file?)"
            )));
        }
        let Some(bytes) = body.get(data_at..data_at + caplen as usize) else {
            return Err(SourceErrorKind::BadLength(format!(
                "captured length {caplen} does not fit in a block body of {} bytes",
                body.len()
            )));
        };
        let iface = self.interface(iface_index)?;
        let ticks = (u64::from(ts_high) << 32) | u64::from(ts_low);
        Ok(RawPacket {
            ts: convert_ts(ticks, iface.resolution, iface.offset_secs),
            link: iface.link,
            data: bytes,
            orig_len: orig_len.max(caplen),
            record,
            interface: iface_index,
        })
    }

    /// A packet from the body of a Simple Packet Block: interface 0, no
    /// timestamp (the previous packet's is used).
    fn simple_packet<'a>(
        &self,
        body: &'a [u8],
        record: u64,
    ) -> Result<RawPacket<'a>, SourceErrorKind> {
        let Some(orig_len) = self.endian.u32(body, 0) else {
            return Err(short_body("simple packet", body.len(), 4));
        };
        let iface = self.interface(0)?;
        let room = body.len().saturating_sub(4);
        let mut caplen = usize::try_from(orig_len).unwrap_or(usize::MAX).min(room);
        if iface.snaplen != 0 {
            caplen = caplen.min(iface.snaplen as usize);
        }
        let bytes = body.get(4..4 + caplen).unwrap_or_default();
        Ok(RawPacket {
            ts: self.last_ts,
            link: iface.link,
            data: bytes,
            orig_len: orig_len.max(caplen as u32),
            record,
            interface: 0,
        })
    }
}

/// The error for a block body too short for its fixed fields.
fn short_body(what: &str, len: usize, need: usize) -> SourceErrorKind {
    SourceErrorKind::BadLength(format!(
        "{what} block body of {len} bytes, need at least {need}"
    ))
}

/// A block's body and where the block ends.
struct Block<'a> {
    body: &'a [u8],
    end: usize,
}

/// Validates the framing of the block at `pos` (at least 8 bytes present) and
/// returns its body.
fn block_at(
    data: &[u8],
    pos: usize,
    e: Endian,
    min_len: u32,
) -> Result<Block<'_>, SourceErrorKind> {
    let len = e
        .u32(data, pos + 4)
        .ok_or_else(|| SourceErrorKind::Truncated("block header".into()))?;
    if len < min_len || len % 4 != 0 || len > MAX_BLOCK_LEN {
        return Err(SourceErrorKind::BadLength(format!(
            "block length {len} (must be a multiple of 4, at least {min_len} and at most {MAX_BLOCK_LEN})"
        )));
    }
    let end = pos.saturating_add(len as usize);
    if end > data.len() {
        return Err(SourceErrorKind::Truncated(format!(
            "block of {len} bytes, only {} left",
            data.len() - pos
        )));
    }
    let trailer = e.u32(data, end - 4).unwrap_or(0);
    if trailer != len {
        return Err(SourceErrorKind::BadLength(format!(
            "block length {len} at the start, {trailer} at the end"
        )));
    }
    let body = data.get(pos + 8..end - 4).unwrap_or_default();
    Ok(Block { body, end })
}

/// Iterates over the options in `area` as (code, value) pairs, stopping at
/// `opt_endofopt` or at the first option that does not fit.
fn options(area: &[u8], e: Endian) -> impl Iterator<Item = (u16, &[u8])> {
    let mut at = 0usize;
    std::iter::from_fn(move || {
        let code = e.u16(area, at)?;
        let len = usize::from(e.u16(area, at + 2)?);
        if code == 0 {
            return None;
        }
        let value = area.get(at + 4..at + 4 + len)?;
        at += 4 + len.div_ceil(4) * 4;
        Some((code, value))
    })
}

#[cfg(test)]
mod tests {
    use super::{convert_ts, Resolution};
    use crate::source::{FileSource, LinkType, PacketSource, SourceError, SourceErrorKind};
    use crate::time::Timestamp;

    /// Builds a pcapng file block by block, in one byte order per section.
    struct Ng {
        big: bool,
        out: Vec<u8>,
    }

    impl Ng {
        fn new(big: bool) -> Ng {
            let mut ng = Ng {
                big,
                out: Vec::new(),
            };
            ng.shb(big);
            ng
        }
        fn u16(&self, v: u16) -> [u8; 2] {
            if self.big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        }
        fn u32(&self, v: u32) -> [u8; 4] {
            if self.big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        }
        /// Appends a block with `body` padded to 4 bytes.
        fn block(&mut self, btype: u32, body: &[u8]) -> &mut Ng {
            let mut body = body.to_vec();
            while body.len() % 4 != 0 {
                body.push(0);
            }
            let len = body.len() as u32 + 12;
            self.raw_block(btype, len, &body, len)
        }
        /// Appends a block with explicit (possibly wrong) lengths.
        fn raw_block(&mut self, btype: u32, len: u32, body: &[u8], trailer: u32) -> &mut Ng {
            let (t, l, tr) = (self.u32(btype), self.u32(len), self.u32(trailer));
            self.out.extend_from_slice(&t);
            self.out.extend_from_slice(&l);
            self.out.extend_from_slice(body);
            self.out.extend_from_slice(&tr);
            self
        }
        /// Starts a new section in byte order `big`.
        fn shb(&mut self, big: bool) -> &mut Ng {
            self.big = big;
            let mut body = self.u32(0x1A2B_3C4D).to_vec();
            body.extend_from_slice(&self.u16(1));
            body.extend_from_slice(&self.u16(0));
            body.extend_from_slice(&[0xff; 8]); // section length: unknown
            self.block(super::SHB, &body)
        }
        /// An option (code, value) in the current byte order, padded.
        fn opt(&self, code: u16, value: &[u8]) -> Vec<u8> {
            let mut o = self.u16(code).to_vec();
            o.extend_from_slice(&self.u16(value.len() as u16));
            o.extend_from_slice(value);
            while o.len() % 4 != 0 {
                o.push(0);
            }
            o
        }
        fn idb(&mut self, link: u16, snaplen: u32, options: &[Vec<u8>]) -> &mut Ng {
            let mut body = self.u16(link).to_vec();
            body.extend_from_slice(&[0, 0]);
            body.extend_from_slice(&self.u32(snaplen));
            for o in options {
                body.extend_from_slice(o);
            }
            if !options.is_empty() {
                body.extend_from_slice(&[0; 4]); // opt_endofopt
            }
            self.block(super::IDB, &body)
        }
        fn epb_raw(&mut self, iface: u32, ts: u64, caplen: u32, orig: u32, data: &[u8]) -> &mut Ng {
            let mut body = self.u32(iface).to_vec();
            body.extend_from_slice(&self.u32((ts >> 32) as u32));
            body.extend_from_slice(&self.u32(ts as u32));
            body.extend_from_slice(&self.u32(caplen));
            body.extend_from_slice(&self.u32(orig));
            body.extend_from_slice(data);
            self.block(super::EPB, &body)
        }
        fn epb(&mut self, iface: u32, ts: u64, data: &[u8]) -> &mut Ng {
            self.epb_raw(iface, ts, data.len() as u32, data.len() as u32, data)
        }
        fn pb(&mut self, iface: u16, ts: u64, data: &[u8], orig: u32) -> &mut Ng {
            let mut body = self.u16(iface).to_vec();
            body.extend_from_slice(&self.u16(0)); // drops
            body.extend_from_slice(&self.u32((ts >> 32) as u32));
            body.extend_from_slice(&self.u32(ts as u32));
            body.extend_from_slice(&self.u32(data.len() as u32));
            body.extend_from_slice(&self.u32(orig));
            body.extend_from_slice(data);
            self.block(super::PB, &body)
        }
        fn spb(&mut self, orig: u32, data: &[u8]) -> &mut Ng {
            let mut body = self.u32(orig).to_vec();
            body.extend_from_slice(data);
            self.block(super::SPB, &body)
        }
        /// Some block type the reader must skip.
        fn other(&mut self, btype: u32, len: usize) -> &mut Ng {
            self.block(btype, &vec![0xee; len])
        }
        fn source(&self) -> FileSource {
            FileSource::from_bytes("test.pcapng", self.out.clone()).expect("header parses")
        }
    }

    fn full_file(big: bool) -> Vec<u8> {
        let mut ng = Ng::new(big);
        let ns = ng.opt(9, &[9]);
        let pow2 = ng.opt(9, &[0x80 | 10]);
        let offset = ng.opt(
            14,
            &ng.u32(0)
                .iter()
                .chain(&ng.u32(0))
                .copied()
                .collect::<Vec<_>>(),
        );
        let offset100 = if big {
            ng.opt(14, &100i64.to_be_bytes())
        } else {
            ng.opt(14, &100i64.to_le_bytes())
        };
        let comment = ng.opt(1, b"hello, world");
        ng.idb(1, 0, &[])
            .other(4, 20) // NRB
            .idb(101, 65535, &[comment, ns, offset])
            .idb(113, 96, &[pow2, offset100])
            .epb(0, 1_700_000_000_123_456, &[1; 14])
            .epb(1, 1_700_000_000_123_456_789, &[0x45; 21])
            .other(5, 24) // ISB
            .epb(2, 3 * 1024 + 512, &[2; 16])
            .spb(100, &[3; 40])
            .pb(1, 42, &[4; 5], 9)
            .other(0x0000_000A, 8) // DSB
            .other(0x4000_0BAD, 12); // custom
                                     // A second section, in the other byte order; numbering restarts.
        ng.shb(!big).idb(101, 0, &[]).epb(0, 7_000_000, &[5; 3]);
        ng.out
    }

    #[test]
    fn windows_agree_with_the_whole_file_at_every_cut() {
        for big in [false, true] {
            let bytes = full_file(big);
            for cut in 0..=bytes.len() {
                crate::source::file::window_check::assert_windows_agree(
                    &bytes[..cut],
                    &format!("ng-{big}-{cut}"),
                );
            }
        }
    }

    #[test]
    fn windows_agree_on_broken_blocks_at_every_cut() {
        use crate::source::file::window_check::assert_windows_agree;
        for big in [false, true] {
            let start = |ng: &mut Ng| {
                ng.idb(1, 0, &[]).epb(0, 1, &[1; 20]).other(0x4000_0BAD, 40);
            };
            let mut variants: Vec<(&str, Vec<u8>)> = Vec::new();
            let mut ng = Ng::new(big);
            start(&mut ng);
            ng.raw_block(super::EPB, 52, &[0; 40], 56); // trailer disagrees
            variants.push(("trailer", ng.out.clone()));
            let mut ng = Ng::new(big);
            start(&mut ng);
            ng.epb(7, 2, &[2; 30]); // no interface 7
            variants.push(("interface", ng.out.clone()));
            let mut ng = Ng::new(big);
            ng.idb(147, 0, &[]).epb(0, 2, &[2; 30]); // unsupported link type
            variants.push(("link", ng.out.clone()));
            let mut ng = Ng::new(big);
            start(&mut ng);
            ng.block(super::IDB, &[0; 4]); // interface block too short
            variants.push(("idb", ng.out.clone()));
            let mut ng = Ng::new(big);
            start(&mut ng);
            ng.raw_block(super::SHB, 28, &[0xee; 16], 28); // bad byte-order magic
            variants.push(("shb", ng.out.clone()));
            for (name, bytes) in variants {
                for cut in 0..=bytes.len() {
                    assert_windows_agree(&bytes[..cut], &format!("ng-{name}-{big}-{cut}"));
                }
            }
        }
    }

    #[test]
    fn a_long_run_of_other_blocks_does_not_widen_the_window() {
        let mut ng = Ng::new(false);
        ng.idb(1, 0, &[]).epb(0, 1, &[1; 60]);
        for _ in 0..2000 {
            ng.other(0x4000_0BAD, 1000);
        }
        ng.idb(1, 0, &[]).epb(1, 2, &[2; 60]);
        let path = std::env::temp_dir().join(format!("streamcap-ng-run-{}", std::process::id()));
        std::fs::write(&path, &ng.out).unwrap();
        let mut src = FileSource::open_with_window(&path, 4096, false).unwrap();
        let (mut packets, mut widest) = (0, 0);
        loop {
            let mut batch = Vec::new();
            assert!(src.next_batch(&mut batch, 8).is_none());
            if batch.is_empty() {
                break;
            }
            packets += batch.len();
            widest = widest.max(src.window_buffer_len().unwrap_or(0));
        }
        std::fs::remove_file(&path).unwrap();
        assert_eq!(packets, 2);
        assert!(widest <= 4096, "the window grew to {widest} bytes");
    }

    #[test]
    fn full_file_both_byte_orders() {
        for big in [false, true] {
            let bytes = full_file(big);
            let total = bytes.len() as u64;
            let mut src = FileSource::from_bytes("t.pcapng", bytes).unwrap();
            assert!(src.is_pcapng());
            let mut got = Vec::new();
            while let Some(p) = src.next_packet() {
                let p = p.unwrap();
                got.push((
                    p.record,
                    p.interface,
                    p.link,
                    p.ts,
                    p.data.to_vec(),
                    p.orig_len,
                ));
            }
            assert_eq!(src.progress(), Some((total, total)));
            let want = vec![
                (
                    1,
                    0,
                    LinkType::ETHERNET,
                    Timestamp(1_700_000_000_123_456_000),
                    vec![1; 14],
                    14,
                ),
                (
                    2,
                    1,
                    LinkType::RAW,
                    Timestamp(1_700_000_000_123_456_789),
                    vec![0x45; 21],
                    21,
                ),
                // 3.5 s in units of 2^-10 s, plus the 100 s offset.
                (
                    3,
                    2,
                    LinkType::LINUX_SLL,
                    Timestamp(103_500_000_000),
                    vec![2; 16],
                    16,
                ),
                // SPB: interface 0, previous timestamp, 40 bytes of 100 on the wire.
                (
                    4,
                    0,
                    LinkType::ETHERNET,
                    Timestamp(103_500_000_000),
                    vec![3; 40],
                    100,
                ),
                (5, 1, LinkType::RAW, Timestamp(42), vec![4; 5], 9),
                (6, 0, LinkType::RAW, Timestamp(7_000_000_000), vec![5; 3], 3),
            ];
            assert_eq!(got, want, "big = {big}");
        }
    }

    #[test]
    fn spb_limited_by_snaplen_and_orig_len() {
        let mut ng = Ng::new(false);
        ng.idb(1, 8, &[]).spb(20, &[1; 12]).spb(3, &[2; 4]);
        let mut src = ng.source();
        let p = src.next_packet().unwrap().unwrap();
        assert_eq!((p.data, p.orig_len), (&[1u8; 8][..], 20));
        let p = src.next_packet().unwrap().unwrap();
        // Body is padded to 4 bytes; the packet is only orig_len long.
        assert_eq!((p.data, p.orig_len), (&[2u8; 3][..], 3));
    }

    #[test]
    fn epb_caplen_above_orig_len() {
        let mut ng = Ng::new(true);
        ng.idb(1, 0, &[]).epb_raw(0, 1, 10, 4, &[1; 10]);
        let p = ng.source().next_packet().unwrap().unwrap().orig_len;
        assert_eq!(p, 10);
    }

    #[test]
    fn timestamps() {
        // Beyond 2106 (2^32 s): 5e9 s in microseconds.
        let t = convert_ts(5_000_000_000 * 1_000_000, Resolution::Pow10(6), 0);
        assert_eq!(t.secs(), 5_000_000_000);
        // No overflow in the intermediate product; saturate at the end.
        assert_eq!(
            convert_ts(u64::MAX, Resolution::Pow10(6), 0),
            Timestamp(u64::MAX)
        );
        assert_eq!(
            convert_ts(u64::MAX, Resolution::Pow10(9), 0),
            Timestamp(u64::MAX)
        );
        assert_eq!(
            convert_ts(u64::MAX, Resolution::Pow10(12), 0).0,
            u64::MAX / 1000
        );
        assert_eq!(
            convert_ts(u64::MAX, Resolution::Pow10(127), 0),
            Timestamp(0)
        );
        assert_eq!(convert_ts(u64::MAX, Resolution::Pow2(127), 0), Timestamp(0));
        assert_eq!(
            convert_ts(1 << 30, Resolution::Pow2(30), 0),
            Timestamp(1_000_000_000)
        );
        assert_eq!(convert_ts(1 << 20, Resolution::Pow2(0), 0).secs(), 1 << 20);
        // Offsets in both directions, clamped at the epoch.
        assert_eq!(convert_ts(5, Resolution::Pow10(0), -10), Timestamp(0));
        assert_eq!(convert_ts(5, Resolution::Pow10(0), 10).secs(), 15);
        assert_eq!(
            convert_ts(u64::MAX, Resolution::Pow10(9), i64::MAX),
            Timestamp(u64::MAX)
        );
        assert_eq!(
            convert_ts(1_000, Resolution::Pow10(0), i64::MIN),
            Timestamp(0)
        );
    }

    #[test]
    fn after_2106_in_a_file() {
        let secs: u64 = 5_000_000_000;
        let mut ng = Ng::new(false);
        ng.idb(1, 0, &[]).epb(0, secs * 1_000_000 + 7, &[0; 20]);
        let p = ng.source().next_packet().unwrap().unwrap().ts;
        assert_eq!(p, Timestamp(secs * 1_000_000_000 + 7_000));
    }

    /// A section with one interface and two good packets, then `tail`;
    /// returns the error seen right after them.
    fn error_after_two(big: bool, tail: impl FnOnce(&mut Ng)) -> SourceError {
        let mut ng = Ng::new(big);
        ng.idb(1, 0, &[]).epb(0, 1, &[1; 20]).spb(30, &[2; 30]);
        tail(&mut ng);
        let mut src = ng.source();
        assert_eq!(src.next_packet().unwrap().unwrap().data, &[1; 20]);
        assert_eq!(src.next_packet().unwrap().unwrap().data, &[2; 30]);
        let err = src.next_packet().expect("an error").expect_err("an error");
        assert!(src.next_packet().is_none());
        assert!(src.next_packet().is_none());
        err
    }

    /// Offset where `error_after_two`'s tail starts.
    const TAIL: u64 = 28 + 20 + 52 + 48;

    #[test]
    fn block_length_not_multiple_of_4() {
        let err = error_after_two(false, |ng| {
            ng.raw_block(6, 34, &[0; 22], 34);
        });
        assert!(matches!(err.kind, SourceErrorKind::BadLength(_)), "{err}");
        assert_eq!((err.record, err.offset), (Some(3), Some(TAIL)));
    }

    #[test]
    fn block_length_too_small() {
        let err = error_after_two(true, |ng| {
            ng.raw_block(5, 8, &[], 8);
        });
        assert!(matches!(err.kind, SourceErrorKind::BadLength(_)), "{err}");
        assert_eq!(err.record, Some(3));
    }

    #[test]
    fn block_past_end_of_file() {
        let err = error_after_two(false, |ng| {
            ng.epb(0, 5, &[3; 40]);
            ng.out.truncate(ng.out.len() - 10);
        });
        assert!(matches!(err.kind, SourceErrorKind::Truncated(_)), "{err}");
        assert_eq!((err.record, err.offset), (Some(3), Some(TAIL)));
        assert!(err.to_string().contains("cut short"));
    }

    #[test]
    fn stray_bytes_at_end() {
        let err = error_after_two(false, |ng| ng.out.extend_from_slice(&[0; 4]));
        assert!(matches!(err.kind, SourceErrorKind::Truncated(_)), "{err}");
    }

    #[test]
    fn absurd_block_length() {
        let err = error_after_two(false, |ng| {
            ng.raw_block(6, 0xfff0_0000, &[0; 20], 0);
        });
        assert!(matches!(err.kind, SourceErrorKind::BadLength(_)), "{err}");
    }

    #[test]
    fn trailing_length_mismatch() {
        let err = error_after_two(true, |ng| {
            ng.raw_block(6, 32, &[0; 20], 36);
        });
        assert!(matches!(err.kind, SourceErrorKind::BadLength(_)), "{err}");
        assert_eq!((err.record, err.offset), (Some(3), Some(TAIL)));
    }

    #[test]
    fn caplen_beyond_block() {
        let err = error_after_two(false, |ng| {
            ng.epb_raw(0, 1, 64, 64, &[0; 8]);
        });
        assert!(matches!(err.kind, SourceErrorKind::BadLength(_)), "{err}");
        assert_eq!(err.record, Some(3));
    }

    #[test]
    fn undefined_interface() {
        let err = error_after_two(false, |ng| {
            ng.epb(1, 1, &[0; 8]);
        });
        assert!(
            matches!(&err.kind, SourceErrorKind::Malformed(m) if m.contains("interface 1")),
            "{err}"
        );
        assert_eq!(err.record, Some(3));
        // Interfaces of an earlier section are gone in the next one.
        let err = error_after_two(false, |ng| {
            ng.shb(true).epb(0, 1, &[0; 8]);
        });
        assert!(
            matches!(&err.kind, SourceErrorKind::Malformed(m) if m.contains("interface 0")),
            "{err}"
        );
        // An SPB needs interface 0 too.
        let mut ng = Ng::new(false);
        ng.spb(4, &[0; 4]);
        let err = ng.source().next_packet().unwrap().unwrap_err();
        assert!(matches!(err.kind, SourceErrorKind::Malformed(_)), "{err}");
        assert_eq!(err.record, Some(1));
    }

    /// A packet of an interface whose link type the decoder does not read
    /// is yielded like any other (the engine counts it), and the packets
    /// after it are read as usual.
    #[test]
    fn packets_of_an_unsupported_link_type_are_yielded() {
        let mut ng = Ng::new(false);
        ng.idb(1, 0, &[])
            .idb(284, 0, &[])
            .epb(0, 1, &[1; 8])
            .epb(1, 2, &[2; 8])
            .epb(0, 3, &[3; 8]);
        let mut src = ng.source();
        let mut got = Vec::new();
        while let Some(p) = src.next_packet() {
            let p = p.expect("no error");
            got.push((p.record, p.link, p.interface));
        }
        assert_eq!(
            got,
            [
                (1, LinkType::ETHERNET, 0),
                (2, LinkType(284), 1),
                (3, LinkType::ETHERNET, 0)
            ]
        );
    }

    #[test]
    fn bad_section_headers() {
        // Bad byte-order magic in a later section.
        let err = error_after_two(false, |ng| {
            let mut body = vec![1, 2, 3, 4];
            body.extend_from_slice(&[0; 12]);
            ng.block(super::SHB, &body);
        });
        assert!(matches!(err.kind, SourceErrorKind::Malformed(_)), "{err}");
        assert_eq!(err.record, Some(3));
        // Unsupported major version.
        let mut ng = Ng::new(false);
        ng.out[12] = 2;
        let err = FileSource::from_bytes("v.pcapng", ng.out).unwrap_err();
        assert!(matches!(err.kind, SourceErrorKind::Malformed(_)), "{err}");
        assert_eq!(err.record, None);
        // First section header cut short.
        for len in [4, 10, 16, 27] {
            let mut ng = Ng::new(true);
            ng.out.truncate(len);
            let err = FileSource::from_bytes("s.pcapng", ng.out).unwrap_err();
            assert!(
                matches!(err.kind, SourceErrorKind::Truncated(_)),
                "{len}: {err}"
            );
            assert_eq!(err.record, None);
        }
        // Section header only: no packets, no error.
        assert!(Ng::new(true).source().next_packet().is_none());
    }

    #[test]
    fn malformed_options_are_ignored() {
        let mut ng = Ng::new(false);
        // tsresol with a wrong length, then an option running past the block.
        let mut opts = ng.opt(9, &[9, 9]);
        opts.extend_from_slice(&ng.u16(14));
        opts.extend_from_slice(&ng.u16(200));
        ng.idb(1, 0, &[opts]).epb(0, 2_000_000, &[0; 4]);
        let p = ng.source().next_packet().unwrap().unwrap().ts;
        assert_eq!(p.secs(), 2);
    }

    /// Every prefix and some corruptions of a valid file: never a panic, and
    /// the packets before the damage still come out.
    #[test]
    fn no_panic_on_damage() {
        let good = full_file(false);
        for cut in 0..good.len() {
            let Ok(mut src) = FileSource::from_bytes("p", good[..cut].to_vec()) else {
                continue;
            };
            while let Some(Ok(_)) = src.next_packet() {}
        }
        for i in 0..good.len() {
            for v in [0x00, 0xff, 0x80, 0x07] {
                let mut bad = good.clone();
                bad[i] = v;
                let Ok(mut src) = FileSource::from_bytes("p", bad) else {
                    continue;
                };
                let mut n = 0;
                while let Some(Ok(_)) = src.next_packet() {
                    n += 1;
                    assert!(n < 100);
                }
            }
        }
    }
}
