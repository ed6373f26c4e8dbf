//! The pure checks on a diff, before anything is written (content/submitting.md; issue 5): its
//! bytes (size, line length, NUL), libgit2's parse of it ([`super::parse`]), the path
//! rules ([`super::path`]) and denied globs, the `index` blob ids against the pinned
//! baseline (gate `verified`), and the rest of the surface rules (gate `surface_ok`):
//! modes, symlinks and gitlinks, binary patches, paths through baseline symlinks, and
//! text consistent with the parse.
//!
//! [`inspect`] runs them all and returns every violation, most specific first
//! ([`super::Violations`]), or the [`Approved`] set of changes that [`super::apply`] then
//! must reproduce exactly. A diff whose bytes break a limit, or that libgit2 cannot parse,
//! is reported with that one violation: nothing else can be read from it. Otherwise every
//! section is checked whatever the others broke, and within a section the path rules run
//! first: a section whose path breaks one is not looked up in the baseline (nor checked
//! for symlinks on its way, nor for its mode against the baseline's), so a traversal is
//! reported as a traversal, not as a missing file.

use std::collections::BTreeSet;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use receipts::model::SurfaceSpec;

use super::baseline::{BaselineIndex, MODE_GITLINK, MODE_SYMLINK, MODE_TREE};
use super::parse::{ChangeKind, FileChange, ParsedDiff, check_text, parse};
use super::path::{canonical_path, check_path};
use super::{Violation, Violations};

/// Regular file modes.
const MODE_REGULAR: u32 = 0o100644;
const MODE_EXECUTABLE: u32 = 0o100755;
const MODE_GROUP_WRITABLE: u32 = 0o100664;

/// What the checks approved: one entry per section, and every path whose state on disk
/// the diff changes (written, created or removed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Approved {
    /// One per section, in the order of the diff.
    pub changes: Vec<ApprovedChange>,
    /// Paths that differ from the baseline after applying: added, modified, deleted,
    /// both sides of a rename, the target of a copy.
    pub changed_paths: BTreeSet<String>,
}

/// One approved section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApprovedChange {
    /// What it does.
    pub kind: ChangeKind,
    /// Preimage path.
    pub old_path: String,
    /// Postimage path.
    pub new_path: String,
    /// Whether its `index` line named a preimage blob, now checked against the baseline.
    pub blob_checked: bool,
}

/// The parse of a diff that passed every check, with what they approved.
#[derive(Debug)]
pub struct Inspection {
    /// libgit2's parse (what gets applied).
    pub parsed: ParsedDiff,
    /// The approved changes.
    pub approved: Approved,
    /// What was compared with the pinned baseline.
    pub compared: Comparison,
}

/// A diff the checks refuse: every violation, and what was compared with the baseline
/// before (`None` when the diff was not parsed: its bytes break a limit, or libgit2
/// cannot parse it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// Every violation, most specific first.
    pub violations: Violations,
    /// What the baseline lookups compared.
    pub compared: Option<Comparison>,
}

/// What the lookups in the pinned baseline (gate `verified`) compared, so its event says
/// what it checked rather than what it hoped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Sections of the diff.
    pub sections: usize,
    /// Sections whose `index` line named a preimage blob id that was compared with the
    /// baseline's.
    pub ids_compared: usize,
    /// Of those, the ones that matched.
    pub ids_matched: usize,
    /// Sections that change, delete, rename or copy a baseline file without naming its
    /// blob id (no `index` line): looked up, nothing to compare.
    pub without_id: usize,
    /// New files, checked to be absent from the baseline.
    pub created: usize,
    /// Sections not looked up: a path of theirs breaks a path rule.
    pub skipped: usize,
}

impl Comparison {
    /// One sentence: what was compared with the pinned baseline `commit` (shortened to 12
    /// characters).
    pub fn describe(&self, commit: &str) -> String {
        let commit = commit.get(..12).unwrap_or(commit);
        if self.sections == 0 {
            return format!(
                "the diff has no file section: nothing was compared with the pinned baseline commit `{commit}`"
            );
        }
        let mut parts = Vec::new();
        parts.push(match (self.ids_compared, self.ids_matched) {
            (0, _) => "no preimage blob id was compared".to_owned(),
            (1, 1) => "the 1 preimage blob id named by an `index` line matches".to_owned(),
            (n, m) if n == m => format!("all {n} preimage blob ids named by `index` lines match"),
            (n, m) => format!("{m} of {n} preimage blob ids named by `index` lines match"),
        });
        if self.without_id > 0 {
            parts.push(format!(
                "{} without an `index` line: the file exists, with no blob id to compare (the apply checks its content)",
                count(self.without_id, "section", "sections")
            ));
        }
        if self.created > 0 {
            parts.push(format!(
                "{} checked absent from the baseline",
                count(self.created, "new file", "new files")
            ));
        }
        if self.skipped > 0 {
            parts.push(format!(
                "{} not looked up because a path breaks a path rule",
                count(self.skipped, "section", "sections")
            ));
        }
        format!(
            "compared with the pinned baseline commit `{commit}`: {}",
            parts.join("; ")
        )
    }
}

