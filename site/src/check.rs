//! `referee site check <dir>`: checks a built site (or any mirror of one) as a plain
//! directory, reading its files only.
//!
//! Each `.html` file is tokenized with html5ever's tokenizer (browser-grade: character
//! references in attributes decoded, `<title>` and `<script>` read as a browser reads
//! them), and then:
//! - every internal `href`, `src` and `xlink:href` resolves to a file of the tree (a link
//!   to a directory means its `index.html`); a root-absolute link (`/x`, broken on a
//!   mirror under a path) and one leaving the tree are problems too;
//! - every `#fragment` of an internal link to a page names an `id` (or an `<a name>`) of
//!   that page (the empty fragment and `#top` always resolve, as in browsers);
//! - no page holds an `id` twice;
//! - every page has a non-empty `<title>` and an `<html lang>`;
//! - every linked `.csv` is RFC 4180 (quoting, CRLF or LF line ends, one column count)
//!   and UTF-8, and every linked `.json` passes the strict JSON reader of `receipts`;
//! - no URL attribute holds a `javascript:` or `vbscript:` URL.
//!
//! External links (`https://…`, `//host/…`) are listed in the report, never fetched.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use rayon::prelude::*;
use receipts::fsutil::IoError;
use serde::Serialize;

use crate::docs::scheme;

/// Attributes that hold a URL a browser may load or navigate to: each is checked for a
/// script URL; `href`, `src` and `xlink:href` are also resolved.
const URL_ATTRIBUTES: &[&str] = &[
    "href",
    "src",
    "xlink:href",
    "action",
    "formaction",
    "poster",
    "cite",
    "data",
    "background",
];

/// The attributes whose internal URLs must resolve.
const LINK_ATTRIBUTES: &[&str] = &["href", "src", "xlink:href"];

/// Schemes that run script when navigated to.
const SCRIPT_SCHEMES: &[&str] = &["javascript", "vbscript"];

/// What is wrong, as a [`Problem`] names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// An internal link to no file of the tree (or leaving the tree).
    BrokenLink,
    /// A root-absolute link (`/c/demo/`): it breaks when the site is served under a path.
    AbsoluteLink,
    /// A link's `#fragment` names no `id` of the page it points to.
    MissingFragment,
    /// An `id` used twice on one page.
    DuplicateId,
    /// A page without a `<title>`, or with an empty one.
    MissingTitle,
    /// A page whose `<html>` has no `lang`, or an empty one.
    MissingLang,
    /// A linked CSV file that is not RFC 4180 (or not UTF-8).
    BadCsv,
    /// A linked JSON file that does not parse strictly.
    BadJson,
    /// A `javascript:` or `vbscript:` URL in a URL attribute.
    ScriptUrl,
    /// An `.html` file that is not UTF-8.
    NotUtf8,
    /// An `.html` page no link reaches from the roots: `index.html`, `404.html` and the
    /// pages the feeds and sitemaps (`.xml` files) name. Data files are exempt.
    Unreachable,
    /// A page with the same `<title>` as an earlier one (in path order): the same
    /// document published twice. The value is the earlier page.
    DuplicateDocument,
}

impl ProblemKind {
    /// The kind in words.
    pub fn describe(self) -> &'static str {
        match self {
            Self::BrokenLink => "broken link",
            Self::AbsoluteLink => "root-absolute link (breaks on a mirror under a path)",
            Self::MissingFragment => "link to a missing fragment",
            Self::DuplicateId => "duplicate id",
            Self::MissingTitle => "missing or empty <title>",
            Self::MissingLang => "missing or empty <html lang>",
            Self::BadCsv => "CSV does not parse",
            Self::BadJson => "JSON does not parse",
            Self::ScriptUrl => "script URL",
            Self::NotUtf8 => "not UTF-8",
            Self::Unreachable => "page no link reaches from the index, 404, feeds or sitemaps",
            Self::DuplicateDocument => "the same document as another page (same <title>)",
        }
    }
}

/// One problem found: in which file, on which line, what, and the value at fault.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Problem {
    /// The file, relative to the checked directory, `/`-separated.
    pub file: String,
    /// The 1-based line (of the tag, or of the CSV record); 0 when the whole file is meant.
    pub line: u64,
    /// What is wrong.
    pub kind: ProblemKind,
    /// The link, id or parser message at fault (empty for a missing title or lang).
    pub value: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: {}",
            receipts::text::escape_untrusted(&self.file),
            self.line,
            self.kind.describe()
        )?;
        if !self.value.is_empty() {
            write!(f, ": {}", receipts::text::escape_untrusted(&self.value))?;
        }
        Ok(())
    }
}

/// An external link, listed and never fetched.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct ExternalLink {
    /// The URL as written (after HTML decoding).
    pub url: String,
    /// The first page (in path order) that links it.
    pub file: String,
}

/// What `referee site check` found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CheckReport {
    /// `.html` files checked.
    pub pages: usize,
    /// Internal links resolved (each occurrence).
    pub internal_links: usize,
    /// Linked `.csv` and `.json` files parsed.
    pub data_files: usize,
    /// Every external URL once, sorted.
    pub external_links: Vec<ExternalLink>,
    /// Every problem, sorted by file, line, kind and value.
    pub problems: Vec<Problem>,
}

