//! What an engine's launch takes from the campaign's engine API profile
//! (`receipts::model::ApiProfile`, content/engines.md): the readiness routes polled until
//! one answers 200, the command's placeholders, and the environment variables of its
//! command.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::LISTEN_FD;

/// The values a process engine's command line and environment get substituted
/// (content/rounds.md, Engines): `{config}`, `{tree}` (absolute paths, whatever the
/// data directory was given as), `{listen_fd}`, `{port}`, `{threads}`, `{memory_mb}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placeholders {
    /// `{config}`: the patched tree's engine config, absolute.
    pub config: PathBuf,
    /// `{tree}`: the patched tree, absolute.
    pub tree: PathBuf,
    /// `{port}`: the port of the socket the engine inherits.
    pub port: u16,
    /// `{threads}`: compute threads the engine may use.
    pub threads: u32,
    /// `{memory_mb}`: memory the engine may use, MiB (`hardware.memory_limit_mb`).
    pub memory_mb: u64,
}

impl Placeholders {
    /// The placeholders of an engine for `tree` and `config`, made absolute against the
    /// current directory when relative (`std::path::absolute`: no symlink is resolved).
    pub fn new(tree: &Path, config: &Path, port: u16, threads: u32, memory_mb: u64) -> Self {
        let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        Self {
            config: absolute(config),
            tree: absolute(tree),
            port,
            threads,
            memory_mb,
        }
    }

    /// `text` with every placeholder replaced.
    pub fn substitute(&self, text: &str) -> String {
        text.replace("{config}", &self.config.to_string_lossy())
            .replace("{tree}", &self.tree.to_string_lossy())
            .replace("{port}", &self.port.to_string())
            .replace("{listen_fd}", &LISTEN_FD.to_string())
            .replace("{threads}", &self.threads.to_string())
            .replace("{memory_mb}", &self.memory_mb.to_string())
    }

    /// The environment every process engine gets besides the sandbox's own:
    /// `REFEREE_THREADS` and `REFEREE_MEMORY_MB`, then the profile's `env` with
    /// placeholders substituted (which may override them).
    pub fn environment(&self, env: &BTreeMap<String, String>) -> Vec<(String, String)> {
        let mut out = vec![
            ("REFEREE_THREADS".to_owned(), self.threads.to_string()),
            ("REFEREE_MEMORY_MB".to_owned(), self.memory_mb.to_string()),
        ];
        for (name, value) in env {
            out.retain(|(n, _)| n != name);
            out.push((name.clone(), self.substitute(value)));
        }
        out
    }
}

/// Whether the engine at `addr` is ready: `routes` are tried in order over plain HTTP/1.1
/// and the first one the server has decides — 200 is ready, any other answer (503 while
/// it loads) is not. A route the server does not have (404, 405, 501) passes to the next,
/// so a server without `/health` is found on `/v1/models`, but an engine whose `/health`
/// still says 503 is not taken as ready because `/v1/models` already answers.
pub fn ready(addr: SocketAddr, routes: &[String]) -> bool {
    for route in routes {
        match status_of(addr, route) {
            Some(200) => return true,
            Some(404 | 405 | 501) => {}
            _ => return false,
        }
    }
    false
}

/// The status code of one `GET route` over plain HTTP/1.1, `None` when there is no
/// well-formed answer.
fn status_of(addr: SocketAddr, route: &str) -> Option<u16> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
    let _ = stream.set_read_timeout(Some(Duration::from_millis(2_000)));
    let request = format!("GET {route} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).ok()?;
    if !head.starts_with(b"HTTP/1.") {
        return None;
    }
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

/// `/health or /v1/models`: the routes, for messages.
pub fn routes_text(routes: &[String]) -> String {
    routes.join(" or ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::thread;

    #[test]
    fn placeholders_are_absolute_and_every_one_is_substituted() {
        let cwd = std::env::current_dir().unwrap();
        let p = Placeholders::new(
            Path::new("data/trees/x"),
            Path::new("data/trees/x/engine.toml"),
            4321,
            3,
            2048,
        );
        assert_eq!(
            p.substitute("--config={config} {tree} {port} {listen_fd} -t {threads} -m {memory_mb}"),
            format!(
                "--config={}/data/trees/x/engine.toml {}/data/trees/x 4321 3 -t 3 -m 2048",
                cwd.display(),
                cwd.display()
            )
        );
        let env = BTreeMap::from([
            ("OMP_NUM_THREADS".to_owned(), "{threads}".to_owned()),
            ("REFEREE_THREADS".to_owned(), "1".to_owned()),
        ]);
        assert_eq!(
            p.environment(&env),
            [
                ("REFEREE_MEMORY_MB".to_owned(), "2048".to_owned()),
                ("OMP_NUM_THREADS".to_owned(), "3".to_owned()),
                ("REFEREE_THREADS".to_owned(), "1".to_owned()),
            ]
        );
    }

    /// A server answering 404 on `/health`, 503 on `/ready` and 200 on `/v1/models` is ready
    /// under the default routes, not under `/health` alone, and not while `/ready` says
    /// 503 (the built-in engine's `/v1/models` answers before its weights are drawn).
    #[test]
    fn readiness_falls_back_to_the_next_route() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut buf = [0u8; 1024];
                let n = stream.read(&mut buf).unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]);
                let status = if head.starts_with("GET /v1/models ") {
                    "200 OK"
                } else if head.starts_with("GET /ready ") {
                    "503 Service Unavailable"
                } else {
                    "404 Not Found"
                };
                let _ = stream.write_all(
                    format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n").as_bytes(),
                );
            }
        });
        let routes = |r: &[&str]| r.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(ready(addr, &routes(&["/health", "/v1/models"])));
        assert!(!ready(addr, &routes(&["/health"])));
        // A route the server has decides: 503 there is not ready, whatever follows.
        assert!(!ready(addr, &routes(&["/ready", "/v1/models"])));
        assert_eq!(
            routes_text(&routes(&["/health", "/v1/models"])),
            "/health or /v1/models"
        );
    }
}
