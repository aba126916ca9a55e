//! Reading a pod's status, as pure functions: what state a pod is in ([`pod_state`]), whether
//! a starting pod is ready, still worth waiting for or failed ([`StartWatch`]), and when a
//! refused request is worth sending again ([`retry_delay`]).
//!
//! Time is passed in (`now`), so every decision is tested without waiting.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::config::units::capped_seconds;

/// Waiting reasons after which a container never starts, whatever the wait.
const PERMANENT_WAITING: [&str; 2] = ["InvalidImageName", "ErrImageNeverPull"];
/// Requests are sent at most this many times.
pub const MAX_ATTEMPTS: u32 = 8;
/// The longest `Retry-After` honoured as given.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// What a pod is doing, as far as a task cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodState {
    /// The task container runs.
    Running,
    /// No node was chosen yet; the scheduler's message when it said no node fits.
    Unscheduled {
        /// The `Unschedulable` condition's message.
        unschedulable: Option<String>,
    },
    /// On a node, the container not running yet (image pull, container creation).
    Starting {
        /// The container's waiting reason (`ContainerCreating`, `ErrImagePull`, …).
        reason: Option<String>,
        /// Its message (the pull error).
        message: Option<String>,
        /// The reason is one the container never recovers from.
        permanent: bool,
    },
    /// The pod ended or is ending, and why (evicted, deadline, exit code, deleted).
    Ended(String),
}

fn text(value: &Value) -> Option<String> {
    value
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

fn condition<'a>(pod: &'a Value, kind: &str) -> Option<&'a Value> {
    pod["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

/// The state of the container named `container` (or the first one).
fn container_state<'a>(pod: &'a Value, container: &str) -> Option<&'a Value> {
    let statuses = pod["status"]["containerStatuses"].as_array()?;
    statuses
        .iter()
        .find(|s| s["name"] == container)
        .or_else(|| statuses.first())
        .map(|s| &s["state"])
}

fn terminated_reason(terminated: &Value) -> String {
    let code = terminated["exitCode"].as_i64().unwrap_or(-1);
    let mut reason = format!("the container exited with code {code}");
    match text(&terminated["reason"]).as_deref() {
        Some("OOMKilled") => reason.push_str(" after running out of memory"),
        Some(other) if other != "Error" && other != "Completed" => {
            reason.push_str(&format!(" ({other})"));
        }
        _ => {}
    }
    reason
}

/// Reads a pod object's status.
pub fn pod_state(pod: &Value, container: &str) -> PodState {
    if !pod["metadata"]["deletionTimestamp"].is_null() {
        return PodState::Ended("the pod is being deleted".to_owned());
    }
    let status = &pod["status"];
    let reason = text(&status["reason"]);
    let message = text(&status["message"]);
    let detail = match (&reason, &message) {
        (Some(reason), Some(message)) => format!("{reason}: {message}"),
        (Some(one), None) | (None, Some(one)) => one.clone(),
        (None, None) => String::new(),
    };
    let state = container_state(pod, container);
    let terminated = state.map(|s| &s["terminated"]).filter(|t| t.is_object());
    match status["phase"].as_str().unwrap_or("Pending") {
        "Failed" => {
            return PodState::Ended(match reason.as_deref() {
                Some("Evicted") => format!("the pod was evicted: {}", message.unwrap_or_default()),
                Some("DeadlineExceeded") => {
                    "the pod ran past its activeDeadlineSeconds and was stopped".to_owned()
                }
                _ => match terminated {
                    Some(terminated) if detail.is_empty() => terminated_reason(terminated),
                    _ => format!("the pod failed: {detail}"),
                },
            });
        }
        "Succeeded" => return PodState::Ended("the pod's container exited".to_owned()),
        "Unknown" => {
            return PodState::Ended(format!(
                "the pod's node stopped reporting (phase Unknown){}",
                if detail.is_empty() {
                    String::new()
                } else {
                    format!(": {detail}")
                }
            ));
        }
        _ => {}
    }
    if let Some(disruption) = condition(pod, "DisruptionTarget")
        && disruption["status"] == "True"
    {
        let why = [text(&disruption["reason"]), text(&disruption["message"])]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(": ");
        return PodState::Ended(format!("the pod is being evicted: {why}"));
    }
    if let Some(terminated) = terminated {
        return PodState::Ended(terminated_reason(terminated));
    }
    if state.is_some_and(|s| s["running"].is_object()) {
        return PodState::Running;
    }
    let scheduled = condition(pod, "PodScheduled");
    if scheduled.is_none_or(|c| c["status"] != "True") {
        let unschedulable = scheduled
            .filter(|c| c["reason"] == "Unschedulable")
            .map(|c| text(&c["message"]).unwrap_or_else(|| "no node fits the pod".to_owned()));
        return PodState::Unscheduled { unschedulable };
    }
    let waiting = state.map(|s| &s["waiting"]);
    let reason = waiting.and_then(|w| text(&w["reason"]));
    PodState::Starting {
        permanent: reason
            .as_deref()
            .is_some_and(|r| PERMANENT_WAITING.contains(&r)),
        message: waiting.and_then(|w| text(&w["message"])),
        reason,
    }
}

