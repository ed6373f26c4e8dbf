//! The verdict cache: what the verifier said of each bundle that passed its own checks,
//! so a build verifies again only the bundles that changed (at 1,000 rounds verifying
//! every bundle took 52 s of a build that added one round).
//!
//! An entry's key ([`verdict_key`]) is the sha256 of the referee version (the verifier's
//! is the workspace's), the keyring's bytes, the instant the bundle is verified at and
//! the bundle's content digest ([`bundle_digest`]: every file of its directory, by
//! name, kind and bytes), so a changed file, an added or removed one, another keyring or
//! another `--at` misses and verifies again. Only a bundle's own checks are cached (a
//! report that passed them all): the checks across rounds run on every build, on every
//! bundle ([`verifier::archive::check_archive_links`]). A failed verdict is not cached.
//!
//! An entry also records the bundle's metadata stamp ([`bundle_stamp`]: every entry's
//! name, kind, device, inode, mode, length, mtime and ctime), so a build finds an
//! unchanged bundle without reading and hashing its files (at 1,000 rounds of the
//! benchmark, ≈ 300 MiB read on every build); a stamp that differs falls back to the
//! content digest.
//! What that trusts, and what it does not (content/site.md, Building again): every write,
//! rename or `touch` through the filesystem sets the ctime to the present and an
//! unprivileged process cannot set it back, so a bundle tampered with after an earlier
//! build passed it has another stamp and is hashed and verified again; an entry changed
//! within [`RACY_SECONDS`] of the build (a write in the same timestamp tick would leave
//! its stamp as it was) gives no stamp. Not caught: a change that keeps the ctime — the
//! clock set back by root, the block device written directly, a filesystem that does not
//! keep ctimes — by someone who could as well write the output directory; `--clean`
//! (or deleting the cache) checks every bundle by content again.
//!
//! The cache lives beside the manifest as [`VERDICTS_FILE`], one JSON object per line
//! after a header (in key order when written whole); a line that does not parse is a
//! miss. `--clean` starts without it. A build holds no line in memory: the previous cache's lines are found by
//! offset in its file, and stay there when they are found unchanged; this build's other
//! lines (new verdicts, changed stamps) go to a spill file as they are found. At the end
//! ([`Verdicts::append_to`]) a build that found every previous line unchanged appends its
//! other lines to the previous file (adding a round writes one line, not all of them
//! again); any other build writes the new cache in key order.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use receipts::fsutil::IoError;
use receipts::model::{Sha256Hex, Timestamp};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use verifier::{Check, CheckName, VerifyReport};

use crate::error::SiteError;

/// The verdict cache's file name in the output directory.
pub const VERDICTS_FILE: &str = ".referee-site-verdicts";

/// Its first line.
const HEADER: &str = "referee-site-verdicts 3";

/// Seconds before a build within which a changed entry gives its bundle no stamp
/// ([`bundle_stamp`]): file timestamps advance in ticks (a jiffy on Linux), so a write
/// right after the stamp was read could leave it as it was.
pub const RACY_SECONDS: u64 = 2;

/// Most bytes of a verdict cache read (a longer one is read up to there).
const MAX_VERDICTS_BYTES: u64 = 1 << 30;

/// The key of a bundle's verdict: sha256 over length-prefixed parts — the referee
/// version, sha256 of the keyring's bytes, the instant it is verified at (RFC 3339) and
/// its [`bundle_digest`].
pub fn verdict_key(keyring_json: &[u8], at: Timestamp, bundle: &Sha256Hex) -> Sha256Hex {
    let mut h = Sha256::new();
    for part in [
        b"referee-site-verdict".as_slice(),
        env!("CARGO_PKG_VERSION").as_bytes(),
        Sha256Hex::digest(keyring_json).as_str().as_bytes(),
        at.to_string().as_bytes(),
        bundle.as_str().as_bytes(),
    ] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    Sha256Hex::from_bytes(h.finalize().into())
}

/// The content digest of the bundle directory `dir`: sha256 over every entry under it,
/// depth first in name order (symlinks not followed), each as its `/`-separated relative
/// name, its kind (`f` file, `d` directory, `l` symlink with its target, `o` other), and
/// for a file its length and bytes. Any change of a byte, a name or a kind changes it.
///
/// Errors: the I/O error of a directory or file that cannot be read.
pub fn bundle_digest(dir: &Path) -> io::Result<Sha256Hex> {
    fn walk(h: &mut Sha256, root: &Path, dir: &Path) -> io::Result<()> {
        let mut entries: Vec<std::fs::DirEntry> =
            std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            let path = entry.path();
            let name = path.strip_prefix(root).unwrap_or(&path);
            let name = name.to_string_lossy();
            let kind = entry.file_type()?;
            let mut part = |bytes: &[u8]| {
                h.update((bytes.len() as u64).to_le_bytes());
                h.update(bytes);
            };
            part(name.as_bytes());
            if kind.is_dir() {
                part(b"d");
                walk(h, root, &path)?;
            } else if kind.is_file() {
                part(b"f");
                part(&std::fs::read(&path)?);
            } else if kind.is_symlink() {
                part(b"l");
                part(std::fs::read_link(&path)?.to_string_lossy().as_bytes());
            } else {
                part(b"o");
            }
        }
        Ok(())
    }
    let mut h = Sha256::new();
    walk(&mut h, dir, dir)?;
    Ok(Sha256Hex::from_bytes(h.finalize().into()))
}

