//! `referee show`, `referee rounds`, `referee leader`: a sealed round read for people, a
//! campaign's rounds one per line, and who holds the seat (content/commands.md). Each
//! verifies first ([`verifier::verify_bundle`], through [`RoundView`]) and marks every
//! value that a failed (or not run) check covers `(unverified)`; `--json` prints the
//! view-model itself. Exit 0 when everything shown verifies, 1 when a bundle does not
//! (the view is still printed, marked), 2 on a usage or I/O error.
//!
//! Text from the bundle (miner ids, log tails, details, decision sentences, step names,
//! check messages) is escaped with [`escape_untrusted`] here, in the renderer; the JSON
//! output carries it raw, JSON-escaped.

use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use receipts::keys::Keyring;
use receipts::layout::DataDir;
use receipts::model::{CampaignId, HardwareFingerprint, Timestamp};
use receipts::text::escape_untrusted;
use verifier::VerifyOptions;
use verifier::view::{
    CampaignRounds, EntryCounts, EntryView, Field, RoundRow, RoundView, SELF_REPORTED, Unreadable,
    Verification, format_bp_percent, format_client_self_test, format_duration_ms,
    format_entry_throughput, format_leader, format_milli_rate, format_noise, format_paired_score,
    format_pass_order, format_score_percent, format_step_status, format_time_of_day, short_seed,
};

use super::DataArgs;
use super::text::table;

/// The suffix of a value whose check failed or did not run.
const UNVERIFIED: &str = " (unverified)";

/// The columns `show` keeps its sentences to: a line of text longer than this is wrapped
/// ([`wrapped`]); its tables are as wide as their cells.
const COLUMNS: usize = 100;

/// `text` as lines of at most [`COLUMNS`] characters, each ending in a newline: the first
/// after `first`, the others after `rest`, broken at spaces (a word longer than a line is
/// cut).
fn wrapped(first: &str, rest: &str, text: &str) -> String {
    let mut out = String::new();
    let mut line = first.to_owned();
    let mut width = first.chars().count();
    let mut empty = true;
    for word in text.split(' ') {
        let mut word: Vec<char> = word.chars().collect();
        let space = usize::from(!empty);
        if !empty && width + space + word.len() > COLUMNS {
            out.push_str(line.trim_end());
            out.push('\n');
            line = rest.to_owned();
            width = rest.chars().count();
        } else if !empty {
            line.push(' ');
            width += 1;
        }
        // A word wider than a whole line is cut where the line ends.
        while width + word.len() > COLUMNS && word.len() > 1 {
            let room = COLUMNS.saturating_sub(width).max(1);
            let head: String = word.drain(..room.min(word.len())).collect();
            line.push_str(&head);
            out.push_str(&line);
            out.push('\n');
            line = rest.to_owned();
            width = rest.chars().count();
        }
        width += word.len();
        line.extend(word);
        empty = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// The suffix of a value the verifier only attests ([`attested`]).
const ATTESTED: &str = " (attested)";

/// What [`ATTESTED`] means, printed once under the round.
const ATTESTED_LEGEND: &str = "(attested): signed by the evaluator, but no offline check can \
                               recompute it (content/verifying.md)";

/// Whether the verifier only attests the predicate field at `path`
/// ([`verifier::ATTESTED_FIELDS`]).
fn attested(path: &str) -> bool {
    verifier::ATTESTED_FIELDS.iter().any(|f| f.path == path)
}

/// `text` with [`ATTESTED`] when the field at `path` is attested.
fn mark_attested(text: impl Into<String>, path: &str) -> String {
    let mut text = text.into();
    if attested(path) {
        text.push_str(ATTESTED);
    }
    text
}

/// When the holder of a round's seat after it took the seat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seated {
    /// In this round: its seat changed.
    ThisRound,
    /// In an earlier round beside the bundle (`rounds/<k>/` of its data directory): its
    /// number, when it settled, and whether that bundle verifies.
    Earlier {
        /// The round.
        round: u64,
        /// Its `endedAt`.
        at: Timestamp,
        /// Whether its bundle verifies with the same keyring.
        verified: bool,
    },
    /// The baseline, never unseated: no earlier round changed the seat.
    SinceStart,
    /// The earlier rounds are not beside the bundle, or one of them does not read.
    Unknown,
}

impl Seated {
    /// Where `view`'s seat holder took the seat: this round when the seat changed in it;
    /// else the latest earlier round beside `bundle` (in `rounds/`, as a data directory
    /// holds them) whose seat changed to that holder, its bundle verified with `keyring`
    /// (the rounds between are read, not verified: `referee leader` verifies them all).
    pub fn find(
        view: &RoundView,
        bundle: &std::path::Path,
        keyring: &Keyring,
        options: &VerifyOptions,
    ) -> Self {
        if view.leader_changed.value {
            return Self::ThisRound;
        }
        let n = view.round.value;
        let holder = view.leader_after.value.as_ref();
        let rounds = bundle.parent().filter(|_| {
            bundle.file_name().and_then(|f| f.to_str()) == Some(n.to_string().as_str())
        });
        for k in (1..n).rev() {
            let Some(dir) = rounds.map(|r| r.join(k.to_string())) else {
                return Self::Unknown;
            };
            let Ok((record, _)) = receipts::layout::read_round_record(&dir) else {
                return Self::Unknown;
            };
            if record.outcome.changed && record.outcome.leader_after.as_ref() == holder {
                let verified = RoundView::from_bundle(&dir, keyring, options)
                    .is_ok_and(|v| v.verification.passed && v.round.value == k);
                return Self::Earlier {
                    round: k,
                    at: record.ended_at,
                    verified,
                };
            }
        }
        if holder.is_none() {
            Self::SinceStart
        } else {
            Self::Unknown
        }
    }
}

/// Arguments of `referee show`.
#[derive(clap::Args, Debug)]
pub struct ShowArgs {
    /// The bundle directory (holding `receipt.dsse.json`); or name the round with
    /// `--campaign` and `--round`.
    #[arg(
        required_unless_present = "campaign",
        conflicts_with_all = ["campaign", "round"]
    )]
    pub bundle: Option<PathBuf>,
    /// The campaign id: show `<data>/<campaign>/rounds/<round>/`.
    #[arg(long, requires = "round")]
    pub campaign: Option<String>,
    /// The round number, with `--campaign`.
    #[arg(long, requires = "campaign")]
    pub round: Option<u64>,
    #[command(flatten)]
    pub trust: TrustArgs,
}

