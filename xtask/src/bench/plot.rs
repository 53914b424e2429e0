//! The report's plots, each written as SVG and PNG from the same drawing code (plotters):
//! latency histograms with log-scale counts (cyclictest, and the RTOS latencies when their
//! buckets exist; Partita's and Xen's RTOS latencies overlaid per load), overhead bars per
//! virtualized configuration and R_P bars when Thread-Metric scores of a virtualized
//! configuration exist (Partita's and Xen's side by side when both do). Text is drawn with
//! DejaVu Sans (Debian's fonts-dejavu-core, installed by `cargo xtask setup`), so PNGs do
//! not depend on the machine's font configuration. It only reads `Results`.

use std::path::Path;
use std::sync::OnceLock;

use anyhow::{anyhow, bail, Context, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::formula::{overhead, performance_ratio};
use super::matrix::{Headline, CONFIGS, LINUX_HEADLINES, XEN_PEERS};
use super::record::{parse_hist_metric, Results};

/// The font file every plot's text uses.
pub const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

const SIZE: (u32, u32) = (900, 540);

/// A histogram: one or more series (overlaid, each with its legend) of buckets [lo, hi)
/// with counts, in `unit`.
struct Histogram {
    title: String,
    unit: String,
    series: Vec<Series>,
}

struct Series {
    label: String,
    buckets: Vec<(u64, u64, f64)>,
}

/// Colours of the overlaid series, in order.
const SERIES_COLOURS: [RGBColor; 2] = [BLUE, RED];

/// Named horizontal bars, top to bottom, each with the text printed beside it.
struct Bars {
    title: String,
    axis: String,
    items: Vec<Bar>,
    /// Colours of bars at or above zero and below it.
    colours: (RGBColor, RGBColor),
}

struct Bar {
    name: String,
    value: f64,
    text: String,
    /// A colour of its own (one per series when two are compared), else the sign's.
    colour: Option<RGBColor>,
}

/// One plot, drawn the same way on every backend.
enum Plot {
    Histogram(Histogram),
    Bars(Bars),
}

/// Draws every plot the results allow into `dir`; returns the file stems in order.
pub fn render_all(dir: &Path, results: &Results) -> Result<Vec<String>> {
    register_font()?;
    let plots = histograms(results)
        .into_iter()
        .chain(peer_histograms(results))
        .map(|(stem, h)| (stem, Plot::Histogram(h)))
        .chain(
            overhead_bars(results)
                .into_iter()
                .chain(ratio_bars(results))
                .map(|(stem, b)| (stem, Plot::Bars(b))),
        );
    let mut stems = Vec::new();
    for (stem, plot) in plots {
        write_both(dir, &stem, &plot)?;
        stems.push(stem);
    }
    Ok(stems)
}

fn register_font() -> Result<()> {
    static REGISTERED: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            let bytes = std::fs::read(FONT).map_err(|e| {
                format!("cannot read the plot font {FONT} ({e}); `cargo xtask setup` installs fonts-dejavu-core")
            })?;
            let leaked: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            plotters::style::register_font("sans-serif", FontStyle::Normal, leaked)
                .map_err(|_| format!("{FONT} is not a usable font"))
        })
        .clone()
        .map_err(|e| anyhow!(e))
}

/// Writes `<stem>.svg` and `<stem>.png` of `plot`.
fn write_both(dir: &Path, stem: &str, plot: &Plot) -> Result<()> {
    let svg = dir.join(format!("{stem}.svg"));
    let png = dir.join(format!("{stem}.png"));
    draw(&SVGBackend::new(&svg, SIZE).into_drawing_area(), plot)?;
    draw(&BitMapBackend::new(&png, SIZE).into_drawing_area(), plot)?;
    if !svg.is_file() {
        bail!("{} was not written", svg.display());
    }
    if png_size(&png)? != SIZE {
        bail!("{} does not have the plot's size", png.display());
    }
    Ok(())
}

fn draw<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, plot: &Plot) -> Result<()> {
    match plot {
        Plot::Histogram(histogram) => histogram_on(area, histogram),
        Plot::Bars(bars) => bars_on(area, bars),
    }
}

fn failed<E: std::fmt::Debug>(error: E) -> anyhow::Error {
    anyhow!("plotting failed: {error:?}")
}