/// `1 section`, `2 sections`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A campaign's denied globs, compiled (case-insensitive, `*` not crossing `/`).
#[derive(Clone, Debug)]
pub struct DeniedGlobs {
    patterns: Vec<String>,
    set: GlobSet,
}

impl DeniedGlobs {
    /// Compiles `surface.denied_paths`.
    ///
    /// Errors: the pattern that does not compile and globset's message.
    pub fn new(patterns: &[String]) -> Result<Self, (String, String)> {
        let mut builder = GlobSetBuilder::new();
        for pattern in patterns {
            let glob = GlobBuilder::new(pattern)
                .literal_separator(true)
                .case_insensitive(true)
                .build()
                .map_err(|e| (pattern.clone(), e.to_string()))?;
            builder.add(glob);
        }
        let set = builder
            .build()
            .map_err(|e| (patterns.join(", "), e.to_string()))?;
        Ok(Self {
            patterns: patterns.to_vec(),
            set,
        })
    }

    /// The first pattern matching `path` or its canonical form.
    fn matching(&self, path: &str) -> Option<&str> {
        let canonical = canonical_path(path);
        let hits = self.set.matches(path);
        let hits = if hits.is_empty() {
            self.set.matches(&canonical)
        } else {
            hits
        };
        hits.first().map(|&i| self.patterns[i].as_str())
    }
}

/// Runs every check on `bytes`: size, NUL and line length, then libgit2's parse (each
/// stops the checks: nothing more can be read from such a diff); then, section by
/// section, the path rules and denied globs, the lookups in `baseline` (gate `verified`;
/// skipped for a section whose path broke a rule), symlinks and files on the way,
/// binaries, modes and duplicate paths; and the text against the parse. `denied` is
/// `surface.denied_paths` compiled ([`DeniedGlobs::new`]).
///
/// Errors: a [`Refusal`] with every violation, most specific first; its
/// [`Violations::gate`] says where the submission is rejected.
pub fn inspect(
    bytes: &[u8],
    surface: &SurfaceSpec,
    denied: &DeniedGlobs,
    baseline: &BaselineIndex,
) -> Result<Inspection, Refusal> {
    let unread = |violations: Violations| Refusal {
        violations,
        compared: None,
    };
    check_bytes(bytes, surface).map_err(unread)?;
    let parsed = parse(bytes).map_err(|v| unread(Violations::one(v)))?;
    let mut found = Vec::new();
    let (approved, compared) = check_sections(&parsed.files, surface, denied, baseline, &mut found);
    found.extend(check_text(bytes, &parsed.files));
    if parsed.files.is_empty() && found.is_empty() {
        // libgit2 found no section, and the text does not say why.
        found.push(Violation::Empty);
    }
    match Violations::new(found) {
        Some(violations) => Err(Refusal {
            violations,
            compared: Some(compared),
        }),
        None => Ok(Inspection {
            parsed,
            approved,
            compared,
        }),
    }
}

/// Size, NUL bytes and line length (SurfaceSpec limits): a too large or an empty diff
/// alone; otherwise the first NUL byte and every line that is too long.
fn check_bytes(bytes: &[u8], surface: &SurfaceSpec) -> Result<(), Violations> {
    let size_bytes = bytes.len() as u64;
    if size_bytes > surface.max_diff_bytes {
        return Err(Violations::one(Violation::TooLarge {
            read_bytes: size_bytes,
            max_bytes: surface.max_diff_bytes,
        }));
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Violations::one(Violation::Empty));
    }
    let mut found = Vec::new();
    if let Some(offset) = bytes.iter().position(|&b| b == 0) {
        found.push(Violation::NulByte { offset });
    }
    for (index, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.len() as u64 > surface.max_line_bytes {
            found.push(Violation::LineTooLong {
                line: index + 1,
                length_bytes: line.len(),
                max_bytes: surface.max_line_bytes,
            });
        }
    }
    match Violations::new(found) {
        Some(violations) => Err(violations),
        None => Ok(()),
    }
}

