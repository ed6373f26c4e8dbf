//! Git LFS objects of a committed repository (content/repository-submissions.md, Fetch):
//! the pointer files git stores in their place ([`LfsPointer`]) and where the objects
//! come from ([`LfsStore`]): a local repository's own store ([`LocalLfs`]) or, over
//! HTTPS, the repository's LFS batch API ([`BatchLfs`]). The fetch gate asks a store
//! which objects this repository holds before anything is downloaded; the pointer's
//! size has been checked against the campaign's cap before that.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use receipts::model::Sha256Hex;
use serde::{Deserialize, Serialize};

use super::fetch::{FetchError, copy_hashing};

/// An LFS pointer's object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LfsPointer {
    /// The object's sha256, 64 lowercase hex characters (checked).
    pub oid: String,
    /// The object's size, bytes, as the pointer declares it.
    pub size: u64,
}

/// The most bytes an LFS pointer file has (the spec's own bound).
pub const MAX_POINTER_BYTES: u64 = 1024;

/// Parses a Git LFS pointer (spec v1): `version`, then `oid sha256:<64 hex>` and `size
/// <n>` among its keys. Anything else is an ordinary file.
pub fn parse_pointer(bytes: &[u8]) -> Option<LfsPointer> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut lines = text.lines();
    if lines.next()? != "version https://git-lfs.github.com/spec/v1" {
        return None;
    }
    let (mut oid, mut size) = (None, None);
    for line in lines {
        if let Some(hex) = line.strip_prefix("oid sha256:") {
            oid = Some(hex).filter(|h| Sha256Hex::is_valid(h));
        } else if let Some(n) = line.strip_prefix("size ") {
            size = n.parse().ok();
        }
    }
    Some(LfsPointer {
        oid: oid?.to_owned(),
        size: size?,
    })
}

/// Where a repository's LFS objects come from.
pub trait LfsStore {
    /// The oids among `objects` that this repository holds, asked before any object is
    /// downloaded.
    ///
    /// Errors: [`FetchError`] when the store could not be asked (not the miner's doing).
    fn held(&mut self, objects: &[&LfsPointer]) -> Result<BTreeSet<String>, FetchError>;

    /// Copies the object of `pointer` (one [`LfsStore::held`] named) into `out`, at most
    /// one byte more than its declared size, returning the sha256 of what was copied.
    ///
    /// Errors: the read's or the write's.
    fn copy(&self, pointer: &LfsPointer, out: &mut fs::File) -> io::Result<Sha256Hex>;
}

/// A local repository's LFS store: `.git/lfs/objects/` or, bare, `lfs/objects/`.
pub struct LocalLfs {
    objects: PathBuf,
}

impl LocalLfs {
    /// The store of the repository at `repo`.
    pub fn of(repo: &Path) -> Self {
        let worktree = repo.join(".git/lfs/objects");
        Self {
            objects: if worktree.is_dir() {
                worktree
            } else {
                repo.join("lfs/objects")
            },
        }
    }

    /// Where the object `oid` (64 hex, checked by [`parse_pointer`]) would be.
    fn path(&self, oid: &str) -> PathBuf {
        self.objects.join(&oid[..2]).join(&oid[2..4]).join(oid)
    }
}

impl LfsStore for LocalLfs {
    fn held(&mut self, objects: &[&LfsPointer]) -> Result<BTreeSet<String>, FetchError> {
        Ok(objects
            .iter()
            .filter(|p| fs::symlink_metadata(self.path(&p.oid)).is_ok_and(|m| m.is_file()))
            .map(|p| p.oid.clone())
            .collect())
    }

    fn copy(&self, pointer: &LfsPointer, out: &mut fs::File) -> io::Result<Sha256Hex> {
        let mut source = fs::File::open(self.path(&pointer.oid))?;
        copy_hashing(&mut (&mut source).take(pointer.size.saturating_add(1)), out)
    }
}

/// The LFS batch API's media type.
const LFS_MEDIA_TYPE: &str = "application/vnd.git-lfs+json";

/// The most objects one batch request names (the reference server's limit).
const BATCH_OBJECTS: usize = 100;

/// The most bytes of a batch response read.
const MAX_BATCH_RESPONSE_BYTES: u64 = 16 << 20;

/// How long one HTTP request of the LFS client may take, downloads included.
pub const LFS_REQUEST_TIMEOUT: Duration = Duration::from_secs(3600);

/// A repository's LFS objects through its batch API
/// (`<url>.git/info/lfs/objects/batch`, the endpoint git-lfs derives from the
/// repository URL), over HTTPS only, redirects included.
pub struct BatchLfs {
    endpoint: String,
    client: reqwest::blocking::Client,
    downloads: BTreeMap<String, Download>,
}

/// Where the batch API said an object is downloaded from.
#[derive(Clone, Debug, Deserialize)]
struct Download {
    href: String,
    #[serde(default)]
    header: BTreeMap<String, String>,
}

#[derive(Serialize)]
struct BatchRequest<'a> {
    operation: &'static str,
    transfers: [&'static str; 1],
    objects: Vec<BatchObject<'a>>,
    hash_algo: &'static str,
}

#[derive(Serialize)]
struct BatchObject<'a> {
    oid: &'a str,
    size: u64,
}

#[derive(Deserialize)]
struct BatchResponse {
    #[serde(default)]
    objects: Vec<ResponseObject>,
}