impl CheckReport {
    /// True when no problem was found.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Why the check could not run at all (a problem of the site is a [`Problem`], not this).
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The directory or one of its files could not be read.
    #[error(transparent)]
    Io(#[from] IoError),
    /// The path given is not a directory.
    #[error("`{}` is not a directory", .0.display())]
    NotADirectory(PathBuf),
}

/// Checks the site under `root`.
///
/// Errors: [`CheckError::NotADirectory`]; [`CheckError::Io`] naming a file or directory
/// that could not be read.
pub fn check_site(root: &Path) -> Result<CheckReport, CheckError> {
    if !root.is_dir() {
        return Err(CheckError::NotADirectory(root.to_path_buf()));
    }
    let mut files = Vec::new();
    let mut dirs = HashSet::new();
    walk(root, "", &mut files, &mut dirs)?;
    files.sort();
    let file_set: HashSet<&str> = files.iter().map(String::as_str).collect();
    let html: Vec<&String> = files.iter().filter(|f| f.ends_with(".html")).collect();
    let scans: Vec<(&String, Result<Scan, Problem>)> = html
        .par_iter()
        .map(|file| {
            let path = root.join(file.as_str());
            let bytes = fs::read(&path).map_err(IoError::at("reading", &path))?;
            let scan = match String::from_utf8(bytes) {
                Ok(text) => Ok(scan(&text)),
                Err(e) => Err(Problem {
                    file: (*file).clone(),
                    line: 0,
                    kind: ProblemKind::NotUtf8,
                    value: format!("invalid byte at offset {}", e.utf8_error().valid_up_to()),
                }),
            };
            Ok((*file, scan))
        })
        .collect::<Result<_, CheckError>>()?;
    let targets: HashMap<&str, &HashSet<String>> = scans
        .iter()
        .filter_map(|(file, scan)| scan.as_ref().ok().map(|s| (file.as_str(), &s.targets)))
        .collect();

    let mut report = CheckReport {
        pages: html.len(),
        ..CheckReport::default()
    };
    let mut external: BTreeSet<(String, String)> = BTreeSet::new();
    let mut data_files: BTreeSet<String> = BTreeSet::new();
    // Page → the pages it links, for what the roots reach.
    let mut links_to: HashMap<&str, Vec<String>> = HashMap::new();
    // Title → the first page (in path order) holding it.
    let mut titles: HashMap<&str, &str> = HashMap::new();
    for (file, scan) in &scans {
        let scan = match scan {
            Ok(scan) => scan,
            Err(problem) => {
                report.problems.push(problem.clone());
                continue;
            }
        };
        let problem = |line, kind, value: &str| Problem {
            file: (*file).clone(),
            line,
            kind,
            value: value.to_owned(),
        };
        for (id, line) in &scan.duplicate_ids {
            report
                .problems
                .push(problem(*line, ProblemKind::DuplicateId, id));
        }
        match scan.title.as_deref().map(str::trim) {
            None | Some("") => report
                .problems
                .push(problem(0, ProblemKind::MissingTitle, "")),
            Some(title) => {
                if let Some(first) = titles.insert(title, file.as_str()) {
                    titles.insert(title, first);
                    report
                        .problems
                        .push(problem(0, ProblemKind::DuplicateDocument, first));
                }
            }
        }
        if scan.lang.as_deref().is_none_or(|l| l.trim().is_empty()) {
            report
                .problems
                .push(problem(0, ProblemKind::MissingLang, ""));
        }
        for url in &scan.script_urls {
            report
                .problems
                .push(problem(url.line, ProblemKind::ScriptUrl, &url.value));
        }
        for link in &scan.links {
            match resolve(file, &link.value, &file_set, &dirs) {
                Resolved::External => {
                    external.insert((link.value.trim().to_owned(), (*file).clone()));
                }
                Resolved::Ignored => {}
                Resolved::Problem(kind) => {
                    report.problems.push(problem(link.line, kind, &link.value));
                }
                Resolved::File { path, fragment } => {
                    report.internal_links += 1;
                    if let Some(fragment) = fragment
                        && let Some(ids) = targets.get(path.as_str())
                        && !ids.contains(&fragment)
                    {
                        report.problems.push(problem(
                            link.line,
                            ProblemKind::MissingFragment,
                            &link.value,
                        ));
                    }
                    if path.ends_with(".csv") || path.ends_with(".json") {
                        data_files.insert(path);
                    } else if path.ends_with(".html") {
                        links_to.entry(file.as_str()).or_default().push(path);
                    }
                }
            }
        }
    }
    let roots = roots(root, &files, &file_set, &dirs)?;
    report.problems.extend(
        unreachable(&html, roots, &links_to)
            .into_iter()
            .map(|file| Problem {
                file: file.to_owned(),
                line: 0,
                kind: ProblemKind::Unreachable,
                value: String::new(),
            }),
    );
    let mut seen_urls = HashSet::new();
    report.external_links = external
        .into_iter()
        .filter(|(url, _)| seen_urls.insert(url.clone()))
        .map(|(url, file)| ExternalLink { url, file })
        .collect();
    report.data_files = data_files.len();
    let data_problems: Vec<Option<Problem>> = data_files
        .par_iter()
        .map(|file| {
            let path = root.join(file);
            let bytes = fs::read(&path).map_err(IoError::at("reading", &path))?;
            let problem = if file.ends_with(".csv") {
                check_csv(&bytes).err().map(|(line, value)| Problem {
                    file: file.clone(),
                    line,
                    kind: ProblemKind::BadCsv,
                    value,
                })
            } else {
                receipts::canonical::parse_strict(&bytes, bytes.len())
                    .err()
                    .map(|e| Problem {
                        file: file.clone(),
                        line: 0,
                        kind: ProblemKind::BadJson,
                        value: e.to_string(),
                    })
            };
            Ok(problem)
        })
        .collect::<Result<_, CheckError>>()?;
    report.problems.extend(data_problems.into_iter().flatten());
    report.problems.sort();
    Ok(report)
}

/// The pages every reader starts from: `index.html`, `404.html`, and every page a feed
/// or sitemap (an `.xml` file) names with `href="…"` or `<loc>…</loc>` — relative to the
/// `.xml` file, or an absolute URL whose path ends in a page of the tree.
///
/// Errors: [`CheckError::Io`] when an `.xml` file cannot be read.
fn roots(
    root: &Path,
    files: &[String],
    file_set: &HashSet<&str>,
    dirs: &HashSet<String>,
) -> Result<Vec<String>, CheckError> {
    let mut roots: Vec<String> = ["index.html", "404.html"]
        .into_iter()
        .filter(|f| file_set.contains(f))
        .map(str::to_owned)
        .collect();
    for xml in files.iter().filter(|f| f.ends_with(".xml")) {
        let path = root.join(xml);
        let bytes = fs::read(&path).map_err(IoError::at("reading", &path))?;
        let text = String::from_utf8_lossy(&bytes);
        let urls = text
            .split("href=\"")
            .skip(1)
            .chain(text.split("<loc>").skip(1))
            .filter_map(|rest| rest.split(['"', '<']).next());
        for url in urls {
            let url = url.replace("&amp;", "&");
            match resolve(xml, &url, file_set, dirs) {
                Resolved::File { path, .. } => roots.push(path),
                Resolved::External => roots.extend(page_of_absolute(&url, file_set, dirs)),
                Resolved::Ignored | Resolved::Problem(_) => {}
            }
        }
    }
    Ok(roots)
}

/// The page of the tree an absolute URL (`https://host/base/c/demo/`) names: the longest
/// tail of its path that is a page (or a directory with an `index.html`).
fn page_of_absolute(url: &str, file_set: &HashSet<&str>, dirs: &HashSet<String>) -> Option<String> {
    let after_scheme = url.split_once("//").map_or(url, |(_, rest)| rest);
    let path = after_scheme.split_once('/').map_or("", |(_, path)| path);
    let path = path.split(['?', '#']).next().unwrap_or("");
    let segments: Vec<&str> = path.split('/').collect();
    (0..segments.len()).find_map(|from| {
        let tail = segments[from..].join("/");
        let tail = tail.trim_end_matches('/');
        let page = if tail.is_empty() {
            "index.html".to_owned()
        } else if dirs.contains(tail) {
            format!("{tail}/index.html")
        } else {
            tail.to_owned()
        };
        file_set.contains(page.as_str()).then_some(page)
    })
}

/// The pages of `html` that no chain of links from `roots` reaches, in path order.
fn unreachable<'a>(
    html: &[&'a String],
    roots: Vec<String>,
    links_to: &HashMap<&str, Vec<String>>,
) -> Vec<&'a str> {
    let mut reached: HashSet<String> = HashSet::new();
    let mut queue = roots;
    while let Some(page) = queue.pop() {
        if !reached.insert(page.clone()) {
            continue;
        }
        if let Some(next) = links_to.get(page.as_str()) {
            queue.extend(next.iter().filter(|p| !reached.contains(*p)).cloned());
        }
    }
    html.iter()
        .map(|f| f.as_str())
        .filter(|f| !reached.contains(*f))
        .collect()
}

