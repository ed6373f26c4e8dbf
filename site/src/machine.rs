//! The site's files for machines, as pure functions over the [`crate::archive`] types:
//! each returns `(path relative to the site root, bytes)` pairs that the build writes as
//! they are. Nothing here reads a clock; identical input gives identical bytes.
//!
//! - `api/index.json` ([`api_index`]): every campaign, its rounds and current leader, and
//!   the rejected bundles (its shape is documented on [`api_index`] and in
//!   `content/site.md`);
//! - per round ([`round_files`]): the receipt and the round-opened statement as stored,
//!   under `receipts/<campaign>/<n>/` and beside the round page, and the whole bundle as
//!   a deterministic tarball `c/<campaign>/r/<n>/bundle.tar` ([`bundle_tar`]);
//! - `keys/keyring.json` ([`keyring_file`]): the trusted keyring's bytes as read;
//! - `schemas/<kind>/<version>.schema.json` ([`schema_files`]): the predicates' JSON
//!   Schemas, every round predicate version this build verifies and the rerun predicate;
//! - `c/<campaign>/feed.xml` ([`campaign_feed`]): an Atom 1.0 feed of the campaign's
//!   rounds;
//! - `sitemap.xml`, an index of each segment's `sitemap-<segment>.xml`
//!   ([`sitemap_index`], [`segment_sitemap`]), and `robots.txt` ([`robots_txt`]).
//!
//! The base URL is the one the pages get (`SiteInfo::base_url`): ending in `/`, or empty
//! when none was given. Without it the feed's links are relative to the feed, and no
//! sitemap is written: the sitemap protocol requires absolute URLs.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::Path;

use receipts::bundle::{self, ENVELOPE_FILE, EntryKind, MAX_ENVELOPE_BYTES};
use receipts::fsutil::{IoError, read_limited};
use receipts::model::{
    CampaignId, Leader, MinerId, RERUN_PREDICATE_TYPE, RERUN_PREDICATE_TYPE_V1,
    ROUND_PREDICATE_TYPE, ROUND_PREDICATE_TYPE_V1, ROUND_PREDICATE_TYPE_V2,
    ROUND_PREDICATE_TYPE_V3, ROUND_PREDICATE_TYPE_V4, ROUND_PREDICATE_TYPE_V5,
    ROUND_PREDICATE_TYPE_V6, ROUND_PREDICATE_TYPE_V7, ROUND_PREDICATE_TYPE_V8, Sha256Hex,
    Timestamp,
};
use receipts::text::escape_untrusted;
use serde::Serialize;
use verifier::CheckName;
use verifier::view::{CurrentLeader, RoundRow, format_leader, format_score_percent};

use crate::archive::{Archive, CampaignArchive, RejectedBundle, RoundListing, VerifiedRound};
use crate::error::SiteError;
use crate::paths::{SiteDir, SitePath};
use crate::segment::{Segment, block_numbers, rounds_of_page, rounds_page_count};

/// A file for machines: where it goes, relative to the site root, and its bytes.
pub type MachineFile = (SitePath, Vec<u8>);

/// Version of the `api/index.json` shape; bumped when a field is renamed, removed or
/// changes meaning (adding a field does not bump it). 2: a campaign's `rounds` are its
/// newest [`API_ROUNDS`], every round is on the pages `roundPages` lists.
pub const API_VERSION: u32 = 2;

/// Rounds of a campaign `api/index.json` lists (the newest), and entries of its feed:
/// the whole history is on the pages of rounds (`api/c/<campaign>/rounds/<k>.json`), so
/// that these files do not grow with every round and get written again whole with each
/// (at 10,000 rounds they were 8.4 MB and 4.1 MB).
pub const API_ROUNDS: usize = 100;

/// The authority and date of the `tag:` URIs (RFC 4151) that identify feeds and their
/// entries: independent of where the site is published, so a mirror or a new base URL
/// announces no round twice.
const TAG_PREFIX: &str = "tag:referee.dev,2026:";

/// Most URLs one sitemap file may list (sitemaps.org protocol); a segment with more has
/// its sitemap split into parts ([`segment_sitemap`]).
const SITEMAP_MAX_URLS: usize = 50_000;

/// The committed schemas of the round predicate versions before the current one, as
/// they were published (`receipts/schema/`). The current version's comes from
/// [`receipts::schema::round_schema_json`].
const PUBLISHED_ROUND_SCHEMAS: [(&str, &str); 8] = [
    (
        ROUND_PREDICATE_TYPE_V1,
        include_str!("../../receipts/schema/round-v1.schema.json"),
    ),
    (
        ROUND_PREDICATE_TYPE_V2,
        include_str!("../../receipts/schema/round-v2.schema.json"),
    ),
    (
        ROUND_PREDICATE_TYPE_V3,
        include_str!("../../receipts/schema/round-v3.schema.json"),
    ),
    (
        ROUND_PREDICATE_TYPE_V4,
        include_str!("../../receipts/schema/round-v4.schema.json"),
    ),
    (
        ROUND_PREDICATE_TYPE_V5,
        include_str!("../../receipts/schema/round-v5.schema.json"),
    ),
    (
        ROUND_PREDICATE_TYPE_V6,
        include_str!("../../receipts/schema/round-v6.schema.json"),
    ),
    (
        ROUND_PREDICATE_TYPE_V7,
        include_str!("../../receipts/schema/round-v7.schema.json"),
    ),
    (
        ROUND_PREDICATE_TYPE_V8,
        include_str!("../../receipts/schema/round-v8.schema.json"),
    ),
];

