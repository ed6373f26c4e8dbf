//! Charts as SVG, drawn at build time: pure functions from plain integers (in the units
//! the receipts use) to trusted markup that a template may emit with `| safe`.
//!
//! Every chart is an `<svg xmlns viewBox role="img" aria-labelledby>` with a `<title>` and
//! a `<desc>` whose ids start with the caller's `id` prefix (unique per page), sized by
//! its viewBox only (it scales to the width of its container, a 390 px phone included),
//! with no script, no inline `style`, no external reference. Every label goes through
//! [`receipts::text::escape_untrusted`] and then this module's one XML escape. Coordinates
//! are computed in integer tenths of a user unit and printed with one decimal, so
//! identical input gives identical bytes. An empty input gives an explicit "no data"
//! chart.
//!
//! Colours come from `currentColor` and the CSS classes below: every stroke and fill is
//! `currentColor` (or none), so setting `color` on a class colours it, and a CSS rule beats
//! the presentation attributes (`stroke-opacity`, `stroke-dasharray`, …) where style.css
//! wants more, for light and dark mode alike:
//! - root: `chart` plus one of `chart-leader`, `chart-rate`, `chart-percentiles`,
//!   `chart-correctness`; `chart-empty` on a "no data" chart, whose text is `no-data`;
//! - frame: `axis` (axis lines; the frame of a "no data" chart), `grid` (tick lines
//!   across the plot, drawn at 0.2 opacity), `zero` (the leader chart's zero line, baseline
//!   speed, when scores go negative), `tick-label`, `axis-label` (groups of text);
//! - data: `series` (the leader's step line; the group of one percentile series),
//!   `series-0` … `series-5` (percentile series, cycling; each also has its own marker
//!   shape and dash pattern, so colour is never the only cue), `markers` (a group of
//!   point markers), `marker` (one point marker, with its values in a `<title>`),
//!   `seat-change` (leader chart: a round where the seat changed, a diamond instead of a
//!   circle), `pass`, `fail`, `invalid` (rate probes: filled circle, cross, hollow
//!   square), `off-chart` (a value above the plot or not measured: a triangle at the top
//!   edge), `chosen` (the chosen rate: a dotted vertical line and a ring around its
//!   passing probes);
//! - bounds: `bound` (every dashed bound line) with `bound-sla`, `bound-group` or
//!   `bound-item`, and `bound-label` (its text; `paint-order: stroke` with a background
//!   stroke keeps it readable over dense dots);
//! - correctness: `items` (the group of item dots, 0.7 opacity), `item` (one dot),
//!   `group-mean` (the groups' means, horizontal bars across their items), `over` (an item
//!   over the item bound, a cross; group means over the group bound, a thicker bar);
//! - `legend` (the percentile plot's legend group), `legend-label`.
//!
//! Suggested CSS: `.chart { width: 100%; height: auto; max-width: 48rem }`.

/// `format!` appended to a `String` without a temporary one (writing to a `String` cannot
/// fail, so the `fmt::Result` is dropped). Needs `std::fmt::Write` in scope.
macro_rules! push {
    ($out:expr, $($arg:tt)*) => {{
        let _ = $out.write_fmt(format_args!($($arg)*));
    }};
}

use std::fmt::Write as _;

use receipts::model::{CorrectnessItems, CorrectnessSpec, ProbeRecord, ProbeVerdict, Sla};
use receipts::rules::correctness;
use receipts::text::{escape_untrusted, format_grouped};
use verifier::view::{RateUnit, format_milli_rate, format_score_percent};

/// One round of the leader history: who held the seat after the round and the leader's
/// score in that round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderPoint {
    /// The round number.
    pub round: u64,
    /// The leader's score, ppm above the baseline's speed (0 = baseline speed; negative
    /// is slower than the baseline).
    pub score_ppm: i64,
    /// The seat: a label naming the leader (untrusted text, e.g. `2411df5a…ce7995 (fast)`,
    /// or `baseline`). The same seat must carry the same label: a change of label between
    /// consecutive rounds is drawn as a seat change.
    pub seat: String,
}

/// One probe of a rate search, as the chart needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RateProbe {
    /// The run it belongs to, from 0.
    pub run: u32,
    /// Its position in the run's search, from 0.
    pub probe: u32,
    /// Target arrival rate, milli-requests/s.
    pub rate_milli_rps: u64,
    /// The SLA percentile of the SLA latency, µs; `None` when the rank fell on a failed
    /// request (drawn as off-chart).
    pub percentile_us: Option<u64>,
    /// The probe's verdict.
    pub verdict: ProbeVerdict,
}

impl From<&ProbeRecord> for RateProbe {
    fn from(p: &ProbeRecord) -> Self {
        Self {
            run: p.run,
            probe: p.probe,
            rate_milli_rps: p.rate_milli_rps,
            percentile_us: p.percentile_us,
            verdict: p.verdict,
        }
    }
}

/// One point of a latency percentile distribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PercentilePoint {
    /// The quantile in parts per million: `500_000` = p50, `999_900` = p99.99. Points
    /// outside the plotted range p50 … p99.99 are not drawn.
    pub quantile_ppm: u32,
    /// The latency at that quantile, µs.
    pub latency_us: u64,
}

/// One named series of a percentile plot (`TTFT`, `e2e`, `baseline e2e`, …).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PercentileSeries {
    /// The legend's label (untrusted text is fine: it is escaped).
    pub name: String,
    /// Its points, in any order (drawn sorted by quantile).
    pub points: Vec<PercentilePoint>,
}

/// An entry's per-item correctness distances and the gate they were judged by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CorrectnessData {
    /// Every item's distance, micro-nats, in item order.
    pub distances_micro_nats: Vec<u64>,
    /// Items per group, taken in order (a short last group is its own group).
    pub group_size: u32,
    /// Bound on every group's mean distance, micro-nats.
    pub group_mean_bound_micro_nats: u64,
    /// Bound on every item's distance, micro-nats.
    pub item_bound_micro_nats: u64,
}

impl From<&CorrectnessItems> for CorrectnessData {
    fn from(items: &CorrectnessItems) -> Self {
        Self {
            distances_micro_nats: items.items.iter().map(|i| i.distance_micro_nats).collect(),
            group_size: items.group_size,
            group_mean_bound_micro_nats: items.group_mean_bound_micro_nats,
            item_bound_micro_nats: items.item_bound_micro_nats,
        }
    }
}

/// Most points of [`leader_history`] drawn with a marker each; beyond it only the first,
/// the last and the seat changes are (the latest [`LEADER_MARKERS`] of them), so the chart
/// of 10,000 rounds stays a few KB.
pub const LEADER_MARKERS: usize = 100;

/// The leader history as a step chart: x the round number, y the leader's score (ppm
/// above baseline, labelled as a fraction: `+0.5` = 50 % faster), the zero line at
/// baseline speed. Up to [`LEADER_MARKERS`] points a circle marks each round (a diamond,
/// class `seat-change`, where the seat changed from the previous point); beyond it only
/// the first, the last and the seat changes are marked, the latest [`LEADER_MARKERS`] of
/// them, and where more points than the plot has pixel columns the line keeps each
/// column's first, lowest, highest and last score (what a pixel can show). `id` prefixes
/// the element ids (sanitised to `[A-Za-z0-9_-]`), `title` is the chart's `<title>`.
/// Points are drawn sorted by round.
pub fn leader_history(id: &str, title: &str, points: &[LeaderPoint]) -> String {
    let id = sanitize_id(id);
    if points.is_empty() {
        return no_data(&id, "chart-leader", title, "No rounds yet.");
    }
    let mut points: Vec<&LeaderPoint> = points.iter().collect();
    points.sort_by(|a, b| (a.round, a.score_ppm, &a.seat).cmp(&(b.round, b.score_ppm, &b.seat)));
    let changes: Vec<bool> = points
        .iter()
        .enumerate()
        .map(|(i, p)| i > 0 && points[i - 1].seat != p.seat)
        .collect();

    let rounds = points.iter().map(|p| i128::from(p.round));
    let scores = points.iter().map(|p| i128::from(p.score_ppm));
    let x = Axis::linear(bounds(rounds), 1, false, PLOT_LEFT, PLOT_RIGHT);
    let y = Axis::linear(bounds(scores), 100_000, true, PLOT_BOTTOM, PLOT_TOP);

    let first = points[0];
    let last = points[points.len() - 1];
    let (min, max) = (
        points.iter().map(|p| p.score_ppm).min().unwrap_or(0),
        points.iter().map(|p| p.score_ppm).max().unwrap_or(0),
    );
    let n_changes = changes.iter().filter(|c| **c).count();
    let marked: Vec<usize> = if points.len() <= LEADER_MARKERS {
        (0..points.len()).collect()
    } else {
        let mut marked: Vec<usize> = (0..points.len())
            .filter(|&i| i == 0 || i == points.len() - 1 || changes[i])
            .collect();
        let from = marked.len().saturating_sub(LEADER_MARKERS);
        marked.drain(..from);
        marked
    };
    let mut desc = format!(
        "Step chart of the leader's score in {} {} from round {} to round {}: scores from {} \
         to {} (0 is baseline speed), {} seat {}; the last seat is {}.",
        points.len(),
        plural(points.len(), "round", "rounds"),
        first.round,
        last.round,
        format_score_percent(min),
        format_score_percent(max),
        n_changes,
        plural(n_changes, "change", "changes"),
        last.seat,
    );
    if marked.len() < points.len() {
        push!(
            desc,
            " Marked: the first and last rounds and the seat changes, {} in all (the latest \
             {LEADER_MARKERS} at most).",
            marked.len()
        );
    }

    let mut out = open(&id, "chart-leader", title, &desc, VIEW_HEIGHT);
    // Only rounds that were sealed are named: a single round's axis spans one more, which
    // stays unlabelled. Scores in percent, as every page shows them.
    let (first_round, last_round) = (i128::from(first.round), i128::from(last.round));
    frame(
        &mut out,
        &x,
        &y,
        |v| {
            if (first_round..=last_round).contains(&v) {
                number(v, 0, false)
            } else {
                String::new()
            }
        },
        |v| format!("{} %", number(v, 4, true)),
    );
    zero_line(&mut out, &x, &y);
    axis_labels(&mut out, "round", "leader score (0 = baseline speed)");

    let pixels: Vec<(i64, i64)> = points
        .iter()
        .map(|p| (x.px(i128::from(p.round)), y.px(i128::from(p.score_ppm))))
        .collect();
    let d = step_path(&pixels, points.len() > plot_columns());
    push!(
        out,
        "<path class=\"series\" d=\"{d}\" fill=\"none\" stroke=\"currentColor\" stroke-width=\"2\"/>\n"
    );
    out.push_str("<g class=\"markers\" fill=\"currentColor\" stroke=\"currentColor\">\n");
    for i in marked {
        let (p, changed) = (points[i], changes[i]);
        let (px, py) = pixels[i];
        let tip = format!(
            "round {}: {}, seat {}{}",
            p.round,
            format_score_percent(p.score_ppm),
            p.seat,
            if changed { " (seat changed)" } else { "" }
        );
        let (shape, class) = if changed {
            (Shape::Diamond, "marker seat-change")
        } else {
            (Shape::Circle, "marker")
        };
        shape.draw(&mut out, px, py, class, Some(&tip));
    }
    out.push_str("</g>\n");
    close(out)
}

