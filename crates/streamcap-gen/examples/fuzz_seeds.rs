//! Writes the fuzz targets' seed inputs (`streamcap_gen::fuzz_seeds`) to
//! DIR/<target>/<name>: `cargo run -p streamcap-gen --example fuzz_seeds -- fuzz/corpus`.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(dir) = std::env::args().nth(1).map(PathBuf::from) else {
        eprintln!("usage: fuzz_seeds DIR");
        return ExitCode::from(2);
    };
    let seeds = streamcap_gen::fuzz_seeds::seeds();
    for (target, name, bytes) in &seeds {
        let d = dir.join(target);
        if let Err(e) =
            std::fs::create_dir_all(&d).and_then(|()| std::fs::write(d.join(name), bytes))
        {
            eprintln!("fuzz_seeds: {}: {e}", d.join(name).display());
            return ExitCode::from(1);
        }
    }
    eprintln!(
        "fuzz_seeds: wrote {} seeds under {}",
        seeds.len(),
        dir.display()
    );
    ExitCode::SUCCESS
}