// ---------------------------------------------------------------------------------------
// api/index.json

/// The top level of `api/index.json`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ApiIndex<'a> {
    version: u32,
    keyring: SitePath,
    schemas: Vec<ApiSchema>,
    campaigns: Vec<ApiCampaign<'a>>,
    rejected: Vec<ApiRejected<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ApiSchema {
    predicate_type: &'static str,
    path: SitePath,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ApiCampaign<'a> {
    id: &'a CampaignId,
    title: String,
    digest: &'a Sha256Hex,
    page: SiteDir,
    feed: SitePath,
    leader: ApiLeader,
    rounds_total: usize,
    round_pages: Vec<ApiRoundsPageLink>,
    rounds: Vec<ApiRound<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ApiRoundsPageLink {
    first: u64,
    last: u64,
    path: SitePath,
}

/// `api/c/<campaign>/rounds/<k>.json`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ApiRoundsPage<'a> {
    version: u32,
    campaign: &'a CampaignId,
    first: u64,
    last: u64,
    rounds: Vec<ApiRound<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ApiLeader {
    seat: Option<ApiSeat>,
    as_of_round: Option<u64>,
    decided_in_round: Option<u64>,
    skipped_rounds: Vec<u64>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ApiSeat {
    miner: MinerId,
    patch: Sha256Hex,
}

impl ApiSeat {
    fn of(leader: Option<&Leader>) -> Option<Self> {
        leader.map(|l| Self {
            miner: l.miner.clone(),
            patch: l.patch,
        })
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ApiRound<'a> {
    round: u64,
    status: &'static str,
    predicate_type: Option<&'a str>,
    statement_digest: &'a Sha256Hex,
    started_at: Timestamp,
    ended_at: Timestamp,
    leader_before: Option<ApiSeat>,
    leader_after: Option<ApiSeat>,
    leader_changed: bool,
    top_score_ppm: Option<i64>,
    entries: ApiCounts,
    page: SiteDir,
    receipt: SitePath,
    round_opened: SitePath,
    bundle: SitePath,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ApiCounts {
    scored: usize,
    disqualified: usize,
    infra_failed: usize,
    total: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ApiRejected<'a> {
    campaign: &'a CampaignId,
    round: u64,
    recorded_round: Option<u64>,
    predicate_type: Option<&'a str>,
    statement_digest: Option<&'a Sha256Hex>,
    failed_checks: Vec<ApiFailedCheck<'a>>,
    page: SiteDir,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ApiFailedCheck<'a> {
    check: CheckName,
    target: Option<&'a str>,
    reason: Option<String>,
}

/// `api/index.json`: the archive for machines, pretty-printed JSON ending in a newline.
/// Field names are camelCase and stable (renaming or removing one bumps
/// [`API_VERSION`]); every path is relative to the site root; arrays are sorted
/// (campaigns by id, rounds by number, rejected bundles by campaign then round).
/// Strings from a campaign or a bundle (titles, check reasons) are escaped with
/// [`escape_untrusted`] (controls, bidi overrides such as U+202E and invisible code
/// points as `\u{202e}`), as `campaigns.json` and the pages show them, then
/// JSON-escaped. Shape:
///
/// ```text
/// { "version": 2,
///   "keyring": "keys/keyring.json",
///   "schemas": [ { "predicateType": "https://referee.dev/predicates/round/v1",
///                  "path": "schemas/round/v1.schema.json" }, … ],
///   "campaigns": [ {
///     "id", "title", "digest" (sha256 of the frozen campaign),
///     "page": "c/<id>/", "feed": "c/<id>/feed.xml",
///     "leader": { "seat": { "miner", "patch" } | null (the baseline),
///                 "asOfRound", "decidedInRound", "skippedRounds": [n, …] },
///     "roundsTotal": verified rounds,
///     "roundPages": [ { "first", "last", "path": "api/c/<id>/rounds/<k>.json" } ],
///     "rounds" (the newest 100): [ { "round", "status" (complete | infra_failed | inconclusive),
///                   "predicateType", "statementDigest", "startedAt", "endedAt",
///                   "leaderBefore", "leaderAfter" (seat or null), "leaderChanged",
///                   "topScorePpm" (or null), "entries": { "scored", "disqualified",
///                   "infraFailed", "total" }, "page": "c/<id>/r/<n>/",
///                   "receipt": "receipts/<id>/<n>/receipt.dsse.json",
///                   "roundOpened": "receipts/<id>/<n>/round-opened.dsse.json",
///                   "bundle": "c/<id>/r/<n>/bundle.tar" } ] } ],
///   "rejected": [ { "campaign", "round" (its directory's), "recordedRound" (the
///                   round its record states when that differs, else null),
///                   "predicateType", "statementDigest",
///                   "failedChecks": [ { "check", "target", "reason" } ],
///                   "page": "rejected/" } ] }
/// ```
///
/// Errors: [`SiteError::Serialize`] (never for these plain types), [`SiteError::InvalidId`]
/// for a fixed path of ours that breaks the path rules (a bug).
pub fn api_index(archive: &Archive) -> Result<MachineFile, SiteError> {
    let path = SiteDir::fixed("api")?.file("index.json")?;
    let mut campaigns: Vec<&CampaignArchive> = archive.campaigns.iter().collect();
    campaigns.sort_by(|a, b| a.id.cmp(&b.id));
    let mut rejected: Vec<&RejectedBundle> = archive.rejected.iter().collect();
    rejected.sort_by(|a, b| (&a.campaign, a.number).cmp(&(&b.campaign, b.number)));
    let index = ApiIndex {
        version: API_VERSION,
        keyring: keyring_path()?,
        schemas: published_schemas()
            .into_iter()
            .map(|(predicate_type, _)| {
                Ok(ApiSchema {
                    predicate_type,
                    path: schema_path(predicate_type)?,
                })
            })
            .collect::<Result<_, SiteError>>()?,
        campaigns: campaigns
            .into_iter()
            .map(|c| api_campaign(c, &archive.rejected))
            .collect::<Result<_, _>>()?,
        rejected: rejected.into_iter().map(api_rejected).collect(),
    };
    let bytes = json_bytes(&path, &index)?;
    Ok((path, bytes))
}

fn api_campaign<'a>(
    campaign: &'a CampaignArchive,
    rejected: &[RejectedBundle],
) -> Result<ApiCampaign<'a>, SiteError> {
    let leader = current_leader(campaign, rejected);
    // Sorted by number when loaded.
    let newest = campaign.rounds.len().saturating_sub(API_ROUNDS);
    let pages = rounds_page_count(campaign);
    Ok(ApiCampaign {
        id: &campaign.id,
        title: escape_untrusted(&campaign.campaign.campaign.title).into_owned(),
        digest: &campaign.campaign.digest,
        page: SiteDir::campaign(&campaign.id),
        feed: feed_path(&campaign.id)?,
        leader: ApiLeader {
            seat: ApiSeat::of(leader.leader.as_ref()),
            as_of_round: leader.as_of_round,
            decided_in_round: leader.decided_in_round,
            skipped_rounds: leader.skipped_rounds,
        },
        rounds_total: campaign.rounds.len(),
        round_pages: (1..=pages)
            .map(|k| {
                let numbers = block_numbers(k);
                Ok(ApiRoundsPageLink {
                    first: *numbers.start(),
                    last: *numbers.end(),
                    path: api_rounds_page_path(&campaign.id, k)?,
                })
            })
            .collect::<Result<_, SiteError>>()?,
        rounds: campaign.rounds[newest..]
            .iter()
            .map(|r| api_round(&campaign.id, r))
            .collect::<Result<_, _>>()?,
    })
}

/// `api/c/<campaign>/rounds/<k>.json`.
///
/// Errors: [`SiteError::InvalidId`] never for a validated campaign id (a bug otherwise).
pub fn api_rounds_page_path(campaign: &CampaignId, k: u64) -> Result<SitePath, SiteError> {
    SiteDir::fixed("api")?
        .child("c")?
        .child(campaign.as_str())?
        .child("rounds")?
        .file(&format!("{k}.json"))
}

/// `api/c/<campaign>/rounds/<k>.json`: the verified rounds of page `k` (from 1) of
/// `campaign`, numbered `(k − 1) × 100 + 1` to `k × 100`, as [`api_index`] lists a round,
/// pretty-printed JSON ending in a newline: `{ "version", "campaign", "first", "last",
/// "rounds": [ … ] }`, rounds by number. A page keeps its bytes once its round numbers
/// are sealed.
///
/// Errors: as [`api_index`].
pub fn api_rounds_page(campaign: &CampaignArchive, k: u64) -> Result<MachineFile, SiteError> {
    let path = api_rounds_page_path(&campaign.id, k)?;
    let numbers = block_numbers(k);
    let page = ApiRoundsPage {
        version: API_VERSION,
        campaign: &campaign.id,
        first: *numbers.start(),
        last: *numbers.end(),
        rounds: rounds_of_page(campaign, k)
            .iter()
            .map(|r| api_round(&campaign.id, r))
            .collect::<Result<_, _>>()?,
    };
    let bytes = json_bytes(&path, &page)?;
    Ok((path, bytes))
}

fn api_round<'a>(
    campaign: &CampaignId,
    round: &'a RoundListing,
) -> Result<ApiRound<'a>, SiteError> {
    let counts = round.headline.counts;
    let receipts = receipts_dir(campaign, round.number)?;
    Ok(ApiRound {
        round: round.number,
        status: round.status.as_str(),
        predicate_type: round.predicate_type.as_deref(),
        statement_digest: &round.statement_digest,
        started_at: round.started_at,
        ended_at: round.ended_at,
        leader_before: ApiSeat::of(round.leader_before.as_ref()),
        leader_after: ApiSeat::of(round.leader_after.as_ref()),
        leader_changed: round.changed,
        top_score_ppm: round.headline.top_score_ppm,
        entries: ApiCounts {
            scored: counts.scored,
            disqualified: counts.disqualified,
            infra_failed: counts.infra_failed,
            total: counts.total,
        },
        page: SiteDir::round(campaign, round.number),
        receipt: receipts.file(ENVELOPE_FILE)?,
        round_opened: receipts.file(ROUND_OPENED_FILE)?,
        bundle: bundle_tar_path(campaign, round.number)?,
    })
}