/// Whole pixel columns of the plot (a pixel is ten of the chart's units).
fn plot_columns() -> usize {
    usize::try_from((PLOT_RIGHT - PLOT_LEFT) / 10).unwrap_or(usize::MAX)
}

/// The `d` of a step line through `pixels` (tenths, in x order): `M` to the first, then
/// `H` to each next x and `V` to its y. `per_column`: the points of one pixel column are
/// drawn as one vertical run through their first, lowest, highest and last y (in the
/// order they occur), at the column's first x — what a pixel can show of them.
fn step_path(pixels: &[(i64, i64)], per_column: bool) -> String {
    let mut d = String::new();
    let mut i = 0;
    while i < pixels.len() {
        let (px, py) = pixels[i];
        let mut ys = vec![py];
        let mut j = i + 1;
        if per_column {
            while j < pixels.len() && pixels[j].0.div_euclid(10) == px.div_euclid(10) {
                j += 1;
            }
            ys = column_extremes(pixels[i..j].iter().map(|p| p.1));
        }
        if i == 0 {
            push!(d, "M{} {}", tenths(px), tenths(ys[0]));
        } else {
            push!(d, "H{}V{}", tenths(px), tenths(ys[0]));
        }
        for y in &ys[1..] {
            push!(d, "V{}", tenths(*y));
        }
        i = j;
    }
    d
}

/// The first, lowest, highest and last of `ys` (at least one), in the order they occur,
/// each once where they repeat in a row.
fn column_extremes(ys: impl Iterator<Item = i64>) -> Vec<i64> {
    let ys: Vec<(usize, i64)> = ys.enumerate().collect();
    let low = ys.iter().min_by_key(|(k, y)| (*y, *k)).copied();
    let high = ys
        .iter()
        .max_by_key(|(k, y)| (*y, std::cmp::Reverse(*k)))
        .copied();
    let mut kept: Vec<(usize, i64)> = [ys.first().copied(), low, high, ys.last().copied()]
        .into_iter()
        .flatten()
        .collect();
    kept.sort_by_key(|(k, _)| *k);
    kept.dedup_by_key(|(k, _)| *k);
    let mut out: Vec<i64> = kept.into_iter().map(|(_, y)| y).collect();
    out.dedup();
    out
}

/// A rate search: x the probe rate (milli-req/s, labelled in `unit`), y the measured SLA
/// percentile (µs, labelled in ms from 10 ms up, else µs), the SLA bound
/// ([`Sla::bound_us`]) as a horizontal line, passing probes as filled circles (`pass`),
/// failing ones as crosses (`fail`), invalid ones as hollow squares (`invalid`), a
/// missing percentile as a triangle at the top edge (`off-chart`), and
/// `chosen_rate_milli_rps` (the rate the search settled on) as a vertical line with its
/// passing probes ringed (`chosen`). `id` and `title` as for [`leader_history`]. Rates
/// read in `unit` (`decisions/s` for a decide round).
pub fn rate_search(
    id: &str,
    title: &str,
    sla: &Sla,
    probes: &[RateProbe],
    chosen_rate_milli_rps: Option<u64>,
    unit: RateUnit,
) -> String {
    let id = sanitize_id(id);
    if probes.is_empty() {
        return no_data(&id, "chart-rate", title, "No probes were run.");
    }
    let mut probes: Vec<&RateProbe> = probes.iter().collect();
    probes.sort_by_key(|p| (p.run, p.probe, p.rate_milli_rps, p.percentile_us));
    let bound_us = sla.bound_us();

    let rates = probes
        .iter()
        .map(|p| i128::from(p.rate_milli_rps))
        .chain(chosen_rate_milli_rps.map(i128::from));
    let latencies = probes
        .iter()
        .filter_map(|p| p.percentile_us.map(i128::from))
        .chain([i128::from(bound_us)]);
    let x = Axis::linear(bounds(rates), 1_000, true, PLOT_LEFT, PLOT_RIGHT);
    let y = Axis::linear(bounds(latencies), 10, true, PLOT_BOTTOM, PLOT_TOP);
    let latency_unit = LatencyUnit::for_axis(&y);

    let count = |v: ProbeVerdict| probes.iter().filter(|p| p.verdict == v).count();
    let (lo, hi) = (
        probes.iter().map(|p| p.rate_milli_rps).min().unwrap_or(0),
        probes.iter().map(|p| p.rate_milli_rps).max().unwrap_or(0),
    );
    let chosen_text = chosen_rate_milli_rps.map_or_else(
        || "no rate was chosen".to_owned(),
        |r| format!("the chosen rate is {}", format_milli_rate(r, unit)),
    );
    let desc = format!(
        "Rate search: {} {} ({} passed, {} failed, {} invalid) from {} to {}, each with its \
         measured {} {} latency against the bound of {}; {}.",
        probes.len(),
        plural(probes.len(), "probe", "probes"),
        count(ProbeVerdict::Pass),
        count(ProbeVerdict::Fail),
        count(ProbeVerdict::Invalid),
        format_milli_rate(lo, unit),
        format_milli_rate(hi, unit),
        sla.percentile,
        sla.latency,
        format_latency(bound_us),
        chosen_text,
    );

    let mut out = open(&id, "chart-rate", title, &desc, VIEW_HEIGHT);
    frame(
        &mut out,
        &x,
        &y,
        |v| number(v, 3, false),
        |v| latency_unit.label(v),
    );
    axis_labels(
        &mut out,
        &format!("probe rate ({})", unit.per_second()),
        &format!(
            "{} {} latency ({})",
            sla.percentile,
            sla.latency,
            latency_unit.name()
        ),
    );

    bound_line(
        &mut out,
        "bound bound-sla",
        y.px(i128::from(bound_us)),
        &format!("bound {}", format_latency(bound_us)),
    );
    if let Some(rate) = chosen_rate_milli_rps {
        let cx = x.px(i128::from(rate));
        push!(
            out,
            "<line class=\"chosen\" x1=\"{c}\" y1=\"{}\" x2=\"{c}\" y2=\"{}\" stroke=\"currentColor\" stroke-width=\"1\" stroke-dasharray=\"2 2\"/>\n",
            tenths(PLOT_TOP),
            tenths(PLOT_BOTTOM),
            c = tenths(cx),
        );
    }

    out.push_str("<g class=\"markers\" fill=\"currentColor\" stroke=\"currentColor\">\n");
    for p in &probes {
        let px = x.px(i128::from(p.rate_milli_rps));
        let verdict = match p.verdict {
            ProbeVerdict::Pass => "pass",
            ProbeVerdict::Fail => "fail",
            ProbeVerdict::Invalid => "invalid",
        };
        let measured = p
            .percentile_us
            .map_or_else(|| "not measured".to_owned(), format_latency);
        let tip = format!(
            "run {} probe {}: {}, {} {}, {verdict}",
            p.run,
            p.probe,
            format_milli_rate(p.rate_milli_rps, unit),
            sla.percentile,
            measured,
        );
        let (shape, py, class) = match p.percentile_us {
            Some(us) => {
                let shape = match p.verdict {
                    ProbeVerdict::Pass => Shape::Circle,
                    ProbeVerdict::Fail => Shape::Cross,
                    ProbeVerdict::Invalid => Shape::Square,
                };
                (shape, y.px(i128::from(us)), format!("marker {verdict}"))
            }
            None => (
                Shape::TriangleUp,
                PLOT_TOP,
                format!("marker {verdict} off-chart"),
            ),
        };
        shape.draw(&mut out, px, py, &class, Some(&tip));
        if p.verdict == ProbeVerdict::Pass && Some(p.rate_milli_rps) == chosen_rate_milli_rps {
            Shape::Ring.draw(&mut out, px, py, "chosen", None);
        }
    }
    out.push_str("</g>\n");
    close(out)
}

