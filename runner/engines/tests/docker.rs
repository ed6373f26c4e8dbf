//! The Docker backend against a real daemon (content/docker.md). No registry is reachable
//! here: the test image is built from a rootfs tarball made in the test — the `referee`
//! binary (the built-in engine), `bash` (the sandbox probes) and the shared libraries
//! `ldd` lists for them — by a `FROM scratch` Dockerfile, with the build API and no
//! network.
//!
//! Needs a daemon and the binary: `scripts/dockerd start target/dockerd` (prints the
//! `DOCKER_HOST` to export), `cargo build -p referee`, then
//! `cargo test -p engines --test docker -- --ignored` (`.ci/run` does all of it).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use engines::docker::build::{context_tar, rootfs_context};
use engines::docker::{ContainerExit, Daemon, DockerBackend, DockerError, SCOPE_LABEL};
use engines::isolation::CpuPlan;
use engines::sandbox::{DEFAULT_ENGINE_UID, Sandbox};
use engines::{Confinement, Engine, EngineBackend, EngineError, EngineSettings, LOG_TAIL_LINES};
use receipts::model::BackendKind;
use receipts::model::{DockerSpec, ImageRef, SandboxKind, Sha256Hex, SubmissionImage};
use std::os::unix::fs::PermissionsExt;

/// The test image's tag.
const TAG: &str = "referee-test/engine:tiny";

/// The `referee` binary: `REFEREE_BIN`, else the workspace's debug build.
fn referee() -> PathBuf {
    let path = std::env::var_os("REFEREE_BIN").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/debug/referee"),
        PathBuf::from,
    );
    assert!(
        path.is_file(),
        "{} not found: cargo build -p referee",
        path.display()
    );
    path.canonicalize().unwrap()
}

fn daemon() -> Daemon {
    Daemon::connect(None).expect("connecting to DOCKER_HOST (scripts/dockerd start)")
}

/// Builds the test image once per test binary; returns its id.
fn image() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let context = rootfs_context(&[
            (&referee(), "/usr/local/bin/referee"),
            (Path::new("/bin/bash"), "/bin/bash"),
            (Path::new("/usr/bin/timeout"), "/usr/bin/timeout"),
        ])
        .unwrap();
        daemon()
            .build_image(context, "Dockerfile", TAG)
            .unwrap()
            .image_id
    })
}

/// A patched tree: the demo baseline's engine config.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    // As intake writes a tree: readable by the container's unprivileged user.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo/baseline/engine.toml"),
        dir.path().join("engine.toml"),
    )
    .unwrap();
    dir
}

fn settings(work: &Path, memory_limit_mb: u64) -> EngineSettings {
    EngineSettings {
        program: referee(),
        memory_limit_mb,
        threads: 1,
        served_model_name: "referee-builtin".into(),
        pid_file: work.join("engines.pid"),
        confinement: Confinement {
            sandbox: Sandbox::detect(BackendKind::Docker, false, DEFAULT_ENGINE_UID).unwrap(),
            hidden: Vec::new(),
            ro_paths: Vec::new(),
            cpus: CpuPlan::for_this_process().unwrap(),
            log_bytes: receipts::model::Limits::ENGINE_LOG_BYTES,
        },
        readiness: vec!["/health".into()],
        env: BTreeMap::new(),
        baseline_image: None,
        decide: None,
    }
}

fn spec(command: &[&str]) -> DockerSpec {
    image();
    DockerSpec {
        image: Some(TAG.into()),
        command: command.iter().map(|s| (*s).to_owned()).collect(),
        env: BTreeMap::from([("CAMPAIGN_VAR".into(), "threads={threads}".into())]),
        tmpfs_mb: Some(8),
        ..DockerSpec::default()
    }
}

const SERVE: &[&str] = &[
    "referee",
    "engine",
    "serve",
    "--config",
    "{config}",
    "--host",
    "0.0.0.0",
    "--port",
    "{port}",
    "--memory-limit-mb",
    "{memory_mb}",
    "--threads",
    "{threads}",
    "--served-model-name",
    "referee-builtin",
];

