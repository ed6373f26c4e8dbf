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

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::Serialize;

use anyhow::Context;
use receipts::keys::{Keyring, PublicKey, TrustedKey};
use receipts::model::Timestamp;
use receipts::verify::{VerifyOptions, VerifyReport};
use verifier::verify_bundle;

use super::DataArgs;

/// Exit codes of `referee verify`, shown in its `--help`.
pub const VERIFY_EXIT_CODES: &str = "Exit status: 0 when every check of every bundle passed; 1 when a \
check failed; 2 when a bundle is missing, or on a usage or I/O error (e.g. an unreadable keyring).";

/// Arguments of `referee verify`.
#[derive(clap::Args, Debug)]
#[command(after_help = VERIFY_EXIT_CODES)]
pub struct VerifyArgs {
    /// Bundle directories (each holding `receipt.dsse.json`).
    #[arg(required = true)]
    pub bundles: Vec<PathBuf>,
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
    let outcomes: Vec<Outcome<'_>> = args
        .bundles
        .iter()
        .map(|bundle| {
            if bundle.is_dir() {
                Outcome::Verified(verify_bundle(bundle, &keyring, &options))
            } else {
                Outcome::Missing(bundle)
            }
        })
        .collect();
    let mut out = std::io::stdout().lock();
    if args.json {
        let json: Vec<JsonOutcome<'_>> = outcomes.iter().map(JsonOutcome::from).collect();
        // Serialize first so a closed stdout surfaces as an io::Error (a broken pipe is
        // not a failure, see `main`).
        let text = serde_json::to_string_pretty(&json)?;
        writeln!(out, "{text}")?;
    } else {
        for outcome in &outcomes {
            match outcome {
                Outcome::Verified(report) => print_report(&mut out, report)?,
                Outcome::Missing(bundle) => {
                    writeln!(out, "bundle {}", bundle.display())?;
                    writeln!(out, "result: ERROR ({})", missing_message(bundle))?;
                    eprintln!("error: {}", missing_message(bundle));
                }
            }
        }
    }
    let missing = outcomes.iter().any(|o| matches!(o, Outcome::Missing(_)));
    let passed = outcomes
        .iter()
        .all(|o| matches!(o, Outcome::Verified(r) if r.passed()));
    Ok(if missing {
        ExitCode::from(2)
    } else if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
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

/// One bundle argument: verified, or not a directory.
enum Outcome<'a> {
    Verified(VerifyReport),
    Missing(&'a Path),
}

fn missing_message(bundle: &Path) -> String {
    format!("bundle `{}` is not a directory", bundle.display())
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

impl<'a> From<&'a Outcome<'a>> for JsonOutcome<'a> {
    fn from(outcome: &'a Outcome<'a>) -> Self {
        match outcome {
            Outcome::Verified(report) => JsonOutcome::Verified {
                passed: report.passed(),
                report,
            },
            Outcome::Missing(bundle) => JsonOutcome::Error {
                bundle,
                passed: false,
                error: missing_message(bundle),
            },
        }
    }
}

fn print_report(out: &mut impl Write, report: &VerifyReport) -> std::io::Result<()> {
    writeln!(out, "bundle {}", report.bundle.display())?;
    for check in &report.checks {
        let status = match (check.passed, check.not_applicable) {
            (true, _) => "ok  ",
            (false, Some(_)) => "n/a ",
            (false, None) => "FAIL",
        };
        let target = check
            .target
            .as_deref()
            .map(|t| format!(" {t}"))
            .unwrap_or_default();
        match (&check.reason, check.not_applicable) {
            (Some(reason), _) => {
                writeln!(out, "  {status} {}{target}: {reason}", check.name.as_str())?
            }
            (None, Some(version)) => writeln!(
                out,
                "  {status} {}{target}: not applicable ({version})",
                check.name.as_str()
            )?,
            (None, None) => writeln!(out, "  {status} {}{target}", check.name.as_str())?,
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
