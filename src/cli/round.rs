//! `referee round`: runs (or resumes) the next round of a campaign — baseline, incumbent
//! and queued challengers; scores; seals — with a progress line per step on stderr and
//! the round's table (as in content/rounds.md) on stdout.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use receipts::keys::PrivateKey;
use receipts::layout::{DataDir, DataError};
use receipts::model::{
    CampaignId, EntryStatus, ProbeRecord, RateSearchSpec, Role, RoundRecord, RoundStatus, Step,
    TokenCount,
};
use receipts::rules::search::at_ceiling;
use receipts::text::escape_untrusted;
use runner::round::{
    Clock, RoundError, RoundKindRequest, RoundOptions, RoundProgress, RoundSummary, run_round,
};
use verifier::view::{
    RateUnit, SELF_REPORTED, entry_duration_ms, format_client_self_test, format_duration_ms,
    format_entry_throughput, format_milli_rps, format_noise, format_paired_score,
    format_score_percent, format_step_status, format_verdict,
};

use super::keys::hint_key_dir;
use super::text;

use super::{DataArgs, KeyDirArgs};

/// Env var naming a journal record after which the round aborts, as if killed (tests of
/// resume; see `RoundOptions::abort_after_record`). Read by debug builds only: a release
/// binary has no failpoint.
#[cfg(debug_assertions)]
pub const ABORT_AFTER_ENV: &str = "REFEREE_ROUND_ABORT_AFTER";

/// Env var giving an RFC 3339 time from which the round's recorded times are read off a
/// virtual clock (`runner::round::Clock::virtual_from`), so that a test's receipt records
/// the same times on every run. Read by debug builds only.
#[cfg(debug_assertions)]
pub const VIRTUAL_CLOCK_ENV: &str = "REFEREE_ROUND_VIRTUAL_CLOCK";

/// Exit codes of `referee round`, shown in its `--help`.
pub const ROUND_EXIT_CODES: &str = "Exit status: 0 when the round was sealed (its status, complete, \
infra_failed or inconclusive, is in the summary); with --fail-on-undecided, 3 when it was sealed \
infra_failed or inconclusive (no leader decision); 2 on a usage or I/O error, or a refusal \
before the round opened; 130 when interrupted (SIGINT/SIGTERM): run the same command to resume.";

/// Exit code of a round sealed `infra_failed` or `inconclusive` under
/// `--fail-on-undecided`.
pub const UNDECIDED_EXIT: u8 = 3;

/// Exit code after SIGINT or SIGTERM (128 + SIGINT, as shells report it).
pub const INTERRUPTED_EXIT: i32 = 130;

/// Arguments of `referee round`: the round's, and how to print it.
#[derive(clap::Args, Debug)]
#[command(after_help = ROUND_EXIT_CODES)]
pub struct RoundCommandArgs {
    #[command(flatten)]
    pub round: RoundArgs,
    /// Print the round summary as JSON on stdout (integers: `scorePpm`,
    /// `throughputMilliRps`, `durationMs`) instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Exit 3 (not 0) when the round is sealed but decided nothing: its status is
    /// `infra_failed` or `inconclusive`. For scripts that must not read such a round as
    /// a result.
    #[arg(long)]
    pub fail_on_undecided: bool,
}

