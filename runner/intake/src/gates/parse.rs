//! libgit2's parse of a submitted diff, read into plain values, and the check that the
//! raw text says what that parse says.
//!
//! The parse is [`git2::Diff::from_buffer`]: the very value that [`super::apply`] later
//! applies. Two traps are handled here. First, `git2::DiffFile::mode()` panics on a mode
//! libgit2 does not know (a trap of git2 0.21), and a diff may carry any octal
//! number in an `old mode` line; so modes (and the length of abbreviated blob ids) are
//! read from the `git_diff_file` struct itself. Second, libgit2 prefers `rename from`/`to`
//! lines over the `diff --git` header and skips unknown lines between sections, where
//! `git apply` or a human reader would see other paths; [`check_text`] therefore walks the
//! raw lines and requires every header path and every hunk line count to agree with the
//! parse.

use git2::{Binding, Delta, Diff, DiffFile, Oid, Patch};

use super::Violation;

/// A diff as libgit2 parsed it: the [`Diff`] itself (what gets applied) and one
/// [`FileChange`] per section, in the order of the text.
pub struct ParsedDiff {
    /// libgit2's parse.
    pub diff: Diff<'static>,
    /// One entry per `diff --git` section.
    pub files: Vec<FileChange>,
}

impl std::fmt::Debug for ParsedDiff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParsedDiff")
            .field("files", &self.files)
            .finish_non_exhaustive()
    }
}

/// What one section does, as libgit2 parsed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    /// A new file.
    Added,
    /// A removed file.
    Deleted,
    /// A changed file (content and/or mode).
    Modified,
    /// A renamed file (possibly with changes).
    Renamed,
    /// A copied file (possibly with changes).
    Copied,
    /// Any other delta status (never produced by a parsed patch; rejected).
    Other,
}

/// One section of the diff, read from libgit2's `git_diff_delta`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    /// Added, deleted, modified, renamed or copied.
    pub kind: ChangeKind,
    /// The preimage path (for an added file, the `a/` path of the header), raw bytes.
    pub old_path: Vec<u8>,
    /// The postimage path (for a deleted file, the `b/` path of the header), raw bytes.
    pub new_path: Vec<u8>,
    /// Raw preimage mode (e.g. `0o100644`); 0 when the diff does not state it.
    pub old_mode: u32,
    /// Raw postimage mode; 0 when the diff does not state it.
    pub new_mode: u32,
    /// Preimage blob id from the `index` line, zero-padded when abbreviated.
    pub old_id: Oid,
    /// How many hex digits of `old_id` the diff gave (0: no `index` line).
    pub old_id_hex_len: usize,
    /// Whether libgit2 flags the section binary.
    pub binary: bool,
    /// Number of hunks.
    pub hunks: usize,
    /// Added lines over all hunks.
    pub additions: usize,
    /// Removed lines over all hunks.
    pub deletions: usize,
}

/// Parses `bytes` with libgit2.
///
/// Errors: [`Violation::Unparseable`] with libgit2's message.
pub fn parse(bytes: &[u8]) -> Result<ParsedDiff, Violation> {
    let unparseable = |e: git2::Error| Violation::Unparseable {
        message: e.message().to_owned(),
    };
    let diff = Diff::from_buffer(bytes).map_err(unparseable)?;
    let mut files = Vec::with_capacity(diff.deltas().len());
    for (index, delta) in diff.deltas().enumerate() {
        let (hunks, additions, deletions) = match Patch::from_diff(&diff, index) {
            Ok(Some(patch)) => {
                let (_, additions, deletions) = patch.line_stats().map_err(unparseable)?;
                (patch.num_hunks(), additions, deletions)
            }
            Ok(None) => (0, 0, 0),
            Err(e) => return Err(unparseable(e)),
        };
        let old = delta.old_file();
        let new = delta.new_file();
        let (mut old_path, mut new_path) = (
            old.path_bytes().unwrap_or_default().to_vec(),
            new.path_bytes().unwrap_or_default().to_vec(),
        );
        // A plain `git diff` writes `diff --git a/new file b/new file` for a new file whose
        // name has a space: libgit2 cannot split that header and leaves the preimage path
        // empty, where git takes the one name both halves share, the `+++` path. So do
        // we (and the same for a deleted file); [`check_text`] then holds the header line
        // to that name.
        match delta.status() {
            Delta::Added if old_path.is_empty() => old_path.clone_from(&new_path),
            Delta::Deleted if new_path.is_empty() => new_path.clone_from(&old_path),
            _ => {}
        }
        files.push(FileChange {
            kind: match delta.status() {
                Delta::Added => ChangeKind::Added,
                Delta::Deleted => ChangeKind::Deleted,
                Delta::Modified => ChangeKind::Modified,
                Delta::Renamed => ChangeKind::Renamed,
                Delta::Copied => ChangeKind::Copied,
                _ => ChangeKind::Other,
            },
            old_path,
            new_path,
            old_mode: raw_mode(&old),
            new_mode: raw_mode(&new),
            old_id: old.id(),
            old_id_hex_len: usize::from(raw_id_abbrev(&old)),
            binary: old.is_binary()
                || new.is_binary()
                || delta.flags().contains(git2::DiffFlags::BINARY),
            hunks,
            additions,
            deletions,
        });
    }
    Ok(ParsedDiff { diff, files })
}

