//! Copy detection: a submission whose weights share a file with an earlier commitment's, or
//! whose runtime code equals an earlier one's once cosmetics are taken out, is a copy and
//! credits the earlier one; a submission that declares `derivedFrom` must beat its original
//! by the campaign's margin. This module computes the fingerprints from a tree; the
//! decision over recorded fingerprints is [`detect_copy`] (`receipts::rules::copy`, so the
//! verifier recomputes it), re-exported here.
//!
//! Cosmetics taken out: in Python, comments, docstrings, whitespace and layout, quote style
//! and the names of identifiers (each renamed to its order of first appearance, through the
//! parse tree); in other text files, whitespace and comments (`#` lines in shell, Docker,
//! TOML, YAML and requirement files; `//` and `/* */` in C-like sources), naively, strings
//! included. Binary files count byte for byte. Paths do not count: the runtime's code is
//! the multiset of its files' normalised digests.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;

use receipts::fsutil::{IoError, open_regular};
pub use receipts::model::{CopyOutcome, CopyReason, Fingerprint};
use receipts::model::{Sha256Hex, Timestamp};
pub use receipts::rules::copy::{Commitment, detect_copy};
use sha2::Digest;
use tree_sitter::Node;

use crate::python::{self, ParseError, is_docstring, string_contents};
use crate::rules::RuleSet;
use crate::tree::{self, Content};
use crate::{ReviewError, ReviewInput};

/// The manifest's file name at the tree's root: it names the submission itself, so it is
/// not runtime code.
pub const MANIFEST_FILE: &str = "reax-submission.json";

/// Python source with its cosmetics taken out: the leaves of the parse tree in order,
/// comments and docstrings dropped, strings with their quotes unified, each identifier
/// renamed to `_<n>` by its first appearance, blocks marked `{` `}`, one space between.
///
/// Errors: [`ParseError`] when no tree comes back.
pub fn normalise_python(source: &str) -> Result<String, ParseError> {
    enum Step<'t> {
        Enter(Node<'t>),
        Emit(&'static str),
    }
    let tree = python::parse(source)?;
    let mut names: BTreeMap<&str, usize> = BTreeMap::new();
    let mut tokens: Vec<String> = Vec::new();
    let mut stack = vec![Step::Enter(tree.root_node())];
    while let Some(step) = stack.pop() {
        let node = match step {
            Step::Emit(token) => {
                tokens.push(token.to_owned());
                continue;
            }
            Step::Enter(node) => node,
        };
        match node.kind() {
            "comment" => continue,
            "expression_statement" if is_docstring(node) => continue,
            "identifier" => {
                let next = names.len();
                let text = source.get(node.byte_range()).unwrap_or("");
                let index = *names.entry(text).or_insert(next);
                tokens.push(format!("_{index}"));
                continue;
            }
            "string" => {
                tokens.push(format!("\"{}\"", string_contents(node, source)));
                continue;
            }
            _ if node.child_count() == 0 => {
                let text = source.get(node.byte_range()).unwrap_or("");
                if !text.trim().is_empty() {
                    tokens.push(text.to_owned());
                }
                continue;
            }
            _ => {}
        }
        let block = node.kind() == "block";
        if block {
            stack.push(Step::Emit("}"));
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev().map(Step::Enter));
        if block {
            stack.push(Step::Emit("{"));
        }
    }
    Ok(tokens.join(" "))
}

/// Which comment syntax a file of this name uses, for [`normalise_text`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comments {
    /// `#` to the end of the line.
    Hash,
    /// `//` to the end of the line and `/* … */`.
    Slash,
    /// None known: whitespace only.
    None,
}

impl Comments {
    /// The syntax of a file named `name` (its last path component).
    pub fn of(name: &str) -> Self {
        let lower = name.to_ascii_lowercase();
        let extension = lower.rsplit_once('.').map_or("", |(_, e)| e);
        if lower.starts_with("dockerfile")
            || lower == "makefile"
            || matches!(
                extension,
                "sh" | "bash"
                    | "toml"
                    | "yml"
                    | "yaml"
                    | "txt"
                    | "in"
                    | "cfg"
                    | "ini"
                    | "conf"
                    | "dockerfile"
            )
        {
            Comments::Hash
        } else if matches!(
            extension,
            "c" | "h"
                | "cc"
                | "cpp"
                | "cxx"
                | "hpp"
                | "cu"
                | "cuh"
                | "rs"
                | "go"
                | "js"
                | "ts"
                | "java"
        ) {
            Comments::Slash
        } else {
            Comments::None
        }
    }
}

