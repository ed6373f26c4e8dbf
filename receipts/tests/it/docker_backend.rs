//! The campaign's `[backend] kind = "docker"` (content/docker.md): the bare form of
//! older campaigns still parses and writes back unchanged (their digest is kept), and
//! every field round-trips.

use receipts::model::{Backend, Campaign, DockerSpec};

/// examples/demo/campaign.toml with its `[backend]` table replaced by `backend`.
fn campaign_with(backend: &str) -> Result<Campaign, receipts::model::ModelError> {
    let demo = include_str!("../../../examples/demo/campaign.toml");
    let text = demo.replace("[backend]\nkind = \"builtin\"\n", backend);
    assert_ne!(text, demo, "the demo campaign's [backend] table moved");
    let text = text.replace(
        "engine_config_path = \"engine.toml\"\n",
        "engine_config_path = \"engine.toml\"\nimage = { name = \"engine\", manifest_digest = \"sha256:0000000000000000000000000000000000000000000000000000000000000000\" }\n",
    );
    Campaign::from_toml("campaign.toml", &text)
}

#[test]
fn a_bare_docker_backend_parses_and_writes_back_bare() {
    let campaign = campaign_with("[backend]\nkind = \"docker\"\n").unwrap();
    assert_eq!(campaign.backend, Backend::Docker(DockerSpec::default()));
    let written = campaign.to_toml().unwrap();
    assert!(
        written.contains("[backend]\nkind = \"docker\"\n\n"),
        "{written}"
    );
    let spec = DockerSpec::default();
    assert_eq!((spec.port(), spec.tmpfs_mb()), (8000, 64));
}

#[test]
fn every_docker_field_round_trips() {
    let table = "[backend]\nkind = \"docker\"\nimage = \"engine:v1\"\ncommand = [\"referee\", \"engine\", \"serve\", \"--config\", \"{config}\", \"--port\", \"{port}\"]\nport = 9000\ngpus = [\"0\", \"GPU-1234\"]\nweights = \"/srv/weights\"\ntmpfs_mb = 16\nregistry = \"registry.example/engines\"\n\n[backend.env]\nHF_HUB_OFFLINE = \"1\"\n";
    let campaign = campaign_with(table).unwrap();
    let Backend::Docker(spec) = &campaign.backend else {
        panic!("not docker: {:?}", campaign.backend);
    };
    assert_eq!(spec.image.as_deref(), Some("engine:v1"));
    assert_eq!((spec.port(), spec.tmpfs_mb()), (9000, 16));
    assert_eq!(spec.gpus, ["0", "GPU-1234"]);
    assert_eq!(
        spec.env.get("HF_HUB_OFFLINE").map(String::as_str),
        Some("1")
    );
    let again = Campaign::from_toml("again.toml", &campaign.to_toml().unwrap()).unwrap();
    assert_eq!(again.backend, campaign.backend);
}

#[test]
fn bad_docker_fields_are_refused_with_the_field() {
    for (table, field) in [
        ("[backend]\nkind = \"docker\"\nport = 0\n", "backend.port"),
        (
            "[backend]\nkind = \"docker\"\ntmpfs_mb = 0\n",
            "backend.tmpfs_mb",
        ),
    ] {
        let err = campaign_with(table).unwrap_err().to_string();
        assert!(err.contains(field), "{field}: {err}");
    }
    let err = campaign_with("[backend]\nkind = \"docker\"\nnetwork = \"host\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown field `network`"), "{err}");
}
