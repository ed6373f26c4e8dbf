//! The Merkle tree of RFC 6962 / RFC 9162 §2.1: leaf and node hashes, the tree head, and
//! inclusion and consistency proofs, generated from any [`NodeSource`] and verified
//! against a root and size.
//!
//! A tree of `n` leaves is addressed by its *complete subtrees*: the node at `(level,
//! index)` covers leaves `index·2^level .. (index+1)·2^level`, which is exactly what the
//! tiles store ([`crate::tlog::tiles`]). Everything else (the right edge of a tree whose
//! size is not a power of two) is recomputed from those.

use sha2::{Digest, Sha256};

/// A SHA-256 hash of a leaf or a node (32 bytes).
pub type Hash = [u8; 32];

/// Errors of proof generation and verification.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    /// A leaf index at or beyond the tree size.
    #[error("leaf index {index} is beyond the tree size {size}")]
    IndexBeyondSize {
        /// The leaf index (0-based).
        index: u64,
        /// The tree size in leaves.
        size: u64,
    },
    /// A consistency proof asked from a larger tree to a smaller one.
    #[error("old tree size {old} is larger than new tree size {new}")]
    OldLargerThanNew {
        /// The older size in leaves.
        old: u64,
        /// The newer size in leaves.
        new: u64,
    },
    /// A proof with a different number of hashes than its sizes require.
    #[error("proof has {got} hashes, expected {expected}")]
    WrongLength {
        /// Hashes in the proof.
        got: usize,
        /// Hashes the sizes require.
        expected: usize,
    },
    /// A proof whose hashes do not lead to the expected root.
    #[error("proof does not lead to the expected root")]
    RootMismatch,
    /// The [`NodeSource`] could not produce a node.
    #[error("node at level {level}, index {index} is unavailable: {reason}")]
    NodeUnavailable {
        /// The node's level (0 for leaves).
        level: u8,
        /// The node's index within its level.
        index: u64,
        /// Why, as the source reported it.
        reason: String,
    },
}

/// RFC 6962 leaf hash: `SHA-256(0x00 ‖ entry)`.
pub fn leaf_hash(entry: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update([0x00]);
    h.update(entry);
    h.finalize().into()
}