/// Every section's checks, in the order of the diff; violations are appended to `found`.
/// Returns what would be approved (meaningful only when nothing was found) and what the
/// baseline lookups compared.
fn check_sections(
    files: &[FileChange],
    surface: &SurfaceSpec,
    denied: &DeniedGlobs,
    baseline: &BaselineIndex,
    found: &mut Vec<Violation>,
) -> (Approved, Comparison) {
    let mut compared = Comparison {
        sections: files.len(),
        ..Comparison::default()
    };
    let mut changes = Vec::with_capacity(files.len());
    let mut changed_paths = BTreeSet::new();
    let mut touched = BTreeSet::new();
    for file in files {
        // The path rules first, on every path the section names.
        let (old_path, new_path) = match (utf8(&file.old_path), utf8(&file.new_path)) {
            (Ok(old), Ok(new)) => (old, new),
            (old, new) => {
                found.extend(old.err());
                if file.new_path != file.old_path {
                    found.extend(new.err());
                }
                compared.skipped += 1;
                continue;
            }
        };
        let roles: Option<(Vec<&str>, Vec<&str>)> = match file.kind {
            ChangeKind::Added => Some((vec![], vec![new_path])),
            ChangeKind::Deleted => Some((vec![], vec![old_path])),
            ChangeKind::Modified if old_path == new_path => Some((vec![], vec![new_path])),
            ChangeKind::Renamed => Some((vec![], vec![old_path, new_path])),
            ChangeKind::Copied => Some((vec![old_path], vec![new_path])),
            ChangeKind::Modified | ChangeKind::Other => None,
        };
        let mut named = vec![old_path];
        if new_path != old_path {
            named.push(new_path);
        }
        let mut paths_ok = true;
        for &path in &named {
            if let Err(rule) = check_path(path) {
                found.push(Violation::BadPath {
                    path: path.to_owned(),
                    rule,
                });
                paths_ok = false;
            } else if let Some(pattern) = denied.matching(path) {
                found.push(Violation::DeniedPath {
                    path: path.to_owned(),
                    pattern: pattern.to_owned(),
                });
                paths_ok = false;
            }
        }
        // What the modes say needs no baseline.
        let modes_ok = check_special_modes(file, new_path, found);
        if file.binary {
            found.push(Violation::Binary {
                path: new_path.to_owned(),
            });
        }
        let Some((reads, writes)) = roles else {
            found.push(Violation::UnsupportedChange {
                path: new_path.to_owned(),
                kind: if file.kind == ChangeKind::Other {
                    "unknown delta status".into()
                } else {
                    format!(
                        "modification whose old path `{old_path}` differs from its new path (write `rename from`/`rename to` lines)"
                    )
                },
            });
            if !paths_ok {
                compared.skipped += 1;
            }
            continue;
        };
        if !paths_ok {
            compared.skipped += 1;
            continue;
        }
        // Then the baseline: lookups (gate `verified`), symlinks and files on the way.
        let preimage = look_up(file, baseline, &mut compared, found);
        for &path in reads.iter().chain(&writes) {
            found.extend(check_ancestry(path, baseline).err());
        }
        if modes_ok && preimage {
            found.extend(check_allowed_mode(file, new_path, surface, baseline).err());
        }
        let blob_checked = file.kind != ChangeKind::Added && file.old_id_hex_len > 0 && preimage;
        for &path in &writes {
            if !touched.insert(canonical_path(path)) {
                found.push(Violation::DuplicatePath {
                    path: path.to_owned(),
                });
            }
            changed_paths.insert(path.to_owned());
        }
        changes.push(ApprovedChange {
            kind: file.kind,
            old_path: old_path.to_owned(),
            new_path: new_path.to_owned(),
            blob_checked,
        });
    }
    (
        Approved {
            changes,
            changed_paths,
        },
        compared,
    )
}

