//! The host's share of a run (content/measurement.md, Isolation): whether the CPU time a
//! hypervisor stole over a run makes it invalid, and how many threads an engine is told
//! to use on its CPUs. The runner samples the steal and sets the threads; the verifier
//! recomputes both from the receipt.

use crate::model::HostLoad;

/// Whether a run is invalid for steal: `steal_ms × 1000 > max_permille × wall_ms × cpus`
/// (the steal over the `cpus` CPUs the run was given, in permille of their time). A bound
/// of 1000 or more never invalidates a run.
pub fn steal_exceeds(load: &HostLoad, cpus: u32, max_permille: u32) -> bool {
    if max_permille >= 1000 {
        return false;
    }
    let stolen = u128::from(load.steal_ms) * 1000;
    let allowed = u128::from(max_permille) * u128::from(load.wall_ms) * u128::from(cpus.max(1));
    stolen > allowed
}

/// An engine's thread count: `requested` (the campaign's `hardware.engine_threads`, 0 =
/// as many as it has CPUs), at most its `engine_cpus`, at least 1.
pub fn engine_threads(requested: u32, engine_cpus: usize) -> u32 {
    let cpus = u32::try_from(engine_cpus).unwrap_or(u32::MAX).max(1);
    if requested == 0 {
        cpus
    } else {
        requested.min(cpus)
    }
}