/// Arguments of `referee rounds` and `referee leader`.
#[derive(clap::Args, Debug)]
pub struct CampaignArgs {
    /// The campaign id.
    #[arg(long)]
    pub campaign: String,
    #[command(flatten)]
    pub trust: TrustArgs,
}

/// What every command here shares: the keyring, the data directory, the output form.
#[derive(clap::Args, Debug)]
pub struct TrustArgs {
    /// Trusted keys; default `<data>/keyring.json`.
    #[arg(long)]
    pub keyring: Option<PathBuf>,
    #[command(flatten)]
    pub data: DataArgs,
    /// Print the view-model as JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Check key validity windows at this instant (RFC 3339 UTC) instead of now.
    #[arg(long)]
    pub at: Option<Timestamp>,
}

impl TrustArgs {
    /// `--keyring`, else `<data>/keyring.json`.
    pub fn keyring_path(&self) -> PathBuf {
        self.keyring
            .clone()
            .unwrap_or_else(|| DataDir::new(&self.data.data).keyring_path())
    }

    pub(crate) fn keyring(&self) -> anyhow::Result<Keyring> {
        let path = self.keyring_path();
        Keyring::load(&path).with_context(|| format!("loading the keyring `{}`", path.display()))
    }

    pub(crate) fn options(&self) -> VerifyOptions {
        VerifyOptions::at(self.at.unwrap_or_else(Timestamp::now))
    }
}

pub(crate) fn campaign_id(text: &str) -> anyhow::Result<CampaignId> {
    text.parse()
        .with_context(|| format!("--campaign `{}`", escape_untrusted(text)))
}

/// Runs `referee show`; `verbose` (the global `--verbose`) prints the details too: the
/// step timeline, seeds, hardware, the checks behind each number, the tool and the
/// digests.
pub fn run_show(args: ShowArgs, verbose: bool) -> anyhow::Result<ExitCode> {
    let bundle = match (&args.bundle, &args.campaign, args.round) {
        (Some(bundle), _, _) => bundle.clone(),
        (None, Some(campaign), Some(round)) => DataDir::new(&args.trust.data.data)
            .campaign(&campaign_id(campaign)?)
            .round_dir(round),
        _ => anyhow::bail!("give a bundle directory, or --campaign and --round"),
    };
    if !bundle.is_dir() {
        anyhow::bail!("bundle `{}` is not a directory", bundle.display());
    }
    let keyring = args.trust.keyring()?;
    let options = args.trust.options();
    let view = RoundView::from_bundle(&bundle, &keyring, &options);
    let mut out = std::io::stdout().lock();
    let passed = match &view {
        Ok(view) => {
            if args.trust.json {
                writeln!(out, "{}", serde_json::to_string_pretty(view)?)?;
            } else {
                let seated = Seated::find(view, &bundle, &keyring, &options);
                out.write_all(render_round(view, seated, verbose).as_bytes())?;
            }
            view.verification.passed
        }
        Err(unreadable) => {
            if args.trust.json {
                writeln!(out, "{}", serde_json::to_string_pretty(unreadable)?)?;
            } else {
                out.write_all(render_unreadable(unreadable).as_bytes())?;
            }
            false
        }
    };
    Ok(exit(passed))
}

