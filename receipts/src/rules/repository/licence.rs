//! The model card's licences (content/repository-submissions.md, Licences): the
//! `license` of the card's YAML front matter — one id or a list, the licence of
//! everything inside — each in a closed list of SPDX ids compatible with Apache-2.0 and
//! MIT. Anything else is rejected naming the id.

use crate::model::ManifestFieldError;

use super::manifest::error;

/// The licences accepted, as SPDX ids: permissive licences compatible with Apache-2.0
/// and MIT. Matched without regard to case (the Hub writes `apache-2.0`).
pub const ALLOWED_LICENCES: [&str; 11] = [
    "Apache-2.0",
    "MIT",
    "MIT-0",
    "BSD-2-Clause",
    "BSD-3-Clause",
    "ISC",
    "Zlib",
    "0BSD",
    "Unlicense",
    "CC0-1.0",
    "BSL-1.0",
];

/// The field every licence error names.
const FIELD: &str = "modelCard.license";

/// The allowed SPDX id `id` stands for, if any.
pub fn allowed_licence(id: &str) -> Option<&'static str> {
    ALLOWED_LICENCES
        .iter()
        .copied()
        .find(|allowed| allowed.eq_ignore_ascii_case(id))
}

/// The `license` ids of a model card's front matter (`---` lines around YAML at its
/// top): `license: id`, `license: [a, b]` or `license:` followed by `- id` lines.
pub fn card_licences(text: &str) -> Vec<String> {
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return Vec::new();
    }
    let front: Vec<&str> = lines.take_while(|l| l.trim_end() != "---").collect();
    let unquote = |s: &str| s.trim().trim_matches(|c| c == '"' || c == '\'').to_owned();
    let mut ids = Vec::new();
    let mut in_list = false;
    for line in front {
        if in_list {
            match line.trim_start().strip_prefix("- ") {
                Some(item) if line.starts_with([' ', '-']) => {
                    ids.push(unquote(item));
                    continue;
                }
                _ => in_list = false,
            }
        }
        let Some(value) = line.strip_prefix("license:") else {
            continue;
        };
        let value = value.trim();
        if value.is_empty() {
            in_list = true;
        } else if let Some(flow) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
            ids.extend(flow.split(',').map(unquote).filter(|s| !s.is_empty()));
        } else {
            ids.push(unquote(value));
        }
    }
    ids
}

/// The licence errors of the model card at `path` with `text`: none listed, or each id
/// outside [`ALLOWED_LICENCES`].
pub fn check_model_card(path: &str, text: &str) -> Vec<ManifestFieldError> {
    let ids = card_licences(text);
    if ids.is_empty() {
        return vec![error(
            FIELD,
            "licence_missing",
            format!("`{path}` lists no `license` in its front matter"),
        )];
    }
    ids.iter()
        .filter(|id| allowed_licence(id).is_none())
        .map(|id| {
            error(
                FIELD,
                "licence_not_allowed",
                format!(
                    "licence `{id}` in `{path}` is not one of the Apache/MIT-compatible licences: {}",
                    ALLOWED_LICENCES.join(", ")
                ),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_forms() {
        assert_eq!(
            card_licences("---\nlicense: apache-2.0\n---\n# x"),
            ["apache-2.0"]
        );
        assert_eq!(
            card_licences("---\nlicense: [mit, \"BSD-3-Clause\"]\n---\n"),
            ["mit", "BSD-3-Clause"]
        );
        assert_eq!(
            card_licences(
                "---\ntags: [a]\nlicense:\n  - mit\n  - 'apache-2.0'\nlanguage: en\n---\n"
            ),
            ["mit", "apache-2.0"]
        );
        assert!(card_licences("# no front matter\nlicense: mit\n").is_empty());
    }

    #[test]
    fn an_allowed_licence_passes_case_blind() {
        assert!(check_model_card("README.md", "---\nlicense: apache-2.0\n---\n").is_empty());
        assert_eq!(allowed_licence("mit"), Some("MIT"));
    }

    #[test]
    fn a_licence_outside_the_list_is_named() {
        let errors = check_model_card("README.md", "---\nlicense: [mit, cc-by-nc-4.0]\n---\n");
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "modelCard.license");
        assert_eq!(errors[0].reason, "licence_not_allowed");
        assert!(
            errors[0]
                .message
                .starts_with("licence `cc-by-nc-4.0` in `README.md`")
        );
    }

    #[test]
    fn a_card_without_licence_is_refused() {
        let errors = check_model_card("README.md", "---\ntags: [x]\n---\n");
        assert_eq!(errors[0].reason, "licence_missing");
    }
}
