//! `referee ingest` and `referee status`: run a submitted diff through the gates, and
//! show submissions with their event logs (content/submitting.md).
//!
//! Untrusted text. A recorded reason quotes diff paths (and engine messages) as the diff
//! has them, and a miner id comes from outside: the text output shows every such field
//! through `receipts::text::escape_untrusted`, so a path with ESC, CR or an invisible
//! code point cannot rewrite the terminal or read as another; `--json` prints the records
//! raw (JSON-escaped by serde).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use intake::gates::BuiltinBuilder;
use intake::ingest::{IngestOutcome, find_submission, ingest_reader};
use intake::statements::StatementLog;
use intake::tlog::{LogError, LogStore};
use receipts::keys::PrivateKey;
use receipts::layout::DataDir;
use receipts::layout::{CampaignDir, read_round_record};
use receipts::model::{
    CampaignId, Entry, EventKind, MinerId, PipelineState, RoundRecord, Sha256Hex, Submission,
    Timestamp,
};
use receipts::text::escape_untrusted;

use super::log::LOG_KEY;
use super::{DataArgs, KeyDirArgs};
use verifier::view::{format_gate, format_milli_rps, format_score_percent};

/// Exit codes of `referee ingest`, shown in its `--help`.
pub const INGEST_EXIT_CODES: &str = "Exit status: 0 when the submission is queued for a round (or is a \
duplicate of one already submitted, recorded as an event and skipped); 1 when the gates \
rejected it (the reason is printed); 2 on a usage or I/O error.";

/// Exit codes of `referee status`, shown in its `--help`.
pub const STATUS_EXIT_CODES: &str =
    "Exit status: 0 when the submissions were listed; 2 on a usage or I/O error.";

/// Arguments of `referee ingest`.
#[derive(clap::Args, Debug)]
#[command(after_help = INGEST_EXIT_CODES)]
pub struct IngestArgs {
    /// The diff file, exactly as the miner committed it. At most one byte more than the
    /// campaign's `surface.max_diff_bytes` is read: a larger diff is rejected unread and
    /// nothing of it is stored. Not with `--repository`.
    #[arg(required_unless_present = "repository", conflicts_with = "repository")]
    pub patch: Option<PathBuf>,
    /// The miner (hotkey) whose commitment this is.
    #[arg(long)]
    pub miner: MinerId,
    /// The sha256 the miner published (64 lowercase hex characters); a diff's.
    #[arg(
        long,
        required_unless_present = "repository",
        conflicts_with = "repository"
    )]
    pub commitment: Option<Sha256Hex>,
    /// A repository campaign's commitment, `<repository URL>@<40-hex commit>` (at most
    /// 128 bytes; an `https://` URL in the Hugging Face layout `<base>/<org>/<name>`, a
    /// local path or a `file://` URL: content/repository-submissions.md).
    #[arg(long, value_name = "URL@COMMIT", requires = "committed_at")]
    pub repository: Option<String>,
    /// When the repository commitment was made (its block's time, RFC 3339 UTC): the
    /// earlier commitment wins a tie, and the per-coldkey rate limits count by it.
    #[arg(long, value_name = "TIME")]
    pub committed_at: Option<Timestamp>,
    /// A PEM file of the CA certificates an `https://` repository's server is checked
    /// against (by git and by the LFS client) instead of the system's roots. Only with
    /// `--repository`.
    #[arg(long, value_name = "PEM", requires = "repository")]
    pub ca_file: Option<PathBuf>,
    /// The campaign id.
    #[arg(long)]
    pub campaign: CampaignId,
    /// Print the submission record as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub data: DataArgs,
    #[command(flatten)]
    pub keys: StatementKeyArgs,
}

/// The keys that log statements when the data directory has a transparency log
/// (content/transparency-log.md, Entry kinds): the evaluator key signs them, the log key
/// appends their entries.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct StatementKeyArgs {
    /// The evaluator's private key that signs what is logged; default
    /// `<key-dir>/evaluator.key`. Read only when the data directory has a log.
    #[arg(long)]
    pub key: Option<PathBuf>,
    /// The log key; default `<key-dir>/log.key`. Read only when the data directory has a
    /// log.
    #[arg(long)]
    pub log_key: Option<PathBuf>,
    #[command(flatten)]
    pub key_dir: KeyDirArgs,
}

