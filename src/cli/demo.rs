//! `referee demo`: the whole pipeline end to end on the demo of `examples/demo/` —
//! evaluator key (generated into the data directory on first run, never committed),
//! campaign add, miner add, ingest of every demo diff, a round, verify — printing the
//! equivalent individual commands as it goes. Run again, it starts the next round with
//! the leader carried over (or resumes a round a kill interrupted).

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use intake::gates::BuiltinBuilder;
use intake::ingest::{IngestError, IngestOutcome, IngestRequest, add_campaign, add_miner, ingest};
use receipts::keys::{Keyring, PrivateKey, TrustedKey, generate_key_pair};
use receipts::layout::DataDir;
use receipts::model::{CampaignId, MinerId, Sha256Hex, Timestamp};
use receipts::verify::VerifyOptions;
use referee::demo::{CAMPAIGN_ID, SUBMISSIONS, stage};
use verifier::verify_bundle;

use super::DataArgs;
use super::round::{RoundArgs, print_summary, run_with_progress};

/// Arguments of `referee demo`.
#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    #[command(flatten)]
    pub data: DataArgs,
}

/// Runs the demo.
pub fn run(args: DemoArgs) -> anyhow::Result<ExitCode> {
    let data_path = args.data.data.clone();
    let data = DataDir::new(&data_path);
    let d = data_path.display().to_string();
    let campaign_id: CampaignId = CAMPAIGN_ID.parse().context("the demo campaign id")?;
    let campaign_dir = data.campaign(&campaign_id);

    // The evaluator key, generated once into the data directory.
    let key_path = data.evaluator_key_path();
    let key_prefix = data_path.join("evaluator");
    if !key_path.exists() {
        step(&format!(
            "referee keygen --out {d}/evaluator --keyring {d}/keyring.json"
        ));
        std::fs::create_dir_all(&data_path)
            .with_context(|| format!("creating the data directory `{d}`"))?;
        generate_key_pair(&key_prefix).context("generating the evaluator key")?;
        let key = PrivateKey::load(&key_path).context("loading the new evaluator key")?;
        let keyring_path = data.keyring_path();
        let mut keyring = if keyring_path.exists() {
            Keyring::load(&keyring_path).context("loading the keyring")?
        } else {
            Keyring::default()
        };
        keyring
            .add(TrustedKey {
                key: key.public().clone(),
                valid_from: Timestamp::now(),
                valid_until: None,
            })
            .context("trusting the evaluator key")?;
        keyring.save(&keyring_path).context("saving the keyring")?;
        note(&format!(
            "evaluator key {} (keep it out of git)",
            key.keyid()
        ));
    } else {
        note(&format!("evaluator key `{}` exists", key_path.display()));
    }

    // The campaign, from the embedded demo files.
    let source = data_path.join(".demo");
    let campaign_toml = stage(&source).context("writing the demo's baseline repository")?;
    step(&format!(
        "referee campaign add --data {d} {}",
        campaign_toml.display()
    ));
    let added = add_campaign(&data, &campaign_toml).context("adding the demo campaign")?;
    note(&format!(
        "campaign `{}` {} (digest {})",
        added.campaign.id,
        if added.already_frozen {
            "already frozen"
        } else {
            "frozen"
        },
        added.digest
    ));

    // Miners and their submissions.
    for submission in SUBMISSIONS {
        let miner: MinerId = submission.miner.parse().context("a demo miner id")?;
        match add_miner(&campaign_dir, &miner) {
            Ok(_) => step(&format!(
                "referee miner add --data {d} --campaign {CAMPAIGN_ID} {miner}"
            )),
            Err(IngestError::MinerExists { .. }) => {}
            Err(e) => return Err(e).context(format!("registering miner `{miner}`")),
        }
    }
    let staged = source.join("submissions");
    std::fs::create_dir_all(&staged).with_context(|| format!("creating `{}`", staged.display()))?;
    for submission in SUBMISSIONS {
        let diff_text = submission.diff().context("building a demo diff")?;
        let diff = diff_text.as_bytes();
        let commitment = Sha256Hex::digest(diff);
        let miner: MinerId = submission.miner.parse().context("a demo miner id")?;
        // A second demo run does not commit the same diffs again.
        if campaign_dir.submission_json(&commitment).exists()
            && campaign_dir
                .load_submission(&commitment)
                .is_ok_and(|s| committed_by(&s, &miner))
        {
            continue;
        }
        let diff_path = staged.join(submission.file);
        write_file(&diff_path, diff)?;
        step(&format!(
            "referee ingest --data {d} --campaign {CAMPAIGN_ID} --miner {miner} --commitment {commitment} {}",
            diff_path.display()
        ));
        let request = IngestRequest {
            diff,
            miner: &miner,
            commitment: &commitment,
        };
        let outcome = ingest(&campaign_dir, &request, &BuiltinBuilder)
            .with_context(|| format!("ingesting `{}`", submission.file))?;
        let record = outcome.submission();
        let verdict = match &outcome {
            IngestOutcome::New(_) => format!(
                "{} — {}",
                record.state,
                record.last_reason().unwrap_or_default()
            ),
            IngestOutcome::Duplicate(_) => format!(
                "duplicate of {} committed first by `{}`: skipped",
                record.sha256.short(),
                record.miner
            ),
        };
        note(&format!(
            "{} ({}): {verdict}",
            submission.file, submission.what
        ));
    }

    // The round.
    step(&format!(
        "referee round --data {d} --campaign {CAMPAIGN_ID} --key {}",
        key_path.display()
    ));
    let summary = run_with_progress(&RoundArgs {
        data: args.data.clone(),
        campaign: CAMPAIGN_ID.to_owned(),
        key: key_path.clone(),
        seeds: None,
    })?;
    print_summary(&summary);

    // Verify what was sealed.
    step(&format!(
        "referee verify --data {d} {}",
        summary.bundle.display()
    ));
    let keyring = Keyring::load(&data.keyring_path()).context("loading the keyring")?;
    let report = verify_bundle(&summary.bundle, &keyring, &VerifyOptions::default());
    if report.passed() {
        println!("verify: PASS ({})", summary.bundle.display());
        Ok(ExitCode::SUCCESS)
    } else {
        println!("verify: FAIL ({})", summary.bundle.display());
        for check in report.failures() {
            println!("  {check:?}");
        }
        Ok(ExitCode::from(1))
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    receipts::fsutil::write_atomic(path, bytes, 0o644)
        .with_context(|| format!("writing `{}`", path.display()))
}

/// The equivalent individual command, on stderr.
fn step(command: &str) {
    eprintln!("$ {command}");
}

/// What it did, on stderr.
fn note(text: &str) {
    eprintln!("  {text}");
}

/// Whether `miner` committed this submission, first or as a duplicate.
fn committed_by(submission: &receipts::model::Submission, miner: &MinerId) -> bool {
    submission.miner == *miner
        || submission.events.iter().any(|e| {
            matches!(&e.kind, receipts::model::EventKind::Duplicate { miner: m, .. } if m == miner)
        })
}
