//! `referee verify <bundle>... --keyring <file>`: run content/receipts.md §Verification checks 1–6
//! (and, for a round bundle, the round's own consistency checks) on each bundle and print
//! every check. Exit 0 when all pass, 1 when a check failed, 2 when a bundle is missing or
//! on a usage or I/O error. A missing bundle does not stop the others: with `--json` it is
//! an object with an `error` field in the array.
//!
//! By default a bundle must be in referee's own form: canonical envelope JSON, standard
//! padded base64, and keyid hints equal to the keyid of the key that verified each
//! signature (a signature valid under a trusted key whose hint differs fails
//! `signature.keyid` with "signature valid under key `<keyid>`; keyid hint `<hint>`
//! differs"). `--foreign` reads another tool's envelope as the DSSE spec allows (RECEIPTS
//! rules: the keyid is a hint only for envelopes of other tools): any strictly parsed
//! envelope JSON, URL-safe or unpadded base64 (never wrong padding or non-canonical
//! trailing bits), and a signature counts under whichever trusted key verifies it. A
//! payload of one of referee's own predicate types must be canonical JSON either way
//! (`statement.canonical`).
//!
//! A path that is a directory without `receipt.dsse.json` (a data directory, a
//! campaign's `rounds/`, any archive) is verified as an archive: every bundle under it in
//! parallel, the rounds of each `rounds/` directory also as a chain and each campaign's
//! submission records against its rounds, a progress bar on a terminal, then `N
//! verified, M failed` and the failures grouped by check. `--campaign
//! <id>` verifies `<data>/<id>/rounds` so. For people, each bundle's failures come first
//! (with the recomputed and the claimed value), then one line per group of checks
//! (envelope, files, measurements, correctness, decision, chain, log), then the verdict.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use std::io::IsTerminal;

use serde::Serialize;

use std::sync::Mutex;
use std::time::Duration;

use anyhow::Context;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use receipts::bundle::ENVELOPE_FILE;
use receipts::fsutil::{read_limited, write_atomic};
use receipts::keys::{Keyring, PrivateKey, PublicKey, TrustedKey};
use receipts::model::{
    Comparison, Phase, RERUN_PREDICATE_TYPES, RerunRecord, RerunVerdict, RoundLog, Severity, Step,
    StepStatus, Timestamp, ToleranceBasis,
};
use receipts::text::escape_untrusted;
use receipts::tlog::note::MAX_NOTE_BYTES;
use referee::rerun::{RerunError, RerunOptions, default_out, rerun, write_bundle};
use runner::round::RoundProgress;
use std::collections::BTreeMap;
use verifier::archive::{ArchiveSummary, DataReports, find_bundles, verify_data};
use verifier::rerun::read_rerun_record;
use verifier::tlog;
use verifier::verify_bundle;
use verifier::view::{format_bp_percent, format_noise, format_score_percent};
use verifier::{Check, CheckName, VerifyOptions, VerifyReport};

use super::DataArgs;

/// Exit codes of `referee verify`, shown in its `--help`.
pub const VERIFY_EXIT_CODES: &str = "Exit status: 0 when every check of every bundle passed; 1 when a \
check failed; 2 when a bundle is missing, or on a usage or I/O error (e.g. an unreadable keyring). \
With --rerun: 0 GOOD or NOISY; 1 BAD, or the bundle does not verify; 2 on a usage or I/O error; \
3 FAIL, or nothing could be re-run (UNKWN).";

