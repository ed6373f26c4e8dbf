//! The workspace's layering and text rules, checked.
//!
//! These are invariants ARCHITECTURE.md states ("Dependencies point one way",
//! "`receipts::rules` does no I/O", "Every file referee writes appears whole") written as
//! tests, so a change that breaks one fails CI instead of drifting in unnoticed:
//!
//! 1. `receipts`, `verifier` and `site` never depend, transitively through normal
//!    dependencies, on `git2`, `hyper`, `tokio`, `cudarc`, `nvml-wrapper`, `reqwest` or `axum`: the trust
//!    core and the offline verifier stay sync, offline and GPU-free, and the static site
//!    links no HTTP stack (`referee site serve` lives in the binary).
//! 2. `verifier` depends on `receipts` and on no other workspace member; `receipts`
//!    depends on no workspace member; `site` depends on `receipts` and `verifier` only.
//! 3. `intake`, `loadgen` and `engines` depend neither on `runner` nor on each other;
//!    `loadgen` does not depend on `git2`; `intake` does not depend on `hyper` directly
//!    (it reaches tokio through `builtin-engine`, which is allowed).
//! 4. No workspace member depends on the root package `referee` (the CLI sits on top),
//!    and `runner` depends on `verifier`, `intake`, `loadgen` and `engines`.
//! 5. Inside `receipts`, `runner`, `loadgen`, `intake`, `engines`, `verifier` and `site`, the
//!    top-level modules do not import each other in a cycle (a heuristic scan of
//!    `crate::` and `super::` paths; see [`scan_module_edges`]).
//! 6. Every check of verification, its name, its failure reasons and the report live in
//!    `verifier`; `receipts` defines none of them.
//! 7. `testkit` is only ever a dev-dependency and depends on no member but `receipts`.
//! 8. `receipts::rules` (`receipts/src/rules/`) does no I/O, no async, reads no clock and
//!    draws no entropy: none of [`IMPURE_IN_RULES`] appears in its code.
//! 9. Every file is written through `receipts::fsutil` (`write_atomic`): outside it, the
//!    calls that create or write a file ([`FILE_WRITES`]) appear only where
//!    [`WRITES_OUTSIDE_FSUTIL`] names the file and the call with its reason.
//! 10. Every member takes the workspace's lints (`[lints] workspace = true`), among them
//!     `missing_docs`.
//!
//! Rules 8–9 are text rules on every member's `src/` (tests, benches and examples write
//! their own fixtures and are not scanned), read after [`code_only`] blanks comments and
//! literals and [`without_test_code`] blanks `#[cfg(test)]` items.
//!
//! Rules 1–4 read the resolve graph of `cargo metadata --format-version 1`. A "normal"
//! dependency edge is one with a `dep_kinds` entry whose `kind` is `null` (so dev- and
//! build-dependencies do not count); platform-specific normal dependencies do count.
//! Every failure message names the offending path of crates (or of modules), e.g.
//! `verifier -> receipts -> tokio`.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

/// Crates the trust core and the offline verifier must never reach (rule 1).
const FORBIDDEN_IN_CORE: [&str; 7] = [
    "git2",
    "hyper",
    "tokio",
    "cudarc",
    "nvml-wrapper",
    "reqwest",
    "axum",
];

/// Crates whose top-level modules must not import each other in a cycle (rule 5).
const CYCLE_CHECKED: [&str; 7] = [
    "receipts", "runner", "loadgen", "intake", "engines", "verifier", "site",
];

// ---------------------------------------------------------------------------------------
// The dependency graph, from `cargo metadata`.
// ---------------------------------------------------------------------------------------

/// One outgoing edge of a resolve node.
struct Dep {
    /// Package id of the dependency.
    pkg: String,
    /// The `dep_kinds[].kind` values: `None` is a normal dependency, otherwise
    /// `"dev"` or `"build"`.
    kinds: Vec<Option<String>>,
}

impl Dep {
    fn is_normal(&self) -> bool {
        self.kinds.iter().any(Option::is_none)
    }

    fn kinds_label(&self) -> String {
        let labels: Vec<&str> = self
            .kinds
            .iter()
            .map(|k| k.as_deref().unwrap_or("normal"))
            .collect();
        labels.join("+")
    }
}

/// The workspace's resolved dependency graph.
struct Graph {
    /// Package id -> package name.
    names: HashMap<String, String>,
    /// Package id -> its resolved dependencies (all kinds), sorted by dependency name so
    /// that reported paths are deterministic.
    deps: HashMap<String, Vec<Dep>>,
    /// Workspace member name -> package id.
    members: BTreeMap<String, String>,
    /// Workspace member name -> directory holding its `Cargo.toml`.
    member_dirs: BTreeMap<String, PathBuf>,
    /// Package id of the root package (`referee`).
    root: String,
}

fn graph() -> &'static Graph {
    static GRAPH: OnceLock<Graph> = OnceLock::new();
    GRAPH.get_or_init(load_graph)
}

fn load_graph() -> Graph {
    let workspace = env!("CARGO_MANIFEST_DIR");
    let output = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1"])
        .current_dir(workspace)
        .output()
        .expect("running `cargo metadata` (the CARGO this test was built with)");
    assert!(
        output.status.success(),
        "`cargo metadata --format-version 1` failed in {workspace}: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let meta: Value =
        serde_json::from_slice(&output.stdout).expect("`cargo metadata` printed invalid JSON");
    Graph::from_metadata(&meta)
}

fn str_field<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("cargo metadata: `{key}` is not a string"))
}

fn array_field<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v[key]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_else(|| panic!("cargo metadata: `{key}` is not an array"))
}

