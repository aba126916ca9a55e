use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::batch::progress::Style;
use crate::instance::parse_instances;

fn instances(ids: &[&str]) -> VecDeque<(usize, Instance)> {
    let text: String = ids
        .iter()
        .map(|id| {
            format!(
                "{{\"instance_id\": \"{id}\", \"problem_statement\": \"p\", \"repo\": \"o/r\", \
                 \"base_commit\": \"0\"}}\n"
            )
        })
        .collect();
    let loaded = parse_instances(&text, None).unwrap();
    loaded.instances.into_iter().enumerate().collect()
}

fn result(id: &str, status: &str) -> InstanceResult {
    InstanceResult {
        instance_id: id.to_owned(),
        exit_status: status.into(),
        cost: 0.0,
        has_patch: false,
        reason: None,
        run_failure: None,
    }
}

fn quiet(total: usize) -> Progress {
    Progress::new(Box::new(std::io::sink()), Style::Lines, total)
}

fn statuses(scheduled: &Scheduled) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = scheduled
        .outcomes
        .iter()
        .map(|(index, outcome)| {
            let status = match outcome {
                Outcome::Ran { result, .. } => result.exit_status.to_string(),
                Outcome::Skipped(previous) => format!("skipped ({})", previous.exit_status),
                Outcome::NotStarted => "not started".to_owned(),
            };
            (*index, status)
        })
        .collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_more_than_the_worker_count_run_at_once_and_every_instance_runs() {
    static RUNNING: AtomicUsize = AtomicUsize::new(0);
    static PEAK: AtomicUsize = AtomicUsize::new(0);
    let task = |instance: Instance, _interrupt: Interrupt| async move {
        let now = RUNNING.fetch_add(1, Ordering::SeqCst) + 1;
        PEAK.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(50)).await;
        RUNNING.fetch_sub(1, Ordering::SeqCst);
        result(&instance.instance_id, "submitted")
    };
    let queue = instances(&["a", "b", "c", "d", "e"]);
    let scheduled = schedule(
        queue,
        2,
        Interrupt::never(),
        task,
        |_, _| unreachable!(),
        &mut quiet(5),
    )
    .await;
    assert_eq!(PEAK.load(Ordering::SeqCst), 2);
    assert!(!scheduled.interrupted);
    let expected: Vec<(usize, String)> = (0..5).map(|i| (i, "submitted".to_owned())).collect();
    assert_eq!(statuses(&scheduled), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_instance_is_recorded_and_the_others_still_run() {
    let task = |instance: Instance, _interrupt: Interrupt| async move {
        assert_ne!(instance.instance_id, "b", "boom in b");
        result(&instance.instance_id, "submitted")
    };
    let panics = Mutex::new(Vec::new());
    let on_panic = |instance: &Instance, message: String| {
        panics.lock().unwrap().push(message);
        result(&instance.instance_id, "exit_error")
    };
    let scheduled = schedule(
        instances(&["a", "b", "c"]),
        1,
        Interrupt::never(),
        task,
        on_panic,
        &mut quiet(3),
    )
    .await;
    assert_eq!(
        statuses(&scheduled),
        [
            (0, "submitted".to_owned()),
            (1, "exit_error".to_owned()),
            (2, "submitted".to_owned())
        ]
    );
    let panics = panics.into_inner().unwrap();
    assert_eq!(panics.len(), 1);
    assert!(panics[0].contains("boom in b"), "{panics:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_an_interrupt_running_instances_finish_and_no_new_one_starts() {
    let (handle, interrupt) = Interrupt::new();
    let handle = Arc::new(handle);
    let task = {
        let handle = Arc::clone(&handle);
        move |instance: Instance, mut interrupt: Interrupt| {
            let handle = Arc::clone(&handle);
            async move {
                if instance.instance_id == "b" {
                    handle.trigger();
                }
                interrupt.wait().await;
                result(&instance.instance_id, "early_exit")
            }
        }
    };
    let scheduled = schedule(
        instances(&["a", "b", "c", "d"]),
        2,
        interrupt,
        task,
        |_, _| unreachable!(),
        &mut quiet(4),
    )
    .await;
    assert!(scheduled.interrupted);
    assert_eq!(
        statuses(&scheduled),
        [
            (0, "early_exit".to_owned()),
            (1, "early_exit".to_owned()),
            (2, "not started".to_owned()),
            (3, "not started".to_owned())
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_level_failure_stops_the_batch_and_the_running_instances_hear_why() {
    let failure = RunFailure {
        message: "the key was rejected".to_owned(),
        hint: Some("check the key".to_owned()),
    };
    let reported = failure.clone();
    let task = move |instance: Instance, mut interrupt: Interrupt| {
        let reported = reported.clone();
        async move {
            let id = instance.instance_id;
            if id == "b" {
                let mut failed = result(&id, "early_exit");
                failed.run_failure = Some(reported);
                return failed;
            }
            // `a` runs until the batch stops, then reports what stopped it.
            interrupt.wait().await;
            let status = match interrupt.reason() {
                Some(StopReason::Failure(failure)) => format!("stopped: {}", failure.message),
                other => format!("{other:?}"),
            };
            result(&id, &status)
        }
    };
    let out = std::sync::Arc::new(Mutex::new(Vec::new()));
    let writer = SharedLog(std::sync::Arc::clone(&out));
    let mut progress = Progress::new(Box::new(writer), Style::Lines, 4);
    let scheduled = schedule(
        instances(&["a", "b", "c", "d"]),
        2,
        Interrupt::never(),
        task,
        |_, _| unreachable!(),
        &mut progress,
    )
    .await;
    assert_eq!(
        (scheduled.interrupted, scheduled.failure.clone()),
        (true, Some(failure))
    );
    assert_eq!(
        statuses(&scheduled),
        [
            (0, "stopped: the key was rejected".to_owned()),
            (1, "early_exit".to_owned()),
            (2, "not started".to_owned()),
            (3, "not started".to_owned())
        ]
    );
    let log = String::from_utf8(out.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert!(lines[0].starts_with("[1/4] b: early_exit ("), "{log}");
    assert_eq!(
        lines[1..3],
        [
            "error: the key was rejected; stopping the batch",
            "hint: check the key"
        ],
        "{log}"
    );
    assert!(
        lines[3].starts_with("[2/4] a: stopped: the key was rejected ("),
        "{log}"
    );
    assert_eq!(lines.len(), 4, "{log}");
}

/// A writer whose bytes the test reads afterwards.
struct SharedLog(std::sync::Arc<Mutex<Vec<u8>>>);

impl std::io::Write for SharedLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_run_failure_is_its_error_s_message_and_hint() {
    let rejected = crate::model::ModelError::Api {
        status: Some(401),
        message: "unauthorized".to_owned(),
        attempts: 1,
        hint: Some("check the key".to_owned()),
    };
    assert_eq!(
        RunFailure::of(&rejected),
        RunFailure {
            message: "model API request failed (HTTP 401) after 1 attempt(s): unauthorized"
                .to_owned(),
            hint: Some("check the key".to_owned()),
        }
    );
    let interrupted = crate::model::ModelError::Interrupted {
        message: "stdin closed".to_owned(),
    };
    assert_eq!(
        RunFailure::of(&interrupted),
        RunFailure {
            message: "interrupted: stdin closed".to_owned(),
            hint: None,
        }
    );
}

/// A waker that counts how often it is woken.
struct CountingWaker(AtomicUsize);

impl std::task::Wake for CountingWaker {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_never_interrupt_is_not_set_and_a_triggered_one_wakes_its_waiters() {
    use std::task::{Context, Poll};
    let woken = std::sync::Arc::new(CountingWaker(AtomicUsize::new(0)));
    let waker = std::task::Waker::from(std::sync::Arc::clone(&woken));
    let mut context = Context::from_waker(&waker);

    let mut never = Interrupt::never();
    assert!(!never.is_set());
    let mut never_waiting = std::pin::pin!(never.wait());
    assert_eq!(never_waiting.as_mut().poll(&mut context), Poll::Pending);

    let (handle, interrupt) = Interrupt::new();
    let mut waiter = interrupt.clone();
    let mut waiting = std::pin::pin!(waiter.wait());
    // The waiter is parked before the trigger: the order is fixed by the polls, not by a
    // scheduler.
    assert_eq!(waiting.as_mut().poll(&mut context), Poll::Pending);
    assert_eq!(woken.0.load(Ordering::SeqCst), 0);
    assert!(!interrupt.is_set());
    handle.trigger();
    assert_eq!(
        woken.0.load(Ordering::SeqCst),
        1,
        "the trigger wakes the waiter"
    );
    assert_eq!(waiting.as_mut().poll(&mut context), Poll::Ready(()));
    assert!(interrupt.is_set());
    // A waiter that comes after the trigger returns at once.
    let mut late = interrupt;
    assert_eq!(
        std::pin::pin!(late.wait()).as_mut().poll(&mut context),
        Poll::Ready(())
    );
    assert_eq!(never_waiting.as_mut().poll(&mut context), Poll::Pending);
}

#[test]
fn ids_that_would_escape_the_output_directory_are_refused() {
    assert_eq!(unsafe_id("django__django-11099"), None);
    assert_eq!(unsafe_id("a.b-1"), None);
    assert!(unsafe_id("..").is_some());
    assert!(unsafe_id(".").is_some());
    assert!(unsafe_id("../etc").is_some());
    assert!(unsafe_id("a\\b").is_some());
}

#[test]
fn a_replay_is_found_by_extension_then_in_an_earlier_runs_layout() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(find_replay(dir.path(), "x"), None);
    std::fs::create_dir_all(dir.path().join("x")).unwrap();
    std::fs::write(dir.path().join("x/x.traj"), "{}").unwrap();
    assert_eq!(
        find_replay(dir.path(), "x"),
        Some(dir.path().join("x/x.traj"))
    );
    std::fs::write(dir.path().join("x.json"), "[]").unwrap();
    assert_eq!(
        find_replay(dir.path(), "x"),
        Some(dir.path().join("x.json"))
    );
    std::fs::write(dir.path().join("x.yaml"), "[]").unwrap();
    assert_eq!(
        find_replay(dir.path(), "x"),
        Some(dir.path().join("x.yaml"))
    );
    // A directory named like a replay file is not one.
    std::fs::create_dir_all(dir.path().join("y.yaml")).unwrap();
    assert_eq!(find_replay(dir.path(), "y"), None);
}

#[test]
fn previous_results_come_from_finished_trajectories_only() {
    let dir = tempfile::tempdir().unwrap();
    let write = |id: &str, info: &str| {
        let path = output::traj_path(dir.path(), id);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, format!("{{\"trajectory\": [], \"info\": {info}}}")).unwrap();
        std::fs::write(output::pred_path(dir.path(), id), "{}").unwrap();
    };
    write(
        "done",
        r#"{"exit_status": "submitted (exit_cost)", "submission": "diff", "model_stats": {"instance_cost": 1.5}}"#,
    );
    write(
        "empty",
        r#"{"exit_status": "submitted", "submission": null}"#,
    );
    write("partial", r#"{"exit_status": null}"#);
    write(
        "interrupted",
        r#"{"exit_status": "submitted (early_exit)", "submission": "d"}"#,
    );
    assert_eq!(
        previous_result(dir.path(), "done"),
        Some(Previous {
            exit_status: "submitted (exit_cost)".into(),
            has_patch: true,
            cost: 1.5
        })
    );
    assert_eq!(
        previous_result(dir.path(), "empty"),
        Some(Previous {
            exit_status: "submitted".into(),
            has_patch: false,
            cost: 0.0
        })
    );
    assert_eq!(previous_result(dir.path(), "partial"), None);
    // Killed between the final trajectory and the prediction: not finished.
    std::fs::remove_file(output::pred_path(dir.path(), "empty")).unwrap();
    assert_eq!(previous_result(dir.path(), "empty"), None);
    assert_eq!(previous_result(dir.path(), "interrupted"), None);
    assert_eq!(previous_result(dir.path(), "missing"), None);
}

#[tokio::test]
async fn previous_results_read_in_parallel_keep_the_order_of_the_ids() {
    let dir = tempfile::tempdir().unwrap();
    // More ids than cores, so each reader gets several; every third one is unfinished.
    let ids: Vec<String> = (0..40).map(|n| format!("i{n}")).collect();
    for (n, id) in ids.iter().enumerate() {
        let path = output::traj_path(dir.path(), id);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let status = if n % 3 == 0 {
            "early_exit"
        } else {
            "submitted"
        };
        let info = format!(
            r#"{{"exit_status": "{status}", "submission": "d", "model_stats": {{"instance_cost": {n}}}}}"#
        );
        std::fs::write(path, format!("{{\"trajectory\": [], \"info\": {info}}}")).unwrap();
        std::fs::write(output::pred_path(dir.path(), id), "{}").unwrap();
    }
    let expected: Vec<Option<Previous>> = (0..40)
        .map(|n| {
            (n % 3 != 0).then(|| Previous {
                exit_status: "submitted".into(),
                has_patch: true,
                cost: f64::from(n),
            })
        })
        .collect();
    assert_eq!(previous_results(dir.path(), ids).await, expected);
}