/// Containers and networks on the daemon labelled with `scope`.
fn labelled(daemon: &Daemon, scope: &str) -> (usize, usize) {
    let docker = daemon.docker().clone();
    let filters: HashMap<&str, Vec<String>> =
        HashMap::from([("label", vec![format!("{SCOPE_LABEL}={scope}")])]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let containers = docker
            .list_containers(Some(
                bollard::query_parameters::ListContainersOptionsBuilder::new()
                    .all(true)
                    .filters(&filters)
                    .build(),
            ))
            .await
            .unwrap();
        let networks = docker
            .list_networks(Some(
                bollard::query_parameters::ListNetworksOptionsBuilder::new()
                    .filters(&filters)
                    .build(),
            ))
            .await
            .unwrap();
        (containers.len(), networks.len())
    })
}

/// Runs `script` under bash in a container of `memory_mb` MiB: the health check's
/// detail and log tail, and the typed exit. Checks nothing is left on the daemon.
fn died(script: &str, memory_mb: u64) -> (String, Vec<String>, Option<ContainerExit>) {
    let work = tempfile::tempdir().unwrap();
    let tree = tree();
    let backend = DockerBackend::new(
        daemon(),
        &spec(&["bash", "-c", script]),
        None,
        settings(work.path(), memory_mb),
    )
    .unwrap();
    let mut engine = backend.container(
        tree.path(),
        &tree.path().join("engine.toml"),
        &work.path().join("engine.log"),
        None,
    );
    engine.start().unwrap();
    let err = engine.wait_healthy(Duration::from_secs(60)).unwrap_err();
    engine.stop().unwrap();
    assert_eq!(labelled(&daemon(), backend.scope()), (0, 0), "leftovers");
    match err {
        EngineError::DiedBeforeHealthy { detail, log_tail } => {
            (detail, log_tail, engine.container_exit())
        }
        other => panic!("expected DiedBeforeHealthy, got {other:?}"),
    }
}

#[test]
#[ignore = "needs dockerd: run scripts/dockerd start target/dockerd; see the module docs"]
fn the_builtin_engine_serves_from_a_sandboxed_container() {
    let work = tempfile::tempdir().unwrap();
    let tree = tree();
    let connected = daemon();
    let version = connected.version().to_owned();
    // A declared read-only path is bound at its own path, and no other host path is.
    let declared = tempfile::tempdir().unwrap();
    let declared_path = declared.path().display().to_string();
    let spec = DockerSpec {
        ro_paths: vec![declared_path.clone()],
        ..spec(SERVE)
    };
    let backend = DockerBackend::new(connected, &spec, None, settings(work.path(), 256)).unwrap();
    assert_eq!(backend.image().image_id, image());
    assert_eq!(backend.image().manifest_digest, None);
    let log = work.path().join("logs/engine.log");
    let mut engine = backend.engine(tree.path(), &tree.path().join("engine.toml"), &log, None);
    engine.start().unwrap();
    engine.wait_healthy(Duration::from_secs(60)).unwrap();
    let endpoint = engine.endpoint().unwrap();
    assert!(
        endpoint.starts_with("http://") && endpoint.ends_with(":8000"),
        "{endpoint}"
    );
    let run = engine.docker().unwrap();
    assert_eq!(run.image_reference, TAG);
    assert_eq!(run.image_id, image());
    assert_eq!(run.daemon_version, version);
    assert_eq!(run.memory_bytes, 256 << 20);
    assert!(run.read_only_root && run.init && run.unprivileged && run.network_internal);
    assert_eq!(
        run.tmpfs,
        BTreeMap::from([("/tmp".into(), "rw,nosuid,nodev,size=8m".into())])
    );
    assert_eq!(
        run.binds,
        [
            format!("{}:/tree:ro", tree.path().display()),
            format!("{declared_path}:{declared_path}:ro")
        ]
    );
    assert_eq!(
        run.env_names,
        [
            "REFEREE_THREADS",
            "REFEREE_MEMORY_MB",
            "CAMPAIGN_VAR",
            "PATH"
        ]
    );
    let isolation = engine.isolation().unwrap();
    assert_eq!(isolation.sandbox, SandboxKind::Docker);
    assert_eq!(
        engine.command().unwrap(),
        SERVE
            .iter()
            .map(|a| match *a {
                "{config}" => "/tree/engine.toml".to_owned(),
                "{port}" => "8000".to_owned(),
                "{memory_mb}" => "256".to_owned(),
                "{threads}" => "1".to_owned(),
                other => other.to_owned(),
            })
            .collect::<Vec<_>>()
    );
    assert!(engine.is_running());
    engine.stop().unwrap();
    assert!(!engine.is_running());
    // The engine's own start-up line reached the log through the daemon's log stream.
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("listening on http://0.0.0.0:8000"), "{text}");
    assert_eq!(labelled(&daemon(), backend.scope()), (0, 0));
}

