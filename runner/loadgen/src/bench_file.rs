//! The `--workload` file of `referee bench serve`: the parts of a campaign that shape a
//! measurement, without the rest of a campaign (no baseline, no miners).
//!
//! ```toml
//! model = "referee-builtin"     # optional: the served model name (--model overrides)
//! runs = 1                      # searches per entry (default 1 here; campaigns use 3)
//! token_count = "ids"           # or "usage": a campaign's `token_count` (default "ids")
//! [api]                         # optional: a campaign's [backend.api] (ApiSpec,
//! profile = "llama-cpp-python"  # content/engines.md); its token_count wins
//! [workload]                    # a campaign's [workload] table (WorkloadSpec)
//! input_len = { kind = "uniform", min = 32, max = 128 }
//! output_len = { kind = "fixed", value = 16 }
//! arrival = "poisson"
//! [rate_search]                 # optional: a campaign's [rate_search] (RateSearchSpec)
//! min_rate_milli_rps = 1000
//! [seeds]                       # optional: 64 hex characters each; unset ones are fixed
//! item = "…"                    # defaults sha256("referee.bench.<name>")
//! order = "…"
//! schedule = "…"
//! prompt_salt = "…"
//! ```
//! A JSONL prompt source's path is relative to the file's directory.

use std::path::Path;

use receipts::model::{
    ApiProfile, ApiSpec, CorrectnessSpec, ModelError, RateSearchSpec, RevealedSeeds, Seed32,
    SeedReveal, Sha256Hex, TokenCount, WorkloadSpec,
};
use serde::Deserialize;

use receipts::rules::workload::WorkloadParts;

/// A parsed `--workload` file.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchFile {
    /// The served model name, unless `--model` gives it.
    #[serde(default)]
    pub model: Option<String>,
    /// Searches per `--search` (default 1).
    #[serde(default = "one")]
    pub runs: u32,
    /// How output tokens are counted, as a campaign's `token_count` (default `"ids"`).
    #[serde(default)]
    pub token_count: TokenCount,
    /// The engine API profile, as a campaign's `[backend.api]`.
    #[serde(default)]
    pub api: Option<ApiSpec>,
    /// The workload mix.
    #[serde(default)]
    pub workload: WorkloadSpec,
    /// The rate search (campaign defaults when absent).
    #[serde(default)]
    pub rate_search: RateSearchSpec,
    /// Seeds, hex; unset ones are fixed per name so runs repeat.
    #[serde(default)]
    pub seeds: BenchSeeds,
}

/// The seeds of a bench run (content/measurement.md, Seeds); each `None` is
/// sha256(`referee.bench.<name>`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchSeeds {
    /// `itemSeed`.
    #[serde(default)]
    pub item: Option<Seed32>,
    /// `orderSeed`.
    #[serde(default)]
    pub order: Option<Seed32>,
    /// `scheduleSeed`.
    #[serde(default)]
    pub schedule: Option<Seed32>,
    /// `correctnessSeed` (unused by `bench serve`, part of the seed set).
    #[serde(default)]
    pub correctness: Option<Seed32>,
    /// The prompt salt.
    #[serde(default)]
    pub prompt_salt: Option<Seed32>,
}

impl BenchFile {
    /// The engine API profile requests follow: `[api]` resolved (its `token_count`, or
    /// the file's when `[api]` names neither a profile nor a count), else the default
    /// profile with the file's `token_count`.
    pub fn api_profile(&self) -> ApiProfile {
        let spec = self.api.clone().unwrap_or_default();
        let mut profile = spec.resolve();
        if spec.profile.is_none() && spec.token_count.is_none() {
            profile.token_count = self.token_count;
        }
        profile
    }
}

fn one() -> u32 {
    1
}

/// The correctness spec bench runs carry: a bench run sends no correctness items.
static NO_CORRECTNESS: std::sync::LazyLock<CorrectnessSpec> =
    std::sync::LazyLock::new(|| CorrectnessSpec {
        items: 0,
        ..CorrectnessSpec::default()
    });

impl BenchFile {
    /// Parses the file's text; `source` names it in errors.
    ///
    /// Errors: [`ModelError::Toml`] for syntax, unknown fields or wrong types (the message
    /// names the field); [`ModelError::InvalidField`] for out-of-range values.
    pub fn from_toml(source: &str, text: &str) -> Result<Self, ModelError> {
        let file: BenchFile = toml::from_str(text).map_err(|e| ModelError::Toml {
            file: source.to_owned(),
            message: e.to_string(),
        })?;
        file.validate()?;
        Ok(file)
    }