/// Arguments of `referee verify`.
#[derive(clap::Args, Debug)]
#[command(after_help = VERIFY_EXIT_CODES)]
pub struct VerifyArgs {
    /// Bundle directories (each holding `receipt.dsse.json`), or directories of bundles
    /// (a data directory, a campaign's `rounds/`): every bundle under one is verified,
    /// and the rounds of each `rounds/` directory as a chain.
    #[arg(required_unless_present = "campaign")]
    pub bundles: Vec<PathBuf>,
    /// Verify every round of this campaign (`<data>/<id>/rounds`), and their chain.
    #[arg(long)]
    pub campaign: Option<String>,
    /// Trusted keys: a keyring file, default `<data>/keyring.json`; or a single `.pub`
    /// file, trusted as a keyring of that one key valid from the epoch on.
    #[arg(long)]
    pub keyring: Option<PathBuf>,
    #[command(flatten)]
    pub data: DataArgs,
    /// Print the reports as JSON: an array with one object per bundle, in argument order,
    /// each with a `passed` boolean, and either the report's fields or an `error`; an
    /// archive's campaigns' submission records follow its bundles, as `{passed,
    /// submissions, checks}`.
    #[arg(long)]
    pub json: bool,
    /// Check key validity windows at this instant (RFC 3339 UTC) instead of now.
    #[arg(long)]
    pub at: Option<Timestamp>,
    /// Distinct trusted keys that must have signed (at least 1).
    #[arg(long, default_value_t = 1, value_parser = parse_threshold)]
    pub threshold: usize,
    /// Require this predicateType.
    #[arg(long)]
    pub predicate_type: Option<String>,
    /// Verify envelopes of other DSSE tools: keyid hints are hints only (a signature
    /// counts under whichever trusted key verifies it), the envelope JSON need not be
    /// canonical, and base64 may be URL-safe or unpadded. Signatures, keys, threshold,
    /// Statement and files are checked as strictly as without it.
    #[arg(long)]
    pub foreign: bool,
    /// Re-run the one round/v3 to v9 bundle given and compare (content/verifying.md, Re-running
    /// a round): regenerate its workload from the revealed seeds, apply each recorded diff
    /// to the pinned baseline through the gates, run the entries on the recorded backend,
    /// then print GOOD, NOISY, BAD, FAIL or UNKWN per entry and overall.
    #[arg(long, conflicts_with_all = ["campaign", "foreign"])]
    pub rerun: bool,
    /// With --rerun: the entries to re-run, comma-separated: `baseline`, a slug
    /// (`candidate-1-miner-a`), a miner, or at least 4 hex characters of a patch's sha256;
    /// default all. The baseline always runs: every paired score is against it.
    #[arg(long, value_delimiter = ',', requires = "rerun")]
    pub entries: Vec<String>,
    /// With --rerun: the baseline git repository holding the pinned commit; default the
    /// campaign's `baseline.git` of the data directory the bundle lies in.
    #[arg(long, requires = "rerun", value_name = "REPO")]
    pub baseline: Option<PathBuf>,
    /// With --rerun: sign the result into a rerun bundle with this private key.
    #[arg(long, requires = "rerun")]
    pub key: Option<PathBuf>,
    /// With --key: where the rerun bundle goes; default `<data>/<campaign>/reruns/<n>` for
    /// a round of a data directory, else `<bundle>.rerun` beside the bundle.
    #[arg(long, requires = "key", value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Fail a round that is not in a transparency log (its receipt records none); by
    /// default such a round's log checks are `not applicable (not logged)`. A round whose
    /// receipt records a log entry fails without its proofs `rounds/<n>.proof` either way
    /// (`--no-log` skips the log checks).
    #[arg(long)]
    pub require_log: bool,
    /// Skip the transparency-log checks, printed `not applicable (--no-log)`: for a
    /// bundle downloaded without its proofs. Without it a round whose receipt records a
    /// log entry fails when its proofs `rounds/<n>.proof` are missing.
    #[arg(long, conflicts_with_all = ["require_log", "checkpoint", "log"])]
    pub no_log: bool,
    /// A signed checkpoint of the log kept from before: the rounds' checkpoints and the
    /// log's current one must be consistent with it (a truncated or rewritten log fails).
    /// Default: the one remembered in `$XDG_CONFIG_HOME/referee/checkpoints/` (else
    /// `~/.config/referee/checkpoints/`), which each verification that checked
    /// consistency advances.
    #[arg(long, value_name = "FILE")]
    pub checkpoint: Option<PathBuf>,
    /// The log's directory (its `checkpoint` and `tile/`); default `<data>/log` of the
    /// data directory the bundle lies in.
    #[arg(long, value_name = "DIR")]
    pub log: Option<PathBuf>,
}