/// The raw mode of one side of a delta, without `DiffFile::mode()`'s panic on modes
/// libgit2 does not know.
fn raw_mode(file: &DiffFile<'_>) -> u32 {
    // SAFETY: `raw()` points at the `git_diff_file` embedded in a delta of the live `Diff`
    // that `file` borrows (its lifetime ties it to that `Diff`); reading a plain integer
    // field of it is what every `DiffFile` accessor does.
    u32::from(unsafe { (*file.raw()).mode })
}

/// How many hex digits the diff's `index` line gave for this side's blob id.
fn raw_id_abbrev(file: &DiffFile<'_>) -> u16 {
    // SAFETY: as in `raw_mode`.
    unsafe { (*file.raw()).id_abbrev }
}

/// Header lines git writes between `diff --git` and the first hunk (git-diff(1),
/// "Generating patch text with -p"); anything else there is refused.
const HEADER_PREFIXES: [&[u8]; 13] = [
    b"old mode ",
    b"new mode ",
    b"deleted file mode ",
    b"new file mode ",
    b"index ",
    b"similarity index ",
    b"dissimilarity index ",
    b"rename from ",
    b"rename to ",
    b"copy from ",
    b"copy to ",
    b"--- ",
    b"+++ ",
];

/// Checks the raw text against libgit2's parse of it: it starts with `diff --git`; it
/// has one section per parsed file; every header line is one git writes, and its paths
/// (`diff --git a/X b/Y`, `---`, `+++`, `rename`/`copy from`/`to`) are the paths of the
/// parse, plain or C-quoted as git quotes them; no binary patch; and every line after the
/// first hunk header is a hunk line, with as many `+` and `-` lines as libgit2 counted (so
/// no line hides between hunks, where libgit2 skips it as noise).
///
/// Returns every violation, in the order of the text (empty: the text agrees): every
/// header line that names other paths, and per section the first line that is not
/// where it may be (after it, the section's lines are not read further). A text whose
/// sections do not line up with the parse gets that one violation.
/// [`Violation::Malformed`], [`Violation::HeaderMismatch`], [`Violation::Binary`] (only
/// for a section libgit2 did not flag binary: [`super::surface`] reports those), and
/// [`Violation::NewFileWithPreimage`].
pub fn check_text(bytes: &[u8], files: &[FileChange]) -> Vec<Violation> {
    let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    let malformed = |line: usize, rule: &str, found: &[u8]| Violation::Malformed {
        line,
        rule: rule.to_owned(),
        found: shorten(found),
    };
    if lines.first().is_none_or(|l| !l.starts_with(b"diff --git ")) {
        return vec![malformed(
            1,
            "a diff must start with a `diff --git` line (the output of `git diff`)",
            lines.first().copied().unwrap_or_default(),
        )];
    }
    let starts: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].starts_with(b"diff --git "))
        .collect();
    if starts.len() != files.len() {
        return vec![malformed(
            starts.get(files.len()).map_or(1, |i| i + 1),
            &format!(
                "the text has {} `diff --git` sections but libgit2 parsed {} files",
                starts.len(),
                files.len()
            ),
            lines[starts.get(files.len()).copied().unwrap_or(0)],
        )];
    }
    let mut found = Vec::new();
    for (section, file) in files.iter().enumerate() {
        let begin = starts[section];
        let end = starts.get(section + 1).copied().unwrap_or(lines.len());
        check_section(&lines[begin..end], begin, file, &mut found);
    }
    found
}