/// Whether `why` (an [`PodState::Ended`] reason) is the kubelet evicting the pod for going over
/// its own ephemeral-storage limit (its `env.disk_mb`), in the kubelet's words for the pod's
/// total and for one container; not for the node running out of disk, which is no task's doing.
pub fn evicted_for_its_storage(why: &str) -> bool {
    why.strip_prefix("the pod was evicted: ")
        .is_some_and(|message| {
            message.starts_with("Pod ephemeral local storage usage exceeds the total limit")
                || (message.starts_with("Container ")
                    && message.contains(" exceeded its local ephemeral storage limit "))
        })
}

/// How long a pod may take to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartLimits {
    /// From scheduling to running: the image pull and the container's creation.
    pub pull: Duration,
    /// From creation to scheduling.
    pub schedule: Duration,
}

/// What to do about a starting pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartDecision {
    /// It runs.
    Ready,
    /// Keep watching, at the latest until this instant.
    Wait(Instant),
    /// Give up: why.
    Fail(String),
}

/// The clock of one pod's start: when it was created and when it was first seen on a node.
#[derive(Debug, Clone)]
pub struct StartWatch {
    created: Instant,
    scheduled: Option<Instant>,
    limits: StartLimits,
}

impl StartWatch {
    /// A watch for a pod created at `created`.
    pub fn new(created: Instant, limits: StartLimits) -> Self {
        Self {
            created,
            scheduled: None,
            limits,
        }
    }

    /// The decision for the pod's latest `state`, seen at `now`.
    pub fn observe(&mut self, state: &PodState, now: Instant) -> StartDecision {
        match state {
            PodState::Running => StartDecision::Ready,
            PodState::Ended(why) => StartDecision::Fail(why.clone()),
            PodState::Unscheduled { unschedulable } => {
                let deadline = self.created + self.limits.schedule;
                if now < deadline {
                    return StartDecision::Wait(deadline);
                }
                let secs = self.limits.schedule.as_secs_f64();
                StartDecision::Fail(match unschedulable {
                    Some(message) => format!(
                        "no node could take the pod in {secs:.0} s (env.k8s.schedule_timeout): \
                         {message}"
                    ),
                    None => format!(
                        "the pod was not scheduled in {secs:.0} s (env.k8s.schedule_timeout)"
                    ),
                })
            }
            PodState::Starting {
                reason,
                message,
                permanent,
            } => {
                let scheduled = *self.scheduled.get_or_insert(now);
                let why = [reason.as_deref(), message.as_deref()]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(": ");
                if *permanent {
                    return StartDecision::Fail(format!("the pod's container cannot start: {why}"));
                }
                let deadline = scheduled + self.limits.pull;
                if now < deadline {
                    return StartDecision::Wait(deadline);
                }
                let secs = self.limits.pull.as_secs_f64();
                let last = if why.is_empty() {
                    String::new()
                } else {
                    format!(" (last seen: {why})")
                };
                StartDecision::Fail(format!(
                    "the pod's image was not pulled and started in {secs:.0} s \
                     (env.k8s.pull_timeout){last}"
                ))
            }
        }
    }
}

