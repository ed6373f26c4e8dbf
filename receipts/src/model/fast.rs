//! The s1-fast-speed track (content/s1-fast-speed.md): faster or cheaper s1-fast. What a
//! campaign declares for it — the price of each resource class (`[cost]`), the sealed
//! capability scorer (`[capability]`) and the s1-pro reference of the agreement gate
//! (`[agreement]`) — what a submission declares (its [`ResourceRequest`]), and what a
//! round records ([`FastTrackRecord`], round/v9).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ModelError;
use super::ids::Sha256Hex;

/// What an entry asks to run on, as its manifest declares it (`resources` of
/// `reax-submission.json`, or a diff submission's tree in `resources.json`): the cost
/// rule prices exactly this. The default is nothing at all (what an entry that declared
/// nothing is recorded with).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceRequest {
    /// GPUs, whole devices.
    pub gpus: u32,
    /// Their class, a key of the campaign's `cost.price_per_hour.gpu` (e.g. `h100`);
    /// empty when `gpus` is 0.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub gpu_class: String,
    /// CPU cores.
    pub cpus: u32,
    /// Memory, GiB.
    pub memory_gib: u32,
}

/// `[cost]` of a campaign: the price of each resource, and the margin by which a
/// challenger's cost per decision must be lower to take the seat on cost.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CostSpec {
    /// The price of one unit of each resource for one hour.
    pub price_per_hour: PricePerHour,
    /// How much lower, basis points, a challenger's cost per decision must be (default
    /// 500: 5 %), at a throughput not below the incumbent's within the round's noise
    /// floor.
    #[serde(default = "default_cost_margin_bp")]
    pub margin_bp: u32,
    /// The least noise floor of the throughput comparison, basis points (default 0):
    /// the round's A/A spread counts when it is larger. A round of one pass measures no
    /// spread, so without this its floor is 0 and any slowdown is slower.
    #[serde(default)]
    pub min_noise_floor_bp: u32,
}

fn default_cost_margin_bp() -> u32 {
    500
}

/// `[cost.price_per_hour]`: micro-dollars (µ$, 10⁻⁶ US dollars) per hour of one unit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PricePerHour {
    /// One GPU of each class, by class name.
    pub gpu: BTreeMap<String, u64>,
    /// One CPU core (default 0).
    #[serde(default)]
    pub cpu: u64,
    /// One GiB of memory (default 0).
    #[serde(default)]
    pub memory_gib: u64,
}

/// `[capability]` of a campaign: the scorer that runs an entry against the sealed items
/// and returns only a score. The sealed items themselves are the evaluator's, kept outside
/// every bundle and data directory; the campaign names the scorer, not them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CapabilitySpec {
    /// The scorer's command line (program and arguments, no shell); the program's sha256
    /// is recorded as the scorer's identity.
    pub command: Vec<String>,
    /// The program's sha256, pinned: a scorer with other bytes is refused. Absent: the
    /// digest is recorded as found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<Sha256Hex>,
}

/// `[agreement]` of a campaign: the s1-pro reference runtime whose decisions the
/// entries' are compared with on fresh items from the round's seeds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgreementSpec {
    /// The reference image by digest, `name@sha256:<64 hex>`.
    pub reference_image: String,
    /// Fresh items compared (default 500).
    #[serde(default = "default_agreement_items")]
    pub items: u32,
}

fn default_agreement_items() -> u32 {
    500
}

impl AgreementSpec {
    /// Checks the reference is pinned by digest and there is at least one item.
    ///
    /// Errors: [`ModelError::InvalidField`] naming the field.
    pub fn validate(&self) -> Result<(), ModelError> {
        let pinned = self
            .reference_image
            .split_once("@sha256:")
            .is_some_and(|(name, hex)| !name.is_empty() && Sha256Hex::is_valid(hex));
        if !pinned {
            return Err(ModelError::InvalidField {
                field: "agreement.reference_image".into(),
                value: self.reference_image.clone(),
                rule: "an image by digest: name@sha256:<64 lowercase hex>".into(),
            });
        }
        if self.items == 0 {
            return Err(ModelError::InvalidField {
                field: "agreement.items".into(),
                value: "0".into(),
                rule: "at least 1".into(),
            });
        }
        Ok(())
    }
}

impl CostSpec {
    /// Checks the margin and the least noise floor are below 100 % and every GPU class
    /// is named.
    ///
    /// Errors: [`ModelError::InvalidField`] naming the field.
    pub fn validate(&self) -> Result<(), ModelError> {
        if self.margin_bp >= 10_000 {
            return Err(ModelError::InvalidField {
                field: "cost.margin_bp".into(),
                value: self.margin_bp.to_string(),
                rule: "below 10000 (100 %)".into(),
            });
        }
        if self.min_noise_floor_bp >= 10_000 {
            return Err(ModelError::InvalidField {
                field: "cost.min_noise_floor_bp".into(),
                value: self.min_noise_floor_bp.to_string(),
                rule: "below 10000 (100 %)".into(),
            });
        }
        if self.price_per_hour.gpu.keys().any(String::is_empty) {
            return Err(ModelError::InvalidField {
                field: "cost.price_per_hour.gpu".into(),
                value: String::new(),
                rule: "every GPU class has a name".into(),
            });
        }
        Ok(())
    }
}