/// Runs `referee rounds`.
pub fn run_rounds(args: CampaignArgs) -> anyhow::Result<ExitCode> {
    let rounds = load_rounds(&args)?;
    let mut out = std::io::stdout().lock();
    if args.trust.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&rounds.rounds)?)?;
    } else {
        out.write_all(render_rounds(&rounds).as_bytes())?;
    }
    Ok(exit(rounds.rounds.iter().all(|r| r.verified)))
}

/// Runs `referee leader`.
pub fn run_leader(args: CampaignArgs) -> anyhow::Result<ExitCode> {
    let rounds = load_rounds(&args)?;
    let mut out = std::io::stdout().lock();
    if args.trust.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&rounds.leader)?)?;
    } else {
        out.write_all(render_leader(&rounds).as_bytes())?;
    }
    Ok(exit(rounds.leader.skipped_rounds.is_empty()))
}

fn load_rounds(args: &CampaignArgs) -> anyhow::Result<CampaignRounds> {
    let campaign = campaign_id(&args.campaign)?;
    let keyring = args.trust.keyring()?;
    let data = DataDir::new(&args.trust.data.data);
    CampaignRounds::load(&data, &campaign, &keyring, &args.trust.options())
        .with_context(|| format!("rounds of campaign `{campaign}`"))
}

fn exit(passed: bool) -> ExitCode {
    if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

// ---------------------------------------------------------------------------------------
// Text rendering.
// ---------------------------------------------------------------------------------------

/// Untrusted text, escaped for a terminal.
fn esc(text: &str) -> String {
    escape_untrusted(text).into_owned()
}

/// `text`, with the unverified suffix when `verified` is false.
fn mark(text: impl Into<String>, verified: bool) -> String {
    let mut text = text.into();
    if !verified {
        text.push_str(UNVERIFIED);
    }
    text
}

/// A field rendered by `show`, marked.
fn field<T>(field: &Field<T>, show: impl FnOnce(&T) -> String) -> String {
    mark(show(&field.value), field.verified)
}

fn yes_no(value: bool) -> &'static str {
    if value { "yes" } else { "no" }
}

/// `2 scored · 1 disqualified`, with `· n infra_failed` and `· n not decided` when
/// there are any.
fn counts(counts: &EntryCounts) -> String {
    let mut text = format!(
        "{} scored · {} disqualified",
        counts.scored, counts.disqualified
    );
    if counts.infra_failed > 0 {
        let _ = write!(text, " · {} infra_failed", counts.infra_failed);
    }
    if counts.undecided > 0 {
        let _ = write!(text, " · {} not decided", counts.undecided);
    }
    text
}