/// Gate `verified` for one section: the preimage it names exists in the baseline, and its
/// `index` blob id (an abbreviated id by prefix) is the baseline's; a new file does not
/// exist yet. Counts into `compared`; returns whether the section's preimage is as it
/// says (present, or absent for a new file), so the checks that need it can run.
fn look_up(
    file: &FileChange,
    baseline: &BaselineIndex,
    compared: &mut Comparison,
    found: &mut Vec<Violation>,
) -> bool {
    let commit = baseline.commit().to_owned();
    if file.kind == ChangeKind::Added {
        if baseline.get(&file.new_path).is_some() {
            found.push(Violation::ExistsInBaseline {
                path: lossy(&file.new_path),
                commit,
            });
            return false;
        }
        compared.created += 1;
        return true;
    }
    let old = lossy(&file.old_path);
    let Some(entry) = baseline.get(&file.old_path).filter(|e| e.mode != MODE_TREE) else {
        found.push(Violation::MissingInBaseline { path: old, commit });
        return false;
    };
    if file.old_id_hex_len == 0 {
        compared.without_id += 1;
        return true;
    }
    compared.ids_compared += 1;
    let diff_hex = file.old_id.to_string();
    let diff_id = &diff_hex[..file.old_id_hex_len.min(diff_hex.len())];
    let baseline_id = entry.id.to_string();
    if !baseline_id.starts_with(diff_id) {
        found.push(Violation::BlobMismatch {
            path: old,
            diff_id: diff_id.to_owned(),
            baseline_id,
            commit,
        });
        // The file is there: its mode can still be checked.
        return true;
    }
    compared.ids_matched += 1;
    true
}

/// No component of `path` (the path itself included) may be a baseline symlink, and no
/// proper ancestor a baseline file; compared by canonical form, so `Link/x` cannot pass
/// a symlink `link` on a case-insensitive filesystem.
fn check_ancestry(path: &str, baseline: &BaselineIndex) -> Result<(), Violation> {
    let mut end = 0;
    loop {
        let next = path[end..].find('/').map(|i| end + i);
        let prefix = &path[..next.unwrap_or(path.len())];
        if let Some((real, entry)) = baseline.get_canonical(prefix) {
            if entry.mode == MODE_SYMLINK {
                return Err(Violation::ThroughSymlink {
                    path: path.to_owned(),
                    symlink: real.to_owned(),
                });
            }
            if next.is_some() && entry.mode != MODE_TREE {
                return Err(Violation::ThroughFile {
                    path: path.to_owned(),
                    file: real.to_owned(),
                });
            }
        }
        match next {
            Some(i) => end = i + 1,
            None => return Ok(()),
        }
    }
}

/// Modes the diff states: no symlink, gitlink or directory on either side, no unknown
/// mode (the first such mode of the section is reported). Returns whether they are all
/// regular.
fn check_special_modes(file: &FileChange, path: &str, found: &mut Vec<Violation>) -> bool {
    for mode in [file.old_mode, file.new_mode] {
        let what = match mode {
            0 | MODE_REGULAR | MODE_EXECUTABLE | MODE_GROUP_WRITABLE => continue,
            MODE_SYMLINK => "symlink",
            MODE_GITLINK => "submodule (gitlink)",
            MODE_TREE => "directory",
            _ => {
                found.push(Violation::UnknownMode {
                    path: path.to_owned(),
                    mode,
                });
                return false;
            }
        };
        found.push(Violation::SpecialMode {
            path: path.to_owned(),
            mode,
            what,
        });
        return false;
    }
    true
}

/// A new file or a changed mode only among `surface.allowed_modes`; a modification that
/// does not state its mode keeps the baseline's. Run once the preimage is known to be
/// where the section says.
fn check_allowed_mode(
    file: &FileChange,
    path: &str,
    surface: &SurfaceSpec,
    baseline: &BaselineIndex,
) -> Result<(), Violation> {
    if file.kind == ChangeKind::Deleted {
        return Ok(());
    }
    let before = match file.kind {
        ChangeKind::Added => None,
        _ => baseline.get(&file.old_path).map(|e| e.mode),
    };
    let after = match (file.new_mode, before) {
        (0, Some(mode)) => mode,
        (mode, _) => mode,
    };
    if Some(after) != before && !allowed(surface, after) {
        return Err(Violation::ModeNotAllowed {
            path: path.to_owned(),
            mode: after,
            allowed: surface.allowed_modes.join(", "),
        });
    }
    Ok(())
}

fn allowed(surface: &SurfaceSpec, mode: u32) -> bool {
    let octal = format!("{mode:06o}");
    surface.allowed_modes.contains(&octal)
}

fn utf8(path: &[u8]) -> Result<&str, Violation> {
    std::str::from_utf8(path).map_err(|_| Violation::InvalidUtf8Path { path: lossy(path) })
}

fn lossy(path: &[u8]) -> String {
    String::from_utf8_lossy(path).into_owned()
}
