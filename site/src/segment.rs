//! Segments of the build: the jobs of a site split into parts that a build keeps or
//! runs whole, so that adding a round reads, keys and writes the manifest lines of the
//! parts it changes and not those of the 10,000 rounds before it.
//!
//! - [`Segment::Rounds`]: the pages of the rounds numbered `(k − 1) × 100 + 1` to
//!   `k × 100` of a campaign (the rounds of its page of rounds `k`,
//!   [`ROUNDS_PER_PAGE`]) and of their entries, with the files
//!   beside them;
//! - [`Segment::Submissions`]: the submission pages of the patches whose sha256 starts with
//!   the same two hex digits (256 segments: adding a round with seven patches changes
//!   at most seven of them);
//! - [`Segment::Site`]: every other job (the index, campaign and miner pages, the docs,
//!   the files for machines), listed on every build.
//!
//! Each segment has a key made from everything its jobs' keys are made from
//! (`site::build`); a segment whose key the manifest holds is kept as it is, its jobs not
//! even listed. That is safe because a job may write only inside its own segment's part
//! of the site ([`Segment::of_path`], checked for every file written): no file of a
//! kept segment can be claimed, overwritten or removed by a job of another.

use std::fmt;
use std::ops::RangeInclusive;

use receipts::model::{CampaignId, Sha256Hex};

use crate::archive::{CampaignArchive, RoundListing};

/// Round numbers per block: per segment of rounds, and per page of a campaign's rounds
/// (`/c/<campaign>/rounds/<k>/` holds those numbered `(k − 1) × 100 + 1` to `k × 100`, so
/// a page's rounds stay on it as rounds are added); also the rows the campaign page shows
/// (at 10,000 rounds its table of every round was 2.2 MB of HTML, written again with every
/// round).
pub const ROUNDS_PER_PAGE: u64 = 100;

/// The block of round number `n`: `(n − 1) / 100 + 1`.
pub fn block_of(n: u64) -> u64 {
    n.saturating_sub(1) / ROUNDS_PER_PAGE + 1
}

/// The round numbers block `k` (from 1) covers: `(k − 1) × 100 + 1 ..= k × 100`.
pub fn block_numbers(k: u64) -> RangeInclusive<u64> {
    let k = k.max(1);
    (k - 1) * ROUNDS_PER_PAGE + 1..=k * ROUNDS_PER_PAGE
}

/// How many blocks (pages of rounds) `campaign` has: enough for its highest verified
/// round number.
pub fn rounds_page_count(campaign: &CampaignArchive) -> u64 {
    campaign
        .rounds
        .last()
        .map_or(0, |r| r.number.div_ceil(ROUNDS_PER_PAGE))
}

/// The rounds of `campaign` that block (page) `k` (from 1) covers, oldest first (the
/// campaign's rounds are sorted by number).
pub fn rounds_of_page(campaign: &CampaignArchive, k: u64) -> &[RoundListing] {
    let numbers = block_numbers(k);
    let start = campaign
        .rounds
        .partition_point(|r| r.number < *numbers.start());
    let end = campaign
        .rounds
        .partition_point(|r| r.number <= *numbers.end());
    &campaign.rounds[start..end.max(start)]
}

/// A part of the site that a build keeps or runs whole.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Segment {
    /// Every job of neither kind below.
    Site,
    /// The round and entry pages of the rounds of page of rounds `block` (from 1) of
    /// `campaign`, with their files (`c/<campaign>/r/<n>/…`, `receipts/<campaign>/<n>/…`)
    /// and their sitemap.
    Rounds {
        /// The campaign.
        campaign: CampaignId,
        /// `(n − 1) / 100 + 1` of its round numbers `n`.
        block: u64,
    },
    /// The submission pages (`s/<sha256>/…`) of the patches whose sha256 starts with
    /// `prefix`, and their sitemap.
    Submissions {
        /// The first byte of those sha256s.
        prefix: u8,
    },
}

impl Segment {
    /// The segment of round number `n` of `campaign`.
    pub fn of_round(campaign: &CampaignId, n: u64) -> Self {
        Self::Rounds {
            campaign: campaign.clone(),
            block: block_of(n),
        }
    }