/// The metadata stamp of the bundle directory `dir`: sha256 over every entry under it,
/// depth first in name order (symlinks not followed), each as its `/`-separated relative
/// name, its kind (`f`, `d`, `l` with its target, `o`), its device, inode and mode, its
/// length, and its mtime and ctime to the nanosecond — no file is read. `None` when an
/// entry's mtime or ctime is later than `not_after` (the build passes its start less
/// [`RACY_SECONDS`]): such a bundle is checked by [`bundle_digest`].
///
/// Errors: the I/O error of a directory or entry that cannot be listed or stat'ed.
pub fn bundle_stamp(dir: &Path, not_after: SystemTime) -> io::Result<Option<Sha256Hex>> {
    use std::os::unix::fs::MetadataExt;
    let limit = not_after
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(i64::MIN, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    fn walk(h: &mut Sha256, root: &Path, dir: &Path, limit: i64) -> io::Result<bool> {
        let mut entries: Vec<std::fs::DirEntry> =
            std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            let path = entry.path();
            let name = path.strip_prefix(root).unwrap_or(&path);
            let meta = entry.metadata()?;
            // Seconds compared: a later second may hold a later tick.
            if meta.mtime() >= limit || meta.ctime() >= limit {
                return Ok(false);
            }
            let mut part = |bytes: &[u8]| {
                h.update((bytes.len() as u64).to_le_bytes());
                h.update(bytes);
            };
            part(name.to_string_lossy().as_bytes());
            let kind = meta.file_type();
            part(if kind.is_dir() {
                b"d"
            } else if kind.is_file() {
                b"f"
            } else if kind.is_symlink() {
                b"l"
            } else {
                b"o"
            });
            for n in [meta.dev(), meta.ino(), u64::from(meta.mode()), meta.size()] {
                part(&n.to_le_bytes());
            }
            for (s, ns) in [
                (meta.mtime(), meta.mtime_nsec()),
                (meta.ctime(), meta.ctime_nsec()),
            ] {
                part(&s.to_le_bytes());
                part(&ns.to_le_bytes());
            }
            if kind.is_symlink() {
                part(std::fs::read_link(&path)?.to_string_lossy().as_bytes());
            } else if kind.is_dir() && !walk(h, root, &path, limit)? {
                return Ok(false);
            }
        }
        Ok(true)
    }
    let mut h = Sha256::new();
    // Kept apart from every content digest ([`bundle_digest`] has no such part).
    h.update(b"referee-bundle-stamp 1");
    Ok(walk(&mut h, dir, dir, limit)?.then(|| Sha256Hex::from_bytes(h.finalize().into())))
}

/// The instant [`bundle_stamp`] trusts entries up to, for a build starting at `now`:
/// [`RACY_SECONDS`] before it.
pub fn stamp_limit(now: SystemTime) -> SystemTime {
    now.checked_sub(Duration::from_secs(RACY_SECONDS))
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// One cached verdict: a bundle's own checks, every one passed or not applicable.
///
/// The checks are written compactly (≈ 2,200 checks a round of the benchmark, whose
/// targets were 147 KB a line written out in full, so that a cache of 10,000 rounds
/// passed [`MAX_VERDICTS_BYTES`] and every build verified the last 2,800 bundles
/// again): each check's name is an index into `names`, and its target is front-coded
/// against the previous check's target (the bytes it shares with it, then the rest).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Line {
    key: Sha256Hex,
    /// [`verdict_key`] over the bundle's [`bundle_stamp`] instead of its content digest,
    /// when it had one.
    stamp: Option<Sha256Hex>,
    statement_digest: Option<Sha256Hex>,
    predicate_type: Option<String>,
    signed_by: Vec<String>,
    /// Every check name the checks use, in order of first use.
    names: Vec<CheckName>,
    /// `(index into names, bytes shared with the previous target, the rest)` per check,
    /// in the report's order; both `None` for a check without a target.
    checks: Vec<(u16, Option<u32>, Option<String>)>,
    /// `(index into checks, predicate version)` of each check that is not applicable
    /// (every other passed).
    not_applicable: Vec<(u32, String)>,
}

impl Line {
    /// The line of `report` (which passed) under `key`, with the stamp key `stamp`;
    /// `None` past 65,536 distinct check names or 2^32 checks (no verifier writes that).
    fn of(key: Sha256Hex, stamp: Option<Sha256Hex>, report: &VerifyReport) -> Option<Self> {
        let mut names: Vec<CheckName> = Vec::new();
        let mut checks = Vec::with_capacity(report.checks.len());
        let mut not_applicable = Vec::new();
        let mut previous = "";
        for (i, check) in report.checks.iter().enumerate() {
            let name = match names.iter().position(|n| *n == check.name) {
                Some(at) => at,
                None => {
                    names.push(check.name);
                    names.len() - 1
                }
            };
            let target = check.target.as_deref().map(|target| {
                let shared = shared_prefix(previous, target);
                previous = target;
                (u32::try_from(shared), target[shared..].to_owned())
            });
            let (shared, rest) = match target {
                Some((shared, rest)) => (Some(shared.ok()?), Some(rest)),
                None => (None, None),
            };
            checks.push((u16::try_from(name).ok()?, shared, rest));
            if let Some(version) = check.not_applicable {
                not_applicable.push((u32::try_from(i).ok()?, version.to_owned()));
            }
        }
        Some(Self {
            key,
            stamp,
            statement_digest: report.statement_digest,
            predicate_type: report.predicate_type.clone(),
            signed_by: report.signed_by.clone(),
            names,
            checks,
            not_applicable,
        })
    }

