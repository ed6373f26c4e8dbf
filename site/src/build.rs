//! The build: load and verify the archive, list every job (a page with the files beside
//! it, a static file, the files for machines) with its output paths and cache key, run
//! the jobs whose key changed in parallel (rayon), and write each file whose bytes
//! changed with `write_atomic`; what the previous build left is planned and committed by
//! [`crate::incremental`]. Identical input gives byte-identical output: nothing reads a
//! clock except the stage timings reported in [`BuildSummary`].

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use rayon::prelude::*;
use receipts::fsutil::IoError;
use receipts::layout::DataDir;
use receipts::model::{MinerId, Sha256Hex, Timestamp};
use rustc_hash::FxHashSet;
use serde::Serialize;

use crate::archive::{Archive, CampaignArchive, RoundListing, VerifiedRound};
use crate::cache::{
    FileOwners, GlobalKey, JobRecord, KeyHasher, MANIFEST_FILE, MadeFiles, Manifest,
};
use crate::docs::{DocPage, Docs, DocsIndex};
use crate::error::SiteError;
use crate::incremental::{self, OwnChecks, always};
use crate::load::{load_archive_cached, load_keyring, load_round};
use crate::machine::{self, SitemapPage, SitemapSegment};
use crate::pages::submission::{MinerPatch, PatchIndex};
use crate::pages::{self, ExtraFile, PageOut};
use crate::paths::{EntrySlug, FILE_MODE, SiteDir, SitePath};
use crate::render::{Renderer, STATIC_FILES, SiteInfo, templates_digest};
use crate::segment::{Segment, block_numbers, block_of};
use crate::verdicts::Verdicts;

/// What `referee site build` was asked.
#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// The data directory.
    pub data: PathBuf,
    /// The trusted keyring file (`keyring.json`).
    pub keyring: PathBuf,
    /// The output directory (created when missing).
    pub out: PathBuf,
    /// The URL the site is published at (`https://example.org/referee/`); empty when
    /// unknown. A missing final `/` is added.
    pub base_url: String,
    /// Remove the previous build's files first (only files its manifest lists), so
    /// everything is rendered and written again.
    pub clean: bool,
    /// Verify every bundle as of this instant instead of its own seal time.
    pub at: Option<Timestamp>,
    /// `--allow-unlogged`: build even when the data directory's log fails its checks
    /// (the log is then not served, and the front page says why); without it such a
    /// build fails before writing anything ([`SiteError::LogRefused`]).
    pub allow_unlogged: bool,
}

/// What a build did. Timings are wall-clock milliseconds, reported only (never part of
/// the output).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildSummary {
    /// HTML pages the site has.
    pub html_pages: usize,
    /// HTML pages written (new or changed).
    pub html_written: usize,
    /// Other files written (new or changed): CSV, JSON, receipts, feeds, the stylesheet.
    pub other_written: usize,
    /// Files left as they were: their job's key did not change, or their bytes did not.
    pub unchanged: usize,
    /// Files of the previous build the site no longer has, removed.
    pub removed: usize,
    /// Jobs run (the rest were skipped by the cache).
    pub jobs_run: usize,
    /// Jobs in all.
    pub jobs: usize,
    /// Bundles verified.
    pub verified_rounds: usize,
    /// Bundles that failed verification (on the rejected page).
    pub rejected_rounds: usize,
    /// Bundles whose own checks came from the verdict cache (not verified again).
    pub cached_verdicts: usize,
    /// Bundles the verifier ran on: each at most once a build (the others' own checks
    /// came from the verdict cache, [`OwnChecks`]).
    pub verifier_runs: usize,
    /// Loading the data directory and verifying every bundle, ms.
    pub verify_ms: u64,
    /// Listing, rendering and writing, ms.
    pub render_write_ms: u64,
    /// The transparency log: `served: 4 entries of referee.example/log` or `not served:
    /// <why>`; `None` when the data directory has none.
    pub log: Option<String>,
}

/// Builds the site described by `options`.
///
/// Errors: every [`SiteError`]: the data directory holds a private key, a record or the
/// keyring does not parse, the output directory holds files no site build wrote, an id
/// cannot name a path, a template fails, a file cannot be written.
pub fn build_site(options: &BuildOptions) -> Result<BuildSummary, SiteError> {
    let started = Instant::now();
    let base_url = normalize_base_url(&options.base_url)?;
    let (keyring, keyring_json) = load_keyring(&options.keyring)?;
    // `--clean` verifies every bundle again too.
    let verdicts = if options.clean {
        Verdicts::empty(&options.out)
    } else {
        Verdicts::load(&options.out)?
    };
    let own = OwnChecks::new(&keyring, &keyring_json, &verdicts);
    let archive = load_archive_cached(&DataDir::new(&options.data), &own, options.at)?;
    if let (crate::tlog::LogState::Refused(reason), false) = (&archive.log, options.allow_unlogged)
    {
        return Err(SiteError::LogRefused {
            reason: reason.clone(),
        });
    }
    let verify_ms = elapsed_ms(started);

    let started = Instant::now();
    let docs = LazyDocs::new()?;
    let info = SiteInfo {
        base_url,
        docs: docs.index.nav.clone(),
    };
    let renderer = Renderer::new(info)?;
    let mut summary = write_site(
        &archive,
        &docs,
        &renderer,
        &Target {
            dir: &options.out,
            clean: options.clean,
            at: options.at,
            own: &own,
        },
    )?;
    summary.verify_ms = verify_ms;
    summary.cached_verdicts = verdicts.hits();
    summary.verifier_runs = own.verifier_runs();
    summary.render_write_ms = elapsed_ms(started);
    Ok(summary)
}