/// Checks one section: `lines[0]` is its `diff --git` line, which is line `offset + 1`.
fn check_section(lines: &[&[u8]], offset: usize, file: &FileChange, found: &mut Vec<Violation>) {
    let old = &file.old_path;
    let new = &file.new_path;
    let expect = |i: usize, line: &[u8], choices: Vec<Vec<u8>>| {
        if choices.iter().any(|c| c.as_slice() == line) {
            None
        } else {
            Some(Violation::HeaderMismatch {
                line: offset + i + 1,
                expected: String::from_utf8_lossy(&choices[0]).into_owned(),
                found: shorten(line),
            })
        }
    };
    let mut header_choices = Vec::new();
    for a in quoted_forms(b"a/", old) {
        for b in quoted_forms(b"b/", new) {
            header_choices.push([b"diff --git ".as_slice(), &a, b" ", &b].concat());
        }
    }
    found.extend(expect(0, lines[0], header_choices));
    let with = |prefix: &[u8], forms: Vec<Vec<u8>>| {
        forms
            .into_iter()
            .map(|f| [prefix, &f].concat())
            .collect::<Vec<_>>()
    };
    let mut i = 1;
    while i < lines.len() {
        let line = lines[i];
        if line.starts_with(b"@@ ") {
            break;
        }
        if line.starts_with(b"GIT binary patch") || line.starts_with(b"Binary files ") {
            if !file.binary {
                found.push(Violation::Binary {
                    path: String::from_utf8_lossy(new).into_owned(),
                });
            }
            return;
        }
        if !HEADER_PREFIXES.iter().any(|p| line.starts_with(p)) {
            found.push(Violation::Malformed {
                line: offset + i + 1,
                rule: "not a line git writes in the header of a file section".into(),
                found: shorten(line),
            });
            return;
        }
        let mismatch = if line.starts_with(b"--- ") {
            let choices = if file.kind == ChangeKind::Added {
                vec![b"--- /dev/null".to_vec()]
            } else {
                with(b"--- ", quoted_forms(b"a/", old))
            };
            expect(i, line, choices)
        } else if line.starts_with(b"+++ ") {
            let choices = if file.kind == ChangeKind::Deleted {
                vec![b"+++ /dev/null".to_vec()]
            } else {
                with(b"+++ ", quoted_forms(b"b/", new))
            };
            expect(i, line, choices)
        } else if line.starts_with(b"rename from ") {
            expect(i, line, with(b"rename from ", quoted_forms(b"", old)))
        } else if line.starts_with(b"rename to ") {
            expect(i, line, with(b"rename to ", quoted_forms(b"", new)))
        } else if line.starts_with(b"copy from ") {
            expect(i, line, with(b"copy from ", quoted_forms(b"", old)))
        } else if line.starts_with(b"copy to ") {
            expect(i, line, with(b"copy to ", quoted_forms(b"", new)))
        } else if file.kind == ChangeKind::Added
            && let Some(ids) = line.strip_prefix(b"index ")
        {
            // libgit2 zeroes a new file's preimage id, so only the text can show it.
            let preimage = ids.split(|&b| b == b'.').next().unwrap_or_default();
            (preimage.is_empty() || preimage.iter().any(|&b| b != b'0')).then(|| {
                Violation::NewFileWithPreimage {
                    path: String::from_utf8_lossy(new).into_owned(),
                    diff_id: String::from_utf8_lossy(preimage).into_owned(),
                }
            })
        } else {
            None
        };
        found.extend(mismatch);
        i += 1;
    }
    let (mut additions, mut deletions) = (0, 0);
    for (j, line) in lines.iter().enumerate().skip(i) {
        match line.first() {
            None | Some(b' ') | Some(b'\\') => {}
            Some(b'+') => additions += 1,
            Some(b'-') => deletions += 1,
            Some(b'@') if line.starts_with(b"@@ ") => {}
            Some(_) => {
                found.push(Violation::Malformed {
                    line: offset + j + 1,
                    rule: "not a hunk line (` `, `+`, `-`, `\\` or `@@`)".into(),
                    found: shorten(line),
                });
                return;
            }
        }
    }
    if additions != file.additions || deletions != file.deletions {
        found.push(Violation::Malformed {
            line: offset + i + 1,
            rule: format!(
                "the hunk headers count {} added and {} removed lines but the section has {additions} `+` and {deletions} `-` lines; lines outside a hunk are not accepted",
                file.additions, file.deletions
            ),
            found: shorten(lines.get(i).copied().unwrap_or_default()),
        });
    }
}

