//! `referee review <dir>`: the review of a submission's tree before anything of it runs
//! (content/review.md): the static rules, the LLM review when a command is named, and the
//! combined verdict as the exit status.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

mod resolve;

use ::review::llm::{CommandReviewer, LlmReviewer};
use ::review::{ReviewInput, RuleSet, Verdict, WeightFile};
use anyhow::Context;
use receipts::text::escape_untrusted;

/// Exit codes of `referee review`, shown in its `--help`.
pub const REVIEW_EXIT_CODES: &str = "Exit status: 0 when the verdict is PASS; 1 when it is FAIL; 3 when it is NEEDS-HUMAN; 2 on a usage or I/O error, an invalid rules file, or an LLM review command that gives no verdict. With --resolve: 0 when the decision is recorded and logged (the submission queued or rejected); 2 when it is refused (the submission does not wait for a person, the data directory has no log) or on an I/O error.";

/// The most bytes a rules file given with `--rules` may have.
const MAX_RULES_BYTES: usize = 1 << 20;

/// Arguments of `referee review`.
#[derive(clap::Args, Debug)]
#[command(after_help = REVIEW_EXIT_CODES)]
pub struct ReviewArgs {
    /// The submission's tree (the repository at its pinned commit). Not with `--resolve`.
    #[arg(required_unless_present = "resolve", conflicts_with = "resolve")]
    pub dir: Option<PathBuf>,
    /// Record a person's decision on the NEEDS-HUMAN review of this repository
    /// submission (its sha256, or a prefix of at least 4 characters) of `--campaign`:
    /// signed with the evaluator key and logged as a `review-resolution` statement.
    #[arg(long, value_name = "SUBMISSION", requires_all = ["verdict", "reason", "campaign"])]
    pub resolve: Option<String>,
    #[command(flatten)]
    pub resolution: resolve::ResolveArgs,
    /// A rules file to review with instead of the built-in `rules/v1.toml`.
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
    /// A shell command for the LLM review: it gets the tree as its last argument and the
    /// static findings as JSON on stdin, and prints its verdict on its first line.
    #[arg(long, value_name = "CMD")]
    pub llm_command: Option<String>,
    /// A weights file of the manifest, `PATH=SHA256` (repeatable): no rule reads it.
    #[arg(long = "weight", value_name = "PATH=SHA256", value_parser = parse_weight)]
    pub weights: Vec<WeightFile>,
    /// A marker of the campaign's benchmark (its id, a workload file's name; repeatable).
    #[arg(long = "marker", value_name = "TEXT")]
    pub markers: Vec<String>,
    /// Print the review as JSON (findings, rules digest, LLM review, verdict).
    #[arg(long)]
    pub json: bool,
}

fn parse_weight(s: &str) -> Result<WeightFile, String> {
    let (path, sha256) = s
        .rsplit_once('=')
        .ok_or_else(|| format!("`{s}` is not PATH=SHA256"))?;
    Ok(WeightFile {
        path: path.to_owned(),
        sha256: sha256
            .parse()
            .map_err(|_| format!("`{sha256}` is not 64 lowercase hex characters"))?,
    })
}

fn load_rules(path: Option<&PathBuf>) -> anyhow::Result<RuleSet> {
    let Some(path) = path else {
        return Ok(RuleSet::builtin()?);
    };
    let bytes = receipts::fsutil::read_limited(path, MAX_RULES_BYTES)
        .with_context(|| format!("reading rules file `{}`", path.display()))?;
    if bytes.len() > MAX_RULES_BYTES {
        anyhow::bail!(
            "rules file `{}` is over {MAX_RULES_BYTES} bytes",
            path.display()
        );
    }
    let text = String::from_utf8(bytes)
        .with_context(|| format!("rules file `{}` is not UTF-8", path.display()))?;
    RuleSet::parse(&text).with_context(|| format!("rules file `{}`", path.display()))
}

/// Reviews the tree, prints the findings and the verdict, and exits with the verdict's
/// code ([`REVIEW_EXIT_CODES`]).
pub fn run(args: ReviewArgs) -> anyhow::Result<ExitCode> {
    if let Some(submission) = &args.resolve {
        return resolve::run(submission, &args.resolution);
    }
    let Some(dir) = args.dir else {
        anyhow::bail!("give a tree to review, or --resolve SUBMISSION");
    };
    if !dir.is_dir() {
        anyhow::bail!("`{}` is not a directory", dir.display());
    }
    let rules = load_rules(args.rules.as_ref())?;
    let input = ReviewInput {
        root: dir.clone(),
        weights: args.weights,
        derived_from: None,
        campaign_markers: args.markers,
    };
    let reviewer = args.llm_command.map(CommandReviewer::new);
    let review = ::review::review(
        &input,
        &rules,
        reviewer.as_ref().map(|r| r as &dyn LlmReviewer),
    )
    .with_context(|| format!("reviewing `{}`", dir.display()))?;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&review)?)?;
    } else {
        let s = &review.static_review;
        writeln!(out, "rules v{} sha256 {}", s.rules_version, s.rules_digest)?;
        for finding in &s.findings {
            let place = match finding.line {
                Some(line) => format!("{}:{line}", finding.file),
                None => finding.file.clone(),
            };
            writeln!(
                out,
                "{:<12} {:<26} {}  {}",
                Verdict::of_severity(finding.severity).as_str(),
                finding.rule,
                escape_untrusted(&place),
                escape_untrusted(&finding.detail)
            )?;
        }
        writeln!(
            out,
            "static {} ({} findings)",
            s.verdict.as_str(),
            s.findings.len()
        )?;
        if let Some(llm) = &review.llm {
            writeln!(
                out,
                "llm {} (command `{}`, transcript sha256 {})",
                llm.verdict.as_str(),
                llm.command,
                llm.transcript_sha256
            )?;
        }
        writeln!(out, "verdict {}", review.verdict.as_str())?;
    }
    Ok(ExitCode::from(exit_status(review.verdict)))
}

/// The exit status of a verdict: 0 `PASS`, 1 `FAIL`, 3 `NEEDS-HUMAN` (2 is an error's).
fn exit_status(verdict: Verdict) -> u8 {
    match verdict {
        Verdict::Pass => 0,
        Verdict::Fail => 1,
        Verdict::NeedsHuman => 3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_verdict_has_its_own_exit_status_apart_from_errors() {
        assert_eq!(exit_status(Verdict::Pass), 0);
        assert_eq!(exit_status(Verdict::Fail), 1);
        assert_eq!(exit_status(Verdict::NeedsHuman), 3);
    }

    #[test]
    fn weights_are_path_equals_digest() {
        let digest = "ab".repeat(32);
        let weight = parse_weight(&format!("w/a=b.safetensors={digest}")).expect("parses");
        assert_eq!(weight.path, "w/a=b.safetensors");
        assert_eq!(weight.sha256.as_str(), digest);
        assert_eq!(
            parse_weight("model.bin").unwrap_err(),
            "`model.bin` is not PATH=SHA256"
        );
        assert_eq!(
            parse_weight("m=XY").unwrap_err(),
            "`XY` is not 64 lowercase hex characters"
        );
    }
}
