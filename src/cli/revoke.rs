//! `referee revoke --campaign c --round n --entry k --reason …` (content/title.md,
//! Revocation): the evaluator takes back entry `k` of sealed round `n` by logging a signed
//! `revocation` statement (`<campaign>/statements/revocation/`) in the data directory's
//! transparency log. It takes effect at its place in the chain, after the last round
//! sealed; the round itself stays as sealed, its evidence kept.

use std::process::ExitCode;

use anyhow::{Context, bail};
use receipts::keys::Keyring;
use receipts::layout::{DataDir, read_round_record};
use receipts::model::{Leader, Role, Timestamp};
use receipts::text::escape_untrusted;
use receipts::tlog::entry::EntryKind;
use receipts::tlog::statements::{
    REVOCATION_PREDICATE_TYPE, RevocationPredicate, submission_subject,
};
use verifier::{VerifyOptions, verify_bundle};

use super::DataArgs;
use super::ingest::{StatementKeyArgs, StatementKeys};
use super::show::campaign_id;

/// `referee revoke`'s exit codes, for `--help`.
pub const REVOKE_EXIT_CODES: &str = "Exit status: 0 when the revocation was logged; 1 when the round does not verify; 2 on a usage or I/O error (no such round or entry, the baseline's entry, no transparency log, a key that cannot sign).";

/// Arguments of `referee revoke`.
#[derive(clap::Args, Debug)]
#[command(after_help = REVOKE_EXIT_CODES)]
pub struct RevokeArgs {
    #[command(flatten)]
    pub data: DataArgs,
    /// The campaign id.
    #[arg(long)]
    pub campaign: String,
    /// The sealed round whose entry is revoked.
    #[arg(long)]
    pub round: u64,
    /// The entry's `index` in that round (as `referee show` lists it).
    #[arg(long)]
    pub entry: u32,
    /// Why, for the record: logged, signed and shown with the entry everywhere.
    #[arg(long)]
    pub reason: String,
    /// The keys that sign and log the statement.
    #[command(flatten)]
    pub keys: StatementKeyArgs,
    /// `referee demo --days`: the revocation's time on the demo's virtual clock.
    #[arg(skip)]
    pub at: Option<Timestamp>,
}

/// Runs `referee revoke`.
pub fn run(args: RevokeArgs) -> anyhow::Result<ExitCode> {
    let data = DataDir::new(&args.data.data);
    let campaign = campaign_id(&args.campaign)?;
    let dir = data.campaign(&campaign);
    let rounds = dir
        .round_numbers()
        .with_context(|| format!("listing the rounds of `{campaign}`"))?;
    let Some(last) = rounds.last().copied() else {
        bail!("campaign `{campaign}` has no sealed round");
    };
    if !rounds.contains(&args.round) {
        bail!("campaign `{campaign}` has no sealed round {}", args.round);
    }
    let bundle = dir.round_dir(args.round);
    let keyring = Keyring::load(&data.keyring_path()).context("loading the keyring")?;
    if !verify_bundle(&bundle, &keyring, &VerifyOptions::default()).passed() {
        eprintln!(
            "round {} does not verify (`referee verify {}`): nothing revoked",
            args.round,
            bundle.display()
        );
        return Ok(ExitCode::from(1));
    }
    let (record, _) = read_round_record(&bundle)?;
    let Some(entry) = record.entries.iter().find(|e| e.index == args.entry) else {
        bail!("round {} has no entry {}", args.round, args.entry);
    };
    let (Some(patch), Some(miner), false) = (
        entry.patch,
        entry.miner.clone(),
        entry.role == Role::Baseline,
    ) else {
        bail!(
            "round {} entry {} is the baseline: only a submission can be revoked",
            args.round,
            args.entry
        );
    };
    let Some(keys) = StatementKeys::open(&args.data.data, &args.keys)? else {
        bail!(
            "the data directory has no transparency log: a revocation is a logged statement (`referee log init`, content/transparency-log.md)"
        );
    };
    let predicate = RevocationPredicate {
        campaign: campaign.clone(),
        round: args.round,
        entry: Leader {
            patch,
            miner: miner.clone(),
        },
        reason: args.reason.clone(),
        after_round: last,
        revoked_at: args.at.unwrap_or_else(Timestamp::now),
    };
    let logged = keys
        .statement_log()?
        .log(
            &dir,
            EntryKind::Revocation,
            Some(args.round),
            vec![submission_subject(&patch, &patch)],
            REVOCATION_PREDICATE_TYPE,
            &predicate,
        )
        .context("logging the revocation")?;
    println!(
        "revoked round {} entry {} ({miner}, {}): {}\nlogged at index {}, after round {last}: statements/revocation/{}.dsse.json",
        args.round,
        args.entry,
        patch.short(),
        escape_untrusted(&args.reason),
        logged.index,
        logged.envelope_sha256
    );
    Ok(ExitCode::SUCCESS)
}
