//! `engine.sandbox` (content/threat-model.md, The engine's sandbox): from v5, an entry
//! that records how its engine was confined (`engine.isolation`) records the host uid the
//! engine ran as and whether it was the unprivileged engine uid, and the read-only paths
//! it was shown are exactly the campaign's declared ones (`[backend] ro_paths`): a
//! receipt cannot show a narrower declaration than the engine actually had.

use crate::{CheckName, FailureReason, VerifyReport};
use receipts::model::{Campaign, EngineIsolation, FrozenCampaign, RoundRecord};

use crate::PredicateVersion;

/// Runs `engine.sandbox` on every entry of `record` that records `engine.isolation`
/// (one check per entry, `entries[i]` as target), against `campaign` (when
/// `inputs.campaign` passed; else not run). Before v5 it does not run: those records
/// have none of its fields.
pub(crate) fn check_engine_sandbox(
    report: &mut VerifyReport,
    record: &RoundRecord,
    campaign: Option<&FrozenCampaign>,
    version: PredicateVersion,
) {
    // Older records carry none of these fields: nothing to check, nothing to list.
    if version < PredicateVersion::V5 {
        return;
    }
    for entry in record.entries.iter() {
        let Some(isolation) = &entry.engine.isolation else {
            continue;
        };
        let target = Some(format!("entries[{}]", entry.index));
        let Some(frozen) = campaign else {
            report.not_run(&[CheckName::EngineSandbox], CheckName::InputsCampaign);
            continue;
        };
        let result = check_entry(entry.index, isolation, &frozen.campaign);
        report.record(CheckName::EngineSandbox, target, result);
    }
}

/// Entry `index`'s isolation record against `campaign`.
fn check_entry(
    index: u32,
    isolation: &EngineIsolation,
    campaign: &Campaign,
) -> Result<(), FailureReason> {
    let invalid = |field: &str, message: String| FailureReason::IsolationRecord {
        field: format!("entries[{index}].engine.isolation.{field}"),
        message,
    };
    if isolation.uid.is_none() {
        return Err(invalid("uid", "missing (required from v5)".into()));
    }
    if isolation.own_uid.is_none() {
        return Err(invalid("ownUid", "missing (required from v5)".into()));
    }
    let declared = campaign.backend.ro_paths();
    if isolation.ro_paths != declared {
        return Err(invalid(
            "roPaths",
            format!(
                "{:?}, but the campaign declares {declared:?}",
                isolation.ro_paths
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use receipts::model::{CpuPinning, SandboxKind};

    fn campaign(ro_paths: &str) -> Campaign {
        Campaign::from_toml(
            "c.toml",
            &format!(
                "id = \"c\"\n[model]\nname = \"m\"\n[hardware]\nmemory_limit_mb = 256\n\
                 [baseline]\nrepo = \"b\"\ncommit = \"0123456789abcdef0123456789abcdef01234567\"\n\
                 [backend]\nkind = \"process\"\ncommand = [\"serve\"]\n{ro_paths}"
            ),
        )
        .unwrap()
    }

    fn isolation(ro_paths: &[&str]) -> EngineIsolation {
        EngineIsolation {
            sandbox: SandboxKind::Bwrap,
            pinning: CpuPinning::SchedAffinity,
            engine_cpus: vec![1],
            client_cpus: vec![0],
            engine_threads: 1,
            uid: Some(990_000),
            own_uid: Some(true),
            ro_paths: ro_paths.iter().map(|p| (*p).to_owned()).collect(),
        }
    }

    #[test]
    fn the_campaigns_declared_paths_and_a_recorded_uid_pass_and_anything_else_fails() {
        let c = campaign("ro_paths = [\"/opt/venv\", \"/srv/model.gguf\"]\n");
        let good = isolation(&["/opt/venv", "/srv/model.gguf"]);
        assert_eq!(check_entry(2, &good, &c), Ok(()));
        let narrower = isolation(&["/opt/venv"]);
        let mut no_uid = good.clone();
        no_uid.uid = None;
        let mut no_own = good.clone();
        no_own.own_uid = None;
        for (bad, message) in [
            (
                narrower,
                "`receipt.dsse.json` entries[2].engine.isolation.roPaths: [\"/opt/venv\"], but \
                 the campaign declares [\"/opt/venv\", \"/srv/model.gguf\"]",
            ),
            (
                no_uid,
                "`receipt.dsse.json` entries[2].engine.isolation.uid: missing (required from v5)",
            ),
            (
                no_own,
                "`receipt.dsse.json` entries[2].engine.isolation.ownUid: missing (required from \
                 v5)",
            ),
        ] {
            assert_eq!(check_entry(2, &bad, &c).unwrap_err().to_string(), message);
        }
        // A campaign that declares nothing: an engine shown nothing passes.
        assert_eq!(check_entry(0, &isolation(&[]), &campaign("")), Ok(()));
    }
}