/// The round as `referee show` prints it, readable in 100 columns: a header block (the
/// verdict in words, counts, timing, top score, seat and when its holder was `seated`,
/// decision, SLA), the entries table, the noise floor, the client's self-test and the
/// passes, then what "(attested)" means and the verification result (its last line says
/// how many checks failed). `verbose` adds the details: the digests and the tool, the
/// step timeline, seeds, hardware and where each number comes from.
pub fn render_round(view: &RoundView, seated: Seated, verbose: bool) -> String {
    let mut out = wrapped(
        "",
        "  ",
        &format!(
            "Round {} of `{}` — {}",
            field(&view.round, u64::to_string),
            field(&view.campaign, |c| c.to_string()),
            field(&view.verdict, |v| esc(v)),
        ),
    );
    let _ = writeln!(out, "Bundle: {}", esc(&view.bundle.display().to_string()));
    let _ = writeln!(out, "Entries: {}", field(&view.counts, counts));
    let _ = writeln!(
        out,
        "Settled in: {}",
        mark_attested(
            format!(
                "{} ({} → {})",
                field(&view.settled_in_ms, |ms| format_duration_ms(*ms)),
                field(&view.started_at, ToString::to_string),
                field(&view.ended_at, ToString::to_string),
            ),
            "endedAt"
        )
    );
    match &view.top_score {
        Some(top) => {
            let holder = view.entry(top.entry).map_or_else(String::new, |e| {
                let who = e
                    .miner
                    .value
                    .as_ref()
                    .map_or_else(|| "the baseline".to_owned(), |m| esc(m.as_str()));
                format!("; held by {who}")
            });
            let _ = writeln!(
                out,
                "Top score: {} (0 is baseline speed{holder})",
                field(&top.score_ppm, |s| format_score_percent(*s))
            );
        }
        None => {
            let _ = writeln!(out, "Top score: — (no entry was scored)");
        }
    }
    // The change is marked with the seat after it; the seat before, which no check
    // covers beyond the signature, keeps its own mark.
    let leader = if view.leader_changed.value {
        format!(
            "changed: {} → {}",
            field(&view.leader_before, |l| esc(&format_leader(l.as_ref()))),
            esc(&format_leader(view.leader_after.value.as_ref())),
        )
    } else {
        format!(
            "unchanged: {}",
            esc(&format_leader(view.leader_after.value.as_ref()))
        )
    };
    let _ = writeln!(
        out,
        "Leader: {}",
        mark(
            leader,
            view.leader_changed.verified && view.leader_after.verified
        )
    );
    let _ = writeln!(out, "Seated: {}", seated_text(view, seated));
    out.push_str(&wrapped(
        "Decision: ",
        "  ",
        &field(&view.decision, |d| esc(d)),
    ));
    let _ = writeln!(
        out,
        "SLA: {} · overtake margin {}",
        field(&view.sla, |s| esc(s)),
        field(&view.margin_bp, |m| format_bp_percent(u64::from(*m))),
    );
    if verbose {
        let _ = writeln!(
            out,
            "Campaign digest: {}",
            field(&view.campaign_digest, ToString::to_string)
        );
        let _ = writeln!(
            out,
            "Request sequence: {}",
            field(&view.request_sequence_digest, ToString::to_string)
        );
        let _ = writeln!(
            out,
            "Tool: {}",
            mark_attested(
                field(&view.tool, |t| esc(&format!(
                    "{} {} (commit {})",
                    t.name, t.version, t.git_commit
                ))),
                "tool.version"
            )
        );
    }

    out.push_str("\nEntries\n");
    out.push_str(&render_entries(view, verbose));
    if let Some(noise) = &view.noise {
        let _ = writeln!(out, "{}", field(noise, format_noise));
    }
    if let Some(test) = view.client_self_test.as_ref().filter(|_| verbose) {
        let _ = writeln!(
            out,
            "{}",
            mark_attested(
                field(test, format_client_self_test),
                "clientSelfTest.achievedMilliRps"
            )
        );
    }
    if !view.passes.is_empty() {
        out.push_str(
            "\nPasses (order drawn from passSeed, by entry: 0 = the baseline, 0c = its A/A \
             control)\n",
        );
        for pass in &view.passes {
            let void = if pass.void.value { " (void)" } else { "" };
            let _ = writeln!(
                out,
                "  pass {}: {}{}",
                pass.index + 1,
                field(&pass.order, |o| format_pass_order(o)),
                mark(void, pass.void.verified),
            );
        }
    }
    if let Some(drift) = &view.drift {
        let unit = view.rate_unit();
        let _ = writeln!(
            out,
            "\nDrift: first baseline {} → drift baseline {}: {} (bound {}), {}",
            field(&drift.first_milli_rps, |t| format_milli_rate(*t, unit)),
            field(&drift.drift_milli_rps, |t| t
                .map_or("none".to_owned(), |t| format_milli_rate(t, unit))),
            field(&drift.drift_bp, |d| d
                .map_or("—".to_owned(), |d| format!("{d} bp"))),
            field(&drift.bound_bp, |b| format!("{b} bp")),
            field(&drift.within_bound, |w| {
                let text = if *w {
                    "within the bound"
                } else {
                    "over the bound"
                };
                text.to_owned()
            }),
        );
    }
    // content/measurement.md: the overtake margin should exceed the measured noise; say so when
    // the baseline moved more than the margin (as `referee round` does).
    if let Some(drift_bp) = view.drift.as_ref().and_then(|d| d.drift_bp.value)
        && drift_bp > u64::from(view.margin_bp.value)
    {
        let margin = view.margin_bp.value;
        let _ = writeln!(
            out,
            "Warning: the baseline drifted {}.{:02} % between its first and last run, more \
             than the overtake margin of {}.{:02} %: this round's decision is within \
             measurement noise",
            drift_bp / 100,
            drift_bp % 100,
            margin / 100,
            margin % 100
        );
    }
    if verbose {
        out.push_str(&render_details(view));
    }
    if !verbose {
        out.push_str("\nDetails (timeline, seeds, hardware, sources): referee show --verbose\n");
    }
    let _ = writeln!(out, "\n{ATTESTED_LEGEND}");
    out.push_str(&render_verification(&view.verification, verbose));
    out
}

/// The `Seated:` line's text: when the holder of the seat after the round took it.
fn seated_text(view: &RoundView, seated: Seated) -> String {
    match seated {
        Seated::ThisRound => mark_attested(
            format!(
                "in this round, {}",
                field(&view.ended_at, ToString::to_string)
            ),
            "endedAt",
        ),
        Seated::Earlier {
            round,
            at,
            verified,
        } => mark_attested(mark(format!("in round {round}, {at}"), verified), "endedAt"),
        Seated::SinceStart => "the baseline, since the campaign began".to_owned(),
        Seated::Unknown => {
            "in an earlier round, not beside this bundle (referee leader names it)".to_owned()
        }
    }
}

