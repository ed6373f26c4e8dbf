//! The tera environment: every template of `templates/` embedded in the binary, HTML
//! autoescape on for all of them, and the context `{ page, site }` every page renders
//! with.
//!
//! `page` is the page's model; `site` is the chrome (`Chrome`): `site.root`, the relative
//! prefix from the page to the site root (so the output works from `file://` and from any
//! mirror path), the docs navigation, and the base URL the site is published at.

use std::sync::OnceLock;

use serde::Serialize;
use tera::{Context, Tera};

use crate::error::SiteError;
use crate::paths::SitePath;

/// Every template, embedded (the binary needs no source tree). A file of `templates/`
/// missing here fails the test `every_template_file_is_embedded`.
pub const TEMPLATES: &[(&str, &str)] = &[
    ("base.html", include_str!("../../templates/base.html")),
    (
        "campaign.html",
        include_str!("../../templates/campaign.html"),
    ),
    ("doc.html", include_str!("../../templates/doc.html")),
    ("entry.html", include_str!("../../templates/entry.html")),
    ("index.html", include_str!("../../templates/index.html")),
    ("miner.html", include_str!("../../templates/miner.html")),
    (
        "miner-submissions.html",
        include_str!("../../templates/miner-submissions.html"),
    ),
    (
        "_submissions-table.html",
        include_str!("../../templates/_submissions-table.html"),
    ),
    (
        "rejected.html",
        include_str!("../../templates/rejected.html"),
    ),
    ("round.html", include_str!("../../templates/round.html")),
    (
        "submissions.html",
        include_str!("../../templates/submissions.html"),
    ),
    ("rounds.html", include_str!("../../templates/rounds.html")),
    (
        "_seat-box.html",
        include_str!("../../templates/_seat-box.html"),
    ),
    (
        "_attested.html",
        include_str!("../../templates/_attested.html"),
    ),
    ("_review.html", include_str!("../../templates/_review.html")),
    (
        "_rounds-table.html",
        include_str!("../../templates/_rounds-table.html"),
    ),
    (
        "submission.html",
        include_str!("../../templates/submission.html"),
    ),
];

/// Static files of `templates/` copied as they are to the site root (`/style.css`).
pub const STATIC_FILES: &[(&str, &str)] =
    &[("style.css", include_str!("../../templates/style.css"))];

/// A link of the docs navigation, relative to the site root (`docs/rounds/`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NavLink {
    /// The page's title (from its front matter).
    pub title: String,
    /// The page's directory relative to the site root, ending in `/`.
    pub href: String,
}

/// What every page's `site` holds besides its relative root.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SiteInfo {
    /// The URL the site is published at, ending in `/` (`https://example.org/referee/`), or
    /// empty when unknown (links stay relative either way; feeds and the sitemap use it).
    pub base_url: String,
    /// The docs navigation, in order.
    pub docs: Vec<NavLink>,
}

/// The `site` value of a page's context.
#[derive(Serialize)]
struct Chrome<'a> {
    /// Relative prefix from the page to the site root: `""`, `../`, `../../`, …
    root: String,
    /// The page's own path relative to the site root (`c/demo/index.html`).
    path: &'a str,
    /// The page's canonical directory URL (`c/demo/`), relative to the root.
    dir: &'a str,
    base_url: &'a str,
    docs: &'a [NavLink],
}

/// The environment the build renders with.
pub struct Renderer {
    tera: Tera,
    info: SiteInfo,
}

impl Renderer {
    /// Parses every embedded template with autoescape on for each of them.
    ///
    /// Errors: [`SiteError::Template`] when a template does not parse (a bug in
    /// `templates/`).
    pub fn new(info: SiteInfo) -> Result<Self, SiteError> {
        let mut tera = Tera::new();
        // Every template name ends with "": autoescape is on for all of them, whatever
        // their suffix.
        tera.autoescape_on([""]);
        tera.set_escape_fn(escape_html);
        tera.add_raw_templates(TEMPLATES.iter().copied())
            .map_err(|e| SiteError::Template {
                template: "templates/".to_owned(),
                message: e.to_string(),
            })?;
        Ok(Self { tera, info })
    }

    /// What the pages' `site` holds besides the root.
    pub fn info(&self) -> &SiteInfo {
        &self.info
    }

    /// Renders `template` for the page written at `path` with `{ page: model, site }`.
    ///
    /// Errors: [`SiteError::Template`] naming the template (an unknown template, a
    /// model missing a field the template reads).
    pub fn render<M: Serialize + ?Sized>(
        &self,
        template: &str,
        path: &SitePath,
        model: &M,
    ) -> Result<String, SiteError> {
        let dir = path.as_str().rsplit_once('/').map_or("", |(d, _)| d);
        let dir_url = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let chrome = Chrome {
            root: path.root_prefix(),
            path: path.as_str(),
            dir: &dir_url,
            base_url: &self.info.base_url,
            docs: &self.info.docs,
        };
        let mut context = Context::new();
        context.insert("page", model);
        context.insert("site", &chrome);
        self.tera
            .render(template, &context)
            .map_err(|e| SiteError::Template {
                template: template.to_owned(),
                message: error_chain(&e),
            })
    }
}