impl CapabilitySpec {
    /// Checks there is a program to run.
    ///
    /// Errors: [`ModelError::InvalidField`] naming `capability.command`.
    pub fn validate(&self) -> Result<(), ModelError> {
        if self.command.first().is_none_or(String::is_empty) {
            return Err(ModelError::InvalidField {
                field: "capability.command".into(),
                value: format!("{:?}", self.command),
                rule: "names a program to run".into(),
            });
        }
        Ok(())
    }
}

/// What a round of an s1-fast-speed campaign records beside its entries
/// ([`super::RoundRecord::fast_track`], round/v9): the capability scorer's identity and
/// the sealed set's commitment (never the items), the agreement reference, each entry's
/// scores and cost, and the seat decision on cost.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FastTrackRecord {
    /// sha256 of the capability scorer's program.
    pub scorer_sha256: Sha256Hex,
    /// The commitment to the sealed set the scorer read
    /// (`receipts::rules::capability::sealed_set_commitment`).
    pub sealed_set_commitment: Sha256Hex,
    /// The s1-pro reference image of the agreement gate, by digest.
    pub agreement_reference: String,
    /// Fresh items the agreement gate compared.
    pub agreement_items: u32,
    /// One row per entry of the round, in entry order.
    pub entries: Vec<FastEntry>,
    /// The challenger seated on cost (entry index), when one is and none is seated on
    /// throughput; `None` otherwise.
    pub cost_seat: Option<u32>,
}

/// One entry's row of a [`FastTrackRecord`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FastEntry {
    /// The entry's index in the round.
    pub index: u32,
    /// What its manifest declared.
    pub resources: ResourceRequest,
    /// The price of those resources, micro-dollars per hour.
    pub price_micro_usd_per_hour: u64,
    /// Its cost per decision, micro-dollars per million decisions, rounded up; `None`
    /// when it has no throughput.
    pub cost_micro_usd_per_million: Option<u64>,
    /// The capability scorer's score on the sealed items, ppm.
    pub capability_ppm: u32,
    /// Items whose decision matched the reference's.
    pub agreement_matched: u32,
    /// Agreement with the reference, ppm of the items, rounded down.
    pub agreement_ppm: u32,
    /// Its agreement file ([`AgreementItems`]), bundle-relative, from which
    /// `agreementMatched` is recounted (round/v9); absent when it answered no item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agreement_file: Option<String>,
}

/// One entry's agreement file (`agreement/<entry>.json`, round/v9): its decision and the
/// s1-pro reference's on each of the campaign's first `agreement.items` gate items, in
/// item order. The verifier recounts the entry's `agreementMatched` from it
/// (`receipts::rules::agreement::recount`) and holds every file of a round to the same
/// reference decisions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgreementItems {
    /// The entry's index in the round.
    pub entry: u32,
    /// The s1-pro reference image the campaign names, by digest.
    pub reference: String,
    /// Every compared item, in order.
    pub items: Vec<AgreementItem>,
}

/// One fresh item of an [`AgreementItems`] file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgreementItem {
    /// The gate item's index, from 0.
    pub index: u32,
    /// sha256 of its prompt's UTF-8 bytes.
    pub prompt_sha256: Sha256Hex,
    /// The entry's decision; absent when it gave none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    /// The reference's decision.
    pub reference_decision: String,
}

impl super::Campaign {
    /// The s1-fast-speed fields together: each table valid where present; `[cost]`,
    /// `[capability]` and `[agreement]` only on track `s1-fast-speed`, which needs all
    /// three and `workload_kind = "decide"`.
    ///
    /// Errors: [`ModelError::InvalidField`] naming the field.
    pub(crate) fn validate_fast(&self) -> Result<(), ModelError> {
        let invalid = |field: &str, value: &str, rule: &str| {
            Err(ModelError::InvalidField {
                field: field.into(),
                value: value.into(),
                rule: rule.into(),
            })
        };
        if let Some(cost) = &self.cost {
            cost.validate()?;
        }
        if let Some(capability) = &self.capability {
            capability.validate()?;
        }
        if let Some(agreement) = &self.agreement {
            agreement.validate()?;
        }
        let fast = self.track == Some(super::Track::S1FastSpeed);
        let tables = [
            ("cost", self.cost.is_some()),
            ("capability", self.capability.is_some()),
            ("agreement", self.agreement.is_some()),
        ];
        for (table, present) in tables {
            match (fast, present) {
                (true, false) => {
                    return invalid(table, "", &format!("track s1-fast-speed needs [{table}]"));
                }
                (false, true) => {
                    return invalid(
                        table,
                        &format!("[{table}]"),
                        &format!("only a track = \"s1-fast-speed\" campaign takes [{table}]"),
                    );
                }
                _ => {}
            }
        }
        if fast && self.effective_workload_kind() != super::WorkloadKind::Decide {
            return invalid(
                "track",
                "s1-fast-speed",
                "s1-fast-speed entries are decision sidecars: workload_kind = \"decide\"",
            );
        }
        // Agreement is counted on the gate's fresh items: there must be enough of them.
        if let (true, Some(agreement), Some(decide)) = (fast, &self.agreement, &self.decide)
            && agreement.items > decide.gate_items
        {
            return invalid(
                "agreement.items",
                &agreement.items.to_string(),
                &format!(
                    "at most decide.gate_items ({}): agreement is counted on the gate's items",
                    decide.gate_items
                ),
            );
        }
        Ok(())
    }
}
