//! The incremental build's manifest: which files each job (a page with the files beside
//! it, a static file, the files for machines) wrote last time, under which key.
//!
//! A job's key is the sha256 of everything its output depends on: the referee version,
//! the templates' digest, the keyring's digest, the base URL and the docs navigation
//! (the [`GlobalKey`]), the job's name and its own inputs (a round's receipt digest, a
//! record's bytes, …). A job whose key did not change is not run and its files are
//! kept as they are; a job that runs writes only the files whose bytes changed.
//!
//! The manifest lives in the output directory as [`MANIFEST_FILE`], one line per job:
//! `<key> <job> <file> <file>…` (job names and site paths hold no spaces: they are built
//! from validated ids). It also says which files are ours, so `--clean` removes only
//! them, and a build refuses an output directory without a manifest that holds any file
//! ([`any_file`]) and refuses to write over a file the manifest does not list.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use receipts::fsutil::{IoError, is_temp_file_name};
use receipts::model::Sha256Hex;
use sha2::{Digest, Sha256};

use crate::error::SiteError;
use crate::paths::SitePath;
use crate::verdicts::VERDICTS_FILE;

/// The manifest's file name in the output directory.
pub const MANIFEST_FILE: &str = ".referee-site-manifest";

/// The manifest's first line.
const HEADER: &str = "referee-site-manifest 1";

/// Largest manifest read, bytes.
const MAX_MANIFEST_BYTES: usize = 1 << 30;

/// What every job's key starts with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GlobalKey(Sha256Hex);

impl GlobalKey {
    /// The key part shared by every job: referee's version, the templates' digest, the
    /// keyring's bytes, the base URL, the docs navigation (as JSON) and the verification
    /// instant given with `--at` (empty when each bundle's own seal time is used).
    pub fn new(
        templates: &Sha256Hex,
        keyring_json: &[u8],
        base_url: &str,
        docs_nav_json: &[u8],
        at: &str,
    ) -> Self {
        let mut h = KeyHasher::new(&Sha256Hex::from_bytes([0; 32]));
        h.part(env!("CARGO_PKG_VERSION").as_bytes());
        h.part(templates.as_str().as_bytes());
        h.part(Sha256Hex::digest(keyring_json).as_str().as_bytes());
        h.part(base_url.as_bytes());
        h.part(docs_nav_json);
        h.part(at.as_bytes());
        Self(h.finish())
    }

    /// A hasher for one job's key: the global key, then the job's parts.
    pub fn job(&self, name: &str) -> KeyHasher {
        let mut h = KeyHasher::new(&self.0);
        h.part(name.as_bytes());
        h
    }
}

/// sha256 over length-prefixed parts, so `("ab", "c")` and `("a", "bc")` differ.
pub struct KeyHasher(Sha256);

impl KeyHasher {
    fn new(seed: &Sha256Hex) -> Self {
        let mut h = Sha256::new();
        h.update(seed.as_str().as_bytes());
        Self(h)
    }

    /// Adds one part.
    pub fn part(&mut self, bytes: &[u8]) -> &mut Self {
        self.0.update((bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
        self
    }

    /// The key.
    pub fn finish(self) -> Sha256Hex {
        Sha256Hex::from_bytes(self.0.finalize().into())
    }
}

/// One job's line of the manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobRecord {
    /// The key it was built under.
    pub key: Sha256Hex,
    /// The files it wrote, relative to the site root.
    pub files: Vec<SitePath>,
}

/// The manifest: each job's key and files, by job name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    /// Jobs by name.
    pub jobs: BTreeMap<String, JobRecord>,
}

