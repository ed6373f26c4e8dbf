//! C2SP tlog-tiles: the static files a log is served as. A tile at level `L` and index
//! `N` holds the hashes of the tree's nodes at height `8·L`, indices `256·N ..
//! 256·N + W`, concatenated (32 bytes each); a full tile has `W = 256`, the right edge of
//! a tree may end in a partial tile of width `W < 256` at `.p/<W>`. Entry bundles hold the
//! entries themselves, 256 to a bundle, each prefixed by its length as a big-endian u16.
//!
//! Paths: `tile/<L>/<N>[.p/<W>]` and `tile/entries/<N>[.p/<W>]`, where `N` is written in
//! groups of three decimal digits, every group but the last prefixed by `x`
//! (`1234067` → `x001/x234/067`).

use crate::tlog::merkle::{Hash, NodeSource, ProofError, hash_of_complete};

/// Height of a tile in tree levels.
pub const TILE_HEIGHT: u32 = 8;

/// Hashes in a full tile, entries in a full bundle (`2^TILE_HEIGHT`).
pub const TILE_WIDTH: u64 = 1 << TILE_HEIGHT;

/// Largest entry, in bytes (its length prefix is a u16).
pub const MAX_ENTRY_BYTES: usize = u16::MAX as usize;

/// Errors of reading and building tiles and entry bundles.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TileError {
    /// The source could not read a tile or bundle.
    #[error("`{path}` is unavailable: {reason}")]
    Unavailable {
        /// The tile path.
        path: String,
        /// Why, as the source reported it.
        reason: String,
    },
    /// A tile whose length is not 32 bytes times its width.
    #[error("tile `{path}` is {bytes} bytes, expected {expected}")]
    WrongLength {
        /// The tile path.
        path: String,
        /// Its length in bytes.
        bytes: usize,
        /// 32 times its width.
        expected: usize,
    },
    /// An entry bundle that is truncated, has trailing bytes or another entry count.
    #[error("entry bundle `{path}` does not hold exactly {expected} length-prefixed entries")]
    BadBundle {
        /// The bundle path.
        path: String,
        /// Its width.
        expected: u64,
    },
    /// An entry longer than [`MAX_ENTRY_BYTES`].
    #[error("entry is {bytes} bytes, more than the limit of {MAX_ENTRY_BYTES}")]
    EntryTooLarge {
        /// Its length in bytes.
        bytes: usize,
    },
}

/// A tile (or, at [`TileId::entries_path`], the entry bundle of the same leaves).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TileId {
    /// Tile level: the tile holds nodes at tree height `8·level`.
    pub level: u8,
    /// Tile index within its level.
    pub index: u64,
    /// Hashes (entries) it holds, 1 to [`TILE_WIDTH`].
    pub width: u64,
}

/// `N` as path elements: groups of three digits, all but the last prefixed by `x`.
fn index_path(n: u64) -> String {
    let digits = n.to_string();
    let padded = format!("{}{digits}", "0".repeat((3 - digits.len() % 3) % 3));
    let groups: Vec<&str> = (0..padded.len() / 3)
        .map(|i| &padded[3 * i..3 * i + 3])
        .collect();
    let (last, rest) = groups.split_last().unwrap_or((&"000", &[]));
    rest.iter().map(|g| format!("x{g}/")).collect::<String>() + last
}

impl TileId {
    fn suffix(&self) -> String {
        if self.width == TILE_WIDTH {
            String::new()
        } else {
            format!(".p/{}", self.width)
        }
    }

    /// The hash tile's path, `tile/<L>/<N>[.p/<W>]`.
    pub fn path(&self) -> String {
        format!(
            "tile/{}/{}{}",
            self.level,
            index_path(self.index),
            self.suffix()
        )
    }

    /// The entry bundle's path, `tile/entries/<N>[.p/<W>]` (for a level-0 tile).
    pub fn entries_path(&self) -> String {
        format!("tile/entries/{}{}", index_path(self.index), self.suffix())
    }
}

