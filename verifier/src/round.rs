//! A round bundle's own consistency (content/receipts.md, Verification step 8, the part
//! that needs no re-run): the round-opened statement signed before any entry ran is
//! verified like the receipt, the receipt must agree with it (round, campaign, miners,
//! previous receipt, seated entries, seed commitments), every revealed seed must hash to
//! its commitment, the inputs must hash to what the receipt records ([`crate::inputs`]),
//! and every entry's throughput and score must be what its runs and the first baseline
//! give. Runs only when the receipt's predicate fits a round schema.

use std::path::Path;

use crate::{CheckName, FailureReason, VerifyOptions, VerifyReport, verify_envelope};
use receipts::bundle;
use receipts::keys::Keyring;
use receipts::model::{
    DisqualificationReason, Entry, EntryStatus, LoadSample, Role, RoundOpened, RoundRecord,
    SeedReveal, Sha256Hex,
};
use receipts::rules::sample;
use receipts::rules::score::{run_throughputs, score_ppm};
use receipts::rules::seeds::{derived_seeds, secret_commitment};
use receipts::statement::{PredicateText, Statement};

use crate::{
    PredicateVersion, binding, correctness, docker, engine_api, engine_logs, engine_sandbox, files,
    host_load, inputs, isolation, measurements, paired, plan, sample_pool, selftest, statuses,
    timeline,
};

/// Runs the round checks on the receipt `statement` of the bundle in `dir`, whose
/// predicate passed the round schema and is `record`; records every check into `report`.
pub(crate) fn check_round(
    report: &mut VerifyReport,
    dir: &Path,
    statement: &Statement<PredicateText>,
    record: &RoundRecord,
    keyring: &Keyring,
    options: &VerifyOptions,
    version: PredicateVersion,
) {
    let opened = check_round_opened(report, dir, statement, record, keyring, options, version);
    match &opened {
        Some(opened) => check_matches(report, record, opened),
        None => report.not_run(
            &[CheckName::RoundOpenedMatches],
            CheckName::RoundOpenedSignature,
        ),
    }
    check_seeds(report, record, opened.as_ref(), version);
    check_beacon_seeds(report, record, opened.as_ref(), version);
    crate::beacon::check_beacon_order(report, record, opened.as_ref(), version);
    let campaign = inputs::check_inputs(report, dir, record, version);
    check_throughputs(report, record);
    // From v3 a score is the paired median: `paired` checks `round.scores` there.
    if version < PredicateVersion::V3 {
        check_scores(report, record);
    }
    // Each probe log parsed once for both readers.
    let mut logs = files::ProbeLogs::new(dir);
    paired::check_paired(report, &mut logs, record, campaign.as_ref(), version);
    crate::placement::check_placement(report, record, campaign.as_ref(), version);
    files::check_named(report, statement, record);
    measurements::check_measurements(report, &mut logs, record, campaign.as_ref(), version);
    binding::check_binding(report, &mut logs, record, version);
    host_load::check_host_load(report, &mut logs, record, version);
    plan::check_probe_plans(report, dir, &mut logs, record, campaign.as_ref(), version);
    docker::check_docker(report, record, campaign.as_ref(), version);
    engine_api::check_engine_api(report, record, campaign.as_ref(), version);
    engine_sandbox::check_engine_sandbox(report, record, campaign.as_ref(), version);
    engine_logs::check_engine_logs(report, dir, record, campaign.as_ref(), version);
    crate::title::check_title_round(report, record, version);
    crate::fast_track::check_fast_track(report, dir, record, campaign.as_ref(), version);
    crate::pod::check_pod(report, dir, record, campaign.as_ref(), version);
    isolation::check_isolation(report, record, campaign.as_ref(), version);
    selftest::check_self_test(
        report,
        record.client_self_test.as_ref(),
        record.hardware.at_start.cpu_count,
        campaign.as_ref(),
        version,
    );
    crate::capability::check_capability(report, record, campaign.as_ref(), version);
    // A decide campaign's gate is no completions gate: its own checks recompute it.
    if crate::decide::is_decide(record, campaign.as_ref()) {
        crate::decide::completions_gate_not_applicable(report);
    } else {
        correctness::check_correctness(report, dir, record, campaign.as_ref(), version);
    }
    check_load_samples(report, dir, record, campaign.as_ref(), version);
    sample_pool::check_sample_pools(report, dir, &mut logs, record, campaign.as_ref(), version);
    crate::compliance::check_compliance(report, dir, &mut logs, record, campaign.as_ref(), version);
    crate::review::check_entry_reviews(report, dir, record, campaign.as_ref(), keyring, version);
    statuses::check_statuses(
        report,
        record,
        campaign.as_ref().map(|c| &c.campaign),
        version,
    );
    timeline::check_timeline(report, record, opened.as_ref());
    // Last: it excuses the failures of the checks above that read a withheld file.
    crate::secrets::check_withheld(report, dir, record, version);
    // After it: a decide round's gate files hold only numbers and declared decisions,
    // never a withheld secret, and v8's checks come last.
    crate::decide::check_decide(report, dir, record, campaign.as_ref(), version);
    // v9's telemetry after them, so each version's checks keep their order.
    crate::telemetry::check_telemetry(report, dir, record, campaign.as_ref(), version);
}

