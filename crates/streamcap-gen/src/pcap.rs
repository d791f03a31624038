//! Classic pcap writer.

use std::io::{self, Write};

/// Link-layer header type written into the pcap global header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum LinkType {
    /// `LINKTYPE_ETHERNET` (1): Ethernet II frames, optionally VLAN tagged.
    #[default]
    Ethernet,
    /// `LINKTYPE_RAW` (101): bare IPv4/IPv6 packets, no link header (VLAN
    /// tags cannot be represented and are dropped).
    Raw,
    /// `LINKTYPE_LINUX_SLL2` (276): Linux "cooked" capture v2 header.
    LinuxSll2,
}

impl LinkType {
    /// The numeric `LINKTYPE_*` value stored in the pcap header.
    pub fn code(self) -> u32 {
        match self {
            LinkType::Ethernet => 1,
            LinkType::Raw => 101,
            LinkType::LinuxSll2 => 276,
        }
    }

    /// Whether VLAN tags survive in frames of this link type.
    pub fn carries_vlan(self) -> bool {
        !matches!(self, LinkType::Raw)
    }
}

/// Timestamp resolution of the pcap file, selected by its magic number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum TsResolution {
    /// Microseconds (magic `a1b2c3d4`). Nanosecond inputs are truncated.
    #[default]
    Micro,
    /// Nanoseconds (magic `a1b23c4d`).
    Nano,
}

/// Options of a pcap file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PcapConfig {
    /// Link type of every record.
    pub link_type: LinkType,
    /// Timestamp resolution.
    pub resolution: TsResolution,
    /// Snap length: frames longer than this are cut (the record's captured
    /// length is then smaller than its original length). Also written to the
    /// global header.
    pub snaplen: u32,
}

impl PcapConfig {
    /// The default snap length (262144, as used by tcpdump).
    pub const DEFAULT_SNAPLEN: u32 = 262_144;
}

impl Default for PcapConfig {
    /// Ethernet, microseconds, snap length 262144.
    fn default() -> Self {
        Self {
            link_type: LinkType::Ethernet,
            resolution: TsResolution::Micro,
            snaplen: Self::DEFAULT_SNAPLEN,
        }
    }
}

/// Writes a classic (libpcap 2.4, little-endian) capture file.
///
/// The 24-byte global header is written by the constructor; each
/// [`write_packet`](Self::write_packet) call appends one 16-byte record
/// header plus the (possibly cut) frame bytes. The writer does not buffer;
/// wrap `W` in a `BufWriter` for files.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
    config: PcapConfig,
    records: u64,
}

impl<W: Write> PcapWriter<W> {
    /// Creates a writer with [`PcapConfig::default`] (Ethernet, µs, 262144)
    /// and writes the global header.
    pub fn new(out: W) -> io::Result<Self> {
        Self::with_config(out, PcapConfig::default())
    }