    /// The segment of the submission page of `patch`.
    pub fn of_patch(patch: &Sha256Hex) -> Self {
        Self::Submissions {
            prefix: first_byte(patch),
        }
    }

    /// The segment whose part of the site holds `path` (relative to the site root, as
    /// [`crate::paths::SitePath`] writes it): `c/<campaign>/r/<n>/…` and
    /// `receipts/<campaign>/<n>/…` belong to the rounds of `n`, `s/<sha256>/…` to the
    /// submissions of its first byte, `sitemap-<segment>.xml` and
    /// `sitemap-<segment>.<part>.xml` to `<segment>`; everything else to [`Segment::Site`].
    pub fn of_path(path: &str) -> Self {
        Place::of_path(path).segment()
    }

    /// Whether `path` belongs to this segment ([`Segment::of_path`]), found without
    /// allocating: a build checks every file a job writes, and every file of a segment
    /// it reads.
    pub fn holds(&self, path: &str) -> bool {
        match (self, Place::of_path(path)) {
            (Self::Site, Place::Site) => true,
            (Self::Rounds { campaign, block }, Place::Rounds(c, b)) => {
                *block == b && campaign.as_str() == c
            }
            (Self::Submissions { prefix }, Place::Submissions(p)) => *prefix == p,
            _ => false,
        }
    }

    /// The segment of the job named `name` (`site::build`): `round:<campaign>:<n>` and
    /// `entry:<campaign>:<n>:<slug>` belong to the rounds of `n`, `submission:<sha256>` to
    /// the submissions of its first byte, `sitemap:<segment>` to `<segment>`; every other
    /// job to [`Segment::Site`].
    pub fn of_job(name: &str) -> Self {
        let mut parts = name.split(':');
        let found = match (parts.next(), parts.next(), parts.next()) {
            (Some("round" | "entry"), Some(campaign), Some(n)) => (campaign.parse().ok())
                .zip(n.parse().ok().filter(|n: &u64| *n > 0))
                .map(|(campaign, n)| Self::of_round(&campaign, n)),
            (Some("submission"), Some(patch), None) => {
                patch.parse().ok().map(|p: Sha256Hex| Self::of_patch(&p))
            }
            (Some("sitemap"), Some(segment), None) => Self::parse(segment),
            _ => None,
        };
        found.unwrap_or(Self::Site)
    }

    /// The segment named `name` ([`Segment`]'s `Display`): `site`, `rounds.<campaign>.<k>`
    /// or `submissions.<xx>`; `None` for any other text.
    pub fn parse(name: &str) -> Option<Self> {
        Place::of_name(name).map(Place::segment)
    }

    /// The file name of this segment's sitemap (`sitemap-<segment>.xml`), or of its part
    /// `part` (from 1) when its pages need several (`sitemap-<segment>.<part>.xml`).
    pub fn sitemap_file(&self, part: Option<usize>) -> String {
        match part {
            None => format!("sitemap-{self}.xml"),
            Some(k) => format!("sitemap-{self}.{k}.xml"),
        }
    }
}

impl fmt::Display for Segment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Site => f.write_str("site"),
            Self::Rounds { campaign, block } => write!(f, "rounds.{campaign}.{block}"),
            Self::Submissions { prefix } => write!(f, "submissions.{prefix:02x}"),
        }
    }
}

/// A segment borrowed from the text that names it (a path, a segment name), every part
/// checked: what [`Segment::of_path`], [`Segment::holds`] and [`Segment::parse`] read,
/// without allocating.
enum Place<'a> {
    Site,
    /// A campaign id (checked) and a block.
    Rounds(&'a str, u64),
    Submissions(u8),
}

impl<'a> Place<'a> {
    /// The segment it names.
    fn segment(self) -> Segment {
        match self {
            Self::Site => Segment::Site,
            Self::Rounds(campaign, block) => {
                campaign
                    .parse()
                    .map_or(Segment::Site, |campaign| Segment::Rounds {
                        campaign,
                        block,
                    })
            }
            Self::Submissions(prefix) => Segment::Submissions { prefix },
        }
    }

    /// `c` as a campaign id of a block's round, with the block of round number `n`.
    fn round(c: &'a str, n: &str) -> Option<Self> {
        let n: u64 = n.parse().ok().filter(|n| *n > 0)?;
        CampaignId::is_valid(c).then(|| Self::Rounds(c, block_of(n)))
    }