/// What a round needs (shared with `referee demo`).
#[derive(clap::Args, Debug)]
pub struct RoundArgs {
    #[command(flatten)]
    pub data: DataArgs,
    /// The campaign id.
    #[arg(long)]
    pub campaign: String,
    /// The evaluator's private key (`<name>.key`, mode 0600) that signs the round;
    /// default `<key-dir>/evaluator.key`. It must not lie inside the data directory,
    /// which is published: a round refuses to start while any private key file does.
    #[arg(long)]
    pub key: Option<PathBuf>,
    #[command(flatten)]
    pub key_dir: KeyDirArgs,
    /// A JSON file of revealed seeds (a receipt's `seeds`) to use instead of fresh ones:
    /// for re-runs and tests. The round is sealed as `practice` and moves no seat.
    #[arg(long, hide = true, conflicts_with = "beacon_file")]
    pub seeds: Option<PathBuf>,
    /// A file beacon `{"round": n, "value": "<64 hex>"}` the seeds derive from with a
    /// fresh secret (content/measurement.md, Seeds): unsigned, so the receipt and `show`
    /// label it so. Without one, the seeds are drawn from the OS alone.
    #[arg(long, value_name = "FILE", conflicts_with = "beacon_drand")]
    pub beacon_file: Option<PathBuf>,
    /// A drand quicknet HTTP endpoint (`http://…` or `https://…`, serving
    /// `/<chain hash>/public/<round>`)
    /// the seeds derive from with a fresh secret: the round names the first quicknet
    /// round at least two periods (6 s) after it opens, waits for it, and checks its
    /// signature offline before using it (content/measurement.md, Seeds).
    #[arg(long, value_name = "URL", conflicts_with = "seeds")]
    pub beacon_drand: Option<String>,
    /// PEM certificates the `https://` drand endpoint is checked against instead of the
    /// system's roots (a relay with its own CA).
    #[arg(long, value_name = "FILE", requires = "beacon_drand")]
    pub beacon_ca_file: Option<PathBuf>,
    /// The log key that appends to the data directory's transparency log, when it has
    /// one (`<data>/log/config.toml`); default `<key-dir>/log.key`.
    #[arg(long, value_name = "FILE")]
    pub log_key: Option<PathBuf>,
    /// Before the first entry runs, wait for a trusted witness (keyring role `witness`)
    /// to cosign a checkpoint of the data directory's log that holds the round-opened
    /// entry (content/transparency-log.md); without it the receipt says "round opening
    /// not witnessed".
    #[arg(long)]
    pub require_witness: bool,
    /// With --require-witness: how long to wait, seconds; then the round stops before
    /// any entry ran, and the same command resumes it.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 600,
        requires = "require_witness"
    )]
    pub witness_timeout: u64,
    /// When referee runs as root: the unprivileged host uid (and gid) engines run as,
    /// taken before their sandbox starts; it needs no passwd entry. As another user,
    /// engines keep that user's uid (content/threat-model.md).
    #[arg(long, value_name = "UID", default_value_t = engines::sandbox::DEFAULT_ENGINE_UID)]
    pub engine_uid: u32,
    /// What the round is for (content/title.md): `regular` takes the queued challengers;
    /// `confirmation` re-measures the earliest pending challenger side by side with the
    /// title's holder (seat rule 001, once its holding period is over); `remeasure`
    /// re-runs the holder against the baseline with its successor candidates beside it.
    /// `referee due` says which is due.
    #[arg(long, value_enum, default_value_t = KindArg::Regular)]
    pub kind: KindArg,
    /// The sealed items of an s1-fast-speed campaign's capability scorer
    /// (content/s1-fast-speed.md): a directory outside the data directory; the scorer
    /// the campaign's `[capability]` names reads it and returns only a score. Required on
    /// that track, refused on others.
    #[arg(long, value_name = "DIR")]
    pub sealed_dir: Option<PathBuf>,
    /// `referee demo --days`: the round's times come from a virtual clock starting here,
    /// and its receipt says `clock: virtual`.
    #[arg(skip)]
    pub virtual_clock: Option<receipts::model::Timestamp>,
}

/// `referee round --kind`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum KindArg {
    /// Challengers from the queue.
    Regular,
    /// Confirm the earliest pending challenger.
    Confirmation,
    /// Re-measure the holder.
    Remeasure,
}

impl From<KindArg> for RoundKindRequest {
    fn from(kind: KindArg) -> Self {
        match kind {
            KindArg::Regular => RoundKindRequest::Regular,
            KindArg::Confirmation => RoundKindRequest::Confirmation,
            KindArg::Remeasure => RoundKindRequest::Remeasure,
        }
    }
}