#[test]
#[ignore = "needs dockerd: run scripts/dockerd start target/dockerd; see the module docs"]
fn the_container_reaches_nothing_writes_only_tmp_and_sees_only_its_env() {
    let script = r#"
        probe() { timeout 3 bash -c "exec 3<>/dev/tcp/$1/80" 2>/dev/null; }
        probe 1.1.1.1 && echo outbound=open || echo outbound=blocked
        probe 10.0.0.1 && echo private=open || echo private=blocked
        (echo x > /probe) 2>/dev/null && echo root=writable || echo root=read-only
        (echo x > /tree/probe) 2>/dev/null && echo tree=writable || echo tree=read-only
        (echo x > /tmp/probe) 2>/dev/null && echo tmp=writable || echo tmp=read-only
        echo "uid=$UID"
        names=""; while IFS= read -r -d '' v; do names="$names ${v%%=*}"; done < /proc/1/environ
        echo "env:$names"
        exit 7"#;
    let (detail, tail, exit) = died(script, 128);
    assert_eq!(detail, "container exited with code 7");
    assert_eq!(exit, Some(ContainerExit::Exited { code: 7 }));
    assert_eq!(
        tail,
        [
            "outbound=blocked",
            "private=blocked",
            "root=read-only",
            "tree=read-only",
            "tmp=writable",
            "uid=990000",
            "env: PATH HOSTNAME REFEREE_THREADS REFEREE_MEMORY_MB CAMPAIGN_VAR HOME",
        ]
    );
}

/// A decide run's token (content/s1-pro-speed.md, On Docker): in its own container's
/// environment, replacing a campaign variable of its name; never in the command the
/// receipt records, and not in the next container of the same backend.
#[test]
#[ignore = "needs dockerd: run scripts/dockerd start target/dockerd; see the module docs"]
fn a_runs_secret_is_in_its_own_containers_environment_only() {
    let work = tempfile::tempdir().unwrap();
    let tree = tree();
    let script = r#"echo "token=${REFEREE_DECIDE_TOKEN:-none}"; exit 7"#;
    let mut spec = spec(&["bash", "-c", script]);
    spec.env
        .insert("REFEREE_DECIDE_TOKEN".into(), "the-campaigns".into());
    let backend = DockerBackend::new(daemon(), &spec, None, settings(work.path(), 128)).unwrap();
    let run = |secret: Option<&str>, n: u32| {
        let log = work.path().join(format!("engine-{n}.log"));
        let mut engine =
            backend.container(tree.path(), &tree.path().join("engine.toml"), &log, None);
        if let Some(secret) = secret {
            engine
                .set_secret_env("REFEREE_DECIDE_TOKEN", secret)
                .unwrap();
        }
        engine.start().unwrap();
        let command = engine.command().unwrap().to_vec();
        let names = engine.docker().unwrap().env_names;
        let err = engine.wait_healthy(Duration::from_secs(60)).unwrap_err();
        engine.stop().unwrap();
        let EngineError::DiedBeforeHealthy { log_tail, .. } = err else {
            panic!("expected DiedBeforeHealthy, got {err:?}");
        };
        (log_tail, command, names)
    };
    let (tail, command, names) = run(Some("run-1-secret"), 1);
    assert_eq!(tail, ["token=run-1-secret"]);
    assert!(
        !command.iter().any(|a| a.contains("run-1-secret")),
        "{command:?}"
    );
    assert_eq!(
        (names.iter())
            .filter(|n| *n == "REFEREE_DECIDE_TOKEN")
            .count(),
        1,
        "{names:?}"
    );
    // The next container of the backend was given no secret: it sees the campaign's.
    let (tail, _, _) = run(None, 2);
    assert_eq!(tail, ["token=the-campaigns"]);
    assert_eq!(labelled(&daemon(), backend.scope()), (0, 0), "leftovers");
}