fn api_rejected(bundle: &RejectedBundle) -> ApiRejected<'_> {
    ApiRejected {
        campaign: &bundle.campaign,
        round: bundle.number,
        recorded_round: bundle.recorded_round,
        predicate_type: bundle.report.predicate_type.as_deref(),
        statement_digest: bundle.report.statement_digest.as_ref(),
        failed_checks: bundle
            .report
            .failures()
            .map(|c| ApiFailedCheck {
                check: c.name,
                target: c.target.as_deref(),
                reason: c
                    .reason
                    .as_ref()
                    .map(|r| escape_untrusted(&r.to_string()).into_owned()),
            })
            .collect(),
        page: SiteDir::rejected(),
    }
}

/// Who holds `campaign`'s seat: [`CurrentLeader::of`] over its verified rounds and the
/// bundles of it that were `rejected` (any campaign's may be passed; others are
/// ignored). A rejected round after the last verified one is in `skipped_rounds`.
pub fn current_leader(campaign: &CampaignArchive, rejected: &[RejectedBundle]) -> CurrentLeader {
    let verified = campaign.rounds.iter().map(|r| RoundRow {
        round: r.number,
        bundle: r.dir.clone(),
        verified: true,
        failed_checks: 0,
        error: None,
        headline: Some(r.headline.clone()),
    });
    let failed = rejected
        .iter()
        .filter(|b| b.campaign == campaign.id)
        .map(|b| RoundRow {
            round: b.number,
            bundle: b.dir.clone(),
            verified: false,
            failed_checks: b.report.failures().count(),
            error: None,
            headline: None,
        });
    let rows: Vec<RoundRow> = verified.chain(failed).collect();
    CurrentLeader::of(&rows)
}