    /// The checks, decoded; `None` when an index or a shared length does not fit (a
    /// line no build wrote) or a not-applicable version is not one a verifier uses
    /// ([`intern`]).
    fn decoded_checks(&self) -> Option<Vec<Check>> {
        let mut out = Vec::with_capacity(self.checks.len());
        let mut previous = String::new();
        for (name, shared, rest) in &self.checks {
            let target = match (shared, rest) {
                (Some(shared), Some(rest)) => {
                    let shared = usize::try_from(*shared).ok()?;
                    let mut target = previous.get(..shared)?.to_owned();
                    target.push_str(rest);
                    previous.clone_from(&target);
                    Some(target)
                }
                (None, None) => None,
                _ => return None,
            };
            out.push(Check {
                name: *self.names.get(usize::from(*name))?,
                target,
                passed: true,
                reason: None,
                not_applicable: None,
            });
        }
        for (at, version) in &self.not_applicable {
            let check = out.get_mut(usize::try_from(*at).ok()?)?;
            check.passed = false;
            check.not_applicable = Some(intern(version.clone())?);
        }
        Some(out)
    }
}

/// The length in bytes of the longest common prefix of `a` and `b` that ends on a
/// character boundary of both.
fn shared_prefix(a: &str, b: &str) -> usize {
    let mut n = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    while !b.is_char_boundary(n) {
        n -= 1;
    }
    n
}

/// The verdicts of a build: those of the previous build's cache, and those this build
/// found, written back by [`Verdicts::write_to`] for the bundles it saw. No line is held
/// in memory (≈ 42 KB each at the benchmark's size, 384 MB at 10,000 rounds): the
/// previous build's lines stay in its cache file and this build's go to a spill file as
/// they are found, each found again by its offset.
pub struct Verdicts {
    /// The previous build's lines, by key (parsed when looked up; a line looked up moves
    /// to `retained`, or to `new` when it changes, so no line is read twice from here).
    old: Mutex<Lines>,
    /// The previous build's lines this build found unchanged, by key: still in its file
    /// (`old`'s), at their offsets there.
    retained: Mutex<HashMap<Sha256Hex, (u64, usize)>>,
    /// Whether the previous build's file can be appended to ([`Verdicts::append_to`]):
    /// its header is this version's; with its length up to the end of its last complete
    /// line, bytes, and its number of lines after the header.
    appendable: Option<(u64, usize)>,
    /// The previous build's stamps ([`Line::stamp`]), each to its line's key.
    stamps: Mutex<HashMap<Sha256Hex, Sha256Hex>>,
    /// The lines of this build that the previous build's file does not hold as they
    /// are: new verdicts and hits whose stamp changed, by key, in a spill file.
    new: Mutex<Spill>,
    /// Lookups answered from the cache.
    hits: AtomicUsize,
}

/// Lines of a file, by key: each line's offset and length (without its `\n`).
#[derive(Default)]
struct Lines {
    /// The file; `None` for no lines.
    file: Option<File>,
    index: HashMap<Sha256Hex, (u64, usize)>,
}

impl Lines {
    /// The line under `key`; `None` when there is none or it cannot be read (a miss).
    fn read(&self, key: &Sha256Hex) -> Option<String> {
        self.read_at(*self.index.get(key)?)
    }

    /// The line at `(offset, length)` of the file; `None` when it cannot be read.
    fn read_at(&self, (offset, len): (u64, usize)) -> Option<String> {
        let mut bytes = vec![0; len];
        self.file.as_ref()?.read_exact_at(&mut bytes, offset).ok()?;
        String::from_utf8(bytes).ok()
    }
}

/// The spill file of this build's lines: an unnamed temp file (`O_TMPFILE`, gone when
/// the build ends) in the output directory, appended to.
struct Spill {
    /// Where the file is made when the first line is kept.
    dir: PathBuf,
    /// The file and its index.
    lines: Lines,
    /// Its length, bytes.
    len: u64,
    /// The first error making or writing it, reported by [`Verdicts::write_to`] (a line
    /// that could not be kept would be missing from the cache).
    error: Option<io::Error>,
}

impl Verdicts {
    /// No verdicts: the cache of a build without one (`--clean`, or no output directory
    /// yet); this build's lines spill into `out` (made when the first line is kept).
    pub fn empty(out: &Path) -> Self {
        Self {
            old: Mutex::default(),
            retained: Mutex::default(),
            appendable: None,
            stamps: Mutex::default(),
            new: Mutex::new(Spill {
                dir: out.to_owned(),
                lines: Lines::default(),
                len: 0,
                error: None,
            }),
            hits: AtomicUsize::new(0),
        }
    }

    /// The cache of the output directory `out`, indexed (its lines are read when looked
    /// up; only the first `MAX_VERDICTS_BYTES` are read); empty when there is none or
    /// its header is not this version's. This build's lines spill into `out`.
    ///
    /// Errors: [`SiteError::Io`] when it exists but cannot be read.
    pub fn load(out: &Path) -> Result<Self, SiteError> {
        let empty = Self::empty(out);
        let path = out.join(VERDICTS_FILE);
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(empty),
            Err(source) => return Err(IoError::at("reading", &path)(source).into()),
        };
        let at = IoError::at("reading", &path);
        let mut reader = BufReader::new(file.try_clone().map_err(at)?).take(MAX_VERDICTS_BYTES);
        let mut line = Vec::new();
        let mut offset = 0u64;
        let mut index = HashMap::new();
        let mut stamps = HashMap::new();
        // Lines read, and the length up to the end of the last complete one.
        let (mut lines, mut complete) = (0usize, 0u64);
        loop {
            line.clear();
            let at = IoError::at("reading", &path);
            let n = reader.read_until(b'\n', &mut line).map_err(at)?;
            if n == 0 {
                break;
            }
            let start = offset;
            offset += n as u64;
            // A line cut short (a build that stopped while appending) is not read.
            let Some(text) = line.strip_suffix(b"\n") else {
                break;
            };
            complete = offset;
            lines += 1;
            if start == 0 {
                if text != HEADER.as_bytes() {
                    return Ok(empty);
                }
                continue;
            }
            // The key leads each line, then the stamp:
            // `{"key":"<64 hex>","stamp":"<64 hex>"|null,…`.
            let field = |range: std::ops::Range<usize>| {
                text.get(range)
                    .and_then(|b| std::str::from_utf8(b).ok())
                    .and_then(|s| s.parse::<Sha256Hex>().ok())
            };
            let Some(key) = field(8..72) else {
                continue;
            };
            if text.get(72..83) == Some(br#"","stamp":""#.as_slice())
                && let Some(stamp) = field(83..147)
            {
                stamps.insert(stamp, key);
            }
            index.insert(key, (start, text.len()));
        }
        // Its header whole (a file cut inside it is not appended to), nothing past the
        // limit.
        let appendable =
            (lines > 0 && complete < MAX_VERDICTS_BYTES).then_some((complete, lines - 1));
        Ok(Self {
            old: Mutex::new(Lines {
                file: Some(file),
                index,
            }),
            appendable,
            stamps: Mutex::new(stamps),
            ..empty
        })
    }

