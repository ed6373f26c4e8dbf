//! The fields of the round predicate that `referee verify` cannot recompute offline from
//! the bundle's own files: it checks that the evaluator signed them, and nothing more
//! (content/verifying.md, What is only attested). Every other leaf field of the current
//! predicate's schema is recomputed by a named check; the verifier's field-coverage test
//! (`tests/it/field_coverage.rs`) holds the two apart, so a new field is one or the
//! other. `referee show` and the site mark the numbers listed here "attested".

/// One attested field: its path in the predicate (`entries[].engine.command[]`: arrays
/// as `[]`, a map's values as `*`) and why no offline check can recompute it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttestedField {
    /// The field's path, as the schema's leaves are named.
    pub path: &'static str,
    /// Why it is attested rather than recomputed.
    pub reason: &'static str,
}

/// Why host facts are attested: the machine is gone when the bundle is read.
const HOST: &str = "a fact about the machine the round ran on, read from the host \
                    (`/proc`, `/sys`, the GPU driver) while it ran; no file of the bundle \
                    determines it";
/// Why the clock is attested: the runner's own clock.
const CLOCK: &str = "a time read from the runner's clock; the checks hold times in order \
                     (`timeline`) but cannot recompute them";
/// Why the runner's build is attested.
const BUILD: &str = "what build of referee sealed the round, as that build reports itself";
/// Why the engine's reports are attested.
const ENGINE: &str = "what the engine or its runtime reported, or how the runner started it \
                      on that host; a re-run (`verify --rerun`), not an offline check, \
                      shows it again";
/// Why a container's network name is attested.
const NETWORK: &str = "the name of the internal network the runner made for the \
                       container, unique on that host (the round's scope, the runner's pid, \
                       a counter and the clock); `engine.docker` requires it internal, but \
                       no file of the bundle determines the name";
/// Why the engine's uid is attested.
const UID: &str = "the host uid the engine ran as and whether it was the engine uid, which \
                   the runner set and the host's kernel enforced; `engine.sandbox` requires \
                   them recorded, but no file of the bundle determines them";
/// Why human-readable text is attested.
const TEXT: &str = "human-readable text for readers; the typed fields beside it are what \
                    the checks recompute";
/// Why the scorer's prompt-mismatch finding is attested.
const SCORER: &str = "the reference scorer's report of where its own tokenization of an \
                      item's prompt and the baseline's echo first differ \
                      (`reference_prompt_mismatch`, which fails the round); `verify` holds \
                      the entries' copies of the round's failure to it \
                      (`status.consistent`) but does not tokenize again";
/// Why an entry's prompt-echo finding is attested.
const ECHO: &str = "the reference scorer's report of where its own tokenization of an \
                    item's prompt and the entry's echo of it first differ \
                    (`prompt_echo_mismatch`); the echo is no file of the bundle, and \
                    `verify` does not tokenize again";
/// Why a refusal of an entry's generated ids is attested.
const REFUSED: &str = "the reference runtime's refusal of an entry's generated ids as the \
                       runner received it (its HTTP status, the run and item refused); the \
                       refused request is no file of the bundle, and no offline check runs \
                       the reference";
/// Why a step's phase and status are attested.
const STEP: &str = "the runner's account of its own steps, for readers; `timeline` holds \
                    the steps in order and inside the round, and what decides the round \
                    (the entries' statuses and typed reasons) is recomputed from the \
                    passes, not read from the steps";
/// Why a round's kind is attested in its own bundle.
const KIND: &str = "what the round was for, as the runner resolved it from the campaign's \
                    chain; `title.round` holds the entries it names to the round's seats, \
                    and `title.chain` recomputes it across the chain of a data directory, \
                    which one bundle does not hold";
/// Why a round's clock is attested.
const ROUND_CLOCK: &str = "which clock the runner read the round's times from; no file of \
                           the bundle tells a real clock from a virtual one";
/// Why the sealed capability gate's inputs are attested.
const SEALED: &str = "the sealed capability scorer's identity, the commitment to its sealed \
                      items and the score it returned; the items never leave the evaluator \
                      (not in the bundle, not in the data directory), so only a re-run with \
                      them can score again; `fastTrack.gates` and `fastTrack.decision` \
                      recompute the gates over the scores";
/// Why an entry's declared resources are attested.
const RESOURCES: &str = "what the entry's manifest declared it runs on; the round bundle \
                         holds no copy of the manifest, and `fastTrack.costs` recomputes the \
                         price from it at the campaign's prices";
/// Why a pod's nodes and GPUs are attested.
const SCHEDULER: &str = "the scheduler's name for the node and the GPUs it gave the agent \
                         (`CUDA_VISIBLE_DEVICES`), as the agent reported them; no file of the \
                         bundle can show which machine a cluster handed over";
