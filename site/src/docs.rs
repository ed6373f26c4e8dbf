//! The project's docs pages: every `content/*.md`, embedded in the binary at compile time
//! and rendered with pulldown-cmark into [`DocPage`]s, plus the glossary at `/glossary/`.
//!
//! The markdown is ours, but it is held to what the site can publish safely and link
//! correctly, and a page that breaks a rule fails the build with a [`DocsError`] naming
//! the file, the line and the value:
//! - a YAML front matter with `title` and `order` (a non-negative integer) opens every
//!   page; no other key;
//! - no raw HTML, block or inline (comments included), so every byte of a page's HTML was
//!   written by pulldown-cmark, which escapes text and attributes: that is why templates
//!   may print [`DocPage::html`] with `| safe`;
//! - links: `http:`, `https:` and `mailto:` URLs stay as they are; any other scheme
//!   (`javascript:`, `data:`, `vbscript:`, …) is refused. A relative link to another page
//!   (`leader-rule.md#infra-failed-incumbent`) becomes the relative URL of its permalink
//!   (`../leader-rule/#infra-failed-incumbent`; `index.md` is `/docs/`, `glossary.md`
//!   `/glossary/`), and its `#fragment` must name a heading of that page. A relative link
//!   to a file of the repository outside `content/` (`../ARCHITECTURE.md`) becomes its
//!   absolute URL in the repository (the workspace's `repository`, `/blob/main/<path>`).
//!   Refused: a link to a `content/` file that is not a page, one that leaves the
//!   repository, a root-absolute (`/x`) or protocol-relative (`//host`) one, an empty one;
//! - images only from `http:`/`https:` URLs: nothing copies repository files into the site;
//! - headings get GitHub's ids (lowercased, punctuation dropped, spaces to `-`, repeats
//!   suffixed `-1`, `-2`, …), so the same `#fragment` works on GitHub and on the site; a
//!   heading may set its own with `{#id}` (no classes or other attributes). Ids the page
//!   chrome uses ([`RESERVED_IDS`]) are never generated;
//! - tables are wrapped in `<div class="table-wrap">` (they scroll on a narrow screen, as
//!   every table of the site does) and a column's alignment is a class of its cells
//!   (`num` for right-aligned, the site's class for numbers; `center`), never an inline
//!   `style` (the site's Content-Security-Policy allows none).

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use pulldown_cmark::{
    Alignment, CodeBlockKind, CowStr, Event, LinkType, Options, Parser, Tag, TagEnd,
};
use receipts::model::Sha256Hex;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::paths::{DocSlug, SiteDir};
use crate::render::NavLink;

/// Every page of `content/`, embedded at compile time as `(file name, markdown)`. A file
/// of `content/` missing here fails the test `every_content_page_is_embedded`.
const SOURCES: &[(&str, &str)] = &[
    ("commands.md", include_str!("../../content/commands.md")),
    (
        "competition.md",
        include_str!("../../content/competition.md"),
    ),
    (
        "correctness.md",
        include_str!("../../content/correctness.md"),
    ),
    (
        "data-directory.md",
        include_str!("../../content/data-directory.md"),
    ),
    ("docker.md", include_str!("../../content/docker.md")),
    ("engines.md", include_str!("../../content/engines.md")),
    ("glossary.md", include_str!("../../content/glossary.md")),
    ("index.md", include_str!("../../content/index.md")),
    (
        "leader-rule.md",
        include_str!("../../content/leader-rule.md"),
    ),
    (
        "measurement.md",
        include_str!("../../content/measurement.md"),
    ),
    ("noise.md", include_str!("../../content/noise.md")),
    ("pods.md", include_str!("../../content/pods.md")),
    ("receipts.md", include_str!("../../content/receipts.md")),
    (
        "repository-submissions.md",
        include_str!("../../content/repository-submissions.md"),
    ),
    ("review.md", include_str!("../../content/review.md")),
    ("rounds.md", include_str!("../../content/rounds.md")),
    (
        "s1-fast-speed.md",
        include_str!("../../content/s1-fast-speed.md"),
    ),
    (
        "s1-pro-speed.md",
        include_str!("../../content/s1-pro-speed.md"),
    ),
    ("site.md", include_str!("../../content/site.md")),
    ("submitting.md", include_str!("../../content/submitting.md")),
    (
        "threat-model.md",
        include_str!("../../content/threat-model.md"),
    ),
    ("title.md", include_str!("../../content/title.md")),
    (
        "transparency-log.md",
        include_str!("../../content/transparency-log.md"),
    ),
    ("verifying.md", include_str!("../../content/verifying.md")),
];

/// The repository the docs link into for files outside `content/` (the workspace's
/// `repository` in Cargo.toml).
const REPOSITORY: &str = env!("CARGO_PKG_REPOSITORY");

/// The glossary's file; its permalink, and its one published copy, is `/glossary/` (its
/// place among the docs pages, `docs/glossary/`, is only where its links are resolved
/// from in the docs navigation order: a second copy would be a duplicate document that
/// no link reaches, which `referee site check` refuses).
const GLOSSARY: &str = "glossary.md";

/// The docs index's file; its permalink is `/docs/`.
const INDEX: &str = "index.md";

/// Ids the page chrome (`templates/base.html`, `templates/doc.html`) uses: a heading never
/// gets one of them, so no page holds an id twice.
pub const RESERVED_IDS: &[&str] = &["main"];

/// The schemes a link may use; every other one is refused.
const ALLOWED_SCHEMES: &[&str] = &["http", "https", "mailto"];

/// The markdown extensions the docs use.
fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_HEADING_ATTRIBUTES
        | Options::ENABLE_YAML_STYLE_METADATA_BLOCKS
}