/// What `show --verbose` adds: the step timeline, seeds, hardware and where each number
/// comes from.
fn render_details(view: &RoundView) -> String {
    let mut out = format!(
        "\nTimeline{}\n",
        if attested("steps[].startedAt") {
            " (times and durations attested)"
        } else {
            ""
        }
    );
    out.push_str(&render_steps(view));
    if let Some(title_round) = &view.title_round {
        let _ = writeln!(
            out,
            "\nTitle: {}",
            mark(&title_round.value, title_round.verified)
        );
    }
    out.push_str("\nSeeds (commitment = sha256(seed ‖ salt), published before any entry ran)\n");
    if view.practice.value {
        let _ = writeln!(
            out,
            "  {}",
            mark(
                "PRACTICE: the evaluator gave these seeds (--seeds); this round moves no seat",
                view.practice.verified
            )
        );
    }
    if let Some(beacon) = &view.beacon {
        let b = &beacon.value;
        let _ = writeln!(
            out,
            "  {}",
            mark(
                format!(
                    "derived from beacon {} round {} value {}{}",
                    b.source.as_str(),
                    b.round,
                    short_seed(&b.value),
                    if b.source.is_signed() {
                        " (signature verified offline)"
                    } else {
                        " (UNSIGNED: a file the evaluator wrote)"
                    }
                ),
                beacon.verified
            )
        );
    }
    let mut seeds = Vec::new();
    for seed in &view.seeds {
        seeds.push(vec![
            seed.name.to_owned(),
            "commitment".to_owned(),
            field(&seed.commitment, ToString::to_string),
        ]);
        seeds.push(vec![
            String::new(),
            "revealed".to_owned(),
            mark(
                format!(
                    "seed {}  salt {}",
                    short_seed(&seed.seed.value),
                    short_seed(&seed.salt.value)
                ),
                seed.seed.verified && seed.salt.verified,
            ),
        ]);
    }
    out.push_str(&table("  ", &seeds));

    let _ = writeln!(
        out,
        "\n{}",
        mark_attested("Hardware", "hardware.atStart.cpuCount")
    );
    let hw = &view.hardware;
    let _ = writeln!(out, "  at start: {}", field(&hw.at_start, hardware));
    if hw.at_end.value == hw.at_start.value {
        let _ = writeln!(out, "  at end:   {}", mark("the same", hw.at_end.verified));
    } else {
        let _ = writeln!(out, "  at end:   {}", field(&hw.at_end, hardware));
    }
    let _ = writeln!(
        out,
        "  changed:  {}",
        field(&hw.changed, |c| yes_no(*c).to_owned())
    );
    out.push_str("\nWhere the numbers come from\n");
    for source in &view.sources {
        let checks: Vec<&str> = std::iter::once("signature.trusted")
            .chain(source.checks.iter().copied())
            .collect();
        let _ = writeln!(out, "  {} ({})", source.field, source.unit);
        let _ = writeln!(out, "      ← {}", source.from);
        let _ = writeln!(out, "      checks: {}", checks.join(", "));
    }
    out
}

/// An entry's score and interval: the median in percent and, from v3, the paired
/// interval (from `[`, [`format_paired_score`]; with its coverage and passes when
/// `verbose`); for an entry an inconclusive round left not decided, the same of its
/// per-pass ratios.
fn score_and_interval(e: &EntryView, verbose: bool) -> (String, String) {
    let paired = e.paired_score.as_ref().or(e.undecided_score.as_ref());
    match paired {
        Some(paired) => {
            let full = format_paired_score(&paired.value);
            let (median, interval) = full.split_once(" [").unwrap_or((full.as_str(), ""));
            let interval = if verbose {
                interval
            } else {
                interval
                    .split_once(" (")
                    .map_or(interval, |(bounds, _)| bounds)
            };
            (
                mark(median, paired.verified),
                if interval.is_empty() {
                    "—".to_owned()
                } else {
                    mark(format!("[{interval}"), paired.verified)
                },
            )
        }
        None => (
            field(&e.score_ppm, |s| {
                s.map_or("—".to_owned(), format_score_percent)
            }),
            "—".to_owned(),
        ),
    }
}