    fn of_path(path: &'a str) -> Self {
        let mut parts = path.splitn(5, '/');
        let found = match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some("c"), Some(c), Some("r"), Some(n)) if parts.next().is_some() => Self::round(c, n),
            (Some("receipts"), Some(c), Some(n), Some(_)) => Self::round(c, n),
            (Some("s"), Some(patch), Some(_), _) => (Sha256Hex::is_valid(patch))
                .then(|| hex_byte(patch.as_bytes()).map(Self::Submissions))
                .flatten(),
            (Some(file), None, None, None) => Self::of_sitemap(file),
            _ => None,
        };
        found.unwrap_or(Self::Site)
    }

    /// The segment of a sitemap file at the site root (`sitemap-<segment>.xml` or
    /// `sitemap-<segment>.<part>.xml`).
    fn of_sitemap(file: &'a str) -> Option<Self> {
        let name = file.strip_prefix("sitemap-")?.strip_suffix(".xml")?;
        Self::of_name(name).or_else(|| {
            let (name, part) = name.rsplit_once('.')?;
            part.parse::<usize>().ok().filter(|p| *p > 0)?;
            Self::of_name(name)
        })
    }

    /// The segment named `name` ([`Segment`]'s `Display`): `site`,
    /// `rounds.<campaign>.<k>` (`k` written without leading zeros) or `submissions.<xx>`.
    fn of_name(name: &'a str) -> Option<Self> {
        if name == "site" {
            return Some(Self::Site);
        }
        let mut parts = name.split('.');
        let place = match (parts.next()?, parts.next()?, parts.next()) {
            ("rounds", campaign, Some(block)) => {
                let canonical =
                    !block.starts_with('0') && block.bytes().all(|b| b.is_ascii_digit());
                let block: u64 = block.parse().ok().filter(|b| *b > 0 && canonical)?;
                CampaignId::is_valid(campaign).then_some(Self::Rounds(campaign, block))?
            }
            ("submissions", prefix, None) if prefix.len() == 2 => {
                Self::Submissions(hex_byte(prefix.as_bytes())?)
            }
            _ => return None,
        };
        parts.next().is_none().then_some(place)
    }
}

/// The first byte of `patch`'s sha256 (its first two hex digits): its submissions segment,
/// and the part of the [`crate::pages::submission::PatchIndex`] it is indexed in.
pub fn first_byte(patch: &Sha256Hex) -> u8 {
    // A `Sha256Hex` is lowercase hex.
    hex_byte(patch.as_str().as_bytes()).unwrap_or(0)
}