/// Verifies every bundle and prints the reports.
pub fn run(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let keyring_path = args
        .keyring
        .clone()
        .unwrap_or_else(|| args.data.data.join("keyring.json"));
    let keyring = load_keyring(&keyring_path)?;
    let mut options = VerifyOptions::at(args.at.unwrap_or_else(Timestamp::now));
    options.threshold = args.threshold;
    options.expected_predicate_type = args.predicate_type.clone();
    options.foreign = args.foreign;
    if args.rerun {
        return run_rerun(&args, &keyring, options);
    }
    let mut paths = args.bundles.clone();
    if let Some(campaign) = &args.campaign {
        paths.push(args.data.data.join(campaign).join("rounds"));
    }
    let mut outcomes = Vec::new();
    let log = LogChecks::new(&args)?;
    for path in &paths {
        let mut outcome = verify_path(path, &keyring, &options, args.json)?;
        log.check(&mut outcome, &keyring)?;
        outcomes.push(outcome);
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        let json: Vec<JsonOutcome<'_>> = outcomes
            .iter()
            .flat_map(|o| match o {
                Outcome::Verified(report) => vec![JsonOutcome::from(report)],
                Outcome::Archive(_, reports) => reports
                    .bundles
                    .iter()
                    .map(JsonOutcome::from)
                    .chain(reports.submissions.iter().map(JsonOutcome::records))
                    .collect(),
                Outcome::Missing(bundle) => vec![JsonOutcome::Error {
                    bundle,
                    passed: false,
                    error: missing_message(bundle),
                }],
            })
            .collect();
        // Serialize first so a closed stdout surfaces as an io::Error (a broken pipe is
        // not a failure, see `main`).
        let text = serde_json::to_string_pretty(&json)?;
        writeln!(out, "{text}")?;
    } else {
        for outcome in &outcomes {
            match outcome {
                Outcome::Verified(report) => print_report(&mut out, report)?,
                Outcome::Archive(root, reports) => print_archive(&mut out, root, reports)?,
                Outcome::Missing(bundle) => {
                    writeln!(out, "bundle {}", bundle.display())?;
                    writeln!(out, "result: ERROR ({})", missing_message(bundle))?;
                    eprintln!("error: {}", missing_message(bundle));
                }
            }
        }
    }
    let missing = outcomes.iter().any(|o| matches!(o, Outcome::Missing(_)));
    let passed = outcomes.iter().all(|o| match o {
        Outcome::Verified(r) => r.passed(),
        Outcome::Archive(_, reports) => reports
            .bundles
            .iter()
            .chain(&reports.submissions)
            .all(VerifyReport::passed),
        Outcome::Missing(_) => false,
    });
    Ok(if missing {
        ExitCode::from(2)
    } else if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `referee verify --rerun <bundle>`: re-runs it, prints the verdicts (or `--json`), and
/// with `--key` seals the result into a rerun bundle.
///
/// Errors: a usage error (not exactly one bundle), an unreadable key, a re-run that
/// cannot be made ([`RerunError`], except a bundle that does not verify: its report is
/// printed and the exit code is 1).
fn run_rerun(
    args: &VerifyArgs,
    keyring: &Keyring,
    options: VerifyOptions,
) -> anyhow::Result<ExitCode> {
    let [bundle] = args.bundles.as_slice() else {
        anyhow::bail!("--rerun re-runs one bundle, {} given", args.bundles.len());
    };
    let key = match &args.key {
        Some(path) => Some(
            PrivateKey::load(path)
                .with_context(|| format!("loading the key `{}`", path.display()))?,
        ),
        None => None,
    };
    let out = args.out.clone().unwrap_or_else(|| default_out(bundle));
    if key.is_some() && std::fs::symlink_metadata(&out).is_ok() {
        anyhow::bail!(RerunError::OutExists { path: out });
    }
    let rerun_options = RerunOptions {
        bundle: bundle.clone(),
        keyring,
        verify: options,
        baseline: args.baseline.clone(),
        entries: args.entries.clone(),
        engine_program: std::env::current_exe().context("locating the referee executable")?,
    };
    let progress = RerunProgress::new(!args.json);
    let result = rerun(&rerun_options, &progress);
    progress.finish();
    let rerun = match result {
        Ok(rerun) => rerun,
        Err(RerunError::Unverified { report, .. }) => {
            let mut out = std::io::stdout().lock();
            if args.json {
                let text = serde_json::to_string_pretty(&[JsonOutcome::from(report.as_ref())])?;
                writeln!(out, "{text}")?;
            } else {
                print_report(&mut out, &report)?;
                writeln!(out, "not re-run: the bundle does not verify")?;
            }
            return Ok(ExitCode::from(1));
        }
        Err(other) => {
            return Err(
                anyhow::Error::new(other).context(format!("re-running `{}`", bundle.display()))
            );
        }
    };
    let sealed = match &key {
        Some(key) => Some((
            write_bundle(&rerun, &out, key)
                .with_context(|| format!("writing the rerun bundle `{}`", out.display()))?,
            key.keyid().to_owned(),
        )),
        None => None,
    };
    let mut stdout = std::io::stdout().lock();
    if args.json {
        let json = RerunJson {
            bundle,
            verdict: rerun.record.verdict,
            exit_code: rerun.exit_code(),
            record: &rerun.record,
            rerun_bundle: sealed.as_ref().map(|_| out.as_path()),
            statement_digest: sealed.as_ref().map(|(s, _)| s.statement_digest.to_string()),
            signed_by: sealed.as_ref().map(|(_, keyid)| keyid.as_str()),
        };
        let text = serde_json::to_string_pretty(&json)?;
        writeln!(stdout, "{text}")?;
    } else {
        print_rerun(&mut stdout, bundle, &rerun.record)?;
        if let Some((sealed, keyid)) = &sealed {
            writeln!(
                stdout,
                "rerun bundle {}: statement sha256 {}, {} subjects, signed by {keyid}",
                out.display(),
                sealed.statement_digest,
                sealed.subjects
            )?;
        }
    }
    Ok(ExitCode::from(rerun.exit_code()))
}

/// `referee verify --rerun --json`: the verdict, the exit code, the rerun record and
/// the rerun bundle written, if any.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RerunJson<'a> {
    bundle: &'a Path,
    verdict: RerunVerdict,
    exit_code: u8,
    record: &'a RerunRecord,
    rerun_bundle: Option<&'a Path>,
    statement_digest: Option<String>,
    signed_by: Option<&'a str>,
}

/// A re-run for people: what was re-run, the tolerance, the round's and each entry's
/// verdict with what moved (old → new), then the overall verdict.
///
/// Errors: writing to `out` failed.
fn print_rerun(out: &mut impl Write, bundle: &Path, record: &RerunRecord) -> std::io::Result<()> {
    let original = &record.original;
    writeln!(
        out,
        "rerun of {}: round {} of `{}`, statement sha256 {}",
        bundle.display(),
        original.round,
        original.campaign.id,
        original.statement_digest
    )?;
    let tolerance = format_bp_percent(record.tolerance.tolerance_bp);
    match &record.tolerance.basis {
        ToleranceBasis::Noise {
            original_aa_spread_bp,
            rerun_aa_spread_bp,
            factor,
        } => writeln!(
            out,
            "  speed tolerance ±{tolerance}: {factor} × √(A/A spread² of the original, {}, + of the re-run, {})",
            format_bp_percent(*original_aa_spread_bp),
            format_bp_percent(*rerun_aa_spread_bp)
        )?,
        ToleranceBasis::DriftBound { .. } => writeln!(
            out,
            "  speed tolerance ±{tolerance}: the campaign's drift bound (a round measured no A/A spread: one run per entry, or fewer than 2 counted passes)"
        )?,
    }
    if let Some(cap) = record.tolerance.cap_bp
        && record.tolerance.tolerance_bp == u64::from(cap)
    {
        writeln!(
            out,
            "  capped at two thirds of the campaign's margin: a re-run never forgives a seat moved by a margin"
        )?;
    }
    if let Some(noise) = &record.noise {
        writeln!(out, "  re-run {}", format_noise(noise))?;
    }
    print_part(out, "round", &record.round)?;
    for entry in &record.entries {
        let name = match (&entry.miner, &entry.patch) {
            (Some(miner), Some(patch)) => {
                format!("{} {miner} {}", entry.role.as_str(), patch.short())
            }
            _ => entry.role.as_str().to_owned(),
        };
        print_part(out, &name, &entry.comparison)?;
        if let Some(rerun) = &entry.rerun {
            let score = |ppm: Option<i64>| ppm.map_or_else(|| "—".to_owned(), format_score_percent);
            writeln!(
                out,
                "      {} {} → {} {}",
                entry.original_status.as_str(),
                score(entry.original_score_ppm),
                rerun.status.as_str(),
                score(rerun.score_ppm)
            )?;
        }
    }
    let count = |v: RerunVerdict| {
        record
            .entries
            .iter()
            .filter(|e| e.comparison.verdict == v)
            .count()
    };
    let counts: Vec<String> = [
        RerunVerdict::Good,
        RerunVerdict::Noisy,
        RerunVerdict::Bad,
        RerunVerdict::Fail,
        RerunVerdict::Unkwn,
    ]
    .into_iter()
    .filter(|v| count(*v) > 0)
    .map(|v| format!("{} {v}", count(v)))
    .collect();
    writeln!(
        out,
        "result: {} ({} of {} entries)",
        record.verdict,
        counts.join(", "),
        record.entries.len()
    )
}

/// One part's verdict line, its reason (escaped: it may quote an engine's log) and each
/// finding, old → new.
fn print_part(out: &mut impl Write, name: &str, part: &Comparison) -> std::io::Result<()> {
    match &part.reason {
        Some(reason) => writeln!(
            out,
            "  {:<5} {name}: {}",
            part.verdict.as_str(),
            escape_untrusted(reason)
        )?,
        None => writeln!(out, "  {:<5} {name}", part.verdict.as_str())?,
    }
    for finding in &part.findings {
        let severity = match finding.severity {
            Severity::Bad => "moved",
            Severity::Noisy => "noisy",
        };
        writeln!(out, "      {severity}: {}", finding.check)?;
    }
    Ok(())
}

/// A re-run's progress on stderr, on a terminal only: a bar per entry (and per setup,
/// scorer and teardown group) counting its measured runs, with the step running now.
struct RerunProgress {
    multi: MultiProgress,
    bars: Mutex<Vec<(String, ProgressBar)>>,
}

impl RerunProgress {
    /// Drawn when `draw` and stderr is a terminal, else hidden.
    fn new(draw: bool) -> Self {
        let target = if draw && std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        Self {
            multi: MultiProgress::with_draw_target(target),
            bars: Mutex::new(Vec::new()),
        }
    }

    /// The bar of `group`, added below the others on its first step.
    fn bar(&self, group: &str) -> ProgressBar {
        let mut bars = self.bars.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, bar)) = bars.iter().find(|(g, _)| g == group) {
            return bar.clone();
        }
        let bar = self.multi.add(ProgressBar::new_spinner());
        // The round's own groups run no entry: no runs to count.
        let template = if matches!(group, "Setup" | "Scorer" | "Teardown") {
            "{spinner} {prefix:<44}          {wide_msg}"
        } else {
            "{spinner} {prefix:<44} {pos:>2} runs  {wide_msg}"
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style);
        }
        bar.set_prefix(group.to_owned());
        bar.enable_steady_tick(Duration::from_millis(200));
        bars.push((group.to_owned(), bar.clone()));
        bar
    }

    /// Clears every bar.
    fn finish(&self) {
        let bars = self.bars.lock().unwrap_or_else(|e| e.into_inner());
        for (_, bar) in bars.iter() {
            bar.finish_and_clear();
        }
    }
}