/// `roundOpened.signature`: the file `record.roundOpened` is a subject and passes steps
/// 1–5 of the receipt's own verification (same keyring, threshold and validity instant)
/// with the round-opened predicate type of the round's version
/// ([`PredicateVersion::round_opened_type`]). Returns its predicate when it does.
fn check_round_opened(
    report: &mut VerifyReport,
    dir: &Path,
    statement: &Statement<PredicateText>,
    record: &RoundRecord,
    keyring: &Keyring,
    options: &VerifyOptions,
    version: PredicateVersion,
) -> Option<RoundOpened> {
    let opened_type = version.round_opened_type();
    let file = record.round_opened.as_str();
    let named = bundle::check_subject_name(file).is_ok()
        && statement.subject.iter().any(|s| s.name == file);
    if !named {
        report.fail(
            CheckName::RoundOpenedSignature,
            Some(file.to_owned()),
            FailureReason::RoundOpenedNotSubject {
                file: file.to_owned(),
            },
        );
        return None;
    }
    let mut scratch = VerifyReport::new(dir);
    let sub_options = VerifyOptions {
        expected_predicate_type: Some(opened_type.to_owned()),
        ..options.clone()
    };
    let opened_statement = verify_envelope(dir, file, keyring, &sub_options, &mut scratch);
    if !scratch.passed() {
        for check in scratch.failures() {
            let target = match &check.target {
                Some(t) => format!("{file} {} {t}", check.name.as_str()),
                None => format!("{file} {}", check.name.as_str()),
            };
            let reason = check.reason.clone().unwrap_or(FailureReason::NotRun {
                blocked_by: check.name,
            });
            report.fail(CheckName::RoundOpenedSignature, Some(target), reason);
        }
        return None;
    }
    let opened_statement = opened_statement?;
    match opened_statement.predicate_as::<RoundOpened>() {
        Ok(opened) => {
            report.pass(CheckName::RoundOpenedSignature, Some(file.to_owned()));
            Some(opened)
        }
        Err(e) => {
            report.fail(
                CheckName::RoundOpenedSignature,
                Some(file.to_owned()),
                FailureReason::SchemaInvalid {
                    file: file.to_owned(),
                    predicate_type: opened_type.to_owned(),
                    message: e.to_string(),
                },
            );
            None
        }
    }
}

/// `roundOpened.matches`: one check per field compared; the seated entries compare
/// position by position on (role, miner, patch).
fn check_matches(report: &mut VerifyReport, record: &RoundRecord, opened: &RoundOpened) {
    let file = record.round_opened.as_str();
    let mut compare = |field: &str, receipt: String, round_opened: String| {
        let result = if receipt == round_opened {
            Ok(())
        } else {
            Err(FailureReason::RoundOpenedMismatch {
                file: file.to_owned(),
                field: field.to_owned(),
                receipt,
                round_opened,
            })
        };
        report.record(
            CheckName::RoundOpenedMatches,
            Some(field.to_owned()),
            result,
        );
    };
    compare("round", record.round.to_string(), opened.round.to_string());
    compare(
        "campaign.id",
        record.campaign.id.to_string(),
        opened.campaign.id.to_string(),
    );
    compare(
        "campaign.digest",
        record.campaign.digest.to_string(),
        opened.campaign.digest.to_string(),
    );
    compare(
        "minersDigest",
        record.miners_digest.to_string(),
        opened.miners_digest.to_string(),
    );
    compare(
        "previousReceipt",
        show_digest(record.previous_receipt.as_ref()),
        show_digest(opened.previous_receipt.as_ref()),
    );
    let count = record.entries.len().max(opened.entries.len());
    for index in 0..count {
        let receipt = record
            .entries
            .get(index)
            .map(|e| seat(e.role, e.miner.as_ref(), e.patch.as_ref()));
        let seated = opened
            .entries
            .get(index)
            .map(|e| seat(e.role, e.miner.as_ref(), e.patch.as_ref()));
        compare(
            &format!("entries[{index}]"),
            receipt.unwrap_or_else(|| "none".to_owned()),
            seated.unwrap_or_else(|| "none".to_owned()),
        );
    }
}