/// The byte written by the first two hex digits of `hex` (lowercase only).
fn hex_byte(hex: &[u8]) -> Option<u8> {
    let digit = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    };
    Some(digit(*hex.first()?)? << 4 | digit(*hex.get(1)?)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rounds(campaign: &str, block: u64) -> Segment {
        Segment::Rounds {
            campaign: campaign.parse().unwrap(),
            block,
        }
    }

    #[test]
    fn paths_belong_to_their_segment() {
        let patch = "ab".to_owned() + &"0".repeat(62);
        for (path, segment) in [
            ("index.html", Segment::Site),
            ("c/demo/index.html", Segment::Site),
            ("c/demo/rounds.csv", Segment::Site),
            ("c/demo/rounds/3/index.html", Segment::Site),
            ("m/m-1/submissions/2/index.html", Segment::Site),
            ("api/c/demo/rounds/3.json", Segment::Site),
            ("c/demo/r/1/index.html", rounds("demo", 1)),
            ("c/demo/r/100/bundle.tar", rounds("demo", 1)),
            ("c/demo/r/101/e/baseline/index.html", rounds("demo", 2)),
            ("c/demo-2/r/10001/index.html", rounds("demo-2", 101)),
            ("receipts/demo/250/receipt.dsse.json", rounds("demo", 3)),
            (
                &format!("s/{patch}/index.html"),
                Segment::Submissions { prefix: 0xab },
            ),
            ("sitemap.xml", Segment::Site),
            ("sitemap-site.xml", Segment::Site),
            ("sitemap-rounds.demo.3.xml", rounds("demo", 3)),
            ("sitemap-rounds.demo.3.2.xml", rounds("demo", 3)),
            (
                "sitemap-submissions.0f.xml",
                Segment::Submissions { prefix: 0x0f },
            ),
            // Not made by any job; never a round's or a submission's.
            ("c/demo/r/0/index.html", Segment::Site),
            ("c/demo/r/x/index.html", Segment::Site),
            ("c/demo/r/1", Segment::Site),
            ("receipts/demo/1", Segment::Site),
            ("s/notahash/index.html", Segment::Site),
            ("sitemap-rounds.demo.0.xml", Segment::Site),
            ("sitemap-submissions.AB.xml", Segment::Site),
            ("sitemap-rounds.demo.1.0.xml", Segment::Site),
        ] {
            assert_eq!(Segment::of_path(path), segment, "{path}");
            assert!(segment.holds(path), "{path}");
            for other in [
                Segment::Site,
                rounds("demo", 1),
                rounds("demo", 3),
                rounds("demo-2", 101),
            ] {
                assert_eq!(other.holds(path), other == segment, "{other} {path}");
            }
        }
    }

    #[test]
    fn jobs_belong_to_their_segment() {
        let patch = "0c".to_owned() + &"f".repeat(62);
        for (job, segment) in [
            ("machine", Segment::Site),
            ("index", Segment::Site),
            ("campaign:demo", Segment::Site),
            ("rounds:demo:3", Segment::Site),
            ("miner:m-1", Segment::Site),
            ("miner:m-1:2", Segment::Site),
            ("doc:docs:rounds", Segment::Site),
            ("round:demo:100", rounds("demo", 1)),
            ("round:demo:101", rounds("demo", 2)),
            ("entry:demo:250:candidate-1-m", rounds("demo", 3)),
            (
                &format!("submission:{patch}"),
                Segment::Submissions { prefix: 0x0c },
            ),
            ("sitemap:rounds.demo.4", rounds("demo", 4)),
            (
                "sitemap:submissions.ff",
                Segment::Submissions { prefix: 0xff },
            ),
            ("sitemap:site", Segment::Site),
            ("round:demo:0", Segment::Site),
            ("submission:xyz", Segment::Site),
        ] {
            assert_eq!(Segment::of_job(job), segment, "{job}");
        }
    }

    #[test]
    fn names_round_trip_and_others_are_refused() {
        for segment in [
            Segment::Site,
            rounds("demo", 1),
            rounds("a-b", 10_001),
            Segment::Submissions { prefix: 0 },
            Segment::Submissions { prefix: 0xff },
        ] {
            let name = segment.to_string();
            assert_eq!(Segment::parse(&name), Some(segment), "{name}");
        }
        assert_eq!(rounds("demo", 7).to_string(), "rounds.demo.7");
        assert_eq!(
            Segment::Submissions { prefix: 10 }.to_string(),
            "submissions.0a"
        );
        for bad in [
            "",
            "sites",
            "rounds.demo",
            "rounds.demo.0",
            "rounds.demo.01",
            "rounds.demo.1.2",
            "rounds.Demo.1",
            "rounds..1",
            "submissions.a",
            "submissions.abc",
            "submissions.AB",
            "submissions.zz",
            "../site",
        ] {
            assert_eq!(Segment::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn rounds_fall_in_blocks_of_a_hundred() {
        let demo: CampaignId = "demo".parse().unwrap();
        assert_eq!(Segment::of_round(&demo, 1), rounds("demo", 1));
        assert_eq!(Segment::of_round(&demo, 100), rounds("demo", 1));
        assert_eq!(Segment::of_round(&demo, 101), rounds("demo", 2));
        let patch: Sha256Hex = ("0c".to_owned() + &"f".repeat(62)).parse().unwrap();
        assert_eq!(
            Segment::of_patch(&patch),
            Segment::Submissions { prefix: 0x0c }
        );
        assert_eq!(
            rounds("demo", 2).sitemap_file(None),
            "sitemap-rounds.demo.2.xml"
        );
        assert_eq!(Segment::Site.sitemap_file(Some(3)), "sitemap-site.3.xml");
    }
}