/// A latency percentile distribution, as HdrHistogram plots it: x the percentile on a
/// log(1 / (1 − p)) axis from p50 to p99.99 (ticks p50, p90, p99, p99.9, p99.99), y the
/// latency (µs, labelled in ms from 10 ms up), one line per series (`series-0` …
/// `series-5`, cycling) with its own marker shape and dash pattern, and a legend. Series
/// with no point in range are listed in the legend and drawn as nothing; when no series
/// has one, the chart says "no data". `id` and `title` as for [`leader_history`].
pub fn percentile_plot(id: &str, title: &str, series: &[PercentileSeries]) -> String {
    let id = sanitize_id(id);
    let plotted: Vec<(&str, Vec<PercentilePoint>)> = series
        .iter()
        .map(|s| {
            let mut pts: Vec<PercentilePoint> = s
                .points
                .iter()
                .copied()
                .filter(|p| (QUANTILE_LO_PPM..=QUANTILE_HI_PPM).contains(&p.quantile_ppm))
                .collect();
            pts.sort_by_key(|p| (p.quantile_ppm, p.latency_us));
            (s.name.as_str(), pts)
        })
        .collect();
    if plotted.iter().all(|(_, pts)| pts.is_empty()) {
        return no_data(
            &id,
            "chart-percentiles",
            title,
            "No latency was recorded between p50 and p99.99.",
        );
    }

    let legend_rows = i64::try_from(plotted.len().div_ceil(LEGEND_COLUMNS)).unwrap_or(i64::MAX);
    let shift = legend_rows.saturating_mul(LEGEND_ROW);
    let height = VIEW_HEIGHT.saturating_add(shift);
    let latencies = plotted
        .iter()
        .flat_map(|(_, pts)| pts.iter().map(|p| i128::from(p.latency_us)));
    let x = LogAxis {
        from: PLOT_LEFT,
        to: PLOT_RIGHT,
    };
    let y = Axis::linear(
        bounds(latencies),
        10,
        true,
        PLOT_BOTTOM.saturating_add(shift),
        PLOT_TOP.saturating_add(shift),
    );
    let unit = LatencyUnit::for_axis(&y);

    let summaries: Vec<String> = plotted
        .iter()
        .map(|(name, pts)| match (pts.first(), pts.last()) {
            (Some(a), Some(b)) => format!(
                "{name}: {} at {}, {} at {}",
                format_latency(a.latency_us),
                format_quantile(a.quantile_ppm),
                format_latency(b.latency_us),
                format_quantile(b.quantile_ppm),
            ),
            _ => format!("{name}: no data"),
        })
        .collect();
    let desc = format!(
        "Latency percentiles from p50 to p99.99 on a logarithmic axis, {} {}: {}.",
        plotted.len(),
        plural(plotted.len(), "series", "series"),
        summaries.join("; "),
    );

    let mut out = open(&id, "chart-percentiles", title, &desc, height);
    // Legend above the plot.
    out.push_str(
        "<g class=\"legend\" font-size=\"12\" fill=\"currentColor\" stroke=\"currentColor\">\n",
    );
    for (i, (name, _)) in plotted.iter().enumerate() {
        let style = SeriesStyle::of(i);
        let col = i64::try_from(i % LEGEND_COLUMNS).unwrap_or(0);
        let row = i64::try_from(i / LEGEND_COLUMNS).unwrap_or(0);
        let lx = PLOT_LEFT + col * LEGEND_WIDTH;
        let ly = 140 + row * LEGEND_ROW;
        push!(
            out,
            "<line class=\"series series-{}\" x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke-width=\"2\"{}/>\n",
            style.index,
            tenths(lx),
            tenths(lx + 240),
            style.dash_attr(),
            y = tenths(ly),
        );
        style.shape.draw(
            &mut out,
            lx + 120,
            ly,
            &format!("marker series-{}", style.index),
            None,
        );
        push!(
            out,
            "<text class=\"legend-label\" x=\"{}\" y=\"{}\" stroke=\"none\">{}</text>\n",
            tenths(lx + 300),
            tenths(ly + 40),
            text(&truncate_chars(name, LEGEND_CHARS)),
        );
    }
    out.push_str("</g>\n");

    // Frame: linear y, log x with the HdrHistogram ticks.
    y_frame(&mut out, &y, |v| unit.label(v));
    out.push_str(
        "<g class=\"tick-label\" font-size=\"12\" text-anchor=\"middle\" fill=\"currentColor\">\n",
    );
    let mut grid = String::new();
    for q in X_TICKS_PPM {
        let px = x.px(q);
        push!(
            grid,
            "M{p} {}V{}",
            tenths(y.to),
            tenths(y.from),
            p = tenths(px)
        );
        push!(
            out,
            "<text x=\"{}\" y=\"{}\">{}</text>\n",
            tenths(px),
            tenths(y.from + 150),
            text(&format_quantile(q)),
        );
    }
    out.push_str("</g>\n");
    push!(
        out,
        "<path class=\"grid\" d=\"{grid}\" stroke=\"currentColor\" stroke-opacity=\"0.2\" stroke-width=\"1\"/>\n"
    );
    axes(&mut out, PLOT_LEFT, PLOT_RIGHT, y.to, y.from);
    axis_labels_at(
        &mut out,
        "percentile",
        &format!("latency ({})", unit.name()),
        height,
        (y.to + y.from) / 2,
    );

    for (i, (name, pts)) in plotted.iter().enumerate() {
        if pts.is_empty() {
            continue;
        }
        let style = SeriesStyle::of(i);
        let mut d = String::new();
        for (k, p) in pts.iter().enumerate() {
            let (px, py) = (x.px(p.quantile_ppm), y.px(i128::from(p.latency_us)));
            push!(
                d,
                "{}{} {}",
                if k == 0 { "M" } else { "L" },
                tenths(px),
                tenths(py)
            );
        }
        push!(
            out,
            "<g class=\"series series-{}\" fill=\"currentColor\" stroke=\"currentColor\">\n",
            style.index
        );
        push!(
            out,
            "<path d=\"{d}\" fill=\"none\" stroke-width=\"2\"{}/>\n",
            style.dash_attr()
        );
        for p in pts {
            let (px, py) = (x.px(p.quantile_ppm), y.px(i128::from(p.latency_us)));
            let tip = format!(
                "{name}: {} at {}",
                format_latency(p.latency_us),
                format_quantile(p.quantile_ppm)
            );
            style.shape.draw(&mut out, px, py, "marker", Some(&tip));
        }
        out.push_str("</g>\n");
    }
    close(out)
}

