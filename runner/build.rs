//! Records the git commit the runner is built from as `REFEREE_GIT_COMMIT`, for the
//! `tool` of every round record (content/receipts.md). An explicit `REFEREE_GIT_COMMIT` in the
//! environment wins (release builds from a tarball); without git the round records
//! `unknown`.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=REFEREE_GIT_COMMIT");
    // Only paths that exist: cargo reruns a build script on every build when a watched
    // path is missing (a source tarball has no `.git`).
    for watched in ["../.git/HEAD", "../.git/refs/heads", "../.git/packed-refs"] {
        if std::path::Path::new(watched).exists() {
            println!("cargo:rerun-if-changed={watched}");
        }
    }
    if std::env::var_os("REFEREE_GIT_COMMIT").is_some() {
        return;
    }
    let commit = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit()));
    if let Some(commit) = commit {
        println!("cargo:rustc-env=REFEREE_GIT_COMMIT={commit}");
    }
}
