//! The incremental build: what a build takes from the one before it and leaves for the
//! next, in three steps.
//!
//! - **Own checks** ([`OwnChecks`]): each bundle's own checks, found once a build — a
//!   verdict of an earlier build ([`crate::verdicts`]), else the verifier run on the
//!   bundle, the one place a build runs it. A report that passed is kept for the rest of
//!   the build, and the round's pages and the rejected page read it back
//!   ([`OwnChecks::recall`]) instead of verifying the bundle again.
//! - **Plan** (`plan`): from the previous build's manifest ([`crate::cache`]) and the
//!   keys of this build's segments, which segments are listed and which are kept whole,
//!   the manifest lines a job that did not change keeps, and the files a job may
//!   overwrite; `--clean` removes the previous build's files here.
//! - **Commit** (`Plan::commit`, `Plan::commit_failed`): once the jobs ran, the
//!   previous build's files nothing made this time are removed, and the verdict cache and
//!   the manifest are written, durably, after every file they vouch for.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

use receipts::fsutil::{IoError, write_atomic_with};
use receipts::keys::Keyring;
use receipts::model::{RoundRecord, Sha256Hex, Timestamp};
use rustc_hash::FxHashSet;
use verifier::{VerifyOptions, VerifyReport};

use crate::cache::{
    FileOwners, JobRecord, MANIFEST_FILE, MadeFiles, Manifest, SEGMENTS_DIR, SegmentRecord,
    any_file, remove_files, segment_path, write_manifest_to, write_segment_to,
};
use crate::error::SiteError;
use crate::paths::{FILE_MODE, SitePath};
use crate::segment::Segment;
use crate::verdicts::{
    VERDICTS_FILE, Verdicts, bundle_digest, bundle_stamp, stamp_limit, verdict_key,
};

/// The own checks of every bundle of one build: each found once ([`OwnChecks::check`]),
/// then read back as often as the build needs them ([`OwnChecks::recall`]).
///
/// A report that passed is kept in the build's [`Verdicts`] under its key (and written
/// to the verdict cache for the next build); one whose bundle has no content key (its
/// files could not all be read) is held in memory for this build only.
pub struct OwnChecks<'a> {
    keyring: &'a Keyring,
    /// The keyring file's bytes: part of every verdict's key.
    keyring_json: &'a [u8],
    verdicts: &'a Verdicts,
    /// The instant a bundle's stamp is trusted up to ([`stamp_limit`]).
    not_after: SystemTime,
    /// Passed reports the verdicts do not keep, by bundle directory.
    held: Mutex<HashMap<PathBuf, VerifyReport>>,
    /// Bundles the verifier ran on.
    runs: AtomicUsize,
}

/// A bundle's own checks, as [`OwnChecks::check`] found them.
pub struct Checked {
    /// The report of its own checks (no check across rounds).
    pub report: VerifyReport,
    /// Its record: the one given to [`OwnChecks::check`] when the report came from the
    /// verdicts, else the one the verifier read; `None` when it could not be read.
    pub record: Option<RoundRecord>,
    /// The key its report is kept under in the verdicts, when it passed and is kept
    /// there (what [`OwnChecks::recall`] reads it back by).
    pub key: Option<Sha256Hex>,
}

impl<'a> OwnChecks<'a> {
    /// The own checks of a build verifying against `keyring` (whose file's bytes are
    /// `keyring_json`), finding and keeping verdicts in `verdicts`. Reads the clock once,
    /// for the stamps' racy window only ([`stamp_limit`]): the output does not depend on
    /// it.
    pub fn new(keyring: &'a Keyring, keyring_json: &'a [u8], verdicts: &'a Verdicts) -> Self {
        Self {
            keyring,
            keyring_json,
            verdicts,
            not_after: stamp_limit(SystemTime::now()),
            held: Mutex::default(),
            runs: AtomicUsize::new(0),
        }
    }

