//! `engine.docker` (content/docker.md, What the receipt records): every entry that
//! started on the Docker backend carries its image and its container's sandbox as the
//! daemon reported them back, and they are well-formed and what a sandboxed container of
//! the campaign has. Nothing here trusts the engine: the record is the runner's reading
//! of the daemon's `inspect`, and what this checks is that it says what the sandbox
//! promises, in a shape a reader can check against the registry. Against the campaign:
//! the baseline ran the campaign's image reference, `/tmp` is the campaign's tmpfs, and
//! the container's CPU set is the engine's recorded one.

use std::collections::BTreeMap;

use crate::{CheckName, FailureReason, VerifyReport};
use receipts::model::{
    Backend, BackendKind, CpuPinning, EngineRef, Entry, FrozenCampaign, RoundRecord,
    is_sha256_digest,
};

use crate::PredicateVersion;

/// Bytes per MiB.
const MIB: u64 = 1 << 20;

/// Runs `engine.docker` on every entry of `record` that started on the Docker backend
/// (one check per entry, `entries[i]` as target); with `campaign` (when
/// `inputs.campaign` passed) the memory limit is compared with the campaign's. Before v3
/// a Docker entry's check is not applicable.
pub(crate) fn check_docker(
    report: &mut VerifyReport,
    record: &RoundRecord,
    campaign: Option<&FrozenCampaign>,
    version: PredicateVersion,
) {
    let started = record
        .entries
        .iter()
        .filter(|e| e.engine.backend == BackendKind::Docker && e.engine.command.is_some());
    // The image id each reference resolved to, from the first entry naming it.
    let mut ids: BTreeMap<&str, &str> = BTreeMap::new();
    for entry in started {
        let target = Some(format!("entries[{}]", entry.index));
        if version < PredicateVersion::V3 {
            report.not_applicable(CheckName::EngineDocker, target, version.name());
            continue;
        }
        let memory_mb = campaign.map(|c| c.campaign.hardware.memory_limit_mb);
        let result = check_entry(entry.index, &entry.engine, memory_mb)
            .and_then(|()| check_cpuset(entry))
            .and_then(|()| campaign.map_or(Ok(()), |c| check_campaign(entry, c)))
            .and_then(|()| {
                let Some(docker) = &entry.engine.docker else {
                    return Ok(());
                };
                let first = *ids
                    .entry(docker.image_reference.as_str())
                    .or_insert(docker.image_id.as_str());
                if first == docker.image_id {
                    Ok(())
                } else {
                    Err(invalid(
                        entry.index,
                        "imageId",
                        format!(
                            "`{}` ran `{first}` in an earlier entry of this round and `{}` here",
                            docker.image_reference, docker.image_id
                        ),
                    ))
                }
            });
        report.record(CheckName::EngineDocker, target, result);
    }
}

/// The container's `cpusetCpus` of `entry` against its recorded isolation: the engine's
/// CPUs joined by `,` when it was pinned by a cpuset (how the runner asks the daemon),
/// empty when it was not pinned.
fn check_cpuset(entry: &Entry) -> Result<(), FailureReason> {
    let (Some(docker), Some(isolation)) = (&entry.engine.docker, &entry.engine.isolation) else {
        return Ok(());
    };
    let expected = match isolation.pinning {
        CpuPinning::None => String::new(),
        _ => (isolation.engine_cpus.iter())
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(","),
    };
    if docker.cpuset_cpus == expected {
        Ok(())
    } else {
        Err(invalid(
            entry.index,
            "cpusetCpus",
            format!(
                "`{}`, but the engine's recorded CPUs (isolation.engineCpus, pinning {:?}) \
                 give `{expected}`",
                docker.cpuset_cpus, isolation.pinning
            ),
        ))
    }
}