    /// The cached report of the bundle `dir` whose stamp key ([`verdict_key`] over its
    /// [`bundle_stamp`]) is `stamp`: [`Verdicts::get`] under the key of the line that
    /// recorded that stamp, with that key (the one [`Verdicts::report`] reads it back
    /// under); `None` when no line did.
    pub fn get_by_stamp(&self, stamp: &Sha256Hex, dir: &Path) -> Option<(Sha256Hex, VerifyReport)> {
        let key = *self.stamps.lock().ok()?.get(stamp)?;
        let report = self.get(&key, Some(stamp), dir)?;
        Some((key, report))
    }

    /// The cached report of the bundle `dir` under `key`, with `bundle` set to `dir`;
    /// `None` on a miss (or a line that does not parse). A hit is kept for
    /// [`Verdicts::write_to`], recording `stamp` (the bundle's stamp key now, when it
    /// has one) in place of the stamp the line held.
    pub fn get(
        &self,
        key: &Sha256Hex,
        stamp: Option<&Sha256Hex>,
        dir: &Path,
    ) -> Option<VerifyReport> {
        // The previous build's line, or (looked up before: two bundles with the same
        // content and instant) the one this build kept.
        let (text, place) = {
            let mut old = self.old.lock().ok()?;
            match old.index.remove(key) {
                Some(at) => (old.read_at(at)?, Some(at)),
                None => match self.retained.lock().ok()?.get(key).copied() {
                    Some(at) => (old.read_at(at)?, Some(at)),
                    None => (self.new.lock().ok()?.lines.read(key)?, None),
                },
            }
        };
        let (mut line, report) = parse_line(&text, key, dir)?;
        if line.stamp.as_ref() != stamp {
            line.stamp = stamp.cloned();
            self.keep(*key, &serde_json::to_string(&line).ok()?);
        } else if let Some(at) = place {
            // Unchanged: it stays where it is in the previous build's file.
            self.retained.lock().ok()?.insert(*key, at);
        }
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(report)
    }

    /// The report this build keeps under `key` (found by [`Verdicts::get`] or recorded
    /// by [`Verdicts::put`]), with `bundle` set to `dir`: how a round's own checks are
    /// read back when its pages are rendered, long after its verification. Not a
    /// lookup: nothing moves, no hit is counted. `None` when no line is kept there.
    pub fn report(&self, key: &Sha256Hex, dir: &Path) -> Option<VerifyReport> {
        let retained = self.retained.lock().ok()?.get(key).copied();
        let text = match retained {
            Some(at) => self.old.lock().ok()?.read_at(at)?,
            None => self.new.lock().ok()?.lines.read(key)?,
        };
        parse_line(&text, key, dir).map(|(_, report)| report)
    }

    /// Records `report` (a bundle's own checks) under `key`, with the bundle's stamp key
    /// `stamp` when it has one, when it passed; whether it did (a failed report is not
    /// cached, nor one whose line cannot be written). A line the spill file could not
    /// take is reported by [`Verdicts::kept`] and fails [`Verdicts::write_to`].
    pub fn put(&self, key: Sha256Hex, stamp: Option<Sha256Hex>, report: &VerifyReport) -> bool {
        if !report.passed() {
            return false;
        }
        let Some(line) = Line::of(key, stamp, report) else {
            return false;
        };
        let Ok(text) = serde_json::to_string(&line) else {
            return false;
        };
        self.keep(key, &text);
        true
    }

    /// Whether every line this build kept reached its spill file.
    ///
    /// Errors: the error that kept a line from it.
    pub fn kept(&self) -> io::Result<()> {
        self.spill().map(drop)
    }

