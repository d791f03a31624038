//! Keep-chunk (Scap VII-D, HTTP parsing): keep each chunk until the request
//! header is complete, print the request line, then discard the stream.
//! Run: `cargo run --example http_headers -- trace.pcap`
use streamcap::{deliver::Callbacks, flow::Direction, Capture};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "samples/sample.pcap".into());
    let on_data = |s: &mut streamcap::Stream<'_, ()>, c: &streamcap::Chunk<'_>| {
        if s.direction() != Direction::Orig {
            return s.discard();
        }
        match c.data.windows(4).position(|w| w == b"\r\n\r\n") {
            Some(end) => {
                let head = String::from_utf8_lossy(&c.data[..end]);
                println!("{}", head.lines().next().unwrap_or(""));
                s.discard();
            }
            None if c.data.len() < 64 * 1024 => s.keep_chunk(),
            None => s.discard(),
        }
    };
    let cap = Capture::builder().chunk_size(512).flush_timeout(0.1);
    cap.build()
        .run_file(path, Callbacks::<()>::new().on_data(on_data))?;
    Ok(())
}
