//! The setup group: probe the machine, draw the seeds from the OS, seat the entries
//! (baseline, the leader of the last round as incumbent, the queued challengers in
//! commitment order), copy the inputs under `inputs/`, and sign the "round opened"
//! statement (content/receipts.md) into the bundle before any entry runs.

use std::collections::BTreeMap;
use std::fs;

use rand_core::{OsRng, RngCore};
use receipts::bundle::sign_statement;
use receipts::layout::{
    CAMPAIGN_INPUT, CAMPAIGN_TOML_INPUT, MINERS_INPUT, PROMPTS_INPUT, patch_input,
};
use receipts::model::{
    CampaignRef, EventKind, Leader, MinerRegistry, Phase, PipelineState,
    ROUND_OPENED_PREDICATE_TYPE, ResourceDescriptor, RevealedSeeds, Role, RoundOpened, SeatedEntry,
    Seed32, SeedReveal, Sha256Hex, StepStatus, Submission, Timestamp,
};
use receipts::statement::{DigestSet, Statement, Subject};

use super::record::{PlannedEntry, SetupRecord};
use super::{Ctx, RoundError, io};
use intake::store::CampaignStore;
use receipts::rules::workload::Workload;

/// Bundle-relative path of the signed "round opened" statement.
pub(crate) const ROUND_OPENED_FILE: &str = "round-opened.dsse.json";

/// Runs the setup group and returns its record (the caller journals it).
pub(crate) fn run_setup(ctx: &mut Ctx<'_>) -> Result<SetupRecord, RoundError> {
    let started_at = Timestamp::now();
    let mut steps = Vec::new();

    let mut probe = ctx.begin("Setup", "Probing the machine", Phase::Provisioning);
    let hardware = engines::hardware::fingerprint();
    probe.line(&format!(
        "cpu `{}` × {}, features {}, memory {} bytes, {} / kernel {}, {} GPU(s)",
        hardware.cpu_model,
        hardware.cpu_count,
        hardware.cpu_features.join(","),
        hardware.memory_bytes,
        hardware.os,
        hardware.kernel,
        hardware.gpus.len()
    ));
    for gpu in &hardware.gpus {
        probe.line(&format!(
            "gpu `{}` {} memory {} bytes, compute capability {}, driver {}",
            gpu.name, gpu.uuid, gpu.memory_bytes, gpu.compute_capability, gpu.driver_version
        ));
    }
    steps.push(ctx.finish(probe, StepStatus::Ok)?);

    let mut open = ctx.begin(
        "Setup",
        "Drawing seeds and opening the round",
        Phase::Bootstrapping,
    );
    let seeds = match &ctx.options.seeds {
        Some(seeds) => seeds.clone(),
        None => draw_seeds()?,
    };
    let request_sequence_digest =
        Workload::new(&ctx.frozen.campaign, &seeds, ctx.prompt_source.as_deref())
            .and_then(|w| w.request_sequence_digest())
            .map_err(RoundError::Workload)?;
    open.line(&format!(
        "request-sequence digest {request_sequence_digest}"
    ));

    // The previous round (verified before the round opened): its Statement digest
    // chains this one; its seat is the incumbent's.
    let previous_receipt = ctx.previous.receipt.clone();
    let leader_before = ctx.previous.leader.clone();

    let challengers = seat_challengers(ctx, leader_before.as_ref())?;
    let mut entries = vec![PlannedEntry {
        index: 0,
        role: Role::Baseline,
        miner: None,
        patch: None,
        group: "Baseline".into(),
        slug: "baseline".into(),
    }];
    if let Some(leader) = &leader_before {
        entries.push(PlannedEntry {
            index: 1,
            role: Role::Incumbent,
            miner: Some(leader.miner.clone()),
            patch: Some(leader.patch.clone()),
            group: format!("Incumbent — {} {}", leader.miner, leader.patch.short()),
            slug: format!("incumbent-{}", leader.miner),
        });
    }
    let count = challengers.len();
    for (i, submission) in challengers.into_iter().enumerate() {
        entries.push(PlannedEntry {
            index: u32::try_from(entries.len()).unwrap_or(u32::MAX),
            role: Role::Challenger,
            group: format!(
                "Candidate {} of {count} — {} {}",
                i + 1,
                submission.miner,
                submission.sha256.short()
            ),
            // Unique within the round (the position is); miner ids have a closed
            // alphabet that is safe in a file name.
            slug: format!("candidate-{}-{}", i + 1, submission.miner),
            miner: Some(submission.miner),
            patch: Some(submission.sha256),
        });
    }
    for planned in &entries {
        open.line(&format!(
            "seated {}: {}",
            planned.group,
            planned.patch.as_ref().map_or_else(
                || "the pinned baseline".to_owned(),
                |p| format!(
                    "{} by `{}`",
                    p,
                    planned.miner.as_ref().map(|m| m.as_str()).unwrap_or("")
                )
            )
        ));
    }

    let (inputs, miners_digest) = copy_inputs(ctx, &entries)?;
    let opened = RoundOpened {
        round: ctx.round,
        campaign: CampaignRef {
            id: ctx.frozen.campaign.id.clone(),
            digest: ctx.frozen.digest.clone(),
        },
        miners_digest: miners_digest.clone(),
        previous_receipt: previous_receipt.clone(),
        entries: entries
            .iter()
            .map(|e| SeatedEntry {
                role: e.role,
                miner: e.miner.clone(),
                patch: e.patch.clone(),
            })
            .collect(),
        seed_commitments: seeds.commitments(),
        opened_at: Timestamp::now(),
    };
    sign_opened(ctx, &opened, &inputs)?;
    open.line(&format!(
        "round opened: {ROUND_OPENED_FILE} signed by {}",
        ctx.key.keyid()
    ));
    steps.push(ctx.finish(open, StepStatus::Ok)?);

    Ok(SetupRecord {
        round: ctx.round,
        started_at,
        steps,
        hardware,
        seeds,
        request_sequence_digest,
        entries,
        leader_before,
        previous_receipt,
        miners_digest,
        inputs,
        signer_keyid: ctx.key.keyid().to_owned(),
    })
}