    /// How many lookups the cache answered.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::Relaxed)
    }

    /// Appends `line` to the spill file (made on the first line) under `key`, replacing
    /// the line kept there before; an error is kept for [`Verdicts::write_to`].
    fn keep(&self, key: Sha256Hex, line: &str) {
        if let Ok(mut retained) = self.retained.lock() {
            retained.remove(&key);
        }
        let Ok(mut spill) = self.new.lock() else {
            return;
        };
        let spill = &mut *spill;
        if spill.error.is_some() {
            return;
        }
        let written = match &spill.lines.file {
            Some(file) => file.write_all_at(line.as_bytes(), spill.len),
            None => std::fs::create_dir_all(&spill.dir)
                .and_then(|()| tempfile::tempfile_in(&spill.dir))
                .and_then(|file| {
                    file.write_all_at(line.as_bytes(), 0)?;
                    spill.lines.file = Some(file);
                    Ok(())
                }),
        };
        match written {
            Ok(()) => {
                spill.lines.index.insert(key, (spill.len, line.len()));
                spill.len += line.len() as u64;
            }
            Err(e) => spill.error = Some(e),
        }
    }

    /// Writes the cache to `w`: the header, then this build's verdicts by key, a line
    /// each, copied from the previous build's file (the lines found unchanged) and from
    /// the spill file (streamed: one line in memory at a time).
    ///
    /// Errors: what `w` returns, the error that kept a line from the spill file, or one
    /// reading a line back.
    pub fn write_to(&self, w: &mut dyn io::Write) -> io::Result<()> {
        let spill = self.spill()?;
        let old = self.old.lock().unwrap_or_else(|e| e.into_inner());
        let retained = self.retained.lock().unwrap_or_else(|e| e.into_inner());
        let mut lines: Vec<(&Sha256Hex, &Lines, (u64, usize))> = (retained.iter())
            .map(|(key, at)| (key, &*old, *at))
            .chain((spill.lines.index.iter()).map(|(key, at)| (key, &spill.lines, *at)))
            .collect();
        lines.sort_unstable_by_key(|(key, _, _)| *key);
        writeln!(w, "{HEADER}")?;
        copy_lines(lines.into_iter().map(|(_, from, at)| (from, at)), w)
    }

    /// Appends this build's new lines (new verdicts, changed stamps) to the previous
    /// build's cache file `path`, by key, and syncs it, when that file can be appended
    /// to, is still the file its lines were read from, and the lines no lookup of this
    /// build needs (those of bundles no longer there or changed, those a new line
    /// replaces: a later line of a key wins when the cache is read) would be at most a
    /// quarter of those it does: a build that added rounds writes their verdicts, not
    /// every verdict again (a line cut short by a crash is not read, and is written over
    /// next time). Returns whether it appended (or had nothing to add); when not, the
    /// caller writes the whole cache ([`Verdicts::write_to`]) in its place, which holds
    /// only this build's lines.
    ///
    /// Errors: the error that kept a line from the spill file, or what opening, writing
    /// or syncing `path` returns.
    pub fn append_to(&self, path: &Path) -> io::Result<bool> {
        let Some((complete, lines)) = self.appendable else {
            return Ok(false);
        };
        let spill = self.spill()?;
        let added = spill.lines.index.len();
        let live = self.retained.lock().map_or(0, |r| r.len()) + added;
        let unneeded = (lines + added).saturating_sub(live);
        if unneeded * 4 > live {
            return Ok(false);
        }
        if spill.lines.index.is_empty() {
            return Ok(true);
        }
        let mut lines: Vec<(&Sha256Hex, (u64, usize))> = (spill.lines.index.iter())
            .map(|(key, at)| (key, *at))
            .collect();
        lines.sort_unstable_by_key(|(key, _)| *key);
        let file = std::fs::OpenOptions::new().write(true).open(path)?;
        // The file the previous lines were read from, not one put in its place since.
        let same = {
            use std::os::unix::fs::MetadataExt;
            let old = self.old.lock().unwrap_or_else(|e| e.into_inner());
            let (now, then) = (file.metadata()?, old.file.as_ref().map(File::metadata));
            matches!(then, Some(Ok(m)) if (m.dev(), m.ino()) == (now.dev(), now.ino()))
        };
        if !same {
            return Ok(false);
        }
        file.set_len(complete)?;
        io::Seek::seek(&mut &file, io::SeekFrom::Start(complete))?;
        let mut w = io::BufWriter::new(&file);
        copy_lines(lines.into_iter().map(|(_, at)| (&spill.lines, at)), &mut w)?;
        io::Write::flush(&mut w)?;
        drop(w);
        file.sync_data()?;
        Ok(true)
    }

    /// The spill file, or the error that kept a line from it.
    fn spill(&self) -> io::Result<std::sync::MutexGuard<'_, Spill>> {
        let spill = self.new.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = &spill.error {
            return Err(io::Error::new(
                e.kind(),
                format!(
                    "keeping a verdict in a temp file in {}: {e}",
                    spill.dir.display()
                ),
            ));
        }
        Ok(spill)
    }

    /// The cache's bytes ([`Verdicts::write_to`]), in memory.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        // Writing to a `Vec` does not fail.
        let _ = self.write_to(&mut out);
        out
    }
}

/// Copies the lines at `(offset, length)` of their files to `w`, each with its `\n`.
///
/// Errors: what reading a line or `w` returns.
fn copy_lines<'a>(
    lines: impl Iterator<Item = (&'a Lines, (u64, usize))>,
    w: &mut dyn io::Write,
) -> io::Result<()> {
    let mut bytes = Vec::new();
    for (from, (offset, len)) in lines {
        bytes.resize(len, 0);
        if let Some(file) = &from.file {
            file.read_exact_at(&mut bytes, offset)?;
        }
        w.write_all(&bytes)?;
        w.write_all(b"\n")?;
    }
    Ok(())
}

impl Default for Verdicts {
    /// No verdicts, spilling into the system's temp directory ([`Verdicts::empty`]).
    fn default() -> Self {
        Self::empty(&std::env::temp_dir())
    }
}

/// The line `text` kept under `key` and its report, with `bundle` set to `dir`; `None`
/// when it does not parse, holds another key, names a check no verifier wrote, or did
/// not pass.
fn parse_line(text: &str, key: &Sha256Hex, dir: &Path) -> Option<(Line, VerifyReport)> {
    let line: Line = serde_json::from_str(text).ok()?;
    if &line.key != key {
        return None;
    }
    let checks = line.decoded_checks()?;
    let report = VerifyReport {
        bundle: dir.to_owned(),
        checks,
        statement_digest: line.statement_digest,
        predicate_type: line.predicate_type.clone(),
        signed_by: line.signed_by.clone(),
    };
    report.passed().then_some((line, report))
}