/// RFC 6962 interior node hash: `SHA-256(0x01 ‖ left ‖ right)`.
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([0x01]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// The root of the empty tree: `SHA-256("")`.
pub fn empty_root() -> Hash {
    Sha256::digest([]).into()
}

/// Where proofs read complete-subtree hashes from: the hash of the node at `(level,
/// index)`, covering leaves `index·2^level .. (index+1)·2^level`, all of which exist.
pub trait NodeSource {
    /// The node's hash.
    ///
    /// Errors: [`ProofError::NodeUnavailable`] when the source lacks it or cannot read it.
    fn node(&self, level: u8, index: u64) -> Result<Hash, ProofError>;
}

/// An in-memory list of leaf hashes: the simplest [`NodeSource`], for tests and small
/// trees (each node is recomputed from its leaves: `2^level` hashes).
impl NodeSource for [Hash] {
    fn node(&self, level: u8, index: u64) -> Result<Hash, ProofError> {
        let unavailable = || ProofError::NodeUnavailable {
            level,
            index,
            reason: format!("{} leaves", self.len()),
        };
        let width = 1u64.checked_shl(u32::from(level)).ok_or_else(unavailable)?;
        let start = index.checked_mul(width).ok_or_else(unavailable)?;
        let end = start.checked_add(width).ok_or_else(unavailable)?;
        let leaves = usize::try_from(start)
            .ok()
            .zip(usize::try_from(end).ok())
            .and_then(|(s, e)| self.get(s..e))
            .ok_or_else(unavailable)?;
        Ok(hash_of_complete(leaves))
    }
}

/// The root of the complete subtree over `hashes` (a power-of-two count, at least one).
pub(crate) fn hash_of_complete(hashes: &[Hash]) -> Hash {
    let mut row = hashes.to_vec();
    while row.len() > 1 {
        row = row.chunks(2).map(|p| node_hash(&p[0], &p[1])).collect();
    }
    row.first().copied().unwrap_or_else(empty_root)
}

/// The largest power of two strictly smaller than `n` (`n ≥ 2`).
fn split_point(n: u64) -> u64 {
    1u64 << (63 - (n - 1).leading_zeros())
}

/// The hash of the leaves `lo..hi` (`lo < hi`) as RFC 6962's `MTH(D[lo:hi])`, read as
/// complete subtrees where the range allows it.
fn subtree_hash<S: NodeSource + ?Sized>(src: &S, lo: u64, hi: u64) -> Result<Hash, ProofError> {
    let n = hi - lo;
    if n.is_power_of_two() && lo.is_multiple_of(n) {
        // `n ≤ 2^63`, so its level fits in a u8.
        return src.node(n.trailing_zeros() as u8, lo / n);
    }
    let k = split_point(n);
    let left = subtree_hash(src, lo, lo + k)?;
    let right = subtree_hash(src, lo + k, hi)?;
    Ok(node_hash(&left, &right))
}

/// The tree head (RFC 6962 `MTH`) of the first `size` leaves of `src`.
///
/// Errors: [`ProofError::NodeUnavailable`] from the source.
pub fn tree_root<S: NodeSource + ?Sized>(src: &S, size: u64) -> Result<Hash, ProofError> {
    if size == 0 {
        return Ok(empty_root());
    }
    subtree_hash(src, 0, size)
}

/// The inclusion proof (RFC 9162 §2.1.3.1 `PATH`) of leaf `index` in the tree of the
/// first `size` leaves, from the leaf's sibling upwards.
///
/// Errors: [`ProofError::IndexBeyondSize`]; [`ProofError::NodeUnavailable`].
pub fn prove_inclusion<S: NodeSource + ?Sized>(
    src: &S,
    index: u64,
    size: u64,
) -> Result<Vec<Hash>, ProofError> {
    if index >= size {
        return Err(ProofError::IndexBeyondSize { index, size });
    }
    let (mut lo, mut hi, mut m) = (0u64, size, index);
    let mut proof = Vec::new();
    while hi - lo > 1 {
        let k = split_point(hi - lo);
        if m < k {
            proof.push(subtree_hash(src, lo + k, hi)?);
            hi = lo + k;
        } else {
            proof.push(subtree_hash(src, lo, lo + k)?);
            lo += k;
            m -= k;
        }
    }
    proof.reverse();
    Ok(proof)
}

/// The consistency proof (RFC 9162 §2.1.4.1 `PROOF`) between the trees of the first
/// `old` and the first `new` leaves; empty when `old` is 0 or equals `new`.
///
/// Errors: [`ProofError::OldLargerThanNew`]; [`ProofError::NodeUnavailable`].
pub fn prove_consistency<S: NodeSource + ?Sized>(
    src: &S,
    old: u64,
    new: u64,
) -> Result<Vec<Hash>, ProofError> {
    if old > new {
        return Err(ProofError::OldLargerThanNew { old, new });
    }
    let mut proof = Vec::new();
    if old == 0 || old == new {
        return Ok(proof);
    }
    let (mut lo, mut hi, mut m, mut whole) = (0u64, new, old, true);
    while m != hi - lo {
        let k = split_point(hi - lo);
        if m <= k {
            proof.push(subtree_hash(src, lo + k, hi)?);
            hi = lo + k;
        } else {
            proof.push(subtree_hash(src, lo, lo + k)?);
            lo += k;
            m -= k;
            whole = false;
        }
    }
    if !whole {
        proof.push(subtree_hash(src, lo, hi)?);
    }
    proof.reverse();
    Ok(proof)
}

/// The number of hashes [`prove_inclusion`] returns for leaf `index` of a tree of `size`
/// (`index < size`): the same descent, counting instead of hashing.
fn inclusion_len(index: u64, size: u64) -> usize {
    let (mut n, mut m, mut len) = (size, index, 0);
    while n > 1 {
        let k = split_point(n);
        if m < k {
            n = k;
        } else {
            n -= k;
            m -= k;
        }
        len += 1;
    }
    len
}

/// The number of hashes [`prove_consistency`] returns between `old` and `new` (`0 < old
/// < new`): the same descent, counting instead of hashing.
fn consistency_len(old: u64, new: u64) -> usize {
    let (mut n, mut m, mut whole, mut len) = (new, old, true, 0);
    while m != n {
        let k = split_point(n);
        if m <= k {
            n = k;
        } else {
            n -= k;
            m -= k;
            whole = false;
        }
        len += 1;
    }
    len + usize::from(!whole)
}

/// Checks an inclusion proof (RFC 9162 §2.1.3.2): that the leaf with hash `leaf` is at
/// `index` in the tree of `size` leaves whose root is `root`.
///
/// Errors: [`ProofError::IndexBeyondSize`]; [`ProofError::WrongLength`] when the proof
/// has more or fewer hashes than `index` and `size` require; [`ProofError::RootMismatch`].
pub fn verify_inclusion(
    leaf: &Hash,
    index: u64,
    size: u64,
    proof: &[Hash],
    root: &Hash,
) -> Result<(), ProofError> {
    if index >= size {
        return Err(ProofError::IndexBeyondSize { index, size });
    }
    let expected = inclusion_len(index, size);
    if proof.len() != expected {
        return Err(ProofError::WrongLength {
            got: proof.len(),
            expected,
        });
    }
    let (mut f, mut s) = (index, size - 1);
    let mut r = *leaf;
    for p in proof {
        if s == 0 {
            return Err(ProofError::RootMismatch);
        }
        if f & 1 == 1 || f == s {
            r = node_hash(p, &r);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        f >>= 1;
        s >>= 1;
    }
    if s != 0 || r != *root {
        return Err(ProofError::RootMismatch);
    }
    Ok(())
}

/// Checks a consistency proof (RFC 9162 §2.1.4.2): that the tree of `old` leaves with
/// root `old_root` is a prefix of the tree of `new` leaves with root `new_root`. Between
/// equal sizes the proof is empty and the roots must be equal; from size 0 it is empty.
///
/// Errors: [`ProofError::OldLargerThanNew`]; [`ProofError::WrongLength`];
/// [`ProofError::RootMismatch`].
pub fn verify_consistency(
    old: u64,
    new: u64,
    proof: &[Hash],
    old_root: &Hash,
    new_root: &Hash,
) -> Result<(), ProofError> {
    if old > new {
        return Err(ProofError::OldLargerThanNew { old, new });
    }
    if old == 0 || old == new {
        if !proof.is_empty() {
            return Err(ProofError::WrongLength {
                got: proof.len(),
                expected: 0,
            });
        }
        if old == new && old_root != new_root {
            return Err(ProofError::RootMismatch);
        }
        return Ok(());
    }
    let expected = consistency_len(old, new);
    if proof.len() != expected {
        return Err(ProofError::WrongLength {
            got: proof.len(),
            expected,
        });
    }
    let (seed, rest) = if old.is_power_of_two() {
        (old_root, proof)
    } else {
        (&proof[0], &proof[1..])
    };
    let shift = (old - 1).trailing_ones();
    let (mut f, mut s) = ((old - 1) >> shift, (new - 1) >> shift);
    let (mut fr, mut sr) = (*seed, *seed);
    for c in rest {
        if s == 0 {
            return Err(ProofError::RootMismatch);
        }
        if f & 1 == 1 || f == s {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            sr = node_hash(&sr, c);
        }
        f >>= 1;
        s >>= 1;
    }
    if s != 0 || fr != *old_root || sr != *new_root {
        return Err(ProofError::RootMismatch);
    }
    Ok(())
}
