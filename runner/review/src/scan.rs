//! The static review: every rule of a [`RuleSet`] applied to every file of a tree, giving
//! findings that name the file, the line and the rule.

use std::collections::BTreeSet;

use crate::python::{self, Facts};
use crate::rules::{Blob, Pattern, Rule, RuleSet, lowercase};
use crate::tree::{self, Content, TreeFile};
use crate::{ReviewError, ReviewInput};

pub use receipts::model::review::Finding;

/// Whether `entry` covers the dotted `name`: equal, or a module or object above it.
fn covers(entry: &str, name: &str) -> bool {
    name.strip_prefix(entry)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

/// Lines after the first in `text[..at]`.
fn newlines_before(text: &str, at: usize) -> usize {
    text.as_bytes()[..at]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

/// The Shannon entropy of `run`, in thousandths of a bit per byte.
fn entropy_millibits(run: &[u8]) -> u32 {
    let mut counts = [0u32; 256];
    for &b in run {
        counts[usize::from(b)] += 1;
    }
    let n = run.len() as f64;
    let bits: f64 = counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum();
    // Bounded by 8000: the cast neither truncates nor wraps.
    (bits * 1000.0) as u32
}

/// Each run of `text` that `blob` counts: its byte offset and a description.
fn blob_runs(blob: &Blob, text: &str) -> Vec<(usize, String)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    while start < bytes.len() {
        if !blob.alphabet.contains(bytes[start]) {
            start += 1;
            continue;
        }
        let end = bytes[start..]
            .iter()
            .position(|&b| !blob.alphabet.contains(b))
            .map_or(bytes.len(), |n| start + n);
        let run = &bytes[start..end];
        if run.len() >= blob.min_length {
            let millibits = entropy_millibits(run);
            if millibits >= blob.min_entropy_millibits {
                out.push((
                    start,
                    format!(
                        "{} run of {} characters, {millibits} millibits each",
                        blob.alphabet.as_str(),
                        run.len()
                    ),
                ));
            }
        }
        start = end;
    }
    out
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// Whether `word` (lowercase) occurs in `lower` with no word character on either side.
fn has_word(lower: &str, word: &str) -> bool {
    let bytes = lower.as_bytes();
    lower.match_indices(word).any(|(at, _)| {
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let after = bytes.get(at + word.len()).copied();
        !before.is_some_and(is_word_byte) && !after.is_some_and(is_word_byte)
    })
}

/// Where the findings of one file go, with the rule being applied.
struct Hits<'a> {
    file: &'a str,
    rule: &'a Rule,
    out: &'a mut Vec<Finding>,
}

impl Hits<'_> {
    fn hit(&mut self, line: Option<usize>, detail: impl Into<String>) {
        self.out.push(Finding {
            file: self.file.to_owned(),
            line,
            rule: self.rule.id.clone(),
            severity: self.rule.severity,
            detail: detail.into(),
        });
    }

    /// Each pattern found in a string literal, at its own line.
    fn strings(&mut self, facts: &Facts, patterns: &[Pattern]) {
        for (line, text) in &facts.strings {
            let lower = text.to_ascii_lowercase();
            for pattern in patterns {
                if let Some(at) = lower.find(pattern.lower.as_str()) {
                    self.hit(
                        Some(line + newlines_before(text, at)),
                        pattern.written.clone(),
                    );
                }
            }
        }
    }

    fn python(&mut self, facts: &Facts, markers: &[Pattern]) {
        let rule = self.rule;
        for (line, module) in &facts.imports {
            for entry in rule.python_imports.iter().filter(|e| covers(e, module)) {
                self.hit(Some(*line), entry.clone());
            }
        }
        for (line, name) in &facts.references {
            for entry in rule.python_references.iter().filter(|e| covers(e, name)) {
                self.hit(Some(*line), entry.clone());
            }
        }
        if let Some(spec) = &rule.python_call_arguments {
            for call in &facts.calls {
                let Some(argument) =
                    spec.arguments
                        .iter()
                        .find(|entry| match entry.strip_prefix('.') {
                            Some(method) => call.method.as_deref() == Some(method),
                            None => call.name.as_deref() == Some(entry.as_str()),
                        })
                else {
                    continue;
                };
                let mut outer = call.inside;
                while let Some(index) = outer {
                    let Some(enclosing) = facts.calls.get(index) else {
                        break;
                    };
                    if let Some(name) = enclosing
                        .name
                        .as_deref()
                        .filter(|n| spec.calls.iter().any(|c| c == n))
                    {
                        self.hit(Some(enclosing.line), format!("{name}({argument}(…))"));
                        break;
                    }
                    outer = enclosing.inside;
                }
            }
        }
        self.strings(facts, &rule.compiled.python_strings);
        if rule.campaign_markers {
            self.strings(facts, markers);
        }
        if let Some(keyed) = &rule.python_keyed {
            for (line, name, key) in &facts.keyed {
                let lower = key.to_ascii_lowercase();
                if keyed.names.iter().any(|n| n == name)
                    && rule
                        .compiled
                        .key_markers
                        .iter()
                        .any(|m| lower.contains(m.lower.as_str()))
                    && !keyed.allowed_keys.iter().any(|k| k == key)
                {
                    self.hit(Some(*line), format!("{name}[{key:?}]"));
                }
            }
        }
        if let Some(line) = facts.syntax_error_line.filter(|_| rule.python_syntax_error) {
            self.hit(Some(line), "syntax error");
        }
        if let Some(blob) = &rule.blob {
            for (line, text) in &facts.strings {
                for (at, detail) in blob_runs(blob, text) {
                    self.hit(Some(line + newlines_before(text, at)), detail);
                }
            }
        }
    }

    fn text(&mut self, text: &str, markers: &[Pattern]) {
        let rule = self.rule;
        for (index, line) in text.lines().enumerate() {
            let number = Some(index + 1);
            let lower = line.to_ascii_lowercase();
            let markers = if rule.campaign_markers { markers } else { &[] };
            for pattern in rule.compiled.text_substrings.iter().chain(markers) {
                if lower.contains(pattern.lower.as_str()) {
                    self.hit(number, pattern.written.clone());
                }
            }
            for word in rule
                .compiled
                .text_words
                .iter()
                .filter(|w| has_word(&lower, &w.lower))
            {
                self.hit(number, word.written.clone());
            }
            if let Some(blob) = &rule.blob {
                for (_, detail) in blob_runs(blob, line) {
                    self.hit(number, detail);
                }
            }
        }
    }

    fn whole_file(&mut self, name: &str, content: &Content) {
        let rule = self.rule;
        let lower = name.to_ascii_lowercase();
        for extension in rule
            .compiled
            .file_extensions
            .iter()
            .filter(|e| lower.ends_with(e.lower.as_str()))
        {
            self.hit(None, extension.written.clone());
        }
        let head = content.head();
        for (offset, magic) in &rule.compiled.magic {
            if head.get(*offset..offset + magic.len()) == Some(magic.as_slice()) {
                self.hit(None, format!("magic {}", hex::encode(magic)));
            }
        }
        if rule.too_large && matches!(content, Content::TooLarge(_)) {
            self.hit(None, "over the scan bound");
        }
    }
}

