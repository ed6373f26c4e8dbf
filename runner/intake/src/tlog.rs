//! The data directory's transparency log (content/transparency-log.md): C2SP tlog-tiles
//! static files under `<data>/log/` (`tile/…`, `tile/entries/…`, `checkpoint`), its
//! `config.toml` (origin, log keyid) and `.lock`, which serialises appends from every
//! campaign. The formats and proofs are `receipts::tlog`; this is only the writer.
//!
//! An append is crash-safe without a journal: it writes only files that no checkpoint
//! yet refers to (the right edge's partial tiles and bundles get new `.p/<W>` names, full
//! ones new indices), each with `write_atomic`, and the signed `checkpoint` last. A torn
//! append leaves the previous checkpoint and every file it covers untouched; the next
//! append starts from that checkpoint and rewrites the orphaned files.

use std::fs;
use std::path::{Path, PathBuf};

use receipts::canonical::CanonicalError;
use receipts::fsutil::{IoError, read_limited, write_atomic};
use receipts::keys::{PrivateKey, PublicKey};
use receipts::layout::DataError;
use receipts::tlog::checkpoint::{Checkpoint, CheckpointError};
use receipts::tlog::merkle::{
    Hash, ProofError, empty_root, leaf_hash, prove_consistency, prove_inclusion, tree_root,
};
use receipts::tlog::note::{NoteError, NoteSignature, NoteVerifier, SignatureType};
use receipts::tlog::proof::TlogProof;
use receipts::tlog::tiles::{
    MAX_ENTRY_BYTES, TILE_WIDTH, TileDir, TileError, TileId, TileSource, TiledTree, append_tiles,
    encode_bundle, read_bundle, tiles_for_size,
};
use serde::{Deserialize, Serialize};

use crate::store::{CampaignLock, RECORDS_LOCK_WAIT, try_lock};

pub use receipts::tlog::LOG_DIR;

/// Largest `config.toml` or `checkpoint` read, in bytes.
const MAX_SMALL_FILE_BYTES: usize = 1 << 16;

