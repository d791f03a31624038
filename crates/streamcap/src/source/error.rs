//! Errors of packet sources: which file, which record, what was wrong.

use std::fmt;
use std::path::PathBuf;

/// What was wrong with a capture file.
#[derive(Debug, thiserror::Error)]
pub enum SourceErrorKind {
    /// The file could not be opened or read.
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
    /// The first bytes are not a pcap or pcapng magic number.
    #[error("not a pcap or pcapng file (magic number {0:#010x})")]
    BadMagic(u32),
    /// The file ends inside a header or record.
    #[error("file cut short: {0}")]
    Truncated(String),
    /// A record claims a length that cannot be right.
    #[error("impossible record length: {0}")]
    BadLength(String),
    /// The link type of a whole classic pcap file is not one the decoder
    /// understands (a pcapng interface of such a link type is not an error:
    /// its packets are counted by the engine).
    #[error(
        "unsupported link type {0}: it is the whole file's, so none of its packets can be decoded"
    )]
    UnsupportedLinkType(u16),
    /// Any other structural error.
    #[error("{0}")]
    Malformed(String),
    /// The run asks the source for something it cannot do with this input
    /// or these settings (e.g. paced replay with several workers).
    #[error("{0}")]
    Unsupported(String),
}

/// An error reading a capture, naming the file and, where it applies, the
/// record number (1-based, counting packet records).
#[derive(Debug)]
pub struct SourceError {
    /// The file (or interface) name.
    pub file: PathBuf,
    /// The packet record at which the problem was found (`None` for the file header).
    pub record: Option<u64>,
    /// Byte offset in the file where the problem was found, when known.
    pub offset: Option<u64>,
    /// What was wrong.
    pub kind: SourceErrorKind,
}

impl SourceError {
    /// Builds an error for `file` at `record`.
    pub fn new(file: impl Into<PathBuf>, record: Option<u64>, kind: SourceErrorKind) -> Self {
        SourceError {
            file: file.into(),
            record,
            offset: None,
            kind,
        }
    }

    /// Adds the byte offset.
    pub fn at_offset(mut self, offset: u64) -> Self {
        self.offset = Some(offset);
        self
    }
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(r) = self.record {
            write!(f, ": record {r}")?;
        }
        if let Some(o) = self.offset {
            write!(f, " (byte offset {o})")?;
        }
        write!(f, ": {}", self.kind)
    }
}

impl std::error::Error for SourceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.kind)
    }
}
