//! The transparency log's formats and proofs, pure (content/transparency-log.md): the
//! RFC 6962 Merkle tree with inclusion and consistency proofs (`merkle`), C2SP signed
//! notes with Ed25519 note signatures (`note`), tlog-checkpoint (`checkpoint`), the
//! entry referee logs for an envelope (`entry`), the signed statements of the kinds
//! beyond a round's own (`statements`),
//! tlog-tiles paths, tiles and entry bundles (`tiles`), tlog-cosignature witness lines
//! (`cosignature`) and tlog-proof files (`proof`). No file is written here: the log's
//! store lives with the runner, and the verifier needs only this.

/// The log's directory inside a data directory: `<data>/log/`.
pub const LOG_DIR: &str = "log";

pub mod checkpoint;
pub mod cosignature;
pub mod entry;
pub mod merkle;
pub mod note;
pub mod proof;
pub mod statements;
pub mod tiles;
