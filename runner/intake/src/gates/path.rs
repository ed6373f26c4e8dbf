//! Path rules of the surface checks: what a repository-relative path in a diff may look
//! like, and the canonical form under which two spellings that some filesystem treats as
//! the same name compare equal.
//!
//! The rules follow git's own defences: `.git` may not be written under any alias —
//! case-folded (`.GIT`, CVE-2014-9390), with trailing dots or spaces (Windows drops them),
//! as the NTFS 8.3 short name `git~1` or an NTFS stream (`.git::$INDEX_ALLOCATION`), or
//! with code points HFS+ ignores (U+200C … U+FEFF, CVE-2014-9390); `.gitmodules`,
//! `.gitattributes` and `.gitignore` are mapped the same way (their 8.3 and hashed short
//! names included, as git's `is_ntfs_dotgitmodules` does) so that denied globs catch
//! every alias (CVE-2018-11235).

use super::PathRule;

/// Checks one repository-relative path (already known to be UTF-8).
///
/// Errors: the first [`PathRule`] it breaks.
pub fn check_path(path: &str) -> Result<(), PathRule> {
    if path.is_empty() {
        return Err(PathRule::Empty);
    }
    if path.starts_with('/') {
        return Err(PathRule::Absolute);
    }
    if path.chars().any(char::is_control) {
        return Err(PathRule::ControlCharacter);
    }
    if path.contains('\\') {
        return Err(PathRule::Backslash);
    }
    for component in path.split('/') {
        match component {
            "" | "." => return Err(PathRule::DotOrEmptyComponent),
            ".." => return Err(PathRule::ParentComponent),
            _ => {}
        }
        match canonical_component(component).as_str() {
            ".git" => return Err(PathRule::GitDirAlias),
            // `...` or `.. ` are `..` (or nothing) once Windows drops trailing dots/spaces.
            "" | "." | ".." => return Err(PathRule::ParentComponent),
            _ => {}
        }
    }
    if path.contains(':') {
        return Err(PathRule::Colon);
    }
    Ok(())
}

/// The canonical form of a path: each component through [`canonical_component`].
pub fn canonical_path(path: &str) -> String {
    path.split('/')
        .map(canonical_component)
        .collect::<Vec<_>>()
        .join("/")
}

/// The canonical form of one component: code points HFS+ ignores removed, lowercased, an
/// NTFS stream suffix (from the first `:`) cut, trailing dots and spaces removed, and the
/// NTFS short names of `.git`, `.gitmodules`, `.gitattributes` and `.gitignore` mapped to
/// the long names.
pub fn canonical_component(component: &str) -> String {
    let visible: String = component
        .chars()
        .filter(|&c| !is_ignorable(c))
        .flat_map(char::to_lowercase)
        .collect();
    let unstreamed = visible.split(':').next().unwrap_or_default();
    let trimmed = unstreamed.trim_end_matches(['.', ' ']);
    short_name_target(trimmed).map_or_else(|| trimmed.to_owned(), str::to_owned)
}

/// Code points that HFS+ ignores when comparing names (git's `next_hfs_char`).
fn is_ignorable(c: char) -> bool {
    matches!(
        c,
        '\u{200c}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{206a}'..='\u{206f}' | '\u{feff}'
    )
}

/// The long name an NTFS 8.3 short name (`git~1`, `gitmod~4`, `gi7eba~1`) stands for,
/// for the names git protects (git's `is_ntfs_dotgit` / `is_ntfs_dot_generic`).
fn short_name_target(name: &str) -> Option<&'static str> {
    let (stem, number) = name.split_once('~')?;
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    match stem {
        "git" => Some(".git"),
        "gitmod" | "gi7eba" => Some(".gitmodules"),
        "gitatt" | "gi250a" => Some(".gitattributes"),
        "gitign" | "gi7d29" => Some(".gitignore"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(path: &str, expected: Result<(), PathRule>) {
        assert_eq!(check_path(path), expected, "path {path:?}");
    }

    #[test]
    fn git_dir_aliases_are_refused() {
        for path in [
            ".git/config",
            ".GIT/hooks/pre-commit",
            "sub/.Git/config",
            ".git./config",
            ".git . ./x",
            "GIT~1/config",
            ".git::$INDEX_ALLOCATION/config",
            ".g\u{200c}it/config",
            "\u{feff}.git/config",
        ] {
            check(path, Err(PathRule::GitDirAlias));
        }
    }

    #[test]
    fn traversal_and_odd_components_are_refused() {
        check("../x", Err(PathRule::ParentComponent));
        check("a/../../x", Err(PathRule::ParentComponent));
        check("a/.../x", Err(PathRule::ParentComponent));
        check("a/./x", Err(PathRule::DotOrEmptyComponent));
        check("a//x", Err(PathRule::DotOrEmptyComponent));
        check("/etc/passwd", Err(PathRule::Absolute));
        check("a\\..\\x", Err(PathRule::Backslash));
        check("c:x", Err(PathRule::Colon));
        check("a\tb", Err(PathRule::ControlCharacter));
        check("", Err(PathRule::Empty));
    }

    #[test]
    fn ordinary_paths_pass() {
        check("engine.toml", Ok(()));
        check("src/model/attention.rs", Ok(()));
        check(".github-notes.md", Ok(()));
        check("docs/gitignore.md", Ok(()));
        check("über/straße.txt", Ok(()));
    }

    #[test]
    fn canonical_forms_of_protected_names() {
        assert_eq!(canonical_path("GITMOD~1"), ".gitmodules");
        assert_eq!(canonical_path("sub/.GitAttributes. "), "sub/.gitattributes");
        assert_eq!(canonical_path("gi250a~2"), ".gitattributes");
        assert_eq!(canonical_path("Src/Engine.TOML"), "src/engine.toml");
    }
}
