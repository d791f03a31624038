//! The bytes of a capture file: memory-mapped when possible, else read.
//!
//! This is the crate's one `unsafe` boundary with the kernel for files: a
//! read-only private mapping. Listed in `docs/unsafe.md`.
#![allow(unsafe_code)]

use std::fs::File;
use std::path::Path;

/// Capture bytes, either mapped from a file or owned.
#[derive(Debug)]
pub enum Bytes {
    /// A read-only mapping of the whole file.
    Mapped(memmap2::Mmap),
    /// Bytes in memory (an empty file, a file that cannot be mapped, or bytes given by the caller).
    Owned(Vec<u8>),
}

impl Bytes {
    /// Maps `path` read-only; falls back to reading it when mapping is not
    /// possible (pipes, special files, empty files).
    pub fn open(path: &Path) -> std::io::Result<Bytes> {
        let file = File::open(path)?;
        let meta = file.metadata()?;
        if meta.is_file() && meta.len() > 0 {
            // SAFETY: the mapping is read-only and private to this process. The
            // one hazard is another process truncating or rewriting the file
            // while it is mapped (a truncation raises SIGBUS on access). That
            // is the same contract every mmap-based capture reader (libpcap's
            // and Wireshark's included) accepts for capture files, which are
            // not modified once written. Covered by
            // `mapped::tests::maps_and_reads_the_same_bytes`.
            if let Ok(m) = unsafe { memmap2::Mmap::map(&file) } {
                // Reading is sequential: ask the kernel to read ahead. Advice only.
                let _ = m.advise(memmap2::Advice::Sequential);
                return Ok(Bytes::Mapped(m));
            }
        }
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut &file, &mut v)?;
        Ok(Bytes::Owned(v))
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_and_reads_the_same_bytes() {
        let dir = std::env::temp_dir().join(format!("streamcap-mapped-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("x.bin");
        std::fs::write(&p, b"0123456789").unwrap();
        let b = Bytes::open(&p).unwrap();
        assert!(matches!(b, Bytes::Mapped(_)));
        assert_eq!(b.as_slice(), b"0123456789");
        let e = dir.join("empty.bin");
        std::fs::write(&e, b"").unwrap();
        assert!(matches!(Bytes::open(&e).unwrap(), Bytes::Owned(ref v) if v.is_empty()));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
