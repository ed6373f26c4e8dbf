//! The static rules as data: the versioned rules file (`rules/v1.toml`, embedded), its
//! digest, and the checks made on a rules file before it is used.

use globset::{Glob, GlobSet, GlobSetBuilder};
use receipts::model::Sha256Hex;
use serde::Deserialize;

/// The rules file this build reviews with unless the campaign names another
/// (`rules/v1.toml`, content/review.md).
pub const RULES_V1: &str = include_str!("../rules/v1.toml");

pub use receipts::model::review::Severity;

/// `python_call_arguments`: a call of one of `calls` whose arguments contain a call of one
/// of `arguments` (a dotted name, or `.method` for a method of any object).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallArguments {
    /// The outer calls (resolved dotted names).
    pub calls: Vec<String>,
    /// The calls inside their arguments.
    pub arguments: Vec<String>,
}

/// `python_keyed`: a call of `names` whose first argument, or a subscript of `names` whose
/// key, is a string literal containing one of `key_markers` (ASCII case ignored), unless
/// it equals one of `allowed_keys`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Keyed {
    /// The called or subscripted names (resolved dotted names).
    pub names: Vec<String>,
    /// Substrings of a key that make it a hit.
    pub key_markers: Vec<String>,
    /// Keys that are never a hit.
    #[serde(default)]
    pub allowed_keys: Vec<String>,
}

/// The alphabet of a [`Blob`] run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Alphabet {
    /// `A–Z a–z 0–9 + / = - _`.
    Base64,
    /// `0–9 a–f A–F`.
    Hex,
}

impl Alphabet {
    /// How the rules file spells it: `base64`, `hex`.
    pub fn as_str(self) -> &'static str {
        match self {
            Alphabet::Base64 => "base64",
            Alphabet::Hex => "hex",
        }
    }

    /// Whether `b` belongs to the alphabet.
    pub fn contains(self, b: u8) -> bool {
        match self {
            Alphabet::Base64 => {
                b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'-' | b'_')
            }
            Alphabet::Hex => b.is_ascii_hexdigit(),
        }
    }
}

/// `blob`: a run of `alphabet` characters at least `min_length` long whose Shannon entropy
/// is at least `min_entropy_millibits` per character.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Blob {
    /// Which characters make up a run.
    pub alphabet: Alphabet,
    /// The shortest run that counts, in characters.
    pub min_length: usize,
    /// The least entropy that counts, in thousandths of a bit per character.
    pub min_entropy_millibits: u32,
}

/// One entry of `file_magic`: the bytes (hex) a file holds at `offset` (default 0).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Magic {
    /// Where the bytes start, in bytes from the file's start.
    #[serde(default)]
    pub offset: usize,
    /// The bytes, as hex.
    pub hex: String,
}

/// One rule of the rules file: its id, severity, summary and detectors (the rules file's
/// header comment says what each detector matches; content/review.md lists the rules).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Dotted kebab-case id, unique in the file (`network.client`).
    pub id: String,
    /// What a finding does to the verdict.
    pub severity: Severity,
    /// One sentence: what the rule finds and why it matters.
    pub summary: String,
    /// Whether the text detectors also read documentation files.
    #[serde(default)]
    pub documentation: bool,
    /// Imported modules (a module covers the modules below it).
    #[serde(default)]
    pub python_imports: Vec<String>,
    /// Names and attribute chains, resolved through the file's imports.
    #[serde(default)]
    pub python_references: Vec<String>,
    /// Calls whose arguments contain other calls.
    #[serde(default)]
    pub python_call_arguments: Option<CallArguments>,
    /// Substrings of string literals (docstrings excluded), ASCII case ignored.
    #[serde(default)]
    pub python_strings: Vec<String>,
    /// Calls and subscripts keyed by a string literal.
    #[serde(default)]
    pub python_keyed: Option<Keyed>,
    /// A Python file that does not parse.
    #[serde(default)]
    pub python_syntax_error: bool,
    /// Substrings of a line of a text file, ASCII case ignored.
    #[serde(default)]
    pub text_substrings: Vec<String>,
    /// Whole words of a line of a text file, ASCII case ignored.
    #[serde(default)]
    pub text_words: Vec<String>,
    /// File-name globs the text detectors read (empty: every file).
    #[serde(default)]
    pub text_files: Vec<String>,
    /// The campaign's markers, in string literals and text files.
    #[serde(default)]
    pub campaign_markers: bool,
    /// A long high-entropy run.
    #[serde(default)]
    pub blob: Option<Blob>,
    /// Leading bytes of a file.
    #[serde(default)]
    pub file_magic: Vec<Magic>,
    /// Endings of a file name, ASCII case ignored.
    #[serde(default)]
    pub file_extensions: Vec<String>,
    /// A file over the scan bound.
    #[serde(default)]
    pub too_large: bool,
    #[serde(skip)]
    pub(crate) compiled: Compiled,
}