/// The data directory's log and the two keys that log statements into it; `None` when
/// the data directory has no log.
pub struct StatementKeys {
    store: LogStore,
    evaluator: PrivateKey,
    log_key: PrivateKey,
}

impl StatementKeys {
    /// Opens the log of `data` and loads the keys `args` name.
    ///
    /// Errors: a log that does not open; a key that is missing or is not the log's.
    pub fn open(data: &Path, args: &StatementKeyArgs) -> anyhow::Result<Option<Self>> {
        let store = match LogStore::open(data) {
            Ok(store) => store,
            Err(LogError::NoLog { .. }) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let evaluator_path = match &args.key {
            Some(path) => path.clone(),
            None => args.key_dir.evaluator_key()?,
        };
        let log_path = match &args.log_key {
            Some(path) => path.clone(),
            None => args.key_dir.resolve()?.join(format!("{LOG_KEY}.key")),
        };
        let load = |path: &Path, what: &str| {
            PrivateKey::load(path).with_context(|| {
                format!(
                    "the data directory has a transparency log, so what is ingested is logged: loading the {what} `{}`",
                    path.display()
                )
            })
        };
        Ok(Some(Self {
            evaluator: load(&evaluator_path, "evaluator key")?,
            log_key: load(&log_path, "log key")?,
            store,
        }))
    }

    /// The statement log these keys sign and append with, to log a statement of any kind.
    ///
    /// Errors: the log key is not the log's.
    pub fn statement_log(&self) -> anyhow::Result<StatementLog<'_>> {
        Ok(StatementLog::new(
            &self.store,
            &self.evaluator,
            &self.log_key,
        )?)
    }

    /// Logs `submission`'s commitments and its rejection ([`StatementLog::log_submission`]).
    ///
    /// Errors: the log's or the statement file's.
    pub fn log_submission(
        &self,
        campaign_dir: &CampaignDir,
        submission: &Submission,
    ) -> anyhow::Result<()> {
        StatementLog::new(&self.store, &self.evaluator, &self.log_key)?
            .log_submission(campaign_dir, submission)
            .with_context(|| format!("logging submission {}", submission.sha256))?;
        Ok(())
    }
}

/// Arguments of `referee status`.
#[derive(clap::Args, Debug)]
#[command(after_help = STATUS_EXIT_CODES)]
pub struct StatusArgs {
    /// A submission's sha256 (or a prefix of at least 4 characters): print its event
    /// log. Without it, list every submission.
    pub hash: Option<String>,
    /// The campaign id.
    #[arg(long)]
    pub campaign: CampaignId,
    /// Print JSON (the record, or an array of records).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub data: DataArgs,
}

pub fn run_ingest(args: IngestArgs) -> anyhow::Result<ExitCode> {
    if let (Some(commitment), Some(at)) = (&args.repository, args.committed_at) {
        return super::repository::run_ingest_repository(&args, commitment, at);
    }
    let (Some(patch), Some(commitment)) = (&args.patch, &args.commitment) else {
        anyhow::bail!("give a diff file and --commitment, or --repository and --committed-at");
    };
    let mut file =
        std::fs::File::open(patch).with_context(|| format!("opening `{}`", patch.display()))?;
    let campaign_dir = DataDir::new(&args.data.data).campaign(&args.campaign);
    let statements = StatementKeys::open(&args.data.data, &args.keys)?;
    let outcome = ingest_reader(
        &campaign_dir,
        &mut file,
        &args.miner,
        commitment,
        &BuiltinBuilder,
    )
    .with_context(|| format!("ingesting `{}`", patch.display()))?;
    let submission = outcome.submission();
    if let Some(statements) = &statements {
        statements.log_submission(&campaign_dir, submission)?;
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, submission)?;
        writeln!(out)?;
    } else {
        if let IngestOutcome::Duplicate(_) = outcome {
            writeln!(
                out,
                "duplicate of {} (first committed by `{}`): recorded as an event, skipped",
                submission.sha256,
                escape_untrusted(submission.miner.as_str())
            )?;
        }
        print_log(&mut out, submission)?;
        if submission.state == PipelineState::Building {
            writeln!(
                out,
                "its image is built by the build worker: run `referee build --campaign {}`",
                args.campaign
            )?;
        }
    }
    // A duplicate changes nothing: the first submission keeps its state, so it exits 0.
    Ok(match outcome {
        IngestOutcome::New(s) if s.state == PipelineState::Rejected => ExitCode::from(1),
        _ => ExitCode::SUCCESS,
    })
}