    /// The trusted keyring.
    pub fn keyring(&self) -> &'a Keyring {
        self.keyring
    }

    /// The keyring file's bytes.
    pub fn keyring_json(&self) -> &'a [u8] {
        self.keyring_json
    }

    /// The build's verdicts: written to the verdict cache when the build commits.
    pub fn verdicts(&self) -> &'a Verdicts {
        self.verdicts
    }

    /// The own checks of the bundle `dir` verified as of `at`, whose Statement's sha256
    /// was read as `statement_digest` and its record as `read`: the verdict of an earlier
    /// build (or of a bundle of this one with the same content) kept under its key — by
    /// its metadata stamp ([`bundle_stamp`]: its files are not read), else by its content
    /// digest ([`bundle_digest`]) — for the same Statement, else the verifier's, counted
    /// in [`OwnChecks::verifier_runs`] and, when it passed, kept. `read` is dropped before
    /// the verifier reads the bundle again.
    pub fn check(
        &self,
        dir: &Path,
        at: Timestamp,
        statement_digest: Option<&Sha256Hex>,
        read: Option<RoundRecord>,
    ) -> Checked {
        let same_statement = |r: &VerifyReport| {
            r.statement_digest.is_some() && r.statement_digest.as_ref() == statement_digest
        };
        let stamp = (bundle_stamp(dir, self.not_after).ok().flatten())
            .map(|stamp| verdict_key(self.keyring_json, at, &stamp));
        // Unchanged metadata: the files are not read again.
        let by_stamp = (stamp.as_ref())
            .and_then(|s| self.verdicts.get_by_stamp(s, dir))
            .filter(|(_, r)| same_statement(r));
        if let Some((key, report)) = by_stamp {
            return Checked {
                report,
                record: read,
                key: Some(key),
            };
        }
        let key =
            (bundle_digest(dir).ok()).map(|digest| verdict_key(self.keyring_json, at, &digest));
        let cached = (key.as_ref())
            .and_then(|k| self.verdicts.get(k, stamp.as_ref(), dir))
            .filter(same_statement);
        if let Some(report) = cached {
            return Checked {
                report,
                record: read,
                key,
            };
        }
        // Freed before verifying reads it again.
        drop(read);
        self.runs.fetch_add(1, Ordering::Relaxed);
        let (report, record) =
            verifier::verify_round_bundle(dir, self.keyring, &VerifyOptions::at(at));
        let passed = report.passed();
        let key = key.filter(|key| passed && self.verdicts.put(*key, stamp, &report));
        if passed && key.is_none() {
            let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
            held.insert(dir.to_owned(), report.clone());
        }
        Checked {
            report,
            record,
            key,
        }
    }

    /// The report of the bundle `dir`'s own checks that passed in this build's
    /// [`OwnChecks::check`], which gave it `key`: read back, never verified again.
    ///
    /// Errors: [`SiteError::VerdictLost`] naming `dir` when it is not kept (this build
    /// did not check the bundle, or its line could not be kept or read back).
    pub fn recall(&self, key: Option<&Sha256Hex>, dir: &Path) -> Result<VerifyReport, SiteError> {
        let kept = match key {
            Some(key) => self.verdicts.report(key, dir),
            None => (self.held.lock().unwrap_or_else(|e| e.into_inner()))
                .get(dir)
                .cloned(),
        };
        kept.ok_or_else(|| SiteError::VerdictLost {
            dir: dir.to_owned(),
            message: match self.verdicts.kept() {
                Err(e) => e.to_string(),
                Ok(()) => "this build holds no report of its own checks".to_owned(),
            },
        })
    }

    /// How many bundles the verifier ran on (the others' own checks came from the
    /// verdicts): at most once each a build.
    pub fn verifier_runs(&self) -> usize {
        self.runs.load(Ordering::Relaxed)
    }
}

/// The key of a job that runs on every build (and of one whose last run failed).
pub(crate) fn always() -> Sha256Hex {
    Sha256Hex::from_bytes([0; 32])
}

/// What a build takes from the previous one ([`plan`]) and how it leaves the output
/// directory for the next ([`Plan::commit`], [`Plan::commit_failed`]).
pub(crate) struct Plan {
    /// The output directory.
    out: PathBuf,
    /// The previous build's manifest: its main file, and the files of `loaded`.
    previous: Manifest,
    /// Every segment of the site but [`Segment::Site`], with its key.
    parts: Vec<(Segment, Sha256Hex)>,
    /// Whether each part's jobs are listed (else it is kept whole).
    listed: Vec<bool>,
    /// The segments whose files were read: those listed and those the site no longer has.
    loaded: Vec<Segment>,
    /// The previous build's files `--clean` removed.
    removed: usize,
}

