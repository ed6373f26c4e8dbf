//! The public beacon a round's seeds are derived from (content/measurement.md, Seeds;
//! `crate::rules::seeds`): where its value came from, which round of it, the value, and
//! the signature that lets anyone check the value offline.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ids::Seed32;

/// Where a beacon value came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BeaconSource {
    /// A file the evaluator wrote (tests and the demo): unsigned, so it proves nothing
    /// about who chose the value, and every view labels it so.
    File,
    /// drand's quicknet chain (`bls-unchained-g1-rfc9380`, a round every 3 s): the value
    /// is sha256 of the chain's BLS signature on the round number, which anyone verifies
    /// offline against the chain's public key.
    DrandQuicknet,
}

impl BeaconSource {
    /// The name a receipt writes.
    pub fn as_str(self) -> &'static str {
        match self {
            BeaconSource::File => "file",
            BeaconSource::DrandQuicknet => "drand_quicknet",
        }
    }

    /// Whether a value from this source carries a signature anyone can check.
    pub fn is_signed(self) -> bool {
        match self {
            BeaconSource::File => false,
            BeaconSource::DrandQuicknet => true,
        }
    }
}

/// One beacon value, as a round records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BeaconRecord {
    /// Where it came from.
    pub source: BeaconSource,
    /// The beacon's round number (a file beacon's is whatever the file says).
    pub round: u64,
    /// The 32-byte value the seeds are derived from.
    pub value: Seed32,
    /// The beacon's signature on `round`, lowercase hex (drand quicknet: a compressed G1
    /// point, 48 bytes); absent for an unsigned source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// The beacon round a round-opened statement names before its value exists.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BeaconPromise {
    /// The source.
    pub source: BeaconSource,
    /// The round whose value the seeds will derive from.
    pub round: u64,
}

impl BeaconRecord {
    /// The promise this value keeps.
    pub fn promise(&self) -> BeaconPromise {
        BeaconPromise {
            source: self.source,
            round: self.round,
        }
    }
}