/// `url` with a final `/`, or empty.
///
/// Errors: [`SiteError::InvalidOption`] for a URL that is not `http(s)://…` or holds a
/// character that would need escaping in an attribute or XML.
fn normalize_base_url(url: &str) -> Result<String, SiteError> {
    if url.is_empty() {
        return Ok(String::new());
    }
    let refuse = |message: &str| SiteError::InvalidOption {
        field: "--base-url",
        value: receipts::text::escape_untrusted(url).into_owned(),
        message: message.to_owned(),
    };
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return Err(refuse("must start with https:// or http://"));
    }
    if url.chars().any(|c| {
        c.is_whitespace()
            || c.is_control()
            || matches!(c, '"' | '\'' | '<' | '>' | '&' | '\\' | '?' | '#')
    }) {
        return Err(refuse(
            "must be a plain URL without spaces, quotes, <, >, &, \\, ? or #",
        ));
    }
    Ok(if url.ends_with('/') {
        url.to_owned()
    } else {
        format!("{url}/")
    })
}

fn elapsed_ms(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// The docs of `content/`: their index at once ([`crate::docs::index`]), their pages
/// rendered the first time a docs job runs (a build whose docs jobs are all cached
/// renders none).
pub(crate) struct LazyDocs {
    index: DocsIndex,
    rendered: OnceLock<Result<Docs, String>>,
}

impl LazyDocs {
    /// The index of the embedded docs.
    ///
    /// Errors: [`SiteError::Docs`] when a page's front matter or name is refused.
    fn new() -> Result<Self, SiteError> {
        let index = crate::docs::index().map_err(|e| SiteError::Docs {
            message: e.to_string(),
        })?;
        Ok(Self {
            index,
            rendered: OnceLock::new(),
        })
    }

    /// The rendered page written in `dir`.
    ///
    /// Errors: [`SiteError::Docs`] when a page breaks a rule of [`crate::docs`].
    fn page(&self, dir: &SiteDir) -> Result<&DocPage, SiteError> {
        let docs = self
            .rendered
            .get_or_init(|| crate::docs::load().map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|message| SiteError::Docs {
                message: message.clone(),
            })?;
        docs.all()
            .find(|d| &d.dir == dir)
            .ok_or_else(|| SiteError::Docs {
                message: format!("no docs page is written in `{}`", dir.as_str()),
            })
    }
}

/// What a job makes.
enum Kind<'a> {
    Static(&'static str, &'static str),
    Index,
    Campaign(&'a CampaignArchive),
    /// Page `k` (from 1) of the campaign's rounds.
    RoundsPage(&'a CampaignArchive, u64),
    Round(&'a CampaignArchive, usize),
    Entry(&'a CampaignArchive, usize, u32),
    Miner(&'a MinerId),
    /// Page `k` (from 1) of a miner's submissions.
    MinerSubmissions(&'a MinerId, usize),
    Submission(&'a Sha256Hex),
    /// A campaign's submissions: queue, rejections, duplicates.
    CampaignSubmissions(&'a CampaignArchive),
    Rejected,
    Doc(&'a SiteDir),
    Machine,
    /// The sitemap of a part's pages.
    Sitemap(&'a Part<'a>),
}

/// One job: its name in the manifest, its key, its segment (from its name,
/// [`Segment::of_job`]), what it makes.
struct Job<'a> {
    name: String,
    key: Sha256Hex,
    segment: Segment,
    kind: Kind<'a>,
}

impl<'a> Job<'a> {
    fn new(name: String, key: Sha256Hex, kind: Kind<'a>) -> Self {
        Self {
            segment: Segment::of_job(&name),
            name,
            key,
            kind,
        }
    }
}

/// One file a job made.
struct Output {
    path: SitePath,
    bytes: Vec<u8>,
    html: bool,
}

/// A segment of this build other than [`Segment::Site`] ([`crate::segment`]): its key,
/// made from everything its jobs' keys are made from, what its jobs are listed from, and
/// what the sitemap index says of it.
struct Part<'a> {
    segment: Segment,
    key: Sha256Hex,
    source: Source<'a>,
    /// The HTML pages its sitemap lists.
    pages: usize,
    /// When the newest of them changed.
    lastmod: Option<Timestamp>,
}

/// What a [`Part`]'s jobs are listed from.
enum Source<'a> {
    /// Rounds `range` (indices into [`CampaignArchive::rounds`]) of a campaign.
    Rounds(&'a CampaignArchive, std::ops::Range<usize>),
    /// The patches at these positions of the index ([`PatchIndex::patches`]).
    Submissions(&'a PatchIndex<'a>, std::ops::Range<usize>),
}

impl Part<'_> {
    /// The pages its sitemap lists.
    fn sitemap_pages(&self) -> Vec<SitemapPage> {
        match &self.source {
            Source::Rounds(campaign, range) => campaign.rounds[range.clone()]
                .iter()
                .flat_map(|round| {
                    let lastmod = Some(round.ended_at);
                    std::iter::once(SiteDir::round(&campaign.id, round.number))
                        .chain(
                            (round.entries.iter())
                                .map(|e| SiteDir::entry(&campaign.id, round.number, &e.slug)),
                        )
                        .map(move |dir| SitemapPage { dir, lastmod })
                })
                .collect(),
            Source::Submissions(index, positions) => (positions.clone())
                .filter_map(|position| index.patch(position))
                .map(|patch| SitemapPage {
                    dir: SiteDir::submission(patch),
                    lastmod: None,
                })
                .collect(),
        }
    }
}

/// The segments of each campaign's blocks of 100 round numbers (the pages of rounds,
/// [`crate::segment::rounds_of_page`]), with their keys. A block's key covers what its
/// round and entry jobs' keys cover: each round's Statement digest, verification
/// instant and the round its seat was taken in, and the round before the block (the previous link of its first round) and
/// after it (the next link of its last).
fn round_parts<'a>(archive: &'a Archive, global: &GlobalKey) -> Vec<Part<'a>> {
    let mut blocks = Vec::new();
    for campaign in &archive.campaigns {
        let mut start = 0;
        while let Some(first) = campaign.rounds.get(start) {
            let segment = Segment::of_round(&campaign.id, first.number);
            let last = *block_numbers(block_of(first.number)).end();
            let end = start + campaign.rounds[start..].partition_point(|r| r.number <= last);
            blocks.push((campaign, segment, start..end));
            start = end;
        }
    }
    blocks
        .into_par_iter()
        .map(|(campaign, segment, range)| {
            let rounds = &campaign.rounds;
            let mut h = global.job(&format!("segment:{segment}"));
            h.part(
                (range.start.checked_sub(1).and_then(|p| rounds.get(p)))
                    .map_or(&[][..], |p| p.statement_digest.as_str().as_bytes()),
            );
            for round in &rounds[range.clone()] {
                h.part(&round.number.to_le_bytes())
                    .part(round.statement_digest.as_str().as_bytes())
                    .part(round.verified_at.to_string().as_bytes())
                    .part(round.as_of.describe().as_bytes())
                    .part(seated_key(round).as_bytes());
            }
            h.part(&rounds.get(range.end).map_or(0, |r| r.number).to_le_bytes());
            let block = &rounds[range.clone()];
            Part {
                key: h.finish(),
                pages: block.iter().map(|r| 1 + r.entries.len()).sum(),
                lastmod: block.iter().map(|r| r.ended_at).max(),
                source: Source::Rounds(campaign, range),
                segment,
            }
        })
        .collect()
}

/// The segments of the submission pages, the patches by their first byte, with their
/// keys: their fingerprints ([`PatchIndex::fingerprint`], each covering its patch's
/// sha256).
fn submission_parts<'a>(index: &'a PatchIndex<'a>, global: &GlobalKey) -> Vec<Part<'a>> {
    (index.by_first_byte().par_iter())
        .filter_map(|positions| {
            let segment = Segment::of_patch(index.patch(positions.start)?);
            let mut h = global.job(&format!("segment:{segment}"));
            let fingerprints: Vec<u8> = (positions.clone())
                .filter_map(|position| index.fingerprint(position))
                .flatten()
                .copied()
                .collect();
            h.part(&fingerprints);
            Some(Part {
                segment,
                key: h.finish(),
                source: Source::Submissions(index, positions.clone()),
                pages: positions.len(),
                lastmod: None,
            })
        })
        .collect()
}

/// The jobs of `miner`'s page and of its pages of submissions
/// ([`PatchIndex::of_miner`]), with their sitemap entries. A page's key covers the
/// rows it shows, each its campaign and its patch's fingerprint (which covers the
/// patch's sha256, records and seats), and what its links depend on: the miner's page
/// also its registrations and how many submissions and pages there are, a page of
/// submissions whether a page follows it.
fn miner_jobs<'a>(
    archive: &'a Archive,
    index: &PatchIndex<'a>,
    global: &GlobalKey,
    miner: &'a MinerId,
) -> Vec<(Job<'a>, SitemapPage)> {
    let all = index.of_miner(miner);
    let total = all.len();
    let rows_key = |h: &mut KeyHasher, rows: &[MinerPatch]| {
        let mut bytes = Vec::with_capacity(rows.len() * 40);
        for s in rows {
            bytes.extend_from_slice(&(s.campaign as u64).to_le_bytes());
            bytes.extend_from_slice(index.fingerprint(s.position).unwrap_or(&[0; 32]));
        }
        h.part(&bytes);
    };
    let name = format!("miner:{miner}");
    let mut h = global.job(&name);
    for r in pages::miner::registrations(archive, miner) {
        h.part(r.campaign.as_bytes()).part(r.at.as_bytes());
    }
    h.part(&(total as u64).to_le_bytes());
    rows_key(&mut h, &all[pages::miner::shown(total)]);
    let mut jobs = vec![(
        Job::new(name, h.finish(), Kind::Miner(miner)),
        SitemapPage {
            dir: SiteDir::miner(miner),
            lastmod: None,
        },
    )];
    let count = pages::miner::page_count(total);
    for k in 1..=count {
        let name = format!("miner:{miner}:{k}");
        let mut h = global.job(&name);
        h.part(if k < count { b"next" } else { b"last" });
        rows_key(&mut h, &all[pages::miner::of_page(k, total)]);
        jobs.push((
            Job::new(name, h.finish(), Kind::MinerSubmissions(miner, k)),
            SitemapPage {
                dir: SiteDir::miner_submissions(miner, k),
                lastmod: None,
            },
        ));
    }
    jobs
}

/// The jobs of the site, each with its key, and the pages of [`Segment::Site`] for its
/// sitemap: every job of [`Segment::Site`], and those of each part in `parts` whose
/// `listed` flag is set (a part that is not listed is kept whole). Every id that names
/// an output path is validated here (an entry's slug when the archive was loaded,
/// [`crate::archive::RoundListing::of`]), before anything is written.
fn jobs<'a>(
    archive: &'a Archive,
    index: &PatchIndex<'a>,
    docs: &'a LazyDocs,
    global: &GlobalKey,
    parts: &'a [Part<'a>],
    listed: &[bool],
) -> Result<(Vec<Job<'a>>, Vec<SitemapPage>), SiteError> {
    // The files for machines depend on the whole archive and on the segments: they are
    // made on every build (and written only when their bytes changed). First, so that
    // the longest job of a build that adds a round does not run alone at its end.
    let mut jobs = vec![Job::new("machine".to_owned(), always(), Kind::Machine)];
    let mut sitemap = Vec::new();

    for (name, text) in STATIC_FILES {
        let key = global.job(&format!("static:{name}")).finish();
        jobs.push(Job::new(
            format!("static:{name}"),
            key,
            Kind::Static(name, text),
        ));
    }

    // The index and the rejected page are small: keyed by their models' bytes.
    let index_page = pages::index::page(archive)?;
    jobs.push(Job::new(
        "index".to_owned(),
        model_key(global, "index", &index_page)?,
        Kind::Index,
    ));
    let newest = archive
        .campaigns
        .iter()
        .filter_map(|c| c.rounds.last().map(|r| r.ended_at))
        .max();
    sitemap.push(SitemapPage {
        dir: SiteDir::root(),
        lastmod: newest,
    });
    let rejected_page = pages::rejected::page(archive)?;
    jobs.push(Job::new(
        "rejected".to_owned(),
        model_key(global, "rejected", &rejected_page)?,
        Kind::Rejected,
    ));
    sitemap.push(SitemapPage {
        dir: SiteDir::rejected(),
        lastmod: None,
    });

    for campaign in &archive.campaigns {
        let id = &campaign.id;
        let mut h = global.job(&format!("campaign:{id}"));
        h.part(campaign.campaign.digest.as_str().as_bytes());
        for r in &campaign.rounds {
            h.part(r.statement_digest.as_str().as_bytes());
        }
        for b in archive.rejected.iter().filter(|b| &b.campaign == id) {
            h.part(b.number.to_string().as_bytes());
        }
        // Its box names the next round's expected entries: the queue.
        for s in &campaign.submissions {
            h.part(s.file_sha256.as_str().as_bytes());
        }
        jobs.push(Job::new(
            format!("campaign:{id}"),
            h.finish(),
            Kind::Campaign(campaign),
        ));
        sitemap.push(SitemapPage {
            dir: SiteDir::campaign(id),
            lastmod: campaign.rounds.last().map(|r| r.ended_at),
        });
        // Its submissions page reads every record of the campaign.
        let mut h = global.job(&format!("campaign-submissions:{id}"));
        for s in &campaign.submissions {
            h.part(s.file_sha256.as_str().as_bytes());
        }
        jobs.push(Job::new(
            format!("campaign-submissions:{id}"),
            h.finish(),
            Kind::CampaignSubmissions(campaign),
        ));
        sitemap.push(SitemapPage {
            dir: SiteDir::campaign_submissions(id),
            lastmod: None,
        });
        let pages = crate::segment::rounds_page_count(campaign);
        for k in 1..=pages {
            let name = format!("rounds:{id}:{k}");
            let mut h = global.job(&name);
            h.part(campaign.campaign.digest.as_str().as_bytes());
            let rounds = crate::segment::rounds_of_page(campaign, k);
            for r in rounds {
                h.part(r.statement_digest.as_str().as_bytes());
            }
            // Its link to the next page.
            h.part(if k < pages { b"next" } else { b"last" });
            jobs.push(Job::new(name, h.finish(), Kind::RoundsPage(campaign, k)));
            sitemap.push(SitemapPage {
                dir: SiteDir::rounds_page(id, k),
                lastmod: rounds.last().map(|r| r.ended_at),
            });
        }
    }

    // Keyed in parallel: each reads its patches' fingerprints (80,000 at 10,000 rounds).
    let miners: Vec<&MinerId> = index.miners().collect();
    let keyed: Vec<Vec<(Job<'a>, SitemapPage)>> = miners
        .into_par_iter()
        .map(|miner| miner_jobs(archive, index, global, miner))
        .collect();
    for (job, page) in keyed.into_iter().flatten() {
        jobs.push(job);
        sitemap.push(page);
    }

    for dir in &docs.index.dirs {
        let name = format!(
            "doc:{}",
            dir.as_str().trim_end_matches('/').replace('/', ":")
        );
        let mut h = global.job(&name);
        h.part(docs.index.digest.as_str().as_bytes());
        jobs.push(Job::new(name, h.finish(), Kind::Doc(dir)));
        sitemap.push(SitemapPage {
            dir: dir.clone(),
            lastmod: None,
        });
    }

    // The parts whose key changed, listed in parallel.
    let listed_jobs: Vec<Vec<Job<'a>>> = (parts.par_iter().zip(listed))
        .filter(|(_, listed)| **listed)
        .map(|(part, _)| part_jobs(part, global))
        .collect();
    jobs.extend(listed_jobs.into_iter().flatten());
    Ok((jobs, sitemap))
}

/// The jobs of `part`: each round's (its page, then each entry's) or each patch's
/// submission page, then its sitemap.
fn part_jobs<'a>(part: &'a Part<'a>, global: &GlobalKey) -> Vec<Job<'a>> {
    let mut jobs = match &part.source {
        Source::Rounds(campaign, range) => range
            .clone()
            .flat_map(|i| round_jobs(campaign, i, global))
            .collect(),
        Source::Submissions(index, positions) => (positions.clone())
            .filter_map(|position| Some((index.patch(position)?, index.fingerprint(position)?)))
            .map(|(patch, fingerprint)| {
                let name = format!("submission:{patch}");
                let mut h = global.job(&name);
                h.part(fingerprint);
                Job::new(name, h.finish(), Kind::Submission(patch))
            })
            .collect::<Vec<_>>(),
    };
    let name = format!("sitemap:{}", part.segment);
    let mut h = global.job(&name);
    h.part(part.key.as_str().as_bytes());
    jobs.push(Job::new(name, h.finish(), Kind::Sitemap(part)));
    jobs
}

/// What a round page shows of the round its seat was taken in
/// ([`RoundListing::seated`]), for the keys of the page and of its block: a round that
/// stops (or starts) verifying earlier in the campaign can move it.
fn seated_key(round: &RoundListing) -> String {
    round
        .seated
        .map_or(String::new(), |t| format!("{} {}", t.round, t.at))
}

/// The jobs of round `i` of `campaign`: its page, then each entry's.
fn round_jobs<'a>(campaign: &'a CampaignArchive, i: usize, global: &GlobalKey) -> Vec<Job<'a>> {
    let id = &campaign.id;
    let round = &campaign.rounds[i];
    let previous = i.checked_sub(1).and_then(|p| campaign.rounds.get(p));
    let next = campaign.rounds.get(i + 1);
    let mut jobs = Vec::with_capacity(1 + round.entries.len());
    let name = format!("round:{id}:{}", round.number);
    // Formatted once for the round's jobs.
    let verified_at = format!("{} {}", round.verified_at, round.as_of.describe());
    let mut h = global.job(&name);
    h.part(round.statement_digest.as_str().as_bytes())
        .part(verified_at.as_bytes())
        .part(previous.map_or(&[][..], |p| p.statement_digest.as_str().as_bytes()))
        .part(
            next.map_or(String::new(), |n| n.number.to_string())
                .as_bytes(),
        )
        .part(seated_key(round).as_bytes());
    jobs.push(Job::new(name, h.finish(), Kind::Round(campaign, i)));
    for entry in &round.entries {
        let slug: &EntrySlug = &entry.slug;
        let name = format!("entry:{id}:{}:{}", round.number, slug.as_str());
        let mut h = global.job(&name);
        h.part(round.statement_digest.as_str().as_bytes())
            .part(verified_at.as_bytes());
        jobs.push(Job::new(
            name,
            h.finish(),
            Kind::Entry(campaign, i, entry.index),
        ));
    }
    jobs
}