/// A case-insensitive pattern: lowercased for matching, as written for the finding.
#[derive(Clone, Debug)]
pub(crate) struct Pattern {
    pub(crate) lower: String,
    pub(crate) written: String,
}

/// What a rule's patterns become once checked: magic bytes decoded, globs built, the
/// case-insensitive patterns lowercased.
#[derive(Clone, Debug, Default)]
pub(crate) struct Compiled {
    pub(crate) magic: Vec<(usize, Vec<u8>)>,
    pub(crate) text_files: Option<GlobSet>,
    pub(crate) python_strings: Vec<Pattern>,
    pub(crate) text_substrings: Vec<Pattern>,
    pub(crate) text_words: Vec<Pattern>,
    pub(crate) file_extensions: Vec<Pattern>,
    pub(crate) key_markers: Vec<Pattern>,
}

impl Rule {
    fn has_detector(&self) -> bool {
        !self.python_imports.is_empty()
            || !self.python_references.is_empty()
            || self.python_call_arguments.is_some()
            || !self.python_strings.is_empty()
            || self.python_keyed.is_some()
            || self.python_syntax_error
            || !self.text_substrings.is_empty()
            || !self.text_words.is_empty()
            || self.campaign_markers
            || self.blob.is_some()
            || !self.file_magic.is_empty()
            || !self.file_extensions.is_empty()
            || self.too_large
    }

