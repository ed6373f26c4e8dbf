//! The incremental build's manifest: which files each job (a page with the files beside
//! it, a static file, the files for machines) wrote last time, under which key.
//!
//! A job's key is the sha256 of everything its output depends on: the referee version,
//! the templates' digest, the keyring's digest, the base URL and the docs navigation
//! (the [`GlobalKey`]), the job's name and its own inputs (a round's receipt digest, a
//! record's bytes, …). A job whose key did not change is not run and its files are
//! kept as they are; a job that runs writes only the files whose bytes changed.
//!
//! The manifest lives in the output directory, one line per job:
//! `<key> <job> <file> <file>…` (job names and site paths hold no spaces: they are built
//! from validated ids), split by [`Segment`]: [`MANIFEST_FILE`] holds the lines of the
//! jobs of [`Segment::Site`] and one line per other segment,
//! `<key> @<segment> <jobs> <HTML pages> <files>` (the segment's key, how many jobs it
//! has and what they wrote),
//! and each other segment's job lines are in `.referee-site-manifest.d/<segment>`
//! ([`SEGMENTS_DIR`]). A build reads the file of a segment only when that segment's key
//! changed, so adding one round reads and writes the lines of that round's segments, not
//! those of the whole archive. The manifest also says which files are ours, so `--clean`
//! removes only them, and a build refuses an output directory without a manifest that
//! holds any file ([`any_file`]) and refuses to write over a file the manifest does not
//! list. A manifest written before segments (`referee-site-manifest 1`, every job in one
//! file) is still read.

use std::collections::BTreeMap;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};

use receipts::fsutil::{IoError, is_temp_file_name};
use receipts::model::Sha256Hex;
use rustc_hash::FxHashMap;
use sha2::{Digest, Sha256};

use crate::error::SiteError;
use crate::paths::SitePath;
use crate::segment::Segment;
use crate::verdicts::VERDICTS_FILE;

/// The manifest's file name in the output directory.
pub const MANIFEST_FILE: &str = ".referee-site-manifest";

/// The manifest's first line.
const HEADER: &str = "referee-site-manifest 2";

/// The first line of a manifest written before segments: every job's line in one file.
const HEADER_V1: &str = "referee-site-manifest 1";

/// The directory of the segments' files, beside [`MANIFEST_FILE`].
pub const SEGMENTS_DIR: &str = ".referee-site-manifest.d";

/// A segment file's first line.
const SEGMENT_HEADER: &str = "referee-site-manifest-segment 1";

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

/// The previous build's manifest as read: the job lines of [`MANIFEST_FILE`] and of the
/// segment files loaded ([`Manifest::load_segments`]) in one text, checked once, where
/// each job's line lies in it, and the main file's segment lines. Nothing is copied out
/// of the text on load: at 2,000 rounds of the benchmark the whole manifest lists ≈ 34,000
/// jobs and 165,000 files, and a build that adds one round runs ≈ 30 of the jobs
/// (parsing every path into a `SitePath` of its own, then hashing them all again into a
/// set, was a third of such a build).
#[derive(Debug, Default)]
pub struct Manifest {
    text: String,
    /// In name order, so that a job is found by binary search.
    lines: Vec<Line>,
    /// The main file's segment lines.
    segments: BTreeMap<Segment, SegmentRecord>,
}

/// One segment's line of the main manifest: the key its jobs were listed under, how many
/// jobs it has and how many HTML pages and files in all they wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentRecord {
    /// The segment's key (`site::build`).
    pub key: Sha256Hex,
    /// Its jobs.
    pub jobs: usize,
    /// HTML pages its jobs wrote.
    pub html: usize,
    /// Files its jobs wrote, HTML pages included.
    pub files: usize,
}

/// Where one job's line lies in [`Manifest::text`].
#[derive(Debug)]
struct Line {
    name: Range<usize>,
    key: Sha256Hex,
    /// The files, space-separated, each a valid [`SitePath`] (checked on load).
    files: Range<usize>,
}