/// The key of a job whose output is a function of `page` alone.
fn model_key<M: Serialize>(
    global: &GlobalKey,
    name: &str,
    page: &PageOut<M>,
) -> Result<Sha256Hex, SiteError> {
    let mut h = global.job(name);
    h.part(page.template.as_bytes());
    h.part(
        &serde_json::to_vec(&page.model).map_err(|e| SiteError::Serialize {
            path: page.dir.page().to_string(),
            message: e.to_string(),
        })?,
    );
    for f in &page.files {
        h.part(f.path.as_str().as_bytes()).part(&f.bytes);
    }
    Ok(h.finish())
}

/// Renders `page` and returns it with the files beside it.
fn emit<M: Serialize>(renderer: &Renderer, page: PageOut<M>) -> Result<Vec<Output>, SiteError> {
    let path = page.dir.page();
    let html = renderer.render(page.template, &path, &page.model)?;
    let mut out = vec![Output {
        path,
        bytes: html.into_bytes(),
        html: true,
    }];
    out.extend(
        page.files
            .into_iter()
            .map(|ExtraFile { path, bytes }| Output {
                path,
                bytes,
                html: false,
            }),
    );
    Ok(out)
}

fn machine_outputs(files: Vec<machine::MachineFile>) -> impl Iterator<Item = Output> {
    files.into_iter().map(|(path, bytes)| Output {
        path,
        bytes,
        html: false,
    })
}

