//! Seeds nobody can steer (content/measurement.md, Seeds): each of a round's seeds is
//! `SHA-256("referee.seed.v1" ‖ 0x00 ‖ dimension ‖ 0x00 ‖ evaluatorSecret ‖ beacon)`,
//! the evaluator's 32-byte secret committed (its sha256) before the public beacon's
//! 32-byte value exists, so neither the evaluator nor the beacon alone chooses a seed.
//! Pure: the caller passes both values in.

use sha2::{Digest, Sha256};

use crate::model::{RevealedSeeds, Seed32, SeedReveal, Sha256Hex};

/// The domain of every seed derivation, versioned with the formula.
pub const SEED_DOMAIN: &[u8] = b"referee.seed.v1";

/// What a seed draws: one dimension per seed of a round (`RevealedSeeds`), named by the
/// string the derivation hashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dimension {
    /// `itemSeed`: which items make up the workload.
    Item,
    /// `orderSeed`: the order items are sent in.
    Order,
    /// `scheduleSeed`: the arrival times.
    Schedule,
    /// `correctnessSeed`: the fresh items of the correctness gate.
    Correctness,
    /// `promptSalt`: mixed into every prompt.
    PromptSalt,
    /// `sampleSeed`: the timed run's output sample.
    Sample,
    /// `passSeed`: the order of the runs in every pass.
    Pass,
}

impl Dimension {
    /// Every dimension, in the order content/measurement.md lists them.
    pub const ALL: [Dimension; 7] = [
        Dimension::Item,
        Dimension::Order,
        Dimension::Schedule,
        Dimension::Correctness,
        Dimension::PromptSalt,
        Dimension::Sample,
        Dimension::Pass,
    ];

    /// The name the derivation hashes (ASCII, no NUL).
    pub fn as_str(self) -> &'static str {
        match self {
            Dimension::Item => "item",
            Dimension::Order => "order",
            Dimension::Schedule => "schedule",
            Dimension::Correctness => "correctness",
            Dimension::PromptSalt => "prompt-salt",
            Dimension::Sample => "sample",
            Dimension::Pass => "pass",
        }
    }
}

/// The seed of `dimension` from the evaluator's secret and the beacon's value:
/// `SHA-256(SEED_DOMAIN ‖ 0x00 ‖ dimension ‖ 0x00 ‖ secret ‖ beacon)`.
pub fn derive_seed(dimension: Dimension, secret: &Seed32, beacon: &Seed32) -> Seed32 {
    let mut hash = Sha256::new();
    hash.update(SEED_DOMAIN);
    hash.update([0u8]);
    hash.update(dimension.as_str().as_bytes());
    hash.update([0u8]);
    hash.update(secret.0);
    hash.update(beacon.0);
    Seed32(hash.finalize().into())
}

/// The commitment to the evaluator's secret a round-opened statement publishes before
/// the beacon exists: `SHA-256(secret)`.
pub fn secret_commitment(secret: &Seed32) -> Sha256Hex {
    Sha256Hex::digest(&secret.0)
}

/// The salt of every derived seed's commitment: zero (the secret already keeps a seed
/// unguessable until the receipt reveals it).
pub const DERIVED_SALT: Seed32 = Seed32([0; 32]);

