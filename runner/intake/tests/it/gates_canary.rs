//! Property (issue 5): over a baseline whose symlinks point into a canary directory
//! outside the worktree, no generated diff — valid ones made by libgit2 from random edits,
//! mixed with hostile variants that aim at the symlinks — changes any file outside the
//! worktree, the canary included. At least half of the generated diffs must get past
//! the checks to the apply step, so the property is about applying, not only refusing.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use git2::{DiffFindOptions, DiffFormat, DiffOptions, Index, IndexEntry, IndexTime, Repository};
use intake::gates::surface::DeniedGlobs;
use intake::gates::{Baseline, apply_checked, inspect};
use proptest::prelude::*;
use receipts::model::SurfaceSpec;

/// A random edit of the baseline.
#[derive(Clone, Debug)]
enum Edit {
    /// Append a line to the `n`-th regular file.
    Append(usize, String),
    /// Add a new file under a directory chosen by index.
    Add(usize, String, String),
    /// Delete the `n`-th regular file.
    Delete(usize),
    /// Rename the `n`-th regular file to a new name in a chosen directory.
    Rename(usize, usize, String),
    /// A hand-written hostile section aimed at a symlink or outside the tree.
    Hostile(usize),
}

const REGULAR: [&str; 4] = ["engine.toml", "README.md", "src/util.rs", "src/main.rs"];
const DIRS: [&str; 3] = ["", "src/", "docs/"];

/// Sections that try to write through `vendor` (a symlink to the canary directory),
/// replace `notes` (a symlink to a canary file), or leave the tree.
const HOSTILE: [&str; 6] = [
    "diff --git a/vendor/pwned b/vendor/pwned\nnew file mode 100644\nindex 0000000..587be6b\n--- /dev/null\n+++ b/vendor/pwned\n@@ -0,0 +1 @@\n+x\n",
    "diff --git a/notes b/notes\nindex 0000000..587be6b 120000\n--- a/notes\n+++ b/notes\n@@ -1 +1 @@\n-x\n+y\n",
    "diff --git a/README.md b/vendor/README.md\nsimilarity index 100%\nrename from README.md\nrename to vendor/README.md\n",
    "diff --git a/Vendor/pwned b/Vendor/pwned\nnew file mode 100644\nindex 0000000..587be6b\n--- /dev/null\n+++ b/Vendor/pwned\n@@ -0,0 +1 @@\n+x\n",
    "diff --git a/../canary/pwned b/../canary/pwned\nnew file mode 100644\nindex 0000000..587be6b\n--- /dev/null\n+++ b/../canary/pwned\n@@ -0,0 +1 @@\n+x\n",
    "diff --git a/notes b/notes\ndeleted file mode 120000\nindex 0000000..0000000\n--- a/notes\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n",
];

fn edit() -> impl Strategy<Value = Edit> {
    let name = "[a-z]{1,8}\\.(rs|md|txt)";
    let text = "[a-zA-Z0-9 =_]{0,40}";
    prop_oneof![
        4 => (0..REGULAR.len(), text).prop_map(|(i, t)| Edit::Append(i, t)),
        3 => (0..DIRS.len(), name, text).prop_map(|(d, n, t)| Edit::Add(d, n, t)),
        1 => (0..REGULAR.len()).prop_map(Edit::Delete),
        2 => (0..REGULAR.len(), 0..DIRS.len(), name).prop_map(|(i, d, n)| Edit::Rename(i, d, n)),
        1 => (0..HOSTILE.len()).prop_map(Edit::Hostile),
    ]
}

/// Builds the diff of `edits` against the baseline tree with libgit2 (renames detected),
/// then appends the hostile sections.
fn make_diff(repo: &Repository, baseline: &git2::Tree<'_>, edits: &[Edit]) -> Vec<u8> {
    let mut index = Index::new().unwrap();
    index.read_tree(baseline).unwrap();
    let mut hostile = Vec::new();
    for edit in edits {
        match edit {
            Edit::Append(i, text) => {
                let path = REGULAR[*i];
                let Some(entry) = index.get_path(Path::new(path), 0) else {
                    continue;
                };
                let mut content = repo.find_blob(entry.id).unwrap().content().to_vec();
                content.extend_from_slice(text.as_bytes());
                content.push(b'\n');
                put(repo, &mut index, path, &content);
            }
            Edit::Add(dir, name, text) => {
                let path = format!("{}{name}", DIRS[*dir]);
                put(repo, &mut index, &path, format!("{text}\n").as_bytes());
            }
            Edit::Delete(i) => {
                let _ = index.remove_path(Path::new(REGULAR[*i]));
            }
            Edit::Rename(i, dir, name) => {
                let Some(entry) = index.get_path(Path::new(REGULAR[*i]), 0) else {
                    continue;
                };
                let content = repo.find_blob(entry.id).unwrap().content().to_vec();
                let _ = index.remove_path(Path::new(REGULAR[*i]));
                put(repo, &mut index, &format!("{}{name}", DIRS[*dir]), &content);
            }
            Edit::Hostile(i) => hostile.push(HOSTILE[*i]),
        }
    }
    let new_tree = repo.find_tree(index.write_tree_to(repo).unwrap()).unwrap();
    let mut options = DiffOptions::new();
    let mut diff = repo
        .diff_tree_to_tree(Some(baseline), Some(&new_tree), Some(&mut options))
        .unwrap();
    diff.find_similar(Some(DiffFindOptions::new().renames(true)))
        .unwrap();
    let mut out = Vec::new();
    diff.print(DiffFormat::Patch, |_, _, line| {
        if matches!(line.origin(), '+' | '-' | ' ') {
            out.push(line.origin() as u8);
        }
        out.extend_from_slice(line.content());
        true
    })
    .unwrap();
    for section in hostile {
        out.extend_from_slice(section.as_bytes());
    }
    out
}