/// What the jobs read.
struct Inputs<'a> {
    archive: &'a Archive,
    index: &'a PatchIndex<'a>,
    docs: &'a LazyDocs,
    renderer: &'a Renderer,
    /// The pages of [`Segment::Site`], for its sitemap.
    sitemap: &'a [SitemapPage],
    /// The other segments, for the sitemap index.
    parts: &'a [Part<'a>],
    /// The bundles' own checks, for [`load_round`].
    own: &'a OwnChecks<'a>,
}

/// Whether `a` and `b` render the same round (its page and its entries' pages): such
/// jobs run one after the other on one thread, sharing the round loaded once.
fn same_round(a: &Job<'_>, b: &Job<'_>) -> bool {
    let round = |job: &Job<'_>| match &job.kind {
        Kind::Round(c, i) | Kind::Entry(c, i, _) => Some((std::ptr::from_ref(*c), *i)),
        _ => None,
    };
    round(a).is_some() && round(a) == round(b)
}

/// Round `i` of `campaign`: the one in `slot` (the round the job before on this thread
/// loaded: every job of a group renders the same round, [`same_round`]), else loaded
/// ([`load_round`]) into it.
///
/// Errors: as [`load_round`].
fn loaded<'s>(
    slot: &'s mut Option<VerifiedRound>,
    campaign: &CampaignArchive,
    i: usize,
    inputs: &Inputs<'_>,
) -> Result<&'s VerifiedRound, SiteError> {
    let round = match slot.take() {
        Some(round) => round,
        None => load_round(&campaign.rounds[i], inputs.own)?,
    };
    Ok(slot.insert(round))
}

