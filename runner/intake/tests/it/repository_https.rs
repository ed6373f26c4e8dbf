//! Repositories over HTTPS in the Hugging Face layout (content/repository-submissions.md,
//! Fetch): a local server, axum on rustls with a certificate from a CA made per test
//! (`testkit::tls`), runs `git http-backend` as a CGI for `https://127.0.0.1:<port>/<org>/<name>`
//! and answers the LFS batch API at `<org>/<name>.git/info/lfs/objects/batch` from each
//! repository's own LFS store. The fetcher trusts that CA through its CA file (git's
//! `http.sslCAInfo`, the LFS client's root); nothing leaves the machine.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Json;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path as UrlPath, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use intake::repository::{
    Commitment, FetchError, FetchOutcome, FetchRejection, Fetcher, GitFetcher,
};
use receipts::model::{Gate, PipelineState, Sha256Hex};
use serde_json::{Value, json};
use testkit::tls::TlsServer;

use crate::repository::{Case, WEIGHTS, commit, good_files, pointer, rejected_at, with};

/// What the server counts, so a test can say nothing was downloaded.
#[derive(Default)]
struct Counts {
    batches: AtomicUsize,
    downloads: AtomicUsize,
}

struct Shared {
    root: PathBuf,
    base: String,
    counts: Counts,
}

/// A Hugging Face-like server for the repositories under `<root>/<org>/<name>`.
struct HfServer {
    shared: Arc<Shared>,
    ca_file: PathBuf,
    _server: TlsServer,
}

impl HfServer {
    /// Serves `<dir>/repos/` over HTTPS, its CA certificate at `<dir>/ca.pem`.
    fn start(dir: &Path) -> Self {
        let root = dir.join("repos");
        fs::create_dir_all(&root).unwrap();
        let mut shared = None;
        let server = TlsServer::start(dir, |base| {
            let state = Arc::new(Shared {
                root,
                base: base.to_owned(),
                counts: Counts::default(),
            });
            shared = Some(state.clone());
            Router::new()
                .route("/{org}/{repo}/info/lfs/objects/batch", post(batch))
                .route("/{org}/{repo}/lfs/objects/{oid}", get(object))
                .fallback(cgi)
                .with_state(state)
        });
        Self {
            shared: shared.unwrap(),
            ca_file: server.ca_file.clone(),
            _server: server,
        }
    }

    fn fetcher(&self) -> GitFetcher {
        GitFetcher {
            ca_file: Some(self.ca_file.clone()),
        }
    }

    /// The working repository served as `<org>/<name>`.
    fn repo(&self, org_name: &str) -> PathBuf {
        self.shared.root.join(org_name)
    }

    /// Commits `files` into `<org>/<name>`, returning its commitment.
    fn publish(&self, org_name: &str, files: &[crate::repository::File]) -> String {
        let head = commit(&self.repo(org_name), files);
        format!("{}/{org_name}@{head}", self.shared.base)
    }

    /// Puts `bytes` into the LFS store of the published `<org>/<name>`, returning its oid.
    fn store_object(&self, org_name: &str, bytes: &[u8]) -> String {
        let oid = Sha256Hex::digest(bytes).to_string();
        let dir = self
            .repo(org_name)
            .join(".git/lfs/objects")
            .join(&oid[..2])
            .join(&oid[2..4]);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(&oid), bytes).unwrap();
        oid
    }

    fn batches(&self) -> usize {
        self.shared.counts.batches.load(Ordering::SeqCst)
    }

    fn downloads(&self) -> usize {
        self.shared.counts.downloads.load(Ordering::SeqCst)
    }
}

/// The working repository of a URL's `<org>/<repo>` (`name` or `name.git`).
fn served_repo(shared: &Shared, org: &str, repo: &str) -> PathBuf {
    shared.root.join(org).join(repo.trim_end_matches(".git"))
}

fn object_path(repo: &Path, oid: &str) -> Option<PathBuf> {
    (oid.len() == 64 && oid.bytes().all(|b| b.is_ascii_hexdigit())).then(|| {
        repo.join(".git/lfs/objects")
            .join(&oid[..2])
            .join(&oid[2..4])
            .join(oid)
    })
}