/// Five fresh 32-byte seeds and salts from the OS (content/measurement.md, Seeds).
fn draw_seeds() -> Result<RevealedSeeds, RoundError> {
    let draw = || -> Result<SeedReveal, RoundError> {
        let mut seed = [0u8; 32];
        let mut salt = [0u8; 32];
        OsRng
            .try_fill_bytes(&mut seed)
            .and_then(|()| OsRng.try_fill_bytes(&mut salt))
            .map_err(RoundError::Seeds)?;
        Ok(SeedReveal::commit(Seed32(seed), Seed32(salt)))
    };
    Ok(RevealedSeeds {
        item_seed: draw()?,
        order_seed: draw()?,
        schedule_seed: draw()?,
        correctness_seed: draw()?,
        prompt_salt: draw()?,
    })
}

/// The challengers of this round, in commitment order: every `bench_queued` submission
/// moves to `round_assigned`; one already `round_assigned` to this round (a setup cut
/// short by a kill) is taken again.
fn seat_challengers(ctx: &Ctx<'_>, leader: Option<&Leader>) -> Result<Vec<Submission>, RoundError> {
    let _records = ctx.campaign_dir.lock()?;
    let mut seated = Vec::new();
    for mut submission in ctx.campaign_dir.list_submissions()? {
        if leader.is_some_and(|l| l.patch == submission.sha256) {
            continue;
        }
        let assigned_here = submission.state == PipelineState::RoundAssigned
            && submission.events.iter().rev().find_map(|e| match e.kind {
                EventKind::Transition { round, .. } => Some(round),
                _ => None,
            }) == Some(Some(ctx.round));
        if submission.state == PipelineState::BenchQueued {
            submission
                .round_transition(
                    PipelineState::RoundAssigned,
                    ctx.round,
                    super::next_event_at(&submission),
                    format!("seated in round {}", ctx.round),
                )
                .map_err(|e| RoundError::Record {
                    round: ctx.round,
                    message: e.to_string(),
                })?;
            ctx.campaign_dir.save_submission(&submission)?;
            seated.push(submission);
        } else if assigned_here {
            seated.push(submission);
        }
    }
    Ok(seated)
}