fn histogram_on<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    histogram: &Histogram,
) -> Result<()> {
    area.fill(&WHITE).map_err(failed)?;
    let buckets = || histogram.series.iter().flat_map(|s| s.buckets.iter());
    let hi = buckets().map(|b| b.1).max().unwrap_or(1);
    let top = buckets().map(|b| b.2).fold(1.0, f64::max);
    let mut chart = ChartBuilder::on(area)
        .caption(&histogram.title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..hi as f64, (0.5..top * 2.0).log_scale())
        .map_err(failed)?;
    chart
        .configure_mesh()
        .x_desc(format!("latency ({})", histogram.unit))
        .y_desc("samples (log scale)")
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(failed)?;
    let alpha = if histogram.series.len() > 1 { 0.5 } else { 0.7 };
    for (series, colour) in histogram.series.iter().zip(SERIES_COLOURS.iter().cycle()) {
        chart
            .draw_series(series.buckets.iter().map(|&(lo, hi, count)| {
                Rectangle::new(
                    [(lo as f64, 0.5), (hi as f64, count)],
                    colour.mix(alpha).filled(),
                )
            }))
            .map_err(failed)?
            .label(series.label.as_str())
            .legend(move |(x, y)| {
                Rectangle::new([(x, y - 6), (x + 16, y + 6)], colour.mix(alpha).filled())
            });
    }
    if histogram.series.len() > 1 {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .draw()
            .map_err(failed)?;
    }
    area.present().map_err(failed)
}