/// Runs `referee round`.
pub fn run(args: RoundCommandArgs) -> anyhow::Result<ExitCode> {
    install_interrupt_handler()?;
    let summary = run_with_progress(&args.round)?;
    if args.json {
        let text = serde_json::to_string_pretty(&RoundJson::from(&summary))?;
        println!("{text}");
    } else {
        print_summary(&summary);
    }
    if !summary.withheld.is_empty() {
        eprintln!(
            "error: the round is sealed, but {} of its files held the evaluator's or the log's \
             private key material and were withheld before sealing ({}); the entries that \
             wrote them are disqualified `secret_in_output`. Treat the key as exposed: rotate \
             it (content/receipts.md, Keys and the keyring) before the next round.",
            summary.withheld.len(),
            summary
                .withheld
                .iter()
                .map(|p| escape_untrusted(p))
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Ok(ExitCode::from(KEY_EXPOSED_EXIT));
    }
    let undecided = summary.record.outcome.status != RoundStatus::Complete;
    Ok(if args.fail_on_undecided && undecided {
        ExitCode::from(UNDECIDED_EXIT)
    } else {
        ExitCode::SUCCESS
    })
}

/// `referee round`'s exit code when the round sealed but found key material in its
/// bundle (content/rounds.md, Sealing), whatever `--fail-on-undecided` says.
const KEY_EXPOSED_EXIT: u8 = 4;

/// On SIGINT or SIGTERM: say how to go on, then exit 130. The journal keeps what the
/// round finished, so the same command resumes it (as after a kill). The handlers are
/// registered before this returns, so no signal in between is lost.
fn install_interrupt_handler() -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the signal handler")?;
    let (mut interrupt, mut terminate) = {
        let _guard = runtime.enter();
        (
            signal(SignalKind::interrupt()).context("handling SIGINT")?,
            signal(SignalKind::terminate()).context("handling SIGTERM")?,
        )
    };
    std::thread::Builder::new()
        .name("signals".to_owned())
        .spawn(move || {
            runtime.block_on(async {
                tokio::select! {
                    _ = interrupt.recv() => {}
                    _ = terminate.recv() => {}
                }
            });
            // Engines in containers outlive the process unless removed (content/docker.md).
            engines::docker::remove_live();
            eprintln!("\ninterrupted — run the same command to resume");
            std::process::exit(INTERRUPTED_EXIT);
        })
        .context("starting the signal handler")?;
    Ok(())
}

/// `referee round --json`: the facts of the text summary, in integers.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct RoundJson<'a> {
    round: u64,
    campaign: &'a str,
    status: RoundStatus,
    leader_before: &'a Option<receipts::model::Leader>,
    leader_after: &'a Option<receipts::model::Leader>,
    leader_changed: bool,
    margin_bp: u32,
    decision: String,
    reason: Option<String>,
    drift_bp: Option<u64>,
    /// Whether the drift warning of the text summary applies.
    within_noise: bool,
    entries: Vec<EntryJson<'a>>,
    /// Whether this call resumed a round a killed runner left.
    resumed: bool,
    /// The whole round, from its `startedAt` to its `endedAt`.
    round_wall_ms: i64,
    /// This call (the resumed part, when `resumed`).
    wall_ms: u64,
    engine_ms: u64,
    bundle: &'a std::path::Path,
    statement_digest: String,
}

/// One entry of [`RoundJson`].
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct EntryJson<'a> {
    role: Role,
    miner: Option<&'a str>,
    patch: Option<String>,
    status: EntryStatus,
    score_ppm: Option<i64>,
    throughput_milli_rps: Option<u64>,
    duration_ms: i64,
    disqualification: &'a Option<receipts::model::Disqualification>,
    infra_failure: Option<String>,
}

impl<'a> From<&'a RoundSummary> for RoundJson<'a> {
    fn from(summary: &'a RoundSummary) -> Self {
        let record = &summary.record;
        Self {
            round: record.round,
            campaign: record.campaign.id.as_str(),
            status: record.outcome.status,
            leader_before: &record.outcome.leader_before,
            leader_after: &record.outcome.leader_after,
            leader_changed: record.outcome.changed,
            margin_bp: record.outcome.margin_bp,
            decision: record.outcome.decision.to_string(),
            reason: record.outcome.reason.as_ref().map(ToString::to_string),
            drift_bp: record.drift.as_ref().and_then(|d| d.drift_bp),
            within_noise: noise_drift_bp(record).is_some(),
            entries: record
                .entries
                .iter()
                .map(|entry| EntryJson {
                    role: entry.role,
                    miner: entry.miner.as_ref().map(|m| m.as_str()),
                    patch: entry.patch.as_ref().map(ToString::to_string),
                    status: entry.status,
                    score_ppm: entry.score_ppm,
                    throughput_milli_rps: entry.throughput_milli_rps,
                    duration_ms: entry.started_at.millis_until(entry.ended_at),
                    disqualification: &entry.disqualification,
                    infra_failure: entry.infra_failure.as_ref().map(ToString::to_string),
                })
                .collect(),
            resumed: summary.resumed,
            round_wall_ms: record.started_at.millis_until(record.ended_at),
            wall_ms: summary.wall_ms,
            engine_ms: summary.engine_ms,
            bundle: &summary.bundle,
            statement_digest: summary.statement_digest.to_string(),
        }
    }
}