/// The plan of a build writing into `out` whose segments other than [`Segment::Site`]
/// have the keys of `parts`, after the build whose manifest is `previous` (`None` when
/// `out` holds none). With `clean`, the previous build's files (only those its manifest
/// lists) are removed first and nothing of it is kept. A part whose key the manifest
/// holds is kept whole: its jobs are not listed and its manifest file is not read. The
/// files of the listed parts are read, and those of the segments the site no longer has,
/// to remove their files.
///
/// Errors: [`SiteError::NotOurOutput`] when `out` holds a file and no manifest;
/// [`SiteError::Manifest`] for a segment file that cannot be read or does not parse;
/// [`SiteError::Io`] naming a file `--clean` could not remove.
pub(crate) fn plan<'p>(
    out: &Path,
    clean: bool,
    mut previous: Option<Manifest>,
    parts: impl Iterator<Item = (&'p Segment, &'p Sha256Hex)>,
) -> Result<Plan, SiteError> {
    if previous.is_none()
        && let Some(file) = any_file(out)?
    {
        return Err(SiteError::NotOurOutput {
            dir: out.to_owned(),
            file,
        });
    }
    let mut removed = 0;
    if clean && let Some(mut manifest) = previous.take() {
        let all: Vec<Segment> = manifest.segments().map(|(s, _)| s.clone()).collect();
        manifest.load_segments(out, &all)?;
        removed += remove_files(out, manifest.files())?;
        remove_files_of(out, &all)?;
    }
    let mut previous = previous.unwrap_or_default();
    let parts: Vec<(Segment, Sha256Hex)> = parts.map(|(s, key)| (s.clone(), *key)).collect();
    let listed: Vec<bool> = (parts.iter())
        .map(|(segment, key)| {
            previous
                .segment(segment)
                .is_none_or(|r| r.key != *key || r.key == always())
        })
        .collect();
    let current: FxHashSet<&Segment> = parts.iter().map(|(s, _)| s).collect();
    let mut loaded: Vec<Segment> = (parts.iter().zip(&listed))
        .filter(|(_, listed)| **listed)
        .map(|((s, _), _)| s.clone())
        .collect();
    loaded.extend(
        (previous.segments())
            .map(|(s, _)| s)
            .filter(|s| !current.contains(s))
            .cloned(),
    );
    previous.load_segments(out, &loaded)?;
    Ok(Plan {
        out: out.to_owned(),
        previous,
        parts,
        listed,
        loaded,
        removed,
    })
}

impl Plan {
    /// The previous build's manifest: the lines of [`Segment::Site`] and of the listed
    /// parts, which say which jobs keep their files ([`Manifest::get`]).
    pub(crate) fn previous(&self) -> &Manifest {
        &self.previous
    }

    /// Whether each part's jobs are listed (in the order of the parts given to [`plan`]);
    /// a part that is not is kept whole.
    pub(crate) fn listed(&self) -> &[bool] {
        &self.listed
    }