/// An entry's seat, rendered: `challenger miner=<id> patch=<sha256>`.
fn seat(role: Role, miner: Option<&receipts::model::MinerId>, patch: Option<&Sha256Hex>) -> String {
    let role = role.as_str();
    let miner = miner.map_or_else(|| "none".to_owned(), ToString::to_string);
    format!("{role} miner={miner} patch={}", show_digest(patch))
}

fn show_digest(digest: Option<&Sha256Hex>) -> String {
    digest.map_or_else(|| "none".to_owned(), ToString::to_string)
}

/// `seeds.commitments`: per seed, sha256(seed ‖ salt) is its commitment and the
/// commitment is the one the round-opened statement published (not run for that part when
/// the round-opened statement did not verify; from v8 a beacon round publishes none).
fn check_seeds(
    report: &mut VerifyReport,
    record: &RoundRecord,
    opened: Option<&RoundOpened>,
    version: PredicateVersion,
) {
    let seeds = &record.seeds;
    // v4 opens a beacon round before its seeds exist: it publishes no commitments, each
    // reveal is checked consistent here and derived by `seeds.beacon`.
    let derived = version >= PredicateVersion::V8 && record.beacon.is_some();
    let published = opened.map(|o| match (&o.seed_commitments, derived) {
        (None, true) => Some(seeds.commitments()),
        (published, _) => published.clone(),
    });
    let published = published.as_ref().map(Option::as_ref);
    let rows: [(&str, &SeedReveal, Option<Option<&Sha256Hex>>); 5] = [
        (
            "seeds.itemSeed",
            &seeds.item_seed,
            published.map(|p| p.map(|p| &p.item_seed)),
        ),
        (
            "seeds.orderSeed",
            &seeds.order_seed,
            published.map(|p| p.map(|p| &p.order_seed)),
        ),
        (
            "seeds.scheduleSeed",
            &seeds.schedule_seed,
            published.map(|p| p.map(|p| &p.schedule_seed)),
        ),
        (
            "seeds.correctnessSeed",
            &seeds.correctness_seed,
            published.map(|p| p.map(|p| &p.correctness_seed)),
        ),
        (
            "seeds.promptSalt",
            &seeds.prompt_salt,
            published.map(|p| p.map(|p| &p.prompt_salt)),
        ),
    ];
    let v3_seeds = [
        (
            "seeds.sampleSeed",
            &seeds.sample_seed,
            published.map(|p| p.and_then(|p| p.sample_seed.as_ref())),
        ),
        (
            "seeds.passSeed",
            &seeds.pass_seed,
            published.map(|p| p.and_then(|p| p.pass_seed.as_ref())),
        ),
    ];
    for (name, reveal, published) in v3_seeds {
        check_v3_seed(report, record, name, reveal.as_ref(), published, version);
    }
    for (name, reveal, published) in rows {
        let result = seed_commitment(record, name, reveal, published);
        report.record(CheckName::SeedCommitments, Some(name.to_owned()), result);
    }
}