/// Runs one job; a round's or an entry's with the round in `slot` ([`loaded`]).
fn run_job(
    job: &Job<'_>,
    inputs: &Inputs<'_>,
    slot: &mut Option<VerifiedRound>,
) -> Result<Vec<Output>, SiteError> {
    let Inputs {
        archive,
        index,
        docs,
        renderer,
        sitemap,
        parts,
        ..
    } = *inputs;
    match &job.kind {
        Kind::Static(name, text) => Ok(vec![Output {
            path: SiteDir::root().file(name)?,
            bytes: text.as_bytes().to_vec(),
            html: false,
        }]),
        Kind::Index => emit(renderer, pages::index::page(archive)?),
        Kind::Rejected => emit(renderer, pages::rejected::page(archive)?),
        Kind::Campaign(c) => emit(renderer, pages::campaign::page(archive, c)?),
        Kind::RoundsPage(c, k) => {
            let mut out = emit(renderer, pages::campaign::rounds_page(c, *k)?)?;
            out.extend(machine_outputs(vec![machine::api_rounds_page(c, *k)?]));
            Ok(out)
        }
        Kind::Round(c, i) => {
            let round = loaded(slot, c, *i, inputs)?;
            let previous = i.checked_sub(1).and_then(|p| c.rounds.get(p));
            let next = c.rounds.get(i + 1).map(|r| r.number);
            let seated = c.rounds.get(*i).and_then(|r| r.seated);
            let mut out = emit(
                renderer,
                pages::round::round_page(&c.id, round, previous, next, seated)?,
            )?;
            out.extend(machine_outputs(machine::round_files(&c.id, round)?.files));
            Ok(out)
        }
        Kind::Entry(c, i, entry) => emit(
            renderer,
            pages::entry::entry_page(&c.id, loaded(slot, c, *i, inputs)?, *entry)?,
        ),
        Kind::Miner(m) => emit(renderer, pages::miner::page(archive, index, m)?),
        Kind::MinerSubmissions(m, k) => emit(
            renderer,
            pages::miner::submissions_page(archive, index, m, *k)?,
        ),
        Kind::Submission(p) => emit(renderer, pages::submission::page(index, p)?),
        Kind::CampaignSubmissions(c) => emit(renderer, pages::submissions::page(c)?),
        Kind::Doc(dir) => {
            let doc = docs.page(dir)?;
            let path = doc.dir.page();
            let html = renderer.render("doc.html", &path, doc)?;
            Ok(vec![Output {
                path,
                bytes: html.into_bytes(),
                html: true,
            }])
        }
        Kind::Machine => {
            let base = &renderer.info().base_url;
            let mut files = machine::site_files(archive, base)?;
            let segments: Vec<SitemapSegment> = std::iter::once(SitemapSegment {
                segment: Segment::Site,
                pages: sitemap.len(),
                lastmod: sitemap.iter().filter_map(|p| p.lastmod).max(),
            })
            .chain(parts.iter().map(|p| SitemapSegment {
                segment: p.segment.clone(),
                pages: p.pages,
                lastmod: p.lastmod,
            }))
            .collect();
            files.extend(machine::sitemap_index(base, &segments)?);
            files.extend(machine::segment_sitemap(base, &Segment::Site, sitemap)?);
            Ok(machine_outputs(files).collect())
        }
        Kind::Sitemap(part) => {
            let base = &renderer.info().base_url;
            let files = machine::segment_sitemap(base, &part.segment, &part.sitemap_pages())?;
            Ok(machine_outputs(files).collect())
        }
    }
}