    /// Creates a writer with the given options and writes the global header.
    pub fn with_config(mut out: W, config: PcapConfig) -> io::Result<Self> {
        let magic: u32 = match config.resolution {
            TsResolution::Micro => 0xa1b2_c3d4,
            TsResolution::Nano => 0xa1b2_3c4d,
        };
        let mut hdr = [0u8; 24];
        hdr[0..4].copy_from_slice(&magic.to_le_bytes());
        hdr[4..6].copy_from_slice(&2u16.to_le_bytes());
        hdr[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone = 0, sigfigs = 0
        hdr[16..20].copy_from_slice(&config.snaplen.to_le_bytes());
        hdr[20..24].copy_from_slice(&config.link_type.code().to_le_bytes());
        out.write_all(&hdr)?;
        Ok(Self {
            out,
            config,
            records: 0,
        })
    }

    /// The options this writer was created with.
    pub fn config(&self) -> &PcapConfig {
        &self.config
    }

    /// Number of records written so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Appends one record. `ts_ns` is nanoseconds since the Unix epoch;
    /// `frame` must already carry the link header matching the link type.
    /// Frames longer than the snap length are cut; the original length is
    /// kept in the record header.
    ///
    /// # Errors
    /// I/O errors of the underlying writer, or `InvalidInput` if the frame
    /// is longer than `u32::MAX` or the timestamp does not fit in 32-bit
    /// seconds.
    pub fn write_packet(&mut self, ts_ns: u64, frame: &[u8]) -> io::Result<()> {
        let secs = ts_ns / 1_000_000_000;
        let sub = match self.config.resolution {
            TsResolution::Micro => (ts_ns % 1_000_000_000) / 1_000,
            TsResolution::Nano => ts_ns % 1_000_000_000,
        };
        let secs = u32::try_from(secs)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "timestamp beyond 2106"))?;
        let orig_len = u32::try_from(frame.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "frame too long"))?;
        let cap_len = orig_len.min(self.config.snaplen);
        let mut rec = [0u8; 16];
        rec[0..4].copy_from_slice(&secs.to_le_bytes());
        rec[4..8].copy_from_slice(&(sub as u32).to_le_bytes());
        rec[8..12].copy_from_slice(&cap_len.to_le_bytes());
        rec[12..16].copy_from_slice(&orig_len.to_le_bytes());
        self.out.write_all(&rec)?;
        self.out.write_all(&frame[..cap_len as usize])?;
        self.records += 1;
        Ok(())
    }

    /// Flushes the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Returns the underlying writer (not flushed).
    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u32le(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
    }

    #[test]
    fn header_and_records_micro() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        w.write_packet(1_700_000_000_123_456_789, &[1, 2, 3, 4])
            .unwrap();
        w.write_packet(1_700_000_001_000_000_000, &[9; 10]).unwrap();
        assert_eq!(w.records(), 2);
        let b = w.into_inner();
        assert_eq!(&b[0..4], &[0xd4, 0xc3, 0xb2, 0xa1]);
        assert_eq!(u16::from_le_bytes([b[4], b[5]]), 2);
        assert_eq!(u16::from_le_bytes([b[6], b[7]]), 4);
        assert_eq!(u32le(&b, 16), 262_144);
        assert_eq!(u32le(&b, 20), 1);
        assert_eq!(u32le(&b, 24), 1_700_000_000);
        assert_eq!(u32le(&b, 28), 123_456);
        assert_eq!(u32le(&b, 32), 4);
        assert_eq!(u32le(&b, 36), 4);
        assert_eq!(&b[40..44], &[1, 2, 3, 4]);
        assert_eq!(u32le(&b, 44), 1_700_000_001);
        assert_eq!(u32le(&b, 48), 0);
        assert_eq!(b.len(), 24 + 16 + 4 + 16 + 10);
    }

    #[test]
    fn nano_snaplen_and_linktypes() {
        for (lt, code) in [
            (LinkType::Ethernet, 1),
            (LinkType::Raw, 101),
            (LinkType::LinuxSll2, 276),
        ] {
            let cfg = PcapConfig {
                link_type: lt,
                resolution: TsResolution::Nano,
                snaplen: 6,
            };
            let mut w = PcapWriter::with_config(Vec::new(), cfg).unwrap();
            w.write_packet(5_000_000_007, &[7; 20]).unwrap();
            let b = w.into_inner();
            assert_eq!(u32le(&b, 0), 0xa1b2_3c4d);
            assert_eq!(u32le(&b, 16), 6);
            assert_eq!(u32le(&b, 20), code);
            assert_eq!(u32le(&b, 24), 5);
            assert_eq!(u32le(&b, 28), 7);
            assert_eq!(u32le(&b, 32), 6, "caplen cut to snaplen");
            assert_eq!(u32le(&b, 36), 20, "orig len kept");
            assert_eq!(b.len(), 24 + 16 + 6);
        }
    }
}