impl RoundProgress for RerunProgress {
    fn step_started(&self, _index: u32, group: &str, name: &str) {
        let step = name.strip_prefix(group).unwrap_or(name);
        self.bar(group)
            .set_message(step.trim_start_matches([',', ' ']).to_owned());
    }

    fn step_finished(&self, step: &Step) {
        let bar = self.bar(&step.group);
        if step.phase == Phase::RunningSla && step.status == StepStatus::Ok {
            bar.inc(1);
        }
        if step.status == StepStatus::Failed {
            bar.set_message(format!("failed: {}", step.name));
        }
    }
}

/// One path argument: a bundle, an archive of bundles (a progress bar on a terminal
/// unless `json`), or missing (not a directory, or a directory without any bundle).
///
/// Errors: a directory of the archive that cannot be read.
fn verify_path<'a>(
    path: &'a Path,
    keyring: &Keyring,
    options: &VerifyOptions,
    json: bool,
) -> anyhow::Result<Outcome<'a>> {
    if !path.is_dir() {
        return Ok(Outcome::Missing(path));
    }
    if path.join(ENVELOPE_FILE).is_file() {
        return Ok(Outcome::Verified(verify_bundle(path, keyring, options)));
    }
    let bundles = find_bundles(path)?;
    // A data directory's repository campaigns, whose records are checked even before
    // their first round.
    let data = receipts::layout::DataDir::new(path);
    let campaigns: Vec<PathBuf> = (data.campaign_ids()?.iter())
        .map(|id| data.campaign(id).root().to_path_buf())
        .filter(|dir| {
            dir.join(receipts::rules::repository::copy::COPY_DIR)
                .is_dir()
        })
        .collect();
    if bundles.is_empty() && campaigns.is_empty() {
        return Ok(Outcome::Missing(path));
    }
    let bar = if !json && std::io::stderr().is_terminal() {
        let bar = ProgressBar::new(bundles.len() as u64);
        if let Ok(style) = ProgressStyle::with_template("verifying {pos}/{len} bundles {wide_bar}")
        {
            bar.set_style(style);
        }
        bar
    } else {
        ProgressBar::hidden()
    };
    let reports = verify_data(&bundles, &campaigns, keyring, options, &|| bar.inc(1));
    bar.finish_and_clear();
    Ok(Outcome::Archive(path, reports))
}