impl Graph {
    fn from_metadata(meta: &Value) -> Graph {
        let mut names = HashMap::new();
        let mut manifests = HashMap::new();
        for pkg in array_field(meta, "packages") {
            let id = str_field(pkg, "id").to_owned();
            names.insert(id.clone(), str_field(pkg, "name").to_owned());
            manifests.insert(id, PathBuf::from(str_field(pkg, "manifest_path")));
        }

        let mut members = BTreeMap::new();
        let mut member_dirs = BTreeMap::new();
        for id in array_field(meta, "workspace_members") {
            let id = id
                .as_str()
                .expect("cargo metadata: workspace member id is not a string");
            let name = names[id].clone();
            let dir = manifests[id]
                .parent()
                .expect("manifest path has a parent")
                .to_owned();
            member_dirs.insert(name.clone(), dir);
            assert!(
                members.insert(name.clone(), id.to_owned()).is_none(),
                "two workspace members are named `{name}`"
            );
        }

        let resolve = &meta["resolve"];
        assert!(
            resolve.is_object(),
            "cargo metadata printed no `resolve` graph"
        );
        let mut deps = HashMap::new();
        for node in array_field(resolve, "nodes") {
            let mut out: Vec<Dep> = array_field(node, "deps")
                .iter()
                .map(|d| Dep {
                    pkg: str_field(d, "pkg").to_owned(),
                    kinds: array_field(d, "dep_kinds")
                        .iter()
                        .map(|k| k["kind"].as_str().map(str::to_owned))
                        .collect(),
                })
                .collect();
            out.sort_by(|a, b| (&names[&a.pkg], &a.pkg).cmp(&(&names[&b.pkg], &b.pkg)));
            deps.insert(str_field(node, "id").to_owned(), out);
        }

        let root = resolve["root"]
            .as_str()
            .map(str::to_owned)
            .or_else(|| members.get("referee").cloned())
            .expect("cargo metadata names no root package");
        Graph {
            names,
            deps,
            members,
            member_dirs,
            root,
        }
    }

    /// Package id of the workspace member `name`; panics (naming the members) if none.
    fn member(&self, name: &str) -> &str {
        self.members.get(name).unwrap_or_else(|| {
            panic!(
                "`{name}` is not a workspace member; members are {:?}",
                self.members.keys().collect::<Vec<_>>()
            )
        })
    }

    fn name(&self, id: &str) -> &str {
        &self.names[id]
    }

    fn deps_of(&self, id: &str) -> &[Dep] {
        self.deps.get(id).map(Vec::as_slice).unwrap_or(&[])
    }

    fn is_member(&self, id: &str) -> bool {
        self.members.values().any(|m| m == id)
    }

    /// Names of every package the workspace member `from` reaches through normal
    /// dependencies (transitively), `from` itself excluded.
    fn normal_closure(&self, from: &str) -> BTreeSet<String> {
        let start = self.member(from);
        let mut seen = BTreeSet::from([start.to_owned()]);
        let mut queue = VecDeque::from([start.to_owned()]);
        while let Some(id) = queue.pop_front() {
            for dep in self.deps_of(&id).iter().filter(|d| d.is_normal()) {
                if seen.insert(dep.pkg.clone()) {
                    queue.push_back(dep.pkg.clone());
                }
            }
        }
        seen.remove(start);
        seen.iter().map(|id| self.name(id).to_owned()).collect()
    }

    /// The shortest path of normal dependencies from the workspace member `from` to a
    /// package named `to` (any version), as package names `[from, .., to]`.
    fn normal_path(&self, from: &str, to: &str) -> Option<Vec<String>> {
        let start = self.member(from).to_owned();
        let mut parent: HashMap<String, Option<String>> = HashMap::from([(start.clone(), None)]);
        let mut queue = VecDeque::from([start]);
        while let Some(id) = queue.pop_front() {
            if self.name(&id) == to && parent[&id].is_some() {
                let mut path = vec![self.name(&id).to_owned()];
                let mut cur = parent[&id].clone();
                while let Some(p) = cur {
                    path.push(self.name(&p).to_owned());
                    cur = parent[&p].clone();
                }
                path.reverse();
                return Some(path);
            }
            for dep in self.deps_of(&id).iter().filter(|d| d.is_normal()) {
                if !parent.contains_key(&dep.pkg) {
                    parent.insert(dep.pkg.clone(), Some(id.clone()));
                    queue.push_back(dep.pkg.clone());
                }
            }
        }
        None
    }

    /// Direct dependencies of the workspace member `from`: `(name, kinds label)`, where
    /// the label is e.g. `normal`, `dev` or `normal+dev`.
    fn direct(&self, from: &str) -> Vec<(String, String, bool)> {
        self.deps_of(self.member(from))
            .iter()
            .map(|d| (self.name(&d.pkg).to_owned(), d.kinds_label(), d.is_normal()))
            .collect()
    }

    /// Direct normal dependencies of `from`, by name.
    fn direct_normal(&self, from: &str) -> BTreeSet<String> {
        self.direct(from)
            .into_iter()
            .filter(|d| d.2)
            .map(|d| d.0)
            .collect()
    }

    /// Direct dependencies of `from`, of any kind, on other workspace members:
    /// `(member name, kinds label)`.
    fn direct_members(&self, from: &str) -> Vec<(String, String)> {
        self.deps_of(self.member(from))
            .iter()
            .filter(|d| self.is_member(&d.pkg))
            .map(|d| (self.name(&d.pkg).to_owned(), d.kinds_label()))
            .collect()
    }

    /// Every workspace member reachable from `from` through normal dependencies, each
    /// with the path that reaches it.
    fn reachable_members(&self, from: &str) -> Vec<(String, Vec<String>)> {
        let closure = self.normal_closure(from);
        self.members
            .keys()
            .filter(|m| m.as_str() != from && closure.contains(m.as_str()))
            .map(|m| {
                (
                    m.clone(),
                    self.normal_path(from, m)
                        .expect("in the closure, so reachable"),
                )
            })
            .collect()
    }
}

fn arrow(path: &[String]) -> String {
    path.join(" -> ")
}

/// Fails with every violation listed, one per line, under `rule`.
fn assert_no_violations(rule: &str, violations: &[String]) {
    assert!(
        violations.is_empty(),
        "{rule} is broken ({} violation(s)):\n  {}\n(ARCHITECTURE.md, Invariants; tests/layout.rs)",
        violations.len(),
        violations.join("\n  ")
    );
}

/// The workspace's test helpers: any member may list it as a dev-dependency, none as
/// anything else (rule 7), so it never adds an edge to the layout rules 2–4 guard.
const TESTKIT: &str = "testkit";