/// Every seed of a round derived from `secret` and `beacon`, each committed with
/// [`DERIVED_SALT`]: what a round with a beacon reveals, and what a verifier recomputes.
pub fn derived_seeds(secret: &Seed32, beacon: &Seed32) -> RevealedSeeds {
    let reveal =
        |dimension| SeedReveal::commit(derive_seed(dimension, secret, beacon), DERIVED_SALT);
    RevealedSeeds {
        item_seed: reveal(Dimension::Item),
        order_seed: reveal(Dimension::Order),
        schedule_seed: reveal(Dimension::Schedule),
        correctness_seed: reveal(Dimension::Correctness),
        prompt_salt: reveal(Dimension::PromptSalt),
        sample_seed: Some(reveal(Dimension::Sample)),
        pass_seed: Some(reveal(Dimension::Pass)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed(hex: &str) -> Seed32 {
        hex.parse().expect("a seed")
    }

    /// The vectors of content/measurement.md, Seeds: secret 0x00…1f, beacon 0x20…3f.
    #[test]
    fn seed_derivation_vectors() {
        let secret = Seed32(core::array::from_fn(|i| i as u8));
        let beacon = Seed32(core::array::from_fn(|i| 32 + i as u8));
        let expected = [
            (
                Dimension::Item,
                "1d27e82d57423d6a3bfea1cf3f5c9c38d5aef348d2c4caff5b0ff59cd568d6fa",
            ),
            (
                Dimension::Order,
                "59fe3dee7a8ba96879615661a826a206b364e1ec7465533ffe5a68ce784afe83",
            ),
            (
                Dimension::Schedule,
                "955a02fb79d320ecda1041b23b9cc502bd5c0f1cb2ab10c9214621a053b61fc6",
            ),
            (
                Dimension::Correctness,
                "e190035441afb3c508e038dfe544b33346ae7913fdb0495539b51df08eafbe7b",
            ),
            (
                Dimension::PromptSalt,
                "1a2a5ae5fb3d5da3a30bd5f8bc4f78d63fdddeb837ad9c34dd5cb8500b03cad5",
            ),
            (
                Dimension::Sample,
                "4dd7f046c7d45282300c66272e99d84c36aa986800d25aa7188fd4b25219bdc3",
            ),
            (
                Dimension::Pass,
                "3ad89f86adc6e0ebd15e2511ebdcdf3deaa192bac487fe66c008932000abec65",
            ),
        ];
        for (dimension, hex) in expected {
            assert_eq!(
                derive_seed(dimension, &secret, &beacon),
                seed(hex),
                "{}",
                dimension.as_str()
            );
        }
        assert_eq!(
            secret_commitment(&secret).to_string(),
            "630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd"
        );
    }

    #[test]
    fn derived_seeds_fill_every_field_from_its_dimension() {
        let secret = Seed32([1; 32]);
        let beacon = Seed32([2; 32]);
        let seeds = derived_seeds(&secret, &beacon);
        let fields = [
            (Dimension::Item, &seeds.item_seed),
            (Dimension::Order, &seeds.order_seed),
            (Dimension::Schedule, &seeds.schedule_seed),
            (Dimension::Correctness, &seeds.correctness_seed),
            (Dimension::PromptSalt, &seeds.prompt_salt),
        ];
        for (dimension, reveal) in fields {
            assert_eq!(reveal.seed, derive_seed(dimension, &secret, &beacon));
            assert_eq!(reveal.salt, DERIVED_SALT);
            assert!(reveal.is_consistent());
        }
        let sample = seeds.sample_seed.expect("sample");
        assert_eq!(
            sample.seed,
            derive_seed(Dimension::Sample, &secret, &beacon)
        );
        let pass = seeds.pass_seed.expect("pass");
        assert_eq!(pass.seed, derive_seed(Dimension::Pass, &secret, &beacon));
    }

    #[test]
    fn each_input_moves_every_seed() {
        let secret = Seed32([7; 32]);
        let beacon = Seed32([9; 32]);
        let base = derive_seed(Dimension::Item, &secret, &beacon);
        assert_ne!(derive_seed(Dimension::Order, &secret, &beacon), base);
        assert_ne!(
            derive_seed(Dimension::Item, &Seed32([8; 32]), &beacon),
            base
        );
        assert_ne!(
            derive_seed(Dimension::Item, &secret, &Seed32([8; 32])),
            base
        );
        // Secret and beacon are not interchangeable.
        assert_ne!(derive_seed(Dimension::Item, &beacon, &secret), base);
    }
}