/// Lists every file under `dir` (relative to the root, `/`-separated, prefixed by
/// `prefix`) into `files`, and every directory into `dirs`. Symbolic links are listed as
/// files and not followed.
fn walk(
    dir: &Path,
    prefix: &str,
    files: &mut Vec<String>,
    dirs: &mut HashSet<String>,
) -> Result<(), CheckError> {
    for entry in fs::read_dir(dir).map_err(IoError::at("listing", dir))? {
        let entry = entry.map_err(IoError::at("listing", dir))?;
        let path = entry.path();
        let kind = entry.file_type().map_err(IoError::at("reading", &path))?;
        let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
        if kind.is_dir() {
            walk(&path, &format!("{name}/"), files, dirs)?;
            dirs.insert(name);
        } else {
            files.push(name);
        }
    }
    Ok(())
}

/// A URL attribute's value and the line of its tag.
#[derive(Debug)]
struct Url {
    value: String,
    line: u64,
}

/// What one page holds that the check needs.
#[derive(Debug, Default)]
struct Scan {
    /// Every `id` and `<a name>`: what a fragment may name.
    targets: HashSet<String>,
    /// Each `id` seen a second (third, …) time, with its line.
    duplicate_ids: Vec<(String, u64)>,
    /// The first `<title>`'s text outside SVG/MathML.
    title: Option<String>,
    /// The first `<html>`'s `lang`.
    lang: Option<String>,
    /// Every `href`, `src` and `xlink:href`.
    links: Vec<Url>,
    /// Every URL attribute holding a script URL.
    script_urls: Vec<Url>,
}

