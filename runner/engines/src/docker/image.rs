//! Images by digest (content/docker.md, Images): a reference is resolved once, when the
//! round sets up, to the image config id the daemon holds (and the registry manifest
//! digest when the image came from a registry); every container then runs that id, and
//! an image whose id differs from the one recorded is refused. A missing image is pulled
//! with its progress reported; an air-gapped pod loads a `docker save` tarball instead.

use std::collections::HashMap;
use std::path::Path;

use bollard::query_parameters::{CreateImageOptionsBuilder, ImportImageOptionsBuilder};
use futures_util::StreamExt;
use receipts::fsutil::IoError;
use receipts::model::is_sha256_digest;

use super::{Daemon, DockerError, daemon_message, is_not_found};

/// An image reference resolved on the daemon.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedImage {
    /// The reference as named (`engine:v1`, `ghcr.io/org/engine@sha256:…`).
    pub reference: String,
    /// The image config id, `sha256:<64 hex>`.
    pub image_id: String,
    /// The registry manifest digest, `sha256:<64 hex>`, when the daemon knows one for
    /// the reference's repository (`RepoDigests`); `None` for a local build or import.
    pub manifest_digest: Option<String>,
}

/// The repository of a reference: without `@digest` and without `:tag` (a `:` before
/// the last `/` is a registry port, not a tag).
pub fn repository(reference: &str) -> &str {
    let name = reference.split('@').next().unwrap_or(reference);
    match name.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') => repo,
        _ => name,
    }
}

/// The manifest digest of `reference` among an image's `RepoDigests`
/// (`repo@sha256:…`): the one of its repository.
pub fn manifest_digest_for(reference: &str, repo_digests: &[String]) -> Option<String> {
    let repo = repository(reference);
    repo_digests.iter().find_map(|d| {
        let (r, digest) = d.split_once('@')?;
        (r == repo && is_sha256_digest(digest)).then(|| digest.to_owned())
    })
}

impl Daemon {
    /// Resolves `reference` to the image the daemon holds, pulling it when it is missing
    /// and `pull` is set (each progress line given to `progress`). A `name@sha256:…`
    /// reference must resolve to an image whose `RepoDigests` hold that digest.
    ///
    /// Errors: [`DockerError::MissingImage`] with the daemon's message (not held, and not
    /// pulled or the pull failed), [`DockerError::DigestMismatch`] for a pinned
    /// reference whose digest the image does not carry, [`DockerError::Daemon`] for any
    /// other answer.
    pub fn resolve_image(
        &self,
        reference: &str,
        pull: bool,
        progress: &mut dyn FnMut(&str),
    ) -> Result<ResolvedImage, DockerError> {
        let docker = self.docker().clone();
        let missing = |message: String| DockerError::MissingImage {
            reference: reference.to_owned(),
            message,
        };
        let inspected = match self.block_on(docker.inspect_image(reference)) {
            Ok(image) => image,
            Err(e) if is_not_found(&e) && pull => {
                self.pull(reference, progress).map_err(missing)?;
                self.block_on(docker.inspect_image(reference))
                    .map_err(|e| missing(daemon_message(&e)))?
            }
            Err(e) if is_not_found(&e) => return Err(missing(daemon_message(&e))),
            Err(e) => return Err(DockerError::daemon("inspecting the image", &e)),
        };
        let image_id = inspected.id.unwrap_or_default();
        let repo_digests = inspected.repo_digests.unwrap_or_default();
        if let Some((_, pinned)) = reference.split_once('@')
            && !repo_digests.iter().any(|d| {
                d.split_once('@')
                    .is_some_and(|(_, digest)| digest == pinned)
            })
        {
            return Err(DockerError::DigestMismatch {
                reference: reference.to_owned(),
                expected: pinned.to_owned(),
                actual: repo_digests.join(", "),
            });
        }
        Ok(ResolvedImage {
            reference: reference.to_owned(),
            manifest_digest: manifest_digest_for(reference, &repo_digests),
            image_id,
        })
    }