/// `seeds.beacon` (v5; `not applicable` before): the receipt's `practice` flag is the
/// round-opened statement's; a round with a beacon reveals the secret whose sha256 the
/// round-opened statement committed to, used the beacon round it named, holds a beacon
/// value that checks out offline ([`crate::beacon::check_beacon`]: a file beacon is
/// unsigned and passes as such), and every seed is the one derived from both
/// (`receipts::rules::seeds`), so a beacon value changed after sealing fails. A round
/// without a beacon has nothing to derive (`not applicable (no beacon)`).
fn check_beacon_seeds(
    report: &mut VerifyReport,
    record: &RoundRecord,
    opened: Option<&RoundOpened>,
    version: PredicateVersion,
) {
    if version < PredicateVersion::V5 {
        report.not_applicable(CheckName::SeedsBeacon, None, version.name());
        return;
    }
    let file = record.round_opened.as_str();
    let against_opened = |field: &str, receipt: String, at_opening: Option<String>| match at_opening
    {
        None => Err(FailureReason::NotRun {
            blocked_by: CheckName::RoundOpenedSignature,
        }),
        Some(at_opening) if at_opening == receipt => Ok(()),
        Some(at_opening) => Err(files::recomputed(file, field, at_opening, receipt)),
    };
    report.record(
        CheckName::SeedsBeacon,
        Some("practice".to_owned()),
        against_opened(
            "practice",
            record.practice.to_string(),
            opened.map(|o| o.practice.to_string()),
        ),
    );
    let (beacon, secret) = match (&record.beacon, &record.evaluator_secret) {
        (None, None) => {
            let result = against_opened(
                "beacon",
                "none".to_owned(),
                opened.map(|o| {
                    files::show(
                        o.beacon
                            .as_ref()
                            .map(|b| format!("{} round {}", b.source.as_str(), b.round)),
                    )
                }),
            );
            match result {
                Ok(()) => report.not_applicable(
                    CheckName::SeedsBeacon,
                    Some("beacon".to_owned()),
                    "no beacon",
                ),
                Err(reason) => {
                    report.fail(CheckName::SeedsBeacon, Some("beacon".to_owned()), reason)
                }
            }
            return;
        }
        (Some(beacon), Some(secret)) => (beacon, secret),
        (beacon, secret) => {
            report.fail(
                CheckName::SeedsBeacon,
                Some("beacon".to_owned()),
                files::recomputed(
                    "receipt.dsse.json",
                    "evaluatorSecret",
                    files::show(secret.map(|s| s.to_hex())),
                    if beacon.is_some() {
                        "the secret the beacon's seeds derive from"
                    } else {
                        "none without a beacon"
                    },
                ),
            );
            return;
        }
    };
    report.record(
        CheckName::SeedsBeacon,
        Some("evaluatorSecret".to_owned()),
        against_opened(
            "evaluatorSecretSha256",
            secret_commitment(secret).to_string(),
            opened.map(|o| files::show(o.evaluator_secret_sha256)),
        ),
    );
    report.record(
        CheckName::SeedsBeacon,
        Some("beacon.round".to_owned()),
        against_opened(
            "beacon",
            format!("{} round {}", beacon.source.as_str(), beacon.round),
            opened.map(|o| {
                files::show(
                    o.beacon
                        .as_ref()
                        .map(|b| format!("{} round {}", b.source.as_str(), b.round)),
                )
            }),
        ),
    );
    report.record(
        CheckName::SeedsBeacon,
        Some("beacon.value".to_owned()),
        crate::beacon::check_beacon(beacon)
            .map(drop)
            .map_err(|e| FailureReason::InputInvalid {
                file: "receipt.dsse.json".to_owned(),
                message: e.to_string(),
            }),
    );
    let derived = derived_seeds(secret, &beacon.value);
    let seeds = &record.seeds;
    let rows = [
        (
            "seeds.itemSeed",
            Some(&seeds.item_seed),
            Some(&derived.item_seed),
        ),
        (
            "seeds.orderSeed",
            Some(&seeds.order_seed),
            Some(&derived.order_seed),
        ),
        (
            "seeds.scheduleSeed",
            Some(&seeds.schedule_seed),
            Some(&derived.schedule_seed),
        ),
        (
            "seeds.correctnessSeed",
            Some(&seeds.correctness_seed),
            Some(&derived.correctness_seed),
        ),
        (
            "seeds.promptSalt",
            Some(&seeds.prompt_salt),
            Some(&derived.prompt_salt),
        ),
        (
            "seeds.sampleSeed",
            seeds.sample_seed.as_ref(),
            derived.sample_seed.as_ref(),
        ),
        (
            "seeds.passSeed",
            seeds.pass_seed.as_ref(),
            derived.pass_seed.as_ref(),
        ),
    ];
    for (name, revealed, derived) in rows {
        let show = |reveal: Option<&SeedReveal>| files::show(reveal.map(|r| r.seed.to_hex()));
        let result = if revealed == derived {
            Ok(())
        } else {
            Err(files::recomputed(
                "receipt.dsse.json",
                name,
                show(revealed),
                show(derived),
            ))
        };
        report.record(CheckName::SeedsBeacon, Some(name.to_owned()), result);
    }
}