    /// Which previous jobs wrote each file: a build writes over no file they do not list.
    pub(crate) fn owners(&self) -> FileOwners<'_> {
        self.previous.owners()
    }

    /// How many files of the previous build `--clean` removed.
    pub(crate) fn removed(&self) -> usize {
        self.removed
    }

    /// The manifest's lines of the parts kept whole: their jobs, HTML pages and files.
    pub(crate) fn kept_whole(&self) -> impl Iterator<Item = &SegmentRecord> {
        (self.parts.iter().zip(&self.listed))
            .filter(|(_, listed)| !**listed)
            .filter_map(|((segment, _), _)| self.previous.segment(segment))
    }

    /// Commits a build whose every job succeeded, `jobs` being each job's manifest line
    /// by name (a job of a part kept whole has none) and `owners` [`Plan::owners`]:
    /// refuses a file made twice, removes the previous build's files that nothing made
    /// or kept this time, then writes the verdict cache (`verdicts`) and the manifest
    /// ([`write_manifest`]). Returns how many files it removed.
    ///
    /// Errors: [`SiteError::DuplicateOutput`] for a file made by two jobs (two that ran,
    /// or one that ran and one kept: a part kept whole holds none of them, each job
    /// writing only in its own segment); [`SiteError::Io`] naming a file that could not
    /// be removed or written.
    pub(crate) fn commit<'m>(
        &'m self,
        jobs: Vec<(String, JobRecord<'m>)>,
        owners: &FileOwners<'_>,
        verdicts: &Verdicts,
    ) -> Result<usize, SiteError> {
        let previous = &self.previous;
        // The previous build's jobs this build kept as they were, by index in name order.
        let mut kept = vec![false; previous.len()];
        // The files the jobs that ran made, sorted.
        let mut made: Vec<&str> = Vec::new();
        for (_, record) in &jobs {
            match record {
                JobRecord::Kept(job) => kept[job.index] = true,
                JobRecord::Made { files, .. } => made.extend(files.iter()),
            }
        }
        made.sort_unstable();
        let by_kept = |f: &str| owners.of(f).any(|i| kept[i]);
        let twice = made
            .windows(2)
            .find(|w| w[0] == w[1])
            .map(|w| w[0])
            .or_else(|| made.iter().copied().find(|f| by_kept(f)));
        if let Some(twice) = twice {
            return Err(SiteError::DuplicateOutput {
                path: twice.to_string(),
            });
        }
        // What the previous build's jobs that ran again (or are gone) wrote and nothing
        // made this time.
        let stale: Vec<&str> = previous
            .jobs()
            .enumerate()
            .filter(|(i, _)| !kept[*i])
            .flat_map(|(_, (_, job))| job.files())
            .filter(|f| made.binary_search(f).is_err() && !by_kept(f))
            .collect();
        let removed = remove_files(&self.out, stale)?;
        self.write_manifest(jobs.into_iter().collect(), false, verdicts)?;
        Ok(removed)
    }

    /// Commits a build some of whose jobs failed: `done` are the manifest lines of the
    /// jobs that succeeded, `failed` those of the jobs that failed (the files each wrote
    /// before it failed). Every file written so far stays listed as ours, a failed job's
    /// under a key that runs it again, so the next build neither refuses the directory
    /// nor trusts a half-written job. Nothing is removed.
    ///
    /// Errors: [`SiteError::Io`] naming the file that could not be written.
    pub(crate) fn commit_failed<'a, 'm: 'a>(
        &'m self,
        done: impl IntoIterator<Item = (&'a str, &'a JobRecord<'m>)>,
        failed: impl IntoIterator<Item = (&'a str, &'a JobRecord<'m>)>,
        verdicts: &Verdicts,
    ) -> Result<(), SiteError> {
        let previous = &self.previous;
        let mut manifest: BTreeMap<String, JobRecord<'_>> = previous
            .jobs()
            .map(|(name, job)| (name.to_owned(), JobRecord::Kept(job)))
            .collect();
        for (name, record) in done {
            manifest.insert(name.to_owned(), record.clone());
        }
        for (name, record) in failed {
            let old = previous.get(name);
            let mut files: Vec<SitePath> = (record.files())
                .chain(old.iter().flat_map(|o| o.files()))
                .filter_map(SitePath::parse)
                .collect();
            files.sort();
            files.dedup();
            manifest.insert(
                name.to_owned(),
                JobRecord::Made {
                    key: always(),
                    files: MadeFiles::new(&files),
                },
            );
        }
        self.write_manifest(manifest, true, verdicts)
    }

    /// Syncs everything written under the output directory ([`sync_output`]), then
    /// writes the verdict cache and the manifest there, each file atomically and durably
    /// ([`write_atomic_with`]) when its bytes changed; a verdict cache that only gained
    /// lines has them appended instead ([`Verdicts::append_to`]). `records` are the job
    /// lines of [`Segment::Site`] and of the segments the plan loaded or listed: each
    /// segment's lines go to its file ([`segment_path`]; the file of a segment left
    /// without lines is removed), the others to [`MANIFEST_FILE`], written last, with a
    /// line per segment: a part kept whole keeps its line, a part listed gets its key (or,
    /// when the build `failed`, one that lists it again next time) and the counts of its
    /// lines. Streamed ([`write_streamed`]): at 10,000 rounds the verdict cache is ≈ 384
    /// MB, never built in memory.
    ///
    /// Errors: [`SiteError::Io`] naming the directory or the file.
    fn write_manifest(
        &self,
        records: BTreeMap<String, JobRecord<'_>>,
        failed: bool,
        verdicts: &Verdicts,
    ) -> Result<(), SiteError> {
        let out = &self.out;
        std::fs::create_dir_all(out).map_err(IoError::at("creating", out))?;
        sync_output(out)?;
        let path = out.join(VERDICTS_FILE);
        if !verdicts
            .append_to(&path)
            .map_err(IoError::at("writing", &path))?
        {
            write_streamed(&path, &|w| verdicts.write_to(w))?;
        }

        let mut by_segment: BTreeMap<Segment, BTreeMap<String, JobRecord<'_>>> = BTreeMap::new();
        for (name, record) in records {
            by_segment
                .entry(Segment::of_job(&name))
                .or_default()
                .insert(name, record);
        }
        let site = by_segment.remove(&Segment::Site).unwrap_or_default();
        let line = |key: Sha256Hex, records: &BTreeMap<String, JobRecord<'_>>| {
            let mut line = SegmentRecord {
                key,
                jobs: records.len(),
                html: 0,
                files: 0,
            };
            for f in records.values().flat_map(JobRecord::files) {
                line.files += 1;
                line.html += usize::from(f.ends_with(".html"));
            }
            line
        };
        let mut lines: BTreeMap<Segment, SegmentRecord> = BTreeMap::new();
        for ((segment, key), listed) in self.parts.iter().zip(&self.listed) {
            let record = if *listed {
                let records = by_segment.get(segment);
                let key = if failed { always() } else { *key };
                Some(line(key, records.unwrap_or(&BTreeMap::new())))
            } else {
                self.previous.segment(segment).cloned()
            };
            lines.extend(record.map(|r| (segment.clone(), r)));
        }
        // Lines of a segment the site no longer has, kept by a failed build.
        for (segment, records) in &by_segment {
            if !lines.contains_key(segment) {
                lines.insert(segment.clone(), line(always(), records));
            }
        }

        // Every listed part was loaded.
        let written: BTreeSet<&Segment> = self.loaded.iter().chain(by_segment.keys()).collect();
        if !by_segment.is_empty() {
            let dir = out.join(SEGMENTS_DIR);
            std::fs::create_dir_all(&dir).map_err(IoError::at("creating", &dir))?;
        }
        for segment in written {
            let path = segment_path(out, segment);
            match by_segment.get(segment) {
                Some(records) => write_streamed(&path, &|w| write_segment_to(records, w))?,
                None => remove_files_of(out, std::slice::from_ref(segment))?,
            }
        }
        write_streamed(&out.join(MANIFEST_FILE), &|w| {
            write_manifest_to(&site, &lines, w)
        })
    }
}