/// Why a page of `content/` cannot be published. Every variant names the file
/// (`content/<name>.md`), the 1-based line and the offending value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DocsError {
    /// The front matter is missing, malformed or holds an unknown or repeated key.
    #[error("{file}:{line}: front matter `{value}`: {reason}")]
    FrontMatter {
        /// The page's file.
        file: String,
        /// The line of the problem.
        line: usize,
        /// The offending line or value.
        value: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// The front matter has no value for a required field (`title`, `order`).
    #[error("{file}:{line}: front matter has no `{value}`")]
    MissingField {
        /// The page's file.
        file: String,
        /// The front matter's first line.
        line: usize,
        /// The missing field.
        value: &'static str,
    },
    /// Raw HTML (a block, an inline tag or a comment) in the markdown.
    #[error("{file}:{line}: raw HTML is not allowed in docs: `{value}`")]
    RawHtml {
        /// The page's file.
        file: String,
        /// The line the HTML starts on.
        line: usize,
        /// The HTML's first line (at most 80 characters).
        value: String,
    },
    /// A link or image URL with a scheme other than `http`, `https` or `mailto`.
    #[error(
        "{file}:{line}: URL `{value}` is refused: only http, https and mailto URLs and relative links are allowed"
    )]
    UnsafeUrl {
        /// The page's file.
        file: String,
        /// The line of the link.
        line: usize,
        /// The URL as written (after markdown unescaping).
        value: String,
    },
    /// A link or image that cannot be resolved to a page, a heading or a repository file.
    #[error("{file}:{line}: link `{value}`: {reason}")]
    BadLink {
        /// The page's file.
        file: String,
        /// The line of the link.
        line: usize,
        /// The URL as written.
        value: String,
        /// Why it does not resolve.
        reason: &'static str,
    },
    /// A heading attribute block with a class or an attribute (only `{#id}` is allowed).
    #[error("{file}:{line}: heading attribute `{value}`: only an id (`{{#id}}`) is allowed")]
    HeadingAttribute {
        /// The page's file.
        file: String,
        /// The heading's line.
        line: usize,
        /// The class or attribute.
        value: String,
    },
    /// Two headings of a page set the same `{#id}`, or one sets an id the chrome uses.
    #[error("{file}:{line}: heading id `{value}` is used twice on the page")]
    DuplicateId {
        /// The page's file.
        file: String,
        /// The second heading's line.
        line: usize,
        /// The id.
        value: String,
    },
    /// The file's name cannot be a page's slug (`<slug>.md`, the slug a path segment).
    #[error("{file}:{line}: file name `{value}` cannot name a page: {reason}")]
    FileName {
        /// The page's file.
        file: String,
        /// Always 1.
        line: usize,
        /// The file name.
        value: String,
        /// The rule it breaks.
        reason: String,
    },
}

/// A heading of a page's table of contents.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Heading {
    /// 2 or 3 (the page's title is its only level-1 heading and is not listed).
    pub level: u8,
    /// The heading's `id`, the `#fragment` that links to it.
    pub id: String,
    /// The heading's text, plain (code spans as their text, emphasis dropped).
    pub text: String,
}

/// One rendered docs page, ready for `templates/doc.html`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DocPage {
    /// The file's stem (`leader-rule` for `content/leader-rule.md`).
    pub slug: String,
    /// The front matter's `title`.
    pub title: String,
    /// The front matter's `order`: pages sort by `(order, slug)`.
    pub order: u32,
    /// Where the page is written: `docs/<slug>/` (`docs/` for `index.md`, `glossary/` for
    /// the glossary's own copy).
    pub dir: SiteDir,
    /// The page's markdown in the repository (`<repository>/blob/main/content/<file>`).
    pub source_url: String,
    /// The page's HTML. Produced only by pulldown-cmark from markdown without raw HTML,
    /// so every text and attribute in it is escaped: safe to print unescaped.
    pub html: String,
    /// The table of contents: the page's level-2 and level-3 headings, in order.
    pub headings: Vec<Heading>,
}

/// Every docs page, rendered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Docs {
    /// One page per `content/*.md` at `docs/<slug>/`, sorted by `(order, slug)`.
    pub pages: Vec<DocPage>,
    /// The glossary at its own permalink `glossary/` (its links resolved from there).
    pub glossary: DocPage,
}

impl Docs {
    /// The docs navigation, in page order: each page's title and permalink (the glossary's
    /// is `glossary/`).
    pub fn nav(&self) -> Vec<NavLink> {
        self.pages
            .iter()
            .map(|page| NavLink {
                title: page.title.clone(),
                href: if page.slug == stem(GLOSSARY) {
                    self.glossary.dir.as_str().to_owned()
                } else {
                    page.dir.as_str().to_owned()
                },
            })
            .collect()
    }

    /// Every page to write, each at its own `dir`: the docs pages but the glossary, then
    /// the glossary at its permalink, so it is published once.
    pub fn all(&self) -> impl Iterator<Item = &DocPage> {
        self.pages
            .iter()
            .filter(|page| page.slug != stem(GLOSSARY))
            .chain(std::iter::once(&self.glossary))
    }
}

/// Renders the embedded `content/` pages.
///
/// Errors: the first [`DocsError`] of the first page (in file name order) that breaks a
/// rule of this module.
pub fn load() -> Result<Docs, DocsError> {
    render_sources(SOURCES, REPOSITORY)
}

/// What a build needs of the docs before it knows whether any docs page must be
/// rendered: the navigation, where each page goes, and a digest of everything they are
/// rendered from. Made from the front matter alone (rendering every page with its links
/// checked took 5 % of a build that added one round).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocsIndex {
    /// As [`Docs::nav`].
    pub nav: Vec<NavLink>,
    /// Each page's directory, in the order of [`Docs::all`].
    pub dirs: Vec<SiteDir>,
    /// sha256 of every embedded source (name and text) and the repository URL.
    pub digest: Sha256Hex,
}

/// The [`DocsIndex`] of the embedded `content/` pages.
///
/// Errors: the first [`DocsError`] of a page whose front matter or file name breaks a
/// rule of this module.
pub fn index() -> Result<DocsIndex, DocsError> {
    index_sources(SOURCES, REPOSITORY)
}

fn index_sources(sources: &[(&str, &str)], repository: &str) -> Result<DocsIndex, DocsError> {
    let mut pages = Vec::with_capacity(sources.len());
    let mut h = Sha256::new();
    for (name, source) in sources {
        let front = front_matter(&format!("content/{name}"), source)?;
        pages.push((
            front.order,
            stem(name).to_owned(),
            front.title,
            docs_dir(name)?,
        ));
        for part in [name.as_bytes(), source.as_bytes()] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part);
        }
    }
    h.update(repository.as_bytes());
    pages.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    let glossary = SiteDir::glossary();
    let nav = pages
        .iter()
        .map(|(_, slug, title, dir)| NavLink {
            title: title.clone(),
            href: if slug == stem(GLOSSARY) {
                glossary.as_str().to_owned()
            } else {
                dir.as_str().to_owned()
            },
        })
        .collect();
    let mut dirs: Vec<SiteDir> = pages
        .into_iter()
        .filter(|(_, slug, _, _)| slug != stem(GLOSSARY))
        .map(|(_, _, _, dir)| dir)
        .collect();
    dirs.push(glossary);
    Ok(DocsIndex {
        nav,
        dirs,
        digest: Sha256Hex::from_bytes(h.finalize().into()),
    })
}