/// Step 7, the transparency log, over each verified bundle (and archive), with the
/// checkpoint the verifier remembers for each log origin.
struct LogChecks {
    options: tlog::LogOptions,
    /// `--checkpoint` given: it is the known checkpoint, and nothing is remembered.
    explicit: bool,
    /// `<config>/referee/checkpoints/`, when a config directory is known.
    memory: Option<PathBuf>,
}

impl LogChecks {
    /// Errors: `--checkpoint` cannot be read.
    fn new(args: &VerifyArgs) -> anyhow::Result<Self> {
        let known = match &args.checkpoint {
            Some(path) => Some((
                read_limited(path, MAX_NOTE_BYTES)
                    .with_context(|| format!("reading --checkpoint `{}`", path.display()))?,
                format!("--checkpoint `{}`", path.display()),
            )),
            None => None,
        };
        Ok(Self {
            options: tlog::LogOptions {
                require: args.require_log,
                skip: args.no_log,
                log_dir: args.log.clone(),
                known,
            },
            explicit: args.checkpoint.is_some(),
            memory: receipts::layout::default_config_dir().map(|d| d.join("checkpoints")),
        })
    }

    /// `<memory>/<origin, other than [A-Za-z0-9.-] as `_`>.<log keyid, 16 hex>.checkpoint`:
    /// a log is its origin *and* its key (C2SP signed-note), so a log under another key
    /// that took the same name is another log, with nothing remembered. `None` when no
    /// config directory is known or the keyring has no `log` key for `origin`.
    fn remembered(&self, origin: &str, keyring: &Keyring) -> Option<PathBuf> {
        let key = (keyring.role_keys().iter())
            .find(|k| k.role == receipts::keys::KeyRole::Log && k.origin == origin)?;
        let keyid: String = key.trusted.key.keyid().chars().take(16).collect();
        let name: String = (origin.chars())
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        Some(
            self.memory
                .as_ref()?
                .join(format!("{name}.{keyid}.checkpoint")),
        )
    }