/// Errors of the log's store.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// An I/O error on a named file.
    #[error(transparent)]
    Io(#[from] IoError),
    /// Taking the log's `.lock` failed or timed out.
    #[error(transparent)]
    Data(#[from] DataError),
    /// `log init` on a directory that already has a log.
    #[error("`{path}` already holds a log")]
    Exists {
        /// Its `config.toml`.
        path: PathBuf,
    },
    /// No log in this data directory.
    #[error("no log at `{path}` (run `referee log init`)")]
    NoLog {
        /// The missing `config.toml`.
        path: PathBuf,
    },
    /// A `config.toml` that does not parse.
    #[error("`{path}`: {message}")]
    Config {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
    /// A signing key other than the one `config.toml` names.
    #[error("log key `{got}` is not the log's key `{expected}`")]
    WrongKey {
        /// The keyid in `config.toml`.
        expected: String,
        /// The keyid given.
        got: String,
    },
    /// The checkpoint does not parse, names another origin or is badly signed.
    #[error("`{path}`: {source}")]
    Checkpoint {
        /// The checkpoint file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: CheckpointError,
    },
    /// An origin that cannot name a note key.
    #[error(transparent)]
    Note(#[from] NoteError),
    /// A tile or bundle that is missing, truncated or malformed.
    #[error(transparent)]
    Tile(#[from] TileError),
    /// A proof that cannot be built (an index or size beyond the checkpoint, a missing
    /// node).
    #[error(transparent)]
    Proof(#[from] ProofError),
    /// A size beyond the current checkpoint's.
    #[error("size {size} is beyond the log's checkpoint size {checkpoint}")]
    BeyondCheckpoint {
        /// The size asked.
        size: u64,
        /// The checkpoint's size.
        checkpoint: u64,
    },
    /// A stored file whose bytes are not the ones the log's entries give.
    #[error("`{path}` does not match the log's entries")]
    Mismatch {
        /// The tile or bundle path.
        path: String,
    },
    /// The tiles' root is not the checkpoint's.
    #[error("the tiles' root for size {size} is not the checkpoint's root")]
    RootMismatch {
        /// The checkpoint size.
        size: u64,
    },
    /// An entry that does not serialize.
    #[error(transparent)]
    Canonical(#[from] CanonicalError),
}

/// `log/config.toml`: the origin line (also the log key's note name) and the keyring
/// keyid of the log's key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {
    /// The origin line of every checkpoint, e.g. `referee.example/log`.
    pub origin: String,
    /// The securesystemslib keyid (64 hex) of the log's public key.
    pub keyid: String,
}

/// The result of an append.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// The index of the first appended entry (0-based).
    pub first_index: u64,
    /// The new checkpoint.
    pub checkpoint: Checkpoint,
}

/// A log in a data directory.
#[derive(Debug, Clone)]
pub struct LogStore {
    dir: PathBuf,
    config: LogConfig,
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> IoError {
    IoError::at(action, path)
}

impl LogStore {
    /// The log directory of `data`.
    pub fn dir_of(data: &Path) -> PathBuf {
        data.join(LOG_DIR)
    }

    /// Creates the log of `data`: `config.toml` and the signed checkpoint of the empty
    /// tree.
    ///
    /// Errors: [`LogError::Exists`]; [`LogError::Note`] for an origin that cannot name a
    /// key; [`LogError::Io`].
    pub fn init(data: &Path, origin: &str, key: &PrivateKey) -> Result<Self, LogError> {
        let dir = Self::dir_of(data);
        let config_path = dir.join("config.toml");
        if config_path.exists() {
            return Err(LogError::Exists { path: config_path });
        }
        NoteVerifier::new(origin, SignatureType::Ed25519, key.public().clone())?;
        fs::create_dir_all(&dir).map_err(io("creating", &dir))?;
        let config = LogConfig {
            origin: origin.to_owned(),
            keyid: key.keyid().to_owned(),
        };
        let text = toml::to_string(&config).map_err(|e| LogError::Config {
            path: config_path.clone(),
            message: e.to_string(),
        })?;
        let store = Self { dir, config };
        let empty = Checkpoint {
            origin: origin.to_owned(),
            size: 0,
            root: empty_root(),
            extensions: Vec::new(),
        };
        store.write_checkpoint(&empty, key)?;
        write_atomic(&config_path, text.as_bytes(), 0o644).map_err(io("writing", &config_path))?;
        Ok(store)
    }

    /// Opens the log of `data`.
    ///
    /// Errors: [`LogError::NoLog`]; [`LogError::Config`]; [`LogError::Io`].
    pub fn open(data: &Path) -> Result<Self, LogError> {
        Self::open_dir(&Self::dir_of(data))
    }

    /// Opens the log in `dir` itself (a copy of another data directory's `log/`, as a
    /// witness holds it).
    ///
    /// Errors: as [`LogStore::open`].
    pub fn open_dir(dir: &Path) -> Result<Self, LogError> {
        let dir = dir.to_path_buf();
        let path = dir.join("config.toml");
        if !path.is_file() {
            return Err(LogError::NoLog { path });
        }
        let bytes = read_limited(&path, MAX_SMALL_FILE_BYTES).map_err(io("reading", &path))?;
        let config = std::str::from_utf8(&bytes)
            .map_err(|e| e.to_string())
            .and_then(|t| toml::from_str::<LogConfig>(t).map_err(|e| e.to_string()))
            .map_err(|message| LogError::Config { path, message })?;
        Ok(Self { dir, config })
    }

    /// The configuration.
    pub fn config(&self) -> &LogConfig {
        &self.config
    }

    /// The `checkpoint` file.
    pub fn checkpoint_path(&self) -> PathBuf {
        self.dir.join("checkpoint")
    }

    /// The note verifier of the log key `public` under the log's origin.
    ///
    /// Errors: [`LogError::WrongKey`] when `public` is not the configured key;
    /// [`LogError::Note`].
    pub fn verifier(&self, public: &PublicKey) -> Result<NoteVerifier, LogError> {
        if public.keyid() != self.config.keyid {
            return Err(LogError::WrongKey {
                expected: self.config.keyid.clone(),
                got: public.keyid().to_owned(),
            });
        }
        Ok(NoteVerifier::new(
            &self.config.origin,
            SignatureType::Ed25519,
            public.clone(),
        )?)
    }

    /// Reads and opens the current checkpoint with `log`'s key.
    ///
    /// Errors: [`LogError::Io`]; [`LogError::Checkpoint`].
    pub fn checkpoint(&self, log: &NoteVerifier) -> Result<(Checkpoint, Vec<u8>), LogError> {
        let path = self.checkpoint_path();
        let bytes = read_limited(&path, MAX_SMALL_FILE_BYTES).map_err(io("reading", &path))?;
        let (checkpoint, _) = Checkpoint::open(&bytes, log)
            .map_err(|source| LogError::Checkpoint { path, source })?;
        Ok((checkpoint, bytes))
    }

    /// Adds a witness's cosignature line to the current checkpoint, under the lock, if
    /// the checkpoint is still the one cosigned (`text`); returns whether it was.
    ///
    /// Errors: as [`LogStore::checkpoint`]; [`LogError::Io`].
    pub fn add_cosignature(
        &self,
        log: &NoteVerifier,
        text: &str,
        line: NoteSignature,
    ) -> Result<bool, LogError> {
        let _lock = self.lock()?;
        let path = self.checkpoint_path();
        let bytes = read_limited(&path, MAX_SMALL_FILE_BYTES).map_err(io("reading", &path))?;
        let (_, mut note) =
            Checkpoint::open(&bytes, log).map_err(|source| LogError::Checkpoint {
                path: path.clone(),
                source,
            })?;
        if note.text != text {
            return Ok(false);
        }
        note.signatures
            .retain(|s| s.name != line.name || s.key_id != line.key_id);
        note.signatures.push(line);
        write_atomic(&path, &note.to_bytes(), 0o644).map_err(io("writing", &path))?;
        Ok(true)
    }

    fn write_checkpoint(&self, checkpoint: &Checkpoint, key: &PrivateKey) -> Result<(), LogError> {
        let path = self.checkpoint_path();
        let note = checkpoint
            .sign(key)
            .map_err(|source| LogError::Checkpoint {
                path: path.clone(),
                source,
            })?;
        write_atomic(&path, &note.to_bytes(), 0o644).map_err(io("writing", &path))?;
        Ok(())
    }

    /// Appends `entries` under the log's `.lock` (waiting up to [`RECORDS_LOCK_WAIT`]):
    /// tiles and entry bundles first, the checkpoint signed by `key` last. The current
    /// checkpoint's root is checked against the tiles before anything is written.
    ///
    /// Errors: [`LogError::WrongKey`]; [`LogError::Data`] (`Locked`);
    /// [`LogError::Checkpoint`]; [`LogError::RootMismatch`]; [`LogError::Tile`] (an entry
    /// over 65,535 bytes, a damaged tile); [`LogError::Io`].
    pub fn append(&self, key: &PrivateKey, entries: &[Vec<u8>]) -> Result<Appended, LogError> {
        let log = self.verifier(key.public())?;
        let _lock = self.lock()?;
        self.append_locked(key, &log, entries)
    }

    /// Appends `entry` unless the log already holds one with the same bytes (a round
    /// resumed after its entry was logged), under the lock; returns its index. Reads every
    /// entry bundle.
    ///
    /// Errors: as [`LogStore::append`].
    pub fn append_once(&self, key: &PrivateKey, entry: &[u8]) -> Result<u64, LogError> {
        let log = self.verifier(key.public())?;
        let _lock = self.lock()?;
        if let Some(index) = self.position(&log, entry)? {
            return Ok(index);
        }
        Ok(self
            .append_locked(key, &log, &[entry.to_vec()])?
            .first_index)
    }

    /// The index of the first entry with exactly these bytes, if the log holds one.
    ///
    /// Errors: as [`LogStore::entries`].
    pub fn position(&self, log: &NoteVerifier, entry: &[u8]) -> Result<Option<u64>, LogError> {
        Ok(self
            .entries(log)?
            .iter()
            .position(|e| e == entry)
            .map(|i| i as u64))
    }

    /// The C2SP tlog-proof of entry `index` in the signed checkpoint `checkpoint` (its
    /// note bytes: the current checkpoint or an older one of this log), with `extra`.
    ///
    /// Errors: [`LogError::Checkpoint`] for a note that does not open with `log`; as
    /// [`LogStore::prove`].
    pub fn tlog_proof(
        &self,
        log: &NoteVerifier,
        index: u64,
        checkpoint: &[u8],
        extra: Option<Vec<u8>>,
    ) -> Result<TlogProof, LogError> {
        let (opened, _) =
            Checkpoint::open(checkpoint, log).map_err(|source| LogError::Checkpoint {
                path: self.checkpoint_path(),
                source,
            })?;
        Ok(TlogProof {
            extra,
            index,
            proof: self.prove(log, index, opened.size)?,
            checkpoint: checkpoint.to_vec(),
        })
    }

    fn append_locked(
        &self,
        key: &PrivateKey,
        log: &NoteVerifier,
        entries: &[Vec<u8>],
    ) -> Result<Appended, LogError> {
        let (old, _) = self.checkpoint(log)?;
        self.check_root(&old)?;
        if let Some(e) = entries.iter().find(|e| e.len() > MAX_ENTRY_BYTES) {
            return Err(TileError::EntryTooLarge { bytes: e.len() }.into());
        }
        let leaves: Vec<Hash> = entries.iter().map(|e| leaf_hash(e)).collect();
        let mut files = append_tiles(self, old.size, &leaves)?
            .into_iter()
            .map(|(tile, bytes)| (tile.path(), bytes))
            .collect::<Vec<_>>();
        files.extend(self.append_bundles(old.size, entries)?);
        for (path, bytes) in &files {
            self.write_file(path, bytes)?;
        }
        let size = old.size + entries.len() as u64;
        let checkpoint = Checkpoint {
            origin: old.origin,
            size,
            root: tree_root(&TiledTree { source: self, size }, size)?,
            extensions: Vec::new(),
        };
        self.write_checkpoint(&checkpoint, key)?;
        Ok(Appended {
            first_index: old.size,
            checkpoint,
        })
    }

    /// The entry bundles that change when `entries` follow the first `old` entries.
    fn append_bundles(
        &self,
        old: u64,
        entries: &[Vec<u8>],
    ) -> Result<Vec<(String, Vec<u8>)>, LogError> {
        let first = old / TILE_WIDTH;
        let prefix = old % TILE_WIDTH;
        let mut all = if prefix > 0 {
            read_bundle(
                self,
                TileId {
                    level: 0,
                    index: first,
                    width: prefix,
                },
            )?
        } else {
            Vec::new()
        };
        all.extend_from_slice(entries);
        let mut out = Vec::new();
        for (i, chunk) in all.chunks(TILE_WIDTH as usize).enumerate() {
            let tile = TileId {
                level: 0,
                index: first + i as u64,
                width: chunk.len() as u64,
            };
            out.push((tile.entries_path(), encode_bundle(chunk)?));
        }
        Ok(out)
    }

    fn write_file(&self, rel: &str, bytes: &[u8]) -> Result<(), LogError> {
        let path = self.dir.join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(io("creating", parent))?;
        }
        write_atomic(&path, bytes, 0o644).map_err(io("writing", &path))?;
        Ok(())
    }

    fn lock(&self) -> Result<CampaignLock, LogError> {
        let path = self.dir.join(".lock");
        let deadline = std::time::Instant::now() + RECORDS_LOCK_WAIT;
        loop {
            match try_lock(&self.dir, &path)? {
                Some(lock) => return Ok(lock),
                None if std::time::Instant::now() >= deadline => {
                    return Err(DataError::Locked { path }.into());
                }
                None => std::thread::sleep(std::time::Duration::from_millis(50)),
            }
        }
    }

    fn check_root(&self, checkpoint: &Checkpoint) -> Result<(), LogError> {
        let tiled = TiledTree {
            source: self,
            size: checkpoint.size,
        };
        if tree_root(&tiled, checkpoint.size)? != checkpoint.root {
            return Err(LogError::RootMismatch {
                size: checkpoint.size,
            });
        }
        Ok(())
    }

    fn within(&self, size: u64, checkpoint: &Checkpoint) -> Result<(), LogError> {
        if size > checkpoint.size {
            return Err(LogError::BeyondCheckpoint {
                size,
                checkpoint: checkpoint.size,
            });
        }
        Ok(())
    }

    /// The inclusion proof of entry `index` in the tree of `size` entries (at most the
    /// checkpoint's size).
    ///
    /// Errors: [`LogError::BeyondCheckpoint`]; [`LogError::Proof`]; as [`LogStore::checkpoint`].
    pub fn prove(&self, log: &NoteVerifier, index: u64, size: u64) -> Result<Vec<Hash>, LogError> {
        self.within(size, &self.checkpoint(log)?.0)?;
        Ok(prove_inclusion(
            &TiledTree { source: self, size },
            index,
            size,
        )?)
    }

    /// The consistency proof between the trees of `old` and `new` entries.
    ///
    /// Errors: as [`LogStore::prove`].
    pub fn consistency(
        &self,
        log: &NoteVerifier,
        old: u64,
        new: u64,
    ) -> Result<Vec<Hash>, LogError> {
        self.within(new, &self.checkpoint(log)?.0)?;
        Ok(prove_consistency(
            &TiledTree {
                source: self,
                size: new,
            },
            old,
            new,
        )?)
    }

    /// Every entry of the checkpoint, in order, read from the bundles.
    ///
    /// Errors: [`LogError::Tile`]; as [`LogStore::checkpoint`].
    pub fn entries(&self, log: &NoteVerifier) -> Result<Vec<Vec<u8>>, LogError> {
        let (checkpoint, _) = self.checkpoint(log)?;
        let mut entries = Vec::new();
        for tile in tiles_for_size(checkpoint.size)
            .into_iter()
            .filter(|t| t.level == 0)
        {
            entries.extend(read_bundle(self, tile)?);
        }
        Ok(entries)
    }

    /// Checks the whole log: the checkpoint's signature and origin, every bundle, every
    /// tile rebuilt from the entries byte for byte, and the root. Returns the checkpoint.
    ///
    /// Errors: [`LogError::Checkpoint`]; [`LogError::Tile`] for a missing, truncated or
    /// malformed tile or bundle; [`LogError::Mismatch`]; [`LogError::RootMismatch`].
    pub fn verify(&self, log: &NoteVerifier) -> Result<Checkpoint, LogError> {
        let (checkpoint, _) = self.checkpoint(log)?;
        let leaves: Vec<Hash> = self.entries(log)?.iter().map(|e| leaf_hash(e)).collect();
        for (tile, expected) in append_tiles(&NoTiles, 0, &leaves)? {
            let path = tile.path();
            if self.read(&path)? != expected {
                return Err(LogError::Mismatch { path });
            }
        }
        if tree_root(&leaves[..], checkpoint.size)? != checkpoint.root {
            return Err(LogError::RootMismatch {
                size: checkpoint.size,
            });
        }
        Ok(checkpoint)
    }
}

/// The tiles of the empty tree: none.
struct NoTiles;

impl TileSource for NoTiles {
    fn read(&self, path: &str) -> Result<Vec<u8>, TileError> {
        Err(TileError::Unavailable {
            path: path.to_owned(),
            reason: "the tree is empty".to_owned(),
        })
    }
}

impl TileSource for LogStore {
    fn read(&self, path: &str) -> Result<Vec<u8>, TileError> {
        TileDir {
            dir: self.dir.clone(),
        }
        .read(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(i: u64) -> Vec<u8> {
        format!("{{\"entry\":{i}}}").into_bytes()
    }

    fn setup() -> (tempfile::TempDir, LogStore, PrivateKey, NoteVerifier) {
        let data = tempfile::tempdir().unwrap();
        let key = PrivateKey::from_seed(&[3; 32]);
        let store = LogStore::init(data.path(), "referee.example/log", &key).unwrap();
        let log = store.verifier(key.public()).unwrap();
        (data, store, key, log)
    }

    #[test]
    fn appends_build_a_log_whose_proofs_verify() {
        let (data, store, key, log) = setup();
        assert_eq!(store.checkpoint(&log).unwrap().0.size, 0);
        let all: Vec<Vec<u8>> = (0..300).map(entry).collect();
        let first = store.append(&key, &all[..2]).unwrap();
        assert_eq!(first.first_index, 0);
        let second = store.append(&key, &all[2..]).unwrap();
        assert_eq!(second.first_index, 2);
        assert_eq!(second.checkpoint.size, 300);
        let leaves: Vec<Hash> = all.iter().map(|e| leaf_hash(e)).collect();
        assert_eq!(second.checkpoint.root, tree_root(&leaves[..], 300).unwrap());
        assert_eq!(store.verify(&log).unwrap(), second.checkpoint);
        assert_eq!(store.entries(&log).unwrap(), all);
        for index in [0, 1, 255, 256, 299] {
            let proof = store.prove(&log, index, 300).unwrap();
            receipts::tlog::merkle::verify_inclusion(
                &leaves[index as usize],
                index,
                300,
                &proof,
                &second.checkpoint.root,
            )
            .unwrap();
        }
        let proof = store.consistency(&log, 2, 300).unwrap();
        receipts::tlog::merkle::verify_consistency(
            2,
            300,
            &proof,
            &first.checkpoint.root,
            &second.checkpoint.root,
        )
        .unwrap();
        assert!(matches!(
            store.prove(&log, 0, 301),
            Err(LogError::BeyondCheckpoint {
                size: 301,
                checkpoint: 300
            })
        ));
        // The files tlog-tiles names, the checkpoint, the config.
        for rel in [
            "tile/0/000",
            "tile/0/001.p/44",
            "tile/1/000.p/1",
            "tile/entries/000",
            "tile/entries/001.p/44",
            "checkpoint",
            "config.toml",
        ] {
            assert!(data.path().join("log").join(rel).is_file(), "{rel}");
        }
        let reopened = LogStore::open(data.path()).unwrap();
        assert_eq!(reopened.config(), store.config());
        assert!(matches!(
            LogStore::init(data.path(), "referee.example/log", &key),
            Err(LogError::Exists { .. })
        ));
    }

    /// A torn append (tiles and bundles written, the process killed before the
    /// checkpoint) leaves the previous checkpoint valid; the next append starts from it.
    #[test]
    fn a_torn_append_is_invisible_and_the_next_append_repairs_it() {
        let (_data, store, key, log) = setup();
        store.append(&key, &[entry(0), entry(1), entry(2)]).unwrap();
        let before = store.checkpoint(&log).unwrap();
        let leaves: Vec<Hash> = (3..8).map(|i| leaf_hash(&entry(i))).collect();
        for (tile, bytes) in append_tiles(&store, 3, &leaves).unwrap() {
            store.write_file(&tile.path(), &bytes).unwrap();
        }
        for (path, bytes) in store
            .append_bundles(3, &(3..8).map(entry).collect::<Vec<_>>())
            .unwrap()
        {
            store.write_file(&path, &bytes).unwrap();
        }
        assert_eq!(store.checkpoint(&log).unwrap(), before);
        assert_eq!(store.verify(&log).unwrap().size, 3);
        // Other entries than the torn ones, same sizes: the orphaned files are rewritten.
        let next: Vec<Vec<u8>> = (100..105).map(entry).collect();
        store.append(&key, &next).unwrap();
        let checked = store.verify(&log).unwrap();
        assert_eq!(checked.size, 8);
        assert_eq!(store.entries(&log).unwrap()[3..], next[..]);
    }

    /// A resumed round logs an envelope once; its tlog-proof against an older
    /// checkpoint verifies after the log grew.
    #[test]
    fn append_once_is_idempotent_and_proofs_hold_against_older_checkpoints() {
        let (_data, store, key, log) = setup();
        assert_eq!(store.append_once(&key, &entry(0)).unwrap(), 0);
        let (_, opening) = store.checkpoint(&log).unwrap();
        assert_eq!(store.append_once(&key, &entry(0)).unwrap(), 0);
        assert_eq!(store.append_once(&key, &entry(1)).unwrap(), 1);
        assert_eq!(store.append_once(&key, &entry(0)).unwrap(), 0);
        assert_eq!(store.checkpoint(&log).unwrap().0.size, 2);
        let proof = store
            .tlog_proof(&log, 0, &opening, Some(b"round-opened".to_vec()))
            .unwrap();
        let parsed = TlogProof::parse_all(&proof.to_bytes()).unwrap();
        assert_eq!(parsed, vec![proof]);
        let checkpoint = parsed[0].verify(&leaf_hash(&entry(0)), &log).unwrap();
        assert_eq!(checkpoint.size, 1);
        assert!(parsed[0].verify(&leaf_hash(&entry(1)), &log).is_err());
    }

    #[test]
    fn damage_and_the_wrong_key_are_named_failures() {
        let (data, store, key, log) = setup();
        store.append(&key, &[entry(0), entry(1), entry(2)]).unwrap();
        let other = PrivateKey::from_seed(&[4; 32]);
        assert!(matches!(
            store.append(&other, &[entry(3)]),
            Err(LogError::WrongKey { .. })
        ));
        assert!(matches!(
            store.append(&key, &[vec![0; 65_536]]),
            Err(LogError::Tile(TileError::EntryTooLarge { bytes: 65_536 }))
        ));
        // One flipped byte in the level-0 tile.
        let tile = data.path().join("log/tile/0/000.p/3");
        let mut bytes = fs::read(&tile).unwrap();
        bytes[0] ^= 1;
        fs::write(&tile, &bytes).unwrap();
        assert!(
            matches!(store.verify(&log), Err(LogError::Mismatch { path }) if path == "tile/0/000.p/3")
        );
        assert!(matches!(
            store.append(&key, &[entry(3)]),
            Err(LogError::RootMismatch { size: 3 })
        ));
        // A checkpoint re-signed by another key.
        let forged = Checkpoint {
            origin: "referee.example/log".to_owned(),
            size: 0,
            root: empty_root(),
            extensions: vec![],
        };
        fs::write(
            store.checkpoint_path(),
            forged.sign(&other).unwrap().to_bytes(),
        )
        .unwrap();
        assert!(matches!(
            store.checkpoint(&log),
            Err(LogError::Checkpoint {
                source: CheckpointError::Note(NoteError::NotSignedBy { .. }),
                ..
            })
        ));
    }
}
