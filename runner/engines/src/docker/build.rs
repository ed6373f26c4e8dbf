//! Hermetic image builds (content/docker.md, Building): the build context is a tar stream
//! of a directory (a submission's patched worktree, without `.git`), the Dockerfile is
//! the one in it, and the build runs with no network (`networkmode = none`), so every
//! `FROM` image must already be on the daemon. The image is tagged as asked (the round's
//! builder tags it with the submission hash) and its id read back from the daemon.

use std::path::Path;

use bollard::query_parameters::BuildImageOptionsBuilder;
use futures_util::StreamExt;
use receipts::fsutil::IoError;
use receipts::model::Sha256Hex;

use super::{Daemon, DockerError, LOG_TAIL_LINES, daemon_message};

/// A finished build.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuiltImage {
    /// The tag it was given.
    pub tag: String,
    /// Its image config id, `sha256:<64 hex>`.
    pub image_id: String,
    /// The daemon's build output, as it streamed.
    pub log: String,
    /// sha256 of `log`.
    pub log_sha256: Sha256Hex,
}

/// The Dockerfile of a [`rootfs_context`].
const ROOTFS_DOCKERFILE: &str =
    "FROM scratch\nADD rootfs.tar /\nENV PATH=/usr/local/bin:/usr/bin:/bin\n";

/// A build context (tar) for a base image that needs no registry: `binaries`, each
/// `(path on this host, path in the image)`, and every shared library `ldd` lists for
/// them at its own path, packed as `rootfs.tar` beside a `Dockerfile` that is
/// `FROM scratch`, `ADD rootfs.tar /` and `PATH=/usr/local/bin:/usr/bin:/bin`. Build it
/// with [`Daemon::build_image`] (`Dockerfile`): the Docker tests' image and the Docker
/// demo's base image (`examples/docker-demo/`) are made so.
///
/// Errors: [`IoError`] naming the binary `ldd` could not run on, or the file that could
/// not be read.
pub fn rootfs_context(binaries: &[(&Path, &str)]) -> Result<Vec<u8>, IoError> {
    let mut rootfs = tar::Builder::new(Vec::new());
    // The daemon's tar reader refuses GNU sparse entries (a debug binary has holes).
    rootfs.sparse(false);
    let mut seen = std::collections::BTreeSet::new();
    for (binary, at) in binaries {
        rootfs
            .append_path_with_name(binary, at.trim_start_matches('/'))
            .map_err(IoError::at("adding to the rootfs", binary))?;
        let out = std::process::Command::new("ldd")
            .arg(binary)
            .output()
            .map_err(IoError::at("running ldd on", binary))?;
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            // `libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x…)` or `/lib64/ld-linux…`.
            let Some(lib) = line.split_whitespace().find(|w| w.starts_with('/')) else {
                continue;
            };
            if seen.insert(lib.to_owned()) {
                let lib = Path::new(lib);
                let real = lib
                    .canonicalize()
                    .map_err(IoError::at("resolving the library", lib))?;
                rootfs
                    .append_path_with_name(&real, lib.strip_prefix("/").unwrap_or(lib))
                    .map_err(IoError::at("adding to the rootfs", &real))?;
            }
        }
    }
    let rootfs = rootfs
        .into_inner()
        .map_err(IoError::at("writing", Path::new("rootfs.tar")))?;
    let mut context = tar::Builder::new(Vec::new());
    for (name, bytes) in [
        ("rootfs.tar", rootfs.as_slice()),
        ("Dockerfile", ROOTFS_DOCKERFILE.as_bytes()),
    ] {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        context
            .append_data(&mut header, name, bytes)
            .map_err(IoError::at(
                "writing the build context entry",
                Path::new(name),
            ))?;
    }
    context.into_inner().map_err(IoError::at(
        "writing the build context of",
        Path::new("rootfs.tar"),
    ))
}

