//! A campaign file built in code: the smallest campaign `referee` accepts, with any key
//! set, replaced or removed by its dotted path, so a test states only the values it is
//! about instead of inlining a whole TOML file.
//!
//! ```
//! let toml = testkit::campaign::CampaignToml::minimal("demo")
//!     .set("runs", "3")
//!     .set("workload.arrival", "\"poisson\"")
//!     .toml();
//! assert!(toml.contains("runs = 3\n"));
//! assert!(toml.contains("[workload]\n"));
//! ```

use receipts::model::{Campaign, FrozenCampaign};

/// The baseline commit of [`CampaignToml::minimal`]: a well-formed id that names no
/// repository's commit.
pub const PLACEHOLDER_COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

/// A campaign file as top-level keys and tables of keys, each in the order first set.
/// Values are TOML text (`"3"`, `"\"p95\""`, `"{ kind = \"fixed\", value = 8 }"`).
#[derive(Clone, Debug)]
pub struct CampaignToml {
    top: Vec<(String, String)>,
    tables: Vec<(String, Vec<(String, String)>)>,
}

impl CampaignToml {
    /// The smallest campaign `id` that parses: one pass, model `m`, baseline `baseline`
    /// at [`PLACEHOLDER_COMMIT`], prompts of 4–40 and outputs of 1–8 tokens, 6
    /// correctness items of 12 prompt tokens and 4 output tokens; every other field at
    /// its default.
    pub fn minimal(id: &str) -> Self {
        Self {
            top: Vec::new(),
            tables: Vec::new(),
        }
        .set("id", &format!("\"{id}\""))
        .set("runs", "1")
        .set("model.name", "\"m\"")
        .set("baseline.repo", "\"baseline\"")
        .set("baseline.commit", &format!("\"{PLACEHOLDER_COMMIT}\""))
        .set(
            "workload.input_len",
            "{ kind = \"uniform\", min = 4, max = 40 }",
        )
        .set(
            "workload.output_len",
            "{ kind = \"uniform\", min = 1, max = 8 }",
        )
        .set("correctness.items", "6")
        .set("correctness.input_len", "{ kind = \"fixed\", value = 12 }")
        .set("correctness.output_tokens", "4")
    }

    /// Sets `path` (`key` at the top level, `table.key` in a table) to the TOML text
    /// `value`, replacing its value where it is set already.
    pub fn set(mut self, path: &str, value: &str) -> Self {
        let (keys, key) = match path.split_once('.') {
            None => (&mut self.top, path),
            Some((table, key)) => {
                let at = match self.tables.iter().position(|(name, _)| name == table) {
                    Some(at) => at,
                    None => {
                        self.tables.push((table.to_owned(), Vec::new()));
                        self.tables.len() - 1
                    }
                };
                (&mut self.tables[at].1, key)
            }
        };
        match keys.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value.to_owned(),
            None => keys.push((key.to_owned(), value.to_owned())),
        }
        self
    }

    /// Removes `path` (as in [`CampaignToml::set`]); a table left empty is dropped.
    ///
    /// # Panics
    /// When `path` is not set: the test meant another key.
    pub fn remove(mut self, path: &str) -> Self {
        let (table, key) = match path.split_once('.') {
            None => (None, path),
            Some((table, key)) => (Some(table), key),
        };
        let keys = match table {
            None => &mut self.top,
            Some(table) => match self.tables.iter_mut().find(|(name, _)| name == table) {
                Some((_, keys)) => keys,
                None => panic!("campaign table `{table}` is not set"),
            },
        };
        let before = keys.len();
        keys.retain(|(k, _)| k != key);
        assert!(keys.len() < before, "campaign key `{path}` is not set");
        self.tables.retain(|(_, keys)| !keys.is_empty());
        self
    }

    /// The campaign file's text: top-level keys, then each table.
    pub fn toml(&self) -> String {
        let mut text = String::new();
        for (key, value) in &self.top {
            text.push_str(&format!("{key} = {value}\n"));
        }
        for (table, keys) in &self.tables {
            text.push_str(&format!("\n[{table}]\n"));
            for (key, value) in keys {
                text.push_str(&format!("{key} = {value}\n"));
            }
        }
        text
    }

    /// The campaign parsed from [`CampaignToml::toml`].
    ///
    /// # Panics
    /// When it does not parse: the error names the key.
    pub fn campaign(&self) -> Campaign {
        Campaign::from_toml("campaign.toml", &self.toml())
            .unwrap_or_else(|e| panic!("{e}\n{}", self.toml()))
    }

    /// The campaign parsed and frozen.
    ///
    /// # Panics
    /// When it does not parse or freeze.
    pub fn frozen(&self) -> FrozenCampaign {
        FrozenCampaign::freeze(self.campaign()).unwrap_or_else(|e| panic!("{e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_minimal_campaign_is_exactly_this_file() {
        assert_eq!(
            CampaignToml::minimal("demo").toml(),
            "id = \"demo\"\nruns = 1\n\n[model]\nname = \"m\"\n\n[baseline]\nrepo = \"baseline\"\n\
             commit = \"0123456789abcdef0123456789abcdef01234567\"\n\n[workload]\n\
             input_len = { kind = \"uniform\", min = 4, max = 40 }\n\
             output_len = { kind = \"uniform\", min = 1, max = 8 }\n\n[correctness]\n\
             items = 6\ninput_len = { kind = \"fixed\", value = 12 }\noutput_tokens = 4\n"
        );
        let campaign = CampaignToml::minimal("demo").campaign();
        assert_eq!(campaign.id.as_str(), "demo");
        assert_eq!(campaign.correctness.items, 6);
    }

    #[test]
    fn set_replaces_in_place_and_remove_drops_an_emptied_table() {
        let toml = CampaignToml::minimal("x")
            .set("runs", "3")
            .set("sla.bound_ms", "200")
            .remove("sla.bound_ms")
            .toml();
        assert!(toml.starts_with("id = \"x\"\nruns = 3\n"), "{toml}");
        assert!(!toml.contains("[sla]"), "{toml}");
    }

    #[test]
    #[should_panic(expected = "campaign key `sla.bound_ms` is not set")]
    fn removing_an_unset_key_panics() {
        let _ = CampaignToml::minimal("x")
            .set("sla.percentile", "\"p95\"")
            .remove("sla.bound_ms");
    }
}