/// Every tile of a tree of `size` leaves, level by level, left to right: the full tiles
/// and the partial tile on the right edge of each level.
pub fn tiles_for_size(size: u64) -> Vec<TileId> {
    let mut tiles = Vec::new();
    let mut nodes = size;
    let mut level = 0u8;
    while nodes > 0 {
        for index in 0..nodes.div_ceil(TILE_WIDTH) {
            let width = (nodes - index * TILE_WIDTH).min(TILE_WIDTH);
            tiles.push(TileId {
                level,
                index,
                width,
            });
        }
        nodes >>= TILE_HEIGHT;
        level += 1;
    }
    tiles
}

/// Where tiles and bundles are read from, by path (see [`TileId::path`]).
pub trait TileSource {
    /// The bytes at `path`.
    ///
    /// Errors: [`TileError::Unavailable`].
    fn read(&self, path: &str) -> Result<Vec<u8>, TileError>;
}

/// A log's tiles in a directory (a data directory's `log/`, or a copy of it): the reader
/// the log's store and the verifier share. A bundle is read up to 256 entries of
/// `2 + 65,535` bytes, a tile up to 256 hashes.
#[derive(Debug, Clone)]
pub struct TileDir {
    /// The directory holding `tile/`.
    pub dir: std::path::PathBuf,
}

impl TileSource for TileDir {
    fn read(&self, path: &str) -> Result<Vec<u8>, TileError> {
        let limit = if path.starts_with("tile/entries/") {
            TILE_WIDTH as usize * (2 + MAX_ENTRY_BYTES)
        } else {
            32 * TILE_WIDTH as usize
        };
        let unavailable = |reason: String| TileError::Unavailable {
            path: path.to_owned(),
            reason,
        };
        let bytes = crate::fsutil::read_limited(&self.dir.join(path), limit)
            .map_err(|e| unavailable(e.to_string()))?;
        if bytes.len() > limit {
            return Err(unavailable(format!("larger than {limit} bytes")));
        }
        Ok(bytes)
    }
}

/// Reads tile `tile` from `source` and splits it into its hashes.
///
/// Errors: [`TileError::Unavailable`]; [`TileError::WrongLength`] for a truncated or
/// overlong tile.
pub fn read_tile<S: TileSource + ?Sized>(source: &S, tile: TileId) -> Result<Vec<Hash>, TileError> {
    let path = tile.path();
    let bytes = source.read(&path)?;
    let expected = 32 * tile.width as usize;
    if bytes.len() != expected {
        return Err(TileError::WrongLength {
            path,
            bytes: bytes.len(),
            expected,
        });
    }
    Ok(bytes.as_chunks::<32>().0.to_vec())
}

/// The tile of the tree of `size` leaves that holds node `index` at height `8·level`.
fn tile_holding(size: u64, level: u8, index: u64) -> TileId {
    let nodes = size >> (TILE_HEIGHT * u32::from(level));
    let tile = index / TILE_WIDTH;
    TileId {
        level,
        index: tile,
        width: (nodes - tile * TILE_WIDTH).min(TILE_WIDTH),
    }
}

/// A tree of `size` leaves read from the tiles of `source`: a [`NodeSource`] for proofs.
/// A node between tile levels is hashed up from the tile below it (at most 128 hashes).
pub struct TiledTree<'a, S: TileSource + ?Sized> {
    /// Where the tiles are.
    pub source: &'a S,
    /// The tree size in leaves.
    pub size: u64,
}