#[test]
#[ignore = "needs dockerd: run scripts/dockerd start target/dockerd; see the module docs"]
fn a_container_that_exits_at_once_gives_its_last_50_lines() {
    let script =
        "for ((i=1; i<=60; i++)); do echo line $i >&2; done; echo 'CUDA out of memory' >&2; exit 1";
    let (detail, tail, _) = died(script, 128);
    assert_eq!(detail, "container exited with code 1");
    assert_eq!(tail.len(), LOG_TAIL_LINES);
    assert_eq!(tail[0], "line 12");
    assert_eq!(tail.last().map(String::as_str), Some("CUDA out of memory"));
}

/// A submission's built image, as `referee build` records it, with image id `id`.
fn built(id: &str) -> SubmissionImage {
    SubmissionImage {
        tag: "referee/tiny:built".into(),
        image_id: id.to_owned(),
        manifest_digest: None,
        build_log_sha256: Sha256Hex::digest(b""),
    }
}

#[test]
#[ignore = "needs dockerd: run scripts/dockerd start target/dockerd; see the module docs"]
fn a_submissions_image_runs_by_its_id_and_another_id_is_refused() {
    let work = tempfile::tempdir().unwrap();
    let tree = tree();
    // The backend resolves the campaign's image (a tag) at setup; a submission's entry
    // runs its own image by id instead.
    let backend = DockerBackend::new(
        daemon(),
        &spec(&["bash", "-c", "while :; do read -r -t 1 || :; done"]),
        None,
        settings(work.path(), 64),
    )
    .unwrap();
    let config = tree.path().join("engine.toml");
    let mut engine = backend.container(
        tree.path(),
        &config,
        &work.path().join("ok.log"),
        Some(&built(image())),
    );
    engine.start().unwrap();
    let run = engine.docker().unwrap();
    assert_eq!(
        (run.image_reference.as_str(), run.image_id.as_str()),
        ("referee/tiny:built", image())
    );
    engine.stop().unwrap();
    // An id the daemon answers with another id (a prefix of the real one) is refused:
    // the recorded id is what runs, or nothing.
    let short = &image()[..19];
    let mut engine = backend.container(
        tree.path(),
        &config,
        &work.path().join("short.log"),
        Some(&built(short)),
    );
    match engine.start() {
        Err(EngineError::Docker(DockerError::DigestMismatch {
            reference,
            expected,
            actual,
        })) => assert_eq!(
            (reference.as_str(), expected.as_str(), actual.as_str()),
            ("referee/tiny:built", short, image())
        ),
        other => panic!("expected DigestMismatch, got {other:?}"),
    }
    // An id the daemon does not hold.
    let zero = format!("sha256:{}", "0".repeat(64));
    let mut engine = backend.container(
        tree.path(),
        &config,
        &work.path().join("zero.log"),
        Some(&built(&zero)),
    );
    match engine.start() {
        Err(EngineError::Docker(DockerError::MissingImage { reference, message })) => {
            assert_eq!(reference, zero);
            assert_eq!(
                message,
                format!("no such image: {zero}: No such image: {zero}")
            );
        }
        other => panic!("expected MissingImage, got {other:?}"),
    }
    assert_eq!(labelled(&daemon(), backend.scope()), (0, 0));
}

#[test]
#[ignore = "needs dockerd: run scripts/dockerd start target/dockerd; see the module docs"]
fn a_container_over_its_memory_limit_is_oom_killed() {
    let (detail, _, exit) = died("s=x; while :; do s=\"$s$s\"; done", 32);
    assert_eq!(
        exit,
        Some(ContainerExit::OomKilled {
            code: 137,
            limit_mb: 32
        })
    );
    assert_eq!(
        detail,
        "container killed for running out of memory (limit 32 MiB, exit code 137)"
    );
}

