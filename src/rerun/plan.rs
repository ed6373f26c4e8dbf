//! Which entries of the original round the re-run runs: the ones `--entries` selects
//! (the baseline always: every paired score is against it), on the backend the receipt
//! recorded for each — the campaign's, which is the one the runner can run. A Docker
//! entry runs the image id its receipt recorded (`engine.docker.imageId`; an image is
//! never rebuilt in its place, so one without that record is not tried), and no entry of
//! a campaign whose process command is not found here is tried.

use std::path::Path;

use receipts::model::{Backend, BackendKind, Campaign, Entry, Role, RoundRecord};

use super::RerunError;

/// Shortest hex prefix of a patch's sha256 an `--entries` selector may be (as `referee
/// status` takes them).
const MIN_PREFIX: usize = intake::ingest::MIN_PREFIX;

/// What the re-run does with one entry of the original round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Run it.
    Run,
    /// Not tried: why (UNKWN).
    Skip(String),
    /// Tried, and the re-run broke before it ran: where (FAIL).
    Broke(String),
}

/// The plan of every entry of `record`, in its order, for `campaign` and the
/// `selectors` of `--entries` (empty: every entry).
///
/// Errors: [`RerunError::Selector`] for a selector that names no entry or several.
pub(crate) fn plan_entries(
    record: &RoundRecord,
    campaign: &Campaign,
    selectors: &[String],
) -> Result<Vec<Plan>, RerunError> {
    let slugs = slugs(record);
    let mut selected = vec![selectors.is_empty(); record.entries.len()];
    for selector in selectors {
        let matching: Vec<usize> = record
            .entries
            .iter()
            .zip(&slugs)
            .enumerate()
            .filter(|(_, (entry, slug))| selects(selector, entry, slug))
            .map(|(i, _)| i)
            .collect();
        match matching.as_slice() {
            [i] => selected[*i] = true,
            [] => {
                return Err(RerunError::Selector {
                    selector: selector.clone(),
                    why: format!(
                        "no entry of round {} is `baseline`, a slug ({}), a miner or a patch \
                         prefix of at least {MIN_PREFIX} hex characters matching it",
                        record.round,
                        slugs.join(", ")
                    ),
                });
            }
            several => {
                return Err(RerunError::Selector {
                    selector: selector.clone(),
                    why: format!("matches {} entries; give more characters", several.len()),
                });
            }
        }
    }
    let backend_missing = missing_backend(campaign);
    let mut plans: Vec<Plan> = record
        .entries
        .iter()
        .zip(&selected)
        .map(|(entry, selected)| {
            if let Some(why) = &backend_missing {
                Plan::Skip(why.clone())
            } else if entry.role != Role::Baseline && !selected {
                Plan::Skip("not selected by --entries".to_owned())
            } else if let Some(why) = unrunnable(entry, campaign) {
                Plan::Skip(why)
            } else {
                Plan::Run
            }
        })
        .collect();
    // Without the baseline nothing can be paired.
    if let Some(Plan::Skip(why)) = plans.first().cloned() {
        for plan in plans.iter_mut().skip(1) {
            if *plan == Plan::Run {
                *plan = Plan::Skip(format!("the baseline cannot run: {why}"));
            }
        }
    }
    Ok(plans)
}

/// Each entry's slug, as the runner names its files: `baseline`,
/// `incumbent-<miner>`, `candidate-<k>-<miner>` (the k-th challenger, from 1).
pub(crate) fn slugs(record: &RoundRecord) -> Vec<String> {
    let mut challenger = 0;
    record
        .entries
        .iter()
        .map(|entry| {
            let miner = entry.miner.as_ref().map_or("", |m| m.as_str());
            match entry.role {
                Role::Baseline => Role::Baseline.as_str().to_owned(),
                Role::Incumbent => format!("incumbent-{miner}"),
                Role::Challenger => {
                    challenger += 1;
                    format!("candidate-{challenger}-{miner}")
                }
            }
        })
        .collect()
}

/// Whether `selector` names `entry` (whose slug is `slug`): `baseline`, its slug, its
/// miner, or a prefix of its patch's sha256 of at least [`MIN_PREFIX`] characters.
fn selects(selector: &str, entry: &Entry, slug: &str) -> bool {
    if selector == slug {
        return true;
    }
    if entry.miner.as_ref().is_some_and(|m| m.as_str() == selector) {
        return true;
    }
    selector.len() >= MIN_PREFIX
        && entry
            .patch
            .as_ref()
            .is_some_and(|p| p.as_str().starts_with(&selector.to_ascii_lowercase()))
}

/// Why the campaign's backend cannot run here: a process command whose program is not
/// found (by its path, or on the sandbox's `PATH`). A Docker campaign's daemon and images
/// are the round's to find (an unreachable daemon stops it, a missing image fails its
/// entry).
fn missing_backend(campaign: &Campaign) -> Option<String> {
    match &campaign.backend {
        Backend::Builtin | Backend::Docker(_) => None,
        Backend::Process { command, .. } => {
            let program = command.first().map_or("", String::as_str);
            let found = if program.starts_with('/') {
                Path::new(program).is_file()
            } else if program.contains('/') {
                // Relative to the patched tree, which the round checks out itself.
                true
            } else {
                engines::sandbox::SANDBOX_PATH
                    .split(':')
                    .any(|dir| Path::new(dir).join(program).is_file())
            };
            (!found).then(|| format!("the campaign's engine command `{program}` is not found here"))
        }
    }
}

/// Why one entry cannot run on the campaign's backend: it was recorded on another
/// backend than the campaign's, or on Docker without the image id it ran (an image is
/// never rebuilt in its place).
fn unrunnable(entry: &Entry, campaign: &Campaign) -> Option<String> {
    let recorded = entry.engine.backend;
    if recorded == BackendKind::Docker && entry.engine.docker.is_none() {
        return Some(
            "image unavailable: the entry ran on Docker and its receipt records no image id \
             (`engine.docker.imageId`); an image is never rebuilt in its place"
                .to_owned(),
        );
    }
    let campaign_kind = match campaign.backend {
        Backend::Builtin => BackendKind::Builtin,
        Backend::Process { .. } => BackendKind::Process,
        Backend::Docker(_) => BackendKind::Docker,
    };
    (recorded != campaign_kind).then(|| {
        format!("the entry ran on the {recorded} backend, the campaign's is {campaign_kind}")
    })
}