/// The file's stem: `leader-rule` for `leader-rule.md`.
fn stem(name: &str) -> &str {
    name.strip_suffix(".md").unwrap_or(name)
}

/// The front matter's fields.
struct FrontMatter {
    title: String,
    order: u32,
}

/// A page parsed and checked, not yet rendered for a location.
struct Parsed<'a> {
    file: String,
    name: &'a str,
    source: &'a str,
    front: FrontMatter,
    /// The page's events with their byte ranges, headings' ids filled in.
    events: Vec<(Event<'a>, Range<usize>)>,
    /// Every id of the page.
    ids: HashSet<String>,
    headings: Vec<Heading>,
}

/// Renders `sources` (`(file name, markdown)` of `content/`), linking repository files
/// under `repository`.
fn render_sources(sources: &[(&str, &str)], repository: &str) -> Result<Docs, DocsError> {
    let mut parsed = Vec::with_capacity(sources.len());
    for (name, source) in sources {
        parsed.push(parse(name, source)?);
    }
    let permalinks: HashMap<&str, SiteDir> = parsed
        .iter()
        .map(|p| Ok((p.name, permalink(p.name)?)))
        .collect::<Result<_, DocsError>>()?;
    let ids: HashMap<&str, &HashSet<String>> = parsed.iter().map(|p| (p.name, &p.ids)).collect();
    let site = SiteIndex {
        permalinks: &permalinks,
        ids: &ids,
        repository,
    };
    let mut pages = Vec::with_capacity(parsed.len());
    let mut glossary = None;
    for page in &parsed {
        let docs_dir = docs_dir(page.name)?;
        pages.push(render(page, docs_dir, &site)?);
        if page.name == GLOSSARY {
            glossary = Some(render(page, SiteDir::glossary(), &site)?);
        }
    }
    pages.sort_by(|a, b| (a.order, &a.slug).cmp(&(b.order, &b.slug)));
    let glossary = glossary.ok_or_else(|| DocsError::FileName {
        file: format!("content/{GLOSSARY}"),
        line: 1,
        value: GLOSSARY.to_owned(),
        reason: "the glossary page is missing".to_owned(),
    })?;
    Ok(Docs { pages, glossary })
}

/// Where a page is written among the docs: `docs/` for the index, `docs/<slug>/` else.
fn docs_dir(name: &str) -> Result<SiteDir, DocsError> {
    if name == INDEX {
        return Ok(SiteDir::docs());
    }
    let slug = DocSlug::new(stem(name)).map_err(|e| DocsError::FileName {
        file: format!("content/{name}"),
        line: 1,
        value: name.to_owned(),
        reason: e.to_string(),
    })?;
    Ok(SiteDir::doc(&slug))
}

/// The directory links to a page point at: `glossary/` for the glossary, else its docs
/// directory.
fn permalink(name: &str) -> Result<SiteDir, DocsError> {
    if name == GLOSSARY {
        Ok(SiteDir::glossary())
    } else {
        docs_dir(name)
    }
}

/// What link rewriting needs to know about the other pages.
struct SiteIndex<'s> {
    permalinks: &'s HashMap<&'s str, SiteDir>,
    ids: &'s HashMap<&'s str, &'s HashSet<String>>,
    repository: &'s str,
}

