//! The load client's self-test (content/measurement.md, Open loop): before a v3 round
//! opened, the client drove a null server at the campaign's maximum rate, and the round
//! opened only because its send-lag p99 was within the campaign's bound. `client.selfTest`
//! recomputes that verdict from the recorded figures and the bound from the frozen
//! campaign copy (`inputs/campaign.json`), and checks that the client's recorded
//! scheduling (policy, priority) is one the kernel can report.

use crate::{CheckName, FailureReason, VerifyReport};
use receipts::model::{ClientPolicy, ClientScheduling, ClientSelfTest, FrozenCampaign};

use crate::PredicateVersion;
use crate::files::{recomputed, same};

/// The predicate file, as failure messages name it.
const RECEIPT: &str = "receipt.dsse.json";

/// The check's target: the predicate field it reads.
const TARGET: &str = "clientSelfTest";

/// `client.selfTest` on a round's recorded self-test (`RoundRecord::client_self_test`),
/// a round of `version`: `not applicable (v1/v2)` before
/// v3; from v3, failed when the self-test is absent, when its recorded bound is not the
/// campaign's effective send-lag bound (`campaign`, when `inputs.campaign` passed; not
/// run otherwise), when its send-lag p99 is over that bound, when a request failed, or
/// when its scheduling is one the kernel cannot report — or, from v4, is absent.
pub(crate) fn check_self_test(
    report: &mut VerifyReport,
    recorded: Option<&ClientSelfTest>,
    cpu_count: u32,
    campaign: Option<&FrozenCampaign>,
    version: PredicateVersion,
) {
    let target = Some(TARGET.to_owned());
    if version < PredicateVersion::V3 {
        report.not_applicable(CheckName::ClientSelfTest, target, version.name());
        return;
    }
    let Some(test) = recorded else {
        report.fail(
            CheckName::ClientSelfTest,
            target,
            recomputed(
                RECEIPT,
                TARGET,
                "absent",
                "the self-test the round opened on",
            ),
        );
        return;
    };
    let Some(campaign) = campaign else {
        report.fail(
            CheckName::ClientSelfTest,
            target,
            FailureReason::NotRun {
                blocked_by: CheckName::InputsCampaign,
            },
        );
        return;
    };
    let bound_us = campaign
        .campaign
        .rate_search
        .effective_send_lag_bound_us(&campaign.campaign.sla);
    let result = same(
        RECEIPT,
        "clientSelfTest.sendLagBoundUs",
        test.send_lag_bound_us,
        bound_us,
    )
    .and_then(|()| {
        if test.send_lag_p99_us > bound_us {
            Err(recomputed(
                RECEIPT,
                "clientSelfTest.sendLagP99Us",
                format!("{} µs", test.send_lag_p99_us),
                format!("at most the bound, {bound_us} µs"),
            ))
        } else {
            Ok(())
        }
    })
    .and_then(|()| same(RECEIPT, "clientSelfTest.failed", test.failed, 0))
    .and_then(|()| {
        if version >= PredicateVersion::V5 {
            consistent(test, campaign)
        } else {
            Ok(())
        }
    })
    .and_then(|()| match &test.scheduling {
        Some(s) => check_scheduling(s, cpu_count),
        // v3 builds recorded the scheduling only late; v4 requires it.
        None if version == PredicateVersion::V3 => Ok(()),
        None => Err(recomputed(
            RECEIPT,
            "clientSelfTest.scheduling",
            "absent",
            "the client's scheduling as the kernel reported it",
        )),
    });
    report.record(CheckName::ClientSelfTest, target, result);
}

/// v5: the figures agree with each other and with the campaign: the rate asked is the
/// campaign's `max_rate_milli_rps` (the self-test runs at the maximum rate), the send-lag
/// p50 is at most its p99, and no more requests were in flight at once than were sent
/// (warm-up included).
fn consistent(test: &ClientSelfTest, campaign: &FrozenCampaign) -> Result<(), FailureReason> {
    let spec = &campaign.campaign.rate_search;
    same(
        RECEIPT,
        "clientSelfTest.rateMilliRps",
        test.rate_milli_rps,
        spec.max_rate_milli_rps,
    )?;
    if test.send_lag_p50_us > test.send_lag_p99_us {
        return Err(recomputed(
            RECEIPT,
            "clientSelfTest.sendLagP50Us",
            format!("{} µs", test.send_lag_p50_us),
            format!("at most the p99, {} µs", test.send_lag_p99_us),
        ));
    }
    let sent = u64::from(test.requests) + u64::from(spec.warmup_requests);
    if u64::from(test.in_flight_max) > sent {
        return Err(recomputed(
            RECEIPT,
            "clientSelfTest.inFlightMax",
            test.in_flight_max,
            format!("at most the {sent} requests sent (warm-up included)"),
        ));
    }
    Ok(())
}