fn is_python(name: &str) -> bool {
    name.ends_with(".py") || name.ends_with(".pyi")
}

/// Applies every rule to one file.
fn scan_file(
    file: &TreeFile,
    rules: &RuleSet,
    markers: &[Pattern],
    out: &mut Vec<Finding>,
) -> Result<(), ReviewError> {
    let content = tree::read(file, rules.max_text_bytes)?;
    let name = file.name();
    let facts = match &content {
        Content::Text(text) if is_python(name) => Some(python::facts(text)?),
        _ => None,
    };
    let documentation = rules.is_documentation(name);
    for rule in &rules.rules {
        let mut hits = Hits {
            file: &file.rel,
            rule,
            out: &mut *out,
        };
        hits.whole_file(name, &content);
        match (&content, &facts) {
            (_, Some(facts)) => hits.python(facts, markers),
            (Content::Binary(_), None) if is_python(name) && rule.python_syntax_error => {
                hits.hit(Some(1), "not UTF-8");
            }
            (Content::Text(text), None)
                if rule.reads_text_of(name) && (rule.documentation || !documentation) =>
            {
                hits.text(text, markers);
            }
            _ => {}
        }
    }
    Ok(())
}

/// The findings of every rule on every file of the input's tree but its weights files,
/// sorted by file, line and rule, one per (file, line, rule): the first detail in the
/// order the detectors ran.
///
/// Errors: [`ReviewError::Io`] on a file or directory that cannot be read;
/// [`ReviewError::Parse`] when the Python grammar does not load.
pub fn findings(input: &ReviewInput, rules: &RuleSet) -> Result<Vec<Finding>, ReviewError> {
    let weights: BTreeSet<&str> = input.weights.iter().map(|w| w.path.as_str()).collect();
    let markers: Vec<String> = input
        .campaign_markers
        .iter()
        .filter(|m| !m.is_empty())
        .cloned()
        .collect();
    let markers = lowercase(&markers);
    let mut out = Vec::new();
    for file in tree::list_files(&input.root)? {
        if !weights.contains(file.rel.as_str()) {
            scan_file(&file, rules, &markers, &mut out)?;
        }
    }
    // Stable: for one (file, line, rule), the first detail found stays.
    out.sort_by(|a, b| (&a.file, a.line, &a.rule).cmp(&(&b.file, b.line, &b.rule)));
    out.dedup_by(|b, a| (&a.file, a.line, &a.rule) == (&b.file, b.line, &b.rule));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entropy_of_uniform_and_constant_runs() {
        assert_eq!(entropy_millibits(b"aaaa"), 0);
        assert_eq!(entropy_millibits(b"abab"), 1000);
        assert_eq!(entropy_millibits(b"abcd"), 2000);
    }

    #[test]
    fn covers_whole_components_only() {
        assert!(covers("socket", "socket"));
        assert!(covers("socket", "socket.create_connection"));
        assert!(!covers("socket", "socketserver"));
        assert!(!covers("os.environ", "os"));
    }

    #[test]
    fn words_need_boundaries() {
        assert!(has_word("openai==1.2", "openai"));
        assert!(has_word("pip install openai", "openai"));
        assert!(!has_word("langchain-openai", "openai"));
        assert!(!has_word("openai_compat", "openai"));
    }
}