/// Copies campaign.toml, miners.json and every entry's diff under `inputs/` and
/// describes them (and the pinned baseline commit) as in-toto ResourceDescriptors.
/// Returns them with the digest of miners.json.
fn copy_inputs(
    ctx: &Ctx<'_>,
    entries: &[PlannedEntry],
) -> Result<(Vec<ResourceDescriptor>, Sha256Hex), RoundError> {
    let inputs = ctx.bundle.join("inputs");
    fs::create_dir_all(inputs.join("patches")).map_err(io("creating", &inputs))?;
    let miners_path = ctx.campaign_dir.miners_json();
    let miners_bytes = match fs::read(&miners_path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut bytes = serde_json::to_vec_pretty(&MinerRegistry::default()).map_err(|e| {
                RoundError::Record {
                    round: ctx.round,
                    message: e.to_string(),
                }
            })?;
            bytes.push(b'\n');
            bytes
        }
        Err(e) => return Err(io("reading", &miners_path)(e)),
    };
    // The frozen campaign exactly as its digest covers it: `campaign.json`, or the
    // schema-1 `campaign.toml` of an older data directory.
    let campaign_input = if ctx.frozen.schema_version == 1 {
        let path = ctx.campaign_dir.campaign_toml();
        (
            CAMPAIGN_TOML_INPUT.to_owned(),
            fs::read(&path).map_err(io("reading", &path))?,
        )
    } else {
        (CAMPAIGN_INPUT.to_owned(), ctx.frozen.bytes.clone())
    };
    let mut files: Vec<(String, Vec<u8>)> =
        vec![campaign_input, (MINERS_INPUT.into(), miners_bytes)];
    if let Some(bytes) = &ctx.prompt_source {
        files.push((PROMPTS_INPUT.into(), bytes.clone()));
    }
    for patch in entries.iter().filter_map(|e| e.patch.as_ref()) {
        let path = ctx.campaign_dir.submission_diff(patch);
        let bytes = fs::read(&path).map_err(io("reading", &path))?;
        files.push((patch_input(patch), bytes));
    }
    let mut descriptors = Vec::new();
    let mut miners_digest = Sha256Hex::digest(b"");
    for (name, bytes) in &files {
        let path = ctx.bundle.join(name);
        receipts::fsutil::write_atomic(&path, bytes, 0o644).map_err(io("writing", &path))?;
        let digest = Sha256Hex::digest(bytes);
        if name == MINERS_INPUT {
            miners_digest = digest.clone();
        }
        descriptors.push(ResourceDescriptor {
            name: name.clone(),
            digest: BTreeMap::from([("sha256".to_owned(), digest.to_string())]),
            uri: None,
        });
    }
    descriptors.push(ResourceDescriptor {
        name: "baseline".into(),
        digest: BTreeMap::from([(
            "gitCommit".to_owned(),
            ctx.frozen.campaign.baseline.commit.clone(),
        )]),
        uri: Some(ctx.frozen.campaign.baseline.repo.clone()),
    });
    Ok((descriptors, miners_digest))
}

/// Signs the round-opened statement (its subjects: the input copies) into the bundle.
fn sign_opened(
    ctx: &Ctx<'_>,
    opened: &RoundOpened,
    inputs: &[ResourceDescriptor],
) -> Result<(), RoundError> {
    let seal_error = |source| RoundError::Seal {
        round: ctx.round,
        source,
    };
    let mut subjects: Vec<Subject> = inputs
        .iter()
        .filter_map(|d| {
            let sha256 = d.digest.get("sha256")?.parse().ok()?;
            Some(Subject {
                name: d.name.clone(),
                digest: DigestSet { sha256 },
            })
        })
        .collect();
    subjects.sort_by(|a, b| a.name.cmp(&b.name));
    let predicate = serde_json::to_value(opened).map_err(|e| RoundError::Record {
        round: ctx.round,
        message: e.to_string(),
    })?;
    let statement = Statement::new(subjects, ROUND_OPENED_PREDICATE_TYPE, predicate);
    let envelope = sign_statement(&statement, &[ctx.key]).map_err(seal_error)?;
    let bytes = envelope.to_file_bytes().map_err(|e| RoundError::Record {
        round: ctx.round,
        message: e.to_string(),
    })?;
    let path = ctx.bundle.join(ROUND_OPENED_FILE);
    receipts::fsutil::write_atomic(&path, &bytes, 0o644).map_err(io("writing", &path))
}
