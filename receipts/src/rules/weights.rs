//! The weights identity of the s1-pro-speed track (content/s1-pro-speed.md): the files an
//! entry serves are byte-identical to the campaign's pinned files, or to what the declared
//! quantisation recipe gives when the evaluator re-runs it. Digests in, the first
//! mismatch out: the runner hashes the files, the verifier compares the recorded digests
//! with the same function.

use crate::model::{Sha256Hex, WeightFile};

/// The first way a set of files differs from the expected one, naming the file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WeightsMismatch {
    /// An expected file is absent.
    #[error("`{name}` is missing (expected sha256 {expected})")]
    Missing {
        /// The file, relative to the weights directory.
        name: String,
        /// Its expected sha256.
        expected: Sha256Hex,
    },
    /// A file's bytes differ.
    #[error("`{name}` has sha256 {got}, expected {expected}")]
    Digest {
        /// The file, relative to the weights directory.
        name: String,
        /// Its expected sha256.
        expected: Sha256Hex,
        /// The sha256 of the bytes found.
        got: Sha256Hex,
    },
    /// A file that is not expected.
    #[error("`{name}` (sha256 {got}) is not an expected file")]
    Unexpected {
        /// The file, relative to the weights directory.
        name: String,
        /// The sha256 of its bytes.
        got: Sha256Hex,
    },
}

/// Compares the files `got` (name and sha256) with the `expected` ones, both in any
/// order: `Ok` when they are the same names with the same digests.
///
/// Errors: the first [`WeightsMismatch`] in the order of `expected`, then an unexpected
/// file in the order of `got` (boxed: two digests and a name).
pub fn compare(expected: &[WeightFile], got: &[WeightFile]) -> Result<(), Box<WeightsMismatch>> {
    for want in expected {
        match got.iter().find(|g| g.name == want.name) {
            None => {
                return Err(Box::new(WeightsMismatch::Missing {
                    name: want.name.clone(),
                    expected: want.sha256,
                }));
            }
            Some(found) if found.sha256 != want.sha256 => {
                return Err(Box::new(WeightsMismatch::Digest {
                    name: want.name.clone(),
                    expected: want.sha256,
                    got: found.sha256,
                }));
            }
            Some(_) => {}
        }
    }
    match got
        .iter()
        .find(|g| !expected.iter().any(|e| e.name == g.name))
    {
        Some(extra) => Err(Box::new(WeightsMismatch::Unexpected {
            name: extra.name.clone(),
            got: extra.sha256,
        })),
        None => Ok(()),
    }
}