/// One job's line of the previous manifest: the key it was built under and the files it
/// wrote.
#[derive(Clone, Copy, Debug)]
pub struct PreviousJob<'m> {
    /// Its index among the manifest's jobs, in name order.
    pub index: usize,
    /// The key it was built under.
    pub key: &'m Sha256Hex,
    files: &'m str,
}

impl<'m> PreviousJob<'m> {
    /// The files it wrote, relative to the site root (each a valid [`SitePath`]).
    pub fn files(&self) -> impl Iterator<Item = &'m str> + use<'m> {
        self.files.split(' ').filter(|f| !f.is_empty())
    }
}

/// One job's line of the manifest a build writes.
#[derive(Clone, Debug)]
pub enum JobRecord<'m> {
    /// Not run: its line of the previous manifest, written again as it was.
    Kept(PreviousJob<'m>),
    /// Run: the key it was built under and the files it wrote, sorted.
    Made {
        /// The key.
        key: Sha256Hex,
        /// The files, relative to the site root.
        files: MadeFiles,
    },
}

impl JobRecord<'_> {
    /// The files it wrote, relative to the site root.
    pub fn files(&self) -> Box<dyn Iterator<Item = &str> + '_> {
        match self {
            Self::Kept(job) => Box::new(job.files()),
            Self::Made { files, .. } => Box::new(files.iter()),
        }
    }
}

/// The files a job that ran wrote, as its manifest line lists them: one string, each
/// path followed by a space. A build holds one per job until it writes the manifest;
/// a `Vec<SitePath>` there was a heap block per file (820,000 at 10,000 rounds, ≈ 45 MB
/// more than this string).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MadeFiles(String);

impl MadeFiles {
    /// `files`, in the order given (a build gives them sorted).
    pub fn new(files: &[SitePath]) -> Self {
        let mut text = String::with_capacity(files.iter().map(|f| f.as_str().len() + 1).sum());
        for f in files {
            text.push_str(f.as_str());
            text.push(' ');
        }
        Self(text)
    }

    /// Each file, in order. A [`SitePath`] holds no space, so the split is exact.
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        self.0.split_terminator(' ')
    }
}

/// Which jobs of the previous manifest listed each file: a file listed by no job is no
/// build's, and a file listed by a job this build did not run is still made by it.
/// Borrowed from the manifest's text (no path is copied).
pub struct FileOwners<'m> {
    /// A file and the first job (its index in name order) that listed it. Fx-hashed:
    /// the keys are our own paths, and SipHash over 165,000 of them was a tenth of a
    /// build that adds one round.
    first: FxHashMap<&'m str, usize>,
    /// The other jobs that listed a file, for the rare manifest a failed build wrote
    /// (its failed jobs keep every file they ever wrote, [`JobRecord::Made`]).
    more: FxHashMap<&'m str, Vec<usize>>,
}

impl<'m> FileOwners<'m> {
    /// Whether any job listed `file`.
    pub fn contains(&self, file: &str) -> bool {
        self.first.contains_key(file)
    }

    /// The jobs that listed `file`, by index in name order ([`PreviousJob::index`]).
    pub fn of(&self, file: &str) -> impl Iterator<Item = usize> + '_ {
        let first = self.first.get(file).copied();
        let more = self.more.get(file).into_iter().flatten().copied();
        first.into_iter().chain(more)
    }
}