/// Text with its comments (of `comments`' syntax) and all whitespace taken out.
pub fn normalise_text(text: &str, comments: Comments) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let skip_to = match comments {
            Comments::Hash if c == '#' => rest.find('\n'),
            Comments::Slash if rest.starts_with("//") => rest.find('\n'),
            Comments::Slash if rest.starts_with("/*") => rest.find("*/").map(|end| end + 2),
            _ => {
                if !c.is_whitespace() {
                    out.push(c);
                }
                rest = &rest[c.len_utf8()..];
                continue;
            }
        };
        rest = skip_to.map_or("", |end| &rest[end..]);
    }
    out
}

/// SHA-256 of a whole file, streamed.
fn digest_file(path: &std::path::Path) -> Result<Sha256Hex, IoError> {
    let (mut file, _) = open_regular(path).map_err(|e| IoError::at("reading", path)(e.into()))?;
    let mut hasher = sha2::Sha256::new();
    let mut buffer = vec![0; 1 << 16];
    loop {
        let n = file
            .read(&mut buffer)
            .map_err(IoError::at("reading", path))?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    Ok(Sha256Hex::from_bytes(hasher.finalize().into()))
}

/// The fingerprint of the input's tree: its weights' hashes less `base_weights`, and
/// the digest of its runtime files (every file but the weights, the documentation the
/// rules name and [`MANIFEST_FILE`]), each normalised (a Python file with syntax
/// errors as tree-sitter recovers it).
///
/// Errors: [`ReviewError::Io`] on a file that cannot be read; [`ReviewError::Parse`] when
/// the Python grammar does not load.
pub fn fingerprint_of_tree(
    input: &ReviewInput,
    rules: &RuleSet,
    base_weights: &BTreeSet<Sha256Hex>,
) -> Result<Fingerprint, ReviewError> {
    let weight_paths: BTreeSet<&str> = input.weights.iter().map(|w| w.path.as_str()).collect();
    let mut digests = Vec::new();
    for file in tree::list_files(&input.root)? {
        let name = file.name();
        if weight_paths.contains(file.rel.as_str())
            || rules.is_documentation(name)
            || file.rel == MANIFEST_FILE
        {
            continue;
        }
        let digest = match tree::read(&file, rules.max_text_bytes)? {
            Content::Text(text) if name.ends_with(".py") || name.ends_with(".pyi") => {
                Sha256Hex::digest(normalise_python(&text)?.as_bytes())
            }
            Content::Text(text) => {
                Sha256Hex::digest(normalise_text(&text, Comments::of(name)).as_bytes())
            }
            Content::Binary(bytes) => Sha256Hex::digest(&bytes),
            Content::TooLarge(_) => digest_file(&file.path)?,
        };
        digests.push(digest.as_str().to_owned());
    }
    digests.sort();
    Ok(Fingerprint {
        weights: input
            .weights
            .iter()
            .map(|w| w.sha256)
            .filter(|h| !base_weights.contains(h))
            .collect(),
        code: Sha256Hex::digest(digests.join("\n").as_bytes()),
        code_files: u32::try_from(digests.len()).unwrap_or(u32::MAX),
    })
}

/// The commitment of `submission`, made at `committed_at`, whose tree and manifest
/// `input` holds: its [`fingerprint_of_tree`] and the input's `derived_from`.
///
/// Errors: as [`fingerprint_of_tree`].
pub fn commitment_of_tree(
    submission: impl Into<String>,
    committed_at: Timestamp,
    input: &ReviewInput,
    rules: &RuleSet,
    base_weights: &BTreeSet<Sha256Hex>,
) -> Result<Commitment, ReviewError> {
    Ok(Commitment {
        submission: submission.into(),
        committed_at,
        fingerprint: fingerprint_of_tree(input, rules, base_weights)?,
        derived_from: input.derived_from.clone(),
    })
}