/// The baseline's drift, when it exceeds the overtake margin in a round where a
/// challenger was scored: only then did a decision between entries rest on it.
fn noise_drift_bp(record: &RoundRecord) -> Option<u64> {
    let challenger_ran = record
        .entries
        .iter()
        .any(|e| e.role == Role::Challenger && e.status == EntryStatus::Scored);
    drift_beyond_margin(
        challenger_ran,
        record.drift.as_ref().and_then(|d| d.drift_bp),
        record.outcome.margin_bp,
    )
}

/// The drift worth a warning: more than the margin, in a round with a scored challenger
/// (without one, no decision between entries rested on the baseline's noise).
fn drift_beyond_margin(challenger_ran: bool, drift_bp: Option<u64>, margin_bp: u32) -> Option<u64> {
    drift_bp.filter(|&bp| challenger_ran && bp > u64::from(margin_bp))
}

/// The capability scorer of an s1-fast-speed campaign: the campaign's `[capability]`
/// command over the sealed items in `sealed_dir`; `None` on other tracks.
///
/// Errors: the campaign cannot be read; `--sealed-dir` missing on the track or given on
/// another; the scorer refused (`runner::sealed::CommandScorer::new`).
fn sealed_scorer(
    data: &std::path::Path,
    campaign: &CampaignId,
    sealed_dir: Option<&std::path::Path>,
) -> anyhow::Result<Option<std::sync::Arc<dyn runner::sealed::CapabilityScorer>>> {
    let frozen = DataDir::new(data.to_path_buf())
        .campaign(campaign)
        .load_campaign()
        .with_context(|| format!("reading campaign `{campaign}`"))?;
    match (&frozen.campaign.capability, sealed_dir) {
        (Some(spec), Some(dir)) => {
            let scorer = runner::sealed::CommandScorer::new(spec, dir, data, SEALED_SCORE_TIMEOUT)
                .with_context(|| format!("the capability scorer over `{}`", dir.display()))?;
            Ok(Some(std::sync::Arc::new(scorer)))
        }
        (Some(_), None) => anyhow::bail!(
            "campaign `{campaign}` is of track s1-fast-speed: its capability scorer needs the \
             sealed items, `--sealed-dir <dir>` (outside the data directory)"
        ),
        (None, Some(_)) => anyhow::bail!(
            "--sealed-dir: campaign `{campaign}` has no [capability] (only track \
             s1-fast-speed scores sealed items)"
        ),
        (None, None) => Ok(None),
    }
}

/// How long the capability scorer may take over one entry.
const SEALED_SCORE_TIMEOUT: Duration = Duration::from_secs(600);

