//! An entry's engine and isolation records against the campaign (v5; content/verifying.md,
//! Engines): the backend is the campaign's; an engine the runner started (its command is
//! recorded) records how it was confined, in a sandbox its command shows; the threads it
//! was told to use are the campaign's `hardware.engine_threads` on its
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
use std::path::Path;

/// The predicate file, as failure messages name it.
const RECEIPT: &str = "receipt.dsse.json";

/// Runs `engine.isolation` once per entry; `not applicable` before v5 and not run without
/// the campaign (`inputs.campaign`).
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
        let result = engine_holds(entry, frozen);
        report.record(
            CheckName::EngineIsolation,
            Some(format!("entries[{}]", entry.index)),
            result,
        );
    }
}

/// One entry's engine record against the campaign `frozen`: its backend is the
/// campaign's (the runner starts every engine of a round on it); an engine with a
/// recorded command ran, and the runner records the confinement of every engine it
/// started, in the same step ([`isolation_holds`] then holds it).
fn engine_holds(entry: &Entry, frozen: &FrozenCampaign) -> Result<(), FailureReason> {
    let engine = &entry.engine;
    let at = format!("entries[{}].engine", entry.index);
    let backend = frozen.campaign.backend.kind();
    if engine.backend != backend {
        return Err(recomputed(
            RECEIPT,
            format!("{at}.backend"),
            engine.backend,
            format!("{backend} (the campaign's backend)"),
        ));
    }
    match (&engine.isolation, &engine.command) {
        (Some(isolation), command) => isolation_holds(
            &format!("{at}.isolation"),
            entry,
            isolation,
            command.as_deref(),
            frozen,
        ),
        (None, Some(_)) => Err(recomputed(
            RECEIPT,
            format!("{at}.isolation"),
            "absent",
            "recorded: the engine ran (its command is recorded), and the runner records \
             how it confined every engine it started",
        )),
        (None, None) => Ok(()),
    }
}

/// The sandbox whose tool starts `command` (its program's file name): bubblewrap or
/// `unshare`; `None` for an engine started without one (trusted or unsandboxed, whose
/// command is the engine's own) or in a container (the `engine.docker` check's).
fn sandbox_of_command(command: &[String]) -> Option<SandboxKind> {
    let program = command.first()?;
    match Path::new(program).file_name()?.to_str()? {
        "bwrap" => Some(SandboxKind::Bwrap),
        "unshare" => Some(SandboxKind::Unshare),
        _ => None,
    }
}

/// One entry's `isolation` (at `at`) against the campaign `frozen` and, outside a
/// container, the sandbox its recorded `command` started it in.
fn isolation_holds(
    at: &str,
    entry: &Entry,
    isolation: &EngineIsolation,
    command: Option<&[String]>,
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
    if let Some(command) = command.filter(|_| !docker) {
        let started = sandbox_of_command(command);
        let claimed = match isolation.sandbox {
            SandboxKind::Bwrap | SandboxKind::Unshare => Some(isolation.sandbox),
            SandboxKind::Trusted | SandboxKind::Unsandboxed | SandboxKind::Docker => None,
        };
        if started != claimed {
            return Err(recomputed(
                RECEIPT,
                format!("{at}.sandbox"),
                format!("{:?}", isolation.sandbox),
                format!(
                    "{} (the program of its command, {:?})",
                    started.map_or_else(|| "no sandbox tool".to_owned(), |s| format!("{s:?}")),
                    command.first().map_or("", String::as_str)
                ),
            ));
        }
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