#[test]
#[ignore = "needs dockerd: run scripts/dockerd start target/dockerd; see the module docs"]
fn a_missing_image_is_refused_with_the_daemons_message() {
    let err = daemon()
        .resolve_image("referee-test/absent:v0", false, &mut |_| {})
        .unwrap_err();
    match err {
        DockerError::MissingImage { reference, message } => {
            assert_eq!(reference, "referee-test/absent:v0");
            assert_eq!(
                message,
                "no such image: referee-test/absent:v0: No such image: referee-test/absent:v0"
            );
        }
        other => panic!("expected MissingImage, got {other:?}"),
    }
    // With pull allowed, the pull fails (no registry is reachable) and says why.
    let err = daemon()
        .resolve_image("referee-test/absent:v0", true, &mut |_| {})
        .unwrap_err();
    assert!(matches!(err, DockerError::MissingImage { .. }), "{err:?}");
}

#[test]
#[ignore = "needs dockerd: run scripts/dockerd start target/dockerd; see the module docs"]
fn an_image_that_is_not_the_pinned_one_is_refused() {
    let id = image();
    let zero = format!("sha256:{}", "0".repeat(64));
    // A digest reference the image does not carry.
    let err = daemon()
        .resolve_image(&format!("referee-test/engine@{zero}"), false, &mut |_| {})
        .unwrap_err();
    assert!(
        matches!(
            err,
            DockerError::MissingImage { .. } | DockerError::DigestMismatch { .. }
        ),
        "{err:?}"
    );
    // The campaign pins a config id the tag does not resolve to.
    let work = tempfile::tempdir().unwrap();
    let pinned = ImageRef {
        name: "referee-test/engine".into(),
        manifest_digest: zero.clone(),
        config_digest: Some(zero.clone()),
    };
    match DockerBackend::new(
        daemon(),
        &spec(SERVE),
        Some(&pinned),
        settings(work.path(), 256),
    ) {
        Err(DockerError::DigestMismatch {
            reference,
            expected,
            actual,
        }) => {
            assert_eq!(
                (reference.as_str(), expected.as_str(), actual.as_str()),
                (TAG, zero.as_str(), id)
            );
        }
        other => panic!("expected DigestMismatch, got {other:?}"),
    }
}

#[test]
#[ignore = "needs dockerd: run scripts/dockerd start target/dockerd; see the module docs"]
fn a_killed_runners_containers_are_swept() {
    let work = tempfile::tempdir().unwrap();
    let tree = tree();
    let backend = DockerBackend::new(
        daemon(),
        &spec(&["bash", "-c", "while :; do read -r -t 1 || :; done"]),
        None,
        settings(work.path(), 64),
    )
    .unwrap();
    let mut engine = backend.engine(
        tree.path(),
        &tree.path().join("engine.toml"),
        &work.path().join("engine.log"),
        None,
    );
    engine.start().unwrap();
    // A runner killed with SIGKILL runs no drop: forget the engine.
    std::mem::forget(engine);
    assert_eq!(labelled(&daemon(), backend.scope()), (1, 1));
    assert_eq!(backend.sweep_leftovers(), 1);
    assert_eq!(labelled(&daemon(), backend.scope()), (0, 0));
}

#[test]
#[ignore = "needs dockerd: run scripts/dockerd start target/dockerd; see the module docs"]
fn a_failing_build_is_typed_with_the_daemons_message() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("Dockerfile"),
        "FROM scratch\nCOPY missing.txt /\n",
    )
    .unwrap();
    let err = daemon()
        .build_image(
            context_tar(dir.path()).unwrap(),
            "Dockerfile",
            "referee-test/broken:x",
        )
        .unwrap_err();
    match err {
        DockerError::BuildFailed { tag, message, .. } => {
            assert_eq!(tag, "referee-test/broken:x");
            assert!(message.contains("missing.txt"), "{message}");
        }
        other => panic!("expected BuildFailed, got {other:?}"),
    }
}