/// Why the client's self-test figures are attested.
const SELF_TEST: &str = "measured by the load client against its built-in null server at \
                         setup; `client.selfTest` holds it to its bounds, not its values";

/// The attested fields of the current round predicate (`…/round/v5`), in schema order.
pub const ATTESTED_FIELDS: &[AttestedField] = &[
    AttestedField {
        path: "tool.name",
        reason: BUILD,
    },
    AttestedField {
        path: "tool.version",
        reason: BUILD,
    },
    AttestedField {
        path: "tool.gitCommit",
        reason: BUILD,
    },
    AttestedField {
        path: "tool.cpuFeatures[]",
        reason: BUILD,
    },
    AttestedField {
        path: "hardware.atStart.cpuModel",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atStart.cpuCount",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atStart.cpuFeatures[]",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atStart.memoryBytes",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atStart.os",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atStart.kernel",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atStart.gpus[].name",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atStart.gpus[].uuid",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atStart.gpus[].memoryBytes",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atStart.gpus[].driverVersion",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atStart.gpus[].computeCapability",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atStart.nvml.driver",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atStart.nvml.cuda",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atStart.nvml.gpus[].uuid",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atStart.nvml.gpus[].busId",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atStart.nvml.gpus[].vbios",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atStart.nvml.gpus[].powerLimitMw",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atEnd.cpuModel",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atEnd.cpuCount",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atEnd.cpuFeatures[]",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atEnd.memoryBytes",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atEnd.os",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atEnd.kernel",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atEnd.gpus[].name",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atEnd.gpus[].uuid",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atEnd.gpus[].memoryBytes",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atEnd.gpus[].driverVersion",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atEnd.gpus[].computeCapability",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atEnd.nvml.driver",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atEnd.nvml.cuda",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atEnd.nvml.gpus[].uuid",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atEnd.nvml.gpus[].busId",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atEnd.nvml.gpus[].vbios",
        reason: HOST,
    },
    AttestedField {
        path: "hardware.atEnd.nvml.gpus[].powerLimitMw",
        reason: HOST,
    },
    AttestedField {
        path: "startedAt",
        reason: CLOCK,
    },
    AttestedField {
        path: "endedAt",
        reason: CLOCK,
    },
    AttestedField {
        path: "steps[].startedAt",
        reason: CLOCK,
    },
    AttestedField {
        path: "steps[].endedAt",
        reason: CLOCK,
    },
    AttestedField {
        path: "steps[].name",
        reason: TEXT,
    },
    AttestedField {
        path: "steps[].group",
        reason: TEXT,
    },
    AttestedField {
        path: "steps[].phase",
        reason: STEP,
    },
    AttestedField {
        path: "steps[].status",
        reason: STEP,
    },
    AttestedField {
        path: "entries[].startedAt",
        reason: CLOCK,
    },
    AttestedField {
        path: "entries[].endedAt",
        reason: CLOCK,
    },
    AttestedField {
        path: "entries[].engine.command[]",
        reason: ENGINE,
    },
    AttestedField {
        path: "entries[].engine.isolation.engineCpus[]",
        reason: HOST,
    },
    AttestedField {
        path: "entries[].engine.isolation.clientCpus[]",
        reason: HOST,
    },
    AttestedField {
        path: "entries[].engine.isolation.ownUid",
        reason: UID,
    },
    AttestedField {
        path: "entries[].engine.isolation.uid",
        reason: UID,
    },
    AttestedField {
        path: "entries[].engine.docker.daemonVersion",
        reason: ENGINE,
    },
    AttestedField {
        path: "entries[].engine.docker.apiVersion",
        reason: ENGINE,
    },
    AttestedField {
        path: "entries[].engine.docker.network",
        reason: NETWORK,
    },
    AttestedField {
        path: "entries[].engine.docker.envNames[]",
        reason: ENGINE,
    },
    AttestedField {
        path: "entries[].disqualification.detail",
        reason: TEXT,
    },
    AttestedField {
        path: "entries[].disqualification.reason.engine_oom_killed.exitCode",
        reason: ENGINE,
    },
    AttestedField {
        path: "entries[].disqualification.reason.invalid_token_id.item",
        reason: REFUSED,
    },
    AttestedField {
        path: "entries[].disqualification.reason.invalid_token_id.run",
        reason: REFUSED,
    },
    AttestedField {
        path: "entries[].disqualification.reason.invalid_token_id.status",
        reason: REFUSED,
    },
    AttestedField {
        path: "entries[].disqualification.reason.prompt_echo_mismatch.expected",
        reason: ECHO,
    },
    AttestedField {
        path: "entries[].disqualification.reason.prompt_echo_mismatch.got",
        reason: ECHO,
    },
    AttestedField {
        path: "entries[].disqualification.reason.prompt_echo_mismatch.item",
        reason: ECHO,
    },
    AttestedField {
        path: "entries[].disqualification.reason.prompt_echo_mismatch.position",
        reason: ECHO,
    },
    AttestedField {
        path: "entries[].infraFailure.detail",
        reason: TEXT,
    },
    AttestedField {
        path: "entries[].passes[].hostLoad.stealMs",
        reason: HOST,
    },
    AttestedField {
        path: "entries[].passes[].hostLoad.wallMs",
        reason: CLOCK,
    },
    AttestedField {
        path: "entries[].passes[].hostLoad.cpuFreqKhz[].cpu",
        reason: HOST,
    },
    AttestedField {
        path: "entries[].passes[].hostLoad.cpuFreqKhz[].khz",
        reason: HOST,
    },
    AttestedField {
        path: "entries[].runs[].hostLoad.cpuFreqKhz[].cpu",
        reason: HOST,
    },
    AttestedField {
        path: "entries[].runs[].hostLoad.cpuFreqKhz[].khz",
        reason: HOST,
    },
    AttestedField {
        path: "drift.runs[].hostLoad.stealMs",
        reason: HOST,
    },
    AttestedField {
        path: "drift.runs[].hostLoad.wallMs",
        reason: CLOCK,
    },
    AttestedField {
        path: "drift.runs[].hostLoad.cpuFreqKhz[].cpu",
        reason: HOST,
    },
    AttestedField {
        path: "drift.runs[].hostLoad.cpuFreqKhz[].khz",
        reason: HOST,
    },
    AttestedField {
        path: "clientSelfTest.achievedMilliRps",
        reason: SELF_TEST,
    },
    AttestedField {
        path: "clientSelfTest.requests",
        reason: SELF_TEST,
    },
    AttestedField {
        path: "clientSelfTest.connections",
        reason: SELF_TEST,
    },
    AttestedField {
        path: "clientSelfTest.inFlightMax",
        reason: SELF_TEST,
    },
    AttestedField {
        path: "clientSelfTest.sendLagP50Us",
        reason: SELF_TEST,
    },
    AttestedField {
        path: "clientSelfTest.sendLagP99Us",
        reason: SELF_TEST,
    },
    AttestedField {
        path: "clientSelfTest.scheduling.priority",
        reason: HOST,
    },
    AttestedField {
        path: "capabilityProbe.durationMs",
        reason: CLOCK,
    },
    AttestedField {
        path: "capabilityProbe.findings[].detail",
        reason: TEXT,
    },
    AttestedField {
        path: "outcome.reason.item",
        reason: SCORER,
    },
    AttestedField {
        path: "outcome.reason.position",
        reason: SCORER,
    },
    AttestedField {
        path: "outcome.reason.reference",
        reason: SCORER,
    },
    AttestedField {
        path: "outcome.reason.baseline",
        reason: SCORER,
    },
    AttestedField {
        path: "inputs[].uri",
        reason: TEXT,
    },
    AttestedField {
        path: "clock",
        reason: ROUND_CLOCK,
    },
    AttestedField {
        path: "kind",
        reason: KIND,
    },
    AttestedField {
        path: "kind.name",
        reason: KIND,
    },
    AttestedField {
        path: "kind.challenger.miner",
        reason: KIND,
    },
    AttestedField {
        path: "kind.challenger.patch",
        reason: KIND,
    },
    AttestedField {
        path: "kind.holder",
        reason: KIND,
    },
    AttestedField {
        path: "kind.holder.miner",
        reason: KIND,
    },
    AttestedField {
        path: "kind.holder.patch",
        reason: KIND,
    },
    AttestedField {
        path: "fastTrack.scorerSha256",
        reason: SEALED,
    },
    AttestedField {
        path: "fastTrack.sealedSetCommitment",
        reason: SEALED,
    },
    AttestedField {
        path: "fastTrack.entries[].capabilityPpm",
        reason: SEALED,
    },
    AttestedField {
        path: "fastTrack.entries[].resources.gpus",
        reason: RESOURCES,
    },
    AttestedField {
        path: "fastTrack.entries[].resources.gpuClass",
        reason: RESOURCES,
    },
    AttestedField {
        path: "fastTrack.entries[].resources.cpus",
        reason: RESOURCES,
    },
    AttestedField {
        path: "fastTrack.entries[].resources.memoryGib",
        reason: RESOURCES,
    },
    AttestedField {
        path: "pod.allocations[].nodes",
        reason: SCHEDULER,
    },
    AttestedField {
        path: "pod.allocations[].gpus",
        reason: SCHEDULER,
    },
    AttestedField {
        path: "parallel.devices[].uuid",
        reason: HOST,
    },
    AttestedField {
        path: "parallel.devices[].busId",
        reason: HOST,
    },
];