/// Tera's message with its causes.
fn error_chain(e: &tera::Error) -> String {
    let mut message = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

/// Renders `template` for the page at `path` with an empty [`SiteInfo`] (no base URL, no
/// docs navigation): what page tests call. The environment is parsed once per process.
///
/// Errors: as [`Renderer::render`], and [`SiteError::Template`] when the templates do not
/// parse.
pub fn render<M: Serialize + ?Sized>(
    template: &str,
    path: &SitePath,
    model: &M,
) -> Result<String, SiteError> {
    static DEFAULT: OnceLock<Result<Renderer, String>> = OnceLock::new();
    match DEFAULT.get_or_init(|| Renderer::new(SiteInfo::default()).map_err(|e| e.to_string())) {
        Ok(renderer) => renderer.render(template, path, model),
        Err(message) => Err(SiteError::Template {
            template: "templates/".to_owned(),
            message: message.clone(),
        }),
    }
}

/// The sha256 of every embedded template and static file, in order: part of every
/// page's cache key, so editing a template re-renders the site.
pub fn templates_digest() -> receipts::model::Sha256Hex {
    let mut all = Vec::new();
    for (name, text) in TEMPLATES.iter().chain(STATIC_FILES) {
        all.extend_from_slice(name.as_bytes());
        all.push(0);
        all.extend_from_slice(&(text.len() as u64).to_le_bytes());
        all.extend_from_slice(text.as_bytes());
    }
    receipts::model::Sha256Hex::digest(&all)
}

/// Writes `input` HTML-escaped to `out`, exactly as tera's default escape does (`&`, `<`,
/// `>`, `"` and `'` as `&amp;`, `&lt;`, `&gt;`, `&quot;` and `&#39;`), but a run of
/// characters needing no escape in one write instead of one write per byte: tera calls
/// this for every value a template prints (about 4 % of a cold build's time before).
///
/// Errors: whatever `out` returns.
fn escape_html(input: &str, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let bytes = input.as_bytes();
    let mut start = 0;
    for (i, b) in bytes.iter().enumerate() {
        let entity: &[u8] = match b {
            b'&' => b"&amp;",
            b'<' => b"&lt;",
            b'>' => b"&gt;",
            b'"' => b"&quot;",
            b'\'' => b"&#39;",
            _ => continue,
        };
        out.write_all(&bytes[start..i])?;
        out.write_all(entity)?;
        start = i + 1;
    }
    out.write_all(&bytes[start..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::SiteDir;

    fn escaped(input: &str, escape: tera::EscapeFn) -> String {
        let mut out = Vec::new();
        escape(input, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn escape_html_writes_the_five_entities() {
        assert_eq!(
            escaped(r#"<a href='x' title="y">Tom & Jerry</a>é"#, escape_html),
            "&lt;a href=&#39;x&#39; title=&quot;y&quot;&gt;Tom &amp; Jerry&lt;/a&gt;é"
        );
        assert_eq!(escaped("", escape_html), "");
        assert_eq!(escaped("&&", escape_html), "&amp;&amp;");
    }

    proptest::proptest! {
        /// Tera's own escape is the reference: the pages are byte for byte what they were.
        #[test]
        fn escape_html_is_teras(input in "(\\PC|[&<>\"'])*") {
            proptest::prop_assert_eq!(
                escaped(&input, escape_html),
                escaped(&input, tera::escape_html)
            );
        }
    }

    #[test]
    fn every_template_file_is_embedded() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../templates");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        on_disk.sort();
        let mut embedded: Vec<String> = TEMPLATES
            .iter()
            .chain(STATIC_FILES)
            .map(|(n, _)| (*n).to_owned())
            .collect();
        embedded.sort();
        assert_eq!(on_disk, embedded);
        for (name, text) in TEMPLATES.iter().chain(STATIC_FILES) {
            assert_eq!(std::fs::read_to_string(dir.join(name)).unwrap(), *text);
        }
    }

    #[test]
    fn every_template_extends_base_and_fills_title_and_main() {
        let renderer = Renderer::new(SiteInfo::default()).unwrap();
        for (name, text) in TEMPLATES {
            assert!(
                renderer.tera.get_template_names().any(|n| n == *name),
                "{name}"
            );
            // The base, and partials (`_*.html`) that pages include.
            if *name == "base.html" || name.starts_with('_') {
                continue;
            }
            assert!(text.starts_with("{% extends \"base.html\" %}\n"), "{name}");
            assert!(text.contains("{% block title %}"), "{name}");
            assert!(text.contains("{% block main %}"), "{name}");
        }
    }

    #[test]
    fn root_prefix_follows_the_page() {
        #[derive(Serialize)]
        struct M {}
        let html = render(
            "base.html",
            &SiteDir::campaign(&"demo".parse().unwrap()).page(),
            &M {},
        )
        .unwrap();
        assert!(html.contains(r#"href="../../style.css""#), "{html}");
        let html = render("base.html", &SiteDir::root().page(), &M {}).unwrap();
        assert!(html.contains(r#"href="style.css""#), "{html}");
    }
}