/// The recorded scheduling is one the kernel can report: a real-time priority of 1–99
/// under `fifo`, 0 under `normal`, and at most one CPU kept awake per CPU of the machine
/// (`hardware.atStart.cpuCount`); the figures themselves are observations of the
/// evaluator's machine, which nothing in the bundle recomputes.
fn check_scheduling(scheduling: &ClientScheduling, cpu_count: u32) -> Result<(), FailureReason> {
    if scheduling.awake_cpus > cpu_count {
        return Err(recomputed(
            RECEIPT,
            "clientSelfTest.scheduling.awakeCpus",
            scheduling.awake_cpus,
            format!("at most the machine's {cpu_count} CPUs (hardware.atStart.cpuCount)"),
        ));
    }
    let allowed = match scheduling.policy {
        ClientPolicy::Fifo => 1..=99,
        ClientPolicy::Normal => 0..=0,
    };
    if allowed.contains(&scheduling.priority) {
        Ok(())
    } else {
        Err(recomputed(
            RECEIPT,
            "clientSelfTest.scheduling.priority",
            scheduling.priority.to_string(),
            match scheduling.policy {
                ClientPolicy::Fifo => "1–99 under policy fifo",
                ClientPolicy::Normal => "0 under policy normal",
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use testkit::campaign::CampaignToml;

    fn campaign() -> FrozenCampaign {
        CampaignToml::minimal("demo")
            .set("runs", "3")
            .set("rate_search.min_rate_milli_rps", "1000")
            .set("rate_search.max_rate_milli_rps", "4000")
            .set("rate_search.send_lag_bound_us", "2000")
            .frozen()
    }

    fn test(p99_us: u64, bound_us: u64) -> ClientSelfTest {
        ClientSelfTest {
            rate_milli_rps: 4_000,
            achieved_milli_rps: 3_998,
            send_lag_p50_us: 80,
            send_lag_p99_us: p99_us,
            send_lag_bound_us: bound_us,
            requests: 40,
            failed: 0,
            in_flight_max: 2,
            connections: 2,
            scheduling: Some(ClientScheduling {
                policy: ClientPolicy::Fifo,
                priority: 10,
                awake_cpus: 1,
            }),
        }
    }

    /// The one `client.selfTest` check recorded for `self_test` in a round of `version`.
    fn check(self_test: Option<ClientSelfTest>, version: PredicateVersion) -> VerifyReport {
        let mut report = VerifyReport::new(std::path::Path::new("bundle"));
        check_self_test(
            &mut report,
            self_test.as_ref(),
            2,
            Some(&campaign()),
            version,
        );
        assert_eq!(report.checks.len(), 1);
        report
    }

    #[test]
    fn a_self_test_within_the_campaign_bound_passes() {
        for version in [PredicateVersion::V3, PredicateVersion::V4] {
            let report = check(Some(test(1_900, 2_000)), version);
            assert!(report.checks[0].passed, "{:?}", report.checks[0]);
        }
        let report = check(Some(test(1_900, 2_000)), PredicateVersion::V4);
        assert_eq!(report.checks[0].target.as_deref(), Some("clientSelfTest"));
    }

    /// A forged p99 over the bound (the round should have been refused) fails.
    #[test]
    fn a_send_lag_p99_over_the_bound_fails() {
        let report = check(Some(test(2_001, 2_000)), PredicateVersion::V3);
        assert_eq!(
            report.checks[0].reason,
            Some(recomputed(
                RECEIPT,
                "clientSelfTest.sendLagP99Us",
                "2001 µs",
                "at most the bound, 2000 µs"
            ))
        );
    }

    /// A bound raised in the receipt to fit the p99 is not the campaign's.
    #[test]
    fn a_bound_other_than_the_campaigns_fails() {
        let report = check(Some(test(2_500, 3_000)), PredicateVersion::V3);
        assert_eq!(
            report.checks[0].reason,
            Some(recomputed(
                RECEIPT,
                "clientSelfTest.sendLagBoundUs",
                "3000",
                "2000"
            ))
        );
    }

    /// A priority the kernel cannot report for the recorded policy fails; a round sealed
    /// before the scheduling was recorded passes without it.
    #[test]
    fn a_scheduling_the_kernel_cannot_report_fails() {
        for (policy, priority, expected) in [
            (ClientPolicy::Fifo, 0, "1–99 under policy fifo"),
            (ClientPolicy::Fifo, 100, "1–99 under policy fifo"),
            (ClientPolicy::Normal, 10, "0 under policy normal"),
        ] {
            let mut forged = test(1_900, 2_000);
            forged.scheduling = Some(ClientScheduling {
                policy,
                priority,
                awake_cpus: 1,
            });
            let report = check(Some(forged), PredicateVersion::V3);
            assert_eq!(
                report.checks[0].reason,
                Some(recomputed(
                    RECEIPT,
                    "clientSelfTest.scheduling.priority",
                    priority,
                    expected
                ))
            );
        }
        // More CPUs kept awake than the machine has (2 in these tests).
        let mut forged = test(1_900, 2_000);
        forged.scheduling = Some(ClientScheduling {
            policy: ClientPolicy::Fifo,
            priority: 10,
            awake_cpus: 3,
        });
        assert_eq!(
            check(Some(forged), PredicateVersion::V3).checks[0].reason,
            Some(recomputed(
                RECEIPT,
                "clientSelfTest.scheduling.awakeCpus",
                3,
                "at most the machine's 2 CPUs (hardware.atStart.cpuCount)"
            ))
        );
    }

    /// A v3 round sealed before the scheduling was recorded passes without it; a v4 round
    /// without it fails.
    #[test]
    fn no_scheduling_passes_on_v3_and_fails_on_v4() {
        let mut unscheduled = test(1_900, 2_000);
        unscheduled.scheduling = None;
        let v3 = check(Some(unscheduled.clone()), PredicateVersion::V3);
        assert!(v3.checks[0].passed, "{:?}", v3.checks[0]);
        assert_eq!(
            check(Some(unscheduled), PredicateVersion::V4).checks[0].reason,
            Some(recomputed(
                RECEIPT,
                "clientSelfTest.scheduling",
                "absent",
                "the client's scheduling as the kernel reported it"
            ))
        );
    }

    #[test]
    fn absent_fails_on_v3_and_is_not_applicable_before() {
        let report = check(None, PredicateVersion::V3);
        assert_eq!(
            report.checks[0].reason,
            Some(recomputed(
                RECEIPT,
                TARGET,
                "absent",
                "the self-test the round opened on"
            ))
        );
        let report = check(None, PredicateVersion::V2);
        assert_eq!(report.checks[0].not_applicable, Some("v2"));
    }
}