/// The 1-based line of byte `offset` of `source`.
fn line_of(source: &str, offset: usize) -> usize {
    source
        .as_bytes()
        .iter()
        .take(offset)
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The first line of `text`, trimmed, at most 80 characters.
fn excerpt(text: &str) -> String {
    text.trim()
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(80)
        .collect()
}

/// Parses and checks one page: front matter, no raw HTML, heading attributes and ids.
fn parse<'a>(name: &'a str, source: &'a str) -> Result<Parsed<'a>, DocsError> {
    let file = format!("content/{name}");
    let front = front_matter(&file, source)?;
    let events: Vec<(Event<'a>, Range<usize>)> = Parser::new_ext(source, options())
        .into_offset_iter()
        .collect();
    // Raw HTML and heading attributes, and every heading's explicit id and text.
    struct Found {
        index: usize,
        line: usize,
        level: u8,
        explicit: Option<String>,
        text: String,
    }
    let mut found: Vec<Found> = Vec::new();
    let mut open: Option<Found> = None;
    for (index, (event, range)) in events.iter().enumerate() {
        let line = || line_of(source, range.start);
        match event {
            Event::Html(html) | Event::InlineHtml(html) => {
                return Err(DocsError::RawHtml {
                    file,
                    line: line(),
                    value: excerpt(html),
                });
            }
            Event::Start(Tag::Heading {
                level,
                id,
                classes,
                attrs,
            }) => {
                if let Some(class) = classes.first() {
                    return Err(DocsError::HeadingAttribute {
                        file,
                        line: line(),
                        value: format!(".{class}"),
                    });
                }
                if let Some((key, _)) = attrs.first() {
                    return Err(DocsError::HeadingAttribute {
                        file,
                        line: line(),
                        value: key.to_string(),
                    });
                }
                open = Some(Found {
                    index,
                    line: line(),
                    level: *level as u8,
                    explicit: id.as_ref().map(|id| id.to_string()),
                    text: String::new(),
                });
            }
            Event::Text(text) | Event::Code(text) => {
                if let Some(heading) = open.as_mut() {
                    heading.text.push_str(text);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some(heading) = open.as_mut() {
                    heading.text.push(' ');
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some(heading) = open.take() {
                    found.push(heading);
                }
            }
            _ => {}
        }
    }
    // Explicit ids first, so an automatic one never takes an id a later heading sets.
    let mut used: HashSet<String> = RESERVED_IDS.iter().map(|s| (*s).to_owned()).collect();
    for heading in &found {
        if let Some(id) = &heading.explicit
            && !used.insert(id.clone())
        {
            return Err(DocsError::DuplicateId {
                file,
                line: heading.line,
                value: id.clone(),
            });
        }
    }
    let mut events = events;
    let mut headings = Vec::new();
    for heading in found {
        let text = heading
            .text
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let id = match heading.explicit {
            Some(id) => id,
            None => unique_id(&slugify(&text), &mut used),
        };
        if let Some((Event::Start(Tag::Heading { id: slot, .. }), _)) =
            events.get_mut(heading.index)
        {
            *slot = Some(CowStr::from(id.clone()));
        }
        if (2..=3).contains(&heading.level) {
            headings.push(Heading {
                level: heading.level,
                id,
                text,
            });
        }
    }
    Ok(Parsed {
        file,
        name,
        source,
        front,
        events,
        ids: used,
        headings,
    })
}

/// GitHub's heading id: lowercase, drop every character but letters, digits, `-` and
/// `_`, spaces become `-`. `section` when nothing is left.
fn slugify(text: &str) -> String {
    let slug: String = text
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .collect();
    if slug.is_empty() {
        "section".to_owned()
    } else {
        slug
    }
}

/// `base`, or `base-1`, `base-2`, … : the first not in `used`, which it joins.
fn unique_id(base: &str, used: &mut HashSet<String>) -> String {
    let mut candidate = base.to_owned();
    let mut n = 0u32;
    while used.contains(&candidate) {
        n += 1;
        candidate = format!("{base}-{n}");
    }
    used.insert(candidate.clone());
    candidate
}

/// Parses the YAML front matter: a first line `---`, then `key: value` lines (`title`,
/// `order`; blank and `#` comment lines allowed), closed by `---` or `...`.
fn front_matter(file: &str, source: &str) -> Result<FrontMatter, DocsError> {
    let bad = |line: usize, value: &str, reason: &'static str| DocsError::FrontMatter {
        file: file.to_owned(),
        line,
        value: excerpt(value),
        reason,
    };
    let lines: Vec<&str> = source.lines().collect();
    if lines.first() != Some(&"---") {
        return Err(bad(
            1,
            lines.first().copied().unwrap_or(""),
            "a page must start with a `---` line opening its front matter",
        ));
    }
    // As pulldown-cmark reads a metadata block: the next line is not blank.
    if lines.get(1).is_none_or(|l| l.trim().is_empty()) {
        return Err(bad(
            2,
            "",
            "the line after the opening `---` must not be blank",
        ));
    }
    let mut title = None;
    let mut order = None;
    let mut closed = false;
    for (n, &line) in lines.iter().enumerate().skip(1).map(|(i, l)| (i + 1, l)) {
        if line == "---" || line == "..." {
            closed = true;
            break;
        }
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(bad(n, line, "expected `key: value`"));
        };
        let value = scalar(value.trim()).ok_or_else(|| {
            bad(
                n,
                line,
                "expected a plain, \"double-quoted\" or 'single-quoted' value",
            )
        })?;
        let slot = match key {
            "title" => &mut title,
            "order" => &mut order,
            _ => return Err(bad(n, key, "unknown key (only `title` and `order`)")),
        };
        if slot.is_some() {
            return Err(bad(n, key, "key given twice"));
        }
        *slot = Some((n, value));
    }
    if !closed {
        return Err(bad(1, "---", "the front matter is never closed by `---`"));
    }
    let missing = |value| DocsError::MissingField {
        file: file.to_owned(),
        line: 1,
        value,
    };
    let (title_line, title) = title.ok_or_else(|| missing("title"))?;
    if title.trim().is_empty() {
        return Err(bad(title_line, "title", "the title is empty"));
    }
    let (order_line, order) = order.ok_or_else(|| missing("order"))?;
    let order = order
        .parse::<u32>()
        .map_err(|_| bad(order_line, &order, "`order` must be a non-negative integer"))?;
    Ok(FrontMatter { title, order })
}

/// A YAML scalar of the small subset the front matter allows: `"…"` (with `\"` and `\\`),
/// `'…'` (with `''`), or a plain value that YAML would not read as something else.
fn scalar(value: &str) -> Option<String> {
    if let Some(inner) = value.strip_prefix('"') {
        let inner = inner.strip_suffix('"')?;
        let mut out = String::new();
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => match chars.next()? {
                    c @ ('"' | '\\') => out.push(c),
                    _ => return None,
                },
                '"' => return None,
                c => out.push(c),
            }
        }
        return Some(out);
    }
    if let Some(inner) = value.strip_prefix('\'') {
        let inner = inner.strip_suffix('\'')?;
        let mut out = String::new();
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            if c == '\'' && chars.next()? != '\'' {
                return None;
            }
            out.push(c);
        }
        return Some(out);
    }
    let mut chars = value.chars();
    let indicator = match (chars.next(), chars.next()) {
        (Some(c), _) if "[]{}&*!|>%@`,#\"'".contains(c) => true,
        (Some('-' | '?' | ':'), next) => next.is_none_or(char::is_whitespace),
        _ => false,
    };
    if value.is_empty() || indicator || value.contains(": ") || value.contains(" #") {
        return None;
    }
    Some(value.to_owned())
}

/// Renders a parsed page as written at `dir`: links rewritten relative to `dir`, tables
/// wrapped and their cells aligned by class.
fn render(page: &Parsed<'_>, dir: SiteDir, site: &SiteIndex<'_>) -> Result<DocPage, DocsError> {
    let mut out: Vec<Event<'_>> = Vec::with_capacity(page.events.len());
    let mut alignments: Vec<Alignment> = Vec::new();
    let mut in_head = false;
    let mut cell = 0usize;
    for (event, range) in &page.events {
        // Counted only where a link or an image needs it: counting for every event is
        // quadratic in the page's length.
        let line = || line_of(page.source, range.start);
        let event = match event.clone() {
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }) => {
                let dest_url = if link_type == LinkType::Email {
                    // Written `mailto:` + the address by pulldown-cmark.
                    dest_url
                } else {
                    rewrite_link(page, line(), &dest_url, &dir, site)?.into()
                };
                Event::Start(Tag::Link {
                    link_type,
                    dest_url,
                    title,
                    id,
                })
            }
            Event::Start(Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            }) => {
                check_image(page, line(), &dest_url)?;
                Event::Start(Tag::Image {
                    link_type,
                    dest_url,
                    title,
                    id,
                })
            }
            Event::Start(Tag::Table(a)) => {
                alignments.clone_from(&a);
                out.push(Event::Html("<div class=\"table-wrap\">".into()));
                Event::Start(Tag::Table(a))
            }
            Event::End(TagEnd::Table) => {
                out.push(Event::End(TagEnd::Table));
                Event::Html("</div>\n".into())
            }
            Event::Start(Tag::TableHead) => {
                in_head = true;
                cell = 0;
                Event::Start(Tag::TableHead)
            }
            Event::End(TagEnd::TableHead) => {
                in_head = false;
                Event::End(TagEnd::TableHead)
            }
            Event::Start(Tag::TableRow) => {
                cell = 0;
                Event::Start(Tag::TableRow)
            }
            Event::Start(Tag::TableCell) => {
                let element = if in_head { "th" } else { "td" };
                let class = match alignments.get(cell) {
                    Some(Alignment::Right) => " class=\"num\"",
                    Some(Alignment::Center) => " class=\"center\"",
                    Some(Alignment::Left | Alignment::None) | None => "",
                };
                cell += 1;
                Event::Html(format!("<{element}{class}>").into())
            }
            Event::End(TagEnd::TableCell) => {
                Event::Html(if in_head { "</th>" } else { "</td>" }.into())
            }
            // A code block scrolls sideways on a phone: `tabindex` lets a keyboard user
            // scroll it (axe `scrollable-region-focusable`).
            Event::Start(Tag::CodeBlock(kind)) => {
                let language = match &kind {
                    CodeBlockKind::Fenced(info) => info
                        .split_whitespace()
                        .next()
                        .filter(|l| l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')),
                    CodeBlockKind::Indented => None,
                };
                Event::Html(match language {
                    Some(l) => format!("<pre tabindex=\"0\"><code class=\"language-{l}\">").into(),
                    None => "<pre tabindex=\"0\"><code>".into(),
                })
            }
            Event::End(TagEnd::CodeBlock) => Event::Html("</code></pre>\n".into()),
            other => other,
        };
        out.push(event);
    }
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, out.into_iter());
    Ok(DocPage {
        slug: stem(page.name).to_owned(),
        title: page.front.title.clone(),
        order: page.front.order,
        dir,
        source_url: format!("{}/blob/main/{}", site.repository, page.file),
        html,
        headings: page.headings.clone(),
    })
}

