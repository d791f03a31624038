//! The pcap/pcapng reader on arbitrary bytes: never panics, never hands out
//! more bytes than a record claims, stops for good after an error; and the
//! same bytes read from a file through a small sliding window give exactly
//! the same packets and error.
use streamcap::{FileSource, PacketSource, SourceError};

/// Everything a source yields, rendered, or the error of opening it.
fn render(src: Result<FileSource, SourceError>) -> Vec<String> {
    let mut src = match src {
        Ok(s) => s,
        Err(e) => return vec![format!("open: {e}")],
    };
    let mut seen = Vec::new();
    let mut last = 0u64;
    loop {
        match src.next_packet() {
            None => break,
            Some(Ok(p)) => {
                assert!(p.data.len() as u64 <= u64::from(p.orig_len));
                assert!(p.record > last, "record numbers increase");
                last = p.record;
                seen.push(format!("{p:?}"));
            }
            Some(Err(e)) => {
                seen.push(format!("error: {e}"));
                assert!(src.next_packet().is_none(), "nothing after an error");
                break;
            }
        }
    }
    seen
}

/// Runs the checks on one input (panics on a violation).
pub fn run(data: &[u8]) {
    let thread =
        format!("{:?}", std::thread::current().id()).replace(|c: char| !c.is_ascii_digit(), "");
    let path = std::env::temp_dir().join(format!(
        "streamcap-fuzz-{}-{thread}.pcap",
        std::process::id()
    ));
    let whole = render(FileSource::from_bytes(&path, data.to_vec()));
    if std::fs::write(&path, data).is_err() {
        return;
    }
    // The window size from the input, 1 to 64 bytes, so that records
    // straddle window ends.
    let window = usize::from(data.get(8).copied().unwrap_or(0) % 64) + 1;
    let windowed = render(FileSource::open_with_window(&path, window));
    let _ = std::fs::remove_file(&path);
    assert_eq!(whole, windowed, "window of {window} bytes");
}