/// Removes the segment files of `segments` under `out` (a file already gone is not an
/// error), then the segments directory when it is left empty.
///
/// Errors: [`SiteError::Io`] naming the file.
fn remove_files_of(out: &Path, segments: &[Segment]) -> Result<(), SiteError> {
    for segment in segments {
        let path = segment_path(out, segment);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(IoError::at("removing", &path)(source).into()),
        }
    }
    // Left when it still holds something.
    let _ = std::fs::remove_dir(out.join(SEGMENTS_DIR));
    Ok(())
}

/// Writes what `write` writes to `path` unless the file holds exactly that
/// ([`holds`]): to a temp file through a buffer, then renamed over `path`
/// ([`write_atomic_with`], [`FILE_MODE`]).
///
/// Errors: [`SiteError::Io`] naming `path`.
fn write_streamed(
    path: &Path,
    write: &dyn Fn(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), SiteError> {
    if !holds(path, &mut |w| write(w)) {
        let mut to_file = |file: &mut std::fs::File| {
            let mut w = std::io::BufWriter::new(file);
            write(&mut w)?;
            w.flush()
        };
        write_atomic_with(path, FILE_MODE, &mut to_file).map_err(IoError::at("writing", path))?;
    }
    Ok(())
}

/// Whether the file `path` holds exactly the bytes `write` writes, compared as they
/// are written (nothing is built in memory); `false` when it cannot be read.
fn holds(path: &Path, write: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>) -> bool {
    /// Compares what it is given with the next bytes of `file`.
    struct Compare {
        file: std::io::BufReader<std::fs::File>,
        same: bool,
        buf: Vec<u8>,
    }
    impl Write for Compare {
        fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
            if self.same {
                self.buf.resize(data.len(), 0);
                self.same = self.file.read_exact(&mut self.buf).is_ok() && self.buf == data;
            }
            Ok(data.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut compare = Compare {
        file: std::io::BufReader::new(file),
        same: true,
        buf: Vec::new(),
    };
    // Then nothing more in the file.
    write(&mut compare).is_ok() && compare.same && compare.file.read(&mut [0]).is_ok_and(|n| n == 0)
}

/// Makes every file written under `out` durable at once: `syncfs(2)` of the filesystem
/// holding it (one call instead of two fsyncs per file; on tmpfs it returns at once).
/// Elsewhere than Linux, `out` itself is fsynced (the files written stay in the page
/// cache until the system writes them back: a rebuild repairs a crash there).
///
/// Errors: [`SiteError::Io`] naming `out`.
fn sync_output(out: &Path) -> Result<(), SiteError> {
    let sync = || -> std::io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let dir = std::fs::File::open(out)?;
            // SAFETY: `dir` is an open file descriptor for the duration of the call, and
            // syncfs reads nothing else.
            if unsafe { libc::syncfs(dir.as_raw_fd()) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        }
        #[cfg(not(target_os = "linux"))]
        {
            receipts::fsutil::sync_dir(out)
        }
    };
    sync().map_err(|e| IoError::at("syncing", out)(e).into())
}
