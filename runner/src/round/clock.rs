//! Where a round's recorded times come from: the system clock, or for tests a virtual
//! one whose readings are fixed, so that a round's receipt records the same times on
//! every run. Every time the receipt records (each step's start and end, each entry
//! run's, setup's, the round-opened statement's) is read through [`Clock::now`]; the
//! preflight's trust checks and the submissions' event times stay on the system clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use receipts::model::{ClockKind, Timestamp};

/// A round's clock: [`Clock::system`] (the default) or [`Clock::virtual_from`].
#[derive(Clone, Debug, Default)]
pub struct Clock {
    /// The virtual clock's readings so far, `None` for the system clock.
    virtual_readings: Option<VirtualReadings>,
}

/// A virtual clock: its start and how many times it was read.
#[derive(Clone, Debug)]
struct VirtualReadings {
    start: Timestamp,
    readings: Arc<AtomicI64>,
}

impl Clock {
    /// The system clock.
    pub fn system() -> Self {
        Self::default()
    }

    /// A virtual clock for tests: its first reading is `start`, and each reading after
    /// it one millisecond later than the one before, whatever the time is.
    pub fn virtual_from(start: Timestamp) -> Self {
        Self {
            virtual_readings: Some(VirtualReadings {
                start,
                readings: Arc::new(AtomicI64::new(0)),
            }),
        }
    }

    /// Which clock this is, as the receipt records it (`clock`).
    pub fn kind(&self) -> ClockKind {
        match self.virtual_readings {
            None => ClockKind::Real,
            Some(_) => ClockKind::Virtual,
        }
    }

    /// The time now, by this clock.
    pub fn now(&self) -> Timestamp {
        match &self.virtual_readings {
            None => Timestamp::now(),
            Some(clock) => {
                let n = clock.readings.fetch_add(1, Ordering::SeqCst);
                Timestamp::from_datetime(clock.start.datetime() + time::Duration::milliseconds(n))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_virtual_clock_advances_one_millisecond_a_reading() {
        let start: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let clock = Clock::virtual_from(start);
        let copy = clock.clone();
        assert_eq!(clock.now().to_rfc3339(), "2026-01-01T00:00:00Z");
        assert_eq!(copy.now().to_rfc3339(), "2026-01-01T00:00:00.001Z");
        assert_eq!(clock.now().to_rfc3339(), "2026-01-01T00:00:00.002Z");
    }
}
