//! The capability probe of a round (content/engines.md, The capability probe; a
//! decision sidecar's, content/s1-pro-speed.md): `capability.probe` checks that the
//! recorded findings are well formed and agree with the round. The findings themselves are observations of the baseline engine at setup
//! (nothing in the bundle recomputes them); what they decide is recomputed: the
//! outcome's `capability_missing` step ([`failure`], read by `paired.decision`) and, here,
//! that no entry ran after a missing finding.

use crate::{CheckName, FailureReason, VerifyReport};
use receipts::model::{
    ApiProfile, Backend, CAPABILITY_PROBE_STEP, CapabilityFeature, CapabilityProbe, FindingStatus,
    FrozenCampaign, RoundFailure, RoundRecord,
};

use crate::PredicateVersion;
use crate::files::recomputed;

/// The predicate file, as failure messages name it.
const RECEIPT: &str = "receipt.dsse.json";

/// The check's target: the predicate field it reads.
const TARGET: &str = "capabilityProbe";

/// The round's failure the receipt's probe implies: its first missing finding, as
/// [`RoundFailure::CapabilityMissing`] (a missing finding without a field gives an empty
/// one, which `capability.probe` fails).
pub(crate) fn failure(record: &RoundRecord) -> Option<RoundFailure> {
    let finding = record.capability_probe.as_ref()?.first_missing()?;
    Some(RoundFailure::CapabilityMissing {
        feature: finding.feature,
        field: finding.field.clone().unwrap_or_default(),
    })
}

/// `capability.probe` on a round of `version` under `campaign` (when `inputs.campaign`
/// passed): `not applicable (v1/v2)` before v3, and on a v3 round without a probe under
/// a non-built-in backend (sealed before the probe existed); otherwise failed when a v4
/// round under a non-built-in backend, or a v9 round of a `decide` campaign under any
/// backend, has no probe, when a round that is not probed (the built-in engine's
/// completions, a decision sidecar before v9) has one, when the findings are not one per
/// [`CapabilityFeature::asked_for`] the campaign's workload kind in order, when a finding's `field` is present on a finding
/// that is not missing or is not one of its feature's fields on a missing one, when a
/// finding is `not_asked` before any missing one, when a finding is `not_needed` although
/// the campaign's API profile needs its feature or is anything else although the profile
/// does not ([`CapabilityFeature::needed`]: `tokenIdPrompts` with token-id prompts,
/// `textRoundTrip` without), or when an entry ran after a missing finding (a run summary
/// or a pass row with a probe log).
pub(crate) fn check_capability(
    report: &mut VerifyReport,
    record: &RoundRecord,
    campaign: Option<&FrozenCampaign>,
    version: PredicateVersion,
) {
    let target = Some(TARGET.to_owned());
    if version < PredicateVersion::V3 {
        report.not_applicable(CheckName::CapabilityProbe, target, version.name());
        return;
    }
    let Some(campaign) = campaign else {
        report.fail(
            CheckName::CapabilityProbe,
            target,
            FailureReason::NotRun {
                blocked_by: CheckName::InputsCampaign,
            },
        );
        return;
    };
    // The built-in engine's completions API is referee's own; a decision sidecar's
    // contract is probed from v9 on, whatever serves it.
    let builtin = match campaign.campaign.decide {
        Some(_) => version < PredicateVersion::V9,
        None => matches!(campaign.campaign.backend, Backend::Builtin),
    };
    let features = CapabilityFeature::asked_for(campaign.campaign.effective_workload_kind());
    let result = match &record.capability_probe {
        None if builtin => Ok(()),
        // v3 builds recorded the probe only late (ARCHITECTURE.md, Predicate versions);
        // v4 requires it.
        None if version == PredicateVersion::V3 => {
            report.not_applicable(
                CheckName::CapabilityProbe,
                target,
                "sealed before the probe",
            );
            return;
        }
        None => Err(recomputed(
            RECEIPT,
            TARGET,
            "absent",
            "the findings of the probe a round on a real engine opens with",
        )),
        Some(_) if builtin => Err(recomputed(
            RECEIPT,
            TARGET,
            "present",
            "absent: the built-in engine's completions and a decision sidecar before v9 are \
             not probed",
        )),
        Some(probe) => well_formed(probe, features, &campaign.campaign.api_profile())
            .and_then(|()| within_its_step(record, probe))
            .and_then(|()| nothing_ran(record, probe)),
    };
    report.record(CheckName::CapabilityProbe, target, result);
}