/// Per-item correctness distances: x the item index, y the distance (micro-nats,
/// labelled in nats), a dot per item (`item`), each group's mean (groups of
/// `group_size` items in order, as [`receipts::rules::correctness::verdict`] takes them)
/// as a bar across its items (`group-mean`), the group-mean bound (`bound-group`) and the
/// item bound (`bound-item`) as lines; items over the item bound as crosses and group
/// means over the group bound as thick bars (both `over`); values above the plot (which
/// is cut at 4 × the larger bound) as triangles at the top edge (`off-chart`). `id` and
/// `title` as for [`leader_history`].
pub fn correctness_chart(id: &str, title: &str, data: &CorrectnessData) -> String {
    let id = sanitize_id(id);
    let items = &data.distances_micro_nats;
    if items.is_empty() {
        return no_data(&id, "chart-correctness", title, "No correctness items.");
    }
    let spec = CorrectnessSpec {
        group_size: data.group_size,
        group_mean_bound_micro_nats: data.group_mean_bound_micro_nats,
        item_bound_micro_nats: data.item_bound_micro_nats,
        ..CorrectnessSpec::default()
    };
    let verdict = correctness::verdict(items, &spec);
    let group_size = usize::try_from(data.group_size.max(1)).unwrap_or(usize::MAX);
    let item_bound = data.item_bound_micro_nats;
    let group_bound = data.group_mean_bound_micro_nats;

    let cap = i128::from(item_bound.max(group_bound)) * 4;
    let top = items
        .iter()
        .map(|d| i128::from(*d))
        .chain([i128::from(item_bound), i128::from(group_bound)]);
    let (lo, hi) = bounds(top);
    let hi = if cap > 0 { hi.min(cap) } else { hi };
    let n = i128::try_from(items.len()).unwrap_or(i128::MAX);
    let x = Axis::linear((0, n), 1, true, PLOT_LEFT, PLOT_RIGHT);
    let y = Axis::linear((lo, hi), 10, true, PLOT_BOTTOM, PLOT_TOP);

    let items_over = items.iter().filter(|d| **d > item_bound).count();
    let groups_over = verdict
        .group_means_micro_nats
        .iter()
        .filter(|m| **m > group_bound)
        .count();
    let groups = verdict.group_means_micro_nats.len();
    let desc = format!(
        "Correctness distance of {} {} in {} {} of {}: the largest item is {} nats (item bound \
         {} nats, {} {} over it), the largest group mean {} nats (group-mean bound {} nats, {} \
         {} over it); the gate {}.",
        items.len(),
        plural(items.len(), "item", "items"),
        groups,
        plural(groups, "group", "groups"),
        group_size,
        nats(verdict.max_item_micro_nats),
        nats(item_bound),
        items_over,
        plural(items_over, "item", "items"),
        nats(verdict.max_group_mean_micro_nats),
        nats(group_bound),
        groups_over,
        plural(groups_over, "group", "groups"),
        if verdict.passed { "passed" } else { "failed" },
    );

    let mut out = open(&id, "chart-correctness", title, &desc, VIEW_HEIGHT);
    frame(
        &mut out,
        &x,
        &y,
        |v| number(v, 0, false),
        |v| number(v, 6, false),
    );
    axis_labels(&mut out, "item", "distance (nats)");

    // Dots first (radius shrinking with density, down to 0.6), then the group means,
    // the marks of items over the bound and the bound lines on top.
    let to_i = |v: usize| i128::try_from(v).unwrap_or(i128::MAX);
    let radius = round_div(i128::from(PLOT_RIGHT - PLOT_LEFT), 2 * n).clamp(6, 20);
    let radius = tenths(i64::try_from(radius).unwrap_or(20));
    let mut marks = String::new();
    out.push_str("<g class=\"items\" fill=\"currentColor\" fill-opacity=\"0.7\">\n");
    for (i, d) in items.iter().enumerate() {
        let px = x.px_ratio(to_i(i) * 2 + 1, 2);
        let value = i128::from(*d);
        let tip = format!("item {i}: {} nats", nats(*d));
        if value > y.hi {
            Shape::TriangleUp.draw(&mut marks, px, PLOT_TOP, "item over off-chart", Some(&tip));
        } else if *d > item_bound {
            Shape::Cross.draw(&mut marks, px, y.px(value), "item over", Some(&tip));
        } else {
            push!(
                out,
                "<circle class=\"item\" cx=\"{}\" cy=\"{}\" r=\"{radius}\"/>\n",
                tenths(px),
                tenths(y.px(value))
            );
        }
    }
    out.push_str("</g>\n");

    // Group means: one path for those within the bound, one for those over it.
    let (mut within, mut over) = (String::new(), String::new());
    for (g, mean) in verdict.group_means_micro_nats.iter().enumerate() {
        let start = g.saturating_mul(group_size);
        let end = start.saturating_add(group_size).min(items.len());
        let seg = format!(
            "M{} {}H{}",
            tenths(x.px(to_i(start))),
            tenths(y.px(i128::from(*mean).min(y.hi))),
            tenths(x.px(to_i(end))),
        );
        if *mean > group_bound {
            over.push_str(&seg);
        } else {
            within.push_str(&seg);
        }
    }
    for (class, d, width) in [("group-mean", within, "2"), ("group-mean over", over, "4")] {
        if !d.is_empty() {
            push!(
                out,
                "<path class=\"{class}\" d=\"{d}\" fill=\"none\" stroke=\"currentColor\" stroke-width=\"{width}\"/>\n"
            );
        }
    }
    if !marks.is_empty() {
        out.push_str("<g class=\"markers\" fill=\"currentColor\" stroke=\"currentColor\">\n");
        out.push_str(&marks);
        out.push_str("</g>\n");
    }
    for (class, bound, label) in [
        ("bound bound-item", item_bound, "item bound"),
        ("bound bound-group", group_bound, "group-mean bound"),
    ] {
        let v = i128::from(bound);
        if v <= y.hi {
            bound_line(
                &mut out,
                class,
                y.px(v),
                &format!("{label} {} nats", nats(bound)),
            );
        }
    }
    close(out)
}

// ---- layout (all coordinates in tenths of a user unit) ----

/// The viewBox width and the height of a chart without a legend, tenths.
const VIEW_WIDTH: i64 = 4_800;
const VIEW_HEIGHT: i64 = 3_000;
/// The plot area, tenths.
const PLOT_LEFT: i64 = 720;
const PLOT_RIGHT: i64 = 4_550;
const PLOT_TOP: i64 = 200;
const PLOT_BOTTOM: i64 = 2_480;
/// Legend layout of the percentile plot, tenths and characters.
const LEGEND_COLUMNS: usize = 3;
const LEGEND_WIDTH: i64 = 1_280;
const LEGEND_ROW: i64 = 160;
const LEGEND_CHARS: usize = 16;
/// The percentile axis: its range and ticks, ppm.
const QUANTILE_LO_PPM: u32 = 500_000;
const QUANTILE_HI_PPM: u32 = 999_900;
const X_TICKS_PPM: [u32; 5] = [500_000, 900_000, 990_000, 999_000, 999_900];
/// Intervals a linear axis aims at.
const TICK_TARGET: i128 = 5;

/// A linear axis: data `lo..=hi` (a multiple of `step` each) drawn from pixel `from` to
/// `to` (tenths; `from` > `to` for a y axis, drawn upward).
struct Axis {
    lo: i128,
    hi: i128,
    step: i128,
    from: i64,
    to: i64,
}

impl Axis {
    /// An axis covering `data` (and 0 when `include_zero`), at least `min_span` wide,
    /// widened to multiples of a nice step (1, 2 or 5 × 10^k, at most about
    /// [`TICK_TARGET`] intervals).
    fn linear(data: (i128, i128), min_span: i128, include_zero: bool, from: i64, to: i64) -> Self {
        let (mut lo, mut hi) = data;
        if include_zero {
            lo = lo.min(0);
            hi = hi.max(0);
        }
        if hi - lo < min_span {
            if hi <= 0 && lo < 0 {
                lo = hi - min_span;
            } else {
                hi = lo + min_span;
            }
        }
        let step = nice_step(div_ceil(hi - lo, TICK_TARGET));
        Self {
            lo: lo.div_euclid(step) * step,
            hi: div_ceil(hi, step) * step,
            step,
            from,
            to,
        }
    }

    /// The pixel (tenths) of the value `v`.
    fn px(&self, v: i128) -> i64 {
        self.px_ratio(v, 1)
    }

    /// The pixel (tenths) of the value `num / den` (`den` > 0), rounded half up.
    fn px_ratio(&self, num: i128, den: i128) -> i64 {
        let span = (self.hi - self.lo) * den;
        let offset = (num - self.lo * den) * i128::from(self.to - self.from);
        let px = i128::from(self.from) + round_div(offset, span);
        i64::try_from(px).unwrap_or(if px < 0 { i64::MIN } else { i64::MAX })
    }

    /// Every tick value, `lo` to `hi` by `step`.
    fn ticks(&self) -> impl Iterator<Item = i128> + '_ {
        let count = (self.hi - self.lo) / self.step;
        (0..=count).map(move |k| self.lo + k * self.step)
    }
}

/// The percentile axis: position ∝ log10(1 / (1 − q)), p50 at `from`, p99.99 at `to`.
struct LogAxis {
    from: i64,
    to: i64,
}

impl LogAxis {
    /// The pixel (tenths) of a quantile in ppm within p50 … p99.99. The logarithm is a
    /// float; the position is rounded to a tenth, so no float noise reaches the output.
    fn px(&self, quantile_ppm: u32) -> i64 {
        let pos = |q: u32| (1e6 / (1e6 - f64::from(q.min(999_999)))).log10();
        let (lo, hi) = (pos(QUANTILE_LO_PPM), pos(QUANTILE_HI_PPM));
        let frac = (pos(quantile_ppm) - lo) / (hi - lo);
        // A finite value within the plot; `as` saturates.
        self.from + (frac * (self.to - self.from) as f64).round() as i64
    }
}

/// `(min, max)` of `values`, `(0, 0)` for none.
fn bounds(values: impl Iterator<Item = i128>) -> (i128, i128) {
    values
        .fold(None, |acc: Option<(i128, i128)>, v| {
            Some(acc.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))))
        })
        .unwrap_or((0, 0))
}

/// The smallest of 1, 2, 5 × 10^k that is at least `raw` (at least 1).
fn nice_step(raw: i128) -> i128 {
    let mut p: i128 = 1;
    loop {
        for m in [1, 2, 5] {
            if m * p >= raw {
                return m * p;
            }
        }
        p *= 10;
    }
}

/// `a / b` rounded up, for `b` > 0.
fn div_ceil(a: i128, b: i128) -> i128 {
    -((-a).div_euclid(b))
}

