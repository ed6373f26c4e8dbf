//! `pod.agent` (content/pods.md, What the receipt records; round/v9): a round whose
//! frozen campaign rents a pod (`[pod] backend = "slurm"`) records it (`pod`), and each
//! allocation's record agrees with the timeline: its steps are steps of the round's
//! `Pod` group, renting first, and the agent's digest is the one its shipping step's log
//! names for the shipped binary (`bin/referee sha256:<hex>`), the allocation's id the one
//! its renting step's log names. The scheduler's own words (nodes, GPUs) are attested
//! (`crate::ATTESTED_FIELDS`).
//!
//! Nothing before v9 recorded a pod, so an older bundle never meets the check.

use std::path::Path;

use receipts::fsutil::read_limited;
use receipts::model::{
    FrozenCampaign, POD_STEP_GROUP as POD_GROUP, PodAllocation, PodBackend,
    RENTING_STEP as RENTING, RoundRecord, SHIPPED_BINARY_LINE as SHIPPED_BINARY,
    SHIPPING_STEP as SHIPPING, Step,
};

use crate::{CheckName, FailureReason, PredicateVersion, VerifyReport};

/// Largest step log read, bytes.
const MAX_STEP_LOG_BYTES: usize = 1 << 20;

/// Runs `pod.agent` on `record` (one check per allocation, `pod.allocations[i]` as
/// target) against `campaign` (when `inputs.campaign` passed); the step logs read from
/// the bundle in `dir`. Nothing before v9, nor for a round on the evaluator's own machine
/// that records no pod.
pub(crate) fn check_pod(
    report: &mut VerifyReport,
    dir: &Path,
    record: &RoundRecord,
    campaign: Option<&FrozenCampaign>,
    version: PredicateVersion,
) {
    if version < PredicateVersion::V9 {
        return;
    }
    let rented = campaign
        .and_then(|c| c.campaign.pod.as_ref())
        .map_or(PodBackend::Local, |p| p.backend);
    let Some(pod) = &record.pod else {
        if rented != PodBackend::Local {
            report.fail(
                CheckName::PodAgent,
                Some("pod".to_owned()),
                fail(
                    "pod",
                    format!("missing: the campaign rents a `{rented:?}` pod").to_lowercase(),
                ),
            );
        }
        return;
    };
    if campaign.is_some() && pod.backend != rented {
        report.fail(
            CheckName::PodAgent,
            Some("pod".to_owned()),
            fail(
                "pod.backend",
                format!("is {:?}, but the campaign's pod is {rented:?}", pod.backend),
            ),
        );
        return;
    }
    if pod.allocations.is_empty() {
        report.fail(
            CheckName::PodAgent,
            Some("pod".to_owned()),
            fail(
                "pod.allocations",
                "empty: a rented pod has an allocation".into(),
            ),
        );
        return;
    }
    for (i, allocation) in pod.allocations.iter().enumerate() {
        let at = format!("pod.allocations[{i}]");
        let result = check_allocation(dir, record, &at, allocation);
        report.record(CheckName::PodAgent, Some(at), result);
    }
}

/// The reason of a failed check of this module.
fn fail(field: &str, message: String) -> FailureReason {
    FailureReason::PodRecord {
        field: field.to_owned(),
        message,
    }
}

/// One allocation against its steps and their logs.
fn check_allocation(
    dir: &Path,
    record: &RoundRecord,
    at: &str,
    allocation: &PodAllocation,
) -> Result<(), FailureReason> {
    let mut steps: Vec<&Step> = Vec::with_capacity(allocation.steps.len());
    for (k, index) in allocation.steps.iter().enumerate() {
        let step = (record.steps.get(*index as usize))
            .filter(|s| s.group == POD_GROUP)
            .ok_or_else(|| {
                fail(
                    &format!("{at}.steps[{k}]"),
                    format!("names step {index}, which is no step of the `{POD_GROUP}` group"),
                )
            })?;
        steps.push(step);
    }
    if steps.first().is_none_or(|s| s.name != RENTING) {
        return Err(fail(
            &format!("{at}.steps"),
            format!("do not begin with `{RENTING}`"),
        ));
    }
    let renting = read_log(dir, steps[0])?;
    let rented = format!("allocation {} on ", allocation.id);
    if !renting.lines().any(|l| l.starts_with(&rented)) {
        return Err(fail(
            &format!("{at}.id"),
            format!(
                "is {}, but the log of `{RENTING}` names no `{rented}…`",
                allocation.id
            ),
        ));
    }
    let shipping = steps
        .iter()
        .find(|s| s.name == SHIPPING)
        .ok_or_else(|| fail(&format!("{at}.steps"), format!("hold no `{SHIPPING}`")))?;
    let log = read_log(dir, shipping)?;
    let shipped = log
        .lines()
        .find_map(|l| l.strip_prefix(SHIPPED_BINARY))
        .ok_or_else(|| {
            fail(
                &format!("{at}.agentSha256"),
                format!("the log of `{SHIPPING}` names no `{SHIPPED_BINARY}…`"),
            )
        })?;
    if shipped != allocation.agent_sha256.as_str() {
        return Err(crate::files::recomputed(
            "receipt.dsse.json",
            format!("{at}.agentSha256"),
            allocation.agent_sha256,
            shipped,
        ));
    }
    Ok(())
}