/// The tokenizer's sink: collects a [`Scan`] and switches the tokenizer into the text
/// modes a browser's tree builder would (`<title>`, `<script>`, `<style>`, …) outside
/// foreign (SVG/MathML) content.
#[derive(Default)]
struct Sink {
    scan: RefCell<Scan>,
    /// Depth of open `<svg>`/`<math>` elements.
    foreign: Cell<u32>,
    /// The title's text while inside the first `<title>`.
    title: RefCell<Option<String>>,
    seen_html: Cell<bool>,
}

impl TokenSink for Sink {
    type Handle = ();

    fn process_token(&self, token: Token, line: u64) -> TokenSinkResult<()> {
        match token {
            Token::TagToken(tag) => {
                let name: &str = &tag.name;
                let mut scan = self.scan.borrow_mut();
                if tag.kind == TagKind::EndTag {
                    if name == "title"
                        && let Some(text) = self.title.borrow_mut().take()
                    {
                        scan.title = Some(text);
                    }
                    if matches!(name, "svg" | "math") && self.foreign.get() > 0 {
                        self.foreign.set(self.foreign.get() - 1);
                    }
                    return TokenSinkResult::Continue;
                }
                for attr in &tag.attrs {
                    let attr_name: &str = &attr.name.local;
                    let value: &str = &attr.value;
                    if attr_name == "id" {
                        if !scan.targets.insert(value.to_owned()) {
                            scan.duplicate_ids.push((value.to_owned(), line));
                        }
                    } else if attr_name == "name" && name == "a" {
                        scan.targets.insert(value.to_owned());
                    }
                    if URL_ATTRIBUTES.contains(&attr_name) {
                        let url = Url {
                            value: value.to_owned(),
                            line,
                        };
                        if scheme(value).is_some_and(|s| SCRIPT_SCHEMES.contains(&s.as_str())) {
                            scan.script_urls.push(url);
                        } else if LINK_ATTRIBUTES.contains(&attr_name) {
                            scan.links.push(url);
                        }
                    }
                }
                if name == "html" && !self.seen_html.replace(true) {
                    scan.lang = tag
                        .attrs
                        .iter()
                        .find(|a| &*a.name.local == "lang")
                        .map(|a| a.value.to_string());
                }
                if self.foreign.get() > 0 {
                    if matches!(name, "svg" | "math") && !tag.self_closing {
                        self.foreign.set(self.foreign.get() + 1);
                    }
                    return TokenSinkResult::Continue;
                }
                match name {
                    "svg" | "math" if !tag.self_closing => {
                        self.foreign.set(1);
                        TokenSinkResult::Continue
                    }
                    "title" => {
                        if scan.title.is_none() {
                            *self.title.borrow_mut() = Some(String::new());
                        }
                        TokenSinkResult::RawData(RawKind::Rcdata)
                    }
                    "textarea" => TokenSinkResult::RawData(RawKind::Rcdata),
                    "style" | "xmp" | "iframe" | "noembed" | "noframes" | "noscript" => {
                        TokenSinkResult::RawData(RawKind::Rawtext)
                    }
                    "script" => TokenSinkResult::RawData(RawKind::ScriptData),
                    "plaintext" => TokenSinkResult::Plaintext,
                    _ => TokenSinkResult::Continue,
                }
            }
            Token::CharacterTokens(text) => {
                if let Some(title) = self.title.borrow_mut().as_mut() {
                    title.push_str(&text);
                }
                TokenSinkResult::Continue
            }
            _ => TokenSinkResult::Continue,
        }
    }

    fn adjusted_current_node_present_but_not_in_html_namespace(&self) -> bool {
        self.foreign.get() > 0
    }
}

/// Tokenizes one page.
fn scan(text: &str) -> Scan {
    let input = BufferQueue::default();
    input.push_back(StrTendril::from_slice(text));
    let tokenizer = Tokenizer::new(Sink::default(), TokenizerOpts::default());
    // The sink never asks to pause for a script, so one feed consumes the input.
    let _ = tokenizer.feed(&input);
    tokenizer.end();
    tokenizer.sink.scan.take()
}

/// Where a link of a page leads.
#[derive(Debug, PartialEq, Eq)]
enum Resolved {
    /// `https://…`, `//host/…`: listed.
    External,
    /// Another scheme (`mailto:`, `data:`): neither listed nor resolved.
    Ignored,
    /// A file of the tree, and the fragment to find on it (`None` for none, the empty
    /// one and `top`).
    File {
        path: String,
        fragment: Option<String>,
    },
    /// It does not resolve.
    Problem(ProblemKind),
}