/// `a / b` rounded half up, for `b` > 0.
fn round_div(a: i128, b: i128) -> i128 {
    (2 * a + b).div_euclid(2 * b)
}

// ---- markup ----

/// A marker's shape: what tells passing from failing apart without colour.
#[derive(Clone, Copy)]
enum Shape {
    Circle,
    Square,
    TriangleUp,
    TriangleDown,
    Diamond,
    Cross,
    /// A hollow ring around another marker.
    Ring,
}

impl Shape {
    /// Appends to `out` the marker centred on `(x, y)` (tenths), with an optional tooltip.
    fn draw(self, out: &mut String, x: i64, y: i64, class: &str, tip: Option<&str>) {
        let (name, attrs) = match self {
            Shape::Circle => (
                "circle",
                format!("cx=\"{}\" cy=\"{}\" r=\"3.5\"", tenths(x), tenths(y)),
            ),
            Shape::Ring => (
                "circle",
                format!(
                    "cx=\"{}\" cy=\"{}\" r=\"7\" fill=\"none\" stroke-width=\"1.5\"",
                    tenths(x),
                    tenths(y)
                ),
            ),
            Shape::Square => (
                "rect",
                format!(
                    "x=\"{}\" y=\"{}\" width=\"7\" height=\"7\" fill=\"none\" stroke-width=\"1.5\"",
                    tenths(x - 35),
                    tenths(y - 35)
                ),
            ),
            Shape::TriangleUp => ("path", path(x, y, &[(0, -45), (40, 30), (-40, 30)])),
            Shape::TriangleDown => ("path", path(x, y, &[(0, 45), (40, -30), (-40, -30)])),
            Shape::Diamond => ("path", path(x, y, &[(0, -50), (50, 0), (0, 50), (-50, 0)])),
            Shape::Cross => (
                "path",
                format!(
                    "d=\"M{} {}L{} {}M{} {}L{} {}\" fill=\"none\" stroke-width=\"2\"",
                    tenths(x - 35),
                    tenths(y - 35),
                    tenths(x + 35),
                    tenths(y + 35),
                    tenths(x - 35),
                    tenths(y + 35),
                    tenths(x + 35),
                    tenths(y - 35)
                ),
            ),
        };
        match tip {
            Some(tip) => push!(
                out,
                "<{name} class=\"{class}\" {attrs}><title>{}</title></{name}>\n",
                text(tip)
            ),
            None => push!(out, "<{name} class=\"{class}\" {attrs}/>\n"),
        }
    }
}

/// A closed polygon's `d` attribute around `(x, y)`, offsets in tenths.
fn path(x: i64, y: i64, offsets: &[(i64, i64)]) -> String {
    let mut d = String::from("d=\"");
    for (k, (dx, dy)) in offsets.iter().enumerate() {
        push!(
            d,
            "{}{} {}",
            if k == 0 { "M" } else { "L" },
            tenths(x + dx),
            tenths(y + dy)
        );
    }
    d.push_str("Z\"");
    d
}

/// How the n-th percentile series is drawn: its class index, marker and dash pattern.
struct SeriesStyle {
    index: usize,
    shape: Shape,
    dash: Option<&'static str>,
}

impl SeriesStyle {
    fn of(i: usize) -> Self {
        const STYLES: [(Shape, Option<&str>); 6] = [
            (Shape::Circle, None),
            (Shape::Square, Some("6 3")),
            (Shape::TriangleUp, Some("2 2")),
            (Shape::Diamond, Some("8 3 2 3")),
            (Shape::Cross, Some("4 4")),
            (Shape::TriangleDown, Some("1 3")),
        ];
        let index = i % STYLES.len();
        let (shape, dash) = STYLES[index];
        Self { index, shape, dash }
    }

    fn dash_attr(&self) -> String {
        self.dash
            .map_or_else(String::new, |d| format!(" stroke-dasharray=\"{d}\""))
    }
}

/// The latency unit of an axis: ms when its top is at least 10 ms, else µs.
#[derive(Clone, Copy)]
enum LatencyUnit {
    Micros,
    Millis,
}

impl LatencyUnit {
    fn for_axis(axis: &Axis) -> Self {
        if axis.hi >= 10_000 {
            LatencyUnit::Millis
        } else {
            LatencyUnit::Micros
        }
    }

    fn name(self) -> &'static str {
        match self {
            LatencyUnit::Micros => "µs",
            LatencyUnit::Millis => "ms",
        }
    }

    /// A tick label for `us` µs in this unit.
    fn label(self, us: i128) -> String {
        match self {
            LatencyUnit::Micros => number(us, 0, false),
            LatencyUnit::Millis => number(us, 3, false),
        }
    }
}

/// The root element, `<title>` and `<desc>` of a chart `height` tenths high.
fn open(id: &str, kind: &str, title: &str, desc: &str, height: i64) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {}\" class=\"chart {kind}\" role=\"img\" aria-labelledby=\"{id}-title\" aria-describedby=\"{id}-desc\">\n<title id=\"{id}-title\">{}</title>\n<desc id=\"{id}-desc\">{}</desc>\n",
        tenths(VIEW_WIDTH),
        tenths(height),
        text(title),
        text(desc),
    )
}

fn close(mut out: String) -> String {
    out.push_str("</svg>\n");
    out
}

/// The explicit "no data" chart.
fn no_data(id: &str, kind: &str, title: &str, desc: &str) -> String {
    let mut out = open(id, &format!("{kind} chart-empty"), title, desc, 800);
    push!(
        out,
        "<rect class=\"axis\" x=\"0.5\" y=\"0.5\" width=\"{}\" height=\"79\" fill=\"none\" stroke=\"currentColor\" stroke-opacity=\"0.4\"/>\n<text class=\"no-data\" x=\"{}\" y=\"44\" font-size=\"14\" text-anchor=\"middle\" fill=\"currentColor\">no data</text>\n",
        tenths(VIEW_WIDTH - 10),
        tenths(VIEW_WIDTH / 2),
    );
    close(out)
}

/// Grid lines, tick labels and axis lines of a chart with two linear axes.
fn frame(
    out: &mut String,
    x: &Axis,
    y: &Axis,
    x_label: impl Fn(i128) -> String,
    y_label: impl Fn(i128) -> String,
) {
    y_frame(out, y, y_label);
    let mut grid = String::new();
    out.push_str(
        "<g class=\"tick-label\" font-size=\"12\" text-anchor=\"middle\" fill=\"currentColor\">\n",
    );
    for v in x.ticks() {
        let px = x.px(v);
        push!(
            grid,
            "M{p} {}V{}",
            tenths(y.to),
            tenths(y.from),
            p = tenths(px)
        );
        push!(
            out,
            "<text x=\"{}\" y=\"{}\">{}</text>\n",
            tenths(px),
            tenths(y.from + 150),
            text(&x_label(v)),
        );
    }
    out.push_str("</g>\n");
    push!(
        out,
        "<path class=\"grid\" d=\"{grid}\" stroke=\"currentColor\" stroke-opacity=\"0.2\" stroke-width=\"1\"/>\n"
    );
    axes(out, x.from, x.to, y.to, y.from);
}

/// Horizontal grid lines and tick labels of a linear y axis.
fn y_frame(out: &mut String, y: &Axis, label: impl Fn(i128) -> String) {
    let mut grid = String::new();
    out.push_str(
        "<g class=\"tick-label\" font-size=\"12\" text-anchor=\"end\" fill=\"currentColor\">\n",
    );
    for v in y.ticks() {
        let py = y.px(v);
        push!(
            grid,
            "M{} {p}H{}",
            tenths(PLOT_LEFT),
            tenths(PLOT_RIGHT),
            p = tenths(py)
        );
        push!(
            out,
            "<text x=\"{}\" y=\"{}\">{}</text>\n",
            tenths(PLOT_LEFT - 60),
            tenths(py + 40),
            text(&label(v)),
        );
    }
    out.push_str("</g>\n");
    push!(
        out,
        "<path class=\"grid\" d=\"{grid}\" stroke=\"currentColor\" stroke-opacity=\"0.2\" stroke-width=\"1\"/>\n"
    );
}

/// The two axis lines: left and bottom edges of the plot.
fn axes(out: &mut String, left: i64, right: i64, top: i64, bottom: i64) {
    push!(
        out,
        "<path class=\"axis\" d=\"M{} {}V{}H{}\" fill=\"none\" stroke=\"currentColor\" stroke-width=\"1\"/>\n",
        tenths(left),
        tenths(top),
        tenths(bottom),
        tenths(right),
    );
}

/// A dashed horizontal bound line across the plot at `py` (tenths), labelled at its
/// right end.
fn bound_line(out: &mut String, class: &str, py: i64, label: &str) {
    push!(
        out,
        "<line class=\"{class}\" x1=\"{}\" y1=\"{p}\" x2=\"{}\" y2=\"{p}\" stroke=\"currentColor\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>\n<text class=\"bound-label\" x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"end\" fill=\"currentColor\">{}</text>\n",
        tenths(PLOT_LEFT),
        tenths(PLOT_RIGHT),
        tenths(PLOT_RIGHT - 20),
        tenths(py - 30),
        text(label),
        p = tenths(py),
    );
}