/// Violations of "member `from` reaches no workspace member outside `allowed`": through
/// normal dependencies transitively, or directly through a dependency of any kind
/// (`testkit` as a dev-dependency excepted).
fn member_violations(g: &Graph, from: &str, allowed: &[&str]) -> Vec<String> {
    let mut v = Vec::new();
    for (m, path) in g.reachable_members(from) {
        if !allowed.contains(&m.as_str()) {
            v.push(format!("{} (normal dependencies)", arrow(&path)));
        }
    }
    for (m, kinds) in g.direct_members(from) {
        let test_helpers = m == TESTKIT && kinds == "dev";
        if !allowed.contains(&m.as_str()) && kinds != "normal" && !test_helpers {
            v.push(format!("{from} -> {m} (direct {kinds}-dependency)"));
        }
    }
    v
}

// ---------------------------------------------------------------------------------------
// Rules 1–4: crate dependencies.
// ---------------------------------------------------------------------------------------

/// The helpers must see what is known to be there, or every rule above would pass
/// vacuously: `runner` reaches `tokio` (it lists it), dev-only dependencies stay out of
/// the normal closure, and paths start at the member and end at the target.
#[test]
fn closure_helper_sees_known_dependencies() {
    let g = graph();

    let runner = g.normal_closure("runner");
    assert!(
        runner.contains("tokio"),
        "normal_closure(runner) misses tokio: {runner:?}"
    );
    assert!(
        runner.contains("receipts"),
        "normal_closure(runner) misses receipts: {runner:?}"
    );
    let path = g
        .normal_path("runner", "tokio")
        .expect("normal_path finds runner -> .. -> tokio");
    assert_eq!(
        path.first().map(String::as_str),
        Some("runner"),
        "path {}",
        arrow(&path)
    );
    assert_eq!(
        path.last().map(String::as_str),
        Some("tokio"),
        "path {}",
        arrow(&path)
    );

    // `proptest` is only a dev-dependency of `receipts`: a closure that followed dev
    // edges would report it.
    let direct = g.direct("receipts");
    assert!(
        direct
            .iter()
            .any(|(n, kinds, _)| n == "proptest" && kinds == "dev"),
        "expected proptest as a dev-dependency of receipts, direct deps are {direct:?}"
    );
    let receipts = g.normal_closure("receipts");
    assert!(
        !receipts.contains("proptest"),
        "normal_closure(receipts) follows dev-dependencies: {}",
        arrow(&g.normal_path("receipts", "proptest").unwrap_or_default())
    );

    // A path to a crate that is not in the closure does not exist.
    assert_eq!(g.normal_path("receipts", "runner"), None);
}

/// Rule 1: the trust core and the offline verifier stay sync, offline and GPU-free.
#[test]
fn receipts_and_verifier_reach_no_io_or_async_crates() {
    let g = graph();
    let mut violations = Vec::new();
    for from in ["receipts", "verifier", "site"] {
        for bad in FORBIDDEN_IN_CORE {
            if let Some(path) = g.normal_path(from, bad) {
                violations.push(arrow(&path));
            }
        }
    }
    assert_no_violations(
        "rule 1 (receipts, verifier and site never depend on git2, hyper, tokio, cudarc, nvml-wrapper, \
         reqwest, axum)",
        &violations,
    );
}

/// Rule 2: `receipts` is the bottom of the workspace, `verifier` sits right on it.
#[test]
fn verifier_depends_only_on_receipts_and_receipts_on_no_member() {
    let g = graph();
    let mut violations = member_violations(g, "receipts", &[]);
    violations.extend(member_violations(g, "verifier", &["receipts"]));
    violations.extend(member_violations(g, "site", &["receipts", "verifier"]));
    if !g.direct_normal("verifier").contains("receipts") {
        violations.push(format!(
            "verifier does not depend on receipts; its normal dependencies are {:?}",
            g.direct_normal("verifier")
        ));
    }
    assert_no_violations(
        "rule 2 (verifier depends on receipts and no other member; receipts on no member; \
         site on receipts and verifier only)",
        &violations,
    );
}

/// Rule 3: the runner's parts stay independent of the runner and of each other.
#[test]
fn runner_parts_are_independent() {
    let g = graph();
    let parts = ["intake", "loadgen", "engines"];
    let mut violations = Vec::new();
    for from in parts {
        for (m, path) in g.reachable_members(from) {
            if m == "runner" || parts.contains(&m.as_str()) {
                violations.push(format!("{} (normal dependencies)", arrow(&path)));
            }
        }
        for (m, kinds) in g.direct_members(from) {
            if (m == "runner" || parts.contains(&m.as_str())) && kinds != "normal" {
                violations.push(format!("{from} -> {m} (direct {kinds}-dependency)"));
            }
        }
    }
    if let Some(path) = g.normal_path("loadgen", "git2") {
        violations.push(format!("{} (loadgen must not reach git2)", arrow(&path)));
    }
    if g.direct_normal("intake").contains("hyper") {
        violations.push("intake -> hyper (intake must not depend on hyper directly)".to_owned());
    }
    assert_no_violations(
        "rule 3 (intake, loadgen, engines depend neither on runner nor on each other; \
         loadgen not on git2; intake not directly on hyper)",
        &violations,
    );
}

/// Rule 4: the CLI is the top; `runner` composes its parts.
#[test]
fn nothing_depends_on_the_cli_and_runner_composes_its_parts() {
    let g = graph();
    let root = g.name(&g.root).to_owned();
    assert_eq!(root, "referee", "the root package is not `referee`");
    let mut violations = Vec::new();
    for member in g.members.keys().filter(|m| **m != root) {
        if let Some(path) = g.normal_path(member, &root) {
            violations.push(format!("{} (normal dependencies)", arrow(&path)));
        }
        for (m, kinds) in g.direct_members(member) {
            if m == root && kinds != "normal" {
                violations.push(format!("{member} -> {m} (direct {kinds}-dependency)"));
            }
        }
    }
    let runner = g.direct_normal("runner");
    for part in ["verifier", "intake", "loadgen", "engines"] {
        if !runner.contains(part) {
            violations.push(format!(
                "runner does not depend on {part} (directly, normal)"
            ));
        }
    }
    assert_no_violations(
        "rule 4 (no member depends on referee; runner depends on verifier, intake, loadgen, \
         engines)",
        &violations,
    );
}