/// The entries table, then one line per disqualification or infrastructure failure, and
/// what "not decided" means when an entry is. `verbose` adds each entry's duration and
/// its interval's coverage and passes.
fn render_entries(view: &RoundView, verbose: bool) -> String {
    let paired = !view.passes.is_empty();
    let mut header = vec!["Role", "Miner", "Patch", "Status", "Score"];
    if paired {
        header.push("Interval");
    }
    header.push("Throughput");
    if verbose {
        header.push(if attested("entries[].startedAt") {
            "Duration (attested)"
        } else {
            "Duration"
        });
    }
    let mut rows = vec![header.into_iter().map(str::to_owned).collect::<Vec<_>>()];
    let mut notes = String::new();
    for e in &view.entries {
        let patch = field(&e.patch_short, |p| {
            p.clone().unwrap_or_else(|| "—".to_owned())
        });
        let (score, interval) = score_and_interval(e, verbose);
        let mut row = vec![
            field(&e.role, |r| r.as_str().to_owned()),
            field(&e.miner, |m| {
                m.as_ref().map_or("—".to_owned(), |m| esc(m.as_str()))
            }),
            patch.clone(),
            if e.undecided {
                mark("not decided", e.status.verified)
            } else {
                field(&e.status, |s| s.as_str().to_owned())
            },
            score,
        ];
        if paired {
            row.push(interval);
        }
        row.push(mark(
            match e.throughput_milli_rps.value {
                Some(t) if view.self_reported_tokens.value => format!(
                    "{} {SELF_REPORTED}",
                    format_entry_throughput(t, e.at_ceiling.value, view.rate_unit())
                ),
                Some(t) => format_entry_throughput(t, e.at_ceiling.value, view.rate_unit()),
                None => "—".to_owned(),
            },
            e.throughput_milli_rps.verified && (!e.at_ceiling.value || e.at_ceiling.verified),
        ));
        if verbose {
            row.push(field(&e.duration_ms, |d| format_duration_ms(*d)));
        }
        rows.push(row);
        let mut who = e.role.value.as_str().to_owned();
        for part in [
            e.miner.value.as_ref().map(|m| esc(m.as_str())),
            e.patch_short.value.clone(),
        ]
        .into_iter()
        .flatten()
        {
            who.push(' ');
            who.push_str(&part);
        }
        if let Some(d) = &e.disqualification {
            notes.push_str(&wrapped(
                "  ",
                "    ",
                &format!(
                    "{who}: {}: {}",
                    field(&d.reason, |r| r.as_str().to_owned()),
                    field(&d.detail, |t| esc(t)),
                ),
            ));
            if !d.log_tail.value.is_empty() {
                let _ = writeln!(notes, "    log tail{}:", mark("", d.log_tail.verified));
                // A wrapped log line continues after `↪`, so it is not read as a line of
                // its own.
                for line in &d.log_tail.value {
                    notes.push_str(&wrapped("    | ", "    ↪ ", &esc(line)));
                }
            }
        }
        if let Some(infra) = e.infra_failure.as_ref().filter(|_| !e.undecided) {
            notes.push_str(&wrapped(
                "  ",
                "    ",
                &format!("{who}: infra_failed: {}", field(infra, |t| esc(t))),
            ));
        }
        if let Some(log) = &e.engine_log
            && !log.verified
        {
            let _ = writeln!(notes, "  {who}: engine log {}", field(log, |l| esc(l)));
        }
    }
    if view.entries.iter().any(|e| e.undecided) {
        notes.push_str(
            "  not decided: the round was inconclusive, so it scored no one; each entry's \
             paired ratios are\n  shown (median, interval), but they decide nothing\n",
        );
    }
    let mut out = table("", &rows);
    out.push_str(&notes);
    out
}

/// The step timeline; a row any field of which is unverified ends in the suffix. No
/// "since the previous step": the runner starts each step as the one before ends, so
/// that gap is only its own bookkeeping, a few milliseconds (`--json` keeps it as
/// `sincePreviousMs`).
fn render_steps(view: &RoundView) -> String {
    let mut rows = vec![
        [
            "#", "Group", "Step", "Phase", "Started", "Ended", "Duration", "Status",
        ]
        .map(str::to_owned)
        .to_vec(),
    ];
    for step in &view.steps {
        let mut status = format_step_status(step.status.value).to_owned();
        if !step.verified() {
            status.push_str(UNVERIFIED);
        }
        rows.push(vec![
            step.index.to_string(),
            esc(&step.group.value),
            esc(&step.name.value),
            step.phase.value.as_str().to_owned(),
            format_time_of_day(step.started_at.value),
            format_time_of_day(step.ended_at.value),
            format_duration_ms(step.duration_ms.value),
            status,
        ]);
    }
    table("", &rows)
}

