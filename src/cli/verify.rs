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
//! parallel, the rounds of each `rounds/` directory also as a chain, a progress bar on a
//! terminal, then `N verified, M failed` and the failures grouped by check. `--campaign
//! <id>` verifies `<data>/<id>/rounds` so. For people, each bundle's failures come first
//! (with the recomputed and the claimed value), then one line per group of checks
//! (envelope, files, measurements, correctness, decision, chain), then the verdict.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use std::io::IsTerminal;

use serde::Serialize;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use receipts::bundle::ENVELOPE_FILE;
use receipts::keys::{Keyring, PublicKey, TrustedKey};
use receipts::model::Timestamp;
use receipts::verify::{Check, VerifyOptions, VerifyReport};
use verifier::archive::{ArchiveSummary, find_bundles, verify_archive};
use verifier::verify_bundle;

use super::DataArgs;

/// Exit codes of `referee verify`, shown in its `--help`.
pub const VERIFY_EXIT_CODES: &str = "Exit status: 0 when every check of every bundle passed; 1 when a \
check failed; 2 when a bundle is missing, or on a usage or I/O error (e.g. an unreadable keyring).";

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
    /// each with a `passed` boolean, and either the report's fields or an `error`.
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
}

/// Verifies every bundle and prints the reports.
pub fn run(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let keyring_path = args
        .keyring
        .unwrap_or_else(|| args.data.data.join("keyring.json"));
    let keyring = load_keyring(&keyring_path)?;
    let mut options = VerifyOptions::at(args.at.unwrap_or_else(Timestamp::now));
    options.threshold = args.threshold;
    options.expected_predicate_type = args.predicate_type;
    options.foreign = args.foreign;
    let mut paths = args.bundles.clone();
    if let Some(campaign) = &args.campaign {
        paths.push(args.data.data.join(campaign).join("rounds"));
    }
    let mut outcomes = Vec::new();
    for path in &paths {
        outcomes.push(verify_path(path, &keyring, &options, args.json)?);
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        let json: Vec<JsonOutcome<'_>> = outcomes
            .iter()
            .flat_map(|o| match o {
                Outcome::Verified(report) => vec![JsonOutcome::from(report)],
                Outcome::Archive(_, reports) => reports.iter().map(JsonOutcome::from).collect(),
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
        Outcome::Archive(_, reports) => reports.iter().all(VerifyReport::passed),
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
    if bundles.is_empty() {
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
    let reports = verify_archive(&bundles, keyring, options, &|| bar.inc(1));
    bar.finish_and_clear();
    Ok(Outcome::Archive(path, reports))
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
    Archive(&'a Path, Vec<VerifyReport>),
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
const GROUPS: [&str; 6] = [
    "envelope",
    "files",
    "measurements",
    "correctness",
    "decision",
    "chain",
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
        "correctness" => "correctness",
        "chain" => "chain",
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
    if let Some(digest) = &report.statement_digest {
        writeln!(out, "  statement sha256 {digest}")?;
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

/// An archive: each failed bundle's report, a line per passed bundle, then `N verified,
/// M failed`, the failed checks with the bundles they failed in, and the verdict.
fn print_archive(
    out: &mut impl Write,
    root: &Path,
    reports: &[VerifyReport],
) -> std::io::Result<()> {
    for report in reports {
        if report.passed() {
            writeln!(out, "bundle {}: PASS", report.bundle.display())?;
        } else {
            print_report(out, report)?;
        }
    }
    let summary = ArchiveSummary::of(reports);
    writeln!(
        out,
        "archive {}: {} verified, {} failed",
        root.display(),
        summary.verified,
        summary.failed
    )?;
    for (check, bundles) in &summary.failures_by_check {
        let names: Vec<String> = bundles.iter().map(|b| b.display().to_string()).collect();
        writeln!(out, "  {check} failed in {}", names.join(", "))?;
    }
    if summary.failed == 0 {
        writeln!(out, "result: PASS")
    } else {
        writeln!(
            out,
            "result: FAIL ({} of {} bundles failed)",
            summary.failed,
            reports.len()
        )
    }
}