/// One finding per feature, in order; `not_needed` exactly on the features `api` does not
/// need; `field` exactly on missing findings, one of the feature's; `not_asked` only after
/// a missing finding.
fn well_formed(
    probe: &CapabilityProbe,
    asked: &[CapabilityFeature],
    api: &ApiProfile,
) -> Result<(), FailureReason> {
    let features: Vec<CapabilityFeature> = probe.findings.iter().map(|f| f.feature).collect();
    if features != asked {
        return Err(recomputed(
            RECEIPT,
            "capabilityProbe.findings",
            format!("{features:?}"),
            format!("one finding per feature, in order: {asked:?}"),
        ));
    }
    let mut missing_before = false;
    for (i, f) in probe.findings.iter().enumerate() {
        let at = |field: &str| format!("capabilityProbe.findings[{i}].{field}");
        let needed = f.feature.needed(api);
        if needed == (f.status == FindingStatus::NotNeeded) {
            let (claimed, expected) = if needed {
                ("not_needed", "asked: the campaign's API profile needs it")
            } else {
                (
                    "asked",
                    "not_needed: the campaign's API profile does not need it",
                )
            };
            return Err(recomputed(RECEIPT, at("status"), claimed, expected));
        }
        match (f.status, f.field.as_deref()) {
            (FindingStatus::Missing, Some(field)) if f.feature.fields().contains(&field) => {
                missing_before = true;
            }
            (FindingStatus::Missing, claimed) => {
                return Err(recomputed(
                    RECEIPT,
                    at("field"),
                    claimed.unwrap_or("absent"),
                    format!(
                        "one of {:?}, the fields that fix `{}`",
                        f.feature.fields(),
                        f.feature
                    ),
                ));
            }
            (_, Some(field)) => {
                return Err(recomputed(
                    RECEIPT,
                    at("field"),
                    field,
                    "absent: only a missing finding names a field",
                ));
            }
            (FindingStatus::NotAsked, None) if !missing_before => {
                return Err(recomputed(
                    RECEIPT,
                    at("status"),
                    "not_asked",
                    "ok or missing: no earlier finding is missing",
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The probe's `durationMs` (the runner's monotonic clock, from engine start to stop)
/// fits inside its own timeline step (`endedAt − startedAt`, the wall clock), with 2 ms
/// for the rounding of both and 0.1 % for the wall clock's slew.
fn within_its_step(record: &RoundRecord, probe: &CapabilityProbe) -> Result<(), FailureReason> {
    let Some(step) = record
        .steps
        .iter()
        .find(|s| s.name == CAPABILITY_PROBE_STEP)
    else {
        return Err(recomputed(
            RECEIPT,
            "steps",
            "no step",
            format!("a step `{CAPABILITY_PROBE_STEP}`, the one the capability probe ran in"),
        ));
    };
    let step_ms = u64::try_from(step.started_at.millis_until(step.ended_at)).unwrap_or(0);
    let bound_ms = step_ms + 2 + step_ms / 1000;
    if probe.duration_ms <= bound_ms {
        Ok(())
    } else {
        Err(recomputed(
            RECEIPT,
            "capabilityProbe.durationMs",
            probe.duration_ms,
            format!(
                "at most {bound_ms} (its step `{CAPABILITY_PROBE_STEP}`, index {}, lasted {step_ms} ms)",
                step.index
            ),
        ))
    }
}

/// After a missing finding no entry ran: no run summary, no pass row with a probe log.
fn nothing_ran(record: &RoundRecord, probe: &CapabilityProbe) -> Result<(), FailureReason> {
    if probe.first_missing().is_none() {
        return Ok(());
    }
    for entry in &record.entries {
        let ran = !entry.runs.is_empty() || entry.passes.iter().any(|p| p.probe_log.is_some());
        if ran {
            return Err(recomputed(
                RECEIPT,
                format!("entries[{}].runs", entry.index),
                "a run",
                "none: the capability probe found a feature missing, so no entry runs",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use receipts::model::CapabilityFinding;

    fn probe(statuses: [(FindingStatus, Option<&str>); 7]) -> CapabilityProbe {
        probe_of(&CapabilityFeature::ALL, statuses)
    }

    /// A probe with one finding per feature of `features`, in their order, at `statuses`.
    fn probe_of<const N: usize>(
        features: &[CapabilityFeature; N],
        statuses: [(FindingStatus, Option<&str>); N],
    ) -> CapabilityProbe {
        CapabilityProbe {
            findings: features
                .iter()
                .zip(statuses)
                .map(|(feature, (status, field))| CapabilityFinding {
                    feature: *feature,
                    status,
                    detail: "d".into(),
                    field: field.map(str::to_owned),
                })
                .collect(),
            duration_ms: 5,
        }
    }

    /// A completions campaign's features.
    const ALL: &[CapabilityFeature] = &CapabilityFeature::ALL;
    const OK: (FindingStatus, Option<&str>) = (FindingStatus::Ok, None);
    const NOT_NEEDED: (FindingStatus, Option<&str>) = (FindingStatus::NotNeeded, None);

    #[test]
    fn findings_are_one_per_feature_with_fields_only_on_missing_ones() {
        let api = ApiProfile::default();
        // Under the default profile `textRoundTrip` (the last) is not needed.
        let ok = |statuses: [(FindingStatus, Option<&'static str>); 6]| {
            let mut all = [NOT_NEEDED; 7];
            all[..6].copy_from_slice(&statuses);
            probe(all)
        };
        assert!(well_formed(&ok([OK; 6]), ALL, &api).is_ok());
        let missing = (FindingStatus::Missing, Some("backend.api.token_count"));
        let not_asked = (FindingStatus::NotAsked, None);
        assert!(well_formed(&ok([OK, missing, OK, OK, OK, OK]), ALL, &api).is_ok());
        assert!(well_formed(&ok([OK, missing, not_asked, OK, OK, OK]), ALL, &api).is_ok());
        // A field that does not fix the feature.
        let wrong = (FindingStatus::Missing, Some("backend.api.bos"));
        let message = well_formed(&ok([OK, wrong, OK, OK, OK, OK]), ALL, &api)
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("capabilityProbe.findings[1].field"),
            "{message}"
        );
        // A field on an ok finding, a not_asked one before anything was missing.
        let stray = (FindingStatus::Ok, Some("backend.api.readiness"));
        assert!(well_formed(&ok([stray, OK, OK, OK, OK, OK]), ALL, &api).is_err());
        assert!(well_formed(&ok([not_asked, OK, OK, OK, OK, OK]), ALL, &api).is_err());
        // Out of order.
        let mut swapped = ok([OK; 6]);
        swapped.findings.swap(0, 1);
        assert!(well_formed(&swapped, ALL, &api).is_err());
    }

    /// Issue 15: which of `tokenIdPrompts` and `textRoundTrip` a round needs is the
    /// profile's `token_id_prompts`; a probe claiming otherwise fails, either way.
    #[test]
    fn not_needed_is_exactly_what_the_profile_does_not_need() {
        let ids = ApiProfile::default();
        let text = ApiProfile {
            token_id_prompts: false,
            ..ApiProfile::default()
        };
        assert!(well_formed(&probe([OK, OK, OK, OK, OK, NOT_NEEDED, OK]), ALL, &text).is_ok());
        // Text teacher forcing missing: the round trip names its field.
        let round_trip = (FindingStatus::Missing, Some("backend.api.detokenizer"));
        assert!(
            well_formed(
                &probe([OK, OK, OK, OK, OK, NOT_NEEDED, round_trip]),
                ALL,
                &text
            )
            .is_ok()
        );
        // Under the token-id profile the same findings claim a needed feature unneeded.
        let message = well_formed(&probe([OK, OK, OK, OK, OK, NOT_NEEDED, OK]), ALL, &ids)
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("capabilityProbe.findings[5].status")
                && message.contains("not_needed"),
            "{message}"
        );
        // And an asked feature the profile does not need.
        let message = well_formed(&probe([OK; 7]), ALL, &ids)
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("capabilityProbe.findings[6].status"),
            "{message}"
        );
        assert!(well_formed(&probe([OK; 7]), ALL, &text).is_err());
    }

    /// A decision sidecar's probe is one finding per [`CapabilityFeature::DECIDE`]: the
    /// completions features in its place fail, and a missing finding names one of the
    /// fields that fix its feature.
    #[test]
    fn a_decide_probe_has_the_decide_features_with_their_fields() {
        let api = ApiProfile::default();
        let decide = |statuses| probe_of(&CapabilityFeature::DECIDE, statuses);
        let asked = &CapabilityFeature::DECIDE;
        assert!(well_formed(&decide([OK; 4]), asked, &api).is_ok());
        let unchecked = (FindingStatus::Missing, Some("baseline.commit"));
        assert!(well_formed(&decide([OK, unchecked, OK, OK]), asked, &api).is_ok());
        let wrong = (FindingStatus::Missing, Some("decide.vector_pointer"));
        let message = well_formed(&decide([OK, wrong, OK, OK]), asked, &api)
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("capabilityProbe.findings[1].field"),
            "{message}"
        );
        assert!(well_formed(&decide([OK; 4]), ALL, &api).is_err());
        let completions = probe([OK, OK, OK, OK, OK, OK, NOT_NEEDED]);
        assert!(well_formed(&completions, asked, &api).is_err());
    }
}
