//! Bar chart of the results (Gbit/s per tool and mode, one panel per
//! workload), drawn with plotters' bitmap backend. Text uses a TrueType font
//! read at run time (DejaVu Sans or Liberation Sans from Debian's font
//! packages) through ab_glyph, so neither fontconfig nor freetype is needed;
//! without a font the chart is drawn without text.

use std::path::Path;

use plotters::prelude::*;

use crate::report::Workload;

const FONTS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
];

fn register_font() -> bool {
    for f in FONTS {
        if let Ok(bytes) = std::fs::read(f) {
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                return true;
            }
        }
    }
    false
}

const COLORS: [RGBColor; 9] = [
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(23, 190, 207),
    RGBColor(214, 39, 40),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
];

/// Draws the chart; returns a note for the log.
pub fn draw(path: &Path, workloads: &[Workload]) -> Result<String, String> {
    let text = register_font();
    let rows: usize = workloads.iter().map(|w| w.results.len().max(1)).sum();
    let height = (rows as u32 * 34 + workloads.len() as u32 * 70).max(200);
    let root = BitMapBackend::new(path, (1100, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let heights: Vec<u32> = workloads
        .iter()
        .map(|w| w.results.len().max(1) as u32 * 34 + 70)
        .collect();
    let mut rest = root.clone();
    for (w, h) in workloads.iter().zip(heights) {
        let (area, below) = rest.split_vertically(h);
        rest = below;
        let n = w.results.len().max(1);
        let xmax = w
            .results
            .iter()
            .map(|r| r.gbps)
            .fold(0.0f64, f64::max)
            .max(1e-3)
            * 1.9;
        let mut cb = ChartBuilder::on(&area);
        cb.margin(10).x_label_area_size(if text { 25 } else { 5 });
        if text {
            cb.caption(
                format!(
                    "{}: {} packets, {:.0} MB — Gbit/s (median of runs)",
                    w.name,
                    w.packets,
                    w.wire_bytes as f64 / 1e6
                ),
                ("sans-serif", 18),
            );
        }
        let mut chart = cb
            .build_cartesian_2d(0f64..xmax, 0f64..n as f64)
            .map_err(|e| e.to_string())?;
        if text {
            chart
                .configure_mesh()
                .disable_y_mesh()
                .disable_y_axis()
                .x_labels(8)
                .label_style(("sans-serif", 12))
                .draw()
                .map_err(|e| e.to_string())?;
        }
        for (i, r) in w.results.iter().enumerate() {
            let y = (n - 1 - i) as f64;
            let c = COLORS[i % COLORS.len()];
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(0.0, y + 0.15), (r.gbps, y + 0.85)],
                    c.filled(),
                )))
                .map_err(|e| e.to_string())?;
            if text {
                let label = format!(
                    "{} {}  {:.2} Gbit/s, {:.2} Mpps{}",
                    r.tool,
                    r.mode,
                    r.gbps,
                    r.mpps,
                    r.vs_nids_streams
                        .as_ref()
                        .map_or(String::new(), |v| format!(
                            ", {:.2}x nids_streams",
                            v.wall.median
                        ))
                );
                chart
                    .draw_series(std::iter::once(Text::new(
                        label,
                        (r.gbps + xmax * 0.005, y + 0.7),
                        ("sans-serif", 13).into_font().color(&BLACK),
                    )))
                    .map_err(|e| e.to_string())?;
            }
        }
    }
    root.present().map_err(|e| e.to_string())?;
    Ok(if text {
        String::new()
    } else {
        " (no TrueType font found: bars without labels; apt-get install fonts-dejavu-core)".into()
    })
}

/// The lowest value a logarithmic axis of [`lines`] shows.
const LOG_FLOOR: f64 = 1e-9;

/// One line of a [`lines`] chart: its name and its points.
pub struct Series {
    /// Legend text.
    pub name: String,
    /// (x, y) points, drawn in order.
    pub points: Vec<(f64, f64)>,
}

/// A line chart of `series` (with a marker at each point), `log_y` for a
/// logarithmic y axis (points below 1e-9 are left out there).
pub fn lines(
    path: &Path,
    title: &str,
    labels: (&str, &str),
    series: &[Series],
    log_y: bool,
) -> Result<(), String> {
    draw_lines(path, title, labels, series, (false, log_y), (1.1, false))
}