#[derive(Deserialize)]
struct ResponseObject {
    oid: String,
    size: u64,
    #[serde(default)]
    actions: Option<Actions>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Actions {
    download: Option<Download>,
}

impl BatchLfs {
    /// The LFS store of the HTTPS repository `url` (`https://<base>/<org>/<name>`),
    /// checking servers against the PEM certificates of `ca_file` instead of the
    /// system's roots when it is given.
    ///
    /// Errors: [`FetchError::Tls`] for a CA file that does not read or parse, or a
    /// client that cannot be built.
    pub fn new(url: &str, ca_file: Option<&Path>) -> Result<Self, FetchError> {
        let base = url.trim_end_matches('/');
        let endpoint = if base.ends_with(".git") {
            format!("{base}/info/lfs/objects/batch")
        } else {
            format!("{base}.git/info/lfs/objects/batch")
        };
        let tls = |message: String| FetchError::Tls { message };
        let mut builder = reqwest::blocking::Client::builder()
            .https_only(true)
            .redirect(reqwest::redirect::Policy::limited(5))
            .connect_timeout(Duration::from_secs(30))
            .timeout(LFS_REQUEST_TIMEOUT)
            .user_agent(concat!("referee/", env!("CARGO_PKG_VERSION")));
        if let Some(ca_file) = ca_file {
            let pem = fs::read(ca_file)
                .map_err(|e| tls(format!("reading `{}`: {e}", ca_file.display())))?;
            let certificates = reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|e| tls(format!("`{}`: {e}", ca_file.display())))?;
            builder = builder.tls_built_in_root_certs(false);
            for certificate in certificates {
                builder = builder.add_root_certificate(certificate);
            }
        }
        Ok(Self {
            endpoint,
            client: builder.build().map_err(|e| tls(e.to_string()))?,
            downloads: BTreeMap::new(),
        })
    }

    /// One batch request for `objects`: records the download of each object the
    /// server holds.
    fn ask(&mut self, objects: &[&LfsPointer]) -> Result<(), FetchError> {
        let failed = |message: String| FetchError::Lfs {
            url: self.endpoint.clone(),
            message,
        };
        let request = BatchRequest {
            operation: "download",
            transfers: ["basic"],
            objects: objects
                .iter()
                .map(|p| BatchObject {
                    oid: &p.oid,
                    size: p.size,
                })
                .collect(),
            hash_algo: "sha256",
        };
        let response = self
            .client
            .post(&self.endpoint)
            .header(reqwest::header::ACCEPT, LFS_MEDIA_TYPE)
            .header(reqwest::header::CONTENT_TYPE, LFS_MEDIA_TYPE)
            .json(&request)
            .send()
            .map_err(|e| failed(e.to_string()))?;
        let status = response.status();
        // A repository without LFS storage holds none of the objects.
        if status == reqwest::StatusCode::NOT_FOUND {
            return Ok(());
        }
        if !status.is_success() {
            return Err(failed(format!("the batch API answered {status}")));
        }
        let mut body = Vec::new();
        response
            .take(MAX_BATCH_RESPONSE_BYTES + 1)
            .read_to_end(&mut body)
            .map_err(|e| failed(e.to_string()))?;
        if body.len() as u64 > MAX_BATCH_RESPONSE_BYTES {
            return Err(failed(format!(
                "a batch response over {MAX_BATCH_RESPONSE_BYTES} bytes"
            )));
        }
        let parsed: BatchResponse = serde_json::from_slice(&body)
            .map_err(|e| failed(format!("a batch response that does not parse: {e}")))?;
        let asked: BTreeMap<&str, u64> = objects.iter().map(|p| (p.oid.as_str(), p.size)).collect();
        for object in parsed.objects {
            let download = object.actions.and_then(|a| a.download);
            if object.error.is_none()
                && asked.get(object.oid.as_str()) == Some(&object.size)
                && let Some(download) = download
            {
                self.downloads.insert(object.oid, download);
            }
        }
        Ok(())
    }
}

impl LfsStore for BatchLfs {
    fn held(&mut self, objects: &[&LfsPointer]) -> Result<BTreeSet<String>, FetchError> {
        for chunk in objects.chunks(BATCH_OBJECTS) {
            self.ask(chunk)?;
        }
        Ok(objects
            .iter()
            .filter(|p| self.downloads.contains_key(&p.oid))
            .map(|p| p.oid.clone())
            .collect())
    }

    fn copy(&self, pointer: &LfsPointer, out: &mut fs::File) -> io::Result<Sha256Hex> {
        let download = self
            .downloads
            .get(&pointer.oid)
            .ok_or_else(|| io::Error::other("the batch API gave no download for this object"))?;
        let mut request = self.client.get(&download.href);
        for (name, value) in &download.header {
            request = request.header(name, value);
        }
        let response = request
            .send()
            .and_then(reqwest::blocking::Response::error_for_status)
            .map_err(io::Error::other)?;
        copy_hashing(&mut response.take(pointer.size.saturating_add(1)), out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_parse_only_in_the_spec_form() {
        let oid = "a".repeat(64);
        let text =
            format!("version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize 12\n");
        assert_eq!(
            parse_pointer(text.as_bytes()),
            Some(LfsPointer { oid, size: 12 })
        );
        assert_eq!(parse_pointer(b"version 2\noid sha256:aa\nsize 1\n"), None);
    }

    #[test]
    fn the_batch_endpoint_is_git_lfs_own() {
        let lfs = BatchLfs::new("https://hf.example/org/name", None).expect("client");
        assert_eq!(
            lfs.endpoint,
            "https://hf.example/org/name.git/info/lfs/objects/batch"
        );
        let lfs = BatchLfs::new("https://hf.example/org/name.git/", None).expect("client");
        assert_eq!(
            lfs.endpoint,
            "https://hf.example/org/name.git/info/lfs/objects/batch"
        );
    }
}
