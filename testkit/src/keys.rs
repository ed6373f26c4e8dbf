//! Keyrings for tests: every key trusted from a given instant on, with no end.

use receipts::keys::{Keyring, PrivateKey, TrustedKey};
use receipts::model::Timestamp;

/// A keyring trusting each of `keys` from the Unix epoch on, with no end.
///
/// # Panics
/// When the keyring is refused (a key listed twice).
pub fn keyring(keys: &[&PrivateKey]) -> Keyring {
    keyring_from(keys, Timestamp::from_unix_seconds(0).expect("epoch"))
}

/// A keyring trusting each of `keys` from `valid_from` on, with no end.
///
/// # Panics
/// When the keyring is refused (a key listed twice).
pub fn keyring_from(keys: &[&PrivateKey], valid_from: Timestamp) -> Keyring {
    Keyring::new(
        keys.iter()
            .map(|k| TrustedKey {
                key: k.public().clone(),
                valid_from,
                valid_until: None,
            })
            .collect(),
    )
    .expect("keyring")
}
