//! Data callback (Scap VII-B, NIDS): search every stream for a pattern; the
//! chunk overlap finds matches that span chunk boundaries; a stream is
//! discarded after its first match.
//! Run: `cargo run --example pattern_match -- trace.pcap "User-Agent"`
use streamcap::{deliver::Callbacks, Capture};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| "samples/sample.pcap".into());
    let pattern = args
        .next()
        .unwrap_or_else(|| "HTTP/1.1".into())
        .into_bytes();
    let overlap = pattern.len().saturating_sub(1);
    let on_data = move |s: &mut streamcap::Stream<'_, ()>, c: &streamcap::Chunk<'_>| {
        if let Some(i) = c.data.windows(pattern.len()).position(|w| w == pattern) {
            let (ip, port) = s.src();
            println!(
                "match in {ip}:{port} at stream offset {}",
                c.offset + i as u64
            );
            s.discard();
        }
    };
    let cap = Capture::builder().chunk_size(4096).overlap(overlap).build();
    let report = cap.run_file(path, Callbacks::<()>::new().on_data(on_data))?;
    eprintln!("{} bytes searched", report.stats.totals.captured);
    Ok(())
}