pub fn run_status(args: StatusArgs) -> anyhow::Result<ExitCode> {
    let campaign_dir = DataDir::new(&args.data.data).campaign(&args.campaign);
    campaign_dir.load_campaign()?;
    let mut out = std::io::stdout().lock();
    if let Some(hash) = &args.hash {
        let submission = find_submission(&campaign_dir, hash)?;
        if args.json {
            serde_json::to_writer_pretty(&mut out, &submission)?;
            writeln!(out)?;
        } else {
            let rounds = Rounds::load(&campaign_dir)?;
            print_log(&mut out, &submission)?;
            writeln!(out, "  {}", rounds.facts(&submission.sha256).sentence())?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let submissions = campaign_dir.list_submissions()?;
    if args.json {
        serde_json::to_writer_pretty(&mut out, &submissions)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let rounds = Rounds::load(&campaign_dir)?;
    writeln!(
        out,
        "{:<13}  {:<16}  {:<14}  {:<6}  {:<5}  {:<8}  {:<14}  last reason",
        "submission", "miner", "state", "leader", "round", "score", "throughput"
    )?;
    for s in &submissions {
        let facts = rounds.facts(&s.sha256);
        writeln!(
            out,
            "{:<13}  {:<16}  {:<14}  {:<6}  {:<5}  {:<8}  {:<14}  {}",
            s.sha256.short(),
            escape_untrusted(s.miner.as_str()),
            s.state.as_str(),
            if facts.leader { "yes" } else { "—" },
            facts.round.map_or("—".to_owned(), |n| n.to_string()),
            facts.score(),
            facts.throughput(),
            escape_untrusted(&peoples_units(s.last_reason().unwrap_or_default()))
        )?;
    }
    for line in super::due::status_lines(&DataDir::new(&args.data.data), &args.campaign)? {
        writeln!(out, "{line}")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A recorded reason in people's units, as the round table shows them: `509900 ppm` →
/// `+50.99 %`, `31035 milli-req/s` → `31.035 req/s`. Other words are left as they are.
fn peoples_units(reason: &str) -> String {
    let words: Vec<&str> = reason.split(' ').collect();
    let mut out: Vec<String> = Vec::with_capacity(words.len());
    let mut i = 0;
    while i < words.len() {
        let word = words[i];
        let next = words.get(i + 1).copied().unwrap_or("");
        let open = if word.starts_with('(') { "(" } else { "" };
        let number = &word[open.len()..];
        let converted = if let Some(rest) = next.strip_prefix("ppm") {
            number
                .parse::<i64>()
                .ok()
                .map(|ppm| format!("{open}{}{rest}", format_score_percent(ppm)))
        } else if let Some(rest) = next.strip_prefix("milli-req/s") {
            number
                .parse::<u64>()
                .ok()
                .map(|milli| format!("{open}{}{rest}", format_milli_rps(milli)))
        } else {
            None
        };
        match converted {
            Some(text) => {
                out.push(text);
                i += 2;
            }
            None => {
                out.push(word.to_owned());
                i += 1;
            }
        }
    }
    out.join(" ")
}

/// The campaign's sealed rounds, oldest first, as far as they can be read (a bundle that
/// does not parse is left out of `status`; `referee show` and `verify` say why).
struct Rounds(Vec<RoundRecord>);

/// What the sealed rounds say about one submission.
struct SubmissionFacts<'a> {
    /// Whether it holds the seat after the last sealed round.
    leader: bool,
    /// When it took the seat it holds: the latest round whose seat changed to it, and
    /// when that round settled.
    seated: Option<(u64, Timestamp)>,
    /// The latest round it ran in.
    round: Option<u64>,
    /// Its entry in that round.
    entry: Option<&'a Entry>,
}

impl Rounds {
    fn load(campaign_dir: &CampaignDir) -> anyhow::Result<Self> {
        let mut records = Vec::new();
        for n in campaign_dir.round_numbers()? {
            match read_round_record(&campaign_dir.round_dir(n)) {
                Ok((record, _)) => records.push(record),
                Err(err) => tracing::warn!("round {n} left out: {err}"),
            }
        }
        Ok(Self(records))
    }

    fn facts(&self, sha256: &Sha256Hex) -> SubmissionFacts<'_> {
        let leader = self.0.last().is_some_and(|r| {
            r.outcome
                .leader_after
                .as_ref()
                .is_some_and(|l| &l.patch == sha256)
        });
        let latest = self.0.iter().rev().find_map(|r| {
            r.entries
                .iter()
                .rev()
                .find(|e| e.patch.as_ref() == Some(sha256))
                .map(|e| (r.round, e))
        });
        let seated = leader
            .then(|| {
                self.0.iter().rev().find(|r| {
                    r.outcome.changed
                        && r.outcome
                            .leader_after
                            .as_ref()
                            .is_some_and(|l| &l.patch == sha256)
                })
            })
            .flatten()
            .map(|r| (r.round, r.ended_at));
        SubmissionFacts {
            leader,
            seated,
            round: latest.map(|(n, _)| n),
            entry: latest.map(|(_, e)| e),
        }
    }
}

impl SubmissionFacts<'_> {
    /// `+94.88 %`, as the round table shows it.
    fn score(&self) -> String {
        self.entry
            .and_then(|e| e.score_ppm)
            .map_or("—".to_owned(), format_score_percent)
    }

    /// `31.035 req/s`.
    fn throughput(&self) -> String {
        self.entry
            .and_then(|e| e.throughput_milli_rps)
            .map_or("—".to_owned(), format_milli_rps)
    }

    /// One line for a submission's log: its latest round and whether it leads.
    fn sentence(&self) -> String {
        let seat = match (self.leader, self.seated) {
            (true, Some((round, at))) => format!("current leader, seated in round {round} at {at}"),
            (true, None) => "current leader".to_owned(),
            (false, _) => "not the leader".to_owned(),
        };
        match self.round {
            Some(n) => format!(
                "latest round {n}: score {}, throughput {}; {seat}",
                self.score(),
                self.throughput()
            ),
            None => format!("in no sealed round yet; {seat}"),
        }
    }
}

/// One submission: a header, then every event, oldest first; miner ids and reasons
/// escaped.
pub(super) fn print_log(out: &mut impl Write, submission: &Submission) -> std::io::Result<()> {
    writeln!(
        out,
        "submission {}  miner `{}`  {} bytes  state {}",
        submission.sha256,
        escape_untrusted(submission.miner.as_str()),
        submission.size_bytes,
        submission.state
    )?;
    for event in &submission.events {
        let what = match &event.kind {
            EventKind::Transition { to, gate, round } => {
                let mut what = to.to_string();
                match gate {
                    Some(gate) if *to == PipelineState::Rejected => {
                        what = format!("rejected: {} failed", format_gate(*gate));
                    }
                    Some(gate) => what.push_str(&format!(" ({} passed)", format_gate(*gate))),
                    None => {}
                }
                if let Some(round) = round {
                    what.push_str(&format!(" (round {round})"));
                }
                what
            }
            EventKind::Duplicate { miner, .. } => {
                format!("duplicate from `{}`", escape_untrusted(miner.as_str()))
            }
            EventKind::Superseded { miner, .. } => {
                format!("superseded `{}`", escape_untrusted(miner.as_str()))
            }
        };
        writeln!(
            out,
            "  {}  {what:<35}  {}",
            event.at,
            escape_untrusted(&peoples_units(&event.reason))
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::peoples_units;

    #[test]
    fn reasons_read_in_peoples_units() {
        assert_eq!(
            peoples_units("round 1: scored 948812 ppm (31035 milli-req/s)"),
            "round 1: scored +94.88 % (31.035 req/s)"
        );
        assert_eq!(
            peoples_units("scored -333334 ppm, throughput 10012 milli-req/s (min 1, max 2)"),
            "scored -33.33 %, throughput 10.012 req/s (min 1, max 2)"
        );
        assert_eq!(peoples_units("a ppm b 12x ppm"), "a ppm b 12x ppm");
    }
}
