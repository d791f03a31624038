//! The pcap/pcapng reader on arbitrary bytes: never panics, never hands out
//! more bytes than a record claims, stops for good after an error.
use streamcap::{FileSource, PacketSource};

/// Runs the checks on one input (panics on a violation).
pub fn run(data: &[u8]) {
    let Ok(mut src) = FileSource::from_bytes("fuzz.pcap", data.to_vec()) else {
        return;
    };
    let mut last = 0u64;
    loop {
        match src.next_packet() {
            None => break,
            Some(Ok(p)) => {
                assert!(p.data.len() as u64 <= u64::from(p.orig_len));
                assert!(p.record > last, "record numbers increase");
                last = p.record;
            }
            Some(Err(_)) => {
                assert!(src.next_packet().is_none(), "nothing after an error");
                break;
            }
        }
    }
}
