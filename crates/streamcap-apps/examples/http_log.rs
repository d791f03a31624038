//! Writes a capture's HTTP transactions as Zeek http.log JSON lines (or
//! TSV with `--tsv`), then the analyser's counters on stderr.
//!
//! ```sh
//! cargo run -p streamcap-apps --example http_log -- trace.pcap [--tsv] [--segments] [--hash]
//! ```

use streamcap::deliver::Delivery;
use streamcap::Capture;
use streamcap_apps::http::record::log_time;
use streamcap_apps::http::{Http, HttpConfig, JsonLines, ZeekTsv};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.iter().find(|a| !a.starts_with("--")) else {
        eprintln!("usage: http_log FILE [--tsv] [--segments] [--hash]");
        std::process::exit(2);
    };
    let has = |f: &str| args.iter().any(|a| a == f);
    let delivery = if has("--segments") {
        Delivery::Segments
    } else {
        Delivery::Chunks
    };
    let config = HttpConfig {
        hash_bodies: has("--hash"),
        ..HttpConfig::default()
    };
    let cap = Capture::builder().delivery(delivery).build();
    let out = std::io::stdout().lock();
    let now = streamcap::Timestamp(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
    );
    if has("--tsv") {
        let sink = ZeekTsv::new(out, &log_time(now));
        let mut report = cap.run_file(path, Http::new(config, sink))?;
        eprintln!("{:#?}", report.handler.analyzer().stats());
        drop(report.handler.sink.finish(&log_time(now))?);
    } else {
        let mut report = cap.run_file(path, Http::new(config, JsonLines::new(out)))?;
        eprintln!("{:#?}", report.handler.analyzer().stats());
        drop(report.handler.sink.finish()?);
    }
    Ok(())
}
