//! The pure checks on a diff, before anything is written (DESIGN.md §2; issue 5): its
//! bytes (size, line length, NUL), libgit2's parse of it ([`super::parse`]), the `index`
//! blob ids against the pinned baseline (gate `verified`), and the surface rules (gate
//! `surface_ok`): text consistent with the parse, path rules ([`super::path`]), denied
//! globs, modes, symlinks and gitlinks, binary patches, paths through baseline symlinks.
//!
//! [`inspect`] runs them all and returns the first violation, or the [`Approved`] set of
//! changes that [`super::apply`] then must reproduce exactly.

use std::collections::BTreeSet;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use receipts::model::SurfaceSpec;

use super::Violation;
use super::baseline::{BaselineIndex, MODE_GITLINK, MODE_SYMLINK, MODE_TREE};
use super::parse::{ChangeKind, FileChange, ParsedDiff, check_text, parse};
use super::path::{canonical_path, check_path};

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

/// Runs every check on `bytes`, in the order: size, NUL and line length; libgit2's parse;
/// the blob ids against `baseline` (gate `verified`); the surface rules (gate
/// `surface_ok`). `denied` is `surface.denied_paths` compiled ([`DeniedGlobs::new`]).
///
/// Errors: the first [`Violation`]; its [`Violation::gate`] says where it rejects.
pub fn inspect(
    bytes: &[u8],
    surface: &SurfaceSpec,
    denied: &DeniedGlobs,
    baseline: &BaselineIndex,
) -> Result<Inspection, Violation> {
    check_bytes(bytes, surface)?;
    let parsed = parse(bytes)?;
    let checked = check_baseline_ids(&parsed.files, baseline)?;
    let approved = check_surface(bytes, &parsed.files, surface, denied, baseline, &checked)?;
    Ok(Inspection { parsed, approved })
}

/// Size, NUL bytes and line length (SurfaceSpec limits).
fn check_bytes(bytes: &[u8], surface: &SurfaceSpec) -> Result<(), Violation> {
    let size_bytes = bytes.len() as u64;
    if size_bytes > surface.max_diff_bytes {
        return Err(Violation::TooLarge {
            size_bytes,
            max_bytes: surface.max_diff_bytes,
        });
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Violation::Empty);
    }
    if let Some(offset) = bytes.iter().position(|&b| b == 0) {
        return Err(Violation::NulByte { offset });
    }
    for (index, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.len() as u64 > surface.max_line_bytes {
            return Err(Violation::LineTooLong {
                line: index + 1,
                length_bytes: line.len(),
                max_bytes: surface.max_line_bytes,
            });
        }
    }
    Ok(())
}

/// Gate `verified`: every preimage a section names exists in the baseline, and its
/// `index` blob id (abbreviated ids by prefix) is the baseline's; a new file does not
/// exist yet. Returns, per section, whether a blob id was compared.
fn check_baseline_ids(
    files: &[FileChange],
    baseline: &BaselineIndex,
) -> Result<Vec<bool>, Violation> {
    let commit = baseline.commit().to_owned();
    let mut checked = Vec::with_capacity(files.len());
    for file in files {
        let old = lossy(&file.old_path);
        if file.kind == ChangeKind::Added {
            if baseline.get(&file.new_path).is_some() {
                return Err(Violation::ExistsInBaseline {
                    path: lossy(&file.new_path),
                    commit: commit.clone(),
                });
            }
            checked.push(false);
            continue;
        }
        let Some(entry) = baseline.get(&file.old_path).filter(|e| e.mode != MODE_TREE) else {
            return Err(Violation::MissingInBaseline {
                path: old,
                commit: commit.clone(),
            });
        };
        if file.old_id_hex_len > 0 {
            let diff_hex = file.old_id.to_string();
            let diff_id = &diff_hex[..file.old_id_hex_len.min(diff_hex.len())];
            let baseline_id = entry.id.to_string();
            if !baseline_id.starts_with(diff_id) {
                return Err(Violation::BlobMismatch {
                    path: old,
                    diff_id: diff_id.to_owned(),
                    baseline_id,
                    commit: commit.clone(),
                });
            }
        }
        checked.push(file.old_id_hex_len > 0);
    }
    Ok(checked)
}

/// Gate `surface_ok`: text, paths, globs, modes, symlinks, binaries, duplicates.
fn check_surface(
    bytes: &[u8],
    files: &[FileChange],
    surface: &SurfaceSpec,
    denied: &DeniedGlobs,
    baseline: &BaselineIndex,
    blob_checked: &[bool],
) -> Result<Approved, Violation> {
    if files.is_empty() {
        // libgit2 found no section: say why from the text, or call it empty.
        check_text(bytes, files)?;
        return Err(Violation::Empty);
    }
    check_text(bytes, files)?;
    let mut changes = Vec::with_capacity(files.len());
    let mut changed_paths = BTreeSet::new();
    let mut touched = BTreeSet::new();
    for (file, &blob_checked) in files.iter().zip(blob_checked) {
        let old_path = utf8(&file.old_path)?;
        let new_path = utf8(&file.new_path)?;
        let (reads, writes): (Vec<&str>, Vec<&str>) = match file.kind {
            ChangeKind::Added => (vec![], vec![new_path]),
            ChangeKind::Deleted => (vec![], vec![old_path]),
            ChangeKind::Modified if old_path == new_path => (vec![], vec![new_path]),
            ChangeKind::Renamed => (vec![], vec![old_path, new_path]),
            ChangeKind::Copied => (vec![old_path], vec![new_path]),
            ChangeKind::Modified | ChangeKind::Other => {
                return Err(Violation::UnsupportedChange {
                    path: new_path.to_owned(),
                    kind: if file.kind == ChangeKind::Other {
                        "unknown delta status".into()
                    } else {
                        format!(
                            "modification whose old path `{old_path}` differs from its new path (write `rename from`/`rename to` lines)"
                        )
                    },
                });
            }
        };
        for &path in reads.iter().chain(&writes) {
            check_path(path).map_err(|rule| Violation::BadPath {
                path: path.to_owned(),
                rule,
            })?;
            if let Some(pattern) = denied.matching(path) {
                return Err(Violation::DeniedPath {
                    path: path.to_owned(),
                    pattern: pattern.to_owned(),
                });
            }
            check_ancestry(path, baseline)?;
        }
        if file.binary {
            return Err(Violation::Binary {
                path: new_path.to_owned(),
            });
        }
        check_modes(file, new_path, surface, baseline)?;
        for &path in &writes {
            if !touched.insert(canonical_path(path)) {
                return Err(Violation::DuplicatePath {
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
    Ok(Approved {
        changes,
        changed_paths,
    })
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

/// Modes: no symlink, gitlink or directory on either side, no unknown mode, and a new
/// file or a changed mode only among `surface.allowed_modes`. A modification that does
/// not state its mode keeps the baseline's.
fn check_modes(
    file: &FileChange,
    path: &str,
    surface: &SurfaceSpec,
    baseline: &BaselineIndex,
) -> Result<(), Violation> {
    for mode in [file.old_mode, file.new_mode] {
        let what = match mode {
            0 | MODE_REGULAR | MODE_EXECUTABLE | MODE_GROUP_WRITABLE => continue,
            MODE_SYMLINK => "symlink",
            MODE_GITLINK => "submodule (gitlink)",
            MODE_TREE => "directory",
            _ => {
                return Err(Violation::UnknownMode {
                    path: path.to_owned(),
                    mode,
                });
            }
        };
        return Err(Violation::SpecialMode {
            path: path.to_owned(),
            mode,
            what,
        });
    }
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
