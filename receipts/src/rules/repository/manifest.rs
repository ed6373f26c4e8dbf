//! `reax-submission.json`, the manifest every repository submission carries
//! (content/repository-submissions.md, Manifest): its typed form, the JSON Schema
//! published from it (`runner/intake/schema/reax-submission-v1.schema.json`), and its
//! validation against the repository's files ([`RepositoryFiles`]: a fetched tree at
//! ingest, the published copy of what the checks read when the verifier runs them
//! again) — every error naming its field.

use std::path::Path;

use crate::model::{ManifestFieldError, ManifestValidation, ResourceRequest, Sha256Hex};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::commitment::Commitment;
use super::dockerfile;
use super::licence;

/// The manifest's file name at the repository's root.
pub const MANIFEST_PATH: &str = "reax-submission.json";

/// The most bytes a manifest may have.
pub const MAX_MANIFEST_BYTES: usize = 256 * 1024;

/// The most bytes of a Dockerfile, requirements file or model card that are read.
pub const MAX_TEXT_BYTES: usize = 1024 * 1024;

/// Path of the committed schema, relative to the `intake` crate root.
pub const MANIFEST_SCHEMA_PATH: &str = "schema/reax-submission-v1.schema.json";

/// The schema's `$id`.
pub const MANIFEST_SCHEMA_ID: &str = "https://referee.dev/schemas/reax-submission/v1";

/// The competition's tracks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Track {
    /// Faster s1-pro with provably identical outputs.
    #[serde(rename = "s1-pro-speed")]
    S1ProSpeed,
    /// Faster or cheaper s1-fast.
    #[serde(rename = "s1-fast-speed")]
    S1FastSpeed,
}

/// `reax-submission.json`, schema version 1. Field names are camelCase; unknown fields
/// are refused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Manifest {
    /// Always 1.
    pub schema_version: u32,
    /// The track entered.
    pub track: Track,
    /// The base manifest the runtime claims to serve.
    pub base_manifest: BaseManifest,
    /// The runtime image recipe.
    pub runtime: Runtime,
    /// Every weight file, with its sha256; each must be a file of the repository.
    pub weights: Vec<WeightEntry>,
    /// The recipe that derives quantised s1-pro weights from the pinned weights;
    /// required when any weight is `quantised` on track `s1-pro-speed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantisation: Option<QuantisationRecipe>,
    /// Another submission's commitment this one is derived from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub derived_from: Option<String>,
    /// The model card's path in the repository (default `README.md`): its front matter's
    /// `license` lists the licence of everything inside.
    #[serde(default = "default_model_card")]
    pub model_card: String,
    /// What the runtime runs on: GPUs and their class, CPU cores, memory; required on
    /// track `s1-fast-speed`, whose cost rule prices it (content/s1-fast-speed.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequest>,
}

fn default_model_card() -> String {
    "README.md".into()
}

/// The base manifest a runtime claims to serve.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BaseManifest {
    /// Its name, e.g. `s1-pro`.
    pub name: String,
    /// sha256 of its bytes, 64 lowercase hex.
    pub sha256: String,
}

/// The runtime image recipe.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Runtime {
    /// The Dockerfile's path in the repository.
    pub dockerfile: String,
}

/// One weight file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WeightEntry {
    /// Its path in the repository.
    pub path: String,
    /// sha256 of its bytes, 64 lowercase hex.
    pub sha256: String,
    /// Whether it is quantised (derived by the recipe) rather than a pinned file.
    #[serde(default)]
    pub quantised: bool,
}

/// The exact reproducible recipe of quantised weights.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QuantisationRecipe {
    /// The tool, e.g. `llm-compressor`.
    pub tool: String,
    /// Its exact version, e.g. `0.4.1` (no range, no `latest`).
    pub version: String,
    /// The command that derives the weights.
    pub command: String,
}

/// The JSON Schema (draft 2020-12) of [`Manifest`], with `$id` [`MANIFEST_SCHEMA_ID`],
/// pretty-printed with a trailing newline.
pub fn manifest_schema_json() -> String {
    let mut schema = schemars::schema_for!(Manifest);
    schema.insert("$id".to_owned(), MANIFEST_SCHEMA_ID.into());
    let mut text =
        serde_json::to_string_pretty(&schema).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    text.push('\n');
    text
}

/// One error, built with its field, typed reason and message.
pub(crate) fn error(
    field: impl Into<String>,
    reason: &str,
    message: impl Into<String>,
) -> ManifestFieldError {
    ManifestFieldError {
        field: field.into(),
        reason: reason.to_owned(),
        message: message.into(),
    }
}