    /// The log checks of one bundle, against `--checkpoint` or the remembered checkpoint
    /// of its log; remembers the largest consistent checkpoint seen.
    ///
    /// Errors: the remembered checkpoint cannot be written.
    fn check_bundle(&self, report: &mut VerifyReport, keyring: &Keyring) -> anyhow::Result<()> {
        let dir = report.bundle.clone();
        let origin = receipts::layout::read_round_record(&dir)
            .ok()
            .and_then(|(record, _)| match record.transparency_log {
                Some(RoundLog::Logged { origin, .. }) => Some(origin),
                _ => None,
            });
        let memory = origin.as_deref().and_then(|o| self.remembered(o, keyring));
        let mut options = self.options.clone();
        if !self.explicit
            && let Some(path) = &memory
            && let Ok(bytes) = read_limited(path, MAX_NOTE_BYTES)
        {
            options.known = Some((bytes, format!("remembered `{}`", path.display())));
        }
        let newest = tlog::check_bundle_log(report, &dir, keyring, &options);
        if let (false, Some(path), Some(bytes)) = (self.explicit, &memory, newest) {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("creating `{}`", parent.display()))?;
            }
            write_atomic(path, &bytes, 0o644)
                .with_context(|| format!("remembering the checkpoint in `{}`", path.display()))?;
        }
        Ok(())
    }

    /// The log checks of a path's bundles; for an archive also its rounds against each
    /// whole log ([`tlog::check_archive_log`]), as one more report, for the log.
    ///
    /// Errors: as [`LogChecks::check_bundle`].
    fn check(&self, outcome: &mut Outcome<'_>, keyring: &Keyring) -> anyhow::Result<()> {
        match outcome {
            Outcome::Verified(report) => self.check_bundle(report, keyring),
            Outcome::Archive(_, reports) => {
                for report in reports.bundles.iter_mut() {
                    self.check_bundle(report, keyring)?;
                }
                let records: Vec<(PathBuf, tlog::LogLink)> = reports
                    .bundles
                    .iter()
                    .filter_map(|r| {
                        let (record, _) = receipts::layout::read_round_record(&r.bundle).ok()?;
                        Some((r.bundle.clone(), tlog::LogLink::of(&record)))
                    })
                    .collect();
                let mut by_log: BTreeMap<PathBuf, Vec<tlog::ArchiveRound<'_>>> = BTreeMap::new();
                for (bundle, record) in &records {
                    let dir = (self.options.log_dir.clone())
                        .or_else(|| tlog::default_log_dir(bundle))
                        .filter(|d| d.join("checkpoint").is_file());
                    if let Some(dir) = dir {
                        by_log
                            .entry(dir)
                            .or_default()
                            .push(tlog::ArchiveRound { bundle, record });
                    }
                }
                for (dir, rounds) in by_log {
                    let report =
                        tlog::check_archive_log(&dir, &rounds, keyring, self.options.require);
                    reports.bundles.push(report);
                }
                Ok(())
            }
            Outcome::Missing(_) => Ok(()),
        }
    }
}

/// `--threshold`: a count of at least 1 (0 would pass a bundle nobody signed).
fn parse_threshold(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err(
            "must be at least 1: a threshold of 0 would pass a bundle no trusted key signed"
                .to_owned(),
        ),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("not a count: {e}")),
    }
}