/// Runs `job` (with the round in `slot`, [`run_job`]) unless `previous` holds its key
/// (counted in `cached`), and writes its files under `out`, refusing to overwrite a
/// file no build of ours wrote (one `owners` does not list).
fn run_one<'m>(
    job: &Job<'_>,
    inputs: &Inputs<'_>,
    previous: &'m Manifest,
    owners: &FileOwners<'_>,
    out: &Path,
    cached: &AtomicUsize,
    slot: &mut Option<VerifiedRound>,
) -> Result<Done<'m>, Box<Failed<'m>>> {
    if let Some(record) = previous.get(&job.name)
        && record.key == &job.key
        && job.key != always()
    {
        cached.fetch_add(1, Ordering::Relaxed);
        let (mut files, mut html) = (0, 0);
        for f in record.files() {
            files += 1;
            html += usize::from(f.ends_with(".html"));
        }
        return Ok(Done {
            name: job.name.clone(),
            record: JobRecord::Kept(record),
            html_pages: html,
            html_written: 0,
            other_written: 0,
            unchanged: files,
        });
    }
    let mut done = Done {
        name: job.name.clone(),
        record: JobRecord::Made {
            key: job.key,
            files: MadeFiles::default(),
        },
        html_pages: 0,
        html_written: 0,
        other_written: 0,
        unchanged: 0,
    };
    let outputs = match run_job(job, inputs, slot) {
        Ok(outputs) => outputs,
        Err(error) => return Err(Box::new(Failed { done, error })),
    };
    let mut files = Vec::with_capacity(outputs.len());
    let write = || -> Result<(), SiteError> {
        for o in outputs {
            // What makes a kept segment safe to leave unread: no other job writes there.
            if !job.segment.holds(o.path.as_str()) {
                return Err(SiteError::OutsideSegment {
                    job: job.name.clone(),
                    path: o.path.to_string(),
                    segment: job.segment.to_string(),
                });
            }
            done.html_pages += usize::from(o.html);
            let path = o.path.under(out);
            match write_if_changed(out, &path, &o.bytes, owners.contains(o.path.as_str()))? {
                true if o.html => done.html_written += 1,
                true => done.other_written += 1,
                false => done.unchanged += 1,
            }
            files.push(o.path);
        }
        Ok(())
    };
    let written = write();
    files.sort();
    done.record = JobRecord::Made {
        key: job.key,
        files: MadeFiles::new(&files),
    };
    match written {
        Ok(()) => Ok(done),
        Err(error) => Err(Box::new(Failed { done, error })),
    }
}