/// Whether a request answered with `status` is sent again, and after how long: 429 and the
/// 5xx answers a busy or restarting API server gives (and 409 when `conflict_retries`, for a
/// create whose generated name collided), at most [`MAX_ATTEMPTS`] times in all. The server's
/// `Retry-After` (seconds) is honoured up to a minute (an infinite or huge one is a minute); without
/// it, or when it is no number of seconds (NaN, negative), the delay doubles from a quarter
/// second up to 8 s. `attempt` counts the attempts made so far (1 after the first).
pub fn retry_delay(
    status: u16,
    retry_after: Option<&str>,
    attempt: u32,
    conflict_retries: bool,
) -> Option<Duration> {
    let retryable =
        matches!(status, 429 | 500 | 502 | 503 | 504) || (status == 409 && conflict_retries);
    if !retryable || attempt >= MAX_ATTEMPTS {
        return None;
    }
    let given = retry_after
        .and_then(|text| text.trim().parse::<f64>().ok())
        .and_then(|secs| capped_seconds(secs, MAX_RETRY_AFTER));
    Some(given.unwrap_or_else(|| backoff(attempt)))
}

/// The delay before attempt `attempt + 1` when the server named none.
pub fn backoff(attempt: u32) -> Duration {
    let millis = 250u64.saturating_mul(1 << attempt.saturating_sub(1).min(5));
    Duration::from_millis(millis.min(8000))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pending(conditions: Value, statuses: Value) -> Value {
        json!({"status": {"phase": "Pending", "conditions": conditions, "containerStatuses": statuses}})
    }

    fn scheduled() -> Value {
        json!([{"type": "PodScheduled", "status": "True"}])
    }

    fn waiting(reason: &str, message: &str) -> Value {
        json!([{"name": "task", "state": {"waiting": {"reason": reason, "message": message}}}])
    }

    #[test]
    fn a_pod_state_is_read_from_phase_conditions_and_container() {
        let running = json!({"status": {"phase": "Running", "containerStatuses": [
            {"name": "task", "state": {"running": {"startedAt": "2025-01-01T00:00:00Z"}}}]}});
        assert_eq!(pod_state(&running, "task"), PodState::Running);
        assert_eq!(
            pod_state(&json!({"status": {"phase": "Pending"}}), "task"),
            PodState::Unscheduled {
                unschedulable: None
            }
        );
        let unschedulable = pending(
            json!([{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                    "message": "0/3 nodes are available: 3 Insufficient memory."}]),
            Value::Null,
        );
        assert_eq!(
            pod_state(&unschedulable, "task"),
            PodState::Unscheduled {
                unschedulable: Some("0/3 nodes are available: 3 Insufficient memory.".to_owned())
            }
        );
        let pulling = pending(
            scheduled(),
            waiting("ImagePullBackOff", "Back-off pulling image \"r/x:1\""),
        );
        assert_eq!(
            pod_state(&pulling, "task"),
            PodState::Starting {
                reason: Some("ImagePullBackOff".to_owned()),
                message: Some("Back-off pulling image \"r/x:1\"".to_owned()),
                permanent: false,
            }
        );
        let invalid = pending(scheduled(), waiting("InvalidImageName", "bad"));
        assert!(matches!(
            pod_state(&invalid, "task"),
            PodState::Starting {
                permanent: true,
                ..
            }
        ));
        let creating = pending(scheduled(), Value::Null);
        assert_eq!(
            pod_state(&creating, "task"),
            PodState::Starting {
                reason: None,
                message: None,
                permanent: false
            }
        );
    }

    #[test]
    fn only_an_eviction_for_the_pods_own_storage_limit_is_a_disk_quota() {
        let ended = |message: &str| {
            let pod =
                json!({"status": {"phase": "Failed", "reason": "Evicted", "message": message}});
            match pod_state(&pod, "task") {
                PodState::Ended(why) => why,
                other => panic!("{other:?}"),
            }
        };
        let pod_total =
            ended("Pod ephemeral local storage usage exceeds the total limit of containers 64Mi. ");
        let container =
            ended("Container task exceeded its local ephemeral storage limit \"64Mi\". ");
        let node = ended("The node was low on resource: ephemeral-storage. ");
        assert!(evicted_for_its_storage(&pod_total), "{pod_total}");
        assert!(evicted_for_its_storage(&container), "{container}");
        assert!(!evicted_for_its_storage(&node), "{node}");
        assert!(!evicted_for_its_storage(
            "the pod failed: Pod ephemeral local storage usage exceeds the total limit"
        ));
    }

    #[test]
    fn an_ended_pod_says_why() {
        let evicted = json!({"status": {"phase": "Failed", "reason": "Evicted",
            "message": "The node was low on resource: memory."}});
        assert_eq!(
            pod_state(&evicted, "task"),
            PodState::Ended(
                "the pod was evicted: The node was low on resource: memory.".to_owned()
            )
        );
        let deadline = json!({"status": {"phase": "Failed", "reason": "DeadlineExceeded",
            "message": "Pod was active on the node longer than the specified deadline"}});
        assert_eq!(
            pod_state(&deadline, "task"),
            PodState::Ended(
                "the pod ran past its activeDeadlineSeconds and was stopped".to_owned()
            )
        );
        let oom = json!({"status": {"phase": "Failed", "containerStatuses": [{"name": "task",
            "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}});
        assert_eq!(
            pod_state(&oom, "task"),
            PodState::Ended(
                "the container exited with code 137 after running out of memory".to_owned()
            )
        );
        let exited = json!({"status": {"phase": "Running", "containerStatuses": [{"name": "task",
            "state": {"terminated": {"exitCode": 2, "reason": "Error"}}}]}});
        assert_eq!(
            pod_state(&exited, "task"),
            PodState::Ended("the container exited with code 2".to_owned())
        );
        let lost = json!({"status": {"phase": "Unknown"}});
        assert_eq!(
            pod_state(&lost, "task"),
            PodState::Ended("the pod's node stopped reporting (phase Unknown)".to_owned())
        );
        let deleting = json!({"metadata": {"deletionTimestamp": "2025-01-01T00:00:00Z"},
            "status": {"phase": "Running"}});
        assert_eq!(
            pod_state(&deleting, "task"),
            PodState::Ended("the pod is being deleted".to_owned())
        );
        let disrupted = json!({"status": {"phase": "Running", "conditions": [{"type": "DisruptionTarget",
            "status": "True", "reason": "DeletionByTaintManager", "message": "Taint manager: deleting due to NoExecute taint"}],
            "containerStatuses": [{"name": "task", "state": {"running": {}}}]}});
        assert_eq!(
            pod_state(&disrupted, "task"),
            PodState::Ended(
                "the pod is being evicted: DeletionByTaintManager: Taint manager: deleting due to \
                 NoExecute taint"
                    .to_owned()
            )
        );
    }

    fn limits() -> StartLimits {
        StartLimits {
            pull: Duration::from_secs(600),
            schedule: Duration::from_secs(300),
        }
    }

    #[test]
    fn an_unschedulable_pod_is_waited_for_up_to_the_schedule_limit() {
        let t0 = Instant::now();
        let mut watch = StartWatch::new(t0, limits());
        let state = PodState::Unscheduled {
            unschedulable: Some("0/3 nodes are available: 3 Insufficient cpu.".to_owned()),
        };
        let deadline = t0 + Duration::from_secs(300);
        assert_eq!(watch.observe(&state, t0), StartDecision::Wait(deadline));
        assert_eq!(
            watch.observe(&state, t0 + Duration::from_secs(299)),
            StartDecision::Wait(deadline)
        );
        assert_eq!(
            watch.observe(&state, deadline),
            StartDecision::Fail(
                "no node could take the pod in 300 s (env.k8s.schedule_timeout): 0/3 nodes are \
                 available: 3 Insufficient cpu."
                    .to_owned()
            )
        );
    }

    #[test]
    fn a_pull_that_does_not_succeed_fails_at_the_pull_limit_counted_from_scheduling() {
        let t0 = Instant::now();
        let mut watch = StartWatch::new(t0, limits());
        let unscheduled = PodState::Unscheduled {
            unschedulable: None,
        };
        assert!(matches!(
            watch.observe(&unscheduled, t0 + Duration::from_secs(100)),
            StartDecision::Wait(_)
        ));
        let pulling = PodState::Starting {
            reason: Some("ErrImagePull".to_owned()),
            message: Some("manifest unknown".to_owned()),
            permanent: false,
        };
        let scheduled_at = t0 + Duration::from_secs(200);
        let deadline = scheduled_at + Duration::from_secs(600);
        assert_eq!(
            watch.observe(&pulling, scheduled_at),
            StartDecision::Wait(deadline)
        );
        // Past the schedule limit, a scheduled pod is judged by the pull limit only.
        assert_eq!(
            watch.observe(&pulling, t0 + Duration::from_secs(700)),
            StartDecision::Wait(deadline)
        );
        assert_eq!(
            watch.observe(&pulling, deadline),
            StartDecision::Fail(
                "the pod's image was not pulled and started in 600 s (env.k8s.pull_timeout) \
                 (last seen: ErrImagePull: manifest unknown)"
                    .to_owned()
            )
        );
        assert_eq!(
            watch.observe(&PodState::Running, deadline),
            StartDecision::Ready
        );
    }

    #[test]
    fn a_permanent_waiting_reason_or_an_end_fails_at_once() {
        let t0 = Instant::now();
        let mut watch = StartWatch::new(t0, limits());
        let invalid = PodState::Starting {
            reason: Some("InvalidImageName".to_owned()),
            message: Some("couldn't parse image name \"A:\"".to_owned()),
            permanent: true,
        };
        assert_eq!(
            watch.observe(&invalid, t0),
            StartDecision::Fail(
                "the pod's container cannot start: InvalidImageName: couldn't parse image name \
                 \"A:\""
                    .to_owned()
            )
        );
        let evicted = PodState::Ended("the pod was evicted: low memory".to_owned());
        assert_eq!(
            watch.observe(&evicted, t0),
            StartDecision::Fail("the pod was evicted: low memory".to_owned())
        );
    }

    #[test]
    fn busy_answers_are_retried_with_the_servers_delay() {
        assert_eq!(
            retry_delay(429, Some("3"), 1, false),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            retry_delay(503, Some("600"), 1, false),
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            retry_delay(500, None, 1, false),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            retry_delay(502, Some("soon"), 3, false),
            Some(Duration::from_millis(1000))
        );
        assert_eq!(
            retry_delay(504, None, 7, false),
            Some(Duration::from_millis(8000))
        );
        assert_eq!(retry_delay(429, Some("1"), MAX_ATTEMPTS, false), None);
        assert_eq!(retry_delay(409, None, 1, false), None);
        assert_eq!(
            retry_delay(409, None, 1, true),
            Some(Duration::from_millis(250))
        );
        for status in [200, 400, 401, 403, 404, 422] {
            assert_eq!(retry_delay(status, Some("1"), 1, true), None, "{status}");
        }
    }

    #[test]
    fn a_retry_after_out_of_range_is_capped_or_ignored_never_a_panic() {
        let delays: Vec<Option<Duration>> = [
            "1e300",
            "inf",
            "99999999999999999999999999",
            "18446744073709551616",
            "-1",
            "NaN",
            "-inf",
            "0",
            "2.5",
        ]
        .into_iter()
        .map(|header| retry_delay(503, Some(header), 1, false))
        .collect();
        let minute = Some(Duration::from_secs(60));
        let backoff = Some(Duration::from_millis(250));
        assert_eq!(
            delays,
            [
                minute,
                minute,
                minute,
                minute,
                backoff,
                backoff,
                backoff,
                Some(Duration::ZERO),
                Some(Duration::from_millis(2500)),
            ]
        );
    }
}