/// The zero line of a y axis that spans negative values (baseline speed).
fn zero_line(out: &mut String, x: &Axis, y: &Axis) {
    if y.lo < 0 && y.hi > 0 {
        let py = tenths(y.px(0));
        push!(
            out,
            "<line class=\"zero\" x1=\"{}\" y1=\"{py}\" x2=\"{}\" y2=\"{py}\" stroke=\"currentColor\" stroke-width=\"1\"/>\n",
            tenths(x.from),
            tenths(x.to),
        );
    }
}

/// Axis titles of a chart without a legend.
fn axis_labels(out: &mut String, x_title: &str, y_title: &str) {
    axis_labels_at(
        out,
        x_title,
        y_title,
        VIEW_HEIGHT,
        (PLOT_TOP + PLOT_BOTTOM) / 2,
    );
}

/// Axis titles: x centred under the plot at the chart's bottom, y rotated along the left
/// edge centred on `y_mid` (tenths).
fn axis_labels_at(out: &mut String, x_title: &str, y_title: &str, height: i64, y_mid: i64) {
    push!(
        out,
        "<g class=\"axis-label\" font-size=\"13\" text-anchor=\"middle\" fill=\"currentColor\">\n<text x=\"{}\" y=\"{}\">{}</text>\n<text x=\"{}\" y=\"14\" transform=\"rotate(-90)\">{}</text>\n</g>\n",
        tenths((PLOT_LEFT + PLOT_RIGHT) / 2),
        tenths(height - 80),
        text(x_title),
        tenths(-y_mid),
        text(y_title),
    );
}

// ---- numbers and text ----

/// Tenths as a decimal with one digit: `1234` → `123.4`, `-5` → `-0.5`.
fn tenths(v: i64) -> Tenths {
    Tenths(v)
}

/// [`tenths`] of a value, printed where it is formatted (no `String` of its own: a chart
/// prints thousands of coordinates).
struct Tenths(i64);

impl std::fmt::Display for Tenths {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        write!(f, "{sign}{}.{}", abs / 10, abs % 10)
    }
}

/// `v` in units of 10^-`scale` as a trimmed decimal (`500_000`, 6 → `0.5`), the integer
/// part grouped in threes, with `+` on positive values when `plus`; from 10^6 up in
/// exponent form (`1.8e19`), so a label fits beside the axis.
fn number(v: i128, scale: u32, plus: bool) -> String {
    let sign = match v.signum() {
        1 if plus => "+",
        -1 => "-",
        _ => "",
    };
    let abs = v.unsigned_abs();
    let unit = 10u128.pow(scale);
    let (int, frac) = (abs / unit, abs % unit);
    if int >= 1_000_000 {
        let digits = int.to_string();
        let exp = digits.len() - 1;
        let mantissa = digits[1..digits.len().min(3)].trim_end_matches('0');
        let dot = if mantissa.is_empty() { "" } else { "." };
        return format!("{sign}{}{dot}{mantissa}e{exp}", &digits[..1]);
    }
    let int = format_grouped(u64::try_from(int).unwrap_or(u64::MAX));
    if frac == 0 {
        return format!("{sign}{int}");
    }
    let width = usize::try_from(scale).unwrap_or(0);
    let frac = format!("{frac:0width$}");
    format!("{sign}{int}.{}", frac.trim_end_matches('0'))
}

/// Micro-nats as nats, trimmed: `200_000` → `0.2`.
fn nats(micro_nats: u64) -> String {
    number(i128::from(micro_nats), 6, false)
}

/// A latency for people: `850 µs`, `12.5 ms`.
fn format_latency(us: u64) -> String {
    if us < 10_000 {
        format!("{} µs", number(i128::from(us), 0, false))
    } else {
        format!("{} ms", number(i128::from(us), 3, false))
    }
}

/// A quantile in ppm as a percentile: `990_000` → `p99`, `999_900` → `p99.99`.
fn format_quantile(ppm: u32) -> String {
    format!("p{}", number(i128::from(ppm), 4, false))
}

fn plural(n: usize, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 { one } else { many }
}

/// At most `max` characters of `s`, with `…` when cut (on a character boundary).
fn truncate_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The element-id prefix: `[A-Za-z0-9_-]` kept, anything else `_`, and `chart-` in front
/// of one that does not start with a letter (or is empty).
fn sanitize_id(id: &str) -> String {
    let clean: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.starts_with(|c: char| c.is_ascii_alphabetic()) {
        clean
    } else {
        format!("chart-{clean}")
    }
}

