//! Fixtures shared by the load-generator tests.

use receipts::model::{RevealedSeeds, Seed32, SeedReveal};

/// Fixed seeds: one byte value per dimension, one salt, so each test's items, order and
/// schedule are the same on every machine (the digest literal of `load_workload` depends
/// on them).
pub fn seeds() -> RevealedSeeds {
    let reveal = |b: u8| SeedReveal::commit(Seed32([b; 32]), Seed32([0xaa; 32]));
    RevealedSeeds {
        item_seed: reveal(1),
        order_seed: reveal(2),
        schedule_seed: reveal(3),
        correctness_seed: reveal(4),
        prompt_salt: reveal(5),
        sample_seed: None,
        pass_seed: None,
    }
}
