//! `referee verify <bundle>... --keyring <file>`: run RECEIPTS.md §Verification checks 1–6
//! on each bundle and print every check. Exit 0 when all pass, 1 when a check failed, 2 on
//! a usage or I/O error (from `main`).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use receipts::keys::Keyring;
use receipts::model::Timestamp;
use receipts::verify::{VerifyOptions, VerifyReport, verify_bundle};

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
    /// Print the reports as JSON (an array, one report per bundle).
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
    for bundle in &args.bundles {
        if !bundle.is_dir() {
            anyhow::bail!("bundle `{}` is not a directory", bundle.display());
        }
    }
    let mut options = VerifyOptions::at(args.at.unwrap_or_else(Timestamp::now));
    options.threshold = args.threshold;
    options.expected_predicate_type = args.predicate_type;
    let reports: Vec<VerifyReport> = args
        .bundles
        .iter()
        .map(|bundle| verify_bundle(bundle, &keyring, &options))
        .collect();
    let mut out = std::io::stdout().lock();
    if args.json {
        // Serialize first so a closed stdout surfaces as an io::Error (a broken pipe is
        // not a failure, see `main`).
        let text = serde_json::to_string_pretty(&reports)?;
        writeln!(out, "{text}")?;
    } else {
        for report in &reports {
            print_report(&mut out, report)?;
        }
    }
    Ok(if reports.iter().all(VerifyReport::passed) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn print_report(out: &mut impl Write, report: &VerifyReport) -> std::io::Result<()> {
    writeln!(out, "bundle {}", report.bundle.display())?;
    for check in &report.checks {
        let status = if check.passed { "ok  " } else { "FAIL" };
        let target = check
            .target
            .as_deref()
            .map(|t| format!(" {t}"))
            .unwrap_or_default();
        match &check.reason {
            Some(reason) => writeln!(out, "  {status} {}{target}: {reason}", check.name.as_str())?,
            None => writeln!(out, "  {status} {}{target}", check.name.as_str())?,
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