/// A `docker save` tarball made by hand (the legacy layout `docker load` reads:
/// `manifest.json`, the image config, one uncompressed layer), tagged `tag`, holding one
/// file; with the image id the daemon must give it, `sha256:` and the sha256 of the
/// config's bytes.
fn saved_image(tag: &str) -> (Vec<u8>, String) {
    use sha2::{Digest, Sha256};
    fn tar_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut tar = tar::Builder::new(Vec::new());
        for (name, bytes) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(bytes.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            tar.append_data(&mut header, name, *bytes).unwrap();
        }
        tar.into_inner().unwrap()
    }
    let layer = tar_of(&[("loaded.txt", b"loaded from a tarball\n")]);
    let diff_id = hex::encode(Sha256::digest(&layer));
    let config = format!(
        r#"{{"architecture":"amd64","os":"linux","config":{{}},"rootfs":{{"type":"layers","diff_ids":["sha256:{diff_id}"]}}}}"#
    );
    let config_hex = hex::encode(Sha256::digest(config.as_bytes()));
    let manifest = format!(
        r#"[{{"Config":"{config_hex}.json","RepoTags":["{tag}"],"Layers":["{diff_id}/layer.tar"]}}]"#
    );
    let config_name = format!("{config_hex}.json");
    let layer_name = format!("{diff_id}/layer.tar");
    let tarball = tar_of(&[
        ("manifest.json", manifest.as_bytes()),
        (&config_name, config.as_bytes()),
        (&layer_name, &layer),
    ]);
    (tarball, format!("sha256:{config_hex}"))
}

/// `Daemon::load_image` is how an air-gapped pod gets its images (content/docker.md):
/// the tarball's image is on the daemon afterwards under its tag and the id its config
/// gives it, and the daemon's `Loaded image:` line comes back; a missing tarball is an
/// I/O error naming it, one the daemon cannot read is the daemon's refusal.
#[test]
#[ignore = "needs dockerd: run scripts/dockerd start target/dockerd; see the module docs"]
fn a_saved_image_is_loaded_under_its_tag_and_id() {
    const LOADED: &str = "referee-test/loaded:v1";
    let daemon = daemon();
    // Absent before, so the load below is what puts it there (a rerun finds it).
    let docker = daemon.docker().clone();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let removed = rt.block_on(
        docker.remove_image(
            LOADED,
            Some(
                bollard::query_parameters::RemoveImageOptionsBuilder::new()
                    .force(true)
                    .build(),
            ),
            None,
        ),
    );
    if let Err(e) = removed {
        assert!(
            e.to_string().contains("No such image"),
            "removing {LOADED}: {e}"
        );
    }
    assert!(matches!(
        daemon.resolve_image(LOADED, false, &mut |_| {}),
        Err(DockerError::MissingImage { .. })
    ));

    let dir = tempfile::tempdir().unwrap();
    let (tarball, image_id) = saved_image(LOADED);
    let path = dir.path().join("loaded.tar");
    std::fs::write(&path, &tarball).unwrap();
    assert_eq!(
        daemon.load_image(&path).unwrap(),
        [format!("Loaded image: {LOADED}")]
    );
    let resolved = daemon.resolve_image(LOADED, false, &mut |_| {}).unwrap();
    assert_eq!(resolved.image_id, image_id);
    assert_eq!(resolved.manifest_digest, None);

    let absent = dir.path().join("absent.tar");
    match daemon.load_image(&absent).unwrap_err() {
        DockerError::Io(e) => {
            assert_eq!((e.action, e.path), ("reading", absent));
        }
        other => panic!("expected Io, got {other:?}"),
    }

    let garbage = dir.path().join("garbage.tar");
    std::fs::write(&garbage, b"not a tarball").unwrap();
    match daemon.load_image(&garbage).unwrap_err() {
        DockerError::Daemon { action, message } => {
            assert_eq!(action, "loading the image");
            assert!(!message.is_empty());
        }
        other => panic!("expected Daemon, got {other:?}"),
    }
}