/// Rule 7: `testkit` (helpers that panic on I/O errors) is a dev-dependency only, and
/// depends on no member but `receipts` (its forger and keyrings are made of receipts'
/// types), so no command links it and it drags no other crate into a test.
#[test]
fn testkit_is_a_dev_dependency_only() {
    let g = graph();
    let mut violations = member_violations(g, TESTKIT, &["receipts"]);
    let mut users = 0;
    for member in g.members.keys() {
        for (m, kinds) in g.direct_members(member) {
            if m == TESTKIT {
                users += 1;
                if kinds != "dev" {
                    violations.push(format!("{member} -> {m} ({kinds}-dependency)"));
                }
            }
        }
    }
    // The rule must see the crates that use it, or it would pass vacuously.
    if users < 3 {
        violations.push(format!(
            "only {users} member(s) use {TESTKIT}; expected the root, verifier and site"
        ));
    }
    assert_no_violations(
        "rule 7 (testkit is only ever a dev-dependency and depends on no member but receipts)",
        &violations,
    );
}

// ---------------------------------------------------------------------------------------
// Rule 5: no import cycles between a crate's top-level modules.
// ---------------------------------------------------------------------------------------

/// Where an edge `from -> to` was seen first: `path:line`.
type Edges = BTreeMap<String, BTreeMap<String, String>>;

/// The top-level module of `src/`-relative `rel` (`foo.rs`, `foo/mod.rs`, `foo/**` ->
/// `foo`) and the depth of the file's own module below the crate root (`foo.rs` and
/// `foo/mod.rs` -> 1, `foo/bar.rs` -> 2). `None` for the crate roots `lib.rs` and
/// `main.rs` and for `bin/**` (separate crates).
fn module_of(rel: &str) -> Option<(String, usize)> {
    let parts: Vec<&str> = rel.split('/').collect();
    match parts.as_slice() {
        ["lib.rs"] | ["main.rs"] | ["bin", ..] => None,
        [file] => Some((file.strip_suffix(".rs")?.to_owned(), 1)),
        [top, .., last] => {
            let depth = if *last == "mod.rs" {
                parts.len() - 1
            } else {
                parts.len()
            };
            Some(((*top).to_owned(), depth))
        }
        [] => None,
    }
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The identifier at the start of `s`, if any.
fn leading_ident(s: &str) -> Option<&str> {
    let s = s.trim_start();
    let end = s.find(|c: char| !is_ident_char(c)).unwrap_or(s.len());
    (end > 0).then(|| &s[..end])
}

/// The crate-root names a path continues with after `crate::` (or an equivalent
/// `super::` chain): `bar` for `bar::X`, `[a, b]` for `{a::X, b}` (top-level items of a
/// brace group, which may span lines). `self` and `*` are not names.
fn root_names(rest: &str) -> Vec<String> {
    let rest = rest.trim_start();
    let Some(group) = rest.strip_prefix('{') else {
        return leading_ident(rest).map(str::to_owned).into_iter().collect();
    };
    let mut names = Vec::new();
    let mut depth = 0usize;
    let mut item_start = true;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => item_start = true,
            c if c.is_whitespace() => {}
            _ if item_start && depth == 0 => {
                item_start = false;
                if let Some(name) = leading_ident(&group[i..]) {
                    names.push(name.to_owned());
                }
            }
            _ => {}
        }
    }
    names.retain(|n| n != "self");
    names
}

/// Scans one crate's `src/` files for imports between its top-level modules.
///
/// `files` are `(path relative to src/, text)`. This is a heuristic on paths, not a
/// parser:
/// - a file belongs to its top-level module (`foo.rs`, `foo/mod.rs`, `foo/**` -> `foo`);
///   the crate roots `lib.rs`/`main.rs` are skipped;
/// - lines whose first non-blank characters are `//` (comments, doc comments) are
///   ignored; block comments and trailing comments are not;
/// - `crate::bar` (not `$crate::`) gives an edge to `bar`, and `crate::{a::X, b}` edges
///   to `a` and `b`, even when the group spans lines;
/// - `super::` chains are resolved against the module the line is in: the file's module
///   depth plus the inline `mod name {` blocks open at that line (tracked by rustfmt's
///   indentation: the block closes at a `}` line indented like its `mod` line). A chain
///   that climbs exactly to the crate root gives an edge like `crate::`;
/// - only names that are top-level modules of the crate count (so `crate::Error`, an
///   item of the crate root, is no edge; neither are re-exports through the root), and
///   a module's edges to itself are dropped.
///
/// Test modules count like any other code: a cycle only `#[cfg(test)]` code closes is
/// still a cycle.
fn scan_module_edges(files: &[(String, String)]) -> Edges {
    let modules: BTreeSet<String> = files
        .iter()
        .filter_map(|(rel, _)| module_of(rel))
        .map(|(m, _)| m)
        .collect();
    let mut edges = Edges::new();
    for (rel, text) in files {
        let Some((module, file_depth)) = module_of(rel) else {
            continue;
        };

        // Blank out comment lines (keeping line breaks) and record, per line, the depth
        // of the module that line's code is in.
        let mut cleaned = String::with_capacity(text.len());
        let mut line_starts = Vec::new();
        let mut line_depth = Vec::new();
        let mut open_mods: Vec<usize> = Vec::new();
        for line in text.lines() {
            line_starts.push(cleaned.len());
            let trimmed = line.trim_start();
            let indent = line.len() - trimmed.len();
            line_depth.push(file_depth + open_mods.len());
            if trimmed.starts_with("//") {
                cleaned.push('\n');
                continue;
            }
            if trimmed.trim_end() == "}" && open_mods.last() == Some(&indent) {
                open_mods.pop();
            } else if opens_inline_mod(trimmed) {
                open_mods.push(indent);
            }
            cleaned.push_str(line);
            cleaned.push('\n');
        }
        let line_of = |offset: usize| line_starts.partition_point(|&s| s <= offset) - 1;

        let mut add = |names: Vec<String>, offset: usize| {
            for name in names {
                if name != module && modules.contains(&name) {
                    let at = format!("{rel}:{}", line_of(offset) + 1);
                    edges
                        .entry(module.clone())
                        .or_default()
                        .entry(name)
                        .or_insert(at);
                }
            }
        };

        for (offset, _) in cleaned.match_indices("crate::") {
            let before = cleaned[..offset].chars().next_back();
            if before.is_some_and(|c| is_ident_char(c) || c == '$' || c == ':') {
                continue;
            }
            add(root_names(&cleaned[offset + "crate::".len()..]), offset);
        }
        for (offset, _) in cleaned.match_indices("super::") {
            let before = cleaned[..offset].chars().next_back();
            if before.is_some_and(|c| is_ident_char(c) || c == ':') {
                continue; // the middle of a chain, counted from its first `super`
            }
            let mut rest = &cleaned[offset..];
            let mut climbs = 0;
            while let Some(r) = rest.strip_prefix("super::") {
                climbs += 1;
                rest = r.trim_start();
            }
            if climbs == line_depth[line_of(offset)] {
                add(root_names(rest), offset);
            }
        }
    }
    edges
}