/// `value` as pretty JSON with a trailing newline.
fn json_bytes<T: Serialize>(path: &SitePath, value: &T) -> Result<Vec<u8>, SiteError> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| SiteError::Serialize {
        path: path.to_string(),
        message: e.to_string(),
    })?;
    bytes.push(b'\n');
    Ok(bytes)
}

// ---------------------------------------------------------------------------------------
// Receipts and the bundle tarball

/// The name the site publishes a round's round-opened statement under, whatever its
/// bundle-relative path (`roundOpened` in the receipt).
pub const ROUND_OPENED_FILE: &str = "round-opened.dsse.json";

/// `receipts/<campaign>/<n>/`.
fn receipts_dir(campaign: &CampaignId, n: u64) -> Result<SiteDir, SiteError> {
    SiteDir::fixed("receipts")?
        .child(campaign.as_str())?
        .child(&n.to_string())
}

/// `c/<campaign>/r/<n>/bundle.tar`, the round's bundle as a tarball.
///
/// Errors: [`SiteError::InvalidId`] never for a validated campaign id (a bug otherwise).
pub fn bundle_tar_path(campaign: &CampaignId, n: u64) -> Result<SitePath, SiteError> {
    SiteDir::round(campaign, n).file("bundle.tar")
}

/// The directory `bundle.tar` extracts into: `<campaign>-round-<n>` (so `tar -xf
/// bundle.tar && referee verify <campaign>-round-<n> --keyring keyring.json` checks it).
pub fn bundle_dir_name(campaign: &CampaignId, n: u64) -> String {
    format!("{campaign}-round-{n}")
}

/// A round's files for machines, and what its tarball left out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoundFiles {
    /// `receipts/<campaign>/<n>/receipt.dsse.json` and `round-opened.dsse.json` (bytes as
    /// stored in the bundle), `c/<campaign>/r/<n>/receipt.dsse.json` (the same receipt
    /// beside the round page) and `c/<campaign>/r/<n>/bundle.tar`.
    pub files: Vec<MachineFile>,
    /// Entries of the bundle directory the tarball does not hold (symlinks, special
    /// files, names that are not UTF-8), by bundle-relative name: report them.
    pub skipped: Vec<SkippedEntry>,
}

/// An entry of a bundle directory left out of its tarball.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedEntry {
    /// Its bundle-relative path (lossy when not UTF-8).
    pub name: String,
    /// What it is: `symlink`, `special file`, `non-UTF-8 name`.
    pub kind: &'static str,
}

/// The files [`RoundFiles`] lists for `round` of `campaign`, read from its bundle
/// directory. The round-opened statement is read from the receipt's `roundOpened` path
/// after checking it is a plain bundle-relative name.
///
/// Errors: [`SiteError::Io`] naming the file that cannot be read; [`SiteError::Bundle`]
/// when the bundle directory cannot be listed; [`SiteError::InvalidId`] for a
/// `roundOpened` path that is not a bundle-relative name.
pub fn round_files(campaign: &CampaignId, round: &VerifiedRound) -> Result<RoundFiles, SiteError> {
    let opened_name = &round.record.round_opened;
    bundle::check_subject_name(opened_name).map_err(|rule| SiteError::InvalidId {
        field: "roundOpened",
        value: escape_untrusted(opened_name).into_owned(),
        rule,
    })?;
    let receipt = read_file(&round.dir.join(ENVELOPE_FILE))?;
    let opened = read_file(&round.dir.join(opened_name))?;
    let receipts = receipts_dir(campaign, round.number)?;
    let proof = receipts::tlog::proof::round_proof_path(&round.dir);
    let tar = bundle_tar(
        &round.dir,
        &bundle_dir_name(campaign, round.number),
        proof.is_file().then_some(proof.as_path()),
    )?;
    Ok(RoundFiles {
        files: vec![
            (receipts.file(ENVELOPE_FILE)?, receipt.clone()),
            (receipts.file(ROUND_OPENED_FILE)?, opened),
            (
                SiteDir::round(campaign, round.number).file(ENVELOPE_FILE)?,
                receipt,
            ),
            (bundle_tar_path(campaign, round.number)?, tar.bytes),
        ],
        skipped: tar.skipped,
    })
}