impl Manifest {
    /// Reads the main manifest of `out` (not the segment files); `None` when there is
    /// none. A manifest that does not parse is `None` too (the build then refuses a
    /// non-empty directory, see [`any_file`]).
    ///
    /// Errors: [`SiteError::Io`] when it exists but cannot be read.
    pub fn load(out: &Path) -> Result<Option<Self>, SiteError> {
        let path = out.join(MANIFEST_FILE);
        let bytes = match receipts::fsutil::read_limited(&path, MAX_MANIFEST_BYTES) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(IoError::at("reading", &path)(source).into()),
        };
        Ok(String::from_utf8(bytes).ok().and_then(Self::parse))
    }

    /// The main manifest in `text`: the header (this version's or the one before
    /// segments), then `<key> <job> <file> <file>…` per job of [`Segment::Site`] (of any
    /// segment before segments) and `<key> @<segment> <jobs> <HTML pages> <files>` per
    /// other segment, every file a valid [`SitePath`], no job or segment twice; `None`
    /// otherwise.
    fn parse(text: String) -> Option<Self> {
        let header = text.split_inclusive('\n').next()?;
        let v2 = match header.strip_suffix('\n')? {
            HEADER => true,
            HEADER_V1 => false,
            _ => return None,
        };
        let mut manifest = Self::default();
        let mut jobs = String::with_capacity(text.len());
        for raw in text[header.len()..].split_inclusive('\n') {
            let line = raw.strip_suffix('\n').unwrap_or(raw);
            let (key, rest) = line.split_once(' ')?;
            match rest.strip_prefix('@') {
                Some(segment) if v2 => {
                    let (record, segment) = parse_segment_line(key, segment)?;
                    if manifest.segments.insert(segment, record).is_some() {
                        return None;
                    }
                }
                _ => {
                    jobs.push_str(line);
                    jobs.push('\n');
                }
            }
        }
        manifest.text = jobs;
        manifest.index_lines(0, v2.then_some(&Segment::Site))?;
        Some(manifest)
    }

    /// Adds the job lines of `text` (each `<key> <job> <file>…\n`, checked; of
    /// `segment`'s jobs and files only, when given) and sorts the lines again by name;
    /// `None` when a line is not one or names a job already there.
    fn add_lines(&mut self, text: &str, segment: Option<&Segment>) -> Option<()> {
        let base = self.text.len();
        self.text.push_str(text);
        self.index_lines(base, segment)
    }

    /// Indexes the job lines of the text from byte `base` on, as [`Manifest::add_lines`]
    /// says.
    fn index_lines(&mut self, base: usize, segment: Option<&Segment>) -> Option<()> {
        let mut at = base;
        for raw in self.text[base..].split_inclusive('\n') {
            let start = at;
            at += raw.len();
            let line = raw.strip_suffix('\n').unwrap_or(raw);
            let (key, rest) = line.split_once(' ')?;
            let (name, files) = rest.split_once(' ').unwrap_or((rest, ""));
            let files_ok = files.is_empty() || SitePath::is_valid_list(files);
            if name.is_empty() || name.starts_with('@') || !files_ok {
                return None;
            }
            if let Some(segment) = segment
                && (&Segment::of_job(name) != segment
                    || files.split(' ').any(|f| !f.is_empty() && !segment.holds(f)))
            {
                return None;
            }
            let name_start = start + key.len() + 1;
            let files_start = (name_start + name.len() + 1).min(start + line.len());
            self.lines.push(Line {
                name: name_start..name_start + name.len(),
                key: key.parse().ok()?,
                files: files_start..start + line.len(),
            });
        }
        let text = &self.text;
        let name = |l: &Line| &text[l.name.clone()];
        // Written in name order; a manifest edited by hand, or lines added from another
        // file, are sorted again.
        if !self.lines.windows(2).all(|w| name(&w[0]) < name(&w[1])) {
            self.lines.sort_by(|a, b| name(a).cmp(name(b)));
            if self.lines.windows(2).any(|w| name(&w[0]) == name(&w[1])) {
                return None;
            }
        }
        Some(())
    }

    /// Adds the job lines of the files of `segments` ([`SEGMENTS_DIR`]), read in
    /// parallel. A segment without a file adds no line.
    ///
    /// Errors: [`SiteError::Manifest`] naming a segment file that cannot be read, does
    /// not parse, lists a job or a file of another segment, or a job already loaded.
    pub fn load_segments(&mut self, out: &Path, segments: &[Segment]) -> Result<(), SiteError> {
        use rayon::prelude::*;
        let read: Vec<(PathBuf, Option<String>)> = segments
            .par_iter()
            .map(|segment| {
                let path = segment_path(out, segment);
                match receipts::fsutil::read_limited(&path, MAX_MANIFEST_BYTES) {
                    Ok(bytes) => Ok((path, Some(bytes))),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => Ok((path, None)),
                    Err(e) => Err(SiteError::Manifest {
                        path,
                        message: e.to_string(),
                    }),
                }
                .and_then(|(path, bytes)| match bytes.map(String::from_utf8) {
                    Some(Err(_)) => Err(SiteError::Manifest {
                        path,
                        message: "is not UTF-8".to_owned(),
                    }),
                    text => Ok((path, text.and_then(Result::ok))),
                })
            })
            .collect::<Result<_, _>>()?;
        for (segment, (path, text)) in segments.iter().zip(read) {
            let Some(text) = text else { continue };
            let refused = |message: &str| SiteError::Manifest {
                path: path.clone(),
                message: message.to_owned(),
            };
            let lines = text
                .strip_prefix(SEGMENT_HEADER)
                .and_then(|t| t.strip_prefix('\n'))
                .ok_or_else(|| refused(&format!("does not start with `{SEGMENT_HEADER}`")))?;
            self.add_lines(lines, Some(segment)).ok_or_else(|| {
                refused(&format!(
                    "holds a line that is not `<key> <job> <file>…` of a job and files of segment `{segment}`, or a job twice"
                ))
            })?;
        }
        Ok(())
    }

    /// The main file's line of `segment`.
    pub fn segment(&self, segment: &Segment) -> Option<&SegmentRecord> {
        self.segments.get(segment)
    }

    /// The main file's segment lines, in segment order.
    pub fn segments(&self) -> impl Iterator<Item = (&Segment, &SegmentRecord)> {
        self.segments.iter()
    }

    /// How many jobs it lists.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// Whether it lists no job.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The line of the job named `name`.
    pub fn get(&self, name: &str) -> Option<PreviousJob<'_>> {
        self.job(self.index_of(name)?)
    }

    /// The line of the job at `index` (in name order).
    fn job(&self, index: usize) -> Option<PreviousJob<'_>> {
        let line = self.lines.get(index)?;
        Some(PreviousJob {
            index,
            key: &line.key,
            files: &self.text[line.files.clone()],
        })
    }

    /// The index (in name order) of the job named `name`.
    fn index_of(&self, name: &str) -> Option<usize> {
        self.lines
            .binary_search_by(|l| self.text[l.name.clone()].cmp(name))
            .ok()
    }

    /// Every job: its name and line, in name order.
    pub fn jobs(&self) -> impl Iterator<Item = (&str, PreviousJob<'_>)> {
        (self.lines.iter().enumerate())
            .filter_map(|(i, l)| Some((&self.text[l.name.clone()], self.job(i)?)))
    }

    /// Every file the manifest lists.
    pub fn files(&self) -> impl Iterator<Item = &str> {
        self.jobs().flat_map(|(_, job)| job.files())
    }

    /// Which jobs listed each file.
    pub fn owners(&self) -> FileOwners<'_> {
        let mut owners = FileOwners {
            first: FxHashMap::with_capacity_and_hasher(self.text.len() / 48, Default::default()),
            more: FxHashMap::default(),
        };
        for (i, (_, job)) in self.jobs().enumerate() {
            for file in job.files() {
                if let Some(&first) = owners.first.get(file) {
                    if first != i {
                        owners.more.entry(file).or_default().push(i);
                    }
                } else {
                    owners.first.insert(file, i);
                }
            }
        }
        owners
    }
}

