//! The `suite` command's plots, written as SVG and PNG next to its table (`plotters`).
//!
//! PNG text needs a TrueType font: `plotters` is built with its `ab_glyph` feature (no system
//! fontconfig) and [`register_font`] loads one at run time from [`FONT_CANDIDATES`] (Debian's
//! `fonts-dejavu-core`, which `hack/install-deps.sh`-style setups install) or `$KRS_BENCH_FONT`.
//! Without a font nothing is plotted, loudly: the caller reports it.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

/// Fonts tried in order (after `$KRS_BENCH_FONT`).
pub const FONT_CANDIDATES: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];

/// Registers the first readable font as `sans-serif`; the path used, or why none was.
pub fn register_font() -> Result<PathBuf, String> {
    let env = std::env::var_os("KRS_BENCH_FONT").map(PathBuf::from);
    let candidates: Vec<PathBuf> = env
        .into_iter()
        .chain(FONT_CANDIDATES.iter().map(PathBuf::from))
        .collect();
    for path in &candidates {
        let Ok(bytes) = std::fs::read(path) else {
            continue;
        };
        // plotters keeps the font for the life of the process.
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
            return Ok(path.clone());
        }
    }
    Err(format!(
        "no TrueType font found (tried $KRS_BENCH_FONT and {}): install fonts-dejavu-core or set KRS_BENCH_FONT",
        FONT_CANDIDATES.join(", ")
    ))
}

/// One line of a plot.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend.
    pub label: String,
    /// Points (x, y).
    pub points: Vec<(f64, f64)>,
}

/// A line plot: title, axis descriptions, series.
#[derive(Clone, Debug)]
pub struct LinePlot {
    /// Title.
    pub title: String,
    /// x axis.
    pub x_desc: String,
    /// y axis.
    pub y_desc: String,
    /// Lines (with point markers).
    pub series: Vec<Series>,
}

/// The empirical CDF of `values`: (value, fraction ≤ value), sorted.
pub fn cdf(values: &[f64]) -> Vec<(f64, f64)> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len() as f64;
    v.iter()
        .enumerate()
        .map(|(i, &x)| (x, (i + 1) as f64 / n))
        .collect()
}

const PALETTE: [RGBColor; 6] = [
    RGBColor(214, 39, 40),
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
];

fn bounds(series: &[Series]) -> (f64, f64, f64, f64) {
    let pts = series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64, 0.0f64);
    for &(x, y) in pts {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if !x0.is_finite() {
        return (0.0, 1.0, 0.0, 1.0);
    }
    let x0 = x0.min(0.0);
    let pad = |a: f64, b: f64| if b > a { (b - a) * 0.05 } else { 1.0 };
    (x0, x1 + pad(x0, x1), y0, y1 + pad(y0, y1))
}

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, plot: &LinePlot) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(e)?;
    let (x0, x1, y0, y1) = bounds(&plot.series);
    let mut chart = ChartBuilder::on(&root)
        .caption(&plot.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc(plot.x_desc.as_str())
        .y_desc(plot.y_desc.as_str())
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(e)?;
    for (i, s) in plot.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        chart
            .draw_series(LineSeries::new(
                s.points.iter().copied(),
                color.stroke_width(2),
            ))
            .map_err(e)?
            .label(s.label.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart
            .draw_series(
                s.points
                    .iter()
                    .map(|&(x, y)| Circle::new((x, y), 3, color.filled())),
            )
            .map_err(e)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(e)?;
    root.present().map_err(e)
}

/// Writes `<stem>.svg` and `<stem>.png` in `dir`; the files written.
pub fn write(dir: &Path, stem: &str, plot: &LinePlot) -> Result<Vec<PathBuf>, String> {
    let svg = dir.join(format!("{stem}.svg"));
    let png = dir.join(format!("{stem}.png"));
    draw(SVGBackend::new(&svg, (900, 560)).into_drawing_area(), plot)
        .map_err(|e| format!("{}: {e}", svg.display()))?;
    draw(
        BitMapBackend::new(&png, (900, 560)).into_drawing_area(),
        plot,
    )
    .map_err(|e| format!("{}: {e}", png.display()))?;
    Ok(vec![svg, png])
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn cdf_is_sorted_and_ends_at_one() {
        assert_eq!(
            cdf(&[3.0, 1.0, 2.0, f64::NAN]),
            vec![(1.0, 1.0 / 3.0), (2.0, 2.0 / 3.0), (3.0, 1.0)]
        );
        assert!(cdf(&[]).is_empty());
    }

    #[test]
    fn plots_are_written_when_a_font_exists() {
        if register_font().is_err() {
            eprintln!("no font on this machine: plot test skipped");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let plot = LinePlot {
            title: "test".into(),
            x_desc: "x".into(),
            y_desc: "y".into(),
            series: vec![Series {
                label: "a".into(),
                points: cdf(&[0.1, 0.2, 0.4]),
            }],
        };
        let files = write(dir.path(), "t", &plot).unwrap();
        for f in files {
            assert!(
                std::fs::metadata(&f).unwrap().len() > 100,
                "{}",
                f.display()
            );
        }
    }
}