/// Runs the round with the indicatif progress on stderr; shared with `referee demo`.
pub fn run_with_progress(args: &RoundArgs) -> anyhow::Result<RoundSummary> {
    let campaign: CampaignId = args
        .campaign
        .parse()
        .with_context(|| format!("--campaign `{}`", args.campaign))?;
    let key_path = match &args.key {
        Some(path) => path.clone(),
        None => args.key_dir.evaluator_key()?,
    };
    let key = PrivateKey::load(&key_path)
        .with_context(|| format!("loading the evaluator key `{}`", key_path.display()))?;
    let seeds = match &args.seeds {
        Some(path) => {
            let bytes =
                std::fs::read(path).with_context(|| format!("reading `{}`", path.display()))?;
            Some(
                serde_json::from_slice(&bytes)
                    .with_context(|| format!("parsing seeds `{}`", path.display()))?,
            )
        }
        None => None,
    };
    let (abort_after_record, clock) = test_hooks()?;
    let clock = args.virtual_clock.map_or(clock, Clock::virtual_from);
    // Absolute: engines run in their own tree (and sandbox root), where a path relative to
    // this directory (`--data data`) would name nothing.
    let data = std::path::absolute(&args.data.data).with_context(|| {
        format!(
            "resolving the data directory `{}`",
            args.data.data.display()
        )
    })?;
    // Every key path the evaluator named, kept from engines with the default key
    // directory (which the runner adds itself).
    let key_paths: Vec<PathBuf> = [Some(key_path.clone()), args.key_dir.key_dir.clone()]
        .into_iter()
        .chain([args.log_key.clone()])
        .flatten()
        .collect();
    let beacon: Option<std::sync::Arc<dyn runner::round::beacon::Beacon>> =
        match (&args.beacon_file, &args.beacon_drand) {
            (Some(path), _) => Some(std::sync::Arc::new(runner::round::beacon::FileBeacon::new(
                path,
            ))),
            (None, Some(url)) => Some(std::sync::Arc::new(
                runner::round::drand::DrandHttpBeacon::new(
                    url,
                    clock.clone(),
                    args.beacon_ca_file.as_deref(),
                )
                .context("--beacon-drand")?,
            )),
            (None, None) => None,
        };
    let capability = sealed_scorer(&data, &campaign, args.sealed_dir.as_deref())?;
    let options = RoundOptions {
        data: DataDir::new(data),
        campaign,
        engine_program: std::env::current_exe().context("locating the referee executable")?,
        seeds,
        beacon,
        abort_after_record,
        clock,
        log_key: (args.log_key.clone()).or_else(|| {
            (args.key_dir.resolve().ok()).map(|d| d.join(format!("{}.key", super::log::LOG_KEY)))
        }),
        require_witness: args
            .require_witness
            .then(|| Duration::from_secs(args.witness_timeout)),
        key_paths,
        engine_uid: args.engine_uid,
        kind: args.kind.into(),
        capability,
    };
    let progress = Progress::new();
    let result = run_round(&options, &key, &progress);
    progress.bar.finish_and_clear();
    let result = match result {
        // Preflight found a private key in the data directory: point the hint at where
        // this evaluator keeps keys (`--key`'s directory or `--key-dir`).
        Err(RoundError::Data(DataError::PrivateKeyInside {
            moves,
            dir,
            what,
            command,
            ..
        })) => {
            let found: Vec<PathBuf> = moves.into_iter().map(|(from, _)| from).collect();
            let key_dir = hint_key_dir(args.key.as_deref(), &found, &args.key_dir);
            Err(RoundError::Data(DataError::private_keys_inside(
                &dir, what, found, &key_dir, command,
            )))
        }
        other => other,
    };
    result.with_context(|| format!("round of campaign `{}`", args.campaign))
}

/// The test hooks of a debug build: the failpoint ([`ABORT_AFTER_ENV`]) and the virtual
/// clock ([`VIRTUAL_CLOCK_ENV`]).
///
/// Errors: a variable that is set but does not parse.
#[cfg(debug_assertions)]
fn test_hooks() -> anyhow::Result<(Option<usize>, Clock)> {
    let abort_after_record = match std::env::var(ABORT_AFTER_ENV) {
        Ok(value) => Some(
            value
                .parse()
                .with_context(|| format!("{ABORT_AFTER_ENV}=`{value}`: not a number"))?,
        ),
        Err(_) => None,
    };
    let clock = match std::env::var(VIRTUAL_CLOCK_ENV) {
        Ok(value) => Clock::virtual_from(
            value
                .parse()
                .with_context(|| format!("{VIRTUAL_CLOCK_ENV}=`{value}`: not an RFC 3339 time"))?,
        ),
        Err(_) => Clock::system(),
    };
    Ok((abort_after_record, clock))
}

/// A release build has no test hooks: no failpoint, the system clock.
#[cfg(not(debug_assertions))]
fn test_hooks() -> anyhow::Result<(Option<usize>, Clock)> {
    Ok((None, Clock::system()))
}

/// Progress on stderr: one line per finished step, and on a terminal a spinner for the
/// running one.
struct Progress {
    bar: ProgressBar,
    terminal: bool,
}