/// `seeds.commitments` for a seed v3 added (`seeds.sampleSeed`, `seeds.passSeed`):
/// consistent, and published by the round-opened statement (`published`: `None` when it
/// did not verify, `Some(None)` when it has no such commitment); `not applicable` before
/// v3. A v3 round without it fails: its timed-run samples or its pass order would be
/// drawn from nothing committed.
fn check_v3_seed(
    report: &mut VerifyReport,
    record: &RoundRecord,
    name: &str,
    reveal: Option<&SeedReveal>,
    published: Option<Option<&Sha256Hex>>,
    version: PredicateVersion,
) {
    let target = Some(name.to_owned());
    let Some(reveal) = reveal else {
        if version >= PredicateVersion::V3 {
            report.fail(
                CheckName::SeedCommitments,
                target,
                files::recomputed("receipt.dsse.json", name, "absent", "a committed seed"),
            );
        } else {
            report.not_applicable(CheckName::SeedCommitments, target, version.name());
        }
        return;
    };
    let result = seed_commitment(record, name, reveal, published);
    report.record(CheckName::SeedCommitments, target, result);
}

/// One seed's `seeds.commitments` result: `reveal` is consistent (its seed and salt give
/// its commitment) and is the commitment `published` by the round-opened statement
/// (`None` when that statement did not verify, `Some(None)` when it has no commitment for
/// this seed); `name` is the seed's field (`seeds.itemSeed`).
fn seed_commitment(
    record: &RoundRecord,
    name: &str,
    reveal: &SeedReveal,
    published: Option<Option<&Sha256Hex>>,
) -> Result<(), FailureReason> {
    if !reveal.is_consistent() {
        Err(FailureReason::SeedInconsistent {
            seed: name.to_owned(),
            commitment: Box::new(reveal.commitment),
            actual: Box::new(SeedReveal::commit(reveal.seed, reveal.salt).commitment),
        })
    } else {
        match published {
            None => Err(FailureReason::NotRun {
                blocked_by: CheckName::RoundOpenedSignature,
            }),
            Some(Some(p)) if *p == reveal.commitment => Ok(()),
            Some(Some(p)) => Err(FailureReason::SeedCommitmentMismatch {
                file: record.round_opened.clone(),
                seed: name.to_owned(),
                receipt: Box::new(reveal.commitment),
                round_opened: Box::new(*p),
            }),
            Some(None) => Err(files::recomputed(
                &record.round_opened,
                format!("seedCommitments.{}", name.trim_start_matches("seeds.")),
                "absent",
                reveal.commitment.as_str(),
            )),
        }
    }
}

/// `correctness.loadSample`, once per entry naming a timed-run sample file.
fn check_load_samples(
    report: &mut VerifyReport,
    dir: &Path,
    record: &RoundRecord,
    campaign: Option<&receipts::model::FrozenCampaign>,
    version: PredicateVersion,
) {
    for entry in &record.entries {
        let Some(file) = entry
            .correctness
            .as_ref()
            .and_then(|c| c.load_sample_file.as_deref())
        else {
            continue;
        };
        let at = format!("entries[{}].correctness.loadSampleFile", entry.index);
        let result = files::read_json::<LoadSample>(dir, file).and_then(|sample| {
            if version >= PredicateVersion::V5 {
                covers_every_counted_run(file, &entry.passes, &sample)?;
            }
            recheck_load_sample(file, entry, &sample, record, campaign, version)
        });
        report.record(CheckName::LoadSample, Some(at), result);
    }
}

/// From v5 the sample covers every run that enters the entry's score, and no other:
/// its runs are [`sample::sampled_passes`] of the entry's rows `passes`.
fn covers_every_counted_run(
    file: &str,
    passes: &[receipts::model::EntryPass],
    sample: &LoadSample,
) -> Result<(), FailureReason> {
    let found: Vec<u32> = sample.runs.iter().map(|r| r.run).collect();
    let expected = sample::sampled_passes(passes);
    if found == expected {
        Ok(())
    } else {
        Err(files::recomputed(
            file,
            "runs[].run",
            format!("{found:?}"),
            format!("{expected:?} (every measured pass)"),
        ))
    }
}