/// The scheme of `url` as a browser reads it (tabs and newlines removed, leading and
/// trailing spaces and controls trimmed), lowercased; `None` for a relative URL.
pub(crate) fn scheme(url: &str) -> Option<String> {
    let cleaned: String = url
        .trim_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    let (scheme, _) = cleaned.split_once(':')?;
    let mut chars = scheme.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then(|| scheme.to_ascii_lowercase())
}

/// Where a link of a page points.
#[derive(Debug, PartialEq, Eq)]
enum Target {
    /// An `http:`, `https:` or `mailto:` URL, kept as written.
    External,
    /// A page of `content/` (its file name) and a fragment.
    Page(String, Option<String>),
    /// A file of the repository outside `content/`: its path from the repository root,
    /// and what followed the path (`?query`, `#fragment`).
    Repository(String, String),
}

/// Classifies `url`, a link of a page of `content/`.
///
/// Errors: `Err(None)` for a scheme other than the allowed ones, `Err(Some(reason))` for
/// a relative link that cannot resolve.
fn classify(url: &str) -> Result<Target, Option<&'static str>> {
    if let Some(scheme) = scheme(url) {
        return if ALLOWED_SCHEMES.contains(&scheme.as_str()) {
            Ok(Target::External)
        } else {
            Err(None)
        };
    }
    if url.is_empty() {
        return Err(Some("empty link"));
    }
    if url.starts_with("//") {
        return Err(Some(
            "protocol-relative URLs are not allowed; write https://",
        ));
    }
    if url.starts_with('/') {
        return Err(Some(
            "root-absolute paths break on mirrors; link the page's file relatively",
        ));
    }
    let (path, fragment) = match url.split_once('#') {
        Some((p, f)) => (p, Some(f.to_owned())),
        None => (url, None),
    };
    let split = path.find('?').unwrap_or(path.len());
    let (path, query) = path.split_at(split);
    if path.is_empty() {
        return if query.is_empty() {
            Ok(Target::Page(String::new(), fragment))
        } else {
            Err(Some("a query on the page itself"))
        };
    }
    // Resolve against content/ inside the repository.
    let mut segments: Vec<&str> = vec!["content"];
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if segments.pop().is_none() {
                    return Err(Some("the link leaves the repository"));
                }
            }
            s => segments.push(s),
        }
    }
    match segments.as_slice() {
        ["content", page] => {
            if !query.is_empty() {
                return Err(Some("a query on a docs page"));
            }
            Ok(Target::Page((*page).to_owned(), fragment))
        }
        ["content", ..] => Err(Some("no such page in content/")),
        [] => Err(Some("a link to the repository root; name a file")),
        _ => {
            let mut rest = query.to_owned();
            if let Some(f) = fragment {
                rest.push('#');
                rest.push_str(&f);
            }
            Ok(Target::Repository(segments.join("/"), rest))
        }
    }
}

/// The relative URL from a page in `from` to the directory `to`: `../leader-rule/` from
/// `docs/rounds/` to `docs/leader-rule/`, `./` to itself.
fn relative(from: &SiteDir, to: &SiteDir) -> String {
    let from: Vec<&str> = from.as_str().split_terminator('/').collect();
    let to: Vec<&str> = to.as_str().split_terminator('/').collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut url = "../".repeat(from.len() - common);
    for segment in &to[common..] {
        url.push_str(segment);
        url.push('/');
    }
    if url.is_empty() { "./".to_owned() } else { url }
}

/// The URL a link of `page` (written at `dir`) is published with.
///
/// Errors: [`DocsError::UnsafeUrl`], [`DocsError::BadLink`] (an unknown page, a fragment
/// naming no heading of its page, a link that cannot resolve).
fn rewrite_link(
    page: &Parsed<'_>,
    line: usize,
    url: &str,
    dir: &SiteDir,
    site: &SiteIndex<'_>,
) -> Result<String, DocsError> {
    let bad = |reason| DocsError::BadLink {
        file: page.file.clone(),
        line,
        value: url.to_owned(),
        reason,
    };
    let target = classify(url).map_err(|reason| match reason {
        None => DocsError::UnsafeUrl {
            file: page.file.clone(),
            line,
            value: url.to_owned(),
        },
        Some(reason) => bad(reason),
    })?;
    match target {
        Target::External => Ok(url.to_owned()),
        Target::Repository(path, rest) => Ok(format!("{}/blob/main/{path}{rest}", site.repository)),
        Target::Page(name, fragment) => {
            // `#x` stays on the page it is written on (also on the glossary's second copy).
            let same_page = name.is_empty();
            let name = if same_page { page.name } else { name.as_str() };
            let (Some(to), Some(ids)) = (site.permalinks.get(name), site.ids.get(name)) else {
                return Err(bad("no such page in content/"));
            };
            let mut rewritten = if same_page || (to == dir && fragment.is_some()) {
                String::new()
            } else {
                relative(dir, to)
            };
            if let Some(fragment) = fragment {
                if !ids.contains(&fragment) {
                    return Err(bad("the fragment names no heading of that page"));
                }
                rewritten.push('#');
                rewritten.push_str(&fragment);
            }
            Ok(rewritten)
        }
    }
}