/// A bundle directory as a tarball.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BundleTar {
    /// The archive's bytes.
    pub bytes: Vec<u8>,
    /// What it left out.
    pub skipped: Vec<SkippedEntry>,
}

/// The bundle directory `dir` as a deterministic ustar archive whose every path is under
/// `root/`: `receipt.dsse.json` and every regular file [`bundle::list_files`] finds, each
/// with its parent directories, sorted by path (a directory before what it holds);
/// mtime 0, uid and gid 0, no user or group names, mode 0644 for files and 0755 for
/// directories whatever they are on disk. Symlinks (never followed), special files and
/// names that are not UTF-8 are left out and listed in [`BundleTar::skipped`]; empty
/// directories are left out (no subject lives there). A path too long for ustar's 255
/// bytes is stored with a GNU long-name record, which `tar -x` reads. `proof`, the
/// round's tlog-proofs (`rounds/<n>.proof`, beside the bundle and no subject of it), is
/// stored last as `<root>.proof`, beside the bundle directory, where `referee verify
/// --require-log` looks for it.
///
/// Errors: [`SiteError::Bundle`] when `dir` cannot be listed, [`SiteError::Io`] naming
/// a file that cannot be read or stored.
pub fn bundle_tar(dir: &Path, root: &str, proof: Option<&Path>) -> Result<BundleTar, SiteError> {
    let mut skipped = Vec::new();
    let mut files = Vec::new();
    let envelope = dir.join(ENVELOPE_FILE);
    match fs::symlink_metadata(&envelope) {
        Ok(meta) if meta.file_type().is_file() => files.push((ENVELOPE_FILE.to_owned(), envelope)),
        Ok(meta) => skipped.push(SkippedEntry {
            name: ENVELOPE_FILE.to_owned(),
            kind: if meta.file_type().is_symlink() {
                "symlink"
            } else {
                "special file"
            },
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(IoError::at("reading", &envelope)(e).into()),
    }
    for entry in bundle::list_files(dir)? {
        let kind = match entry.kind {
            EntryKind::File => {
                files.push((entry.name, entry.path));
                continue;
            }
            EntryKind::Symlink => "symlink",
            EntryKind::Special => "special file",
            EntryKind::NonUtf8Name => "non-UTF-8 name",
        };
        skipped.push(SkippedEntry {
            name: entry.name,
            kind,
        });
    }
    // Every directory that holds a file, as `<root>/<dir>/`, the root itself included.
    let mut dirs = BTreeSet::from([String::new()]);
    for (name, _) in &files {
        let mut rest = name.as_str();
        while let Some((parent, _)) = rest.rsplit_once('/') {
            dirs.insert(format!("{parent}/"));
            rest = parent;
        }
    }
    // Sorted by archive path; `a/` sorts before everything under it, as `a/` is their prefix.
    let mut items: Vec<(String, Option<&Path>)> = dirs
        .into_iter()
        .map(|d| (d, None))
        .chain(
            files
                .iter()
                .map(|(name, path)| (name.clone(), Some(path.as_path()))),
        )
        .collect();
    items.sort_by(|a, b| a.0.cmp(&b.0));

    let mut builder = tar::Builder::new(Vec::new());
    for (name, path) in items {
        let archived = format!("{root}/{name}");
        let mut header = tar::Header::new_ustar();
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        let stored = match path {
            None => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_mode(0o755);
                header.set_size(0);
                builder.append_data(&mut header, &archived, io::empty())
            }
            Some(path) => {
                let bytes = fs::read(path).map_err(IoError::at("reading", path))?;
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(0o644);
                header.set_size(bytes.len() as u64);
                builder.append_data(&mut header, &archived, bytes.as_slice())
            }
        };
        stored.map_err(IoError::at("archiving", &dir.join(&name)))?;
    }
    if let Some(proof) = proof {
        let bytes = fs::read(proof).map_err(IoError::at("reading", proof))?;
        let mut header = tar::Header::new_ustar();
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        header.set_entry_type(tar::EntryType::Regular);
        header.set_mode(0o644);
        header.set_size(bytes.len() as u64);
        builder
            .append_data(&mut header, format!("{root}.proof"), bytes.as_slice())
            .map_err(IoError::at("archiving", proof))?;
    }
    let bytes = builder
        .into_inner()
        .map_err(IoError::at("archiving", dir))?;
    Ok(BundleTar { bytes, skipped })
}

/// Reads a file of a bundle, at most [`MAX_ENVELOPE_BYTES`] (an envelope larger than that
/// does not verify).
fn read_file(path: &Path) -> Result<Vec<u8>, SiteError> {
    Ok(read_limited(path, MAX_ENVELOPE_BYTES).map_err(IoError::at("reading", path))?)
}

// ---------------------------------------------------------------------------------------
// Keys and schemas

/// `keys/keyring.json`.
///
/// Errors: [`SiteError::InvalidId`] never (fixed names).
pub fn keyring_path() -> Result<SitePath, SiteError> {
    SiteDir::fixed("keys")?.file("keyring.json")
}

/// `keys/keyring.json`: the trusted keyring's bytes as read (the keys the round pages'
/// `referee verify` command needs).
///
/// Errors: [`SiteError::InvalidId`] never (a fixed path of ours).
pub fn keyring_file(archive: &Archive) -> Result<MachineFile, SiteError> {
    Ok((keyring_path()?, archive.keyring_json.clone()))
}

/// Every predicate schema the site publishes, with its `predicateType`: the round
/// predicate's versions oldest first, then the rerun predicate's.
fn published_schemas() -> Vec<(&'static str, String)> {
    PUBLISHED_ROUND_SCHEMAS
        .iter()
        .map(|&(t, schema)| (t, schema.to_owned()))
        .chain([
            (ROUND_PREDICATE_TYPE, receipts::schema::round_schema_json()),
            (
                RERUN_PREDICATE_TYPE_V1,
                include_str!("../../receipts/schema/rerun-v1.schema.json").to_owned(),
            ),
            (RERUN_PREDICATE_TYPE, receipts::schema::rerun_schema_json()),
        ])
        .collect()
}

/// Where the schema of `predicate_type` (`https://referee.dev/predicates/<kind>/<version>`)
/// is published: `schemas/<kind>/<version>.schema.json`.
fn schema_path(predicate_type: &str) -> Result<SitePath, SiteError> {
    let mut segments = predicate_type.rsplit('/');
    let version = segments.next().unwrap_or_default();
    let kind = segments.next().unwrap_or_default();
    SiteDir::fixed("schemas")?
        .child(kind)?
        .file(&format!("{version}.schema.json"))
}

/// The predicates' JSON Schemas at stable paths, `schemas/<kind>/<version>.schema.json`
/// (`$id` is the `predicateType`): the round predicate's, one per version this build
/// verifies (`schemas/round/v1.schema.json`, `v2` … `v9`: the committed files of
/// `receipts/schema/`, the current one from [`receipts::schema::round_schema_json`], which
/// a test of `receipts` keeps equal to its committed file), and the rerun predicate's
/// (`schemas/rerun/v1.schema.json` as published, `v2` from
/// [`receipts::schema::rerun_schema_json`]). The
/// round-opened predicate has no schema of its own, so none is published.
///
/// Errors: [`SiteError::InvalidId`] never (fixed paths of ours).
pub fn schema_files() -> Result<Vec<MachineFile>, SiteError> {
    published_schemas()
        .into_iter()
        .map(|(predicate_type, schema)| Ok((schema_path(predicate_type)?, schema.into_bytes())))
        .collect()
}

// ---------------------------------------------------------------------------------------
// Atom feed

/// `c/<campaign>/feed.xml`.
fn feed_path(campaign: &CampaignId) -> Result<SitePath, SiteError> {
    SiteDir::campaign(campaign).file("feed.xml")
}

/// `c/<campaign>/feed.xml`: an Atom 1.0 feed (RFC 4287) of the campaign's newest
/// [`API_ROUNDS`] verified rounds, one entry per round, newest first (a feed tells what
/// is new; every round is on the pages of rounds). An entry's title is `Round <n> · <status>`
/// (`infra failed` for `infra_failed`), its `updated` the round's seal time (`endedAt`,
/// when teardown ended; never the build time), its id the `tag:` URI
/// `tag:referee.dev,2026:round/<campaign digest>/<n>`, its link the round page, its
/// summary the entry counts, the top score and the seat after the round. The feed's id is
/// `tag:referee.dev,2026:campaign/<campaign digest>`, its `updated` the newest seal time
/// (`1970-01-01T00:00:00Z` before any round), its subtitle the campaign's title. Links
/// are absolute under `base_url` (ending in `/`), or relative to the feed when it is
/// empty. Text from the campaign or a receipt is escaped with
/// [`escape_untrusted`], then XML-escaped.
///
/// Errors: [`SiteError::InvalidId`] never for a validated campaign id.
pub fn campaign_feed(campaign: &CampaignArchive, base_url: &str) -> Result<MachineFile, SiteError> {
    let path = feed_path(&campaign.id)?;
    let page = SiteDir::campaign(&campaign.id);
    // Relative links resolve against the feed's own URL, `c/<id>/feed.xml`.
    let link = |dir: &SiteDir| {
        if base_url.is_empty() {
            let rel = dir
                .as_str()
                .strip_prefix(page.as_str())
                .unwrap_or(dir.as_str());
            if rel.is_empty() {
                "./".to_owned()
            } else {
                rel.to_owned()
            }
        } else {
            format!("{base_url}{dir}")
        }
    };
    let self_link = if base_url.is_empty() {
        "feed.xml".to_owned()
    } else {
        format!("{base_url}{path}")
    };
    // Sorted by number when loaded: the newest first.
    let rounds = campaign.rounds.iter().rev().take(API_ROUNDS);
    let updated = (campaign.rounds.iter())
        .map(|r| r.ended_at)
        .max()
        .map_or_else(|| "1970-01-01T00:00:00Z".to_owned(), |t| t.to_rfc3339());
    let digest = &campaign.campaign.digest;

    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n");
    xml.push_str("<feed xmlns=\"http://www.w3.org/2005/Atom\">\n");
    xml.push_str(&format!("  <id>{TAG_PREFIX}campaign/{digest}</id>\n"));
    xml.push_str(&format!(
        "  <title>{} · rounds</title>\n",
        untrusted_xml(campaign.id.as_str())
    ));
    let title = &campaign.campaign.campaign.title;
    if !title.is_empty() {
        xml.push_str(&format!(
            "  <subtitle>{}</subtitle>\n",
            untrusted_xml(title)
        ));
    }
    xml.push_str(&format!("  <updated>{updated}</updated>\n"));
    xml.push_str("  <author><name>referee</name></author>\n");
    xml.push_str(&format!(
        "  <link rel=\"self\" type=\"application/atom+xml\" href=\"{}\"/>\n",
        xml_escape(&self_link)
    ));
    xml.push_str(&format!(
        "  <link rel=\"alternate\" type=\"text/html\" href=\"{}\"/>\n",
        xml_escape(&link(&page))
    ));
    for round in rounds {
        let n = round.number;
        let counts = round.headline.counts;
        let top = round.headline.top_score_ppm.map_or_else(
            || "no score".to_owned(),
            |t| format!("top score {}", format_score_percent(t)),
        );
        let seat = format_leader(round.leader_after.as_ref());
        let seat = if round.changed {
            format!("leader now {seat}")
        } else {
            format!("leader unchanged: {seat}")
        };
        let summary = format!(
            "{} scored · {} disqualified · {} infra failed · {top} · {seat}",
            counts.scored, counts.disqualified, counts.infra_failed
        );
        xml.push_str("  <entry>\n");
        xml.push_str(&format!("    <id>{TAG_PREFIX}round/{digest}/{n}</id>\n"));
        xml.push_str(&format!(
            "    <title>Round {n} · {}</title>\n",
            round.status.as_str().replace('_', " ")
        ));
        xml.push_str(&format!(
            "    <updated>{}</updated>\n",
            round.ended_at.to_rfc3339()
        ));
        xml.push_str(&format!(
            "    <link rel=\"alternate\" type=\"text/html\" href=\"{}\"/>\n",
            xml_escape(&link(&SiteDir::round(&campaign.id, n)))
        ));
        xml.push_str(&format!(
            "    <summary>{}</summary>\n",
            untrusted_xml(&summary)
        ));
        xml.push_str("  </entry>\n");
    }
    xml.push_str("</feed>\n");
    Ok((path, xml.into_bytes()))
}

/// Untrusted text for XML: [`escape_untrusted`] (controls, bidi and invisible characters
/// shown as escapes), then [`xml_escape`].
pub fn untrusted_xml(text: &str) -> String {
    xml_escape(&escape_untrusted(text))
}

/// `text` XML-escaped for element content and attribute values: `&`, `<`, `>`, `"` and
/// `'` as entities, and every character XML 1.0 cannot hold (controls other than tab,
/// line feed and carriage return; U+FFFE, U+FFFF) as a `\u{…}` escape.
pub fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c < ' ' || c == '\u{fffe}' || c == '\u{ffff}' => {
                out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// sitemap.xml and robots.txt

/// An HTML page for the sitemap: its directory and, when it shows rounds, the seal time
/// (`endedAt`) of the newest round it shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SitemapPage {
    /// The page's directory (its page is `<dir>index.html`, its URL `<base><dir>`).
    pub dir: SiteDir,
    /// When what it shows last changed; `None` omits `<lastmod>`.
    pub lastmod: Option<Timestamp>,
}

/// One segment's entry in the sitemap index: how many pages its sitemap lists and when
/// the newest of them changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SitemapSegment {
    /// The segment.
    pub segment: Segment,
    /// How many pages its sitemap lists (none: it has no sitemap file).
    pub pages: usize,
    /// The newest `lastmod` of its pages; `None` omits `<lastmod>`.
    pub lastmod: Option<Timestamp>,
}