/// Resolves `url`, linked from the page `page` (relative to the root), against the tree.
fn resolve(page: &str, url: &str, files: &HashSet<&str>, dirs: &HashSet<String>) -> Resolved {
    let url = url.trim_matches(|c: char| c.is_ascii_whitespace());
    match scheme(url).as_deref() {
        Some("http" | "https") => return Resolved::External,
        Some(_) => return Resolved::Ignored,
        None => {}
    }
    if url.starts_with("//") {
        return Resolved::External;
    }
    if url.starts_with('/') {
        return Resolved::Problem(ProblemKind::AbsoluteLink);
    }
    let (rest, fragment) = match url.split_once('#') {
        Some((r, f)) => (r, Some(percent_decode(f))),
        None => (url, None),
    };
    let path = rest.split('?').next().unwrap_or("");
    let fragment = fragment.filter(|f| !f.is_empty() && !f.eq_ignore_ascii_case("top"));
    if path.is_empty() {
        return Resolved::File {
            path: page.to_owned(),
            fragment,
        };
    }
    let mut segments: Vec<String> = page.split('/').map(str::to_owned).collect();
    segments.pop(); // the page's own file name
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if segments.pop().is_none() {
                    return Resolved::Problem(ProblemKind::BrokenLink);
                }
            }
            s => segments.push(percent_decode(s)),
        }
    }
    let joined = segments.join("/");
    let is_dir = path.ends_with('/') || joined.is_empty() || dirs.contains(&joined);
    let target = if !is_dir {
        joined
    } else if joined.is_empty() {
        "index.html".to_owned()
    } else {
        format!("{joined}/index.html")
    };
    if files.contains(target.as_str()) {
        Resolved::File {
            path: target,
            fragment,
        }
    } else {
        Resolved::Problem(ProblemKind::BrokenLink)
    }
}