/// Checks an image URL: `http:` or `https:` only.
///
/// Errors: [`DocsError::UnsafeUrl`] for another scheme, [`DocsError::BadLink`] for a
/// relative one (no repository file is copied into the site).
fn check_image(page: &Parsed<'_>, line: usize, url: &str) -> Result<(), DocsError> {
    match scheme(url).as_deref() {
        Some("http" | "https") => Ok(()),
        Some(_) => Err(DocsError::UnsafeUrl {
            file: page.file.clone(),
            line,
            value: url.to_owned(),
        }),
        None => Err(DocsError::BadLink {
            file: page.file.clone(),
            line,
            value: url.to_owned(),
            reason: "images must be http(s) URLs: nothing copies repository files into the site",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPO: &str = "https://example.org/r";

    /// A page with front matter around `body`.
    fn page(title: &str, order: u32, body: &str) -> String {
        format!("---\ntitle: {title}\norder: {order}\n---\n\n{body}")
    }

    /// Renders `pages` plus a minimal glossary.
    fn docs(pages: &[(&str, &str)]) -> Result<Docs, DocsError> {
        let glossary = page("Glossary", 99, "# Glossary\n\n## TTFT {#ttft}\n\nTime.\n");
        let mut sources: Vec<(&str, &str)> = pages.to_vec();
        if !pages.iter().any(|(n, _)| *n == GLOSSARY) {
            sources.push((GLOSSARY, &glossary));
        }
        render_sources(&sources, REPO)
    }

    fn one(body: &str) -> Result<DocPage, DocsError> {
        let source = page("A", 1, body);
        let docs = docs(&[("a.md", &source)])?;
        Ok(docs.pages.into_iter().find(|p| p.slug == "a").unwrap())
    }

    #[test]
    fn every_content_page_is_embedded() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../content");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".md"))
            .collect();
        on_disk.sort();
        let embedded: Vec<String> = SOURCES.iter().map(|(n, _)| (*n).to_owned()).collect();
        assert_eq!(on_disk, embedded);
        for (name, text) in SOURCES {
            assert_eq!(std::fs::read_to_string(dir.join(name)).unwrap(), *text);
        }
    }

    #[test]
    fn every_content_page_renders() {
        let docs = load().unwrap();
        let names: Vec<(u32, &str, &str)> = docs
            .pages
            .iter()
            .map(|p| (p.order, p.slug.as_str(), p.dir.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                (0, "index", "docs/"),
                (1, "receipts", "docs/receipts/"),
                (2, "measurement", "docs/measurement/"),
                (3, "correctness", "docs/correctness/"),
                (4, "leader-rule", "docs/leader-rule/"),
                (5, "submitting", "docs/submitting/"),
                (6, "repository-submissions", "docs/repository-submissions/"),
                (6, "rounds", "docs/rounds/"),
                (7, "data-directory", "docs/data-directory/"),
                (8, "threat-model", "docs/threat-model/"),
                (9, "verifying", "docs/verifying/"),
                (10, "competition", "docs/competition/"),
                (11, "commands", "docs/commands/"),
                (12, "noise", "docs/noise/"),
                (13, "site", "docs/site/"),
                (14, "transparency-log", "docs/transparency-log/"),
                (15, "engines", "docs/engines/"),
                (16, "docker", "docs/docker/"),
                (17, "review", "docs/review/"),
                (19, "title", "docs/title/"),
                (20, "s1-pro-speed", "docs/s1-pro-speed/"),
                (21, "pods", "docs/pods/"),
                (22, "s1-fast-speed", "docs/s1-fast-speed/"),
                (90, "glossary", "docs/glossary/"),
            ]
        );
        assert_eq!(docs.glossary.dir.as_str(), "glossary/");
        let nav = docs.nav();
        assert_eq!(nav.len(), 24);
        assert_eq!(nav[0].href, "docs/");
        assert_eq!(nav[23].href, "glossary/");
        assert_eq!(nav[23].title, "Glossary");
        let rounds = docs.pages.iter().find(|p| p.slug == "rounds").unwrap();
        assert!(
            rounds.html.contains(r##"<a href="../leader-rule/">"##),
            "{}",
            rounds.html
        );
        assert!(rounds.html.contains(r##"<a href="#interleaved-passes">"##));
        assert!(rounds.html.contains(r#"<h2 id="interleaved-passes">"#));
        assert_eq!(
            rounds.source_url,
            "https://github.com/referee-bench/referee/blob/main/content/rounds.md"
        );
        let index = &docs.pages[0];
        assert!(
            index.html.contains(r#"<a href="rounds/">"#),
            "{}",
            index.html
        );
        for page in docs.all() {
            assert!(!page.html.contains("style="), "{}", page.slug);
            assert!(!page.html.contains("<script"), "{}", page.slug);
        }
    }

    #[test]
    fn every_repository_link_of_the_content_names_a_file() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for (name, source) in SOURCES {
            for (event, _) in Parser::new_ext(source, options()).into_offset_iter() {
                if let Event::Start(Tag::Link { dest_url, .. }) = event
                    && let Ok(Target::Repository(path, _)) = classify(&dest_url)
                {
                    assert!(root.join(&path).exists(), "{name}: {dest_url}");
                }
            }
        }
    }

    #[test]
    fn glossary_terms_have_stable_ids() {
        let docs = load().unwrap();
        let ids: Vec<&str> = docs
            .glossary
            .headings
            .iter()
            .map(|h| h.id.as_str())
            .collect();
        for id in [
            "ttft",
            "tpot",
            "itl",
            "e2e",
            "p95",
            "sla",
            "goodput",
            "throughput",
            "speedup",
            "score",
            "paired-score",
            "aa-control",
            "noise-floor",
            "margin",
            "incumbent",
            "leader",
            "baseline",
            "challenger",
            "pass",
            "rate-search",
            "send-lag",
            "cpu-steal",
            "logit-distance",
            "micro-nats",
            "dsse",
            "in-toto-statement",
            "keyid",
            "canonical-json",
            "hdrhistogram",
            "request-sequence-digest",
            "seed-commitment",
            "bundle",
            "receipt",
            "infra-failed",
            "disqualified",
        ] {
            assert!(ids.contains(&id), "{id} missing from {ids:?}");
        }
        // The /glossary/ copy links other docs from its own place.
        assert!(docs.glossary.html.contains(r#"href="../docs/measurement/"#));
        let doc_copy = docs.pages.iter().find(|p| p.slug == "glossary").unwrap();
        assert!(doc_copy.html.contains(r#"href="../measurement/"#));
        // In-page links stay on the copy they are written on.
        for page in [&docs.glossary, doc_copy] {
            assert!(
                page.html.contains(r##"<a href="#send-lag">send lag</a>"##),
                "{}",
                page.dir
            );
        }
    }

    #[test]
    fn heading_ids_follow_github_and_are_unique() {
        let page = one(
            "# A\n\n## Other tools' envelopes: `verify --foreign`\n\n## One campaign: `<campaign-id>/`\n\n\
             ### 3. Read the output\n\n## Dup\n\n## Dup\n\n## Main\n\n## Set {#dup}\n\n## !!!\n",
        )
        .unwrap();
        let ids: Vec<(&str, &str)> = page
            .headings
            .iter()
            .map(|h| (h.id.as_str(), h.text.as_str()))
            .collect();
        assert_eq!(
            ids,
            [
                (
                    "other-tools-envelopes-verify---foreign",
                    "Other tools' envelopes: verify --foreign"
                ),
                ("one-campaign-campaign-id", "One campaign: <campaign-id>/"),
                ("3-read-the-output", "3. Read the output"),
                ("dup-1", "Dup"),
                ("dup-2", "Dup"),
                ("main-1", "Main"),
                ("dup", "Set"),
                ("section", "!!!"),
            ]
        );
        assert!(page.html.contains(r#"<h1 id="a">A</h1>"#), "{}", page.html);
        assert!(page.html.contains("&lt;campaign-id&gt;"));
    }

    #[test]
    fn links_are_rewritten_to_permalinks_and_the_repository() {
        let b = page("B", 2, "# B\n\n## Anchor here\n");
        let a = page(
            "A",
            1,
            "# A\n\n[b](b.md) [anchor](b.md#anchor-here) [self](#a) [idx](index.md) \
             [gl](glossary.md#ttft) [arch](../ARCHITECTURE.md#invariants) [ex](../examples/demo/) \
             [web](https://example.com/x?a=1&b=2) <https://example.com/auto> <someone@example.org>\n",
        );
        let index = page(
            "Index",
            0,
            "# Index\n\n[a](a.md) [me](index.md) [me2](./index.md#index)\n",
        );
        let docs = docs(&[("a.md", &a), ("b.md", &b), ("index.md", &index)]).unwrap();
        let html = &docs.pages.iter().find(|p| p.slug == "a").unwrap().html;
        for expected in [
            r#"<a href="../b/">b</a>"#,
            r#"<a href="../b/#anchor-here">anchor</a>"#,
            r##"<a href="#a">self</a>"##,
            r#"<a href="../">idx</a>"#,
            r#"<a href="../../glossary/#ttft">gl</a>"#,
            r#"<a href="https://example.org/r/blob/main/ARCHITECTURE.md#invariants">arch</a>"#,
            r#"<a href="https://example.org/r/blob/main/examples/demo">ex</a>"#,
            r#"<a href="https://example.com/x?a=1&amp;b=2">web</a>"#,
            r#"<a href="https://example.com/auto">"#,
            r#"<a href="mailto:someone@example.org">"#,
        ] {
            assert!(html.contains(expected), "{expected} not in {html}");
        }
        let index = &docs.pages[0].html;
        assert!(index.contains(r#"<a href="a/">a</a>"#), "{index}");
        assert!(index.contains(r#"<a href="./">me</a>"#), "{index}");
        assert!(index.contains(r##"<a href="#index">me2</a>"##), "{index}");
    }

    #[test]
    fn tables_are_wrapped_and_aligned_by_class_not_style() {
        let page =
            one("# A\n\n| a | b | c | d |\n| :--- | :---: | ---: | --- |\n| 1 | 2 | 3 | 4 |\n")
                .unwrap();
        assert_eq!(
            page.html,
            "<h1 id=\"a\">A</h1>\n<div class=\"table-wrap\"><table><thead><tr><th>a</th>\
             <th class=\"center\">b</th><th class=\"num\">c</th><th>d</th></tr></thead><tbody>\n\
             <tr><td>1</td><td class=\"center\">2</td><td class=\"num\">3</td><td>4</td></tr>\n\
             </tbody></table>\n</div>\n"
        );
    }

    #[test]
    fn code_blocks_are_focusable_and_escaped() {
        let page =
            one("# A\n\n```sh x\nreferee verify <dir> && echo\n```\n\n    indented\n").unwrap();
        assert_eq!(
            page.html,
            "<h1 id=\"a\">A</h1>\n<pre tabindex=\"0\"><code class=\"language-sh\">\
             referee verify &lt;dir&gt; &amp;&amp; echo\n</code></pre>\n\
             <pre tabindex=\"0\"><code>indented\n</code></pre>\n"
        );
    }

    #[test]
    fn raw_html_is_refused() {
        for (body, line, value) in [
            ("# A\n\n<div>\nhi\n</div>\n", 8, "<div>"),
            (
                "# A\n\ntext <span onclick=\"x\">y</span>\n",
                8,
                "<span onclick=\"x\">",
            ),
            ("# A\n\n\n<!-- note -->\n", 9, "<!-- note -->"),
            (
                "# A\n\n<script>alert(1)</script>\n",
                8,
                "<script>alert(1)</script>",
            ),
        ] {
            assert_eq!(
                one(body).unwrap_err(),
                DocsError::RawHtml {
                    file: "content/a.md".to_owned(),
                    line,
                    value: value.to_owned()
                },
                "{body}"
            );
        }
        // Inside code it is text, escaped.
        let page = one("# A\n\n`<b>` and\n\n```\n<script>\n```\n").unwrap();
        assert!(
            page.html.contains("<code>&lt;b&gt;</code>"),
            "{}",
            page.html
        );
        assert!(page.html.contains("&lt;script&gt;"));
    }

    #[test]
    fn unsafe_urls_are_refused() {
        for url in [
            "javascript:alert(1)",
            "JavaScript:alert(1)",
            "&#106;avascript:alert(1)",
            "java&#9;script:alert(1)",
            "data:text/html,x",
            "vbscript:msgbox",
            "file:///etc/passwd",
        ] {
            for body in [
                format!("# A\n\n[x]({url})\n"),
                format!("# A\n\n![x]({url})\n"),
            ] {
                let err = one(&body).unwrap_err();
                let DocsError::UnsafeUrl { file, line, value } = &err else {
                    panic!("{body}: {err:?}");
                };
                assert_eq!((file.as_str(), *line), ("content/a.md", 8), "{body}");
                assert!(value.to_ascii_lowercase().contains("script:") || value.contains(':'));
            }
        }
        assert_eq!(
            one("# A\n\n[x][r]\n\n[r]: javascript:alert(1)\n").unwrap_err(),
            DocsError::UnsafeUrl {
                file: "content/a.md".to_owned(),
                line: 8,
                value: "javascript:alert(1)".to_owned()
            }
        );
    }

    #[test]
    fn unresolvable_links_are_refused() {
        for (url, reason) in [
            ("missing.md", "no such page in content/"),
            ("missing.md#x", "no such page in content/"),
            ("#nowhere", "the fragment names no heading of that page"),
            (
                "glossary.md#nope",
                "the fragment names no heading of that page",
            ),
            ("../../etc/passwd", "the link leaves the repository"),
            (
                "/docs/a/",
                "root-absolute paths break on mirrors; link the page's file relatively",
            ),
            (
                "//evil.example/x",
                "protocol-relative URLs are not allowed; write https://",
            ),
            ("pic.png", "no such page in content/"),
        ] {
            assert_eq!(
                one(&format!("# A\n\n[x]({url})\n")).unwrap_err(),
                DocsError::BadLink {
                    file: "content/a.md".to_owned(),
                    line: 8,
                    value: url.to_owned(),
                    reason
                },
                "{url}"
            );
        }
        assert!(matches!(
            one("# A\n\n![x](pic.png)\n").unwrap_err(),
            DocsError::BadLink { line: 8, .. }
        ));
        assert!(one("# A\n\n![x](https://example.org/p.png)\n").is_ok());
    }

    #[test]
    fn the_index_is_what_rendering_gives() {
        let docs = load().unwrap();
        let index = index().unwrap();
        assert_eq!(index.nav, docs.nav());
        let dirs: Vec<SiteDir> = docs.all().map(|d| d.dir.clone()).collect();
        assert_eq!(index.dirs, dirs);
        let other = index_sources(&SOURCES[1..], REPOSITORY).unwrap();
        assert_ne!(other.digest, index.digest);
        assert_ne!(
            index_sources(SOURCES, "https://example.org/x")
                .unwrap()
                .digest,
            index.digest
        );
    }

    #[test]
    fn front_matter_is_required_and_strict() {
        let render = |source: &str| docs(&[("a.md", source)]).unwrap_err();
        assert_eq!(
            render("---\norder: 1\n---\n# A\n"),
            DocsError::MissingField {
                file: "content/a.md".to_owned(),
                line: 1,
                value: "title"
            }
        );
        assert_eq!(
            render("---\ntitle: A\n---\n# A\n"),
            DocsError::MissingField {
                file: "content/a.md".to_owned(),
                line: 1,
                value: "order"
            }
        );
        let front = |source: &str| match render(source) {
            DocsError::FrontMatter {
                line,
                value,
                reason,
                ..
            } => (line, value, reason),
            other => panic!("{other:?}"),
        };
        assert_eq!(front("# A\n").0, 1);
        assert_eq!(
            front("---\ntitle: A\norder: 1\n# A\n").2,
            "the front matter is never closed by `---`"
        );
        assert_eq!(front("---\ntitle: A\nauthor: me\norder: 1\n---\n").0, 3);
        assert_eq!(
            front("---\ntitle: A\ntitle: B\norder: 1\n---\n").2,
            "key given twice"
        );
        assert_eq!(front("---\ntitle: A\norder: -1\n---\n").1, "-1");
        assert_eq!(front("---\ntitle: [A]\norder: 1\n---\n").0, 2);
        assert_eq!(
            front("---\ntitle: \"\"\norder: 1\n---\n").2,
            "the title is empty"
        );
        let quoted =
            docs(&[("a.md", "---\ntitle: \"A: \\\"b\\\"\"\norder: 3\n---\n# A\n")]).unwrap();
        assert_eq!(quoted.pages[0].title, "A: \"b\"");
        let single = docs(&[("a.md", "---\n# c\ntitle: 'it''s'\n\norder: 3\n...\n# A\n")]).unwrap();
        assert_eq!(single.pages[0].title, "it's");
    }

    #[test]
    fn heading_attributes_other_than_an_id_are_refused() {
        assert_eq!(
            one("# A\n\n## B {.big}\n").unwrap_err(),
            DocsError::HeadingAttribute {
                file: "content/a.md".to_owned(),
                line: 8,
                value: ".big".to_owned()
            }
        );
        assert_eq!(
            one("# A\n\n## B {onclick=x}\n").unwrap_err(),
            DocsError::HeadingAttribute {
                file: "content/a.md".to_owned(),
                line: 8,
                value: "onclick".to_owned()
            }
        );
        assert_eq!(
            one("# A\n\n## B {#x}\n\n## C {#x}\n").unwrap_err(),
            DocsError::DuplicateId {
                file: "content/a.md".to_owned(),
                line: 10,
                value: "x".to_owned()
            }
        );
        assert_eq!(
            one("# A {#main}\n").unwrap_err(),
            DocsError::DuplicateId {
                file: "content/a.md".to_owned(),
                line: 6,
                value: "main".to_owned()
            }
        );
    }

    #[test]
    fn reserved_ids_are_the_chrome_ids() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../templates");
        let mut ids = Vec::new();
        for name in ["base.html", "doc.html"] {
            let text = std::fs::read_to_string(dir.join(name)).unwrap();
            for (i, _) in text.match_indices(" id=\"") {
                let rest = &text[i + 5..];
                ids.push(rest[..rest.find('"').unwrap()].to_owned());
            }
        }
        assert_eq!(ids, RESERVED_IDS);
    }

    #[test]
    fn relative_urls_between_directories() {
        let d = |s: &str| SiteDir::doc(&DocSlug::new(s).unwrap());
        assert_eq!(relative(&d("a"), &d("b")), "../b/");
        assert_eq!(relative(&d("a"), &SiteDir::docs()), "../");
        assert_eq!(relative(&SiteDir::docs(), &d("b")), "b/");
        assert_eq!(relative(&SiteDir::docs(), &SiteDir::docs()), "./");
        assert_eq!(relative(&SiteDir::glossary(), &d("b")), "../docs/b/");
        assert_eq!(relative(&d("a"), &SiteDir::glossary()), "../../glossary/");
    }
}
