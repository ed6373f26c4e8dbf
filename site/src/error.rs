//! The site's one error type: every variant names the file, field or value it is about.

use std::path::PathBuf;

use receipts::fsutil::IoError;
use receipts::layout::DataError;

/// Errors building the site. Nothing is written to the output directory before the
/// archive is loaded and every id used in an output path is validated.
#[derive(Debug, thiserror::Error)]
pub enum SiteError {
    /// An I/O error on a named file.
    #[error(transparent)]
    Io(#[from] IoError),
    /// The data directory's transparency log failed its checks and `--allow-unlogged`
    /// was not given: nothing was written.
    #[error(
        "the data directory's transparency log fails its checks ({reason}): nothing was built; `--allow-unlogged` builds the site without it, saying so on the front page"
    )]
    LogRefused {
        /// The first failed check and its reason.
        reason: String,
    },
    /// Reading the data directory failed (campaign, miners, submissions, a private key
    /// file inside it); the error names the file.
    #[error(transparent)]
    Data(#[from] DataError),
    /// A bundle directory could not be listed for its tarball (`bundle.tar`).
    #[error(transparent)]
    Bundle(#[from] receipts::bundle::BundleError),
    /// A page of `content/` breaks a rule of the docs (raw HTML, a `javascript:` link, a
    /// bad front matter): the docs error's message, which names the file and line.
    #[error("{message}")]
    Docs {
        /// The docs error, as its `Display` writes it.
        message: String,
    },
    /// A verified round's bundle changed between its verification and the rendering of
    /// its pages, which read it again (`site::load::load_round`).
    #[error("the bundle `{}` changed while the site was built: {message}; build again", .dir.display())]
    BundleChanged {
        /// The bundle directory.
        dir: PathBuf,
        /// What changed.
        message: String,
    },
    /// The own checks of a bundle that passed them earlier in the build could not be read
    /// back from where the build keeps them (`site::incremental::OwnChecks::recall`): a
    /// bundle is verified once a build, never again for its pages.
    #[error("the own checks of the bundle `{}`, verified earlier in this build, cannot be read back: {message}; build again", .dir.display())]
    VerdictLost {
        /// The bundle directory.
        dir: PathBuf,
        /// Why.
        message: String,
    },
    /// A submission record changed between the first read of the archive and the
    /// rendering of its page, which reads it again
    /// (`site::archive::SubmissionSummary::load`).
    #[error("the submission record `{}` changed while the site was built: {message}; build again", .path.display())]
    RecordChanged {
        /// The record file.
        path: PathBuf,
        /// What changed.
        message: String,
    },
    /// The data directory holds private key files: it is published, so the build refuses
    /// it before anything is written.
    #[error(
        "refusing to publish `{}`: it holds the private key file(s) {}; move them out of the data directory (into the key directory, `{}`), then build again",
        .data.display(),
        .files.iter().map(|f| format!("`{}`", f.display())).collect::<Vec<_>>().join(", "),
        .key_dir.display()
    )]
    PrivateKeyInside {
        /// The data directory.
        data: PathBuf,
        /// Every private key file found in it, sorted.
        files: Vec<PathBuf>,
        /// The key directory they belong in (`receipts::layout::default_key_dir`).
        key_dir: PathBuf,
    },
    /// The trusted keyring could not be read or parsed.
    #[error("keyring `{path}`: {message}")]
    Keyring {
        /// The keyring file.
        path: PathBuf,
        /// Why it was refused.
        message: String,
    },
    /// An id that would become part of an output path is not in its alphabet.
    #[error("{field} `{value}` cannot name an output path: {rule}")]
    InvalidId {
        /// Which id (`entry slug`, `campaign id`, …).
        field: &'static str,
        /// The value as found (escaped when shown).
        value: String,
        /// The alphabet it must match.
        rule: &'static str,
    },
    /// The embedded templates do not parse (a bug in `templates/`, caught by the tests).
    #[error("template `{template}`: {message}")]
    Template {
        /// The template name (`round.html`).
        template: String,
        /// Tera's message.
        message: String,
    },
    /// A page model could not be serialised (CSV/JSON tables included).
    #[error("serialising `{path}`: {message}")]
    Serialize {
        /// The output file it was for.
        path: String,
        /// The serialiser's message.
        message: String,
    },
    /// Two pages or files claim the same output path.
    #[error("two outputs claim `{path}`")]
    DuplicateOutput {
        /// The output path relative to the site root.
        path: String,
    },
    /// The output directory holds a file no site build wrote there (per its manifest):
    /// building or cleaning would overwrite or delete someone's files.
    #[error(
        "`{dir}` holds `{file}`, which no site build wrote there; refusing to build into it or clean it (choose an empty directory, or one a site build wrote)"
    )]
    NotOurOutput {
        /// The output directory.
        dir: PathBuf,
        /// The first file found that the manifest does not list.
        file: PathBuf,
    },
    /// A segment file of the build manifest (`.referee-site-manifest.d/<segment>`) that
    /// the main manifest names cannot be read or does not parse: which files of the
    /// output directory are ours is unknown.
    #[error(
        "the site build manifest `{path}` {message}: which files a site build wrote there is unknown; remove the output directory and build again"
    )]
    Manifest {
        /// The segment file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// A job made a file outside its segment's part of the site (a bug: every output
    /// path is made from validated ids by `site::paths`, each kind in its own part).
    #[error("job `{job}` made `{path}`, outside its segment `{segment}`")]
    OutsideSegment {
        /// The job's name.
        job: String,
        /// The file, relative to the site root.
        path: String,
        /// The job's segment.
        segment: String,
    },
    /// A value given on the command line or in the options is unusable.
    #[error("{field} `{value}`: {message}")]
    InvalidOption {
        /// The option (`--base-url`).
        field: &'static str,
        /// The value given.
        value: String,
        /// Why it was refused.
        message: String,
    },
}
