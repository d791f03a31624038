//! Creation callback: steer each new stream before any of its bytes are
//! copied — keep only the first 1 KiB of web traffic, nothing of the rest,
//! and raise the priority of DNS.
//!
//! `cargo run --example creation -- trace.pcap`
use streamcap::{deliver::Callbacks, Capture};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "samples/sample.pcap".into());
    let on_create = |s: &mut streamcap::Stream<'_, ()>| {
        let ports = [s.src().1, s.dst().1];
        match ports {
            _ if ports.contains(&80) || ports.contains(&443) => s.set_cutoff(Some(1024)),
            _ if ports.contains(&53) => s.set_priority(7),
            _ => s.discard(),
        }
    };
    let cap = Capture::builder().build();
    let report = cap.run_file(path, Callbacks::<()>::new().on_create(on_create))?;
    let t = &report.stats.totals;
    println!(
        "captured {} discarded {} of {} stream bytes",
        t.captured, t.discarded, t.stream_bytes
    );
    Ok(())
}