/// The keyring at `path`, or a keyring of the one key in a `.pub` file (a JSON object
/// rather than a keyring's array), valid from the epoch on; says on stderr which keyid
/// such a file makes trusted.
fn load_keyring(path: &Path) -> anyhow::Result<Keyring> {
    let is_pub = path.extension().is_some_and(|e| e == "pub")
        || std::fs::read(path).is_ok_and(|b| b.trim_ascii_start().first() == Some(&b'{'));
    if !is_pub {
        return Ok(Keyring::load(path)?);
    }
    let key = PublicKey::load(path)?;
    let keyid = key.keyid().to_owned();
    let mut keyring = Keyring::default();
    keyring.add(TrustedKey {
        key,
        valid_from: Timestamp::from_unix_seconds(0).context("the epoch")?,
        valid_until: None,
    })?;
    eprintln!(
        "trusting the single key {keyid} of `{}` (valid from the epoch on)",
        path.display()
    );
    Ok(keyring)
}

/// One path argument: a bundle verified, an archive's bundles verified, or missing.
enum Outcome<'a> {
    Verified(VerifyReport),
    Archive(&'a Path, DataReports),
    Missing(&'a Path),
}

fn missing_message(bundle: &Path) -> String {
    if bundle.is_dir() {
        format!(
            "`{}` holds no bundle (no `{ENVELOPE_FILE}` in it or under it)",
            bundle.display()
        )
    } else {
        format!("bundle `{}` is not a directory", bundle.display())
    }
}

/// One bundle in `--json` output: `passed` first, then the report's fields, or the bundle
/// and an `error` when it could not be verified.
#[derive(Serialize)]
#[serde(untagged)]
enum JsonOutcome<'a> {
    Verified {
        passed: bool,
        #[serde(flatten)]
        report: &'a VerifyReport,
    },
    Error {
        bundle: &'a Path,
        passed: bool,
        error: String,
    },
    /// A campaign's submission records: `submissions` names their directory.
    Records {
        passed: bool,
        submissions: &'a Path,
        checks: &'a [Check],
    },
}

impl<'a> JsonOutcome<'a> {
    /// The report of a campaign's submission records.
    fn records(report: &'a VerifyReport) -> Self {
        JsonOutcome::Records {
            passed: report.passed(),
            submissions: &report.bundle,
            checks: &report.checks,
        }
    }
}

impl<'a> From<&'a VerifyReport> for JsonOutcome<'a> {
    fn from(report: &'a VerifyReport) -> Self {
        JsonOutcome::Verified {
            passed: report.passed(),
            report,
        }
    }
}

/// The groups checks are shown in, in order.
const GROUPS: [&str; 9] = [
    "envelope",
    "files",
    "measurements",
    "correctness",
    "decision",
    "chain",
    "submissions",
    "log",
    "rerun",
];

/// The group of a check, by its name.
fn group(check: &Check) -> &'static str {
    let name = check.name.as_str();
    let prefix = name.split('.').next().unwrap_or(name);
    match prefix {
        "envelope" | "signature" | "statement" | "predicate" | "roundOpened" | "seeds" => {
            "envelope"
        }
        "subject" | "file" | "files" | "inputs" | "requestSequence" => "files",
        "probes" | "probe" | "run" | "entry" | "drift" | "hardware" => "measurements",
        "round" if name == "round.throughput" => "measurements",
        "correctness" | "decide" => "correctness",
        "chain" => "chain",
        "submissions" => "submissions",
        "log" => "log",
        "rerun" => "rerun",
        _ => "decision",
    }
}

/// One check as a line: `FAIL <name> <target>: <reason>` (or `n/a`).
fn check_line(out: &mut impl Write, check: &Check) -> std::io::Result<()> {
    let target = check
        .target
        .as_deref()
        .map(|t| format!(" {t}"))
        .unwrap_or_default();
    match (&check.reason, check.not_applicable) {
        (Some(reason), _) => writeln!(out, "  FAIL {}{target}: {reason}", check.name.as_str()),
        (None, Some(version)) => writeln!(
            out,
            "  n/a  {}{target}: not applicable ({version})",
            check.name.as_str()
        ),
        (None, None) => writeln!(out, "  FAIL {}{target}", check.name.as_str()),
    }
}

/// A bundle's report: its failures and not-applicable checks first, then one line per
/// group of checks, then the verdict (also what `referee demo` prints of its round).
///
/// Errors: writing to `out` failed.
pub(super) fn print_report(out: &mut impl Write, report: &VerifyReport) -> std::io::Result<()> {
    writeln!(out, "bundle {}", report.bundle.display())?;
    print_checks(out, report)?;
    if let Some(digest) = &report.statement_digest {
        writeln!(out, "  statement sha256 {digest}")?;
    }
    // A rerun bundle says which receipt it re-ran, once its checks vouch for it.
    if report.passed()
        && (report.predicate_type.as_deref()).is_some_and(|t| RERUN_PREDICATE_TYPES.contains(&t))
        && let Ok(rerun) = read_rerun_record(&report.bundle)
    {
        writeln!(
            out,
            "  re-ran round {} of `{}`, statement sha256 {}: {}",
            rerun.original.round,
            rerun.original.campaign.id,
            rerun.original.statement_digest,
            rerun.verdict
        )?;
    }
    if report.passed() {
        writeln!(out, "  signed by {}", report.signed_by.join(", "))?;
        writeln!(out, "result: PASS")?;
    } else {
        let failed = report.failures().count();
        writeln!(
            out,
            "result: FAIL ({failed} of {} checks failed)",
            report.checks.len()
        )?;
    }
    Ok(())
}