/// `version` as the `&'static str` a [`Check`] holds: the same value the verifier used
/// (a predicate version name, a reason like "no raw log-probabilities"), allocated once
/// per distinct value; `None` past 64 distinct values (a cache line no verifier wrote).
fn intern(version: String) -> Option<&'static str> {
    static SEEN: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut seen = SEEN.lock().ok()?;
    if let Some(found) = seen.iter().find(|s| **s == version) {
        return Some(found);
    }
    if seen.len() >= 64 {
        return None;
    }
    let leaked: &'static str = Box::leak(version.into_boxed_str());
    seen.push(leaked);
    Some(leaked)
}

#[cfg(test)]
mod tests {
    use super::*;
    use verifier::CheckName;

    fn passed_report(dir: &Path) -> VerifyReport {
        let mut report = VerifyReport {
            bundle: dir.to_owned(),
            checks: Vec::new(),
            statement_digest: Some(Sha256Hex::digest(b"statement")),
            predicate_type: Some("https://referee.dev/predicates/round/v3".to_owned()),
            signed_by: vec!["k1".to_owned()],
        };
        report.pass(CheckName::EnvelopeParse, None);
        report.pass(CheckName::Subject, Some("probes/a.json".to_owned()));
        report.not_applicable(CheckName::HostSteal, None, "v1");
        report
    }

    #[test]
    fn a_passed_verdict_reads_back_and_a_failed_one_is_not_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("b");
        let report = passed_report(&dir);
        let key = Sha256Hex::digest(b"k");
        let cache = Verdicts::default();
        assert!(cache.put(key, None, &report));
        let mut failed = passed_report(&dir);
        failed.fail(
            CheckName::File,
            Some("x".to_owned()),
            verifier::FailureReason::NotRun {
                blocked_by: CheckName::Subject,
            },
        );
        assert!(!cache.put(Sha256Hex::digest(b"f"), None, &failed));
        assert!(cache.kept().is_ok());
        std::fs::write(tmp.path().join(VERDICTS_FILE), cache.to_bytes()).unwrap();

        let read = Verdicts::load(tmp.path()).unwrap();
        assert_eq!(read.old.lock().unwrap().index.len(), 1);
        assert_eq!(read.get(&key, None, &dir), Some(report));
        assert_eq!(read.get(&Sha256Hex::digest(b"f"), None, &dir), None);
        assert_eq!(read.get(&Sha256Hex::digest(b"other"), None, &dir), None);
        // Only what this build looked up (or found) is written back.
        assert_eq!(read.to_bytes(), cache.to_bytes());
        assert_eq!(
            Verdicts::default().to_bytes(),
            format!("{HEADER}\n").into_bytes()
        );