/// One entry's sample recomputed ([`receipts::rules::sample::recheck`]) and its verdict
/// held against the entry's status.
fn recheck_load_sample(
    file: &str,
    entry: &Entry,
    sample: &LoadSample,
    record: &RoundRecord,
    campaign: Option<&receipts::model::FrozenCampaign>,
    version: PredicateVersion,
) -> Result<(), FailureReason> {
    if sample.entry != entry.index {
        return Err(files::recomputed(file, "entry", sample.entry, entry.index));
    }
    if let Some(frozen) = campaign {
        let spec = &frozen.campaign.correctness;
        check_load_bounds(file, sample, spec, version)?;
        if sample.sample_size != spec.effective_load_sample() {
            return Err(files::recomputed(
                file,
                "sampleSize",
                sample.sample_size,
                spec.effective_load_sample(),
            ));
        }
    }
    let Some(seed) = &record.seeds.sample_seed else {
        return Err(files::recomputed(
            "receipt.dsse.json",
            "seeds.sampleSeed",
            "absent",
            "the seed the sample was drawn with",
        ));
    };
    let divergent = sample::recheck(sample, &seed.seed)
        .map_err(|mismatch| files::recomputed(file, "runs", "as stored", mismatch))?
        .map(|d| d.reason(sample));
    let claimed = entry
        .disqualification
        .as_ref()
        .map(|d| d.reason)
        .filter(|reason| {
            matches!(
                reason,
                DisqualificationReason::LoadOutputsDiverge { .. }
                    | DisqualificationReason::LoadGroupDiverges { .. }
                    | DisqualificationReason::LoadPositionsOver { .. }
            )
        });
    let show = |v: Option<DisqualificationReason>| {
        v.map_or_else(|| "none".to_owned(), |reason| format!("{reason:?}"))
    };
    // A divergent sample disqualifies unless something disqualified the entry earlier.
    let earlier = entry.status == EntryStatus::Disqualified && claimed.is_none();
    if claimed == divergent || (earlier && divergent.is_some()) {
        Ok(())
    } else {
        Err(files::recomputed(
            "receipt.dsse.json",
            format!("entries[{}].disqualification", entry.index),
            show(claimed),
            show(divergent),
        ))
    }
}

/// The sample's recorded bounds against the campaign's: from v7 the four calibrated
/// bounds ([`receipts::model::CorrectnessSpec::effective_load_bounds`], required); before,
/// the one item bound of `load_bound_micro_nats` and no other.
fn check_load_bounds(
    file: &str,
    sample: &LoadSample,
    spec: &receipts::model::CorrectnessSpec,
    version: PredicateVersion,
) -> Result<(), FailureReason> {
    let v7 = version >= PredicateVersion::V7;
    let bounds = spec.effective_load_bounds();
    let recorded = [
        (
            "boundMicroNats",
            Some(sample.bound_micro_nats),
            if v7 {
                bounds.item_micro_nats
            } else {
                spec.effective_load_bound_micro_nats()
            },
        ),
        (
            "groupBoundMicroNats",
            sample.group_bound_micro_nats,
            bounds.group_micro_nats,
        ),
        (
            "positionBoundMicroNats",
            sample.position_bound_micro_nats,
            bounds.position_micro_nats,
        ),
        (
            "maxPositionsOver",
            sample.max_positions_over.map(u64::from),
            u64::from(bounds.max_positions_over),
        ),
    ];
    for (i, (field, found, expected)) in recorded.into_iter().enumerate() {
        let expected = (i == 0 || v7).then_some(expected);
        if found != expected {
            let show = |v: Option<u64>| v.map_or_else(|| "absent".to_owned(), |v| v.to_string());
            return Err(files::recomputed(file, field, show(found), show(expected)));
        }
    }
    Ok(())
}

