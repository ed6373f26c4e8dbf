//! The connection to a Docker daemon (content/docker.md, Connecting): a local unix socket
//! by default, else `DOCKER_HOST` (`unix://`, `tcp://` — TLS with `DOCKER_TLS_VERIFY`
//! and `DOCKER_CERT_PATH`, as the docker CLI — `https://`, `ssh://`). The API version is
//! negotiated with the daemon (`negotiate_version`): bollard's default is newer than
//! Debian's dockerd 20.10 (API 1.41) accepts.

use std::future::Future;
use std::time::Duration;

use bollard::Docker;

use super::DockerError;

/// The socket a daemon listens on when `DOCKER_HOST` is unset.
pub const DEFAULT_HOST: &str = "unix:///var/run/docker.sock";

/// How long connecting and negotiating may take, in s (a tcp host that drops packets
/// would otherwise hold the round for bollard's 2-minute request timeout).
const CONNECT_TIMEOUT_S: u64 = 10;

/// A connected daemon: the client, the runtime that drives it, and what the daemon said
/// about itself.
///
/// The engine API of a round is synchronous ([`crate::Engine`]): every call blocks on
/// the daemon's own runtime (one worker thread, which also streams container logs).
/// Never call its methods from inside another tokio runtime.
#[derive(Debug)]
pub struct Daemon {
    docker: Docker,
    runtime: tokio::runtime::Runtime,
    host: String,
    version: String,
    api_version: String,
}

impl Daemon {
    /// Connects to `host`, else `DOCKER_HOST`, else [`DEFAULT_HOST`], and negotiates the
    /// API version.
    ///
    /// Errors: [`DockerError::BadHost`] for a scheme bollard cannot speak,
    /// [`DockerError::Unreachable`] when the daemon does not answer within 10 s (the
    /// client's or daemon's message, e.g. `Socket not found: …`),
    /// [`DockerError::Runtime`] when the client's runtime cannot start.
    pub fn connect(host: Option<&str>) -> Result<Self, DockerError> {
        let host = host.map_or_else(
            || std::env::var("DOCKER_HOST").unwrap_or_else(|_| DEFAULT_HOST.to_owned()),
            str::to_owned,
        );
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("docker-client")
            .enable_all()
            .build()
            .map_err(DockerError::Runtime)?;
        let docker = {
            let _guard = runtime.enter();
            Docker::connect_with_host(&host).map_err(|e| match e {
                // bollard looks for the socket before any request.
                bollard::errors::Error::SocketNotFoundError(_) => DockerError::Unreachable {
                    host: host.clone(),
                    message: e.to_string(),
                },
                _ => DockerError::BadHost {
                    host: host.clone(),
                    message: e.to_string(),
                },
            })?
        };
        let unreachable = |message: String| DockerError::Unreachable {
            host: host.clone(),
            message,
        };
        let timeout = Duration::from_secs(CONNECT_TIMEOUT_S);
        let (docker, version) = runtime
            .block_on(async {
                let docker = tokio::time::timeout(timeout, docker.negotiate_version())
                    .await
                    .map_err(|_| format!("no answer within {CONNECT_TIMEOUT_S} s"))?
                    .map_err(|e| super::daemon_message(&e))?;
                let version = tokio::time::timeout(timeout, docker.version())
                    .await
                    .map_err(|_| format!("no answer within {CONNECT_TIMEOUT_S} s"))?
                    .map_err(|e| super::daemon_message(&e))?;
                Ok::<_, String>((docker, version))
            })
            .map_err(unreachable)?;
        let api_version = docker.client_version().to_string();
        Ok(Self {
            docker,
            runtime,
            version: version.version.unwrap_or_default(),
            api_version,
            host,
        })
    }

    /// The host connected to, e.g. `unix:///var/run/docker.sock`.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The daemon's version, e.g. `20.10.24+dfsg1`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The API version negotiated, `major.minor` (`1.41` with dockerd 20.10).
    pub fn api_version(&self) -> &str {
        &self.api_version
    }

    /// Whether the daemon runs on this host ([`is_local_host`]).
    pub fn is_local(&self) -> bool {
        is_local_host(&self.host)
    }

    /// Refuses a measured run against a daemon on another host: the load client runs on
    /// the engine's host, since a client across a network measures the network. A remote
    /// `DOCKER_HOST` is for building and pulling (content/docker.md).
    ///
    /// Errors: [`DockerError::RemoteDaemon`].
    pub fn require_local(&self) -> Result<(), DockerError> {
        if self.is_local() {
            Ok(())
        } else {
            Err(DockerError::RemoteDaemon {
                host: self.host.clone(),
            })
        }
    }

    /// The client (cheap to clone).
    pub fn docker(&self) -> &Docker {
        &self.docker
    }

    /// Runs `future` on the daemon's runtime, blocking this thread.
    pub(crate) fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    /// Spawns `future` on the daemon's runtime (log streaming).
    pub(crate) fn spawn<F>(&self, future: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.runtime.spawn(future)
    }
}

/// Whether `host` names a daemon on this machine: a unix socket, or tcp/http(s) to a
/// loopback address. `ssh://` is always remote.
pub fn is_local_host(host: &str) -> bool {
    if host.starts_with("unix://") {
        return true;
    }
    let Some(rest) = ["tcp://", "http://", "https://"]
        .iter()
        .find_map(|scheme| host.strip_prefix(scheme))
    else {
        return false;
    };
    let authority = rest.split('/').next().unwrap_or_default();
    let name = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    name == "localhost"
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sockets_and_loopback_are_local() {
        for local in [
            "unix:///var/run/docker.sock",
            "tcp://127.0.0.1:2375",
            "tcp://localhost:2376",
            "https://[::1]:2376",
            "http://127.0.0.2:2375/",
        ] {
            assert!(is_local_host(local), "{local}");
        }
        for remote in [
            "tcp://10.0.0.5:2376",
            "ssh://root@pod.example",
            "https://pod.example:2376",
            "tcp://[2001:db8::1]:2376",
            "npipe:////./pipe/docker_engine",
        ] {
            assert!(!is_local_host(remote), "{remote}");
        }
    }

    #[test]
    fn an_unknown_scheme_is_a_bad_host() {
        let err = Daemon::connect(Some("ftp://example")).unwrap_err();
        assert!(
            matches!(&err, DockerError::BadHost { host, .. } if host == "ftp://example"),
            "{err:?}"
        );
    }

    #[test]
    fn a_missing_socket_is_unreachable_with_the_os_message() {
        let dir = tempfile::tempdir().unwrap();
        let host = format!("unix://{}/none.sock", dir.path().display());
        match Daemon::connect(Some(&host)) {
            Err(DockerError::Unreachable { host: h, message }) => {
                assert_eq!(h, host);
                assert_eq!(
                    message,
                    format!("Socket not found: {}/none.sock", dir.path().display())
                );
            }
            other => panic!("expected Unreachable, got {other:?}"),
        }
    }
}