    /// Whether the text detectors read the file named `name` (its last path component).
    pub(crate) fn reads_text_of(&self, name: &str) -> bool {
        self.compiled
            .text_files
            .as_ref()
            .is_none_or(|globs| globs.is_match(name))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesFile {
    version: u32,
    max_text_bytes: u64,
    documentation: Vec<String>,
    rule: Vec<Rule>,
}

/// A checked rules file: its version, digest, scan bound and rules in file order.
#[derive(Clone, Debug)]
pub struct RuleSet {
    /// The file's `version`.
    pub version: u32,
    /// SHA-256 of the file's bytes, recorded with every review that used it.
    pub digest: Sha256Hex,
    /// Files larger than this many bytes are not read by the text and Python detectors.
    pub max_text_bytes: u64,
    /// File-name globs of documentation files.
    pub documentation: Vec<String>,
    /// The rules, in file order.
    pub rules: Vec<Rule>,
    documentation_globs: GlobSet,
}

/// Why a rules file was refused.
#[derive(Debug, thiserror::Error)]
pub enum RulesError {
    /// Not TOML of the rules file's shape.
    #[error("the rules file is not TOML of the rules file's shape")]
    Toml(#[from] toml::de::Error),
    /// Two rules share an id.
    #[error("two rules have the id `{0}`")]
    DuplicateId(String),
    /// An id outside `[a-z0-9.-]`, or empty.
    #[error("rule id `{0}` is not dotted kebab-case (`[a-z0-9.-]+`)")]
    BadId(String),
    /// A rule with no detector would never find anything.
    #[error("rule `{0}` has no detector")]
    NoDetector(String),
    /// A glob that does not compile.
    #[error("rule `{rule}`: glob `{glob}` is not valid: {source}")]
    BadGlob {
        /// The rule (`documentation` for the file-level list).
        rule: String,
        /// The glob as written.
        glob: String,
        /// Why.
        #[source]
        source: globset::Error,
    },
    /// A `file_magic` entry that is not non-empty hex.
    #[error("rule `{rule}`: magic `{hex}` is not non-empty hex")]
    BadMagic {
        /// The rule.
        rule: String,
        /// The entry as written.
        hex: String,
    },
}

fn globs(rule: &str, patterns: &[String]) -> Result<GlobSet, RulesError> {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        let glob = Glob::new(pattern).map_err(|source| RulesError::BadGlob {
            rule: rule.to_owned(),
            glob: pattern.clone(),
            source,
        })?;
        builder.add(glob);
    }
    builder.build().map_err(|source| RulesError::BadGlob {
        rule: rule.to_owned(),
        glob: patterns.join(", "),
        source,
    })
}

/// Case-insensitive patterns (ASCII case).
pub(crate) fn lowercase(patterns: &[String]) -> Vec<Pattern> {
    patterns
        .iter()
        .map(|p| Pattern {
            lower: p.to_ascii_lowercase(),
            written: p.clone(),
        })
        .collect()
}

impl RuleSet {
    /// The embedded [`RULES_V1`].
    ///
    /// Errors: none in a released build (a test parses it); [`RulesError`] otherwise.
    pub fn builtin() -> Result<Self, RulesError> {
        Self::parse(RULES_V1)
    }

    /// Parses and checks a rules file: TOML of the documented shape (unknown keys refused),
    /// ids unique and dotted kebab-case, every rule with a detector, globs and magic valid.
    ///
    /// Errors: [`RulesError`] naming the first problem.
    pub fn parse(text: &str) -> Result<Self, RulesError> {
        let file: RulesFile = toml::from_str(text)?;
        let mut seen = std::collections::BTreeSet::new();
        let mut rules = file.rule;
        for rule in &mut rules {
            let id = &rule.id;
            if id.is_empty()
                || !id
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
            {
                return Err(RulesError::BadId(id.clone()));
            }
            if !seen.insert(id.clone()) {
                return Err(RulesError::DuplicateId(id.clone()));
            }
            if !rule.has_detector() {
                return Err(RulesError::NoDetector(id.clone()));
            }
            let mut magic = Vec::new();
            for entry in &rule.file_magic {
                match hex::decode(&entry.hex) {
                    Ok(bytes) if !bytes.is_empty() => magic.push((entry.offset, bytes)),
                    _ => {
                        return Err(RulesError::BadMagic {
                            rule: id.clone(),
                            hex: entry.hex.clone(),
                        });
                    }
                }
            }
            let text_files = if rule.text_files.is_empty() {
                None
            } else {
                Some(globs(id, &rule.text_files)?)
            };
            rule.compiled = Compiled {
                magic,
                text_files,
                python_strings: lowercase(&rule.python_strings),
                text_substrings: lowercase(&rule.text_substrings),
                text_words: lowercase(&rule.text_words),
                file_extensions: lowercase(&rule.file_extensions),
                key_markers: rule
                    .python_keyed
                    .as_ref()
                    .map(|k| lowercase(&k.key_markers))
                    .unwrap_or_default(),
            };
        }
        Ok(Self {
            version: file.version,
            digest: Sha256Hex::digest(text.as_bytes()),
            max_text_bytes: file.max_text_bytes,
            documentation_globs: globs("documentation", &file.documentation)?,
            documentation: file.documentation,
            rules,
        })
    }

    /// Whether the file named `name` (its last path component) is documentation.
    pub fn is_documentation(&self, name: &str) -> bool {
        self.documentation_globs.is_match(name)
    }

    /// The rules as the markdown table content/review.md holds (a test keeps them equal):
    /// id, severity, summary, one row each, ending with a newline.
    pub fn markdown_table(&self) -> String {
        let mut out = String::from("| Rule | Severity | What it finds |\n|---|---|---|\n");
        for rule in &self.rules {
            out.push_str(&format!(
                "| `{}` | {} | {} |\n",
                rule.id,
                rule.severity.as_str(),
                rule.summary.replace('|', "\\|")
            ));
        }
        out
    }
}