/// The tar stream of `dir` as a build context: every file and directory below it except
/// `.git`, paths relative to `dir`, symlinks kept as links, no sparse entries.
///
/// Errors: [`IoError`] naming the file that could not be read.
pub fn context_tar(dir: &Path) -> Result<Vec<u8>, IoError> {
    let mut tar = tar::Builder::new(Vec::new());
    tar.follow_symlinks(false);
    // GNU sparse entries (type `S`) are refused by the daemon's tar reader.
    tar.sparse(false);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&current)
            .map_err(IoError::at("listing", &current))?
            .collect::<Result<_, _>>()
            .map_err(IoError::at("listing", &current))?;
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            let path = entry.path();
            let relative = path.strip_prefix(dir).unwrap_or(&path);
            if relative == Path::new(".git") {
                continue;
            }
            let kind = entry.file_type().map_err(IoError::at("reading", &path))?;
            tar.append_path_with_name(&path, relative)
                .map_err(IoError::at("adding to the build context", &path))?;
            if kind.is_dir() {
                stack.push(path);
            }
        }
    }
    tar.into_inner()
        .map_err(IoError::at("writing the build context of", dir))
}

impl Daemon {
    /// Builds `context` (a tar stream, [`context_tar`]) with its `dockerfile` (a path
    /// inside it) and no network, tagged `tag`.
    ///
    /// Errors: [`DockerError::BuildFailed`] with the daemon's message and the last
    /// [`LOG_TAIL_LINES`] lines of the build output (a Dockerfile error, a failing `RUN`,
    /// a `FROM` image not on the daemon), [`DockerError::Daemon`] when the built image
    /// cannot be inspected.
    pub fn build_image(
        &self,
        context: Vec<u8>,
        dockerfile: &str,
        tag: &str,
    ) -> Result<BuiltImage, DockerError> {
        let docker = self.docker().clone();
        let options = BuildImageOptionsBuilder::new()
            .dockerfile(dockerfile)
            .t(tag)
            .rm(true)
            .forcerm(true)
            .networkmode("none")
            .build();
        let (log, failure) = self.block_on(async {
            let mut log = String::new();
            let mut stream = docker.build_image(
                options,
                None,
                Some(bollard::body_full(bytes::Bytes::from(context))),
            );
            while let Some(item) = stream.next().await {
                match item {
                    Ok(info) => {
                        if let Some(line) = info.stream {
                            log.push_str(&line);
                        }
                        if let Some(message) = info.error_detail.and_then(|d| d.message) {
                            return (log, Some(message));
                        }
                    }
                    Err(e) => return (log, Some(daemon_message(&e))),
                }
            }
            (log, None)
        });
        if let Some(message) = failure {
            let lines: Vec<&str> = log.lines().collect();
            let tail = lines[lines.len().saturating_sub(LOG_TAIL_LINES)..]
                .iter()
                .map(|l| (*l).to_owned())
                .collect();
            return Err(DockerError::BuildFailed {
                tag: tag.to_owned(),
                message,
                log_tail: tail,
            });
        }
        let image_id = self
            .block_on(docker.inspect_image(tag))
            .map_err(|e| DockerError::daemon("inspecting the built image", &e))?
            .id
            .unwrap_or_default();
        Ok(BuiltImage {
            tag: tag.to_owned(),
            image_id,
            log_sha256: Sha256Hex::digest(log.as_bytes()),
            log,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_context_holds_the_tree_without_git() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git/objects")).unwrap();
        std::fs::write(dir.path().join(".git/HEAD"), "ref").unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("Dockerfile"), "FROM base\n").unwrap();
        std::fs::write(dir.path().join("src/engine.toml"), "x = 1\n").unwrap();
        let bytes = context_tar(dir.path()).unwrap();
        let mut archive = tar::Archive::new(bytes.as_slice());
        let names: Vec<String> = archive
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().display().to_string())
            .collect();
        assert_eq!(names, ["Dockerfile", "src", "src/engine.toml"]);
    }
}