const SITEMAP_HEAD: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
const SITEMAP_NS: &str = "xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"";

/// The file names of the sitemap of a segment with `pages` pages: none for none,
/// `sitemap-<segment>.xml` up to 50,000, else `sitemap-<segment>.<k>.xml` for each 50,000
/// ([`Segment::sitemap_file`]).
fn sitemap_names(segment: &Segment, pages: usize) -> Vec<String> {
    match pages {
        0 => Vec::new(),
        n if n <= SITEMAP_MAX_URLS => vec![segment.sitemap_file(None)],
        n => (1..=n.div_ceil(SITEMAP_MAX_URLS))
            .map(|k| segment.sitemap_file(Some(k)))
            .collect(),
    }
}

/// `sitemap.xml` (sitemaps.org protocol 0.9) under `base_url`: a sitemap index listing
/// the sitemap files of every segment of `segments` that has pages, in the order given,
/// each with its segment's `<lastmod>` where known. Each segment's own sitemap is
/// [`segment_sitemap`], written by the segment's jobs, so that a build that adds a round
/// writes the sitemap of that round's segment and this index, not a list of every page.
/// Empty when `base_url` is empty: the protocol requires absolute URLs, so a site built
/// without `--base-url` has no sitemap (and `robots.txt` names none).
///
/// Errors: [`SiteError::InvalidId`] never (fixed paths of ours).
pub fn sitemap_index(
    base_url: &str,
    segments: &[SitemapSegment],
) -> Result<Vec<MachineFile>, SiteError> {
    if base_url.is_empty() {
        return Ok(Vec::new());
    }
    let base = xml_escape(base_url);
    let mut index = format!("{SITEMAP_HEAD}<sitemapindex {SITEMAP_NS}>\n");
    for s in segments {
        for name in sitemap_names(&s.segment, s.pages) {
            index.push_str(&format!("  <sitemap><loc>{base}{name}</loc>"));
            if let Some(t) = s.lastmod {
                index.push_str(&format!("<lastmod>{}</lastmod>", t.to_rfc3339()));
            }
            index.push_str("</sitemap>\n");
        }
    }
    index.push_str("</sitemapindex>\n");
    Ok(vec![(
        SiteDir::root().file("sitemap.xml")?,
        index.into_bytes(),
    )])
}