    /// Reads and parses `path`.
    ///
    /// Errors: [`ModelError::Toml`] naming the file when it cannot be read, else as
    /// [`BenchFile::from_toml`].
    pub fn read(path: &Path) -> Result<Self, ModelError> {
        let text = std::fs::read_to_string(path).map_err(|e| ModelError::Toml {
            file: path.display().to_string(),
            message: e.to_string(),
        })?;
        Self::from_toml(&path.display().to_string(), &text)
    }

    fn validate(&self) -> Result<(), ModelError> {
        let invalid = |field: &str, value: String, rule: &str| ModelError::InvalidField {
            field: field.into(),
            value,
            rule: rule.into(),
        };
        self.api_profile().validate()?;
        for (name, dist) in [
            ("workload.input_len", &self.workload.input_len),
            ("workload.output_len", &self.workload.output_len),
        ] {
            if dist.min() == 0 || dist.min() > dist.max() {
                return Err(invalid(name, format!("{dist:?}"), "1 ≤ min ≤ max tokens"));
            }
        }
        let rs = &self.rate_search;
        if rs.min_rate_milli_rps == 0 || rs.min_rate_milli_rps > rs.max_rate_milli_rps {
            return Err(invalid(
                "rate_search.min_rate_milli_rps",
                rs.min_rate_milli_rps.to_string(),
                "1 ≤ min_rate_milli_rps ≤ max_rate_milli_rps",
            ));
        }
        if rs.min_probe_requests == 0 || rs.rate_tolerance_bp == 0 {
            return Err(invalid(
                "rate_search",
                format!("{rs:?}"),
                "min_probe_requests and rate_tolerance_bp at least 1",
            ));
        }
        if self.runs == 0 || self.runs > 99 {
            return Err(invalid("runs", self.runs.to_string(), "1 to 99"));
        }
        Ok(())
    }

    /// The parts that shape the workload.
    pub fn parts(&self) -> WorkloadParts<'_> {
        WorkloadParts {
            workload: &self.workload,
            rate_search: &self.rate_search,
            runs: self.runs,
            correctness: &NO_CORRECTNESS,
        }
    }

    /// The seeds, committed with an all-zero salt (a bench run publishes no commitment).
    pub fn revealed_seeds(&self) -> RevealedSeeds {
        let seed = |value: Option<Seed32>, name: &str| {
            let seed = value.unwrap_or_else(|| {
                let digest = Sha256Hex::digest(format!("referee.bench.{name}").as_bytes());
                let mut bytes = [0u8; 32];
                // A digest is 64 hex characters: decoding cannot fail.
                let _ = hex::decode_to_slice(digest.as_str(), &mut bytes);
                Seed32(bytes)
            });
            SeedReveal::commit(seed, Seed32([0; 32]))
        };
        let s = &self.seeds;
        RevealedSeeds {
            item_seed: seed(s.item, "item"),
            order_seed: seed(s.order, "order"),
            schedule_seed: seed(s.schedule, "schedule"),
            correctness_seed: seed(s.correctness, "correctness"),
            prompt_salt: seed(s.prompt_salt, "prompt_salt"),
            sample_seed: None,
            pass_seed: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn example_file_parses() {
        let text = include_str!("../../../examples/bench/workload.toml");
        let file = BenchFile::from_toml("workload.toml", text).unwrap();
        assert_eq!(file.runs, 1);
        assert!(file.model.is_some());
        let seeds = file.revealed_seeds();
        assert!(seeds.item_seed.is_consistent());
        assert_ne!(seeds.item_seed.seed, seeds.order_seed.seed);
    }

    #[test]
    fn bad_values_name_the_field() {
        let error = BenchFile::from_toml("w.toml", "runs = 0\n").unwrap_err();
        assert!(error.to_string().contains("`runs`"), "{error}");
        let error = BenchFile::from_toml("w.toml", "[workload]\nbogus = 1\n").unwrap_err();
        assert!(error.to_string().contains("bogus"), "{error}");
        let error = BenchFile::from_toml("w.toml", "token_count = \"chunks\"\n").unwrap_err();
        let message = error.to_string();
        assert!(
            message.contains("w.toml")
                && message.contains("token_count")
                && message.contains("chunks"),
            "{message}"
        );
    }

    #[test]
    fn token_count_defaults_to_ids() {
        assert_eq!(
            BenchFile::from_toml("w.toml", "").unwrap().token_count,
            TokenCount::Ids
        );
        let file = BenchFile::from_toml("w.toml", "token_count = \"usage\"\n").unwrap();
        assert_eq!(file.token_count, TokenCount::Usage);
    }
}
