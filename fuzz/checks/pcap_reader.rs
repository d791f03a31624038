//! The pcap/pcapng reader on arbitrary bytes: never panics, never hands out
//! more bytes than a record claims, stops for good after an error; and the
//! same bytes read from a file through a small sliding window give exactly
//! the same packets and error, packet by packet and in batches.
use streamcap::{FileSource, PacketSource, RawPacket, SourceError};

/// Checks one packet and renders it.
fn seen(p: &RawPacket<'_>, last: &mut u64) -> String {
    assert!(p.data.len() as u64 <= u64::from(p.orig_len));
    assert!(p.record > *last, "record numbers increase");
    *last = p.record;
    format!("{p:?}")
}

/// Everything a source yields, rendered, or the error of opening it;
/// `batch` 0 reads packet by packet, else in batches of that size.
fn render(src: Result<FileSource, SourceError>, batch: usize) -> Vec<String> {
    let mut src = match src {
        Ok(s) => s,
        Err(e) => return vec![format!("open: {e}")],
    };
    let mut out = Vec::new();
    let mut last = 0u64;
    loop {
        if batch == 0 {
            match src.next_packet() {
                None => break,
                Some(Ok(p)) => out.push(seen(&p, &mut last)),
                Some(Err(e)) => {
                    out.push(format!("error: {e}"));
                    assert!(src.next_packet().is_none(), "nothing after an error");
                    break;
                }
            }
        } else {
            let mut b = Vec::new();
            let err = src.next_batch(&mut b, batch);
            let n = b.len();
            out.extend(b.iter().map(|p| seen(p, &mut last)));
            if let Some(e) = err {
                out.push(format!("error: {e}"));
                let mut more = Vec::new();
                assert!(src.next_batch(&mut more, batch).is_none() && more.is_empty());
                break;
            }
            if n == 0 {
                break;
            }
        }
    }
    out
}

/// Runs the checks on one input (panics on a violation).
pub fn run(data: &[u8]) {
    let thread =
        format!("{:?}", std::thread::current().id()).replace(|c: char| !c.is_ascii_digit(), "");
    let path = std::env::temp_dir().join(format!(
        "streamcap-fuzz-{}-{thread}.pcap",
        std::process::id()
    ));
    let whole = render(FileSource::from_bytes(&path, data.to_vec()), 0);
    if std::fs::write(&path, data).is_err() {
        return;
    }
    // Window and batch sizes from the input's length, so that records
    // straddle window ends in every way: windows of 1 to 64 bytes, batches
    // of 0 (packet by packet) to 6 packets, read on this thread or (half
    // the lengths, in runs of 448) by a read-ahead thread.
    let window = data.len() % 64 + 1;
    let batch = data.len() / 64 % 7;
    let ahead = data.len() / 448 % 2 == 1;
    let windowed = render(FileSource::open_with_window(&path, window, ahead), batch);
    let _ = std::fs::remove_file(&path);
    assert_eq!(
        whole, windowed,
        "window of {window} bytes, batches of {batch}, read-ahead {ahead}"
    );
}