impl Manifest {
    /// Reads the manifest of `out`; `None` when there is none. A manifest that does not
    /// parse is `None` too (the build then refuses a non-empty directory, see
    /// [`any_file`]).
    ///
    /// Errors: [`SiteError::Io`] when it exists but cannot be read.
    pub fn load(out: &Path) -> Result<Option<Self>, SiteError> {
        let path = out.join(MANIFEST_FILE);
        let bytes = match receipts::fsutil::read_limited(&path, MAX_MANIFEST_BYTES) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(IoError::at("reading", &path)(source).into()),
        };
        Ok(std::str::from_utf8(&bytes).ok().and_then(Self::parse))
    }

    fn parse(text: &str) -> Option<Self> {
        let mut lines = text.lines();
        if lines.next()? != HEADER {
            return None;
        }
        let mut jobs = BTreeMap::new();
        for line in lines {
            let mut words = line.split(' ');
            let key: Sha256Hex = words.next()?.parse().ok()?;
            let name = words.next()?.to_owned();
            let files = words.map(SitePath::parse).collect::<Option<Vec<_>>>()?;
            jobs.insert(name, JobRecord { key, files });
        }
        Some(Self { jobs })
    }

    /// Writes the manifest to `w`: the header, then a line per job in name order (its
    /// key, its name and its files, space-separated). Streamed: at 1,000 rounds of the
    /// benchmark the manifest is ≈ 6.4 MB, never built in memory by a build.
    ///
    /// Errors: what `w` returns.
    pub fn write_to(&self, w: &mut dyn io::Write) -> io::Result<()> {
        writeln!(w, "{HEADER}")?;
        for (name, job) in &self.jobs {
            w.write_all(job.key.as_str().as_bytes())?;
            w.write_all(b" ")?;
            w.write_all(name.as_bytes())?;
            for f in &job.files {
                w.write_all(b" ")?;
                w.write_all(f.as_str().as_bytes())?;
            }
            w.write_all(b"\n")?;
        }
        Ok(())
    }

    /// The manifest's bytes ([`Manifest::write_to`]), in memory.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.jobs.len() * 160);
        // Writing to a `Vec` does not fail.
        let _ = self.write_to(&mut out);
        out
    }

    /// Every file the manifest lists.
    pub fn files(&self) -> impl Iterator<Item = &SitePath> {
        self.jobs.values().flat_map(|j| j.files.iter())
    }
}

/// The first file under `out` (sorted walk), the manifest, the verdict cache
/// ([`VERDICTS_FILE`]) and temp files a killed writer left aside: what
/// makes a directory without a manifest someone else's. `None` for an output directory
/// that does not exist or holds no such file. A directory with a manifest is not walked
/// (at 1,000 rounds that walk over 82,500 files was 38 % of an incremental build): the
/// manifest says which files are ours, and the build refuses to write a file it does not
/// list that is already there.
///
/// Errors: [`SiteError::Io`] when a directory cannot be listed.
pub fn any_file(out: &Path) -> Result<Option<PathBuf>, SiteError> {
    let mut stack = vec![out.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound && dir == out => return Ok(None),
            Err(source) => return Err(IoError::at("listing", &dir)(source).into()),
        };
        let mut entries: Vec<_> = entries
            .map(|e| e.map_err(|source| SiteError::from(IoError::at("listing", &dir)(source))))
            .collect::<Result<_, _>>()?;
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            let path = entry.path();
            let kind = entry
                .file_type()
                .map_err(|source| SiteError::from(IoError::at("listing", &path)(source)))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let ours = dir == out && (name == MANIFEST_FILE || name == VERDICTS_FILE);
            if kind.is_dir() {
                stack.push(path);
            } else if !(ours || is_temp_file_name(&name)) {
                return Ok(Some(path));
            }
        }
    }
    Ok(None)
}