/// `round.throughput`: per entry with a throughput, it is the median (lower middle for
/// an even count) of its runs' throughputs, every run having one (content/measurement.md, Entry,
/// as `runner::ratesearch::search_entry` computes it), and min and max are the runs' min
/// and max; an entry without a throughput has no min or max.
fn check_throughputs(report: &mut VerifyReport, record: &RoundRecord) {
    for entry in &record.entries {
        let written = [
            ("throughputMilliRps", entry.throughput_milli_rps),
            ("throughputMinMilliRps", entry.throughput_min_milli_rps),
            ("throughputMaxMilliRps", entry.throughput_max_milli_rps),
        ];
        let expected = if entry.throughput_milli_rps.is_some() {
            let runs: Option<Vec<u64>> =
                entry.runs.iter().map(|r| r.throughput_milli_rps).collect();
            match runs.as_deref().and_then(run_throughputs) {
                Some((median, min, max)) => [Some(median), Some(min), Some(max)],
                None => [None; 3],
            }
        } else {
            [None; 3]
        };
        let mismatch = written
            .iter()
            .zip(expected)
            .find(|((_, found), expected)| found != expected);
        let result = match mismatch {
            None => Ok(()),
            Some(((field, found), expected)) => Err(FailureReason::ThroughputMismatch {
                index: entry.index,
                field: (*field).to_owned(),
                found: *found,
                expected,
            }),
        };
        report.record(
            CheckName::RoundThroughput,
            Some(format!("entries[{}]", entry.index)),
            result,
        );
    }
}

/// `round.scores`: per entry, `scorePpm` is [`score_ppm`] of its throughput against the
/// first baseline's (entry 0, role baseline, status scored) when the entry is scored, and
/// absent otherwise (content/leader-rule.md; the baseline scores 0).
fn check_scores(report: &mut VerifyReport, record: &RoundRecord) {
    let baseline = record
        .entries
        .first()
        .filter(|e| e.role == Role::Baseline && e.status == EntryStatus::Scored)
        .and_then(|e| e.throughput_milli_rps);
    for entry in &record.entries {
        let expected = expected_score(entry, baseline);
        let result = if entry.score_ppm == expected {
            Ok(())
        } else {
            Err(FailureReason::ScoreMismatch {
                index: entry.index,
                found: entry.score_ppm,
                expected,
                throughput_milli_rps: entry.throughput_milli_rps,
                baseline_milli_rps: baseline,
            })
        };
        report.record(
            CheckName::RoundScores,
            Some(format!("entries[{}]", entry.index)),
            result,
        );
    }
}

/// The score an entry must carry: its throughput against the first baseline's when it is
/// scored and both exist, none otherwise.
fn expected_score(entry: &Entry, baseline_milli_rps: Option<u64>) -> Option<i64> {
    if entry.status != EntryStatus::Scored {
        return None;
    }
    score_ppm(entry.throughput_milli_rps?, baseline_milli_rps?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use receipts::model::{EntryPass, LoadSampleCheck, LoadSampleRun, PassStatus};

    /// Regression (issue 40): a sample of the first run only passed whatever the other
    /// runs streamed. From v5 it must cover every measured pass, and only those.
    #[test]
    fn a_v5_sample_covers_exactly_the_measured_passes() {
        let row = |pass, status| EntryPass {
            pass,
            control: false,
            status,
            throughput_milli_rps: None,
            paired_ratio_ppm: None,
            probe_log: None,
            engine_log: None,
            host_load: None,
            gpus: Vec::new(),
            telemetry: None,
        };
        let passes = [
            row(0, PassStatus::Measured),
            row(1, PassStatus::Invalid),
            row(1, PassStatus::Measured),
            row(2, PassStatus::Measured),
        ];
        let sample = |runs: &[u32]| LoadSample {
            entry: 1,
            sample_size: 8,
            bound_micro_nats: 2_000_000,
            runs: runs
                .iter()
                .map(|&run| LoadSampleRun {
                    run,
                    probe: 3,
                    completed: Vec::new(),
                    check: LoadSampleCheck::NotApplicable {
                        reason: "no kept request of the result probe completed".into(),
                    },
                })
                .collect(),
            text_against_ids: None,
            measured_for: None,
            group_bound_micro_nats: None,
            position_bound_micro_nats: None,
            max_positions_over: None,
        };
        let file = "correctness/challenger-1-load-sample.json";
        assert_eq!(
            covers_every_counted_run(file, &passes, &sample(&[0, 1, 2])),
            Ok(())
        );
        assert_eq!(
            covers_every_counted_run(file, &passes, &sample(&[0])),
            Err(files::recomputed(
                file,
                "runs[].run",
                "[0]",
                "[0, 1, 2] (every measured pass)"
            ))
        );
        assert!(covers_every_counted_run(file, &passes, &sample(&[0, 1, 1, 2])).is_err());
    }
}