fn put(repo: &Repository, index: &mut Index, path: &str, content: &[u8]) {
    let id = repo.blob(content).unwrap();
    index
        .add(&IndexEntry {
            ctime: IndexTime::new(0, 0),
            mtime: IndexTime::new(0, 0),
            dev: 0,
            ino: 0,
            mode: 0o100644,
            uid: 0,
            gid: 0,
            file_size: 0,
            id,
            flags: 0,
            flags_extended: 0,
            path: path.as_bytes().to_vec(),
        })
        .unwrap();
}

/// Every entry under `root` except under `skip`: path → (kind, content or link target,
/// permission bits). Symlinks are not followed.
fn snapshot(root: &Path, skip: &Path) -> BTreeMap<PathBuf, (char, Vec<u8>, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.starts_with(skip) {
                continue;
            }
            let meta = fs::symlink_metadata(&path).unwrap();
            let mode = meta.permissions().mode();
            if meta.file_type().is_symlink() {
                let target = fs::read_link(&path).unwrap();
                out.insert(path, ('l', target.as_os_str().as_bytes().to_vec(), mode));
            } else if meta.is_dir() {
                out.insert(path.clone(), ('d', Vec::new(), mode));
                stack.push(path);
            } else {
                let content = fs::read(&path).unwrap();
                out.insert(path, ('f', content, mode));
            }
        }
    }
    out
}

struct World {
    tmp: tempfile::TempDir,
    repo: Repository,
    commit: git2::Oid,
    baseline: Baseline,
}

fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let canary = tmp.path().join("canary");
    fs::create_dir(&canary).unwrap();
    fs::write(canary.join("secret.txt"), "canary\n").unwrap();
    let mut files = crate::support::corpus_baseline();
    files.retain(|(p, _, _)| p != "vendor");
    let canary_target = canary.as_os_str().as_bytes().to_vec();
    files.push(("vendor".into(), 0o120000, canary_target));
    let secret = canary.join("secret.txt").as_os_str().as_bytes().to_vec();
    files.push(("notes".into(), 0o120000, secret));
    files.push(("docs/guide.md".into(), 0o100644, b"# guide\n".to_vec()));
    let repo_path = tmp.path().join("src-repo");
    let commit = crate::support::build_repo(&repo_path, &files);
    let repo = Repository::open(&repo_path).unwrap();
    let baseline = Baseline::open(&repo_path.join(".git"), &commit.to_string()).unwrap();
    World {
        tmp,
        repo,
        commit,
        baseline,
    }
}

#[test]
fn no_diff_writes_outside_its_worktree() {
    let world = world();
    let surface = SurfaceSpec::default();
    let denied = DeniedGlobs::new(&surface.denied_paths).unwrap();
    let baseline_tree = world
        .repo
        .find_commit(world.commit)
        .unwrap()
        .tree()
        .unwrap();
    let cases = AtomicUsize::new(0);
    let applied = AtomicUsize::new(0);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 96,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    runner
        .run(&proptest::collection::vec(edit(), 1..5), |edits| {
            let bytes = make_diff(&world.repo, &baseline_tree, &edits);
            let case = cases.fetch_add(1, Ordering::Relaxed);
            let work = world.tmp.path().join("work").join(case.to_string());
            let dest = work.join("tree");
            let before = snapshot(world.tmp.path(), &dest);
            if let Ok(inspection) = inspect(&bytes, &surface, &denied, world.baseline.index()) {
                applied.fetch_add(1, Ordering::Relaxed);
                let result = apply_checked(
                    &world.baseline,
                    &inspection.parsed.diff,
                    &inspection.approved,
                    &dest,
                );
                prop_assert!(
                    result.is_ok(),
                    "a diff that passed the checks failed to apply: {result:?}\n{}",
                    String::from_utf8_lossy(&bytes)
                );
            }
            let after = snapshot(world.tmp.path(), &dest);
            let mut expected = before.clone();
            // The worktree's own parent directories are the only new entries allowed.
            for dir in [world.tmp.path().join("work"), work.clone()] {
                if let Some(entry) = after.get(&dir) {
                    expected.insert(dir, entry.clone());
                }
            }
            prop_assert_eq!(
                &after,
                &expected,
                "files outside the worktree changed for\n{}",
                String::from_utf8_lossy(&bytes)
            );
            fs::remove_dir_all(&work).ok();
            Ok(())
        })
        .unwrap();
    let cases = cases.into_inner();
    let applied = applied.into_inner();
    eprintln!("{applied} of {cases} generated diffs reached the apply step");
    assert!(
        applied * 2 >= cases,
        "only {applied} of {cases} generated diffs reached the apply step"
    );
    assert_eq!(
        fs::read(world.tmp.path().join("canary/secret.txt")).unwrap(),
        b"canary\n"
    );
}
