//! The setup group: probe the machine, draw the seeds (from a beacon and a fresh secret,
//! given, or from the OS), seat the entries
//! (baseline, the leader of the last round as incumbent, the queued challengers in
//! commitment order), copy the inputs under `inputs/`, and sign the "round opened"
//! statement (content/receipts.md) into the bundle before any entry runs. A round whose
//! seeds derive from a beacon signs and logs it before the beacon round it names exists,
//! and only then reads the value and derives the seeds.

use std::collections::BTreeMap;
use std::fs;

use rand_core::{OsRng, RngCore};
use receipts::bundle::sign_statement;
use receipts::layout::{
    CAMPAIGN_INPUT, CAMPAIGN_TOML_INPUT, MINERS_INPUT, PROMPTS_INPUT, patch_input,
};
use receipts::model::{
    Backend, BeaconPromise, BeaconRecord, CampaignRef, ClientSelfTest, EventKind, Leader,
    MinerRegistry, Phase, PipelineState, ROUND_OPENED_PREDICATE_TYPE, ResourceDescriptor,
    RevealedSeeds, Role, RoundOpened, SeatedEntry, Seed32, SeedReveal, Sha256Hex, StepStatus,
    Submission,
};
use receipts::statement::{DigestSet, Statement, Subject};

use super::beacon::{Beacon, BeaconError};
use super::record::{PlannedEntry, SetupRecord};
use super::{Ctx, RoundError, StepRun, io};
use intake::store::CampaignStore;
use loadgen::selftest::{SelfTestConfig, SelfTestReport, self_test};
use receipts::rules::seeds::{derived_seeds, secret_commitment};
use receipts::rules::workload::Workload;
use verifier::view::format_client_self_test;

/// Bundle-relative path of the signed "round opened" statement.
pub(crate) const ROUND_OPENED_FILE: &str = "round-opened.dsse.json";