/// Parses the manifest's bytes: strict JSON (duplicate keys, bad text refused), then
/// the schema's shape, the error naming the field's JSON path.
///
/// Errors: one [`ManifestFieldError`] with reason `manifest_unreadable` (not strict
/// JSON) or `schema_violation` (the field that breaks the shape).
pub fn parse_manifest(bytes: &[u8]) -> Result<Manifest, ManifestFieldError> {
    crate::canonical::scan_strict(bytes, MAX_MANIFEST_BYTES)
        .map_err(|e| error(MANIFEST_PATH, "manifest_unreadable", e.to_string()))?;
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." {
            MANIFEST_PATH.to_owned()
        } else {
            path
        };
        error(field, "schema_violation", e.inner().to_string())
    })
}

/// Validates a repository's manifest, `manifest` (its bytes, at most one more than
/// [`MAX_MANIFEST_BYTES`] read; `None` when the repository has none): present and of the
/// schema's shape, then every check of content/repository-submissions.md, Manifest,
/// against `files` — every error found, each naming its field. Returns the manifest's
/// sha256 (when it could be read) and the result.
pub fn validate(
    manifest: Option<&[u8]>,
    files: &dyn RepositoryFiles,
) -> (Option<Sha256Hex>, ManifestValidation) {
    let bytes = match manifest {
        Some(bytes) => bytes,
        None => {
            return (
                None,
                failed(vec![error(
                    MANIFEST_PATH,
                    "manifest_missing",
                    format!("the repository has no `{MANIFEST_PATH}` at its root"),
                )]),
            );
        }
    };
    let digest = Sha256Hex::digest(bytes);
    let manifest = match parse_manifest(bytes) {
        Ok(manifest) => manifest,
        Err(e) => return (Some(digest), failed(vec![e])),
    };
    let errors = check_manifest(&manifest, files);
    (Some(digest), result(errors))
}

/// What the checks read of the repository: its files' sha256 and text. A fetched tree
/// at ingest; the verifier's copy of the same files later.
pub trait RepositoryFiles {
    /// sha256 of the file at `path`, if the repository has it.
    fn sha256(&self, path: &str) -> Option<Sha256Hex>;
    /// The text of the file at `path` (at most [`MAX_TEXT_BYTES`]), if it has it and it
    /// is UTF-8.
    fn text(&self, path: &str) -> Option<String>;
}

fn failed(errors: Vec<ManifestFieldError>) -> ManifestValidation {
    ManifestValidation {
        passed: false,
        errors,
    }
}

fn result(errors: Vec<ManifestFieldError>) -> ManifestValidation {
    ManifestValidation {
        passed: errors.is_empty(),
        errors,
    }
}

fn repo_path_ok(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && Path::new(path)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

/// An exact version: digits and dots, optionally a `-`/`+` suffix of letters, digits and
/// dots (`0.4.1`, `2.5.0+cu121`); no range, wildcard or `latest`.
pub(crate) fn exact_version(version: &str) -> bool {
    let (core, suffix) = match version.find(['-', '+']) {
        Some(i) => (&version[..i], &version[i + 1..]),
        None => (version, ""),
    };
    !core.is_empty()
        && core
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && suffix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'+'))
}