/// The sitemap of `segment`'s `pages` under `base_url`, at the site root (a sitemap may
/// only list URLs under its own directory): every page's URL (`<base><dir>`), sorted by
/// directory, with `<lastmod>` where known, in `sitemap-<segment>.xml`, or split into
/// `sitemap-<segment>.<k>.xml` files of at most 50,000 URLs each (the protocol's limit).
/// [`sitemap_index`] lists them. Empty when `base_url` is empty or there are no pages.
///
/// Errors: [`SiteError::InvalidId`] never (fixed paths of ours).
pub fn segment_sitemap(
    base_url: &str,
    segment: &Segment,
    pages: &[SitemapPage],
) -> Result<Vec<MachineFile>, SiteError> {
    if base_url.is_empty() {
        return Ok(Vec::new());
    }
    let mut sorted: Vec<&SitemapPage> = pages.iter().collect();
    sorted.sort_by(|a, b| a.dir.cmp(&b.dir));
    let base = xml_escape(base_url);
    let urlset = |chunk: &[&SitemapPage]| {
        let mut xml = format!("{SITEMAP_HEAD}<urlset {SITEMAP_NS}>\n");
        for page in chunk {
            xml.push_str(&format!("  <url><loc>{base}{}</loc>", page.dir));
            if let Some(t) = page.lastmod {
                xml.push_str(&format!("<lastmod>{}</lastmod>", t.to_rfc3339()));
            }
            xml.push_str("</url>\n");
        }
        xml.push_str("</urlset>\n");
        xml.into_bytes()
    };
    let root = SiteDir::root();
    sitemap_names(segment, sorted.len())
        .into_iter()
        .zip(sorted.chunks(SITEMAP_MAX_URLS))
        .map(|(name, chunk)| Ok((root.file(&name)?, urlset(chunk))))
        .collect()
}

