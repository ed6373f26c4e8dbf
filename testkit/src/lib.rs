//! Helpers shared by the tests and benches of every crate of the workspace, so each
//! exists once. A dev-dependency only: these helpers panic on any I/O error, which is
//! what a test wants and what no command may do.
//!
//! - [`copy_dir`]: a directory tree copied.
//! - [`campaign`]: a campaign file built in code, stating only the keys a test is about.
//! - [`keyring`], [`keyring_from`]: a keyring trusting given keys.
//! - [`forge`]: a real round bundle (the verifier's v2 fixture) changed and re-signed.
//! - [`blessing`]: whether to rewrite the expected files instead of comparing with
//!   them ([`BLESS`]).
//! - `tls::TlsServer` (feature `tls`): an HTTPS server on 127.0.0.1 with a CA of its own.

pub mod campaign;
pub mod forge;
mod keys;
#[cfg(feature = "tls")]
pub mod tls;

use std::path::Path;

pub use keys::{keyring, keyring_from};

/// The one variable that rewrites the workspace's expected files (goldens) from what a
/// test computes, instead of comparing with them: `REFEREE_BLESS=1 cargo test …`, then
/// review the diff. insta snapshots keep insta's own `INSTA_UPDATE` (CONTRIBUTING.md).
pub const BLESS: &str = "REFEREE_BLESS";

/// Whether [`BLESS`] is set: the expected files are to be rewritten.
pub fn blessing() -> bool {
    std::env::var_os(BLESS).is_some()
}

/// Copies the directory tree `from` (directories and regular files) to `to`, creating
/// `to` and its parents.
///
/// # Panics
/// On any I/O error, naming the path.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("mkdir {}: {e}", to.display()));
    let entries =
        std::fs::read_dir(from).unwrap_or_else(|e| panic!("list {}: {e}", from.display()));
    for entry in entries {
        let entry = entry.unwrap_or_else(|e| panic!("list {}: {e}", from.display()));
        let source = entry.path();
        let target = to.join(entry.file_name());
        let kind = entry
            .file_type()
            .unwrap_or_else(|e| panic!("stat {}: {e}", source.display()));
        if kind.is_dir() {
            copy_dir(&source, &target);
        } else {
            std::fs::copy(&source, &target).unwrap_or_else(|e| {
                panic!("copy {} to {}: {e}", source.display(), target.display())
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_is_copied_with_its_bytes() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let from = tmp.path().join("from");
        std::fs::create_dir_all(from.join("a/b")).expect("mkdir");
        std::fs::write(from.join("top.txt"), b"top").expect("write");
        std::fs::write(from.join("a/b/deep.bin"), [0u8, 255, 7]).expect("write");
        std::fs::create_dir_all(from.join("empty")).expect("mkdir");

        let to = tmp.path().join("out/to");
        copy_dir(&from, &to);

        assert_eq!(std::fs::read(to.join("top.txt")).expect("read"), b"top");
        assert_eq!(
            std::fs::read(to.join("a/b/deep.bin")).expect("read"),
            [0u8, 255, 7]
        );
        assert!(to.join("empty").is_dir());
        let mut names: Vec<_> = std::fs::read_dir(&to)
            .expect("list")
            .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
            .collect();
        names.sort();
        assert_eq!(names, ["a", "empty", "top.txt"]);
    }

    #[test]
    #[should_panic(expected = "list ")]
    fn a_missing_source_names_itself() {
        let tmp = tempfile::tempdir().expect("tempdir");
        copy_dir(&tmp.path().join("missing"), &tmp.path().join("to"));
    }
}