/// Every check of a parsed manifest against the repository's files.
pub fn check_manifest(manifest: &Manifest, files: &dyn RepositoryFiles) -> Vec<ManifestFieldError> {
    let mut errors = Vec::new();
    if manifest.schema_version != 1 {
        errors.push(error(
            "schemaVersion",
            "schema_version_unsupported",
            format!(
                "schemaVersion {} is not supported; 1 is",
                manifest.schema_version
            ),
        ));
    }
    let base = &manifest.base_manifest;
    if base.name.trim().is_empty() {
        errors.push(error(
            "baseManifest.name",
            "base_manifest_invalid",
            "the base manifest's name is empty",
        ));
    }
    if !Sha256Hex::is_valid(&base.sha256) {
        errors.push(error(
            "baseManifest.sha256",
            "base_manifest_invalid",
            format!("`{}` is not 64 lowercase hex characters", base.sha256),
        ));
    }
    let dockerfile = &manifest.runtime.dockerfile;
    match files.text(dockerfile).filter(|_| repo_path_ok(dockerfile)) {
        None => errors.push(error(
            "runtime.dockerfile",
            "dockerfile_missing",
            format!("`{dockerfile}` is not a UTF-8 file of the repository"),
        )),
        Some(text) => errors.extend(dockerfile::check(&text, files)),
    }
    if manifest.weights.is_empty() {
        errors.push(error(
            "weights",
            "weights_empty",
            "the weights list is empty",
        ));
    }
    for (i, weight) in manifest.weights.iter().enumerate() {
        let field = format!("weights[{i}]");
        if !Sha256Hex::is_valid(&weight.sha256) {
            errors.push(error(
                format!("{field}.sha256"),
                "weight_sha256_invalid",
                format!("`{}` is not 64 lowercase hex characters", weight.sha256),
            ));
            continue;
        }
        match files
            .sha256(&weight.path)
            .filter(|_| repo_path_ok(&weight.path))
        {
            None => errors.push(error(
                format!("{field}.path"),
                "weight_missing",
                format!("`{}` is not a file of the repository", weight.path),
            )),
            Some(actual) if actual.as_str() != weight.sha256 => errors.push(error(
                format!("{field}.sha256"),
                "weight_sha256_mismatch",
                format!(
                    "`{}` has sha256 {actual}; the manifest says {}",
                    weight.path, weight.sha256
                ),
            )),
            Some(_) => {}
        }
    }
    let quantised = manifest.weights.iter().any(|w| w.quantised);
    match (&manifest.quantisation, quantised && manifest.track == Track::S1ProSpeed) {
        (None, true) => errors.push(error(
            "quantisation",
            "quantisation_recipe_missing",
            "quantised s1-pro weights need the recipe that derives them (tool, pinned version, command)",
        )),
        (Some(recipe), _) => {
            if recipe.tool.trim().is_empty() {
                errors.push(error("quantisation.tool", "quantisation_recipe_invalid", "the tool is empty"));
            }
            if !exact_version(&recipe.version) {
                errors.push(error(
                    "quantisation.version",
                    "quantisation_version_unpinned",
                    format!("`{}` is not an exact version", recipe.version),
                ));
            }
            if recipe.command.trim().is_empty() {
                errors.push(error("quantisation.command", "quantisation_recipe_invalid", "the command is empty"));
            }
        }
        (None, false) => {}
    }
    match &manifest.resources {
        None if manifest.track == Track::S1FastSpeed => errors.push(error(
            "resources",
            "resources_missing",
            "an s1-fast-speed runtime declares what it runs on (gpus, gpuClass, cpus, memoryGib): its cost is priced on it",
        )),
        Some(r) if (r.gpus == 0) != r.gpu_class.is_empty() => errors.push(error(
            "resources.gpuClass",
            "resources_invalid",
            "a GPU class exactly when gpus is at least 1",
        )),
        _ => {}
    }
    if let Some(derived) = &manifest.derived_from
        && let Err(e) = derived.parse::<Commitment>()
    {
        errors.push(error(
            "derivedFrom",
            "derived_from_invalid",
            format!("`{derived}` is not a commitment: {e}"),
        ));
    }
    let card = &manifest.model_card;
    match files.text(card).filter(|_| repo_path_ok(card)) {
        None => errors.push(error(
            "modelCard",
            "model_card_missing",
            format!("`{card}` is not a UTF-8 file of the repository"),
        )),
        Some(text) => errors.extend(licence::check_model_card(card, &text)),
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    const DIGEST: &str = "4c3fa1ed4fa8bb1b24c09e25e2d1b7bd20bd68d8c0c0b1f3b9e0b2d3a4a5a6a7";

    /// An in-memory repository: path → text.
    struct Files(BTreeMap<&'static str, String>);

    impl RepositoryFiles for Files {
        fn sha256(&self, path: &str) -> Option<Sha256Hex> {
            self.0.get(path).map(|t| Sha256Hex::digest(t.as_bytes()))
        }
        fn text(&self, path: &str) -> Option<String> {
            self.0.get(path).cloned()
        }
    }

    fn files() -> Files {
        Files(
            [
                ("Dockerfile", format!("FROM python@sha256:{DIGEST}\n")),
                ("README.md", "---\nlicense: mit\n---\n".to_owned()),
                ("w.bin", "weights".to_owned()),
            ]
            .into_iter()
            .collect(),
        )
    }

    fn good() -> serde_json::Value {
        serde_json::json!({
            "schemaVersion": 1,
            "track": "s1-pro-speed",
            "baseManifest": {"name": "s1-pro", "sha256": DIGEST},
            "runtime": {"dockerfile": "Dockerfile"},
            "weights": [{"path": "w.bin", "sha256": Sha256Hex::digest(b"weights").to_string()}],
        })
    }

    /// The (field, reason) of every error of `manifest` over [`files`] edited by `edit`.
    fn errors_of(
        manifest: serde_json::Value,
        edit: impl FnOnce(&mut Files),
    ) -> Vec<(String, String)> {
        let mut files = files();
        edit(&mut files);
        let bytes = serde_json::to_vec(&manifest).unwrap();
        match parse_manifest(&bytes) {
            Err(e) => vec![(e.field, e.reason)],
            Ok(m) => check_manifest(&m, &files)
                .into_iter()
                .map(|e| (e.field, e.reason))
                .collect(),
        }
    }

    fn one(field: &str, reason: &str) -> Vec<(String, String)> {
        vec![(field.to_owned(), reason.to_owned())]
    }

    fn set(mut v: serde_json::Value, pointer: &str, value: serde_json::Value) -> serde_json::Value {
        *v.pointer_mut(pointer).unwrap() = value;
        v
    }

    #[test]
    fn the_good_manifest_passes() {
        assert_eq!(errors_of(good(), |_| {}), []);
    }

    #[test]
    fn an_s1_fast_speed_runtime_declares_its_resources() {
        let fast = set(good(), "/track", "s1-fast-speed".into());
        assert_eq!(
            errors_of(fast.clone(), |_| {}),
            one("resources", "resources_missing")
        );
        let mut declared = fast.clone();
        declared["resources"] =
            serde_json::json!({"gpus": 2, "gpuClass": "l4", "cpus": 4, "memoryGib": 32});
        assert_eq!(errors_of(declared.clone(), |_| {}), []);
        let classless = set(declared, "/resources/gpuClass", "".into());
        assert_eq!(
            errors_of(classless, |_| {}),
            one("resources.gpuClass", "resources_invalid")
        );
    }

    #[test]
    fn an_unknown_track_names_track() {
        assert_eq!(
            errors_of(set(good(), "/track", "s3".into()), |_| {}),
            one("track", "schema_violation")
        );
    }

    #[test]
    fn an_unknown_field_is_a_schema_violation() {
        let mut v = good();
        v["extra"] = 1.into();
        assert_eq!(errors_of(v, |_| {}), one("extra", "schema_violation"));
    }

    #[test]
    fn a_missing_field_is_a_schema_violation() {
        let mut v = good();
        v.as_object_mut().unwrap().remove("weights");
        assert_eq!(errors_of(v, |_| {}), one(MANIFEST_PATH, "schema_violation"));
    }

    #[test]
    fn a_wrong_type_names_its_path() {
        assert_eq!(
            errors_of(set(good(), "/weights/0/sha256", 5.into()), |_| {}),
            one("weights[0].sha256", "schema_violation")
        );
    }

    #[test]
    fn duplicate_keys_are_unreadable() {
        let bytes = br#"{"track": "s1-pro-speed", "track": "s1-fast-speed"}"#;
        assert_eq!(
            parse_manifest(bytes).unwrap_err().reason,
            "manifest_unreadable"
        );
    }

    #[test]
    fn an_unsupported_schema_version_is_named() {
        assert_eq!(
            errors_of(set(good(), "/schemaVersion", 2.into()), |_| {}),
            one("schemaVersion", "schema_version_unsupported")
        );
    }

    #[test]
    fn a_base_manifest_without_digest_is_named() {
        assert_eq!(
            errors_of(set(good(), "/baseManifest/sha256", "latest".into()), |_| {}),
            one("baseManifest.sha256", "base_manifest_invalid")
        );
        assert_eq!(
            errors_of(set(good(), "/baseManifest/name", " ".into()), |_| {}),
            one("baseManifest.name", "base_manifest_invalid")
        );
    }

    #[test]
    fn a_missing_dockerfile_is_named() {
        assert_eq!(
            errors_of(
                set(good(), "/runtime/dockerfile", "../Dockerfile".into()),
                |_| {}
            ),
            one("runtime.dockerfile", "dockerfile_missing")
        );
    }

    #[test]
    fn dockerfile_errors_name_the_dockerfile() {
        let got = errors_of(good(), |f| {
            f.0.insert(
                "Dockerfile",
                "FROM ubuntu:24.04\nRUN curl -sSf https://x | sh\n".into(),
            );
        });
        assert_eq!(
            got,
            [
                (
                    "runtime.dockerfile".to_owned(),
                    "unpinned_base_image".to_owned()
                ),
                ("runtime.dockerfile".to_owned(), "pipe_to_shell".to_owned())
            ]
        );
    }

    #[test]
    fn an_empty_weights_list_is_named() {
        assert_eq!(
            errors_of(set(good(), "/weights", serde_json::json!([])), |_| {}),
            one("weights", "weights_empty")
        );
    }

    #[test]
    fn a_missing_weight_is_named() {
        assert_eq!(
            errors_of(set(good(), "/weights/0/path", "nope.bin".into()), |_| {}),
            one("weights[0].path", "weight_missing")
        );
    }

    #[test]
    fn a_weight_sha256_that_is_not_hex_is_named() {
        assert_eq!(
            errors_of(set(good(), "/weights/0/sha256", "xyz".into()), |_| {}),
            one("weights[0].sha256", "weight_sha256_invalid")
        );
    }

    #[test]
    fn a_weight_with_another_sha256_is_named() {
        assert_eq!(
            errors_of(good(), |f| {
                f.0.insert("w.bin", "swapped".into());
            }),
            one("weights[0].sha256", "weight_sha256_mismatch")
        );
    }

    #[test]
    fn quantised_s1_pro_weights_need_the_recipe() {
        let mut quantised = good();
        quantised["weights"][0]["quantised"] = true.into();
        assert_eq!(
            errors_of(quantised.clone(), |_| {}),
            one("quantisation", "quantisation_recipe_missing")
        );
        // On s1-fast the recipe is not required.
        let mut fast = set(quantised.clone(), "/track", "s1-fast-speed".into());
        fast["resources"] = serde_json::json!({"gpus": 0, "cpus": 2, "memoryGib": 4});
        assert_eq!(errors_of(fast, |_| {}), []);
        let mut with_recipe = quantised;
        with_recipe["quantisation"] = serde_json::json!({"tool": "llm-compressor", "version": "0.4.1", "command": "quantize --w8a8"});
        assert_eq!(errors_of(with_recipe, |_| {}), []);
    }

    #[test]
    fn a_recipe_with_an_unpinned_version_or_empty_parts_is_named() {
        let mut v = good();
        v["weights"][0]["quantised"] = true.into();
        v["quantisation"] = serde_json::json!({"tool": "", "version": ">=0.4", "command": " "});
        assert_eq!(
            errors_of(v, |_| {}),
            [
                (
                    "quantisation.tool".to_owned(),
                    "quantisation_recipe_invalid".to_owned()
                ),
                (
                    "quantisation.version".to_owned(),
                    "quantisation_version_unpinned".to_owned()
                ),
                (
                    "quantisation.command".to_owned(),
                    "quantisation_recipe_invalid".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn derived_from_must_be_a_commitment() {
        let mut v = good();
        v["derivedFrom"] = "https://huggingface.co/org/base@main".into();
        assert_eq!(
            errors_of(v.clone(), |_| {}),
            one("derivedFrom", "derived_from_invalid")
        );
        v["derivedFrom"] = format!("https://huggingface.co/org/base@{}", "a".repeat(40)).into();
        assert_eq!(errors_of(v, |_| {}), []);
    }

    #[test]
    fn a_missing_model_card_is_named() {
        assert_eq!(
            errors_of(good(), |f| {
                f.0.remove("README.md");
            }),
            one("modelCard", "model_card_missing")
        );
    }

    #[test]
    fn model_card_licences_outside_the_list_and_none_are_named() {
        assert_eq!(
            errors_of(good(), |f| {
                f.0.insert(
                    "README.md",
                    "---\nlicense: [apache-2.0, llama3]\n---\n".into(),
                );
            }),
            one("modelCard.license", "licence_not_allowed")
        );
        assert_eq!(
            errors_of(good(), |f| {
                f.0.insert("README.md", "# card\n".into());
            }),
            one("modelCard.license", "licence_missing")
        );
    }

    #[test]
    fn exact_versions() {
        for ok in ["0.4.1", "2", "2.5.0+cu121", "1.0.0-rc.1"] {
            assert!(exact_version(ok), "{ok}");
        }
        for bad in [
            "", "latest", "^1.2.3", "~1.2", "1.x", "1.*", ">=1.0", "1..2",
        ] {
            assert!(!exact_version(bad), "{bad}");
        }
    }
}