/// Writes the main manifest to `w`: the header, then a line per job of `jobs` in name
/// order (its key, its name and its files, space-separated), then a line per segment of
/// `segments` (its key, `@<segment>`, its HTML pages and files). Streamed: it is never
/// built in memory by a build.
///
/// Errors: what `w` returns.
pub fn write_manifest_to(
    jobs: &BTreeMap<String, JobRecord<'_>>,
    segments: &BTreeMap<Segment, SegmentRecord>,
    w: &mut dyn io::Write,
) -> io::Result<()> {
    writeln!(w, "{HEADER}")?;
    write_job_lines(jobs, w)?;
    for (segment, record) in segments {
        writeln!(
            w,
            "{} @{segment} {} {} {}",
            record.key, record.jobs, record.html, record.files
        )?;
    }
    Ok(())
}

/// Writes a segment file to `w`: its header, then a line per job of `jobs` in name
/// order.
///
/// Errors: what `w` returns.
pub fn write_segment_to(
    jobs: &BTreeMap<String, JobRecord<'_>>,
    w: &mut dyn io::Write,
) -> io::Result<()> {
    writeln!(w, "{SEGMENT_HEADER}")?;
    write_job_lines(jobs, w)
}

/// One line per job of `jobs`: its key, its name and its files, space-separated.
fn write_job_lines(
    jobs: &BTreeMap<String, JobRecord<'_>>,
    w: &mut dyn io::Write,
) -> io::Result<()> {
    for (name, job) in jobs {
        let key = match job {
            JobRecord::Kept(job) => job.key,
            JobRecord::Made { key, .. } => key,
        };
        w.write_all(key.as_str().as_bytes())?;
        w.write_all(b" ")?;
        w.write_all(name.as_bytes())?;
        match job {
            JobRecord::Kept(job) if !job.files.is_empty() => {
                w.write_all(b" ")?;
                w.write_all(job.files.as_bytes())?;
            }
            JobRecord::Kept(_) => {}
            JobRecord::Made { files, .. } => {
                for f in files.iter() {
                    w.write_all(b" ")?;
                    w.write_all(f.as_bytes())?;
                }
            }
        }
        w.write_all(b"\n")?;
    }
    Ok(())
}