    /// Checks that the daemon still holds `image` under its recorded id: the id the
    /// round resolved is what every container runs.
    ///
    /// Errors: [`DockerError::MissingImage`] when the id is gone,
    /// [`DockerError::DigestMismatch`] when the reference now names another image.
    pub fn check_image(&self, image: &ResolvedImage) -> Result<(), DockerError> {
        let docker = self.docker().clone();
        let by_id = self
            .block_on(docker.inspect_image(&image.image_id))
            .map_err(|e| DockerError::MissingImage {
                reference: image.image_id.clone(),
                message: daemon_message(&e),
            })?;
        let actual = by_id.id.unwrap_or_default();
        if actual != image.image_id {
            return Err(DockerError::DigestMismatch {
                reference: image.reference.clone(),
                expected: image.image_id.clone(),
                actual,
            });
        }
        Ok(())
    }

    /// `docker pull`: the daemon's progress lines go to `progress`; a failure is the
    /// daemon's message.
    fn pull(&self, reference: &str, progress: &mut dyn FnMut(&str)) -> Result<(), String> {
        let (from_image, tag) = match reference.split_once('@') {
            Some(_) => (reference.to_owned(), None),
            None => {
                let repo = repository(reference);
                let tag = reference.get(repo.len() + 1..).filter(|t| !t.is_empty());
                (repo.to_owned(), Some(tag.unwrap_or("latest").to_owned()))
            }
        };
        let mut options = CreateImageOptionsBuilder::new().from_image(&from_image);
        if let Some(tag) = &tag {
            options = options.tag(tag);
        }
        let docker = self.docker().clone();
        self.block_on(async {
            let mut stream = docker.create_image(Some(options.build()), None, None);
            while let Some(item) = stream.next().await {
                let info = item.map_err(|e| daemon_message(&e))?;
                if let Some(detail) = info.error_detail.and_then(|d| d.message) {
                    return Err(detail);
                }
                let line = [info.id, info.status]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(": ");
                if !line.is_empty() {
                    progress(&line);
                }
            }
            Ok(())
        })
    }

    /// `docker load` of a `docker save` tarball (air-gapped pods); returns the daemon's
    /// `Loaded image: …` lines.
    ///
    /// Errors: [`DockerError::Io`] when the tarball cannot be read,
    /// [`DockerError::Daemon`] with the daemon's message when it refuses it.
    pub fn load_image(&self, tarball: &Path) -> Result<Vec<String>, DockerError> {
        let bytes = std::fs::read(tarball).map_err(IoError::at("reading", tarball))?;
        let docker = self.docker().clone();
        self.block_on(async {
            let body = futures_util::stream::once(async move {
                Ok::<_, std::io::Error>(bytes::Bytes::from(bytes))
            });
            let mut stream = docker.import_image_stream(
                ImportImageOptionsBuilder::new().quiet(true).build(),
                body,
                None::<HashMap<String, bollard::auth::DockerCredentials>>,
            );
            let mut loaded = Vec::new();
            while let Some(item) = stream.next().await {
                let info = item.map_err(|e| DockerError::daemon("loading the image", &e))?;
                if let Some(message) = info.error_detail.and_then(|d| d.message) {
                    return Err(DockerError::Daemon {
                        action: "loading the image".into(),
                        message,
                    });
                }
                if let Some(line) = info.stream.filter(|l| !l.trim().is_empty()) {
                    loaded.push(line.trim().to_owned());
                }
            }
            Ok(loaded)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn repositories_drop_tags_and_digests_but_keep_ports() {
        assert_eq!(repository("engine:v1"), "engine");
        assert_eq!(repository("engine"), "engine");
        assert_eq!(
            repository("registry:5000/org/engine:v1"),
            "registry:5000/org/engine"
        );
        assert_eq!(
            repository("registry:5000/org/engine"),
            "registry:5000/org/engine"
        );
        assert_eq!(
            repository(&format!("ghcr.io/org/engine@{D}")),
            "ghcr.io/org/engine"
        );
    }

    #[test]
    fn the_manifest_digest_is_the_one_of_the_references_repository() {
        let digests = vec![
            format!("other/engine@{D}"),
            "ghcr.io/org/engine@sha256:short".to_owned(),
            format!("ghcr.io/org/engine@{}", D.replace('0', "f")),
        ];
        assert_eq!(
            manifest_digest_for("ghcr.io/org/engine:v1", &digests),
            Some(D.replace('0', "f"))
        );
        assert_eq!(manifest_digest_for("engine:v1", &digests), None);
    }
}