/// A report's failures (by group) and not-applicable checks, then one line per group of
/// checks.
///
/// Errors: writing to `out` failed.
fn print_checks(out: &mut impl Write, report: &VerifyReport) -> std::io::Result<()> {
    for group_name in GROUPS {
        for check in report.failures().filter(|c| group(c) == group_name) {
            check_line(out, check)?;
        }
    }
    for check in report.checks.iter().filter(|c| c.not_applicable.is_some()) {
        check_line(out, check)?;
    }
    for group_name in GROUPS {
        let checks: Vec<&Check> = report
            .checks
            .iter()
            .filter(|c| group(c) == group_name)
            .collect();
        if checks.is_empty() {
            continue;
        }
        let failed = checks
            .iter()
            .filter(|c| !c.passed && c.not_applicable.is_none())
            .count();
        let passed = checks.iter().filter(|c| c.passed).count();
        if failed == 0 {
            writeln!(out, "  ok   {group_name}: {passed} checks passed")?;
        } else {
            writeln!(
                out,
                "  FAIL {group_name}: {failed} of {} checks failed",
                checks.len()
            )?;
        }
    }
    Ok(())
}

/// A campaign's submission records that failed a check: the checks as for a bundle, then
/// the count (a passing one is a line in [`print_archive`]).
///
/// Errors: writing to `out` failed.
fn print_records(out: &mut impl Write, report: &VerifyReport) -> std::io::Result<()> {
    writeln!(out, "submissions {}", report.bundle.display())?;
    print_checks(out, report)?;
    writeln!(
        out,
        "result: FAIL ({} of {} checks failed)",
        report.failures().count(),
        report.checks.len()
    )
}

/// An archive: each failed bundle's report, a line per passed bundle, each campaign's
/// submission records (a line when they pass), then `N verified, M failed`, the same for
/// the submission records, the failed checks with the bundles (or `submissions/`
/// directories) they failed in, and the verdict.
fn print_archive(out: &mut impl Write, root: &Path, reports: &DataReports) -> std::io::Result<()> {
    for report in &reports.bundles {
        if report.passed() {
            writeln!(out, "bundle {}: PASS", report.bundle.display())?;
        } else {
            print_report(out, report)?;
        }
    }
    for report in &reports.submissions {
        if report.passed() {
            let records = report
                .checks
                .iter()
                .filter(|c| c.name == CheckName::SubmissionRecord)
                .count();
            writeln!(
                out,
                "submissions {}: PASS ({records} records)",
                report.bundle.display()
            )?;
        } else {
            print_records(out, report)?;
        }
    }
    let summary = ArchiveSummary::of(&reports.bundles);
    writeln!(
        out,
        "archive {}: {} verified, {} failed",
        root.display(),
        summary.verified,
        summary.failed
    )?;
    let records = ArchiveSummary::of(&reports.submissions);
    if !reports.submissions.is_empty() {
        let campaigns = if reports.submissions.len() == 1 {
            "1 campaign".to_owned()
        } else {
            format!("{} campaigns", reports.submissions.len())
        };
        writeln!(
            out,
            "submission records of {campaigns}: {} verified, {} failed",
            records.verified, records.failed
        )?;
    }
    let mut failures = summary.failures_by_check;
    failures.extend(records.failures_by_check);
    for (check, bundles) in &failures {
        let names: Vec<String> = bundles.iter().map(|b| b.display().to_string()).collect();
        writeln!(out, "  {check} failed in {}", names.join(", "))?;
    }
    match (summary.failed, records.failed) {
        (0, 0) => writeln!(out, "result: PASS"),
        (bundles, 0) => writeln!(
            out,
            "result: FAIL ({bundles} of {} bundles failed)",
            reports.bundles.len()
        ),
        (0, campaigns) => writeln!(
            out,
            "result: FAIL (the submission records of {campaigns} of {} campaigns failed)",
            reports.submissions.len()
        ),
        (bundles, campaigns) => writeln!(
            out,
            "result: FAIL ({bundles} of {} bundles failed; the submission records of {campaigns} of {} campaigns failed)",
            reports.bundles.len(),
            reports.submissions.len()
        ),
    }
}