/// The file of `segment`'s job lines under `out`.
pub fn segment_path(out: &Path, segment: &Segment) -> PathBuf {
    out.join(SEGMENTS_DIR).join(segment.to_string())
}

/// `<key> @<segment> <jobs> <html> <files>` with `key` and the rest after the `@` given:
/// the record and its segment.
fn parse_segment_line(key: &str, rest: &str) -> Option<(SegmentRecord, Segment)> {
    let mut parts = rest.split(' ');
    let segment = Segment::parse(parts.next()?)?;
    let jobs = parts.next()?.parse().ok()?;
    let html = parts.next()?.parse().ok()?;
    let files = parts.next()?.parse().ok()?;
    if parts.next().is_some() || segment == Segment::Site {
        return None;
    }
    let key = key.parse().ok()?;
    Some((
        SegmentRecord {
            key,
            jobs,
            html,
            files,
        },
        segment,
    ))
}

/// The first file under `out` (sorted walk), the manifest and its segment files
/// ([`SEGMENTS_DIR`]), the verdict cache ([`VERDICTS_FILE`]) and temp files a killed
/// writer left aside: what makes a directory without a manifest someone else's. `None` for an output directory
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
            if kind.is_dir() && dir == out && name == SEGMENTS_DIR {
                continue;
            } else if kind.is_dir() {
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
    files: impl IntoIterator<Item = &'a str>,
) -> Result<usize, SiteError> {
    let mut removed = 0;
    let mut dirs = std::collections::BTreeSet::new();
    for f in files {
        let Some(f) = SitePath::parse(f) else {
            continue;
        };
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

    fn written(jobs: &BTreeMap<String, JobRecord<'_>>) -> String {
        let mut out = Vec::new();
        write_manifest_to(jobs, &BTreeMap::new(), &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn made_files_give_back_each_path_in_order() {
        let round = SiteDir::round(&"demo".parse().unwrap(), 1);
        let files = [round.page(), round.file("entries.csv").unwrap()];
        let made = MadeFiles::new(&files);
        assert_eq!(
            made.iter().collect::<Vec<_>>(),
            ["c/demo/r/1/index.html", "c/demo/r/1/entries.csv"]
        );
        assert_eq!(MadeFiles::new(&[]), MadeFiles::default());
        assert_eq!(MadeFiles::default().iter().count(), 0);
    }

    #[test]
    fn manifest_round_trips_and_refuses_bad_lines() {
        let campaign = SiteDir::campaign(&"demo".parse().unwrap());
        let mut jobs = BTreeMap::new();
        jobs.insert(
            "campaign:demo".to_owned(),
            JobRecord::Made {
                key: Sha256Hex::digest(b"k"),
                files: MadeFiles::new(&[campaign.page(), campaign.file("rounds.csv").unwrap()]),
            },
        );
        jobs.insert(
            "index".to_owned(),
            JobRecord::Made {
                key: Sha256Hex::digest(b"i"),
                files: MadeFiles::default(),
            },
        );
        let text = written(&jobs);
        let (k, i) = (Sha256Hex::digest(b"k"), Sha256Hex::digest(b"i"));
        assert_eq!(
            text,
            format!("{HEADER}\n{k} campaign:demo c/demo/index.html c/demo/rounds.csv\n{i} index\n")
        );
        let m = Manifest::parse(text.clone()).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m.index_of("campaign:demo"), Some(0));
        let campaign_job = m.get("campaign:demo").unwrap();
        assert_eq!(campaign_job.key, &k);
        assert_eq!(
            campaign_job.files().collect::<Vec<_>>(),
            ["c/demo/index.html", "c/demo/rounds.csv"]
        );
        assert_eq!(m.get("index").unwrap().files().count(), 0);
        assert!(m.get("campaign:other").is_none());
        // Kept lines are written again byte for byte.
        let kept: BTreeMap<String, JobRecord<'_>> = m
            .jobs()
            .map(|(name, job)| (name.to_owned(), JobRecord::Kept(job)))
            .collect();
        assert_eq!(written(&kept), text);
        // Lines out of order are sorted; the owners of each file are found.
        let swapped =
            format!("{HEADER}\n{i} index c/demo/index.html\n{k} campaign:demo c/demo/index.html");
        let m = Manifest::parse(swapped).unwrap();
        assert_eq!(
            m.jobs().map(|(n, _)| n).collect::<Vec<_>>(),
            ["campaign:demo", "index"]
        );
        let owners = m.owners();
        assert_eq!(owners.of("c/demo/index.html").collect::<Vec<_>>(), [0, 1]);
        assert!(!owners.contains("c/demo/rounds.csv"));
        for bad in [
            String::new(),
            "referee-site-manifest 3\n".to_owned(),
            format!("{HEADER}\n{k} job ../../etc/passwd\n"),
            format!("{HEADER}\n{k} job /abs\n"),
            format!("{HEADER}\n{k} job a.html  b.html\n"),
            format!("{HEADER}\n{k} \n"),
            format!("{HEADER}\nnothex job a.html\n"),
            format!("{HEADER}\n{k} job a.html\n{i} job b.html\n"),
        ] {
            assert!(Manifest::parse(bad.clone()).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn segments_have_a_line_in_the_main_file_and_their_jobs_in_their_own() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path();
        let demo = "demo".parse().unwrap();
        let block = Segment::of_round(&demo, 101);
        let (k, s) = (Sha256Hex::digest(b"k"), Sha256Hex::digest(b"s"));
        let page = SiteDir::round(&demo, 101).page();
        let mut jobs = BTreeMap::new();
        jobs.insert(
            "round:demo:101".to_owned(),
            JobRecord::Made {
                key: k,
                files: MadeFiles::new(std::slice::from_ref(&page)),
            },
        );
        let mut file = Vec::new();
        write_segment_to(&jobs, &mut file).unwrap();
        assert_eq!(
            String::from_utf8(file.clone()).unwrap(),
            format!("{SEGMENT_HEADER}\n{k} round:demo:101 c/demo/r/101/index.html\n")
        );
        let segments = BTreeMap::from([(
            block.clone(),
            SegmentRecord {
                key: s,
                jobs: 1,
                html: 1,
                files: 1,
            },
        )]);
        let mut main = Vec::new();
        write_manifest_to(&BTreeMap::new(), &segments, &mut main).unwrap();
        let main = String::from_utf8(main).unwrap();
        assert_eq!(main, format!("{HEADER}\n{s} @rounds.demo.2 1 1 1\n"));

        std::fs::write(out.join(MANIFEST_FILE), &main).unwrap();
        let mut m = Manifest::load(out).unwrap().unwrap();
        assert_eq!(m.segment(&block), segments.get(&block));
        assert!(m.is_empty());
        // A segment without a file adds nothing; with one, its lines.
        m.load_segments(out, std::slice::from_ref(&block)).unwrap();
        assert!(m.is_empty());
        std::fs::create_dir_all(out.join(SEGMENTS_DIR)).unwrap();
        std::fs::write(segment_path(out, &block), &file).unwrap();
        m.load_segments(out, std::slice::from_ref(&block)).unwrap();
        assert_eq!(m.get("round:demo:101").unwrap().key, &k);
        assert_eq!(m.files().collect::<Vec<_>>(), [page.as_str()]);

        // Lines of another segment, a job twice, a bad header: each names the file.
        let other = Segment::of_round(&demo, 1);
        for (segment, text) in [
            (other.clone(), String::from_utf8(file.clone()).unwrap()),
            (
                other.clone(),
                format!("{SEGMENT_HEADER}\n{k} round:demo:1 c/demo/r/101/index.html\n"),
            ),
            (block.clone(), String::from_utf8(file.clone()).unwrap()),
            (block.clone(), "referee-site-manifest 1\n".to_owned()),
        ] {
            std::fs::write(segment_path(out, &segment), &text).unwrap();
            let error = m
                .load_segments(out, std::slice::from_ref(&segment))
                .unwrap_err();
            assert!(
                matches!(&error, SiteError::Manifest { path, .. } if path == &segment_path(out, &segment)),
                "{error}"
            );
        }

        std::fs::write(segment_path(out, &block), b"\xff\xfe").unwrap();
        let error = m
            .load_segments(out, std::slice::from_ref(&block))
            .unwrap_err();
        assert!(error.to_string().contains("is not UTF-8"), "{error}");

        // The main file holds no job of another segment, and each segment once.
        for bad in [
            format!("{HEADER}\n{k} round:demo:101 c/demo/r/101/index.html\n"),
            format!("{HEADER}\n{s} @rounds.demo.2 1 1 1\n{s} @rounds.demo.2 1 1 1\n"),
            format!("{HEADER}\n{s} @site 1 1 1\n"),
            format!("{HEADER}\n{s} @rounds.demo.2 1 1\n"),
            format!("{HEADER}\n{s} @../x 1 1 1\n"),
        ] {
            assert!(Manifest::parse(bad.clone()).is_none(), "{bad:?}");
        }
        // A manifest from before segments: every job in the main file.
        let v1 = Manifest::parse(format!(
            "{HEADER_V1}\n{k} round:demo:101 c/demo/r/101/index.html\n"
        ))
        .unwrap();
        assert_eq!(v1.len(), 1);
        assert_eq!(v1.segments().count(), 0);
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
        let m = Manifest::parse(format!(
            "{HEADER}\n{} campaign:demo {page}\n",
            Sha256Hex::digest(b"k")
        ))
        .unwrap();
        assert_eq!(any_file(out).unwrap(), Some(page.under(out)));
        std::fs::write(out.join("c/notes.txt"), "mine").unwrap();
        assert_eq!(any_file(out).unwrap(), Some(out.join("c/notes.txt")));
        let empty = tmp.path().join("empty");
        std::fs::create_dir_all(empty.join("a/b")).unwrap();
        std::fs::write(empty.join(MANIFEST_FILE), "m").unwrap();
        std::fs::write(empty.join(VERDICTS_FILE), "v").unwrap();
        std::fs::write(empty.join("a/.tmpAbC123"), "torn").unwrap();
        std::fs::create_dir_all(empty.join(SEGMENTS_DIR)).unwrap();
        std::fs::write(empty.join(SEGMENTS_DIR).join("rounds.demo.1"), "s").unwrap();
        assert_eq!(any_file(&empty).unwrap(), None);
        // Only the segments directory at the root is ours.
        let nested = empty.join("a").join(SEGMENTS_DIR);
        std::fs::create_dir_all(&nested).unwrap();
        std::fs::write(nested.join("x"), "x").unwrap();
        assert_eq!(any_file(&empty).unwrap(), Some(nested.join("x")));
        assert_eq!(any_file(&tmp.path().join("missing")).unwrap(), None);
        assert_eq!(remove_files(out, m.files()).unwrap(), 1);
        assert!(!out.join("c/demo").exists());
        assert!(out.join("c/notes.txt").exists());
    }
}
