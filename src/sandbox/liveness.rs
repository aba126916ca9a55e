//! Whether the `aci` process that made a container or a pod still runs, as `/proc` tells it, and
//! the reaper's decision from what was read ([`reap_verdict`], pure). Where `/proc` cannot be
//! read, nothing of another process is reaped: a container whose owner cannot be seen may be
//! one a live run is using.

/// What `/proc` says of a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessState {
    /// It runs, and started this many clock ticks after boot.
    Started(u64),
    /// No process has this id.
    Absent,
    /// Its liveness cannot be read: no `/proc`, or one that refuses or hides the process.
    Unknown,
}

/// What the reaper does with a task container (or pod) left by an `aci` process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reap {
    /// Its process is gone: remove it.
    Remove,
    /// Its process still runs: keep it.
    Keep,
    /// Whether its process runs cannot be told: keep it, and say so.
    Unknown,
}

/// The reaper's decision for a container whose `aci.pid` label names a process of which
/// `/proc` said `state`, and whose `aci.pid_start` label reads `start` (`None`: missing or not
/// a number). A start of 0 is what a process that could not read its own start time writes:
/// its pid then says nothing against reuse, so only an absent process counts as gone.
pub fn reap_verdict(start: Option<u64>, state: ProcessState) -> Reap {
    match (state, start) {
        (ProcessState::Unknown, _) | (ProcessState::Started(_), Some(0)) => Reap::Unknown,
        (ProcessState::Absent, _) | (ProcessState::Started(_), None) => Reap::Remove,
        (ProcessState::Started(now), Some(start)) if now == start => Reap::Keep,
        (ProcessState::Started(_), Some(_)) => Reap::Remove,
    }
}

/// What a reaper did: how many it removed, and how many it kept because their process's
/// liveness could not be read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reaped {
    /// Removed: their process is gone.
    pub removed: usize,
    /// Kept: whether their process runs cannot be told.
    pub unknown: usize,
}

impl Reaped {
    /// Counts one decision that was carried out (`removed`: whether the removal succeeded).
    pub fn count(&mut self, verdict: Reap, removed: bool) {
        match verdict {
            Reap::Remove if removed => self.removed += 1,
            Reap::Unknown => self.unknown += 1,
            Reap::Remove | Reap::Keep => {}
        }
    }

    /// The one line that says what was kept, when something was (`what`: `container(s)` or
    /// `pod(s)`).
    pub fn unknown_line(&self, what: &str) -> Option<String> {
        (self.unknown > 0).then(|| {
            format!(
                "warning: kept {} {what} of other aci processes: /proc does not tell whether \
                 those processes still run",
                self.unknown
            )
        })
    }
}

/// Reads the process `pid` from `/proc`. When this process cannot read its own entry, `/proc`
/// is missing or unusable and every process is [`ProcessState::Unknown`]: a missing entry then
/// says nothing about the process.
pub fn read_process(pid: u32) -> ProcessState {
    if process_start_time(std::process::id()).is_none() {
        return ProcessState::Unknown;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => start_time_of_stat(&stat).map_or(ProcessState::Unknown, ProcessState::Started),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => ProcessState::Absent,
        Err(_) => ProcessState::Unknown,
    }
}

/// The start time (clock ticks since boot) of a process, from `/proc/<pid>/stat`.
pub fn process_start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    start_time_of_stat(&stat)
}

/// This process's start time, or 0 when `/proc` does not tell it (see [`reap_verdict`]).
pub fn own_start_time() -> u64 {
    process_start_time(std::process::id()).unwrap_or(0)
}

/// Field 22 (starttime) of a `/proc/<pid>/stat` line.
fn start_time_of_stat(stat: &str) -> Option<u64> {
    // The command name (field 2) is in parentheses and may hold spaces and `)`: the fields
    // after the last `)` start at field 3 (state).
    let after_comm = stat.get(stat.rfind(')')? + 2..)?;
    after_comm.split_whitespace().nth(19)?.parse().ok()
}

/// This machine's host name, which the `aci.host` label of every container and pod holds: a
/// process's liveness is read from this machine's `/proc`, so only this machine's objects are
/// judged by it (a daemon or cluster can be shared by several machines).
#[must_use]
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_reaped_when_liveness_cannot_be_read() {
        for start in [None, Some(0), Some(7)] {
            assert_eq!(
                reap_verdict(start, ProcessState::Unknown),
                Reap::Unknown,
                "{start:?}"
            );
        }
    }

    #[test]
    fn a_container_is_reaped_only_when_its_process_is_gone_or_another_took_its_pid() {
        assert_eq!(reap_verdict(Some(7), ProcessState::Absent), Reap::Remove);
        assert_eq!(reap_verdict(Some(7), ProcessState::Started(7)), Reap::Keep);
        // The pid was reused by a process started later.
        assert_eq!(
            reap_verdict(Some(7), ProcessState::Started(9)),
            Reap::Remove
        );
        // Labels no aci process writes belong to no live run.
        assert_eq!(reap_verdict(None, ProcessState::Started(7)), Reap::Remove);
        assert_eq!(reap_verdict(None, ProcessState::Absent), Reap::Remove);
        // A process that could not read its own start time wrote 0: only its absence counts.
        assert_eq!(reap_verdict(Some(0), ProcessState::Absent), Reap::Remove);
        assert_eq!(
            reap_verdict(Some(0), ProcessState::Started(7)),
            Reap::Unknown
        );
    }

    #[test]
    fn what_was_kept_for_want_of_proc_is_said_in_one_line() {
        let mut reaped = Reaped::default();
        assert_eq!(reaped.unknown_line("container(s)"), None);
        reaped.count(Reap::Unknown, false);
        reaped.count(Reap::Unknown, false);
        reaped.count(Reap::Remove, true);
        reaped.count(Reap::Remove, false);
        reaped.count(Reap::Keep, false);
        assert_eq!(
            reaped,
            Reaped {
                removed: 1,
                unknown: 2
            }
        );
        assert_eq!(
            reaped.unknown_line("container(s)").as_deref(),
            Some(
                "warning: kept 2 container(s) of other aci processes: /proc does not tell \
                 whether those processes still run"
            )
        );
    }

    #[test]
    fn the_start_time_is_read_after_the_last_parenthesis() {
        let fields: Vec<String> = (3..=22).map(|n| n.to_string()).collect();
        let stat = format!("42 (a) b (c) {}", fields.join(" "));
        assert_eq!(start_time_of_stat(&stat), Some(22));
        assert_eq!(start_time_of_stat("42 (a"), None);
        assert_eq!(start_time_of_stat("42 (a)"), None);
    }

    #[test]
    fn a_running_process_reads_as_started_and_a_reaped_one_as_absent() {
        let own = std::process::id();
        assert_eq!(
            read_process(own),
            ProcessState::Started(process_start_time(own).unwrap())
        );
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert_eq!(read_process(pid), ProcessState::Absent);
    }
}