/// `%XX` escapes decoded (as UTF-8, invalid sequences as U+FFFD); a `%` not followed by
/// two hex digits stays as it is.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Checks `bytes` as RFC 4180 CSV: UTF-8; fields unquoted (no `"`, CR or LF inside) or
/// quoted (`""` for a quote, then a comma or a line end); records ended by CRLF or LF
/// (the last one optionally); every record with the first record's number of fields.
///
/// Errors: the 1-based line of the first problem and what it is.
fn check_csv(bytes: &[u8]) -> Result<(), (u64, String)> {
    if let Err(e) = std::str::from_utf8(bytes) {
        return Err((0, format!("invalid UTF-8 at byte {}", e.valid_up_to())));
    }
    if bytes.is_empty() {
        return Err((0, "empty file: not even a header".to_owned()));
    }
    let mut line: u64 = 1;
    let mut record_line: u64 = 1;
    let mut record = 0u64;
    let mut fields = 1usize;
    let mut expected: Option<usize> = None;
    let mut i = 0;
    let mut at_field_start = true;
    let mut end_record = |fields: usize, record_line: u64| -> Result<(), (u64, String)> {
        record += 1;
        match expected {
            None => expected = Some(fields),
            Some(n) if n != fields => {
                return Err((
                    record_line,
                    format!("record {record} has {fields} fields, the first has {n}"),
                ));
            }
            Some(_) => {}
        }
        Ok(())
    };
    while i < bytes.len() {
        let b = bytes[i];
        if at_field_start && b == b'"' {
            // A quoted field: up to the closing quote.
            let opened = line;
            i += 1;
            loop {
                match bytes.get(i) {
                    None => return Err((opened, "unterminated quoted field".to_owned())),
                    Some(b'"') if bytes.get(i + 1) == Some(&b'"') => i += 2,
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(b'\n') => {
                        line += 1;
                        i += 1;
                    }
                    Some(_) => i += 1,
                }
            }
            match bytes.get(i) {
                None | Some(b',' | b'\n' | b'\r') => {}
                Some(_) => return Err((line, "text after a closing quote".to_owned())),
            }
            at_field_start = false;
            continue;
        }
        match b {
            b',' => {
                fields += 1;
                at_field_start = true;
                i += 1;
            }
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => {
                i += 1; // the LF ends the record below
            }
            b'\n' => {
                end_record(fields, record_line)?;
                line += 1;
                record_line = line;
                fields = 1;
                at_field_start = true;
                i += 1;
            }
            b'\r' => return Err((line, "a CR that is not part of a line end".to_owned())),
            b'"' => return Err((line, "a quote inside an unquoted field".to_owned())),
            _ => {
                at_field_start = false;
                i += 1;
            }
        }
    }
    // A last record without a line end.
    if !bytes.ends_with(b"\n") {
        end_record(fields, record_line)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page with a title and a lang around `body`.
    /// A page holding `body`, with a title of its own (no two pages are one document).
    fn page(body: &str) -> String {
        static PAGES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = PAGES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!(
            "<!doctype html>\n<html lang=\"en\">\n<head><title>T{n}</title></head>\n<body>\n{body}\n</body>\n</html>\n"
        )
    }

    /// Writes `files` under a temp dir and checks it.
    fn check(files: &[(&str, &str)]) -> CheckReport {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            let path = dir.path().join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        check_site(dir.path()).unwrap()
    }

    fn problems(report: &CheckReport) -> Vec<(String, u64, ProblemKind, String)> {
        report
            .problems
            .iter()
            .map(|p| (p.file.clone(), p.line, p.kind, p.value.clone()))
            .collect()
    }

    fn p(
        file: &str,
        line: u64,
        kind: ProblemKind,
        value: &str,
    ) -> (String, u64, ProblemKind, String) {
        (file.to_owned(), line, kind, value.to_owned())
    }

    #[test]
    fn a_clean_tree_has_no_problem() {
        let report = check(&[
            (
                "index.html",
                &page(
                    "<a href=\"c/demo/\">c</a> <a href=\"c/demo/#rounds\">r</a> <a href=\"#x\" id=\"x\">me</a>\n\
                     <a href=\"c/demo/rounds.csv\">csv</a> <a href=\"api/index.json\">json</a>\n\
                     <a href=\"https://example.org/a\">e</a> <a href=\"https://example.org/a\">again</a>\n\
                     <a href=\"mailto:x@example.org\">m</a> <a href=\"#\">top</a> <a href=\"#top\">top</a>\n\
                     <link rel=\"stylesheet\" href=\"style.css\"><img src=\"c/demo/chart.svg#p\" alt=\"\">\n\
                     <a href=\"c/demo\">no slash</a> <a href=\"c/demo/index.html?sort=1#rounds\">q</a>\n\
                     <a href=\"d%20e/\">space</a> <a href=\"c/demo/#caf%C3%A9\">enc</a>\n\
                     <svg><title>chart</title><use href=\"#x\"/><a xlink:href=\"c/demo/\"><text>t</text></a></svg>\n\
                     <script src=\"sort.js\"></script>",
                ),
            ),
            (
                "c/demo/index.html",
                &page(
                    "<h2 id=\"rounds\">R</h2><h2 id=\"café\">C</h2><a href=\"../../\">home</a>\
                     <a href=\"../../index.html#x\">x</a><a name=\"old\"></a><a href=\"#old\">o</a>",
                ),
            ),
            (
                "c/demo/rounds.csv",
                "round,note\r\n1,\"a, \"\"quoted\"\"\nnote\"\r\n2,\r\n",
            ),
            ("c/demo/chart.svg", "<svg/>"),
            ("api/index.json", "{\"a\": [1, 2]}"),
            ("d e/index.html", &page("")),
            ("style.css", "body{}"),
            ("sort.js", "0"),
        ]);
        assert_eq!(problems(&report), []);
        assert!(report.is_clean());
        assert_eq!(report.pages, 3);
        assert_eq!(report.data_files, 2);
        assert_eq!(report.internal_links, 19);
        assert_eq!(
            report.external_links,
            [ExternalLink {
                url: "https://example.org/a".to_owned(),
                file: "index.html".to_owned()
            }]
        );
    }

    #[test]
    fn broken_links_are_found() {
        let report = check(&[
            (
                "index.html",
                &page(
                    "<a href=\"c/missing/\">a</a>\n<img src=\"nope.png\" alt=\"\">\n\
                     <a href=\"../../outside.html\">b</a>\n<a href=\"/c/demo/\">abs</a>\n\
                     <a href=\"c/demo/x.html\">c</a>",
                ),
            ),
            ("c/demo/index.html", &page("")),
        ]);
        assert_eq!(
            problems(&report),
            [
                // Linked only by a root-absolute link, which does not resolve.
                p("c/demo/index.html", 0, ProblemKind::Unreachable, ""),
                p("index.html", 5, ProblemKind::BrokenLink, "c/missing/"),
                p("index.html", 6, ProblemKind::BrokenLink, "nope.png"),
                p(
                    "index.html",
                    7,
                    ProblemKind::BrokenLink,
                    "../../outside.html"
                ),
                p("index.html", 8, ProblemKind::AbsoluteLink, "/c/demo/"),
                p("index.html", 9, ProblemKind::BrokenLink, "c/demo/x.html"),
            ]
        );
        assert_eq!(
            report.problems[1].to_string(),
            "index.html:5: broken link: c/missing/"
        );
    }

    #[test]
    fn missing_fragments_are_found() {
        let report = check(&[
            (
                "index.html",
                &page(
                    "<a href=\"#nowhere\">a</a> <a href=\"c/#gone\">b</a> <a href=\"c/#here\">c</a>",
                ),
            ),
            ("c/index.html", &page("<p id=\"here\">h</p>")),
        ]);
        assert_eq!(
            problems(&report),
            [
                p("index.html", 5, ProblemKind::MissingFragment, "#nowhere"),
                p("index.html", 5, ProblemKind::MissingFragment, "c/#gone"),
            ]
        );
    }

    #[test]
    fn duplicate_ids_are_found() {
        let report = check(&[(
            "index.html",
            &page(
                "<h2 id=\"a\">1</h2>\n<h2 id=\"b\">2</h2>\n<svg><g id=\"a\"></g></svg>\n<p id=\"a\"></p>",
            ),
        )]);
        assert_eq!(
            problems(&report),
            [
                p("index.html", 7, ProblemKind::DuplicateId, "a"),
                p("index.html", 8, ProblemKind::DuplicateId, "a"),
            ]
        );
    }

    #[test]
    fn missing_titles_and_langs_are_found() {
        let report = check(&[
            (
                "no-title.html",
                "<!doctype html><html lang=\"en\"><head></head><body></body></html>",
            ),
            (
                "empty-title.html",
                "<html lang=\"en\"><title>  </title></html>",
            ),
            // An SVG's title is not the page's.
            (
                "svg-title.html",
                "<html lang=\"en\"><body><svg><title>chart</title></svg></body></html>",
            ),
            ("no-lang.html", "<html><title>T1</title></html>"),
            (
                "empty-lang.html",
                "<html lang=\"\"><title>T2</title></html>",
            ),
            ("no-html.html", "<title>T3</title>"),
            // Markup inside <title> is text, as in a browser.
            (
                "markup.html",
                "<html lang=\"en\"><title><b>x</b></title><p id=\"b\"></p></html>",
            ),
        ]);
        // Only these pages' titles and langs are under test (no index links them).
        let found: Vec<_> = problems(&report)
            .into_iter()
            .filter(|p| matches!(p.2, ProblemKind::MissingTitle | ProblemKind::MissingLang))
            .collect();
        assert_eq!(
            found,
            [
                p("empty-lang.html", 0, ProblemKind::MissingLang, ""),
                p("empty-title.html", 0, ProblemKind::MissingTitle, ""),
                p("no-html.html", 0, ProblemKind::MissingLang, ""),
                p("no-lang.html", 0, ProblemKind::MissingLang, ""),
                p("no-title.html", 0, ProblemKind::MissingTitle, ""),
                p("svg-title.html", 0, ProblemKind::MissingTitle, ""),
            ]
        );
    }

    #[test]
    fn bad_csv_files_are_found() {
        let cases = [
            (
                "ragged.csv",
                "a,b\n1,2\n3\n",
                3,
                "record 3 has 1 fields, the first has 2",
            ),
            (
                "bare-quote.csv",
                "a,b\n1,x\"y\n",
                2,
                "a quote inside an unquoted field",
            ),
            (
                "after-quote.csv",
                "a,b\n\"1\"x,2\n",
                2,
                "text after a closing quote",
            ),
            (
                "open-quote.csv",
                "a,b\n\"1,2\n",
                2,
                "unterminated quoted field",
            ),
            (
                "bare-cr.csv",
                "a,b\r1,2\n",
                1,
                "a CR that is not part of a line end",
            ),
            ("empty.csv", "", 0, "empty file: not even a header"),
        ];
        let mut files: Vec<(String, String)> = cases
            .iter()
            .map(|(name, text, _, _)| ((*name).to_owned(), (*text).to_owned()))
            .collect();
        let links: String = cases
            .iter()
            .map(|(n, ..)| format!("<a href=\"{n}\">x</a>"))
            .collect();
        files.push(("index.html".to_owned(), page(&links)));
        // Not linked: not parsed.
        files.push(("unlinked.csv".to_owned(), "\"".to_owned()));
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let report = check(&refs);
        let mut expected: Vec<_> = cases
            .iter()
            .map(|(name, _, line, message)| p(name, *line, ProblemKind::BadCsv, message))
            .collect();
        expected.sort();
        assert_eq!(problems(&report), expected);
        assert_eq!(report.data_files, 6);
        // Invalid UTF-8 is refused too.
        assert_eq!(
            check_csv(b"a\n\xff\n"),
            Err((0, "invalid UTF-8 at byte 2".to_owned()))
        );
        assert_eq!(check_csv(b"a,b\r\n1,2"), Ok(()));
        assert_eq!(check_csv(b"\"a\nb\",c\n"), Ok(()));
    }

    #[test]
    fn bad_json_files_are_found() {
        let report = check(&[
            (
                "index.html",
                &page("<a href=\"a.json\">a</a><a href=\"b.json\">b</a><a href=\"ok.json\">ok</a>"),
            ),
            ("a.json", "{\"a\": 1,}"),
            ("b.json", "{\"a\": 1, \"a\": 2}"),
            ("ok.json", "[]"),
        ]);
        assert_eq!(
            problems(&report),
            [
                p(
                    "a.json",
                    0,
                    ProblemKind::BadJson,
                    "invalid JSON at byte 8: expected a string key"
                ),
                p(
                    "b.json",
                    0,
                    ProblemKind::BadJson,
                    "duplicate key `a` in the object at ``"
                ),
            ]
        );
    }

    #[test]
    fn script_urls_are_found_in_any_url_attribute() {
        let report = check(&[(
            "index.html",
            &page(
                "<a href=\"javascript:alert(1)\">a</a>\n<a href=\" JaVaScRiPt:x\">b</a>\n\
                 <a href=\"java&#x09;script:x\">c</a>\n<form action=\"vbscript:x\"></form>\n\
                 <p title=\"javascript: is text here\">ok</p>",
            ),
        )]);
        assert_eq!(
            problems(&report),
            [
                p(
                    "index.html",
                    5,
                    ProblemKind::ScriptUrl,
                    "javascript:alert(1)"
                ),
                p("index.html", 6, ProblemKind::ScriptUrl, " JaVaScRiPt:x"),
                p("index.html", 7, ProblemKind::ScriptUrl, "java\tscript:x"),
                p("index.html", 8, ProblemKind::ScriptUrl, "vbscript:x"),
            ]
        );
    }

    #[test]
    fn a_page_that_is_not_utf8_is_a_problem() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join("index.html"),
            b"<html lang=\"en\"><title>\xff</title>",
        )
        .unwrap();
        let report = check_site(dir.path()).unwrap();
        assert_eq!(
            problems(&report),
            [p(
                "index.html",
                0,
                ProblemKind::NotUtf8,
                "invalid byte at offset 23"
            )]
        );
        assert!(matches!(
            check_site(&dir.path().join("index.html")),
            Err(CheckError::NotADirectory(_))
        ));
    }

    #[test]
    fn the_docs_pages_link_correctly() {
        // Every docs page rendered through templates/doc.html and written where the build
        // writes it, with stand-ins for the chrome's links to pages that are not docs:
        // every link and fragment resolves.
        let docs = crate::docs::load().unwrap();
        let renderer = crate::render::Renderer::new(crate::render::SiteInfo {
            base_url: String::new(),
            docs: docs.nav(),
        })
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        };
        for doc in docs.all() {
            let path = doc.dir.page();
            write(
                path.as_str(),
                &renderer.render("doc.html", &path, doc).unwrap(),
            );
        }
        // The chrome's other links (templates/base.html).
        write(
            "index.html",
            &page("<a href=\"docs/\">Docs</a> <a href=\"rejected/\">Rejected receipts</a>"),
        );
        write("rejected/index.html", &page(""));
        write("style.css", "");
        write("keys/keyring.json", "[]");
        let report = check_site(dir.path()).unwrap();
        assert_eq!(problems(&report), []);
        // Every docs page and the glossary once (not also at docs/glossary/).
        assert_eq!(report.pages, 26);
        assert!(report.internal_links > 500, "{}", report.internal_links);
        let rounds = fs::read_to_string(dir.path().join("docs/rounds/index.html")).unwrap();
        for expected in [
            "<title>Rounds · referee</title>",
            r#"<a href="../../docs/rounds/" aria-current="page">Rounds</a>"#,
            r##"<li class="toc-2"><a href="#interleaved-passes">Interleaved passes</a></li>"##,
            r##"<li class="toc-3"><a href="#one-run-of-an-entry">One run of an entry</a></li>"##,
            r#"<h2 id="interleaved-passes">Interleaved passes</h2>"#,
        ] {
            assert!(rounds.contains(expected), "{expected} not in {rounds}");
        }
    }

    /// Issue 43: a page no link reaches from the roots (index, 404, the pages a feed or
    /// sitemap names) is found; so is a document published twice; data files are exempt.
    #[test]
    fn orphan_pages_and_documents_published_twice_are_found() {
        let report = check(&[
            (
                "index.html",
                &page(
                    "<a href=\"c/demo/\">demo</a> <a href=\"data.json\">data</a> \
                     <a href=\"glossary/\">glossary</a>",
                ),
            ),
            ("c/demo/index.html", &page("<a href=\"r/1/\">round 1</a>")),
            ("c/demo/r/1/index.html", &page("")),
            // Named by the campaign's feed only, and by an absolute sitemap URL.
            (
                "c/demo/feed.xml",
                "<feed><link rel=\"alternate\" href=\"r/2/\"/></feed>",
            ),
            ("c/demo/r/2/index.html", &page("")),
            (
                "sitemap.xml",
                "<urlset><url><loc>https://example.org/board/c/demo/r/3/</loc></url></urlset>",
            ),
            ("c/demo/r/3/index.html", &page("")),
            ("404.html", &page("<a href=\"help/\">help</a>")),
            ("help/index.html", &page("")),
            // Linked from nowhere.
            ("c/demo/s/index.html", &page("")),
            ("data.json", "[]"),
            ("orphan.json", "[]"),
            (
                "glossary/index.html",
                "<!doctype html><html lang=\"en\"><title>Glossary</title><a href=\"../docs/glossary/\">x</a></html>",
            ),
            (
                "docs/glossary/index.html",
                "<!doctype html><html lang=\"en\"><title>Glossary</title></html>",
            ),
        ]);
        assert_eq!(
            problems(&report),
            [
                p("c/demo/s/index.html", 0, ProblemKind::Unreachable, ""),
                p(
                    "glossary/index.html",
                    0,
                    ProblemKind::DuplicateDocument,
                    "docs/glossary/index.html"
                ),
            ]
        );
        assert_eq!(
            report.problems[0].to_string(),
            "c/demo/s/index.html:0: page no link reaches from the index, 404, feeds or sitemaps"
        );
    }
}