impl Progress {
    fn new() -> Self {
        let terminal = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        let draw = if terminal {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(None, draw);
        bar.set_style(
            ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        Self { bar, terminal }
    }

    /// A line above the spinner, or plainly on stderr when there is none.
    fn line(&self, text: String) {
        if self.terminal {
            self.bar.println(text);
        } else {
            eprintln!("{text}");
        }
    }
}

impl RoundProgress for Progress {
    fn round_started(&self, round: u64, resumed_groups: usize) {
        let line = if resumed_groups > 0 {
            format!("round {round}: resuming after {resumed_groups} finished step groups")
        } else {
            format!("round {round}: opening")
        };
        self.line(line);
    }

    fn step_started(&self, index: u32, _group: &str, name: &str) {
        self.bar.set_message(format!("[{index:>2}] {name}"));
    }

    fn step_finished(&self, step: &Step) {
        let ms = step.started_at.millis_until(step.ended_at);
        let status = format_step_status(step.status);
        self.line(format!(
            "[{:>2}] {:<48} {:>8} {:>7}",
            step.index,
            step.name,
            status,
            format_duration_ms(ms)
        ));
    }

    fn probe_finished(&self, record: &ProbeRecord) {
        self.bar.set_message(format!(
            "run {} probe {} at {}: {:?}",
            record.run,
            record.probe,
            format_milli_rps(record.rate_milli_rps),
            record.verdict
        ));
    }

    fn log_note(&self, line: &str) {
        self.line(line.to_owned());
    }
}

/// Prints the round's table as the scoreboard shows it (content/rounds.md): role, miner,
/// patch, status, score, duration.
pub fn print_summary(summary: &RoundSummary) {
    let record = &summary.record;
    println!(
        "Round {} of `{}` — {}",
        record.round,
        record.campaign.id,
        // The reason is the receipt's typed reason, or a v1 receipt's sentence.
        escape_untrusted(&format_verdict(
            record.outcome.status,
            record.outcome.reason.as_ref()
        ))
    );
    // The ceiling is the rate search's maximum.
    print!("{}", table(record, &summary.rate_search));
    if let Some(noise) = &record.noise {
        println!("{}", format_noise(noise));
    }
    if let Some(test) = &record.client_self_test {
        println!("{}", format_client_self_test(test));
    }
    if let Some(log) = &record.transparency_log {
        println!("Log: {}", verifier::tlog::format_round_log(log));
    }
    println!("Leader: {}", leader_line(record));
    println!("Decision: {}", record.outcome.decision);
    // content/measurement.md: the overtake margin should exceed the measured noise. The receipt
    // records both; say so plainly when the baseline moved more than the margin.
    if let Some(drift_bp) = noise_drift_bp(record) {
        println!(
            "Warning: the baseline drifted {}.{:02} % between its first and last run, more than the overtake margin of {}.{:02} %: this round's decision is within measurement noise",
            drift_bp / 100,
            drift_bp % 100,
            record.outcome.margin_bp / 100,
            record.outcome.margin_bp % 100
        );
    }
    let overhead_ms = summary.wall_ms.saturating_sub(summary.engine_ms);
    if summary.resumed {
        println!(
            "Time: {} wall for the whole round (from its start at {}), {} of it in this resumed run",
            format_duration_ms(record.started_at.millis_until(record.ended_at)),
            record.started_at,
            format_duration_ms(i64::try_from(summary.wall_ms).unwrap_or(i64::MAX)),
        );
    }
    println!(
        "{}: {} wall, {} inside engines, orchestration {} ({}.{:02} % of the {})",
        if summary.resumed {
            "Resumed run"
        } else {
            "Time"
        },
        format_duration_ms(i64::try_from(summary.wall_ms).unwrap_or(i64::MAX)),
        format_duration_ms(i64::try_from(summary.engine_ms).unwrap_or(i64::MAX)),
        format_duration_ms(i64::try_from(overhead_ms).unwrap_or(i64::MAX)),
        overhead_bp(summary) / 100,
        overhead_bp(summary) % 100,
        if summary.resumed { "run" } else { "round" }
    );
    println!("Bundle: {}", summary.bundle.display());
    println!("Statement sha256: {}", summary.statement_digest);
}

fn leader_line(record: &RoundRecord) -> String {
    let name = |l: &Option<receipts::model::Leader>| match l {
        Some(l) => format!("{} ({})", l.patch.short(), l.miner),
        None => "the baseline".to_owned(),
    };
    if record.outcome.changed {
        format!(
            "changed: {} → {}",
            name(&record.outcome.leader_before),
            name(&record.outcome.leader_after)
        )
    } else {
        format!("unchanged: {}", name(&record.outcome.leader_after))
    }
}

/// The entries table as text; throughputs counted from self-reported token counts are
/// marked so, and one a run measured at `rate_search`'s maximum is `≥ … req/s (ceiling)`.
fn table(record: &RoundRecord, rate_search: &RateSearchSpec) -> String {
    let self_reported = if record.token_count == Some(TokenCount::Usage) {
        format!(" {SELF_REPORTED}")
    } else {
        String::new()
    };
    let mut rows = vec![vec![
        "Role".to_owned(),
        "Miner".to_owned(),
        "Patch".to_owned(),
        "Status".to_owned(),
        "Score".to_owned(),
        "Throughput".to_owned(),
        "Duration".to_owned(),
    ]];
    let mut reasons = Vec::new();
    for entry in &record.entries {
        let role = entry.role.as_str();
        let status = entry.status.as_str();
        rows.push(vec![
            role.to_owned(),
            entry
                .miner
                .as_ref()
                .map_or("—".to_owned(), |m| m.to_string()),
            entry.patch.as_ref().map_or("—".to_owned(), |p| p.short()),
            status.to_owned(),
            score_cell(entry),
            entry.throughput_milli_rps.map_or("—".to_owned(), |t| {
                let ceiling =
                    (entry.runs.iter()).any(|r| at_ceiling(r.rate_milli_rps, rate_search));
                format!(
                    "{}{self_reported}",
                    format_entry_throughput(t, ceiling, RateUnit::of(record.decide.as_ref()))
                )
            }),
            format_duration_ms(entry_duration_ms(entry, &record.steps)),
        ]);
        if let Some(d) = &entry.disqualification {
            let tail = d.log_tail.last().map(String::as_str).unwrap_or("");
            reasons.push(format!(
                "  {} {}: {}{}",
                role,
                entry.patch.as_ref().map_or(String::new(), |p| p.short()),
                // The detail and the log tail are the engine's output: a miner controls them.
                escape_untrusted(&d.detail),
                if tail.is_empty() {
                    String::new()
                } else {
                    format!("; log tail: … {}", escape_untrusted(tail))
                }
            ));
        } else if let Some(infra) = &entry.infra_failure {
            reasons.push(format!(
                "  {} {}: {}",
                role,
                entry.patch.as_ref().map_or(String::new(), |p| p.short()),
                escape_untrusted(&infra.to_string())
            ));
        }
    }
    let mut out = text::table("", &rows);
    for reason in reasons {
        out.push_str(&reason);
        out.push('\n');
    }
    out
}

/// An entry's score cell: from v3 (a round run in passes) the paired score with its
/// interval, coverage and passes, or the percentage alone (the baseline's 0, and every
/// score before v3).
fn score_cell(entry: &receipts::model::Entry) -> String {
    match (&entry.paired_score, entry.score_ppm) {
        (Some(paired), _) => format_paired_score(paired),
        (None, Some(ppm)) => format_score_percent(ppm),
        (None, None) => "—".to_owned(),
    }
}

/// Orchestration overhead (wall time minus time inside engines) as basis points of the
/// wall time.
fn overhead_bp(summary: &RoundSummary) -> u64 {
    let overhead = summary.wall_ms.saturating_sub(summary.engine_ms);
    (u128::from(overhead) * 10_000)
        .checked_div(u128::from(summary.wall_ms))
        .map_or(0, |bp| u64::try_from(bp).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: the "within measurement noise" warning showed in a round without a
    /// challenger, where no decision between entries was made.
    #[test]
    fn the_noise_warning_needs_a_challenger() {
        assert_eq!(drift_beyond_margin(false, Some(5_000), 1_000), None);
        assert_eq!(drift_beyond_margin(true, Some(5_000), 1_000), Some(5_000));
        assert_eq!(drift_beyond_margin(true, Some(1_000), 1_000), None);
        assert_eq!(drift_beyond_margin(true, None, 1_000), None);
    }
}