/// `AMD EPYC · 2 CPUs · 23.5 GiB · Debian … · kernel … · no GPU · features …`.
fn hardware(hw: &HardwareFingerprint) -> String {
    let tenths_gib = u128::from(hw.memory_bytes) * 10 / (1 << 30);
    let gpus = if hw.gpus.is_empty() {
        "no GPU".to_owned()
    } else {
        hw.gpus
            .iter()
            .map(|g| {
                format!(
                    "{} ({}, driver {})",
                    g.name, g.compute_capability, g.driver_version
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    esc(&format!(
        "{} · {} CPU{} · {}.{} GiB · {} · kernel {} · {} · features {}",
        hw.cpu_model,
        hw.cpu_count,
        if hw.cpu_count == 1 { "" } else { "s" },
        tenths_gib / 10,
        tenths_gib % 10,
        hw.os,
        hw.kernel,
        gpus,
        hw.cpu_features.join(" ")
    ))
}

/// The failed checks, then the final line: `Verified: yes …` or `Verified: NO — n of m
/// checks failed`. The signers' keyids in full when `verbose`, else their first 16 hex
/// digits.
fn render_verification(v: &Verification, verbose: bool) -> String {
    let mut out = String::new();
    if !v.failures.is_empty() {
        out.push_str("Failed checks (values they cover are marked (unverified)):\n");
        for failure in &v.failures {
            let target = failure
                .target
                .as_deref()
                .map(|t| format!(" {}", esc(t)))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  FAIL {}{target}: {}",
                failure.check.as_str(),
                esc(&failure.message)
            );
        }
    }
    let not_applicable = if v.not_applicable > 0 {
        format!(
            ", {} not applicable to {}",
            v.not_applicable,
            v.predicate_version.unwrap_or("this version")
        )
    } else {
        String::new()
    };
    if v.passed {
        let _ = writeln!(
            out,
            "Verified: yes — 0 of {} checks failed{not_applicable} (signed by {})",
            v.checks,
            v.signed_by
                .iter()
                .map(|k| match k.get(..16) {
                    Some(short) if !verbose => format!("{short}…"),
                    _ => k.clone(),
                })
                .collect::<Vec<_>>()
                .join(", ")
        );
    } else {
        let _ = writeln!(
            out,
            "Verified: NO — {} of {} checks failed{not_applicable}",
            v.failed, v.checks
        );
    }
    out
}

fn render_unreadable(unreadable: &Unreadable) -> String {
    let mut out = format!(
        "Bundle: {}\nNo readable round: {}\n",
        esc(&unreadable.bundle.display().to_string()),
        esc(&unreadable.error)
    );
    out.push_str(&render_verification(&unreadable.verification, true));
    out
}

/// One line per sealed round, then the current leader.
fn render_rounds(rounds: &CampaignRounds) -> String {
    let mut out = format!("Rounds of `{}`\n", rounds.campaign);
    if rounds.rounds.is_empty() {
        out.push_str("no sealed round yet\n");
        return out;
    }
    let mut rows = vec![
        [
            "Round",
            "Status",
            "Leader after",
            "Top score",
            "Entries",
            "Verified",
        ]
        .map(str::to_owned)
        .to_vec(),
    ];
    let mut errors = String::new();
    for row in &rounds.rounds {
        rows.push(round_row(row));
        if let Some(error) = &row.error {
            let _ = writeln!(errors, "  round {}: {}", row.round, esc(error));
        }
    }
    out.push_str(&table("", &rows));
    out.push_str(&errors);
    out.push_str(&leader_line(rounds));
    out
}

fn round_row(row: &RoundRow) -> Vec<String> {
    let verified = if row.verified {
        "yes".to_owned()
    } else if row.failed_checks > 0 {
        format!("NO ({} checks failed)", row.failed_checks)
    } else {
        "NO".to_owned()
    };
    match &row.headline {
        Some(h) => vec![
            row.round.to_string(),
            h.status.as_str().to_owned(),
            esc(&format_leader(h.leader_after.as_ref())),
            h.top_score_ppm.map_or("—".to_owned(), format_score_percent),
            counts(&h.counts),
            verified,
        ],
        None => vec![
            row.round.to_string(),
            "unreadable".to_owned(),
            "—".to_owned(),
            "—".to_owned(),
            "—".to_owned(),
            verified,
        ],
    }
}

/// `Leader: f98bb88…18dfc (fast), seated in round 3 (as of round 5)`, with a warning
/// line per later round that does not verify.
fn leader_line(rounds: &CampaignRounds) -> String {
    let leader = &rounds.leader;
    let mut out = String::new();
    match leader.as_of_round {
        Some(as_of) => {
            let seated = match leader.decided_in_round {
                Some(n) => format!(", seated in round {n}"),
                None => String::new(),
            };
            let _ = writeln!(
                out,
                "Leader: {}{seated} (as of round {as_of}, the last round that verifies)",
                esc(&format_leader(leader.leader.as_ref()))
            );
            if let Some(decision) = &leader.decision {
                let _ = writeln!(out, "Decision in round {as_of}: {}", esc(decision));
            }
        }
        None => {
            let _ = writeln!(out, "Leader: the baseline (no sealed round verifies)");
        }
    }
    if !leader.skipped_rounds.is_empty() {
        let list: Vec<String> = leader.skipped_rounds.iter().map(u64::to_string).collect();
        let _ = writeln!(
            out,
            "Warning: round {} does not verify and was skipped",
            list.join(", ")
        );
    }
    out
}

fn render_leader(rounds: &CampaignRounds) -> String {
    let mut out = format!("Campaign `{}`\n", rounds.campaign);
    out.push_str(&leader_line(rounds));
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// The golden text of `show` on an inconclusive round.
    const INCONCLUSIVE_GOLDEN: &str = "tests/snapshots/show-inconclusive.txt";

    /// The verifier's v3 fixture made `inconclusive` ([`testkit::forge::make_inconclusive`])
    /// and viewed with the fixture's own verification report, its bundle path shortened.
    fn inconclusive_view() -> RoundView {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = root.join("verifier/tests/fixtures/v3-round");
        let keyring =
            Keyring::load(&root.join("verifier/tests/fixtures/v3-keyring.json")).expect("keyring");
        let (mut record, _) = receipts::layout::read_round_record(&dir).expect("record");
        let report = verifier::verify_bundle(&dir, &keyring, &VerifyOptions::at(record.ended_at));
        assert!(report.passed());
        testkit::forge::make_inconclusive(&mut record);
        let mut view = RoundView::from_record(&dir, &record, &report);
        view.bundle = PathBuf::from("v3-round");
        view
    }

    /// `show` names an inconclusive round's verdict in its own words, calls its
    /// challenger "not decided" (not infra_failed) with its paired ratio's median and
    /// interval, numbers passes from 1, and fits 100 columns; exact text
    /// (`REFEREE_BLESS=1` rewrites it).
    #[test]
    fn show_says_an_inconclusive_round_decided_nothing_and_keeps_its_numbers() {
        let text = render_round(&inconclusive_view(), Seated::SinceStart, false);
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(INCONCLUSIVE_GOLDEN);
        if testkit::blessing() {
            std::fs::write(&path, &text).expect("bless");
        }
        let golden = std::fs::read_to_string(&path).expect("golden");
        assert_eq!(text, golden);
        for line in text.lines() {
            assert!(line.chars().count() <= 100, "{line}");
        }
        assert!(text.starts_with(
            "Round 1 of `by-hand` — inconclusive — not decided: A/A 30.78 % > margin 10 %\n"
        ));
        assert!(!text.contains("infra_failed"), "{text}");
    }

    /// A sentence wider than 100 columns is wrapped at spaces after the continuation
    /// prefix, a word wider than a line cut; a short one stays as it is.
    #[test]
    fn long_lines_wrap_at_100_columns() {
        assert_eq!(wrapped("a: ", "  ", "short text"), "a: short text\n");
        let words = ["word"; 30].join(" ");
        let text = wrapped("Decision: ", "  ", &words);
        assert_eq!(
            text,
            format!(
                "Decision: {}\n  {}\n",
                ["word"; 18].join(" "),
                ["word"; 12].join(" ")
            )
        );
        let long = "x".repeat(150);
        assert_eq!(
            wrapped("    | ", "    ↪ ", &long),
            format!("    | {}\n    ↪ {}\n", "x".repeat(94), "x".repeat(56))
        );
    }

    /// Issue 43: `Seated:` says when the seat holder took the seat, marked as the values
    /// it comes from are.
    #[test]
    fn seated_says_when_the_holder_took_the_seat() {
        let view = inconclusive_view();
        assert_eq!(
            seated_text(&view, Seated::ThisRound),
            "in this round, 2026-12-02T18:29:28.556541Z (attested)"
        );
        let at: Timestamp = "2026-11-30T12:00:00.5Z".parse().expect("a time");
        assert_eq!(
            seated_text(
                &view,
                Seated::Earlier {
                    round: 3,
                    at,
                    verified: false
                }
            ),
            format!("in round 3, {at} (unverified) (attested)")
        );
        assert_eq!(
            seated_text(&view, Seated::SinceStart),
            "the baseline, since the campaign began"
        );
        assert_eq!(
            seated_text(&view, Seated::Unknown),
            "in an earlier round, not beside this bundle (referee leader names it)"
        );
    }

    /// `--verbose` adds the details, and marks what the short form marks.
    #[test]
    fn verbose_adds_the_timeline_seeds_hardware_and_sources() {
        let view = inconclusive_view();
        let short = render_round(&view, Seated::SinceStart, false);
        let long = render_round(&view, Seated::SinceStart, true);
        for detail in [
            "\nTimeline (times and durations attested)\n",
            "\nSeeds (",
            "\nHardware (attested)\n",
            "\nWhere the numbers come from\n",
            "Campaign digest: ",
        ] {
            assert!(long.contains(detail) && !short.contains(detail), "{detail}");
        }
        assert!(
            short.contains(
                "\nDetails (timeline, seeds, hardware, sources): referee show --verbose\n"
            )
        );
        let last = short.lines().last().expect("a last line");
        assert!(
            last.starts_with("Verified: yes — 0 of 200 checks failed, 22 not applicable to v3"),
            "{last}"
        );
    }
}
