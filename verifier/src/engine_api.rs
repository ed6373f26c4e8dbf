//! `engine.api` (content/engines.md, what the receipt records): an entry of the process
//! backend that records the engine API profile it was talked to with records the
//! campaign's — `[backend.api]` resolved, so nobody can claim a tested profile, another
//! counting mode or another id source than the frozen campaign says — and the campaign's
//! memory limit, passed to it as `{memory_mb}`. The record is optional in v3 (bundles
//! sealed before it lack it): an entry without it is not checked.

use crate::{CheckName, FailureReason, VerifyReport};
use receipts::model::{BackendKind, Campaign, EngineRef, FrozenCampaign, RoundRecord};

use crate::PredicateVersion;
use crate::files::same;

const RECEIPT: &str = "receipt.dsse.json";

/// Runs `engine.api` on every entry of `record` that started on the process backend and
/// records `engine.api` (one check per entry, `entries[i]` as target), against
/// `campaign` (when `inputs.campaign` passed; else not run). Before v3 not applicable.
pub(crate) fn check_engine_api(
    report: &mut VerifyReport,
    record: &RoundRecord,
    campaign: Option<&FrozenCampaign>,
    version: PredicateVersion,
) {
    let recorded = record.entries.iter().filter(|e| {
        e.engine.backend == BackendKind::Process
            && (e.engine.api.is_some() || e.engine.memory_limit_mb.is_some())
    });
    for entry in recorded {
        let target = Some(format!("entries[{}]", entry.index));
        if version < PredicateVersion::V3 {
            report.not_applicable(CheckName::EngineApi, target, version.name());
            continue;
        }
        let Some(frozen) = campaign else {
            report.not_run(&[CheckName::EngineApi], CheckName::InputsCampaign);
            continue;
        };
        let result = check_entry(entry.index, &entry.engine, &frozen.campaign);
        report.record(CheckName::EngineApi, target, result);
    }
}

/// Entry `index`'s `engine.api` and `engine.memoryLimitMb` against `campaign`'s.
fn check_entry(index: u32, engine: &EngineRef, campaign: &Campaign) -> Result<(), FailureReason> {
    let field = |name: &str| format!("entries[{index}].engine.{name}");
    same(
        RECEIPT,
        &field("api"),
        engine.api.clone(),
        Some(campaign.api_profile().record()),
    )?;
    same(
        RECEIPT,
        &field("memoryLimitMb"),
        engine.memory_limit_mb,
        Some(campaign.hardware.memory_limit_mb),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use receipts::model::{ApiProfileName, Sha256Hex, TokenCount};

    fn campaign(api: &str) -> Campaign {
        Campaign::from_toml(
            "c.toml",
            &format!(
                "id = \"c\"\n[model]\nname = \"m\"\n[hardware]\nmemory_limit_mb = 256\n\
                 [baseline]\nrepo = \"b\"\ncommit = \"0123456789abcdef0123456789abcdef01234567\"\n\
                 [backend]\nkind = \"process\"\ncommand = [\"serve\"]\n{api}"
            ),
        )
        .unwrap()
    }

    fn engine(campaign: &Campaign) -> EngineRef {
        EngineRef {
            backend: BackendKind::Process,
            config_sha256: Sha256Hex::digest(b""),
            image: None,
            command: Some(vec!["serve".into()]),
            isolation: None,
            api: Some(campaign.api_profile().record()),
            memory_limit_mb: Some(256),
            docker: None,
        }
    }

    #[test]
    fn the_campaigns_profile_and_memory_pass_and_any_other_fails() {
        let c = campaign("[backend.api]\nprofile = \"sglang\"\n");
        let good = engine(&c);
        assert_eq!(check_entry(2, &good, &c), Ok(()));
        // A receipt claiming a tested profile, another count, another memory limit.
        let mut tested = good.clone();
        tested.api.as_mut().unwrap().tested_against_real_server = true;
        let mut ids = good.clone();
        ids.api.as_mut().unwrap().token_count = TokenCount::Ids;
        let mut memory = good.clone();
        memory.memory_limit_mb = Some(512);
        for (bad, field) in [
            (tested, "entries[2].engine.api"),
            (ids, "entries[2].engine.api"),
            (memory, "entries[2].engine.memoryLimitMb"),
        ] {
            let error = check_entry(2, &bad, &c).unwrap_err().to_string();
            assert!(error.contains(field), "{error}");
        }
        // Another campaign's profile is not this one's.
        let vllm = campaign("[backend.api]\nprofile = \"vllm\"\n");
        assert_eq!(
            vllm.api_profile().record().profile,
            Some(ApiProfileName::Vllm)
        );
        assert!(check_entry(0, &engine(&vllm), &c).is_err());
    }
}