impl<S: TileSource + ?Sized> NodeSource for TiledTree<'_, S> {
    fn node(&self, level: u8, index: u64) -> Result<Hash, ProofError> {
        let unavailable = |reason: String| ProofError::NodeUnavailable {
            level,
            index,
            reason,
        };
        let covered = index
            .checked_add(1)
            .and_then(|n| n.checked_shl(u32::from(level)))
            .filter(|&end| level < 64 && end >> level == index + 1 && end <= self.size);
        if covered.is_none() {
            return Err(unavailable(format!(
                "beyond a tree of {} leaves",
                self.size
            )));
        }
        let tile_level = (u32::from(level) / TILE_HEIGHT) as u8;
        let rise = u32::from(level) % TILE_HEIGHT;
        let first = index << rise;
        let tile = tile_holding(self.size, tile_level, first);
        let hashes = read_tile(self.source, tile).map_err(|e| unavailable(e.to_string()))?;
        let start = (first % TILE_WIDTH) as usize;
        hashes
            .get(start..start + (1usize << rise))
            .map(hash_of_complete)
            .ok_or_else(|| unavailable(format!("not in tile `{}`", tile.path())))
    }
}

/// The tiles that change when `leaves` are appended to a tree of `old` leaves whose tiles
/// are in `source`, with their new bytes, bottom level first. Only the old partial tile
/// of each level is read.
///
/// Errors: [`read_tile`]'s.
pub fn append_tiles<S: TileSource + ?Sized>(
    source: &S,
    old: u64,
    leaves: &[Hash],
) -> Result<Vec<(TileId, Vec<u8>)>, TileError> {
    let mut out = Vec::new();
    let mut row = leaves.to_vec();
    let mut old_nodes = old;
    let mut level = 0u8;
    while !row.is_empty() {
        let first = old_nodes / TILE_WIDTH;
        let prefix = old_nodes % TILE_WIDTH;
        let mut hashes = if prefix > 0 {
            read_tile(
                source,
                TileId {
                    level,
                    index: first,
                    width: prefix,
                },
            )?
        } else {
            Vec::new()
        };
        hashes.extend_from_slice(&row);
        row.clear();
        for (i, chunk) in hashes.chunks(TILE_WIDTH as usize).enumerate() {
            if chunk.len() as u64 == TILE_WIDTH {
                row.push(hash_of_complete(chunk));
            }
            let id = TileId {
                level,
                index: first + i as u64,
                width: chunk.len() as u64,
            };
            out.push((id, chunk.concat()));
        }
        old_nodes = first;
        level += 1;
    }
    Ok(out)
}

/// An entry bundle's bytes: each entry prefixed by its length (big-endian u16).
///
/// Errors: [`TileError::EntryTooLarge`].
pub fn encode_bundle<E: AsRef<[u8]>>(entries: &[E]) -> Result<Vec<u8>, TileError> {
    let mut out = Vec::new();
    for e in entries {
        let e = e.as_ref();
        let len =
            u16::try_from(e.len()).map_err(|_| TileError::EntryTooLarge { bytes: e.len() })?;
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(e);
    }
    Ok(out)
}

/// Reads the entry bundle of level-0 tile `tile` from `source` and splits it into its
/// `tile.width` entries.
///
/// Errors: [`TileError::Unavailable`]; [`TileError::BadBundle`] for a truncated bundle,
/// trailing bytes or another number of entries.
pub fn read_bundle<S: TileSource + ?Sized>(
    source: &S,
    tile: TileId,
) -> Result<Vec<Vec<u8>>, TileError> {
    let path = tile.entries_path();
    let bytes = source.read(&path)?;
    let bad = || TileError::BadBundle {
        path: path.clone(),
        expected: tile.width,
    };
    let mut entries = Vec::new();
    let mut rest = bytes.as_slice();
    while let Some((len, tail)) = rest.split_first_chunk::<2>() {
        let len = usize::from(u16::from_be_bytes(*len));
        let (entry, tail) = tail.split_at_checked(len).ok_or_else(bad)?;
        entries.push(entry.to_vec());
        rest = tail;
    }
    if !rest.is_empty() || entries.len() as u64 != tile.width {
        return Err(bad());
    }
    Ok(entries)
}
