//! `env.max_starting`: at most N sandboxes in their start phase at once (for a container:
//! create, disk quota, start, repository copy, shell ready), whatever the number of workers.
//! Starting a sandbox is the daemon's busiest moment (it unpacks layers, mounts, copies the
//! repository in); a hundred starts at once can each take longer than a task's start limit,
//! while a hundred running tasks are no trouble. The gate belongs to one runtime connection
//! and its clones (a batch's workers and `aci eval`'s share it); it also counts the peak of
//! starts at once, which a run can report and a test can check.

use std::sync::Mutex;

use tokio::sync::{Semaphore, SemaphorePermit};

/// How many sandboxes are starting now, and the most there have been at once.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct StartCounts {
    /// Starting now.
    pub now: usize,
    /// The most at once so far.
    pub peak: usize,
}

impl StartCounts {
    /// One more start began.
    #[must_use]
    pub fn entered(self) -> Self {
        let now = self.now + 1;
        Self {
            now,
            peak: self.peak.max(now),
        }
    }

    /// One start ended (it succeeded or failed).
    #[must_use]
    pub fn left(self) -> Self {
        Self {
            now: self.now.saturating_sub(1),
            peak: self.peak,
        }
    }
}

/// The gate every sandbox start of one runtime goes through.
#[derive(Debug)]
pub struct StartGate {
    /// `None`: no cap (`env.max_starting: 0`).
    permits: Option<Semaphore>,
    max: usize,
    counts: Mutex<StartCounts>,
}

impl Default for StartGate {
    fn default() -> Self {
        Self::new(0)
    }
}

impl StartGate {
    /// A gate letting at most `max` starts through at once; 0: any number.
    pub fn new(max: usize) -> Self {
        Self {
            permits: (max > 0).then(|| Semaphore::new(max)),
            max,
            counts: Mutex::new(StartCounts::default()),
        }
    }

    /// The cap (0: none).
    pub fn max(&self) -> usize {
        self.max
    }

    /// Waits for a turn to start a sandbox; the start phase lasts as long as the returned
    /// value lives.
    pub async fn enter(&self) -> Starting<'_> {
        let permit = match &self.permits {
            // The semaphore is never closed, so acquiring fails never; if it did, the start
            // would go on uncapped rather than fail.
            Some(permits) => permits.acquire().await.ok(),
            None => None,
        };
        self.update(StartCounts::entered);
        Starting {
            gate: self,
            _permit: permit,
        }
    }

    /// The counts so far.
    pub fn counts(&self) -> StartCounts {
        self.counts.lock().map(|counts| *counts).unwrap_or_default()
    }

    fn update(&self, change: impl FnOnce(StartCounts) -> StartCounts) {
        if let Ok(mut counts) = self.counts.lock() {
            *counts = change(*counts);
        }
    }
}

/// One sandbox in its start phase: dropping it ends the phase and lets the next start in.
#[derive(Debug)]
pub struct Starting<'a> {
    gate: &'a StartGate,
    _permit: Option<SemaphorePermit<'a>>,
}

impl Drop for Starting<'_> {
    fn drop(&mut self) {
        self.gate.update(StartCounts::left);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use futures_util::FutureExt;

    use super::{StartCounts, StartGate};

    #[test]
    fn the_counts_keep_the_peak_after_the_starts_end() {
        let counts = StartCounts::default().entered().entered().left().entered();
        assert_eq!(counts, StartCounts { now: 2, peak: 2 });
        let counts = counts.left().left().left();
        assert_eq!(counts, StartCounts { now: 0, peak: 2 });
    }

    #[test]
    fn with_a_cap_of_one_a_second_start_waits_until_the_first_ends() {
        let gate = StartGate::new(1);
        let first = gate
            .enter()
            .now_or_never()
            .expect("the first start goes in");
        let mut second = Box::pin(gate.enter());
        assert!((&mut second).now_or_never().is_none(), "the second waits");
        assert_eq!(gate.counts(), StartCounts { now: 1, peak: 1 });
        drop(first);
        let second = second
            .now_or_never()
            .expect("the second goes in once the first ended");
        assert_eq!(gate.counts(), StartCounts { now: 1, peak: 1 });
        drop(second);
        assert_eq!(gate.counts(), StartCounts { now: 0, peak: 1 });
    }

    #[test]
    fn with_a_cap_of_two_the_third_waits() {
        let gate = StartGate::new(2);
        let a = gate.enter().now_or_never().unwrap();
        let _b = gate.enter().now_or_never().unwrap();
        let mut third = Box::pin(gate.enter());
        assert!((&mut third).now_or_never().is_none());
        drop(a);
        let _c = third.now_or_never().unwrap();
        assert_eq!(gate.counts(), StartCounts { now: 2, peak: 2 });
        assert_eq!(gate.max(), 2);
    }

    #[test]
    fn without_a_cap_every_start_goes_in_at_once() {
        let gate = StartGate::new(0);
        let starts: Vec<_> = (0..50)
            .map(|_| gate.enter().now_or_never().unwrap())
            .collect();
        assert_eq!(gate.counts(), StartCounts { now: 50, peak: 50 });
        drop(starts);
        assert_eq!(gate.counts(), StartCounts { now: 0, peak: 50 });
    }
}