/// Removes `files` of the site in `out` and then every directory they leave empty
/// (never `out` itself). A file already gone is not an error.
///
/// Errors: [`SiteError::Io`] naming the file or directory that could not be removed.
pub fn remove_files<'a>(
    out: &Path,
    files: impl IntoIterator<Item = &'a SitePath>,
) -> Result<usize, SiteError> {
    let mut removed = 0;
    let mut dirs = std::collections::BTreeSet::new();
    for f in files {
        let path = f.under(out);
        match std::fs::remove_file(&path) {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(source) => return Err(IoError::at("removing", &path)(source).into()),
        }
        let mut parent = path.parent();
        while let Some(p) = parent {
            if p == out || !p.starts_with(out) {
                break;
            }
            dirs.insert(p.to_path_buf());
            parent = p.parent();
        }
    }
    // Deepest first; a directory still holding something stays.
    for dir in dirs.iter().rev() {
        match std::fs::remove_dir(dir) {
            Ok(()) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::DirectoryNotEmpty
                ) => {}
            Err(source) => return Err(IoError::at("removing", dir)(source).into()),
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::SiteDir;

    #[test]
    fn manifest_round_trips_and_refuses_bad_lines() {
        let mut m = Manifest::default();
        m.jobs.insert(
            "round:demo:1".into(),
            JobRecord {
                key: Sha256Hex::digest(b"k"),
                files: vec![
                    SiteDir::round(&"demo".parse().unwrap(), 1).page(),
                    SitePath::parse("c/demo/r/1/entries.csv").unwrap(),
                ],
            },
        );
        let bytes = m.to_bytes();
        assert_eq!(
            Manifest::parse(std::str::from_utf8(&bytes).unwrap()),
            Some(m)
        );
        let key = Sha256Hex::digest(b"k");
        for bad in [
            String::new(),
            "referee-site-manifest 2\n".to_owned(),
            format!("{HEADER}\n{key} job ../../etc/passwd\n"),
            format!("{HEADER}\n{key} job /abs\n"),
            format!("{HEADER}\nnothex job a.html\n"),
        ] {
            assert_eq!(Manifest::parse(&bad), None, "{bad:?}");
        }
    }

    #[test]
    fn keys_separate_their_parts() {
        let g = GlobalKey::new(&Sha256Hex::digest(b"t"), b"[]", "", b"[]", "");
        let mut a = g.job("x");
        a.part(b"ab").part(b"c");
        let mut b = g.job("x");
        b.part(b"a").part(b"bc");
        assert_ne!(a.finish(), b.finish());
        let other = GlobalKey::new(&Sha256Hex::digest(b"t"), b"[1]", "", b"[]", "");
        assert_ne!(g.job("x").finish(), other.job("x").finish());
    }

    #[test]
    fn foreign_files_are_found_and_ours_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path();
        let page = SitePath::parse("c/demo/index.html").unwrap();
        std::fs::create_dir_all(out.join("c/demo")).unwrap();
        std::fs::write(page.under(out), "x").unwrap();
        std::fs::write(out.join(MANIFEST_FILE), "m").unwrap();
        let mut m = Manifest::default();
        m.jobs.insert(
            "campaign:demo".into(),
            JobRecord {
                key: Sha256Hex::digest(b"k"),
                files: vec![page.clone()],
            },
        );
        assert_eq!(any_file(out).unwrap(), Some(page.under(out)));
        std::fs::write(out.join("c/notes.txt"), "mine").unwrap();
        assert_eq!(any_file(out).unwrap(), Some(out.join("c/notes.txt")));
        let empty = tmp.path().join("empty");
        std::fs::create_dir_all(empty.join("a/b")).unwrap();
        std::fs::write(empty.join(MANIFEST_FILE), "m").unwrap();
        std::fs::write(empty.join(VERDICTS_FILE), "v").unwrap();
        std::fs::write(empty.join("a/.tmpAbC123"), "torn").unwrap();
        assert_eq!(any_file(&empty).unwrap(), None);
        assert_eq!(any_file(&tmp.path().join("missing")).unwrap(), None);
        assert_eq!(remove_files(out, m.files()).unwrap(), 1);
        assert!(!out.join("c/demo").exists());
        assert!(out.join("c/notes.txt").exists());
    }
}