/// `entry`'s container against the campaign's `[backend]`: the baseline (no patch) ran
/// the campaign's image reference (`backend.image`, else the pinned `baseline.image` as
/// `name@digest`), the container got the campaign's GPUs (`backend.gpus`, the device ids
/// the runner requests, as the daemon reported them), and `/tmp` was the one tmpfs, of
/// the campaign's size, with the flags the runner sets.
fn check_campaign(entry: &Entry, frozen: &FrozenCampaign) -> Result<(), FailureReason> {
    let campaign = &frozen.campaign;
    let (Some(docker), Backend::Docker(spec)) = (&entry.engine.docker, &campaign.backend) else {
        return Ok(());
    };
    if entry.patch.is_none() {
        let pinned = campaign.baseline.image.as_ref();
        let expected = (spec.image.clone())
            .or_else(|| pinned.map(|image| format!("{}@{}", image.name, image.manifest_digest)));
        if expected.as_ref() != Some(&docker.image_reference) {
            return Err(invalid(
                entry.index,
                "imageReference",
                format!(
                    "`{}`, but the campaign's image is {}",
                    docker.image_reference,
                    expected.map_or_else(|| "none".to_owned(), |e| format!("`{e}`"))
                ),
            ));
        }
    }
    if docker.gpus != spec.gpus {
        return Err(invalid(
            entry.index,
            "gpus",
            format!(
                "{:?}, but the campaign's `[backend] gpus` are {:?}",
                docker.gpus, spec.gpus
            ),
        ));
    }
    let expected = BTreeMap::from([(
        "/tmp".to_owned(),
        format!("rw,nosuid,nodev,size={}m", spec.tmpfs_mb()),
    )]);
    if docker.tmpfs == expected {
        Ok(())
    } else {
        Err(invalid(
            entry.index,
            "tmpfs",
            format!(
                "{:?}, but the campaign's `/tmp` is {expected:?}",
                docker.tmpfs
            ),
        ))
    }
}

fn invalid(index: u32, field: &str, message: String) -> FailureReason {
    FailureReason::DockerRecord {
        field: format!("entries[{index}].engine.docker.{field}"),
        message,
    }
}

/// The record of entry `index` with engine `engine`: present, digests and versions well-formed, the sandbox flags set,
/// the memory limit the campaign's (`memory_mb`) and the one the entry records.
fn check_entry(
    index: u32,
    engine: &EngineRef,
    memory_mb: Option<u64>,
) -> Result<(), FailureReason> {
    let Some(d) = &engine.docker else {
        return Err(FailureReason::DockerRecord {
            field: format!("entries[{index}].engine.docker"),
            message: "absent for an entry that started on the Docker backend".into(),
        });
    };
    let bad = |field: &str, message: String| Err(invalid(index, field, message));
    if d.image_reference.trim().is_empty() {
        return bad("imageReference", "empty".into());
    }
    if !is_sha256_digest(&d.image_id) {
        return bad(
            "imageId",
            format!("`{}` is not `sha256:` and 64 hex digits", d.image_id),
        );
    }
    if let Some(m) = &d.manifest_digest
        && !is_sha256_digest(m)
    {
        return bad(
            "manifestDigest",
            format!("`{m}` is not `sha256:` and 64 hex digits"),
        );
    }
    if d.daemon_version.trim().is_empty() {
        return bad("daemonVersion", "empty".into());
    }
    if !is_api_version(&d.api_version) {
        return bad(
            "apiVersion",
            format!("`{}` is not `major.minor`", d.api_version),
        );
    }
    let flags = [
        ("readOnlyRoot", d.read_only_root),
        ("init", d.init),
        ("unprivileged", d.unprivileged),
        ("networkInternal", d.network_internal),
    ];
    if let Some((field, _)) = flags.iter().find(|(_, set)| !set) {
        return bad(
            field,
            "false: the container was not sandboxed as the backend promises".into(),
        );
    }
    if let Some(bind) = d.binds.iter().find(|b| !b.ends_with(":ro")) {
        return bad("binds", format!("`{bind}` is not read-only"));
    }
    if d.memory_bytes == 0 {
        return bad("memoryBytes", "0: the container had no memory limit".into());
    }
    for (source, mb) in [
        ("the entry", engine.memory_limit_mb),
        ("the campaign", memory_mb),
    ] {
        if let Some(mb) = mb
            && d.memory_bytes != mb.saturating_mul(MIB)
        {
            return bad(
                "memoryBytes",
                format!(
                    "{} bytes, but {source} gives {mb} MiB = {} bytes",
                    d.memory_bytes,
                    mb.saturating_mul(MIB)
                ),
            );
        }
    }
    if engine.image.is_some() != d.manifest_digest.is_some() {
        return bad(
            "manifestDigest",
            format!(
                "{}, but engine.image is {} (the runner names the image by its manifest \
                 digest exactly when the daemon reported one)",
                d.manifest_digest.as_deref().unwrap_or("absent"),
                if engine.image.is_some() {
                    "recorded"
                } else {
                    "absent"
                }
            ),
        );
    }
    if let Some(image) = &engine.image
        && !names_repository(&d.image_reference, &image.name)
    {
        return bad(
            "imageReference",
            format!(
                "`{}` is not of engine.image's repository `{}`",
                d.image_reference, image.name
            ),
        );
    }
    if let Some(image) = &engine.image
        && (Some(&image.manifest_digest) != d.manifest_digest.as_ref()
            || image.config_digest.as_ref() != Some(&d.image_id))
    {
        return bad(
            "manifestDigest",
            format!(
                "engine.image `{}@{}` does not name this container's image",
                image.name, image.manifest_digest
            ),
        );
    }
    Ok(())
}