fn bars_on<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, bars: &Bars) -> Result<()> {
    area.fill(&WHITE).map_err(failed)?;
    let low = bars.items.iter().map(|b| b.value).fold(0.0, f64::min);
    let high = bars.items.iter().map(|b| b.value).fold(0.0, f64::max);
    let pad = ((high - low) * 0.15).max(1.0);
    let count = bars.items.len();
    // Segment 0 is the bottom of the chart: the first bar goes to the top.
    let slot = move |index: usize| count - 1 - index;
    let names: Vec<String> = bars.items.iter().rev().map(|b| b.name.clone()).collect();
    let label = move |value: &SegmentValue<usize>| match value {
        SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
            names.get(*i).cloned().unwrap_or_default()
        }
        SegmentValue::Last => String::new(),
    };
    let mut chart = ChartBuilder::on(area)
        .caption(&bars.title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(260)
        .build_cartesian_2d(low - pad..high + pad, (0..count).into_segmented())
        .map_err(failed)?;
    chart
        .configure_mesh()
        .x_desc(bars.axis.as_str())
        .y_labels(count)
        .y_label_formatter(&label)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(failed)?;
    chart
        .draw_series(bars.items.iter().enumerate().map(|(i, bar)| {
            let colour = match bar.colour {
                Some(colour) => colour,
                None if bar.value >= 0.0 => bars.colours.0,
                None => bars.colours.1,
            };
            let mut rect = Rectangle::new(
                [
                    (0.0, SegmentValue::Exact(slot(i))),
                    (bar.value, SegmentValue::Exact(slot(i) + 1)),
                ],
                colour.mix(0.7).filled(),
            );
            rect.set_margin(3, 3, 0, 0);
            rect
        }))
        .map_err(failed)?;
    let text =
        TextStyle::from(("sans-serif", 12).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    chart
        .draw_series(bars.items.iter().enumerate().map(|(i, bar)| {
            Text::new(
                bar.text.clone(),
                (
                    bar.value.max(0.0) + pad * 0.1,
                    SegmentValue::CenterOf(slot(i)),
                ),
                text.clone(),
            )
        }))
        .map_err(failed)?;
    area.present().map_err(failed)
}

/// A file-name-safe stem part.
fn slug(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// One histogram per configuration x experiment with buckets.
fn histograms(results: &Results) -> Vec<(String, Histogram)> {
    let mut plots: Vec<(String, Histogram)> = Vec::new();
    for record in &results.records {
        let Some((unit, lo, hi)) = parse_hist_metric(&record.metric) else {
            continue;
        };
        let stem = format!("hist-{}-{}", slug(&record.experiment), record.config);
        match plots.iter_mut().find(|(s, _)| *s == stem) {
            Some((_, histogram)) => histogram.series[0].buckets.push((lo, hi, record.value)),
            None => plots.push((
                stem,
                Histogram {
                    title: format!(
                        "{} latency, {} (log counts)",
                        record.experiment, record.config
                    ),
                    unit: unit.to_owned(),
                    series: vec![Series {
                        label: record.config.clone(),
                        buckets: vec![(lo, hi, record.value)],
                    }],
                },
            )),
        }
    }
    plots
}

/// Partita's and Xen's histogram of the same experiment and load, overlaid: one plot per
/// pair of `XEN_PEERS` and experiment where both have buckets.
fn peer_histograms(results: &Results) -> Vec<(String, Histogram)> {
    let singles = histograms(results);
    let find = |experiment: &str, config: &str| {
        let stem = format!("hist-{}-{config}", slug(experiment));
        singles.iter().find(|(s, _)| *s == stem)
    };
    let mut plots = Vec::new();
    for (partita, xen) in XEN_PEERS {
        let experiments = results
            .records
            .iter()
            .filter(|r| r.config == partita && parse_hist_metric(&r.metric).is_some())
            .fold(Vec::<&str>::new(), |mut seen, r| {
                if !seen.contains(&r.experiment.as_str()) {
                    seen.push(&r.experiment);
                }
                seen
            });
        for experiment in experiments {
            let (Some((_, ours)), Some((_, peer))) =
                (find(experiment, partita), find(experiment, xen))
            else {
                continue;
            };
            let series = [ours, peer]
                .iter()
                .zip([format!("Partita {partita}"), format!("Xen {xen}")])
                .map(|(h, label)| Series {
                    label,
                    buckets: h.series[0].buckets.clone(),
                })
                .collect();
            plots.push((
                format!("hist-{}-{partita}-vs-xen", slug(experiment)),
                Histogram {
                    title: format!("{experiment} latency, Partita vs Xen, {partita} (log counts)"),
                    unit: ours.unit.clone(),
                    series,
                },
            ));
        }
    }
    plots
}

/// Overhead bars of each virtualized configuration against native.
fn overhead_bars(results: &Results) -> Vec<(String, Bars)> {
    CONFIGS
        .iter()
        .filter(|c| **c != "native")
        .filter_map(|config| {
            let items = overhead_items(results, config, &LINUX_HEADLINES);
            (!items.is_empty()).then(|| {
                (
                    format!("overhead-{config}"),
                    Bars {
                        title: format!("Overhead of {config} against native (Linux)"),
                        axis: "overhead (%), positive = loss".to_owned(),
                        items,
                        colours: (RED, GREEN),
                    },
                )
            })
        })
        .collect()
}

fn overhead_items(results: &Results, config: &str, headlines: &[Headline]) -> Vec<Bar> {
    let mut items = Vec::new();
    for headline in headlines {
        for virt in results.records.iter().filter(|r| {
            r.config == config && r.metric == headline.metric && headline.matches(&r.experiment)
        }) {
            let value = results
                .value("native", &virt.experiment, &virt.metric)
                .and_then(|native| overhead(headline.sense, native.value, virt.value));
            if let Some(value) = value {
                items.push(Bar {
                    name: format!("{} {}", virt.experiment, virt.metric),
                    value,
                    text: format!("{value:+.2} %"),
                    colour: None,
                });
            }
        }
    }
    items
}

/// R_P bars of each virtualized configuration with Thread-Metric scores, then of each
/// Partita configuration and its Xen counterpart side by side (`XEN_PEERS`).
fn ratio_bars(results: &Results) -> Vec<(String, Bars)> {
    let rp = |title: String, items: Vec<Bar>| Bars {
        title,
        axis: "R_P (%)".to_owned(),
        items,
        colours: (BLUE, BLUE),
    };
    let single = CONFIGS
        .iter()
        .filter(|c| **c != "native")
        .filter_map(|config| {
            let items = ratio_items(results, config);
            (!items.is_empty()).then(|| {
                (
                    format!("rp-{config}"),
                    rp(
                        format!("Thread-Metric R_P of {config} (native = 100 %)"),
                        items,
                    ),
                )
            })
        });
    let peers = XEN_PEERS.iter().filter_map(|(partita, xen)| {
        let ours = ratio_items(results, partita);
        let theirs = ratio_items(results, xen);
        let mut items = Vec::new();
        for bar in ours {
            let Some(peer) = theirs.iter().find(|t| t.name == bar.name) else {
                continue;
            };
            let xen_bar = Bar {
                name: format!("{} (Xen {xen})", peer.name),
                value: peer.value,
                text: peer.text.clone(),
                colour: Some(SERIES_COLOURS[1]),
            };
            items.push(Bar {
                name: format!("{} (Partita {partita})", bar.name),
                colour: Some(SERIES_COLOURS[0]),
                ..bar
            });
            items.push(xen_bar);
        }
        (!items.is_empty()).then(|| {
            (
                format!("rp-{partita}-vs-xen"),
                rp(
                    format!("Thread-Metric R_P, Partita {partita} vs Xen {xen} (native = 100 %)"),
                    items,
                ),
            )
        })
    });
    single.chain(peers).collect()
}

/// One R_P bar per Thread-Metric test of `config` with a native score.
fn ratio_items(results: &Results, config: &str) -> Vec<Bar> {
    results
        .records
        .iter()
        .filter(|r| {
            r.config == config && r.metric == "score" && r.experiment.starts_with("thread-metric/")
        })
        .filter_map(|vm| {
            let native = results.value("native", &vm.experiment, "score")?;
            let ratio = performance_ratio(native.value, vm.value)?;
            Some(Bar {
                name: vm
                    .experiment
                    .trim_start_matches("thread-metric/")
                    .to_owned(),
                value: ratio,
                text: format!("{ratio:.1} %"),
                colour: None,
            })
        })
        .collect()
}

/// The width and height in a PNG file's header.
pub fn png_size(path: &Path) -> Result<(u32, u32)> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if bytes.len() < 24 || &bytes[1..4] != b"PNG" {
        bail!("{} is not a PNG", path.display());
    }
    let word =
        |at: usize| u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    Ok((word(16), word(20)))
}