/// The LFS batch API (download only): an object of this repository's store gets a
/// download action, any other a 404 error.
async fn batch(
    State(shared): State<Arc<Shared>>,
    UrlPath((org, repo)): UrlPath<(String, String)>,
    Json(request): Json<Value>,
) -> Response {
    shared.counts.batches.fetch_add(1, Ordering::SeqCst);
    let dir = served_repo(&shared, &org, &repo);
    let objects: Vec<Value> = request["objects"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| {
            let oid = o["oid"].as_str().unwrap_or_default();
            let held = object_path(&dir, oid).is_some_and(|p| p.is_file());
            if held {
                json!({"oid": oid, "size": o["size"], "actions": {"download": {
                    "href": format!("{}/{org}/{repo}/lfs/objects/{oid}", shared.base),
                    "header": {"Authorization": "Bearer test"}}}})
            } else {
                json!({"oid": oid, "size": o["size"],
                    "error": {"code": 404, "message": "Object does not exist"}})
            }
        })
        .collect();
    (
        [("content-type", "application/vnd.git-lfs+json")],
        Json(json!({"transfer": "basic", "objects": objects})),
    )
        .into_response()
}

/// An LFS object's bytes, for a request carrying the batch answer's header.
async fn object(
    State(shared): State<Arc<Shared>>,
    UrlPath((org, repo, oid)): UrlPath<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some("Bearer test") {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    shared.counts.downloads.fetch_add(1, Ordering::SeqCst);
    let dir = served_repo(&shared, &org, &repo);
    match object_path(&dir, &oid).and_then(|p| fs::read(p).ok()) {
        Some(bytes) => bytes.into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// Everything else: `git http-backend`, as a CGI.
async fn cgi(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, 64 << 20).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let root = shared.root.clone();
    tokio::task::spawn_blocking(move || http_backend(&root, &parts, body))
        .await
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

fn http_backend(root: &Path, parts: &axum::http::request::Parts, body: Bytes) -> Response {
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let mut child = Command::new("git")
        .arg("http-backend")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("PATH_INFO", parts.uri.path())
        .env("QUERY_STRING", parts.uri.query().unwrap_or_default())
        .env("REQUEST_METHOD", parts.method.as_str())
        .env("CONTENT_TYPE", header("content-type"))
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("HTTP_CONTENT_ENCODING", header("content-encoding"))
        .env("GIT_PROTOCOL", header("git-protocol"))
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("git http-backend runs");
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&body));
    let output = child.wait_with_output().unwrap();
    let _ = writer.join();
    let out = output.stdout;
    let (head, rest) = match out.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(i) => (&out[..i], &out[i + 4..]),
        None => match out.windows(2).position(|w| w == b"\n\n") {
            Some(i) => (&out[..i], &out[i + 2..]),
            None => return StatusCode::BAD_GATEWAY.into_response(),
        },
    };
    let mut response = Response::new(Body::from(rest.to_vec()));
    for line in String::from_utf8_lossy(head).lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("status") {
            let code = value.split(' ').next().and_then(|c| c.parse().ok());
            *response.status_mut() = code
                .and_then(|c| StatusCode::from_u16(c).ok())
                .unwrap_or(StatusCode::BAD_GATEWAY);
        } else if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

/// The good repository with its weights in LFS: fetched over HTTPS, the objects through
/// the batch API, it is queued with the tree digest of the same files fetched locally
/// (the digest covers LFS objects' bytes, not their pointers).
#[test]
fn a_valid_repository_over_https_is_bench_queued() {
    let case = Case::new();
    let server = HfServer::start(case.tmp.path());
    let oid = Sha256Hex::digest(WEIGHTS).to_string();
    let files = with(
        good_files(),
        "weights/model.bin",
        pointer(&oid, WEIGHTS.len() as u64),
    );
    let commitment = server.publish("org/good", &files);
    server.store_object("org/good", WEIGHTS);
    let s = case.ingest_with(&server.fetcher(), "hot-a", &commitment, 1_800_000_000);
    assert_eq!(s.state, PipelineState::BenchQueued, "{:?}", s.last_reason());
    assert_eq!((server.batches(), server.downloads()), (1, 1));
    // The same files fetched locally, in a campaign of their own: in this one the review
    // would reject them as a copy of the first.
    let other = Case::new();
    let local = other.tmp.path().join("local-good");
    let head = commit(&local, &good_files());
    let plain = other.ingest_with(
        &GitFetcher::default(),
        "hot-a",
        &format!("{}@{head}", local.display()),
        1_800_000_001,
    );
    assert_eq!(
        plain.state,
        PipelineState::BenchQueued,
        "{:?}",
        plain.last_reason()
    );
    let digest = |s: &receipts::model::Submission| s.repository.as_ref().unwrap().tree_sha256;
    assert_eq!(digest(&s), digest(&plain));
    let tree =
        intake::repository::FetchedTree::load(&intake::repository::tree_dir(&case.dir, &s.sha256))
            .unwrap();
    let file = tree.file("weights/model.bin").unwrap();
    assert!(file.lfs);
    assert_eq!(
        fs::read(tree.files_root().join("weights/model.bin")).unwrap(),
        WEIGHTS
    );
}

/// The pointer's declared size is over the cap: refused before the batch API is even
/// asked, so nothing is downloaded.
#[test]
fn an_lfs_object_over_the_cap_over_https_is_refused_from_its_pointer() {
    let case = Case::new();
    let server = HfServer::start(case.tmp.path());
    let oid = Sha256Hex::digest(WEIGHTS).to_string();
    let commitment = server.publish(
        "org/big",
        &with(
            good_files(),
            "weights/model.bin",
            pointer(&oid, 9_000_000_000),
        ),
    );
    server.store_object("org/big", WEIGHTS);
    let s = case.ingest_with(&server.fetcher(), "hot-a", &commitment, 1_800_000_000);
    assert_eq!(
        rejected_at(&s, Gate::Fetched),
        "file_too_large: `weights/model.bin` is 9000000000 bytes (its LFS pointer's size), over the campaign's cap of 4096"
    );
    assert_eq!((server.batches(), server.downloads()), (0, 0));
}

/// The object is on the server, but in another repository's store: this repository's
/// batch API does not hold it, and nothing is downloaded.
#[test]
fn an_lfs_object_of_another_repository_over_https_is_refused() {
    let case = Case::new();
    let server = HfServer::start(case.tmp.path());
    server.publish("org/other", &good_files());
    let oid = server.store_object("org/other", WEIGHTS);
    let commitment = server.publish(
        "org/borrower",
        &with(
            good_files(),
            "weights/model.bin",
            pointer(&oid, WEIGHTS.len() as u64),
        ),
    );
    let s = case.ingest_with(&server.fetcher(), "hot-a", &commitment, 1_800_000_000);
    assert_eq!(
        rejected_at(&s, Gate::Fetched),
        format!(
            "lfs_object_not_in_repository: `weights/model.bin` points to LFS object sha256:{oid}, which this repository does not hold"
        )
    );
    assert_eq!((server.batches(), server.downloads()), (1, 0));
}

/// No repository at `<org>/<name>`: the miner's doing, a typed rejection.
#[test]
fn a_missing_repository_over_https_is_repository_not_found() {
    let case = Case::new();
    let server = HfServer::start(case.tmp.path());
    let commitment: Commitment = format!("{}/org/absent@{}", server.shared.base, "ab".repeat(20))
        .parse()
        .unwrap();
    let outcome = server
        .fetcher()
        .fetch(&commitment, 4096, &case.tmp.path().join("absent"))
        .expect("fetch");
    let FetchOutcome::Rejected(rejections) = outcome else {
        panic!("fetched an absent repository");
    };
    assert_eq!(
        rejections,
        [FetchRejection::RepositoryNotFound {
            url: format!("{}/org/absent", server.shared.base)
        }]
    );
}

/// Without the test CA the server's certificate is refused: a fetch error (the record
/// stays where it was), not a rejection of the miner.
#[test]
fn a_server_outside_the_trusted_roots_is_a_fetch_error() {
    let case = Case::new();
    let server = HfServer::start(case.tmp.path());
    let commitment: Commitment = server.publish("org/good", &good_files()).parse().unwrap();
    let err = GitFetcher::default()
        .fetch(&commitment, 4096, &case.tmp.path().join("untrusted"))
        .expect_err("an untrusted certificate");
    assert!(matches!(err, FetchError::Git { .. }), "{err}");
}