/// The log of `step`, as text.
fn read_log(dir: &Path, step: &Step) -> Result<String, FailureReason> {
    let name = step.log.as_deref().ok_or_else(|| {
        fail(
            &format!("steps[{}].log", step.index),
            "absent: a pod step's log is its evidence".into(),
        )
    })?;
    receipts::bundle::check_subject_name(name)
        .map_err(|rule| crate::files::unreadable(name, rule.to_owned()))?;
    let bytes = read_limited(&dir.join(name), MAX_STEP_LOG_BYTES)
        .map_err(|e| crate::files::unreadable(name, e.to_string()))?;
    String::from_utf8(bytes).map_err(|_| crate::files::unreadable(name, "not UTF-8".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use receipts::model::{Phase, Sha256Hex, StepStatus, Timestamp};

    /// A record with two `Pod` steps (renting allocation 42, shipping `agent`), their
    /// logs written under `dir`, and the allocation record `allocation` of them.
    fn pod_steps(dir: &Path, agent: &Sha256Hex) -> (RoundRecord, PodAllocation) {
        let fixture = testkit::forge::fixture_named("v9-round");
        let statement = testkit::forge::statement(&fixture, "receipt.dsse.json");
        let mut record: RoundRecord =
            serde_json::from_value(statement["predicate"].clone()).unwrap();
        let first = u32::try_from(record.steps.len()).unwrap();
        let at = Timestamp::now();
        for (k, (name, phase, line)) in [
            (
                RENTING,
                Phase::Provisioning,
                "allocation 42 on node1".to_owned(),
            ),
            (
                SHIPPING,
                Phase::Bootstrapping,
                format!("{SHIPPED_BINARY}{agent}"),
            ),
        ]
        .into_iter()
        .enumerate()
        {
            let index = first + u32::try_from(k).unwrap();
            let log = format!("logs/steps/{index:02}-pod.log");
            std::fs::create_dir_all(dir.join("logs/steps")).unwrap();
            std::fs::write(dir.join(&log), format!("{POD_GROUP} — {name}\n{line}\n")).unwrap();
            record.steps.push(Step {
                index,
                group: POD_GROUP.into(),
                name: name.into(),
                phase,
                started_at: at,
                ended_at: at,
                status: StepStatus::Ok,
                log: Some(log),
            });
        }
        let allocation = PodAllocation {
            id: 42,
            nodes: "node1".into(),
            agent_sha256: *agent,
            gpus: "0,1".into(),
            steps: vec![first, first + 1],
        };
        (record, allocation)
    }

    #[test]
    fn an_allocation_agrees_with_its_step_logs_and_each_forgery_fails() {
        let dir = tempfile::tempdir().unwrap();
        let agent = Sha256Hex::digest(b"the shipped binary");
        let (record, allocation) = pod_steps(dir.path(), &agent);
        let check = |a: &PodAllocation| {
            check_allocation(dir.path(), &record, "pod.allocations[0]", a)
                .map_err(|e| e.to_string())
        };
        assert_eq!(check(&allocation), Ok(()));

        let other = Sha256Hex::digest(b"another binary");
        let forged = PodAllocation {
            agent_sha256: other,
            ..allocation.clone()
        };
        assert_eq!(
            check(&forged),
            Err(format!(
                "`receipt.dsse.json` pod.allocations[0].agentSha256 is {other}, recomputed {agent}"
            ))
        );
        let forged = PodAllocation {
            id: 43,
            ..allocation.clone()
        };
        assert_eq!(
            check(&forged),
            Err("`receipt.dsse.json` pod.allocations[0].id: is 43, but the log of `Renting the pod` names no `allocation 43 on …`".to_owned())
        );
        // A step of another group passed off as the pod's.
        let forged = PodAllocation {
            steps: vec![0, allocation.steps[1]],
            ..allocation.clone()
        };
        assert_eq!(
            check(&forged),
            Err("`receipt.dsse.json` pod.allocations[0].steps[0]: names step 0, which is no step of the `Pod` group".to_owned())
        );
        // Its setup without the shipping step.
        let forged = PodAllocation {
            steps: vec![allocation.steps[0]],
            ..allocation
        };
        assert_eq!(
            check(&forged),
            Err(
                "`receipt.dsse.json` pod.allocations[0].steps: hold no `Shipping the harness`"
                    .to_owned()
            )
        );
    }
}