/// `mod name {` (optionally `pub`/`pub(..)`) ending the line: an inline module opens.
fn opens_inline_mod(trimmed: &str) -> bool {
    let mut s = trimmed.trim_end();
    if let Some(r) = s.strip_prefix("pub") {
        s = r.trim_start();
        if s.starts_with('(') {
            let Some(close) = s.find(')') else {
                return false;
            };
            s = s[close + 1..].trim_start();
        }
    }
    let Some(r) = s.strip_prefix("mod ") else {
        return false;
    };
    let Some(name) = leading_ident(r) else {
        return false;
    };
    r.trim_start()[name.len()..].trim() == "{"
}

/// Every cycle the depth-first search closes with a back edge, each as `[a, b, .., a]`,
/// in a deterministic order. Empty when the graph is acyclic.
fn find_cycles(edges: &Edges) -> Vec<Vec<String>> {
    fn visit(
        node: &str,
        edges: &Edges,
        state: &mut HashMap<String, bool>, // false: on the stack, true: done
        stack: &mut Vec<String>,
        cycles: &mut Vec<Vec<String>>,
    ) {
        state.insert(node.to_owned(), false);
        stack.push(node.to_owned());
        for next in edges.get(node).into_iter().flat_map(BTreeMap::keys) {
            match state.get(next.as_str()) {
                None => visit(next, edges, state, stack, cycles),
                Some(false) => {
                    let start = stack.iter().position(|n| n == next).expect("on the stack");
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(next.clone());
                    cycles.push(cycle);
                }
                Some(true) => {}
            }
        }
        stack.pop();
        state.insert(node.to_owned(), true);
    }

    let mut state = HashMap::new();
    let mut cycles = Vec::new();
    for node in edges.keys() {
        if !state.contains_key(node.as_str()) {
            visit(node, edges, &mut state, &mut Vec::new(), &mut cycles);
        }
    }
    cycles
}

/// `krate: a -> b (dir/src/a.rs:3) -> a (dir/src/b/mod.rs:7)`: a cycle with where each
/// edge was seen; `dir` is the crate's directory relative to the workspace root.
fn describe_cycle(krate: &str, dir: &str, cycle: &[String], edges: &Edges) -> String {
    let mut out = format!("{krate}: {}", cycle[0]);
    for pair in cycle.windows(2) {
        let at = &edges[&pair[0]][&pair[1]];
        out.push_str(&format!(" -> {} ({dir}/src/{at})", pair[1]));
    }
    out
}

/// `src/**/*.rs` of `dir`, as `(path relative to src/ with '/' separators, text)`.
fn read_sources(dir: &Path) -> Vec<(String, String)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
        let entries = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("reading directory {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                walk(root, &path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(root).expect("below src/");
                let rel: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into())
                    .collect();
                let text = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
                out.push((rel.join("/"), text));
            }
        }
    }
    let src = dir.join("src");
    let mut out = Vec::new();
    walk(&src, &src, &mut out);
    out.sort();
    out
}

/// The scanner and the cycle search on a planted crate: they must find what is there and
/// nothing that is not.
#[test]
fn module_scanner_finds_a_planted_cycle() {
    let file = |rel: &str, text: &str| (rel.to_owned(), text.to_owned());
    let files = vec![
        file(
            "lib.rs",
            "pub mod a;\npub mod b;\npub mod c;\npub mod d;\nuse crate::a::X;\n",
        ),
        // a -> b through a multi-line group (reported at the `crate::` line); `crate::Error`
        // is a root item, no edge.
        file(
            "a.rs",
            "use crate::{\n    Error,\n    b::{Y, Z},\n};\npub struct X;\n",
        ),
        // b -> c through a nested file's `super::super::`.
        file("b/mod.rs", "mod inner;\n// use crate::d::Commented;\n"),
        file("b/inner.rs", "use super::super::c::W;\nuse super::Local;\n"),
        // c -> a through `super::` in a top-level file; `$crate::d` is a macro path.
        file(
            "c.rs",
            "fn f() { super::a::X; }\nmacro_rules! m { () => { $crate::d::Q }; }\n",
        ),
        // `super::b` inside an inline test module means d::b, not the crate's b.
        file(
            "d.rs",
            "pub(crate) fn b() {}\n#[cfg(test)]\nmod tests {\n    use super::b;\n}\n",
        ),
    ];
    let edges = scan_module_edges(&files);
    let flat: Vec<(String, String, String)> = edges
        .iter()
        .flat_map(|(f, tos)| {
            tos.iter()
                .map(move |(t, at)| (f.clone(), t.clone(), at.clone()))
        })
        .collect();
    let expect = |f: &str, t: &str, at: &str| (f.to_owned(), t.to_owned(), at.to_owned());
    assert_eq!(
        flat,
        vec![
            expect("a", "b", "a.rs:1"),
            expect("b", "c", "b/inner.rs:1"),
            expect("c", "a", "c.rs:1")
        ]
    );
    let cycles = find_cycles(&edges);
    assert_eq!(cycles, vec![vec!["a", "b", "c", "a"]]);
    assert_eq!(
        describe_cycle("demo", "demo", &cycles[0], &edges),
        "demo: a -> b (demo/src/a.rs:1) -> c (demo/src/b/inner.rs:1) -> a (demo/src/c.rs:1)"
    );

    let mut acyclic = edges.clone();
    acyclic.get_mut("c").expect("c has edges").remove("a");
    assert!(find_cycles(&acyclic).is_empty());
}

