//! The digest of a fetched tree (content/repository-submissions.md, Tree digest): one
//! line `<mode> <sha256> <path>\n` per file and symlink, sorted by path bytes, hashed.
//! Intake computes it from the files it wrote; the verifier from the published listing.

use sha2::{Digest, Sha256};

use crate::model::Sha256Hex;

/// The mode of a file git records executable.
pub const EXECUTABLE_MODE: &str = "100755";

/// The mode of any other file.
pub const FILE_MODE: &str = "100644";

/// The mode of a symlink (its sha256 is its target's).
pub const SYMLINK_MODE: &str = "120000";

/// The tree digest over `(mode, sha256, path)` entries, in any order.
pub fn tree_digest<'a>(
    entries: impl IntoIterator<Item = (&'a str, Sha256Hex, &'a str)>,
) -> Sha256Hex {
    let mut lines: Vec<(&str, Sha256Hex, &str)> = entries.into_iter().collect();
    lines.sort_by(|a, b| a.2.as_bytes().cmp(b.2.as_bytes()));
    let mut hasher = Sha256::new();
    for (mode, sha, path) in lines {
        hasher.update(format!("{mode} {sha} {path}\n").as_bytes());
    }
    Sha256Hex::from_bytes(hasher.finalize().into())
}

/// The mode of a file, executable or not.
pub fn file_mode(executable: bool) -> &'static str {
    if executable {
        EXECUTABLE_MODE
    } else {
        FILE_MODE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_sorts_by_path_bytes() {
        let a = Sha256Hex::digest(b"a");
        let b = Sha256Hex::digest(b"b");
        let digest = tree_digest([(FILE_MODE, b, "b"), (EXECUTABLE_MODE, a, "a")]);
        let expected = Sha256Hex::digest(format!("100755 {a} a\n100644 {b} b\n").as_bytes());
        assert_eq!(digest, expected);
    }
}