/// `robots.txt`: every crawler allowed everywhere, and a `Sitemap:` line with the
/// sitemap's absolute URL when `base_url` is given (none is written without it).
///
/// Errors: [`SiteError::InvalidId`] never (a fixed path of ours).
pub fn robots_txt(base_url: &str) -> Result<MachineFile, SiteError> {
    let mut text = String::from("User-agent: *\nAllow: /\n");
    if !base_url.is_empty() {
        text.push_str(&format!("Sitemap: {base_url}sitemap.xml\n"));
    }
    Ok((SiteDir::root().file("robots.txt")?, text.into_bytes()))
}

/// Every file of this module that depends on the whole archive rather than one round:
/// `api/index.json`, `keys/keyring.json`, the schemas, every campaign's feed and
/// `robots.txt` (the sitemaps need the segments and their pages: [`sitemap_index`],
/// [`segment_sitemap`]; each round's files:
/// [`round_files`]).
///
/// Errors: those of [`api_index`].
pub fn site_files(archive: &Archive, base_url: &str) -> Result<Vec<MachineFile>, SiteError> {
    let mut files = vec![api_index(archive)?, keyring_file(archive)?];
    files.extend(schema_files()?);
    for campaign in &archive.campaigns {
        files.push(campaign_feed(campaign, base_url)?);
    }
    files.push(robots_txt(base_url)?);
    files.extend(log_files(archive)?);
    Ok(files)
}

/// The transparency log's files under `log/`, byte for byte, when it verified
/// ([`crate::tlog`]); none otherwise.
///
/// Errors: [`SiteError::InvalidId`] for a tile path this build did not make.
pub fn log_files(archive: &Archive) -> Result<Vec<MachineFile>, SiteError> {
    let crate::tlog::LogState::Served(log) = &archive.log else {
        return Ok(Vec::new());
    };
    log.files
        .iter()
        .map(|(path, bytes)| {
            let mut dir = SiteDir::fixed("log")?;
            let mut parts: Vec<&str> = path.split('/').collect();
            let name = parts.pop().unwrap_or_default();
            for part in parts {
                dir = dir.child(part)?;
            }
            Ok((dir.file(name)?, bytes.clone()))
        })
        .collect()
}
