//! One home for the wire names of the round model's enums (issue 38): each enum's
//! snake_case name, as its serde form writes it, is spelled once, here, and every
//! printer (`referee show`, `round`, `verify`, the site) calls `as_str()` instead of a
//! match of its own. A test holds every name equal to serde's.

use super::round::{EntryStatus, NoiseVerdict, PassStatus, Phase, Role, RoundStatus, StepStatus};

/// Implements `ALL` (every variant, in declaration order) and `as_str()` (the serde wire
/// name) for a fieldless enum. The `match` in `as_str` is exhaustive, so a new variant
/// without a name does not compile, and `ALL` lists the same variants.
macro_rules! wire_names {
    ($($ty:ident { $($variant:ident => $name:literal),+ $(,)? })+) => {$(
        impl $ty {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            /// The wire name: the snake_case string serde writes for this variant.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $name),+
                }
            }
        }
    )+};
}

wire_names! {
    Phase {
        Provisioning => "provisioning",
        Bootstrapping => "bootstrapping",
        PullingImage => "pulling_image",
        DownloadingModel => "downloading_model",
        StartingEngine => "starting_engine",
        RunningSla => "running_sla",
        RunningCorrectness => "running_correctness",
        Scoring => "scoring",
        Teardown => "teardown",
    }
    StepStatus {
        Ok => "ok",
        Failed => "failed",
        Skipped => "skipped",
    }
    Role {
        Baseline => "baseline",
        Incumbent => "incumbent",
        Challenger => "challenger",
    }
    EntryStatus {
        Scored => "scored",
        Disqualified => "disqualified",
        InfraFailed => "infra_failed",
    }
    PassStatus {
        Measured => "measured",
        SlaUnmet => "sla_unmet",
        Crashed => "crashed",
        Invalid => "invalid",
        InfraFailed => "infra_failed",
        NotRun => "not_run",
    }
    NoiseVerdict {
        Quiet => "quiet",
        BaselineDrift => "baseline_drift",
        Inconclusive => "inconclusive",
        Unmeasured => "unmeasured",
    }
    RoundStatus {
        Complete => "complete",
        InfraFailed => "infra_failed",
        Inconclusive => "inconclusive",
    }
}

#[cfg(test)]
mod tests {
    use serde::Serialize;

    use super::*;

    /// Each name equals what serde writes, and serde reads it back to the variant.
    fn agrees_with_serde<T>(all: &[T], as_str: fn(T) -> &'static str)
    where
        T: Copy + Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
    {
        assert!(!all.is_empty());
        for &variant in all {
            let name = as_str(variant);
            assert_eq!(
                serde_json::to_value(variant).expect("serializes"),
                serde_json::Value::String(name.to_owned()),
                "{variant:?}"
            );
            let back: T = serde_json::from_value(serde_json::Value::String(name.to_owned()))
                .expect("deserializes");
            assert_eq!(back, variant);
        }
    }

    #[test]
    fn every_wire_name_is_serdes() {
        agrees_with_serde(Phase::ALL, Phase::as_str);
        agrees_with_serde(StepStatus::ALL, StepStatus::as_str);
        agrees_with_serde(Role::ALL, Role::as_str);
        agrees_with_serde(EntryStatus::ALL, EntryStatus::as_str);
        agrees_with_serde(PassStatus::ALL, PassStatus::as_str);
        agrees_with_serde(NoiseVerdict::ALL, NoiseVerdict::as_str);
        agrees_with_serde(RoundStatus::ALL, RoundStatus::as_str);
    }

    /// Spot values, so the test above cannot pass with both sides wrong the same way.
    #[test]
    fn known_names() {
        assert_eq!(Phase::PullingImage.as_str(), "pulling_image");
        assert_eq!(EntryStatus::InfraFailed.as_str(), "infra_failed");
        assert_eq!(PassStatus::SlaUnmet.as_str(), "sla_unmet");
        assert_eq!(Phase::ALL.len(), 9);
        assert_eq!(PassStatus::ALL.len(), 6);
    }
}