/// [`lines`] with a choice of logarithmic axes, `(log_x, log_y)` (points
/// below 1e-9 on a logarithmic axis are left out), and, on a linear y
/// axis, its top at `headroom` times the highest point (room for the
/// legend, drawn in the upper right corner).
pub fn lines_scaled(
    path: &Path,
    title: &str,
    labels: (&str, &str),
    series: &[Series],
    logs: (bool, bool),
    headroom: f64,
) -> Result<(), String> {
    draw_lines(path, title, labels, series, logs, (headroom, true))
}

/// One chart of [`panels`].
pub struct Panel<'a> {
    /// The chart's title.
    pub title: String,
    /// The x and y axis descriptions.
    pub labels: (&'a str, &'a str),
    /// The lines; with `x_names`, x is the index of a name.
    pub series: Vec<Series>,
    /// Names of x = 0, 1, 2, ... (a categorical x axis); empty: numeric.
    pub x_names: Vec<String>,
    /// The y axis' top, in times the highest point (room for the legend).
    pub headroom: f64,
    /// The y axis' top at the least (a chart of zeros gets a readable axis).
    pub min_top: f64,
}

/// Line charts one above the other in one image (linear axes, the legend
/// in each chart's upper right corner).
pub fn panels(path: &Path, panels: &[Panel]) -> Result<(), String> {
    let text = register_font();
    let root =
        BitMapBackend::new(path, (900, 480 * panels.len().max(1) as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    for (p, area) in panels
        .iter()
        .zip(root.split_evenly((panels.len().max(1), 1)))
    {
        let style = LineStyle {
            logs: (false, false),
            headroom: p.headroom,
            min_top: p.min_top,
            legend_top: true,
            x_names: &p.x_names,
            text,
        };
        draw_on(&area, &p.title, p.labels, &p.series, &style)?;
    }
    root.present().map_err(|e| e.to_string())
}

/// How [`draw_on`] draws a chart.
struct LineStyle<'a> {
    /// Logarithmic x and y axes.
    logs: (bool, bool),
    /// A linear y axis' top, in times the highest point.
    headroom: f64,
    /// A linear y axis' top at the least.
    min_top: f64,
    /// The legend in the upper right corner (else plotters' default place,
    /// the middle of the right edge).
    legend_top: bool,
    /// Names of x = 0, 1, 2, ... (a categorical x axis); empty: numeric.
    x_names: &'a [String],
    /// A font was found: titles, labels and legends are drawn.
    text: bool,
}

/// The line chart alone in an image.
fn draw_lines(
    path: &Path,
    title: &str,
    labels: (&str, &str),
    series: &[Series],
    logs: (bool, bool),
    (headroom, legend_top): (f64, bool),
) -> Result<(), String> {
    let style = LineStyle {
        logs,
        headroom,
        min_top: 1e-9,
        legend_top,
        x_names: &[],
        text: register_font(),
    };
    let root = BitMapBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    draw_on(&root, title, labels, series, &style)?;
    root.present().map_err(|e| e.to_string())
}

/// A line chart (with a marker at each point) on `area`.
fn draw_on<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    (x_label, y_label): (&str, &str),
    series: &[Series],
    style: &LineStyle,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let (log_x, log_y) = style.logs;
    let text = style.text;
    // A logarithmic axis is drawn as a linear one over log10 of the value,
    // labelled with the powers of ten.
    let names = series.iter().map(|s| &s.name);
    let scale = |log: bool, v: f64| if log { v.log10() } else { v };
    let series: Vec<Vec<(f64, f64)>> = series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .filter(|p| (!log_x || p.0 >= LOG_FLOOR) && (!log_y || p.1 >= LOG_FLOOR))
                .map(|&(x, y)| (scale(log_x, x), scale(log_y, y)))
                .collect()
        })
        .collect();
    let pts = || series.iter().flatten().copied();
    let (xmin, xmax) = if !style.x_names.is_empty() {
        (-0.5, style.x_names.len() as f64 - 0.5)
    } else if log_x {
        let lo = pts().map(|p| p.0).fold(f64::INFINITY, f64::min);
        let hi = pts().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
        if lo.is_finite() && hi.is_finite() {
            (lo - 0.15, hi + 0.15)
        } else {
            (0.0, 1.0)
        }
    } else {
        (
            pts().map(|p| p.0).fold(0.0f64, f64::min),
            pts().map(|p| p.0).fold(0.0f64, f64::max).max(1e-9) * 1.05,
        )
    };
    let (ymin, ymax) = if log_y {
        let lo = pts().map(|p| p.1).fold(0.0f64, f64::min).floor();
        (lo - 0.5, pts().map(|p| p.1).fold(lo + 1.0, f64::max) + 0.3)
    } else {
        (
            0.0,
            (pts().map(|p| p.1).fold(0.0f64, f64::max) * style.headroom).max(style.min_top),
        )
    };
    let mut cb = ChartBuilder::on(area);
    cb.margin(15)
        .x_label_area_size(if text { 40 } else { 5 })
        .y_label_area_size(if text { 70 } else { 5 });
    if text {
        cb.caption(title, ("sans-serif", 18));
    }
    let mut chart = cb
        .build_cartesian_2d(xmin..xmax, ymin..ymax)
        .map_err(|e| e.to_string())?;
    if text {
        let power = |y: &f64| format!("1e{}", y.round());
        // Rounded to 6 decimals: no 0.30000000000000004 from the steps.
        let plain = |y: &f64| format!("{}", (y * 1e6).round() / 1e6 + 0.0);
        // Log x: a label at each power of ten only (10^x, x whole).
        let x_power = |x: &f64| {
            if (x - x.round()).abs() < 1e-6 {
                format!("{}", 10f64.powf(x.round()))
            } else {
                String::new()
            }
        };
        // Categorical x: the name at each whole x.
        let x_name = |x: &f64| {
            let i = x.round();
            match style.x_names.get(i as usize) {
                Some(n) if (x - i).abs() < 1e-6 && i >= 0.0 => n.clone(),
                _ => String::new(),
            }
        };
        let x_format: &dyn Fn(&f64) -> String = if !style.x_names.is_empty() {
            &x_name
        } else if log_x {
            &x_power
        } else {
            &plain
        };
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(x_label)
            .y_desc(y_label)
            .x_label_formatter(x_format)
            .y_label_formatter(if log_y { &power } else { &plain })
            .label_style(("sans-serif", 12));
        if !style.x_names.is_empty() {
            // One label a name: plotters puts them at whole x when there
            // are as many as names (one more for the range's half steps).
            mesh.x_labels(style.x_names.len() + 1);
        }
        mesh.draw().map_err(|e| e.to_string())?;
    }
    for (i, (points, s)) in series.iter().zip(names).enumerate() {
        let c = COLORS[i % COLORS.len()];
        let drawn = chart
            .draw_series(LineSeries::new(points.clone(), c.stroke_width(2)))
            .map_err(|e| e.to_string())?;
        if text {
            drawn
                .label(s.clone())
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], c));
        }
        chart
            .draw_series(points.iter().map(|&xy| Circle::new(xy, 3, c.filled())))
            .map_err(|e| e.to_string())?;
    }
    if text {
        let mut legend = chart.configure_series_labels();
        if style.legend_top {
            legend.position(SeriesLabelPosition::UpperRight);
        }
        legend
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .label_font(("sans-serif", 13))
            .draw()
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_charts_draw_on_linear_and_logarithmic_axes() {
        let dir = std::env::temp_dir().join(format!("streamcap-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let series = [Series {
            name: "a".into(),
            points: vec![(1.0, 0.5), (2.0, 1e-4), (3.0, 1e-12), (4.0, 0.0)],
        }];
        for log in [false, true] {
            let p = dir.join(format!("chart-{log}.png"));
            lines(&p, "t", ("x", "y"), &series, log).expect("drawn");
            assert!(std::fs::metadata(&p)
                .map(|m| m.len() > 1000)
                .unwrap_or(false));
            let p = dir.join(format!("chart-x-{log}.png"));
            lines_scaled(&p, "t", ("x", "y"), &series, (true, log), 1.5).expect("drawn");
            assert!(std::fs::metadata(&p)
                .map(|m| m.len() > 1000)
                .unwrap_or(false));
        }
        let names: Vec<String> = ["0", "1KiB", "unlimited"].map(String::from).to_vec();
        let p = dir.join("panels.png");
        let panel = |title: &str| Panel {
            title: title.into(),
            labels: ("cutoff", "%"),
            series: vec![Series {
                name: "a".into(),
                points: vec![(0.0, 1.0), (1.0, 3.0), (2.0, 2.0)],
            }],
            x_names: names.clone(),
            headroom: 1.3,
            min_top: 1.0,
        };
        panels(&p, &[panel("one"), panel("two")]).expect("drawn");
        assert!(std::fs::metadata(&p)
            .map(|m| m.len() > 1000)
            .unwrap_or(false));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