        std::fs::write(tmp.path().join(VERDICTS_FILE), "referee-site-verdicts 0\n").unwrap();
        assert!(
            Verdicts::load(tmp.path())
                .unwrap()
                .old
                .lock()
                .unwrap()
                .index
                .is_empty()
        );
    }

    /// Targets front-coded against the previous one (sharing all, some or none of it,
    /// across multi-byte characters and checks without a target) read back exactly, and
    /// the line is far shorter than the targets written out.
    #[test]
    fn front_coded_checks_read_back_exactly() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("b");
        let mut report = passed_report(&dir);
        for probe in 0..40 {
            for name in [CheckName::ProbeThroughput, CheckName::ProbeVerdict] {
                let target = format!("probes/baseline-pass-1.json runs[0].probes[{probe}]");
                report.pass(name, Some(target));
            }
        }
        report.pass(CheckName::Timeline, None);
        for target in ["logs/é.log", "logs/è.log", "logs/è.log2", "", "logs/è", "z"] {
            report.pass(CheckName::Subject, Some(target.to_owned()));
        }
        report.not_applicable(CheckName::HostSteal, Some("logs/è".to_owned()), "v2");
        let key = Sha256Hex::digest(b"k");
        let line = Line::of(key, None, &report).unwrap();
        assert_eq!(line.names.len(), 6);
        assert_eq!(
            &line.checks[3..7],
            [
                // "probes/" shared with the subject before.
                (
                    3,
                    Some(7),
                    Some("baseline-pass-1.json runs[0].probes[0]".into())
                ),
                (4, Some(45), Some(String::new())),
                (3, Some(43), Some("1]".into())),
                (4, Some(45), Some(String::new())),
            ]
        );
        // `é` and `è` share their first byte, not a character.
        assert_eq!(line.checks[84], (1, Some(0), Some("logs/é.log".into())));
        assert_eq!(line.checks[85], (1, Some(5), Some("è.log".into())));
        assert_eq!(line.not_applicable, [(2, "v1".into()), (90, "v2".into())]);

        let cache = Verdicts::default();
        cache.put(key, None, &report);
        std::fs::write(tmp.path().join(VERDICTS_FILE), cache.to_bytes()).unwrap();
        let written = cache.to_bytes().len();
        let spelled_out: usize = (report.checks.iter())
            .filter_map(|c| c.target.as_ref())
            .map(String::len)
            .sum();
        assert!(written < spelled_out / 2, "{written} vs {spelled_out}");
        let read = Verdicts::load(tmp.path()).unwrap();
        assert_eq!(read.get(&key, None, &dir), Some(report));
    }

    /// A line whose shared length falls outside the previous target or inside one of
    /// its characters, or whose name index is out of range, is a miss.
    #[test]
    fn a_line_that_does_not_decode_is_a_miss() {
        let dir = Path::new("b");
        let key = Sha256Hex::digest(b"k");
        let report = passed_report(dir);
        let line = Line::of(key, None, &report).unwrap();
        let text = serde_json::to_string(&line).unwrap();
        assert!(parse_line(&text, &key, dir).is_some());
        for bad in [
            (0, Some(99), Some("x".to_owned())),
            (0, Some(1), None),
            (9, None, None),
        ] {
            let mut line = Line::of(key, None, &report).unwrap();
            line.checks[2] = bad.clone();
            let text = serde_json::to_string(&line).unwrap();
            assert!(parse_line(&text, &key, dir).is_none(), "{bad:?}");
        }
        let mut report = passed_report(dir);
        report.pass(CheckName::Subject, Some("é".to_owned()));
        report.pass(CheckName::Subject, Some("éa".to_owned()));
        let mut line = Line::of(key, None, &report).unwrap();
        assert_eq!(line.checks[4], (1, Some(2), Some("a".to_owned())));
        line.checks[4] = (1, Some(1), Some("x".to_owned()));
        let text = serde_json::to_string(&line).unwrap();
        assert!(parse_line(&text, &key, dir).is_none(), "inside `é`");
    }

    #[test]
    fn a_hit_moves_its_line_and_a_second_lookup_still_hits() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("b");
        let report = passed_report(&dir);
        let (key, other) = (Sha256Hex::digest(b"k"), Sha256Hex::digest(b"o"));
        let cache = Verdicts::default();
        cache.put(key, None, &report);
        cache.put(other, None, &report);
        std::fs::write(tmp.path().join(VERDICTS_FILE), cache.to_bytes()).unwrap();

        let read = Verdicts::load(tmp.path()).unwrap();
        assert_eq!(read.get(&key, None, &dir), Some(report.clone()));
        // Unchanged, the line stays in the previous build's file: nothing is spilled.
        assert_eq!(read.old.lock().unwrap().index.len(), 1);
        assert_eq!(read.retained.lock().unwrap().len(), 1);
        assert!(read.new.lock().unwrap().lines.index.is_empty());
        assert_eq!(read.get(&key, None, &dir), Some(report.clone()));
        assert_eq!(read.report(&key, &dir), Some(report));
        assert_eq!(read.hits(), 2);
        // Only the line looked up is written back, after the header: the other line
        // was not found, so the previous file is not appended to.
        assert!(!read.append_to(&tmp.path().join(VERDICTS_FILE)).unwrap());
        let bytes = String::from_utf8(read.to_bytes()).unwrap();
        assert_eq!(bytes.lines().count(), 2);
        assert!(bytes.lines().nth(1).unwrap().contains(key.as_str()));
    }

    #[test]
    fn a_build_that_found_every_line_appends_its_new_ones() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(VERDICTS_FILE);
        let dir = tmp.path().join("b");
        let report = passed_report(&dir);
        let [a, b, c] = [b"a", b"b", b"c"].map(|k| Sha256Hex::digest(k));
        let first = Verdicts::default();
        first.put(a, None, &report);
        first.put(b, None, &report);
        // A line cut short by a build that stopped while appending: not read.
        let mut bytes = first.to_bytes();
        let whole = bytes.len();
        bytes.extend_from_slice(br#"{"key":"cut"#);
        std::fs::write(&path, &bytes).unwrap();

        let read = Verdicts::load(tmp.path()).unwrap();
        assert_eq!(read.appendable, Some((whole as u64, 2)));
        for key in [&a, &b] {
            assert_eq!(read.get(key, None, &dir), Some(report.clone()));
        }
        read.put(c, None, &report);
        assert!(read.append_to(&path).unwrap());
        // The previous lines as they were, the cut one written over, the new one after.
        let mut line = Verdicts::default();
        line.put(c, None, &report);
        let added = line.to_bytes().split_off(HEADER.len() + 1);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            [&bytes[..whole], &added].concat()
        );
        assert_eq!(read.report(&c, &dir), Some(report.clone()));
        line = Verdicts::default();
        for key in [&a, &b, &c] {
            line.put(*key, None, &report);
        }
        // Read again: the same verdicts as a cache written whole, in key order.
        let again = Verdicts::load(tmp.path()).unwrap();
        assert_eq!(again.appendable, Some(((whole + added.len()) as u64, 3)));
        for key in [&a, &b, &c] {
            assert_eq!(again.get(key, None, &dir), Some(report.clone()));
        }
        assert_eq!(again.to_bytes(), line.to_bytes());
        // Nothing new: nothing written.
        let before = std::fs::metadata(&path).unwrap().modified().unwrap();
        assert!(again.append_to(&path).unwrap());
        assert_eq!(
            std::fs::metadata(&path).unwrap().modified().unwrap(),
            before
        );

        // One stamp changed of three lines: the replaced line would be a third of those
        // needed, more than a quarter, so the cache is written whole.
        let restamped = Verdicts::load(tmp.path()).unwrap();
        restamped.get(&a, Some(&Sha256Hex::digest(b"stamp")), &dir);
        for key in [&b, &c] {
            restamped.get(key, None, &dir);
        }
        assert!(!restamped.append_to(&path).unwrap());

        // A file put in the previous one's place is not appended to.
        let moved = Verdicts::load(tmp.path()).unwrap();
        for key in [&a, &b, &c] {
            moved.get(key, None, &dir);
        }
        moved.put(Sha256Hex::digest(b"d"), None, &report);
        std::fs::rename(&path, tmp.path().join("old")).unwrap();
        std::fs::copy(tmp.path().join("old"), &path).unwrap();
        assert!(!moved.append_to(&path).unwrap());
    }

    #[test]
    fn a_line_that_cannot_be_spilled_fails_the_write() {
        let tmp = tempfile::tempdir().unwrap();
        // The spill file's directory is a file: no temp file can be made in it.
        let blocked = tmp.path().join("out");
        std::fs::write(&blocked, "").unwrap();
        let report = passed_report(&blocked);
        let key = Sha256Hex::digest(b"k");
        let cache = Verdicts::empty(&blocked);
        assert!(cache.put(key, None, &report));
        assert_eq!(cache.report(&key, &blocked), None);
        let expected = format!(
            "keeping a verdict in a temp file in {}: File exists (os error 17)",
            blocked.display()
        );
        assert_eq!(cache.kept().unwrap_err().to_string(), expected);
        let error = cache.write_to(&mut Vec::new()).unwrap_err();
        assert_eq!(error.to_string(), expected);
    }

    #[test]
    fn a_stamp_finds_its_verdict_and_a_new_stamp_replaces_it() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("b");
        let report = passed_report(&dir);
        let (key, stamp, later) = (
            Sha256Hex::digest(b"k"),
            Sha256Hex::digest(b"s"),
            Sha256Hex::digest(b"t"),
        );
        let cache = Verdicts::default();
        cache.put(key, Some(stamp), &report);
        std::fs::write(tmp.path().join(VERDICTS_FILE), cache.to_bytes()).unwrap();

        let read = Verdicts::load(tmp.path()).unwrap();
        assert_eq!(
            read.stamps.lock().unwrap().get(&stamp),
            Some(&key),
            "the stamp is read from its fixed place in the line"
        );
        assert_eq!(read.get_by_stamp(&stamp, &dir), Some((key, report.clone())));
        assert_eq!(read.report(&key, &dir), Some(report.clone()));
        assert_eq!(read.hits(), 1, "reading a kept report back is not a hit");
        assert_eq!(read.get_by_stamp(&later, &dir), None);
        assert_eq!(
            read.to_bytes(),
            cache.to_bytes(),
            "the line is kept as it was"
        );

        // Found by its content key under another stamp: the line records the new one.
        let read = Verdicts::load(tmp.path()).unwrap();
        assert_eq!(read.get(&key, Some(&later), &dir), Some(report.clone()));
        std::fs::write(tmp.path().join(VERDICTS_FILE), read.to_bytes()).unwrap();
        let again = Verdicts::load(tmp.path()).unwrap();
        assert_eq!(again.get_by_stamp(&stamp, &dir), None);
        assert_eq!(again.get_by_stamp(&later, &dir), Some((key, report)));
        assert_eq!(again.hits(), 1);
    }

    #[test]
    fn the_stamp_sees_a_rewrite_that_keeps_length_and_mtime() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::create_dir_all(dir.join("probes")).unwrap();
        std::fs::write(dir.join("probes/a.json"), "[1]").unwrap();
        let later = SystemTime::now() + Duration::from_secs(3600);
        let first = bundle_stamp(dir, later).unwrap().expect("a stamp");
        assert_eq!(bundle_stamp(dir, later).unwrap(), Some(first));
        // Changed after the limit (within the racy window): no stamp.
        assert_eq!(
            bundle_stamp(dir, stamp_limit(SystemTime::now())).unwrap(),
            None
        );
        assert_ne!(Some(first), bundle_digest(dir).ok());

        let path = dir.join("probes/a.json");
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        // Past the timestamp tick, so the ctime of the rewrite differs.
        std::thread::sleep(Duration::from_millis(50));
        std::fs::write(&path, "[2]").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), mtime);
        let rewritten = bundle_stamp(dir, later).unwrap().expect("a stamp");
        assert_ne!(rewritten, first, "same length and mtime, another ctime");
        std::fs::create_dir(dir.join("empty")).unwrap();
        assert_ne!(bundle_stamp(dir, later).unwrap(), Some(rewritten));
        assert!(bundle_stamp(&dir.join("missing"), later).is_err());
    }

    #[test]
    fn the_key_changes_with_every_part() {
        let t: Timestamp = "2026-12-02T00:00:00Z".parse().unwrap();
        let u: Timestamp = "2026-12-02T00:00:01Z".parse().unwrap();
        let b = Sha256Hex::digest(b"bundle");
        let base = verdict_key(b"[]", t, &b);
        assert_ne!(base, verdict_key(b"[1]", t, &b));
        assert_ne!(base, verdict_key(b"[]", u, &b));
        assert_ne!(base, verdict_key(b"[]", t, &Sha256Hex::digest(b"other")));
        assert_eq!(base, verdict_key(b"[]", t, &b));
    }

    #[test]
    fn the_bundle_digest_sees_every_byte_name_and_kind() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::create_dir_all(dir.join("probes")).unwrap();
        std::fs::write(dir.join("receipt.dsse.json"), "{}").unwrap();
        std::fs::write(dir.join("probes/a.json"), "[1]").unwrap();
        let first = bundle_digest(dir).unwrap();
        assert_eq!(bundle_digest(dir).unwrap(), first);
        std::fs::write(dir.join("probes/a.json"), "[2]").unwrap();
        let second = bundle_digest(dir).unwrap();
        assert_ne!(second, first);
        std::fs::rename(dir.join("probes/a.json"), dir.join("probes/b.json")).unwrap();
        let third = bundle_digest(dir).unwrap();
        assert_ne!(third, second);
        std::fs::create_dir(dir.join("empty")).unwrap();
        assert_ne!(bundle_digest(dir).unwrap(), third);
        assert!(bundle_digest(&dir.join("missing")).is_err());
    }
}