/// Rule 5: no crate's top-level modules import each other in a cycle.
#[test]
fn no_import_cycles_between_modules() {
    let g = graph();
    let mut violations = Vec::new();
    let mut edge_count = 0;
    for krate in CYCLE_CHECKED {
        g.member(krate);
        let dir = &g.member_dirs[krate];
        let label = dir.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap_or(dir);
        let label = label.to_string_lossy().replace('\\', "/");
        let files = read_sources(dir);
        assert!(
            !files.is_empty(),
            "no .rs files under {}/src",
            dir.display()
        );
        let edges = scan_module_edges(&files);
        edge_count += edges.values().map(BTreeMap::len).sum::<usize>();
        for cycle in find_cycles(&edges) {
            violations.push(describe_cycle(krate, &label, &cycle, &edges));
        }
    }
    // The crates do import across modules (e.g. runner's `round` uses `journal`): a scan
    // that finds no edge at all is a broken scanner, not an acyclic workspace.
    assert!(
        edge_count > 0,
        "the module scanner found no import between modules in any crate"
    );
    assert_no_violations(
        "rule 5 (no import cycles between a crate's top-level modules)",
        &violations,
    );
}

/// Rule 6: every check of verification lives in `verifier` (issue 38): `receipts` keeps
/// the data model, DSSE, canonical JSON and `rules`, and defines none of the check
/// names, failure reasons or the report, so adding a check is a one-crate change.
#[test]
fn every_check_lives_in_the_verifier() {
    let g = graph();
    let definitions = [
        "enum CheckName",
        "enum FailureReason",
        "struct VerifyReport",
        "struct VerifyOptions",
        "fn verify_envelope",
    ];
    let mut violations = Vec::new();
    for (rel, text) in read_sources(&g.member_dirs["receipts"]) {
        for definition in definitions {
            if text.contains(definition) {
                violations.push(format!("receipts/src/{rel} defines `{definition}`"));
            }
        }
    }
    assert_no_violations(
        "rule 6 (checks, their names and the report live in verifier)",
        &violations,
    );
    let verifier: String = read_sources(&g.member_dirs["verifier"])
        .into_iter()
        .map(|(_, text)| text)
        .collect();
    for definition in definitions {
        assert!(
            verifier.contains(definition),
            "verifier defines no `{definition}`: the rule above checks nothing"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Rules 8–9: text rules on the crates' code (comments, strings and test code blanked).
// ---------------------------------------------------------------------------------------

/// `text` with every comment and every string or char literal's contents replaced by
/// spaces (line breaks kept, so offsets and line numbers stay), so that a rule's tokens
/// are only ever found in code. Lifetimes (`'a`) are code; raw strings (`r#"…"#`) and
/// nested block comments are handled.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let prev_ident = i > 0 && is_ident_char(chars[i - 1]);
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if !prev_ident
            && (c == 'r' || (c == 'b' && next == Some('r')))
            && chars[i + usize::from(c == 'b') + 1..]
                .iter()
                .position(|&h| h != '#')
                .is_some_and(|n| chars.get(i + usize::from(c == 'b') + 1 + n) == Some(&'"'))
        {
            // A raw string: `r`, `br`, then `#`s, a quote, up to a quote and as many `#`s.
            let start = i + usize::from(c == 'b') + 1;
            let hashes = chars[start..].iter().take_while(|&&h| h == '#').count();
            let body = start + hashes + 1;
            out.extend(chars[i..body].iter());
            let mut j = body;
            while j < chars.len()
                && !(chars[j] == '"'
                    && chars[j + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&h| h == '#')
                        .count()
                        == hashes)
            {
                out.push(blank(chars[j]));
                j += 1;
            }
            out.extend(chars[j..(j + 1 + hashes).min(chars.len())].iter());
            i = j + 1 + hashes;
        } else if c == '"' {
            out.push('"');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if let Some(&escaped) = chars.get(i) {
                    out.push(blank(escaped));
                }
                i += 1;
            }
            out.push('"');
            i += 1;
        } else if c == '\'' && (!prev_ident || is_byte_prefix(&chars, i)) {
            // A char or byte literal (`'x'`, `b'"'`, `'\n'`, `'\u{1F600}'`), else a
            // lifetime or label.
            let end = if next == Some('\\') {
                chars[i + 2..]
                    .iter()
                    .position(|&q| q == '\'')
                    .map(|n| i + 2 + n)
            } else {
                (chars.get(i + 2) == Some(&'\'')).then_some(i + 2)
            };
            match end {
                Some(end) => {
                    out.push('\'');
                    out.extend(std::iter::repeat_n(' ', end - i - 1));
                    out.push('\'');
                    i = end + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Whether the `b` before `chars[i]` is a byte literal's prefix (`b'x'`, `b"…"`), not
/// the end of an identifier.
fn is_byte_prefix(chars: &[char], i: usize) -> bool {
    i > 0 && chars[i - 1] == 'b' && (i < 2 || !is_ident_char(chars[i - 2]))
}

/// `code` (from [`code_only`]) with every item under `#[cfg(test)]` blanked: the
/// attribute and the item after it, up to the `}` closing its first `{` (a module, a
/// function, an impl) or its `;` when one comes first (`mod tests;` is not used here).
fn without_test_code(code: &str) -> String {
    let mut out: Vec<char> = code.chars().collect();
    let text: Vec<char> = out.clone();
    let attr: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut i = 0;
    while i + attr.len() <= text.len() {
        if text[i..i + attr.len()] != attr[..] {
            i += 1;
            continue;
        }
        let mut j = i + attr.len();
        while j < text.len() && text[j] != '{' && text[j] != ';' {
            j += 1;
        }
        if j < text.len() && text[j] == '{' {
            let mut depth = 0usize;
            while j < text.len() {
                match text[j] {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        let end = (j + 1).min(text.len());
        for c in &mut out[i..end] {
            if *c != '\n' {
                *c = ' ';
            }
        }
        i = end;
    }
    out.into_iter().collect()
}

/// Every `(line, token)` of `tokens` in `code`, lines counted from 1. A token that starts
/// (ends) with an identifier character must not continue one: `fs::` is not found in
/// `prefs::`, `Instant` not in `Instantiate`.
fn find_tokens(code: &str, tokens: &[&str]) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (n, line) in code.lines().enumerate() {
        for token in tokens {
            for (at, _) in line.match_indices(token) {
                let before = line[..at].chars().next_back();
                let after = line[at + token.len()..].chars().next();
                let starts_ident = token.starts_with(is_ident_char);
                let ends_ident = token.ends_with(is_ident_char);
                if (starts_ident && before.is_some_and(is_ident_char))
                    || (ends_ident && after.is_some_and(is_ident_char))
                {
                    continue;
                }
                found.push((n + 1, (*token).to_owned()));
            }
        }
    }
    found.sort();
    found
}

/// A crate's non-test code: every `src/**/*.rs` of `member`, as `(path relative to the
/// workspace root, code)` with comments, literals and `#[cfg(test)]` items blanked.
fn member_code(g: &Graph, member: &str) -> Vec<(String, String)> {
    let dir = &g.member_dirs[member];
    let label = dir.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap_or(dir);
    let label = label.to_string_lossy().replace('\\', "/");
    read_sources(dir)
        .into_iter()
        .map(|(rel, text)| {
            let path = if label.is_empty() {
                format!("src/{rel}")
            } else {
                format!("{label}/src/{rel}")
            };
            (path, without_test_code(&code_only(&text)))
        })
        .collect()
}

/// What `receipts::rules` must not touch (rule 8), each with why. Plain values in, plain
/// values out: a caller reads the bytes, the clock and the seeds and passes them in.
const IMPURE_IN_RULES: &[(&str, &str)] = &[
    ("fs::", "the file system"),
    ("File", "a file"),
    ("io::", "I/O"),
    ("net::", "the network"),
    ("process::", "another process"),
    ("env::", "the environment"),
    ("thread::", "threads and sleeping"),
    ("tokio", "async"),
    ("async", "async"),
    (".await", "async"),
    ("println!", "printing"),
    ("eprintln!", "printing"),
    ("print!", "printing"),
    ("eprint!", "printing"),
    ("tracing", "logging"),
    ("Instant", "the clock"),
    ("SystemTime", "the clock"),
    ("UNIX_EPOCH", "the clock"),
    ("now", "the clock (`now()`, `now_utc()`)"),
    ("now_utc", "the clock"),
    ("now_local", "the clock"),
    (
        "thread_rng",
        "entropy (every draw comes from a committed seed)",
    ),
    ("OsRng", "entropy (every draw comes from a committed seed)"),
    (
        "from_entropy",
        "entropy (every draw comes from a committed seed)",
    ),
    (
        "getrandom",
        "entropy (every draw comes from a committed seed)",
    ),
    ("random", "entropy (`rand::random`)"),
    ("RandomState", "a per-process random hasher"),
    (
        "HashMap",
        "iteration in a per-process random order (use a BTreeMap)",
    ),
    (
        "HashSet",
        "iteration in a per-process random order (use a BTreeSet)",
    ),
];

/// The scanners must see what is there and nothing that is not: a planted file with
/// each kind of hiding place.
#[test]
fn text_scanners_find_code_only() {
    let text = r####"use std::fs; // fs::write( in a comment
/* fs::write( in /* a nested */ block comment */
fn a<'a>(x: &'a str) -> char { let _ = "fs::write( \" in a string"; '"' }
fn b() { let _ = r#"fs::write( in a "raw" string"#; let _ = b'\''; fs::write(p, x); }
fn c() { let s = br##"File::create( "# still raw"##; prefs::write(p); b'"' == q }
#[cfg(test)]
mod tests {
    fn d() { fs::write(p, x); }
}
fn e() { File::create(p); }
"####;
    let code = without_test_code(&code_only(text));
    assert_eq!(code.lines().count(), text.lines().count());
    assert_eq!(
        find_tokens(&code, &["fs::write(", "File::create(", "fs::"]),
        vec![
            (4, "fs::".to_owned()),
            (4, "fs::write(".to_owned()),
            (10, "File::create(".to_owned()),
        ]
    );
    assert_eq!(
        find_tokens(&code, &["now", "random"]),
        Vec::<(usize, String)>::new()
    );
    assert_eq!(
        find_tokens("let t = Instant::now(); let i = Instantiate;", &["Instant"]),
        vec![(1, "Instant".to_owned())]
    );
}

/// The lexer on the real tree: in every scanned file the braces left in code balance and
/// never close more than they opened, which a string or comment misread (a `b'"'` taken
/// for the start of a string, say) would break, hiding the code after it from rules 8–9.
#[test]
fn text_scanner_keeps_every_source_files_braces_balanced() {
    let g = graph();
    let mut unbalanced = Vec::new();
    for member in g.members.keys() {
        for (path, code) in member_code(g, member) {
            let mut depth = 0i64;
            for (n, line) in code.lines().enumerate() {
                for c in line.chars() {
                    depth += match c {
                        '{' => 1,
                        '}' => -1,
                        _ => 0,
                    };
                }
                if depth < 0 {
                    unbalanced.push(format!("{path}:{}: a `}}` closes nothing", n + 1));
                    break;
                }
            }
            if depth > 0 {
                unbalanced.push(format!("{path}: {depth} `{{` never closed"));
            }
        }
    }
    assert_no_violations(
        "the text scanner (comments, literals and test code blanked)",
        &unbalanced,
    );
}

/// Rule 8: `receipts::rules` does no I/O, no async, reads no clock and draws no entropy.
#[test]
fn rules_do_no_io_read_no_clock_and_draw_no_entropy() {
    let g = graph();
    let files: Vec<(String, String)> = member_code(g, "receipts")
        .into_iter()
        .filter(|(path, _)| path.starts_with("receipts/src/rules/"))
        .collect();
    // The rules' own module and its formulas must be there, or the rule passes vacuously.
    let names: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    for expected in [
        "receipts/src/rules/mod.rs",
        "receipts/src/rules/workload.rs",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} not scanned: {names:?}"
        );
    }
    let tokens: Vec<&str> = IMPURE_IN_RULES.iter().map(|(t, _)| *t).collect();
    let mut violations = Vec::new();
    for (path, code) in &files {
        for (line, token) in find_tokens(code, &tokens) {
            let why = IMPURE_IN_RULES
                .iter()
                .find(|(t, _)| *t == token)
                .map_or("", |(_, why)| why);
            violations.push(format!("{path}:{line}: `{token}` ({why})"));
        }
    }
    assert_no_violations(
        "rule 8 (receipts::rules does no I/O, no async, reads no clock, draws no entropy)",
        &violations,
    );
}

/// The calls that create or write a file's bytes (rule 9). Moving a finished file or
/// directory into place (`fs::rename`) is how `write_atomic` and a round's seal publish,
/// not a write; files that other programs write (git2's checkouts into temp directories,
/// dockerd) are outside the scan.
const FILE_WRITES: &[&str] = &[
    "fs::write(",
    "fs::copy(",
    "fs::hard_link(",
    "fs::symlink(",
    "File::create(",
    "File::create_new(",
    "File::options(",
    "OpenOptions",
    "NamedTempFile",
    ".tempfile(",
    "tempfile_in(",
    "tempfile::tempfile(",
    ".persist(",
];

/// Where code outside `receipts::fsutil` may use [`FILE_WRITES`] (rule 9): `(file,
/// call, why)`. Each entry must still match, so one that outlived its code fails too.
const WRITES_OUTSIDE_FSUTIL: &[(&str, &str, &str)] = &[
    (
        "receipts/src/fsutil.rs",
        "*",
        "the one home of write_atomic: temp file, fsync, rename, directory fsync",
    ),
    (
        "runner/src/journal.rs",
        "OpenOptions",
        "the crash journal appends one fsynced line per step; a torn last line is dropped \
         on reading, so a whole-file rewrite would only add cost",
    ),
    (
        "runner/intake/src/store.rs",
        "OpenOptions",
        "a campaign's `.lock` and `.round.lock`: created empty to be flocked, never written",
    ),
    (
        "runner/engines/src/lib.rs",
        "OpenOptions",
        "an engine's log, appended while it runs (a tail is read for a failure), and the \
         pid file a resumed round reads to kill a dead runner's engines",
    ),
    (
        "runner/engines/src/docker/mod.rs",
        "OpenOptions",
        "a container's log, appended while it runs, as for a process engine",
    ),
    (
        "runner/engines/src/sandbox.rs",
        "fs::write(",
        "an empty placeholder file in the sandbox's private staging directory, bind-mounted \
         over at once: nothing is ever read from it",
    ),
    (
        "src/rerun/bundle.rs",
        "fs::copy(",
        "the inputs copied into the rerun bundle's work directory, which is renamed into \
         place whole once sealed",
    ),
    (
        "runner/intake/src/repository/checkout.rs",
        "fs::copy(",
        "a repository's fetched files copied into a round entry's tree under `.work/` \
         (never published, hashed again after the copy), as git2 checks out a diff's tree; \
         weights of gigabytes are not read into memory to be written again",
    ),
    (
        "site/src/build.rs",
        "OpenOptions",
        "write_if_changed opens an existing page read-only (O_NOFOLLOW) to compare it",
    ),
    (
        "site/src/build.rs",
        "tempfile_in(",
        "write_if_changed: a page written beside its path and renamed over it, atomic but \
         not fsynced per file (one syncfs for the whole site, BENCHMARKS.md)",
    ),
    (
        "site/src/build.rs",
        ".persist(",
        "write_if_changed's rename of that temp file over the page",
    ),
    (
        "site/src/verdicts.rs",
        "tempfile_in(",
        "the verdict cache's spill: an unnamed temp file, gone when closed",
    ),
    (
        "site/src/verdicts.rs",
        "OpenOptions",
        "the verdict cache appends this build's lines to the previous build's file and \
         syncs it: a line a crash cut short is not read, and is written over next time",
    ),
    (
        "testkit/src/lib.rs",
        "fs::copy(",
        "a test helper (dev-dependency only) copying fixture trees into temp directories",
    ),
    (
        "testkit/src/forge.rs",
        "fs::write(",
        "the test forger (dev-dependency only) rewriting a copied bundle's files in a temp \
         directory, as a forger would",
    ),
    (
        "testkit/src/tls.rs",
        "fs::write(",
        "a test server's CA certificate, written once into the test's own temporary \
         directory for the client under test to trust",
    ),
];

/// Rule 9: every file referee writes goes through `receipts::fsutil` (`write_atomic`),
/// except where [`WRITES_OUTSIDE_FSUTIL`] says why not.
#[test]
fn files_are_written_only_through_fsutil() {
    let g = graph();
    let mut violations = Vec::new();
    let mut used = vec![0usize; WRITES_OUTSIDE_FSUTIL.len()];
    let mut scanned = 0;
    for member in g.members.keys() {
        for (path, code) in member_code(g, member) {
            scanned += 1;
            for (line, token) in find_tokens(&code, FILE_WRITES) {
                let allowed = WRITES_OUTSIDE_FSUTIL
                    .iter()
                    .position(|(file, call, _)| *file == path && (*call == "*" || *call == token));
                match allowed {
                    Some(k) => used[k] += 1,
                    None => violations.push(format!(
                        "{path}:{line}: `{token}` (use receipts::fsutil::write_atomic, or add \
                         an entry with its reason to WRITES_OUTSIDE_FSUTIL)"
                    )),
                }
            }
        }
    }
    for ((file, call, _), n) in WRITES_OUTSIDE_FSUTIL.iter().zip(&used) {
        if *n == 0 {
            violations.push(format!(
                "WRITES_OUTSIDE_FSUTIL allows `{call}` in {file}, which no longer uses it: \
                 remove the entry"
            ));
        }
    }
    assert!(scanned > 100, "only {scanned} source files scanned");
    assert_no_violations(
        "rule 9 (files are written only through receipts::fsutil)",
        &violations,
    );
}

/// Rule 10: every member takes the workspace's lints (`[lints] workspace = true`), so a
/// new crate cannot leave `missing_docs`, `unsafe_op_in_unsafe_fn` and the clippy lints
/// behind by forgetting them.
#[test]
fn every_member_takes_the_workspace_lints() {
    let g = graph();
    let mut violations = Vec::new();
    for (member, dir) in &g.member_dirs {
        let manifest = dir.join("Cargo.toml");
        let text = std::fs::read_to_string(&manifest)
            .unwrap_or_else(|e| panic!("reading {}: {e}", manifest.display()));
        // The `[lints]` table's lines, up to the next table.
        let lints: Vec<String> = text
            .lines()
            .map(|l| l.split('#').next().unwrap_or("").replace([' ', '\t'], ""))
            .skip_while(|l| l != "[lints]")
            .skip(1)
            .take_while(|l| !l.starts_with('['))
            .collect();
        if !lints.iter().any(|l| l == "workspace=true") {
            violations.push(format!(
                "{member} ({}) has no `[lints] workspace = true`",
                manifest.display()
            ));
        }
    }
    assert_no_violations(
        "rule 10 (every member takes the workspace lints)",
        &violations,
    );
}