/// A job that failed, and what it wrote before.
struct Failed<'m> {
    done: Done<'m>,
    error: SiteError,
}

/// What one job did.
struct Done<'m> {
    name: String,
    record: JobRecord<'m>,
    html_pages: usize,
    html_written: usize,
    other_written: usize,
    unchanged: usize,
}

/// Where and how [`write_site`] writes.
#[derive(Clone, Copy)]
pub(crate) struct Target<'a> {
    /// The output directory.
    pub dir: &'a Path,
    /// Remove the previous build's files first.
    pub clean: bool,
    /// The `--at` instant (part of every key).
    pub at: Option<Timestamp>,
    /// The bundles' own checks, found when the archive was loaded: read back when a
    /// round's pages are rendered ([`load_round`]), and its verdicts saved beside the
    /// manifest.
    pub own: &'a OwnChecks<'a>,
}

/// Lists, renders and writes the site of `archive` into `target.dir`, in the steps of an
/// incremental build ([`crate::incremental`]): load the previous build's manifest while
/// this build's segments are keyed; plan ([`incremental::plan`]: a part whose key the
/// manifest holds is kept whole, its jobs not listed and its manifest file not read);
/// render and write the listed jobs, each unless the manifest holds its key
/// ([`run_jobs`]); commit ([`incremental::Plan::commit`]: the previous build's files the
/// site no longer has removed, the verdicts and the manifest written).
///
/// Errors: as [`build_site`].
pub(crate) fn write_site(
    archive: &Archive,
    docs: &LazyDocs,
    renderer: &Renderer,
    target: &Target<'_>,
) -> Result<BuildSummary, SiteError> {
    let Target {
        dir: out,
        clean,
        at,
        own,
    } = *target;
    let global = global_key(archive, renderer, at)?;

    // Load. What runs side by side is independent: the previous manifest is read and
    // the rounds' segments keyed while the archive is indexed.
    let ((previous, mut parts), index) = rayon::join(
        || rayon::join(|| Manifest::load(out), || round_parts(archive, &global)),
        || PatchIndex::new(archive),
    );
    parts.extend(submission_parts(&index, &global));
    let parts = parts;

    // Plan; the files' owners are found while the jobs are listed.
    let keys = parts.iter().map(|p| (&p.segment, &p.key));
    let plan = incremental::plan(out, clean, previous?, keys)?;
    let (owners, listed_jobs) = rayon::join(
        || plan.owners(),
        || jobs(archive, &index, docs, &global, &parts, plan.listed()),
    );
    let (jobs, sitemap) = listed_jobs?;
    refuse_names_twice(&jobs)?;

    // Render and write each job's files.
    let inputs = Inputs {
        archive,
        index: &index,
        docs,
        renderer,
        sitemap: &sitemap,
        parts: &parts,
        own,
    };
    let cached = AtomicUsize::new(0);
    let (done, failed) = run_jobs(&jobs, &inputs, plan.previous(), &owners, out, &cached);
    // Commit: a failed build keeps every file written listed, then fails.
    if !failed.is_empty() {
        plan.commit_failed(
            done.iter().map(|d| (d.name.as_str(), &d.record)),
            failed
                .iter()
                .map(|f| (f.done.name.as_str(), &f.done.record)),
            own.verdicts(),
        )?;
        if let Some(first) = failed.into_iter().next() {
            return Err(first.error);
        }
    }

    let mut summary = BuildSummary {
        jobs: jobs.len(),
        jobs_run: jobs.len() - cached.into_inner(),
        verified_rounds: archive.campaigns.iter().map(|c| c.rounds.len()).sum(),
        rejected_rounds: archive.rejected.len(),
        removed: plan.removed(),
        log: log_summary(&archive.log),
        ..BuildSummary::default()
    };
    for d in &done {
        summary.html_pages += d.html_pages;
        summary.html_written += d.html_written;
        summary.other_written += d.other_written;
        summary.unchanged += d.unchanged;
    }
    // The parts kept whole: their jobs, pages and files as the manifest counts them.
    for record in plan.kept_whole() {
        summary.jobs += record.jobs;
        summary.html_pages += record.html;
        summary.unchanged += record.files;
    }
    // Commit.
    let records = done.into_iter().map(|d| (d.name, d.record)).collect();
    summary.removed += plan.commit(records, &owners, own.verdicts())?;
    Ok(summary)
}

/// The key part every job of a build of `archive` with `renderer` shares
/// ([`GlobalKey::new`]), `at` the `--at` instant.
///
/// Errors: [`SiteError::Serialize`] when the docs navigation does not serialise.
fn global_key(
    archive: &Archive,
    renderer: &Renderer,
    at: Option<Timestamp>,
) -> Result<GlobalKey, SiteError> {
    let nav = serde_json::to_vec(&renderer.info().docs).map_err(|e| SiteError::Serialize {
        path: MANIFEST_FILE.to_owned(),
        message: e.to_string(),
    })?;
    Ok(GlobalKey::new(
        &templates_digest(),
        &archive.keyring_json,
        &renderer.info().base_url,
        &nav,
        &at.map(|t| t.to_string()).unwrap_or_default(),
    ))
}

