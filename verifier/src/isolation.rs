//! An entry's isolation record against the campaign (v5; content/verifying.md, Engines):
//! the threads it was told to use are the campaign's `hardware.engine_threads` on its
//! CPUs by the runner's own rule ([`engine_threads`]); an unsandboxed (`trusted`) engine
//! only where the campaign declares `trusted_engines`; a container's sandbox and cpuset
//! exactly on the Docker backend; and pinned CPUs the engine does not share with the
//! load client (unpinned: one set for both).

use crate::files::recomputed;
use crate::{CheckName, FailureReason, PredicateVersion, VerifyReport};
use receipts::model::{
    BackendKind, CpuPinning, EngineIsolation, Entry, FrozenCampaign, RoundRecord, SandboxKind,
};
use receipts::rules::host::engine_threads;

/// The predicate file, as failure messages name it.
const RECEIPT: &str = "receipt.dsse.json";

/// Runs `engine.isolation` once per entry recording an isolation; `not applicable` before
/// v5 and not run without the campaign (`inputs.campaign`).
pub(crate) fn check_isolation(
    report: &mut VerifyReport,
    record: &RoundRecord,
    campaign: Option<&FrozenCampaign>,
    version: PredicateVersion,
) {
    if version < PredicateVersion::V5 {
        report.not_applicable(CheckName::EngineIsolation, None, version.name());
        return;
    }
    let Some(frozen) = campaign else {
        report.not_run(&[CheckName::EngineIsolation], CheckName::InputsCampaign);
        return;
    };
    for entry in &record.entries {
        let Some(isolation) = &entry.engine.isolation else {
            continue;
        };
        let at = format!("entries[{}].engine.isolation", entry.index);
        let result = isolation_holds(&at, entry, isolation, frozen);
        report.record(
            CheckName::EngineIsolation,
            Some(format!("entries[{}]", entry.index)),
            result,
        );
    }
}

/// One entry's `isolation` (at `at`) against the campaign `frozen`.
fn isolation_holds(
    at: &str,
    entry: &Entry,
    isolation: &EngineIsolation,
    frozen: &FrozenCampaign,
) -> Result<(), FailureReason> {
    let campaign = &frozen.campaign;
    let threads = engine_threads(
        campaign.hardware.engine_threads,
        isolation.engine_cpus.len(),
    );
    if isolation.engine_threads != threads {
        return Err(recomputed(
            RECEIPT,
            format!("{at}.engineThreads"),
            isolation.engine_threads,
            format!(
                "{threads} (hardware.engine_threads {} on {} CPUs)",
                campaign.hardware.engine_threads,
                isolation.engine_cpus.len()
            ),
        ));
    }
    let docker = entry.engine.backend == BackendKind::Docker;
    let sandbox_ok = match isolation.sandbox {
        SandboxKind::Trusted => !docker && campaign.trusts_engines(),
        SandboxKind::Docker => docker,
        SandboxKind::Bwrap => !docker,
        // v5 builds have no `unshare` fallback (content/threat-model.md).
        SandboxKind::Unshare => false,
        // Only the built-in engine may run without bubblewrap.
        SandboxKind::Unsandboxed => entry.engine.backend == BackendKind::Builtin,
    };
    if !sandbox_ok {
        return Err(recomputed(
            RECEIPT,
            format!("{at}.sandbox"),
            format!("{:?}", isolation.sandbox),
            format!(
                "a sandbox of the {} backend{}",
                entry.engine.backend,
                if campaign.trusts_engines() {
                    ""
                } else {
                    " (the campaign does not declare trusted_engines)"
                }
            ),
        ));
    }
    let disjoint = !isolation.engine_cpus.is_empty()
        && !isolation.client_cpus.is_empty()
        && !isolation
            .engine_cpus
            .iter()
            .any(|c| isolation.client_cpus.contains(c));
    let pinning_ok = match isolation.pinning {
        CpuPinning::SchedAffinity => !docker && disjoint,
        CpuPinning::Cpuset => docker && disjoint,
        CpuPinning::None => isolation.engine_cpus == isolation.client_cpus,
    };
    if pinning_ok {
        Ok(())
    } else {
        Err(recomputed(
            RECEIPT,
            format!("{at}.pinning"),
            format!(
                "{:?} (engine CPUs {:?}, client CPUs {:?})",
                isolation.pinning, isolation.engine_cpus, isolation.client_cpus
            ),
            "disjoint engine and client CPUs when pinned (a cpuset on the Docker backend \
             only), one set for both when not",
        ))
    }
}
