//! Termination callback (Scap VII-A, flow export): cutoff 0, statistics only.
//!
//! `cargo run --example flow_stats -- trace.pcap`
use streamcap::{deliver::Callbacks, Capture};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "samples/sample.pcap".into());
    let on_close = |s: &mut streamcap::Stream<'_, ()>| {
        let ((sip, sp), (dip, dp)) = (s.src(), s.dst());
        let c = &s.info().counters;
        println!(
            "{sip}:{sp} -> {dip}:{dp} proto {} pkts {} bytes {} stream {}",
            s.proto(),
            c.pkts,
            c.bytes,
            c.stream_bytes
        );
    };
    let cap = Capture::builder().cutoff(0).build();
    let report = cap.run_file(path, Callbacks::<()>::new().on_close(on_close))?;
    eprintln!(
        "{} packets, {} streams",
        report.stats.packets, report.stats.streams
    );
    Ok(())
}
