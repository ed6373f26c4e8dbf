//! `referee verify <bundle>... --keyring <file>`: run RECEIPTS.md §Verification checks 1–6
//! (and, for a round bundle, the round's own consistency checks) on each bundle and print
//! every check. Exit 0 when all pass, 1 when a check failed, 2 when a bundle is missing or
//! on a usage or I/O error. A missing bundle does not stop the others: with `--json` it is
//! an object with an `error` field in the array.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::Serialize;

use receipts::keys::Keyring;
use receipts::model::Timestamp;
use receipts::verify::{VerifyOptions, VerifyReport};
use verifier::verify_bundle;

use super::DataArgs;

/// Arguments of `referee verify`.
#[derive(clap::Args, Debug)]
pub struct VerifyArgs {
    /// Bundle directories (each holding `receipt.dsse.json`).
    #[arg(required = true)]
    pub bundles: Vec<PathBuf>,
    /// Trusted keys; default `<data>/keyring.json`.
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
    /// Distinct trusted keys that must have signed.
    #[arg(long, default_value_t = 1)]
    pub threshold: usize,
    /// Require this predicateType.
    #[arg(long)]
    pub predicate_type: Option<String>,
}

/// Verifies every bundle and prints the reports.
pub fn run(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let keyring_path = args
        .keyring
        .unwrap_or_else(|| args.data.data.join("keyring.json"));
    let keyring = Keyring::load(&keyring_path)?;
    let mut options = VerifyOptions::at(args.at.unwrap_or_else(Timestamp::now));
    options.threshold = args.threshold;
    options.expected_predicate_type = args.predicate_type;
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