/// Runs the setup group and returns its record (the caller journals it).
pub(crate) fn run_setup(ctx: &mut Ctx<'_>) -> Result<SetupRecord, RoundError> {
    let started_at = ctx.options.clock.now();
    let mut steps = Vec::new();

    let mut probe = ctx
        .steps
        .begin("Setup", "Probing the machine", Phase::Provisioning);
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
    steps.push(ctx.steps.finish(probe, StepStatus::Ok)?);

    let mut open = ctx.steps.begin(
        "Setup",
        "Drawing seeds and opening the round",
        Phase::Bootstrapping,
    );
    let plan = plan_seeds(ctx, &mut open)?;
    // The self-test drives the campaign's request shape; a beacon round's seeds do not
    // exist before it opens, so its self-test items come from the secret alone.
    let self_test_seeds = match &plan {
        SeedPlan::Drawn(drawn) => drawn.seeds.clone(),
        SeedPlan::Beacon { secret, .. } => derived_seeds(secret, &Seed32([0; 32])),
    };
    let self_test_workload = workload_of(ctx, &self_test_seeds)?;
    // Before any engine starts and before anything of the round is committed (no
    // submission seated, nothing signed): a client that cannot keep the campaign's
    // schedule refuses the round here.
    let client_self_test = match test_client(ctx, &self_test_workload, &mut open) {
        Ok(test) => test,
        Err(e) => {
            open.line(&format!("refused: {e}"));
            ctx.steps.finish(open, StepStatus::Failed)?;
            // Nothing of the round was committed (no journal record, no seat, nothing
            // signed): its work directory goes, and the next `referee round` opens it
            // afresh.
            fs::remove_dir_all(&ctx.work).map_err(io("removing", &ctx.work))?;
            return Err(e);
        }
    };

    // The previous round (verified before the round opened): its Statement digest
    // chains this one; its seat is the incumbent's.
    let previous_receipt = ctx.previous.receipt;
    let leader_before = ctx.previous.leader.clone();

    // An incumbent whose runs made the last rounds infra_failed is re-measured alone
    // (content/leader-rule.md): the queued challengers wait for the next round.
    // A confirmation or re-measurement seats the title's entries, not the queue's.
    let now_s = ctx.options.clock.now().datetime().unix_timestamp();
    let (kind, title_seats) =
        super::title::resolve(ctx, ctx.options.kind, leader_before.as_ref(), now_s)?;
    let challengers = if let Some(seats) = title_seats {
        open.line(&format!(
            "a {} round: seating the title's entries, none from the queue",
            kind.name()
        ));
        seats
    } else if ctx.previous.seats_challengers() {
        seat_challengers(ctx, leader_before.as_ref())?
    } else {
        open.line(&format!(
            "re-measuring the incumbent alone: its runs made the last {} rounds infra_failed",
            ctx.previous.incumbent_infra_failed_rounds
        ));
        Vec::new()
    };
    let mut entries = vec![PlannedEntry {
        index: 0,
        role: Role::Baseline,
        miner: None,
        patch: None,
        group: "Baseline".into(),
        slug: "baseline".into(),
        image: None,
    }];
    if let Some(leader) = &leader_before {
        // A Docker campaign's incumbent runs the image built for its submission.
        let image = match ctx.frozen.campaign.backend {
            Backend::Docker(_) => ctx.campaign_dir.load_submission(&leader.patch)?.image,
            Backend::Builtin | Backend::Process { .. } => None,
        };
        entries.push(PlannedEntry {
            image,
            index: 1,
            role: Role::Incumbent,
            miner: Some(leader.miner.clone()),
            patch: Some(leader.patch),
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
            image: submission.image,
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
    let mut opened = RoundOpened {
        round: ctx.round,
        campaign: CampaignRef {
            id: ctx.frozen.campaign.id.clone(),
            digest: ctx.frozen.digest,
        },
        miners_digest,
        previous_receipt,
        entries: entries
            .iter()
            .map(|e| SeatedEntry {
                role: e.role,
                miner: e.miner.clone(),
                patch: e.patch,
            })
            .collect(),
        seed_commitments: None,
        evaluator_secret_sha256: None,
        beacon: None,
        practice: false,
        opened_at: ctx.options.clock.now(),
    };
    let drawn = match plan {
        SeedPlan::Drawn(drawn) => {
            opened.seed_commitments = Some(drawn.seeds.commitments());
            opened.practice = drawn.practice;
            sign_opened(ctx, &opened, &inputs, &mut open)?;
            *drawn
        }
        SeedPlan::Beacon { secret, beacon } => {
            // Named only now, after `openedAt`: the source's next round (drand: the
            // first at least two periods ahead), whose value does not exist yet.
            let promise = BeaconPromise {
                source: beacon.source(),
                round: beacon.next_round()?,
            };
            opened.evaluator_secret_sha256 = Some(secret_commitment(&secret));
            opened.beacon = Some(promise.clone());
            sign_opened(ctx, &opened, &inputs, &mut open)?;
            await_beacon(ctx, &entries, secret, beacon.as_ref(), &promise, &mut open)?
        }
    };
    let seeds = drawn.seeds.clone();
    let workload = match drawn.beacon {
        Some(_) => workload_of(ctx, &seeds)?,
        None => self_test_workload,
    };
    let request_sequence_digest = workload
        .request_sequence_digest()
        .map_err(RoundError::Workload)?;
    open.line(&format!(
        "request-sequence digest {request_sequence_digest}"
    ));
    steps.push(ctx.steps.finish(open, StepStatus::Ok)?);
    // Before any entry runs: what the baseline engine can do under the campaign's API
    // profile (content/engines.md, The capability probe).
    let capability_probe = match super::capability::probe_baseline(ctx, &workload)? {
        Some((probe, step)) => {
            steps.push(step);
            Some(probe)
        }
        None => None,
    };

    Ok(SetupRecord {
        round: ctx.round,
        started_at,
        steps,
        hardware,
        seeds,
        beacon: drawn.beacon,
        evaluator_secret: drawn.secret,
        practice: drawn.practice,
        request_sequence_digest,
        entries,
        leader_before,
        incumbent_infra_failed_rounds: ctx.previous.incumbent_infra_failed_rounds,
        previous_receipt,
        miners_digest,
        inputs,
        signer_keyid: ctx.key.keyid().to_owned(),
        client_self_test: Some(client_self_test),
        capability_probe,
        kind: Some(kind),
        sample_pools: None,
    })
}

/// Runs the load client's self-test (content/measurement.md, Open loop) on this thread's
/// runtime, so the client is built, pinned, as every probe's is: against a null server
/// at the campaign's maximum rate with `workload`'s request shape, each response held
/// for the SLA bound. Logs its figures to `step`.
///
/// Errors: [`RoundError::ClientTooSlow`] when the send-lag p99 is over the campaign's
/// effective bound or a request failed; [`RoundError::SelfTest`] when the null server or
/// the client cannot start.
fn test_client(
    ctx: &Ctx<'_>,
    workload: &Workload,
    step: &mut StepRun,
) -> Result<ClientSelfTest, RoundError> {
    let campaign = &ctx.frozen.campaign;
    let bound_us = campaign
        .rate_search
        .effective_send_lag_bound_us(&campaign.sla);
    let client = loadgen::MeasureConfig::from_campaign(campaign).client;
    let config = SelfTestConfig::for_campaign(campaign, workload, client);
    let report =
        ctx.runtime
            .block_on(self_test(&config))
            .map_err(|source| RoundError::SelfTest {
                round: ctx.round,
                source,
            })?;
    let recorded = recorded(&report, bound_us);
    step.line(&format!(
        "{}; {} requests at {} milli-req/s, {} failed, at most {} in flight, {} connections",
        format_client_self_test(&recorded),
        report.requests,
        report.rate_milli_rps,
        report.failed,
        report.in_flight_max,
        report.connections
    ));
    report
        .check(bound_us)
        .map_err(|refusal| RoundError::ClientTooSlow {
            round: ctx.round,
            refusal,
        })?;
    Ok(recorded)
}

/// The self-test's figures as the receipt records them, with the bound they were held to,
/// µs.
fn recorded(report: &SelfTestReport, bound_us: u64) -> ClientSelfTest {
    ClientSelfTest {
        rate_milli_rps: report.rate_milli_rps,
        achieved_milli_rps: report.achieved_milli_rps,
        send_lag_p50_us: report.send_lag_p50_us,
        send_lag_p99_us: report.send_lag_p99_us,
        send_lag_bound_us: bound_us,
        requests: report.requests,
        failed: report.failed,
        in_flight_max: report.in_flight_max,
        connections: report.connections,
        scheduling: Some(report.scheduling),
    }
}

/// A round's seeds and where they came from.
struct DrawnSeeds {
    seeds: RevealedSeeds,
    /// The beacon value they derive from, with `secret`.
    beacon: Option<BeaconRecord>,
    /// The evaluator's secret, present exactly with `beacon`.
    secret: Option<Seed32>,
    /// Given by the evaluator (`--seeds`).
    practice: bool,
}

/// How a round's seeds will be had, decided before it opens.
enum SeedPlan {
    /// Given or drawn from the OS: known before the round opens, and committed then.
    Drawn(Box<DrawnSeeds>),
    /// Derived from `secret` and the value of a beacon round named when the round opens,
    /// read only once the opening is signed and logged.
    Beacon {
        secret: Seed32,
        beacon: std::sync::Arc<dyn Beacon>,
    },
}

/// The round's seeds (content/measurement.md, Seeds): the ones given (a practice round),
/// else a fresh secret for the beacon's value of the round the opening will name, else
/// drawn from the OS alone (no beacon configured). Logs which to `step`.
///
/// Errors: [`RoundError::Seeds`] when the OS gives no randomness.
fn plan_seeds(ctx: &Ctx<'_>, step: &mut StepRun) -> Result<SeedPlan, RoundError> {
    if let Some(seeds) = &ctx.options.seeds {
        step.line("seeds given by the evaluator: a practice round, which moves no seat");
        return Ok(SeedPlan::Drawn(Box::new(DrawnSeeds {
            seeds: seeds.clone(),
            beacon: None,
            secret: None,
            practice: true,
        })));
    }
    let Some(beacon) = &ctx.options.beacon else {
        step.line("no beacon: seeds drawn from the operating system alone");
        return Ok(SeedPlan::Drawn(Box::new(DrawnSeeds {
            seeds: draw_seeds()?,
            beacon: None,
            secret: None,
            practice: false,
        })));
    };
    Ok(SeedPlan::Beacon {
        secret: Seed32(random_32()?),
        beacon: std::sync::Arc::clone(beacon),
    })
}

/// A beacon round's seeds, once its opening is signed: logs the opening (and waits for
/// a witness when one is required) before the beacon round named exists, then waits for
/// that round's value and derives the seeds from it and `secret`. Logs the value to
/// `step`.
///
/// Errors: [`RoundError::Log`] and what [`super::tlog::open_round`] returns;
/// [`RoundError::Beacon`] when the beacon gives no value, or another source's.
fn await_beacon(
    ctx: &mut Ctx<'_>,
    entries: &[PlannedEntry],
    secret: Seed32,
    beacon: &dyn Beacon,
    promise: &BeaconPromise,
    step: &mut StepRun,
) -> Result<DrawnSeeds, RoundError> {
    // Nobody, the evaluator included, knew the value when the secret and the seats were
    // committed: `seeds.beaconOrder` checks the opening's times against the round's.
    let log = super::tlog::open_round(ctx, entries)?;
    super::tlog::note_beacon_order(ctx, &log, promise);
    ctx.round_log = Some(log);
    let value = beacon.value(promise.round)?;
    step.line(&format!(
        "beacon {} round {}: {}{}; secret sha256 {}",
        value.source.as_str(),
        value.round,
        value.value.to_hex(),
        if value.source.is_signed() {
            ""
        } else {
            " (unsigned)"
        },
        secret_commitment(&secret)
    ));
    if value.promise() != *promise {
        return Err(RoundError::Beacon(BeaconError::Invalid {
            round: promise.round,
            message: format!(
                "the source gave {} round {}",
                value.source.as_str(),
                value.round
            ),
        }));
    }
    Ok(DrawnSeeds {
        seeds: derived_seeds(&secret, &value.value),
        beacon: Some(value),
        secret: Some(secret),
        practice: false,
    })
}

/// The campaign's workload under `seeds`.
///
/// Errors: [`RoundError::Workload`].
fn workload_of(ctx: &Ctx<'_>, seeds: &RevealedSeeds) -> Result<Workload, RoundError> {
    Workload::new(&ctx.frozen.campaign, seeds, ctx.prompt_source.as_deref())
        .map_err(RoundError::Workload)
}

/// 32 bytes from the OS.
fn random_32() -> Result<[u8; 32], RoundError> {
    let mut bytes = [0u8; 32];
    OsRng
        .try_fill_bytes(&mut bytes)
        .map_err(RoundError::Seeds)?;
    Ok(bytes)
}

/// Fresh 32-byte seeds and salts from the OS (content/measurement.md, Seeds).
fn draw_seeds() -> Result<RevealedSeeds, RoundError> {
    let draw = || -> Result<SeedReveal, RoundError> {
        Ok(SeedReveal::commit(
            Seed32(random_32()?),
            Seed32(random_32()?),
        ))
    };
    Ok(RevealedSeeds {
        item_seed: draw()?,
        order_seed: draw()?,
        schedule_seed: draw()?,
        correctness_seed: draw()?,
        prompt_salt: draw()?,
        pass_seed: Some(draw()?),
        sample_seed: Some(draw()?),
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

/// Copies campaign.toml, miners.json and every entry's diff (a repository submission's
/// commitment and review: [`super::review::repository_inputs`]) under `inputs/` and
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
        match super::review::repository_inputs(&ctx.campaign_dir, ctx.round, patch)? {
            Some(repository) => files.extend(repository),
            None => {
                let path = ctx.campaign_dir.submission_diff(patch);
                let bytes = fs::read(&path).map_err(io("reading", &path))?;
                files.push((patch_input(patch), bytes));
            }
        }
    }
    let mut descriptors = Vec::new();
    let mut miners_digest = Sha256Hex::digest(b"");
    for (name, bytes) in &files {
        let path = ctx.bundle.join(name);
        // `inputs/patches/` is made above; a repository entry's copies go beside it.
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(io("creating", dir))?;
        }
        receipts::fsutil::write_atomic(&path, bytes, 0o644).map_err(io("writing", &path))?;
        let digest = Sha256Hex::digest(bytes);
        if name == MINERS_INPUT {
            miners_digest = digest;
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

/// Signs the round-opened statement (its subjects: the input copies) into the bundle,
/// and says so to `step`.
fn sign_opened(
    ctx: &Ctx<'_>,
    opened: &RoundOpened,
    inputs: &[ResourceDescriptor],
    step: &mut StepRun,
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
    receipts::fsutil::write_atomic(&path, &bytes, 0o644).map_err(io("writing", &path))?;
    step.line(&format!(
        "round opened: {ROUND_OPENED_FILE} signed by {}",
        ctx.key.keyid()
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The refusal names the bound missed, by how much, the rate and the requests in
    /// flight, and says what to do.
    #[test]
    fn a_client_over_the_bound_refuses_the_round_with_a_hint() {
        let report = SelfTestReport {
            rate_milli_rps: 128_000,
            achieved_milli_rps: 127_600,
            send_lag_p50_us: 80,
            send_lag_p99_us: 2_840,
            requests: 256,
            failed: 0,
            in_flight_max: 39,
            connections: 40,
            scheduling: receipts::model::ClientScheduling {
                policy: receipts::model::ClientPolicy::Fifo,
                priority: 10,
                awake_cpus: 1,
            },
        };
        let refusal = report.check(2_000).unwrap_err();
        let error = RoundError::ClientTooSlow { round: 3, refusal };
        assert_eq!(
            error.to_string(),
            "round 3 did not open: the load client cannot keep its schedule: send-lag p99 \
             2 840 µs > bound 2 000 µs at 128 req/s with 39 requests in flight (self-test \
             against a null server); run the round on a dedicated client machine (more CPUs \
             for the load client), or give the campaign a larger \
             `rate_search.send_lag_bound_us`"
        );
        assert_eq!(
            format_client_self_test(&recorded(&report, 2_000)),
            "client self-test: 128 req/s held, send lag p50 80 µs, p99 2 840 µs (bound \
             2 000 µs); SCHED_FIFO 10, 1 CPU kept awake"
        );
    }
}