/// Text content or an attribute value for the markup: [`escape_untrusted`] first (so
/// controls, bidi and invisible code points are shown, not applied), then XML-escaped
/// (`&`, `<`, `>`, `"`, `'`), with U+FFFE and U+FFFF (not XML characters) shown escaped
/// too. The one escape every label in this module passes through.
fn text(s: &str) -> String {
    let shown = escape_untrusted(s);
    let mut out = String::with_capacity(shown.len());
    for c in shown.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\u{fffe}' | '\u{ffff}' => push!(out, "\\u{{{:x}}}", u32::from(c)),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use receipts::model::{LatencyKind, Percentile};

    const HOSTILE: &str = "<script>alert(1)</script>\" onload=\"x\" & \u{202e}txt.exe '\u{fffe}";

    fn sla() -> Sla {
        Sla {
            percentile: Percentile::default(),
            latency: LatencyKind::E2e,
            bound_ms: 1_000,
        }
    }

    fn leader_points() -> Vec<LeaderPoint> {
        vec![
            LeaderPoint {
                round: 1,
                score_ppm: 0,
                seat: "baseline".into(),
            },
            LeaderPoint {
                round: 2,
                score_ppm: 509_900,
                seat: "2411df5a…ce7995 (fast)".into(),
            },
            LeaderPoint {
                round: 3,
                score_ppm: 498_000,
                seat: "2411df5a…ce7995 (fast)".into(),
            },
        ]
    }

    fn probe(probe: u32, rate: u64, us: Option<u64>, verdict: ProbeVerdict) -> RateProbe {
        RateProbe {
            run: 0,
            probe,
            rate_milli_rps: rate,
            percentile_us: us,
            verdict,
        }
    }

    fn probes() -> Vec<RateProbe> {
        vec![
            probe(0, 8_000, Some(420_000), ProbeVerdict::Pass),
            probe(1, 16_000, Some(1_900_000), ProbeVerdict::Fail),
            probe(2, 12_000, Some(780_000), ProbeVerdict::Pass),
            probe(3, 14_000, None, ProbeVerdict::Fail),
            probe(4, 13_000, Some(990_000), ProbeVerdict::Invalid),
        ]
    }

    fn series() -> Vec<PercentileSeries> {
        let pts = |v: [u64; 3]| {
            [500_000, 990_000, 999_900]
                .into_iter()
                .zip(v)
                .map(|(quantile_ppm, latency_us)| PercentilePoint {
                    quantile_ppm,
                    latency_us,
                })
                .collect()
        };
        vec![
            PercentileSeries {
                name: "TTFT".into(),
                points: pts([12_000, 40_000, 95_000]),
            },
            PercentileSeries {
                name: "e2e".into(),
                points: pts([310_000, 620_000, 880_000]),
            },
        ]
    }

    fn correctness() -> CorrectnessData {
        CorrectnessData {
            distances_micro_nats: vec![10_000, 150_000, 90_000, 2_100_000, 30_000, 700_000, 5_000],
            group_size: 3,
            group_mean_bound_micro_nats: 200_000,
            item_bound_micro_nats: 2_000_000,
        }
    }

    /// Every chart for `label`, as (name, markup).
    fn all_charts(label: &str) -> Vec<(&'static str, String)> {
        let mut leader = leader_points();
        leader[1].seat = label.to_owned();
        let mut series = series();
        series[0].name = label.to_owned();
        vec![
            ("leader", leader_history("lh", label, &leader)),
            (
                "rate",
                rate_search(
                    "rs",
                    label,
                    &sla(),
                    &probes(),
                    Some(12_000),
                    RateUnit::Requests,
                ),
            ),
            ("percentiles", percentile_plot("pp", label, &series)),
            (
                "correctness",
                correctness_chart("cc", label, &correctness()),
            ),
        ]
    }

    /// Parses `svg` as XML and checks what every chart promises: the root's namespace,
    /// viewBox, role and the ids its aria attributes name; no `style` attribute, no
    /// script, no reference to anything outside.
    fn check_well_formed(svg: &str) -> roxmltree::Document<'_> {
        let doc = match roxmltree::Document::parse(svg) {
            Ok(doc) => doc,
            Err(e) => panic!("not well-formed XML: {e}\n{svg}"),
        };
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "svg");
        assert_eq!(
            root.tag_name().namespace(),
            Some("http://www.w3.org/2000/svg")
        );
        assert_eq!(root.attribute("role"), Some("img"));
        assert!(root.attribute("viewBox").is_some());
        assert!(root.attribute("width").is_none() && root.attribute("height").is_none());
        for attr in ["aria-labelledby", "aria-describedby"] {
            let target = root.attribute(attr).unwrap_or_default();
            let node = doc
                .descendants()
                .find(|n| n.attribute("id") == Some(target));
            assert!(node.is_some(), "{attr}={target} names no element");
        }
        let first: Vec<&str> = root
            .children()
            .filter(|n| n.is_element())
            .take(2)
            .map(|n| n.tag_name().name())
            .collect();
        assert_eq!(first, ["title", "desc"]);
        for node in doc.descendants().filter(|n| n.is_element()) {
            assert_ne!(node.tag_name().name(), "script");
            assert_ne!(node.tag_name().name(), "foreignObject");
            for a in node.attributes() {
                assert!(
                    !matches!(a.name(), "style" | "href") && !a.name().starts_with("on"),
                    "attribute {} in {svg}",
                    a.name()
                );
            }
        }
        doc
    }

    #[test]
    fn golden_leader_history() {
        insta::assert_snapshot!(leader_history(
            "lh",
            "Leader history of demo",
            &leader_points()
        ));
    }

    /// 10,000 rounds, the seat changing every 500th (20 changes), the score climbing by
    /// one ppm a round with a dip every 7th: the chart stays bounded, marks exactly the
    /// first, last and changed rounds, and its line keeps each column's extremes.
    #[test]
    fn a_long_leader_history_is_drawn_within_bounds() {
        let points: Vec<LeaderPoint> = (1..=10_000u64)
            .map(|round| LeaderPoint {
                round,
                score_ppm: i64::try_from(round).unwrap() * 100
                    - if round % 7 == 0 { 50_000 } else { 0 },
                seat: format!("seat-{}", round / 500),
            })
            .collect();
        let svg = leader_history("lh", "Leader history", &points);
        let doc = check_well_formed(&svg);
        assert!(svg.len() < 48 << 10, "{} bytes", svg.len());
        let markers: Vec<_> = doc
            .descendants()
            .filter(|n| matches!(n.attribute("class"), Some("marker" | "marker seat-change")))
            .collect();
        // Rounds 1 and 10,000, and 500, 1,000, …, 10,000 where the seat changed.
        assert_eq!(markers.len(), 21);
        assert_eq!(
            markers
                .iter()
                .filter(|n| n.attribute("class") == Some("marker seat-change"))
                .count(),
            20
        );
        assert!(svg.contains(
            "Marked: the first and last rounds and the seat changes, 21 in all (the latest \
             100 at most)."
        ));
        let path = doc
            .descendants()
            .find(|n| n.attribute("class") == Some("series"))
            .unwrap();
        let d = path.attribute("d").unwrap();
        // One `H` per pixel column at most (383), never one per round.
        let columns = d.matches('H').count();
        assert!((300..=383).contains(&columns), "{columns} columns");

        // The first, the last and 166 seat changes: only the latest 100 are marked.
        let many: Vec<LeaderPoint> = (1..=1_000u64)
            .map(|round| LeaderPoint {
                round,
                score_ppm: 0,
                seat: format!("seat-{}", round / 6),
            })
            .collect();
        let svg = leader_history("lh", "Leader history", &many);
        let doc = check_well_formed(&svg);
        let tips: Vec<String> = doc
            .descendants()
            .filter(|n| matches!(n.attribute("class"), Some("marker" | "marker seat-change")))
            .map(|n| n.first_element_child().unwrap().text().unwrap().to_owned())
            .collect();
        assert_eq!(tips.len(), 100);
        assert_eq!(tips[0], "round 408: 0.00 %, seat seat-68 (seat changed)");
        assert_eq!(tips[99], "round 1000: 0.00 %, seat seat-166");
    }

    #[test]
    fn a_columns_line_keeps_its_first_lowest_highest_and_last() {
        let kept = |ys: &[i64]| column_extremes(ys.iter().copied());
        assert_eq!(kept(&[5]), [5]);
        assert_eq!(kept(&[5, 5, 5]), [5]);
        assert_eq!(kept(&[5, 1, 9, 3]), [5, 1, 9, 3]);
        assert_eq!(kept(&[3, 1, 1, 9, 9, 3]), [3, 1, 9, 3]);
        assert_eq!(kept(&[9, 4, 1]), [9, 1]);
        assert_eq!(kept(&[1, 9, 1]), [1, 9, 1]);
        assert_eq!(
            step_path(&[(0, 5), (3, 1), (7, 9), (12, 2), (25, 2)], true),
            "M0.0 0.5V0.1V0.9H1.2V0.2H2.5V0.2"
        );
        assert_eq!(
            step_path(&[(0, 5), (3, 1), (12, 2)], false),
            "M0.0 0.5H0.3V0.1H1.2V0.2"
        );
    }

    /// A decide round's rates are decisions per second, on the axis and in the text.
    #[test]
    fn a_decide_rounds_rate_search_reads_in_decisions() {
        let svg = rate_search(
            "a",
            "t",
            &sla(),
            &probes(),
            Some(12_000),
            RateUnit::Decisions,
        );
        assert!(svg.contains(">probe rate (decisions/s)</text>"), "{svg}");
        assert!(
            svg.contains("the chosen rate is 12.000 decisions/s."),
            "{svg}"
        );
        assert!(!svg.contains("req/s"), "{svg}");
    }

    #[test]
    fn golden_rate_search() {
        insta::assert_snapshot!(rate_search(
            "rs",
            "Rate search of run 0",
            &sla(),
            &probes(),
            Some(12_000),
            RateUnit::Requests
        ));
    }

    #[test]
    fn golden_percentile_plot() {
        insta::assert_snapshot!(percentile_plot("pp", "Latency percentiles", &series()));
    }

    #[test]
    fn golden_correctness_chart() {
        insta::assert_snapshot!(correctness_chart("cc", "Correctness", &correctness()));
    }

    #[test]
    fn golden_no_data() {
        insta::assert_snapshot!(leader_history("lh", "Leader history", &[]));
    }

    #[test]
    fn every_chart_is_well_formed_and_self_contained() {
        for (name, svg) in all_charts("label") {
            let doc = check_well_formed(&svg);
            assert!(
                doc.root_element()
                    .attribute("class")
                    .is_some_and(|c| c.starts_with("chart chart-")),
                "{name}"
            );
        }
    }

    #[test]
    fn a_hostile_label_is_shown_escaped_everywhere() {
        for (name, svg) in all_charts(HOSTILE) {
            let doc = check_well_formed(&svg);
            assert!(!svg.contains("<script"), "{name}");
            assert!(
                !svg.contains('\u{202e}') && !svg.contains('\u{fffe}'),
                "{name}"
            );
            assert!(!svg.contains("\" onload"), "{name}");
            let shown = "&lt;script&gt;alert(1)&lt;/script&gt;&quot; onload=&quot;x&quot; &amp; \
                         \\u{202e}txt.exe &#39;\\u{fffe}";
            assert!(svg.contains(shown), "{name}: {svg}");
            // The parsed title reads as the visible escape, not as markup.
            let title = doc
                .root_element()
                .children()
                .find(|n| n.has_tag_name("title"))
                .and_then(|n| n.text());
            assert_eq!(
                title,
                Some("<script>alert(1)</script>\" onload=\"x\" & \\u{202e}txt.exe '\\u{fffe}"),
                "{name}"
            );
        }
    }

    #[test]
    fn a_hostile_id_prefix_becomes_a_plain_id() {
        let svg = leader_history("\"><script>", "t", &[]);
        assert!(svg.contains("aria-labelledby=\"chart-___script_-title\""));
        assert_eq!(sanitize_id("round-2_e"), "round-2_e");
        assert_eq!(sanitize_id(""), "chart-");
        assert_eq!(sanitize_id("7a"), "chart-7a");
    }

    #[test]
    fn identical_input_gives_identical_bytes() {
        assert_eq!(all_charts("x"), all_charts("x"));
        // Input order does not matter either.
        let mut reversed = leader_points();
        reversed.reverse();
        assert_eq!(
            leader_history("a", "t", &reversed),
            leader_history("a", "t", &leader_points())
        );
        let mut shuffled = probes();
        shuffled.rotate_left(2);
        assert_eq!(
            rate_search("a", "t", &sla(), &shuffled, None, RateUnit::Requests),
            rate_search("a", "t", &sla(), &probes(), None, RateUnit::Requests)
        );
    }

    #[test]
    fn empty_input_says_no_data() {
        let empty_series = [PercentileSeries {
            name: "e2e".into(),
            // Outside p50 … p99.99: nothing to draw.
            points: vec![PercentilePoint {
                quantile_ppm: 100_000,
                latency_us: 5,
            }],
        }];
        let empty_items = CorrectnessData {
            distances_micro_nats: Vec::new(),
            ..correctness()
        };
        for svg in [
            leader_history("a", "t", &[]),
            rate_search("a", "t", &sla(), &[], Some(1), RateUnit::Requests),
            percentile_plot("a", "t", &[]),
            percentile_plot("a", "t", &empty_series),
            correctness_chart("a", "t", &empty_items),
        ] {
            check_well_formed(&svg);
            assert!(svg.contains("chart-empty\""), "{svg}");
            assert!(svg.contains(">no data</text>"), "{svg}");
        }
    }

    #[test]
    fn one_point_draws_one_marker() {
        let one = [LeaderPoint {
            round: 7,
            score_ppm: 120_000,
            seat: "s".into(),
        }];
        let svg = leader_history("a", "t", &one);
        check_well_formed(&svg);
        assert_eq!(svg.matches("class=\"marker\"").count(), 1);
        assert!(svg.contains("<title>round 7: +12.00 %, seat s</title>"));
        // x axis 7 … 8 with only the sealed round 7 named; y axis 0 … +15 % in steps of
        // 5 %.
        assert!(svg.contains(">7</text>") && !svg.contains(">8</text>"));
        assert!(svg.contains(">+15 %</text>") && svg.contains(">+5 %</text>"));

        let svg = rate_search("a", "t", &sla(), &probes()[..1], None, RateUnit::Requests);
        check_well_formed(&svg);
        assert_eq!(svg.matches("class=\"marker pass\"").count(), 1);

        let svg = correctness_chart(
            "a",
            "t",
            &CorrectnessData {
                distances_micro_nats: vec![0],
                ..correctness()
            },
        );
        check_well_formed(&svg);
        assert_eq!(svg.matches("<circle class=\"item\"").count(), 1);
    }

    #[test]
    fn huge_values_stay_on_the_chart() {
        let leader = [
            LeaderPoint {
                round: u64::MAX - 1,
                score_ppm: i64::MIN,
                seat: "a".into(),
            },
            LeaderPoint {
                round: u64::MAX,
                score_ppm: i64::MAX,
                seat: "b".into(),
            },
        ];
        let probes = [
            probe(0, u64::MAX, Some(u64::MAX), ProbeVerdict::Fail),
            probe(1, 0, Some(0), ProbeVerdict::Pass),
        ];
        let series = [PercentileSeries {
            name: "e2e".into(),
            points: vec![PercentilePoint {
                quantile_ppm: QUANTILE_HI_PPM,
                latency_us: u64::MAX,
            }],
        }];
        let items = CorrectnessData {
            distances_micro_nats: vec![u64::MAX, 0],
            group_size: 1,
            group_mean_bound_micro_nats: u64::MAX,
            item_bound_micro_nats: u64::MAX,
        };
        for svg in [
            leader_history("a", "t", &leader),
            rate_search(
                "a",
                "t",
                &sla(),
                &probes,
                Some(u64::MAX),
                RateUnit::Requests,
            ),
            percentile_plot("a", "t", &series),
            correctness_chart("a", "t", &items),
        ] {
            check_well_formed(&svg);
            // Every coordinate is within the viewBox.
            for c in coordinates(&svg) {
                assert!(c.abs() <= VIEW_WIDTH, "{c} in {svg}");
            }
        }
        // Tick labels of 2 × 10^19 µs in ms: exponent form.
        assert!(
            rate_search("a", "t", &sla(), &probes, None, RateUnit::Requests)
                .contains(">2e16</text>")
        );
    }

    /// Every number in a coordinate attribute, tenths (the rotated y-axis title is at a
    /// negative x).
    fn coordinates(svg: &str) -> Vec<i64> {
        let doc = check_well_formed(svg);
        let mut out = Vec::new();
        for node in doc.descendants() {
            for a in node.attributes() {
                if matches!(
                    a.name(),
                    "x" | "y" | "x1" | "x2" | "y1" | "y2" | "cx" | "cy" | "d"
                ) {
                    for part in a
                        .value()
                        .split(|c: char| c.is_ascii_alphabetic() || c == ' ')
                    {
                        if let Ok(v) = part.replace('.', "").parse::<i64>() {
                            out.push(v);
                        }
                    }
                }
            }
        }
        out
    }

    #[test]
    fn negative_scores_get_a_zero_line_below_positive_ticks() {
        let points = [
            LeaderPoint {
                round: 1,
                score_ppm: -250_000,
                seat: "a".into(),
            },
            LeaderPoint {
                round: 2,
                score_ppm: 100_000,
                seat: "b".into(),
            },
        ];
        let svg = leader_history("a", "t", &points);
        check_well_formed(&svg);
        assert!(svg.contains("<line class=\"zero\""));
        assert!(svg.contains(">-30 %</text>") && svg.contains(">+10 %</text>"));
        assert!(svg.contains("<title>round 2: +10.00 %, seat b (seat changed)</title>"));
        assert_eq!(svg.matches("class=\"marker seat-change\"").count(), 1);
    }

    #[test]
    fn rate_probes_differ_by_shape_and_the_chosen_rate_is_ringed() {
        let svg = rate_search(
            "a",
            "t",
            &sla(),
            &probes(),
            Some(12_000),
            RateUnit::Requests,
        );
        assert_eq!(svg.matches("<circle class=\"marker pass\"").count(), 2);
        assert_eq!(svg.matches("<path class=\"marker fail\"").count(), 1);
        assert_eq!(
            svg.matches("<path class=\"marker fail off-chart\"").count(),
            1
        );
        assert_eq!(svg.matches("<rect class=\"marker invalid\"").count(), 1);
        assert_eq!(svg.matches("<circle class=\"chosen\"").count(), 1);
        assert!(svg.contains("<line class=\"chosen\""));
        assert!(svg.contains(">bound 1 000 ms</text>"));
    }

    #[test]
    fn correctness_marks_items_and_groups_over_their_bounds() {
        let svg = correctness_chart("a", "t", &correctness());
        // Item 3 (2.1 nats) is over the item bound; of the group means 83 333, 943 333
        // and 5 000 micro-nats the second is over the group bound.
        assert_eq!(svg.matches("class=\"item over\"").count(), 1);
        assert!(svg.contains("<title>item 3: 2.1 nats</title>"));
        assert_eq!(svg.matches("<path class=\"group-mean over\"").count(), 1);
        assert!(
            svg.contains("class=\"bound bound-item\"")
                && svg.contains("class=\"bound bound-group\"")
        );
        assert!(svg.contains("1 item over it), the largest group mean 0.943333 nats"));
        // Far above the bounds: a triangle at the top edge, the plot cut at 4 × 2 nats.
        let far = CorrectnessData {
            distances_micro_nats: vec![50_000_000, 0, 0],
            ..correctness()
        };
        let svg = correctness_chart("a", "t", &far);
        assert_eq!(svg.matches("class=\"item over off-chart\"").count(), 1);
        assert!(svg.contains(">8</text>") && !svg.contains(">10</text>"));
    }

    #[test]
    fn axes_use_nice_steps() {
        assert_eq!(nice_step(0), 1);
        assert_eq!(nice_step(3), 5);
        assert_eq!(nice_step(11), 20);
        assert_eq!(nice_step(50_001), 100_000);
        let a = Axis::linear((3, 97), 1, true, 0, 1000);
        assert_eq!((a.lo, a.hi, a.step), (0, 100, 20));
        assert_eq!(a.ticks().collect::<Vec<_>>(), [0, 20, 40, 60, 80, 100]);
        let a = Axis::linear((-250_000, 100_000), 1, true, 0, 1000);
        assert_eq!((a.lo, a.hi, a.step), (-300_000, 100_000, 100_000));
        assert_eq!(a.px(-300_000), 0);
        assert_eq!(a.px(0), 750);
        let a = Axis::linear((0, i128::from(u64::MAX)), 1, true, 0, 1000);
        assert_eq!(
            (a.hi, a.step),
            (20_000_000_000_000_000_000, 5_000_000_000_000_000_000)
        );
    }

    #[test]
    fn numbers_are_fixed_decimals() {
        assert_eq!(tenths(1234).to_string(), "123.4");
        assert_eq!(tenths(-5).to_string(), "-0.5");
        assert_eq!(tenths(0).to_string(), "0.0");
        assert_eq!(number(500_000, 6, true), "+0.5");
        assert_eq!(number(-250_000, 6, true), "-0.25");
        assert_eq!(number(0, 6, true), "0");
        assert_eq!(number(300_000, 3, false), "300");
        assert_eq!(number(12_500, 3, false), "12.5");
        assert_eq!(number(250_000_000, 3, false), "250 000");
        assert_eq!(number(18_446_744_073_709_551_615, 0, false), "1.84e19");
        assert_eq!(number(20_000_000_000_000_000_000, 3, false), "2e16");
        assert_eq!(format_quantile(999_900), "p99.99");
        assert_eq!(format_quantile(500_000), "p50");
        assert_eq!(format_latency(9_999), "9 999 µs");
        assert_eq!(format_latency(12_500), "12.5 ms");
        assert_eq!(nats(943_333), "0.943333");
    }

    #[test]
    fn the_percentile_axis_is_logarithmic() {
        let x = LogAxis { from: 0, to: 3_699 };
        // log10(1/(1-p)) − log10 2 over 4 − log10 2 = 3.699: one unit per decade.
        assert_eq!(x.px(500_000), 0);
        assert_eq!(x.px(900_000), 699);
        assert_eq!(x.px(990_000), 1_699);
        assert_eq!(x.px(999_000), 2_699);
        assert_eq!(x.px(999_900), 3_699);
    }
}
