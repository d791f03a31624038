//! `streamcap-bench forward-plot`: draws the table `bench/forward.sh`
//! prints (one line per path: path, frames sent, forwarded, received,
//! forwarded pps, the forwarder's CPU seconds, every CPU's seconds) as a
//! chart: packets per second and CPU seconds per path.

use crate::plot::{self, Panel, Series};
use std::path::PathBuf;

/// One path's line of the table.
struct Line {
    path: String,
    pps: f64,
    forwarder_cpu: f64,
    all_cpu: f64,
}

/// Reads the table's lines (the header and anything else is skipped).
fn read_table(text: &str) -> Vec<Line> {
    text.lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            if w.len() != 7 {
                return None;
            }
            let n = |i: usize| w[i].parse::<f64>().ok();
            Some(Line {
                path: w[0].to_string(),
                pps: n(4)?,
                forwarder_cpu: n(5)?,
                all_cpu: n(6)?,
            })
        })
        .collect()
}

pub fn cmd_forward_plot(args: &[String]) -> Result<(), String> {
    let mut input = None;
    let mut png = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--in" => input = Some(PathBuf::from(val()?)),
            "--png" => png = Some(PathBuf::from(val()?)),
            other => return Err(format!("unexpected argument {other}")),
        }
    }
    let input = input.ok_or("missing --in FILE (the output of bench/forward.sh)")?;
    let png = png.ok_or("missing --png FILE")?;
    let text = std::fs::read_to_string(&input).map_err(|e| format!("{}: {e}", input.display()))?;
    let lines = read_table(&text);
    if lines.is_empty() {
        return Err(format!("{}: no result lines", input.display()));
    }
    let names: Vec<String> = lines.iter().map(|l| l.path.clone()).collect();
    let points = |f: &dyn Fn(&Line) -> f64| -> Vec<(f64, f64)> {
        lines
            .iter()
            .enumerate()
            .map(|(i, l)| (i as f64, f(l)))
            .collect()
    };
    plot::panels(
        &png,
        &[
            Panel {
                title: "Forwarded packets per second (the sender sets the rate)".into(),
                labels: ("path", "kpps"),
                series: vec![Series {
                    name: "forwarded kpps".into(),
                    points: points(&|l| l.pps / 1e3),
                }],
                x_names: names.clone(),
                headroom: 1.3,
                min_top: 10.0,
            },
            Panel {
                title: "CPU seconds for the run".into(),
                labels: ("path", "CPU s"),
                series: vec![
                    Series {
                        name: "forwarder process".into(),
                        points: points(&|l| l.forwarder_cpu),
                    },
                    Series {
                        name: "all CPUs (sender, kernel, receiver)".into(),
                        points: points(&|l| l.all_cpu),
                    },
                ],
                x_names: names,
                headroom: 1.3,
                min_top: 1.0,
            },
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_lines_are_read_and_the_rest_skipped() {
        let t = "forward-bench: trace x\npath sent forwarded received \"fwd pps\" x y\naf_packet 1000000 945276 945276 324837 1.28 5.90\n";
        let l = read_table(t);
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].path, "af_packet");
        assert!((l[0].pps - 324_837.0).abs() < 1e-9);
        assert!((l[0].all_cpu - 5.9).abs() < 1e-9);
    }
}