/// The forms git may write `prefix` + `path` in: plain, and C-quoted (`"a/t\303\251"`)
/// as `core.quotePath` does for bytes outside printable ASCII, `"` and `\`.
fn quoted_forms(prefix: &[u8], path: &[u8]) -> Vec<Vec<u8>> {
    let plain = [prefix, path].concat();
    let mut quoted = vec![b'"'];
    for &b in &plain {
        match b {
            b'"' => quoted.extend_from_slice(b"\\\""),
            b'\\' => quoted.extend_from_slice(b"\\\\"),
            b'\t' => quoted.extend_from_slice(b"\\t"),
            b'\n' => quoted.extend_from_slice(b"\\n"),
            0x20..=0x7e => quoted.push(b),
            _ => quoted.extend_from_slice(format!("\\{b:03o}").as_bytes()),
        }
    }
    quoted.push(b'"');
    vec![plain, quoted]
}

/// A line for a message: lossy UTF-8, at most 120 characters.
fn shorten(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    if text.chars().count() > 120 {
        let cut: String = text.chars().take(120).collect();
        format!("{cut}…")
    } else {
        text.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression for git2 0.21's trap: `git2::DiffFile::mode()` panics on a mode
    /// libgit2 does not know; the parse reads it raw instead.
    #[test]
    fn unknown_modes_are_read_raw_without_panicking() {
        let diff = b"diff --git a/x b/x\nold mode 100644\nnew mode 177777\n";
        let parsed = parse(diff).expect("libgit2 parses it");
        assert_eq!(parsed.files.len(), 1);
        assert_eq!(parsed.files[0].old_mode, 0o100644);
        assert_eq!(parsed.files[0].new_mode, 0o177777);
    }

    #[test]
    fn abbreviated_ids_keep_their_length() {
        let diff = b"diff --git a/x b/x\nindex 119c64a..bdb7f39 100644\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n";
        let parsed = parse(diff).expect("libgit2 parses it");
        let file = &parsed.files[0];
        assert_eq!(file.kind, ChangeKind::Modified);
        assert_eq!(file.old_id_hex_len, 7);
        assert!(file.old_id.to_string().starts_with("119c64a"));
        assert_eq!((file.additions, file.deletions, file.hunks), (1, 1, 1));
        assert!(check_text(diff, &parsed.files).is_empty());
    }

    /// Issue 43: a plain `git diff` of a new file whose name has a space names it by its
    /// `+++` path on both sides, as git does (not "empty path"); the header must still
    /// name it, and a deleted one the same way.
    #[test]
    fn a_new_or_deleted_file_whose_name_has_a_space_is_named_as_git_names_it() {
        let added = b"diff --git a/new file.txt b/new file.txt\nnew file mode 100644\n\
index 0000000..3b18e51\n--- /dev/null\n+++ b/new file.txt\n@@ -0,0 +1 @@\n+hello\n";
        let parsed = parse(added).expect("libgit2 parses it");
        let file = &parsed.files[0];
        assert_eq!(file.kind, ChangeKind::Added);
        assert_eq!(file.old_path, b"new file.txt");
        assert_eq!(file.new_path, b"new file.txt");
        assert!(check_text(added, &parsed.files).is_empty());

        let deleted = b"diff --git a/old file.txt b/old file.txt\ndeleted file mode 100644\n\
index 3b18e51..0000000\n--- a/old file.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-hello\n";
        let parsed = parse(deleted).expect("libgit2 parses it");
        assert_eq!(parsed.files[0].new_path, b"old file.txt");
        assert!(check_text(deleted, &parsed.files).is_empty());

        // A header naming another file than the `+++` line is still refused.
        let lying = b"diff --git a/x b/new file.txt\nnew file mode 100644\n\
index 0000000..3b18e51\n--- /dev/null\n+++ b/new file.txt\n@@ -0,0 +1 @@\n+hello\n";
        let parsed = parse(lying).expect("libgit2 parses it");
        assert!(matches!(
            check_text(lying, &parsed.files).as_slice(),
            [Violation::HeaderMismatch { line: 1, .. }]
        ));
    }

    /// git's C-quoted paths (octal escapes for bytes outside printable ASCII) parse to
    /// the raw bytes, and the quoted header agrees with the parse.
    #[test]
    fn quoted_octal_paths_are_read_as_git_writes_them() {
        let diff = b"diff --git \"a/caf\\303\\251 x.c\" \"b/caf\\303\\251 x.c\"\n\
index 1111111..2222222 100644\n--- \"a/caf\\303\\251 x.c\"\n+++ \"b/caf\\303\\251 x.c\"\n\
@@ -1 +1 @@\n-a\n+b\n";
        let parsed = parse(diff).expect("libgit2 parses it");
        assert_eq!(parsed.files[0].new_path, "café x.c".as_bytes());
        assert_eq!(parsed.files[0].old_path, "café x.c".as_bytes());
        assert!(check_text(diff, &parsed.files).is_empty());
    }
}
