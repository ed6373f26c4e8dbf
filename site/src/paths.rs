//! Output paths of the site, built only from validated ids.
//!
//! A [`SiteDir`] is a page's directory relative to the site root (`c/demo/r/2/`, `""` for
//! the root); its page is `<dir>index.html` ([`SiteDir::page`]) and the files it
//! publishes beside it (`rounds.csv`) come from [`SiteDir::file`]. Every segment is a
//! fixed word of ours or an id that passed its alphabet (a [`CampaignId`], a [`MinerId`],
//! a [`Sha256Hex`], a round number, an [`EntrySlug`], a [`DocSlug`]): never `..`, never
//! absolute, never a raw string from a receipt. An id that fails is a
//! [`SiteError::InvalidId`] while the page models are built, before any file is written.

use std::fmt;
use std::path::{Path, PathBuf};

use receipts::model::{CampaignId, MinerId, Role, RoundRecord, Sha256Hex};
use serde::{Serialize, Serializer};

use crate::error::SiteError;

/// Mode of every file a build writes in the output directory.
pub(crate) const FILE_MODE: u32 = 0o644;

/// The rule an entry slug, a docs slug or a file name follows.
const NAME_RULE: &str = "1 to 128 characters of [A-Za-z0-9._-], starting with a letter or digit";

