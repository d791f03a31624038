//! `streamcap-gen`: command-line front end of the generator.
//!
//! ```text
//! streamcap-gen sample -o samples/sample.pcap [--truth samples/sample.truth.jsonl] [--seed N]
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use streamcap_gen::{sample, SAMPLE_DEFAULT_SEED};

const USAGE: &str = "\
usage: streamcap-gen sample -o FILE.pcap [--truth FILE.jsonl] [--seed N]

Writes the deterministic sample capture (about 40 mixed flows) and,
optionally, its ground truth as JSON lines. The same seed always produces
byte-identical files (default seed: 1).";

struct Args {
    out: PathBuf,
    truth: Option<PathBuf>,
    seed: u64,
}

fn parse(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
    match it.next().as_deref() {
        Some("sample") => {}
        Some("-h" | "--help") | None => return Err(String::new()),
        Some(other) => return Err(format!("unknown command `{other}`")),
    }
    let mut out = None;
    let mut truth = None;
    let mut seed = SAMPLE_DEFAULT_SEED;
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "-o" | "--output" => out = Some(PathBuf::from(value("-o")?)),
            "--truth" => truth = Some(PathBuf::from(value("--truth")?)),
            "--seed" => {
                let v = value("--seed")?;
                seed = v.parse().map_err(|_| format!("invalid seed `{v}`"))?;
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unexpected argument `{other}`")),
        }
    }
    let out = out.ok_or("missing -o FILE")?;
    Ok(Args { out, truth, seed })
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("error: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let cap = sample(args.seed);
    if let Err(e) = cap.write_files(&args.out, args.truth.as_deref()) {
        eprintln!("error: writing {}: {e}", args.out.display());
        return ExitCode::FAILURE;
    }
    let packets = cap.packets().len();
    eprintln!(
        "wrote {} ({} flows, {packets} packets, seed {})",
        args.out.display(),
        cap.flows().len(),
        args.seed
    );
    ExitCode::SUCCESS
}