/// Refuses two jobs of one name.
///
/// Errors: [`SiteError::DuplicateOutput`] naming it.
fn refuse_names_twice(jobs: &[Job<'_>]) -> Result<(), SiteError> {
    let mut names = FxHashSet::default();
    for job in jobs {
        if !names.insert(job.name.as_str()) {
            return Err(SiteError::DuplicateOutput {
                path: job.name.clone(),
            });
        }
    }
    Ok(())
}

/// Runs every job of `jobs` in parallel ([`run_one`]): what each job that succeeded
/// did, and each that failed. A round's page and its entries' pages are one group, run
/// on one thread: the round is loaded again from its bundle once for them (when one of
/// them runs) and dropped after the last, so no more rounds are held at once than there
/// are threads.
fn run_jobs<'m>(
    jobs: &[Job<'_>],
    inputs: &Inputs<'_>,
    previous: &'m Manifest,
    owners: &FileOwners<'_>,
    out: &Path,
    cached: &AtomicUsize,
) -> (Vec<Done<'m>>, Vec<Box<Failed<'m>>>) {
    let groups: Vec<&[Job<'_>]> = jobs.chunk_by(same_round).collect();
    let results: Vec<Result<Done<'_>, Box<Failed<'_>>>> = groups
        .par_iter()
        .flat_map_iter(|group| {
            let mut slot: Option<VerifiedRound> = None;
            group
                .iter()
                .map(|job| run_one(job, inputs, previous, owners, out, cached, &mut slot))
                .collect::<Vec<_>>()
        })
        .collect();
    let mut done = Vec::with_capacity(results.len());
    let mut failed = Vec::new();
    for result in results {
        match result {
            Ok(d) => done.push(d),
            Err(f) => failed.push(f),
        }
    }
    (done, failed)
}

/// What a build says of the data directory's transparency log
/// ([`BuildSummary::log`]).
fn log_summary(log: &crate::tlog::LogState) -> Option<String> {
    match log {
        crate::tlog::LogState::Absent => None,
        crate::tlog::LogState::Served(log) => Some(format!(
            "served under log/: {} entries of {}",
            log.size, log.origin
        )),
        crate::tlog::LogState::Refused(why) => Some(format!("not served: {why}")),
    }
}

/// Writes `bytes` to `path` (parents created) unless the file already holds exactly
/// them; whether it wrote. `ours`: whether the previous build's manifest lists `path`;
/// anything there that it does not list (a file, a symlink, a FIFO) is neither
/// overwritten nor read, followed or waited on.
///
/// The file is written to a temp file beside it (`.tmpXXXXXX`, [`FILE_MODE`]) and renamed
/// over `path`, so a reader (a web server, a mirror's rsync) sees the old page or the new
/// one, never a torn one; unlike [`write_atomic`](receipts::fsutil::write_atomic) nothing
/// is fsynced here. A site is rebuilt from the data directory at will, and one fsync per
/// file costs more than the rest of the write (11 % of a cold build on tmpfs, 94 s of 200
/// at 1,000 rounds on disk): the build makes everything durable once, with
/// [`sync_output`], before it writes the manifest that names these files, so a crash
/// never leaves a manifest that vouches for a file whose bytes did not reach the disk.
///
/// Errors: [`SiteError::NotOurOutput`] naming `out` and `path` for something not ours
/// there; [`SiteError::Io`] naming the file or directory.
fn write_if_changed(out: &Path, path: &Path, bytes: &[u8], ours: bool) -> Result<bool, SiteError> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let not_ours = || SiteError::NotOurOutput {
        dir: out.to_owned(),
        file: path.to_owned(),
    };
    // One open says what is there (a cold build creates 82,000 files at 1,000 rounds, so
    // each lookup saved counts): nothing, a symlink (never followed), or a file to compare
    // (non-blocking: a FIFO put there must not hang the build).
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    match opened {
        Ok(mut file) => {
            if !ours && !file.metadata().is_ok_and(|m| m.is_dir()) {
                return Err(not_ours());
            }
            let mut existing = Vec::with_capacity(bytes.len());
            file.read_to_end(&mut existing)
                .map_err(IoError::at("reading", path))?;
            if existing == bytes {
                return Ok(false);
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        // A symlink: ours is replaced by a file (the rename below), another's refused.
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) && ours => {}
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(not_ours()),
        Err(source) => return Err(IoError::at("reading", path)(source).into()),
    }
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let temp_file = || {
        use std::os::unix::fs::PermissionsExt;
        tempfile::Builder::new()
            .prefix(receipts::fsutil::TEMP_PREFIX)
            .permissions(std::fs::Permissions::from_mode(FILE_MODE))
            .tempfile_in(dir)
    };
    // The directory is made only when the temp file finds it missing.
    let tmp = match temp_file() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).map_err(IoError::at("creating", dir))?;
            temp_file()
        }
        other => other,
    };
    let write = || -> std::io::Result<()> {
        use std::io::Write;
        let mut tmp = tmp?;
        tmp.as_file_mut().write_all(bytes)?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    };
    write().map_err(IoError::at("writing", path))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls() {
        assert_eq!(normalize_base_url("").unwrap(), "");
        assert_eq!(
            normalize_base_url("https://x.org/r").unwrap(),
            "https://x.org/r/"
        );
        assert_eq!(
            normalize_base_url("https://x.org/").unwrap(),
            "https://x.org/"
        );
        for bad in [
            "ftp://x",
            "x.org",
            "https://x.org/\"><script>",
            "https://x y",
            "https://x/?q",
        ] {
            assert!(normalize_base_url(bad).is_err(), "{bad}");
        }
    }
}