/// True when `s` is a safe single path segment: 1..=128 bytes of `[A-Za-z0-9._-]`, the
/// first a letter or digit (so never `.`, `..` or a hidden file).
fn is_segment(s: &str) -> bool {
    (1..=128).contains(&s.len())
        && s.as_bytes()[0].is_ascii_alphanumeric()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// An entry's slug as the bundle names it (`baseline`, `incumbent-miner-a`,
/// `candidate-2-miner-b`): a single path segment (see `NAME_RULE`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EntrySlug(String);

impl EntrySlug {
    /// Validates `s`.
    ///
    /// Errors: [`SiteError::InvalidId`] naming the value.
    pub fn new(s: &str) -> Result<Self, SiteError> {
        if is_segment(s) {
            Ok(Self(s.to_owned()))
        } else {
            Err(SiteError::InvalidId {
                field: "entry slug",
                value: receipts::text::escape_untrusted(s).into_owned(),
                rule: NAME_RULE,
            })
        }
    }

    /// The slug as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The slug of entry `index` of `record`, as the bundle names its files: `baseline`,
    /// `incumbent-<miner>`, `candidate-<k>-<miner>` (k counting challengers from 1 in
    /// run order), `entry-<i>` for an entry without a miner that is not the baseline.
    ///
    /// Errors: [`SiteError::InvalidId`] when there is no entry `index` or the slug cannot
    /// name a path.
    pub fn of(record: &RoundRecord, index: u32) -> Result<Self, SiteError> {
        let Some(entry) = record.entries.iter().find(|e| e.index == index) else {
            return Err(SiteError::InvalidId {
                field: "entry index",
                value: index.to_string(),
                rule: "an entry of the round",
            });
        };
        let text = match (entry.role, &entry.miner) {
            (Role::Baseline, _) => Role::Baseline.as_str().to_owned(),
            (Role::Incumbent, Some(miner)) => format!("incumbent-{miner}"),
            (Role::Challenger, Some(miner)) => {
                let k = record
                    .entries
                    .iter()
                    .filter(|e| e.role == Role::Challenger && e.index <= index)
                    .count();
                format!("candidate-{k}-{miner}")
            }
            (_, None) => format!("entry-{index}"),
        };
        Self::new(&text)
    }
}

/// A docs page's slug (`rounds` for `content/rounds.md`): a single path segment.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DocSlug(String);

impl DocSlug {
    /// Validates `s`.
    ///
    /// Errors: [`SiteError::InvalidId`] naming the value.
    pub fn new(s: &str) -> Result<Self, SiteError> {
        if is_segment(s) {
            Ok(Self(s.to_owned()))
        } else {
            Err(SiteError::InvalidId {
                field: "docs slug",
                value: receipts::text::escape_untrusted(s).into_owned(),
                rule: NAME_RULE,
            })
        }
    }

    /// The slug as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A directory of the site relative to its root: `""` (the root) or segments each ending
/// in `/` (`c/demo/r/2/`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SiteDir(String);

impl SiteDir {
    /// The site root (`/`).
    pub fn root() -> Self {
        Self(String::new())
    }

    /// `c/<campaign>/`.
    pub fn campaign(id: &CampaignId) -> Self {
        Self(format!("c/{id}/"))
    }

    /// `c/<campaign>/r/<n>/`.
    pub fn round(id: &CampaignId, n: u64) -> Self {
        Self(format!("c/{id}/r/{n}/"))
    }

    /// `c/<campaign>/rounds/<k>/`: the rounds numbered `(k − 1) × 100 + 1` to `k × 100`
    /// ([`crate::segment::ROUNDS_PER_PAGE`]).
    pub fn rounds_page(id: &CampaignId, k: u64) -> Self {
        Self(format!("c/{id}/rounds/{k}/"))
    }

    /// `c/<campaign>/r/<n>/e/<slug>/`.
    pub fn entry(id: &CampaignId, n: u64, slug: &EntrySlug) -> Self {
        Self(format!("c/{id}/r/{n}/e/{}/", slug.0))
    }

    /// `c/<campaign>/submissions/`: the campaign's queue, rejections and duplicates.
    pub fn campaign_submissions(id: &CampaignId) -> Self {
        Self(format!("c/{id}/submissions/"))
    }

    /// `m/<miner>/`.
    pub fn miner(id: &MinerId) -> Self {
        Self(format!("m/{id}/"))
    }

    /// `m/<miner>/submissions/<k>/`: the miner's submissions numbered `(k − 1) × 100 + 1`
    /// to `k × 100` ([`crate::pages::miner::SUBMISSIONS_PER_PAGE`]).
    pub fn miner_submissions(id: &MinerId, k: usize) -> Self {
        Self(format!("m/{id}/submissions/{k}/"))
    }

    /// `s/<patch sha256>/`.
    pub fn submission(sha256: &Sha256Hex) -> Self {
        Self(format!("s/{sha256}/"))
    }

    /// `rejected/`.
    pub fn rejected() -> Self {
        Self("rejected/".to_owned())
    }

    /// `glossary/`.
    pub fn glossary() -> Self {
        Self("glossary/".to_owned())
    }

    /// `docs/` (the docs index).
    pub fn docs() -> Self {
        Self("docs/".to_owned())
    }

    /// `docs/<slug>/`.
    pub fn doc(slug: &DocSlug) -> Self {
        Self(format!("docs/{}/", slug.0))
    }

    /// A fixed directory of ours (`keys`, `api`, `receipts`, `schemas`): `<name>/`.
    /// `name` is a literal in our code, so an invalid one is a bug, reported as
    /// [`SiteError::InvalidId`].
    pub fn fixed(name: &'static str) -> Result<Self, SiteError> {
        Self::root().child(name)
    }

    /// A subdirectory `<self><name>/` with a validated `name`.
    ///
    /// Errors: [`SiteError::InvalidId`] naming `name`.
    pub fn child(&self, name: &str) -> Result<Self, SiteError> {
        check_name("directory name", name)?;
        Ok(Self(format!("{}{name}/", self.0)))
    }

    /// The page of this directory: `<dir>index.html`.
    pub fn page(&self) -> SitePath {
        SitePath(format!("{}index.html", self.0))
    }

    /// A file beside the page: `<dir><name>` (`rounds.csv`), `name` validated.
    ///
    /// Errors: [`SiteError::InvalidId`] naming `name`.
    pub fn file(&self, name: &str) -> Result<SitePath, SiteError> {
        check_name("file name", name)?;
        Ok(SitePath(format!("{}{name}", self.0)))
    }

    /// The relative prefix from a page in this directory to the site root: `""` at the
    /// root, `../../` at `c/demo/`.
    pub fn root_prefix(&self) -> String {
        "../".repeat(self.0.matches('/').count())
    }

    /// The directory as a relative URL path (`c/demo/`, `""` at the root).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SiteDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for SiteDir {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

fn check_name(field: &'static str, name: &str) -> Result<(), SiteError> {
    if is_segment(name) {
        Ok(())
    } else {
        Err(SiteError::InvalidId {
            field,
            value: receipts::text::escape_untrusted(name).into_owned(),
            rule: NAME_RULE,
        })
    }
}

/// A file of the site relative to its root (`c/demo/index.html`, `c/demo/rounds.csv`),
/// made only by [`SiteDir::page`] and [`SiteDir::file`].
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SitePath(String);

impl SitePath {
    /// The path as a relative URL (`c/demo/rounds.csv`).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The relative prefix from this file to the site root (`../../` for
    /// `c/demo/index.html`).
    pub fn root_prefix(&self) -> String {
        "../".repeat(self.0.matches('/').count())
    }

    /// Where the file goes under the output directory `out`.
    pub fn under(&self, out: &Path) -> PathBuf {
        let mut p = out.to_path_buf();
        p.extend(self.0.split('/'));
        p
    }

    /// Parses a path this module produced (as listed in the build manifest), checking
    /// every segment again; `None` when it is not one.
    pub fn parse(s: &str) -> Option<Self> {
        Self::is_valid(s).then(|| Self(s.to_owned()))
    }

    /// Whether `s` is a path [`SitePath::parse`] accepts (without making one).
    pub fn is_valid(s: &str) -> bool {
        !s.is_empty() && s.split('/').all(is_segment)
    }

    /// Whether `s` is one or more paths [`SitePath::parse`] accepts, separated by single
    /// spaces (a manifest line's files): every segment between a `/` or a space follows
    /// `is_segment`, checked without splitting the paths apart first (at 2,000 rounds of
    /// the benchmark the manifest lists 165,000 files, and checking them path by path
    /// was half of reading it).
    pub fn is_valid_list(s: &str) -> bool {
        s.split([' ', '/']).all(is_segment)
    }
}

impl fmt::Display for SitePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for SitePath {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn campaign() -> CampaignId {
        "demo".parse().unwrap()
    }

    #[test]
    fn pages_and_prefixes() {
        let slug = EntrySlug::new("candidate-2-miner-b").unwrap();
        let entry = SiteDir::entry(&campaign(), 3, &slug);
        assert_eq!(
            entry.page().as_str(),
            "c/demo/r/3/e/candidate-2-miner-b/index.html"
        );
        assert_eq!(entry.root_prefix(), "../../../../../../");
        assert_eq!(SiteDir::root().page().as_str(), "index.html");
        assert_eq!(SiteDir::root().root_prefix(), "");
        assert_eq!(SiteDir::campaign(&campaign()).root_prefix(), "../../");
        assert_eq!(
            SiteDir::campaign(&campaign())
                .file("rounds.csv")
                .unwrap()
                .as_str(),
            "c/demo/rounds.csv"
        );
        assert_eq!(
            SiteDir::campaign(&campaign())
                .file("rounds.csv")
                .unwrap()
                .root_prefix(),
            "../../"
        );
    }

    #[test]
    fn unsafe_names_are_refused() {
        for bad in [
            "", ".", "..", "../x", "a/b", ".hidden", "-x", "a b", "<script>", "é",
        ] {
            assert!(EntrySlug::new(bad).is_err(), "{bad:?}");
            assert!(SiteDir::root().file(bad).is_err(), "{bad:?}");
            assert!(SiteDir::root().child(bad).is_err(), "{bad:?}");
        }
        assert!(EntrySlug::new(&"a".repeat(129)).is_err());
        let err = EntrySlug::new("../../etc").unwrap_err().to_string();
        assert_eq!(
            err,
            "entry slug `../../etc` cannot name an output path: 1 to 128 characters of \
             [A-Za-z0-9._-], starting with a letter or digit"
        );
    }

    #[test]
    fn manifest_paths_are_checked_again() {
        assert_eq!(
            SitePath::parse("c/demo/index.html").unwrap().as_str(),
            "c/demo/index.html"
        );
        for bad in ["", "/etc/passwd", "c/../x", "c//x", "c/demo/", "..", "./x"] {
            assert!(SitePath::parse(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn a_list_of_paths_is_checked_as_each_path_is() {
        // Every string of up to 5 bytes over an alphabet that holds each kind of byte
        // the rule treats apart, and segments either side of the length bound.
        let alphabet = [b'a', b'0', b'.', b'-', b'/', b' ', b'~'];
        let mut all = vec![String::new()];
        let mut last = vec![String::new()];
        for _ in 0..5 {
            last = last
                .iter()
                .flat_map(|s| alphabet.iter().map(move |&b| format!("{s}{}", b as char)))
                .collect();
            all.extend(last.iter().cloned());
        }
        let long = |n: usize| "x".repeat(n);
        all.extend([
            long(128),
            long(129),
            format!("a/{} b", long(128)),
            format!("a/{} b", long(129)),
            "é/a".to_owned(),
        ]);
        for s in &all {
            let each = !s.is_empty() && s.split(' ').all(SitePath::is_valid);
            assert_eq!(SitePath::is_valid_list(s), each, "{s:?}");
        }
    }
}