/// Whether `reference` (`name`, `name:tag`, `name@digest` or `name:tag@digest`) is of
/// the repository `name`.
fn names_repository(reference: &str, name: &str) -> bool {
    reference
        .strip_prefix(name)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(':') || rest.starts_with('@'))
}

/// `major.minor`, both decimal.
fn is_api_version(version: &str) -> bool {
    version.split_once('.').is_some_and(|(major, minor)| {
        [major, minor]
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use receipts::model::DockerRun;

    /// A well-formed record.
    fn sample_run() -> DockerRun {
        DockerRun {
            image_reference: "engine:v1".into(),
            manifest_digest: None,
            image_id: format!("sha256:{}", "a".repeat(64)),
            daemon_version: "20.10.24+dfsg1".into(),
            api_version: "1.41".into(),
            memory_bytes: 512 * MIB,
            cpuset_cpus: "1".into(),
            gpus: Vec::new(),
            read_only_root: true,
            init: true,
            unprivileged: true,
            network: "referee-x".into(),
            network_internal: true,
            tmpfs: BTreeMap::from([("/tmp".into(), "rw,size=64m".into())]),
            binds: vec!["/data/trees/a:/tree:ro".into()],
            env_names: vec!["PATH".into(), "REFEREE_THREADS".into()],
        }
    }

    fn engine(docker: Option<DockerRun>) -> EngineRef {
        EngineRef {
            backend: BackendKind::Docker,
            config_sha256: receipts::model::Sha256Hex::digest(b""),
            image: None,
            command: Some(vec!["referee".into(), "engine".into(), "serve".into()]),
            isolation: None,
            api: None,
            memory_limit_mb: Some(512),
            docker,
        }
    }

    fn message(result: Result<(), FailureReason>) -> String {
        result.unwrap_err().to_string()
    }

    #[test]
    fn a_well_formed_record_passes() {
        check_entry(2, &engine(Some(sample_run())), Some(512)).unwrap();
    }

    #[test]
    fn each_defect_names_its_field() {
        assert_eq!(
            message(check_entry(2, &engine(None), None)),
            "`receipt.dsse.json` entries[2].engine.docker: absent for an entry that started on \
             the Docker backend"
        );
        let with = |f: fn(&mut DockerRun)| {
            let mut d = sample_run();
            f(&mut d);
            message(check_entry(2, &engine(Some(d)), Some(512)))
        };
        assert_eq!(
            with(|d| d.image_id = "sha256:abc".into()),
            "`receipt.dsse.json` entries[2].engine.docker.imageId: `sha256:abc` is not \
             `sha256:` and 64 hex digits"
        );
        assert_eq!(
            with(|d| d.api_version = "v1".into()),
            "`receipt.dsse.json` entries[2].engine.docker.apiVersion: `v1` is not `major.minor`"
        );
        assert_eq!(
            with(|d| d.network_internal = false),
            "`receipt.dsse.json` entries[2].engine.docker.networkInternal: false: the container \
             was not sandboxed as the backend promises"
        );
        assert_eq!(
            with(|d| d.binds.push("/weights:/weights:rw".into())),
            "`receipt.dsse.json` entries[2].engine.docker.binds: `/weights:/weights:rw` is not \
             read-only"
        );
        assert_eq!(
            with(|d| d.memory_bytes = 1024 * MIB),
            "`receipt.dsse.json` entries[2].engine.docker.memoryBytes: 1073741824 bytes, but the \
             entry gives 512 MiB = 536870912 bytes"
        );
        assert_eq!(
            with(|d| d.manifest_digest = Some("sha256:XY".into())),
            "`receipt.dsse.json` entries[2].engine.docker.manifestDigest: `sha256:XY` is not \
             `sha256:` and 64 hex digits"
        );
    }

    #[test]
    fn the_campaigns_memory_limit_is_compared_too() {
        let mut e = engine(Some(sample_run()));
        e.memory_limit_mb = None;
        assert_eq!(
            message(check_entry(2, &e, Some(256))),
            "`receipt.dsse.json` entries[2].engine.docker.memoryBytes: 536870912 bytes, but the \
             campaign gives 256 MiB = 268435456 bytes"
        );
    }
}
