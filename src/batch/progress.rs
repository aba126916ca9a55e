//! Progress of a batch on stderr. On a terminal a one-line bar (done/total, submitted, errors,
//! cost, ETA) is redrawn in place, with one line per finished instance printed above it.
//! Elsewhere (CI logs, a pipe, a file) only those lines are printed, one per finished or skipped
//! instance, each carrying the same counters, so a log shows the same information without
//! control characters.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::runner::Previous;
use super::{InstanceResult, RunFailure};

/// One turn of `aci run`, for stderr: the instance, the step number, the action's first line
/// (cut at 100 characters), how many lines it printed, its time and the cost so far.
pub fn turn_line(
    instance_id: &str,
    step_number: usize,
    step: &crate::trajectory::TrajectoryStep,
    cost: f64,
) -> String {
    let first = step.action.lines().next().unwrap_or_default();
    let cut: String = first.chars().take(100).collect();
    let mut action = escape_controls(&cut);
    if cut.len() < first.len() || step.action.lines().nth(1).is_some() {
        action.push_str(" …");
    }
    let lines = step.observation.lines().count();
    let instance_id = escape_controls(instance_id);
    format!(
        "[{instance_id}] step {step_number}: {action} → {lines} line{} in {:.1} s (cost ${cost:.2})",
        if lines == 1 { "" } else { "s" },
        step.execution_time
    )
}

pub use crate::text::escape_controls;

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// A bar redrawn in place, plus a line per instance (stderr is a terminal).
    Bar,
    /// A plain line per instance (stderr is not a terminal).
    Lines,
}

/// The numbers shown.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    /// Selected instances.
    pub total: usize,
    /// Of those, the ones to run (not skipped by resume).
    pub to_run: usize,
    /// Finished or skipped.
    pub done: usize,
    /// Finished in this run.
    pub ran: usize,
    /// Running now.
    pub running: usize,
    /// Finished or skipped with a non-empty patch.
    pub submitted: usize,
    /// Finished or skipped with an error status ([`crate::protocol::RecordedStatus::is_error`]).
    pub errors: usize,
    /// Model cost of the instances run in this run.
    pub cost: f64,
}

/// `m:ss`, or `h:mm:ss` from an hour up.
pub fn format_duration(duration: Duration) -> String {
    let secs = duration.as_secs();
    let (hours, minutes, seconds) = (secs / 3600, secs % 3600 / 60, secs % 60);
    if hours > 0 {
        format!("{hours}:{minutes:02}:{seconds:02}")
    } else {
        format!("{minutes}:{seconds:02}")
    }
}

/// The time left at the rate so far (instances run per second of batch), once one has
/// finished.
pub fn eta(counters: &Counters, elapsed: Duration) -> Option<Duration> {
    let left = counters.to_run.saturating_sub(counters.ran);
    if left == 0 {
        return Some(Duration::ZERO);
    }
    let ran = u32::try_from(counters.ran).ok().filter(|ran| *ran > 0)?;
    let left = u32::try_from(left).ok()?;
    Some(elapsed / ran * left)
}

/// `submitted 3 | errors 0 | cost $0.00 | ETA 0:20`
pub fn status_text(counters: &Counters, elapsed: Duration) -> String {
    let eta = eta(counters, elapsed).map_or_else(|| "--:--".to_owned(), format_duration);
    format!(
        "submitted {} | errors {} | cost ${:.2} | ETA {eta}",
        counters.submitted, counters.errors, counters.cost
    )
}

/// `[#######-------------] 3/8 | submitted 3 | errors 0 | cost $0.00 | ETA 0:20 | 2 running`
pub fn bar_text(counters: &Counters, elapsed: Duration) -> String {
    const WIDTH: usize = 20;
    let filled = (counters.done * WIDTH)
        .checked_div(counters.total)
        .unwrap_or(WIDTH)
        .min(WIDTH);
    format!(
        "[{}{}] {}/{} | {} | {} running",
        "#".repeat(filled),
        "-".repeat(WIDTH - filled),
        counters.done,
        counters.total,
        status_text(counters, elapsed),
        counters.running
    )
}

/// What running instances tell the progress display while they prepare: whole lines (a pull's
/// layers, a clone), and each instance's current activity, shown on the bar.
#[derive(Clone, Default)]
pub struct Feed(Arc<Mutex<FeedState>>);

#[derive(Default)]
struct FeedState {
    lines: Vec<String>,
    activity: BTreeMap<String, String>,
}

impl Feed {
    /// A line for the log, printed at the next redraw.
    pub fn line(&self, text: &str) {
        if let Ok(mut state) = self.0.lock() {
            state.lines.push(text.to_owned());
        }
    }

    /// The current activity of `instance_id` (`None`: it is over).
    pub fn activity(&self, instance_id: &str, text: Option<&str>) {
        if let Ok(mut state) = self.0.lock() {
            match text {
                Some(text) => state
                    .activity
                    .insert(instance_id.to_owned(), text.to_owned()),
                None => state.activity.remove(instance_id),
            };
        }
    }

    /// The lines sent since the last call.
    fn take_lines(&self) -> Vec<String> {
        self.0
            .lock()
            .map(|mut state| std::mem::take(&mut state.lines))
            .unwrap_or_default()
    }

    /// The first activity, with how many others there are.
    fn activity_text(&self) -> Option<String> {
        let state = self.0.lock().ok()?;
        let (id, text) = state.activity.iter().next()?;
        let more = state.activity.len() - 1;
        Some(if more > 0 {
            format!("[{id}] {text} (+{more} more)")
        } else {
            format!("[{id}] {text}")
        })
    }
}

/// Shows a batch's progress.
pub struct Progress {
    out: Box<dyn Write + Send>,
    style: Style,
    counters: Counters,
    started: Instant,
    bar_shown: bool,
    feed: Feed,
}

impl Progress {
    /// Progress for `total` selected instances, written to `out` in `style`.
    pub fn new(out: Box<dyn Write + Send>, style: Style, total: usize) -> Self {
        Self {
            out,
            style,
            counters: Counters {
                total,
                ..Counters::default()
            },
            started: Instant::now(),
            bar_shown: false,
            feed: Feed::default(),
        }
    }

    /// The feed whose lines and activities this display shows.
    pub fn feed(&self) -> Feed {
        self.feed.clone()
    }

    /// Progress on stderr: a bar on a terminal, plain lines otherwise.
    pub fn stderr(total: usize) -> Self {
        let style = if std::io::stderr().is_terminal() {
            Style::Bar
        } else {
            Style::Lines
        };
        Self::new(Box::new(std::io::stderr()), style, total)
    }

    /// The counters so far.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// `to_run` of the selected instances will run (the rest were skipped).
    pub fn plan(&mut self, to_run: usize) {
        self.counters.to_run = to_run;
        self.draw_bar();
    }

    /// Resume skipped `id`.
    pub fn skipped(&mut self, id: &str, previous: &Previous) {
        let counters = &mut self.counters;
        counters.done += 1;
        counters.submitted += usize::from(previous.has_patch);
        counters.errors += usize::from(previous.exit_status.is_error());
        let line = format!(
            "[{}/{}] {id}: skipped ({})",
            counters.done, counters.total, previous.exit_status
        );
        self.line(&line);
    }

    /// `id` started.
    pub fn started(&mut self, _id: &str) {
        self.counters.running += 1;
        self.draw_bar();
    }

    /// An instance finished after `elapsed`.
    pub fn finished(&mut self, result: &InstanceResult, elapsed: Duration) {
        let counters = &mut self.counters;
        counters.running = counters.running.saturating_sub(1);
        counters.done += 1;
        counters.ran += 1;
        counters.submitted += usize::from(result.has_patch);
        counters.errors += usize::from(result.exit_status.is_error());
        counters.cost += result.cost;
        // Why it failed, when nothing else has said so: its first line (a hint follows on
        // the lines after it).
        let reason = result
            .reason
            .as_deref()
            .and_then(|reason| reason.lines().next())
            .map(|reason| format!(": {reason}"))
            .unwrap_or_default();
        let line = format!(
            "[{}/{}] {}: {} (wall with set-up {:.1}s){reason} | {}",
            counters.done,
            counters.total,
            result.instance_id,
            result.exit_status,
            elapsed.as_secs_f64(),
            status_text(counters, self.started.elapsed())
        );
        self.line(&line);
    }

    /// A run-level failure stops the batch: one line naming it (and its hint).
    pub fn stopping(&mut self, failure: &RunFailure) {
        // The queued instances will not run: the ETA is for the running ones.
        self.counters.to_run = self.counters.ran + self.counters.running;
        self.line(&format!("error: {}; stopping the batch", failure.message));
        if let Some(hint) = &failure.hint {
            self.line(&format!("hint: {hint}"));
        }
    }

    /// The run was interrupted with `running` instances running and `queued` not started.
    pub fn interrupted(&mut self, running: usize, queued: usize) {
        // The queued instances will not run: the ETA is for the running ones.
        self.counters.to_run = self.counters.ran + running;
        self.line(&format!(
            "interrupted: no new instances start ({queued} not started); autosubmitting the \
             {running} running one(s). Press Ctrl-C again to quit at once."
        ));
    }

    /// Redraws the bar (its elapsed time and ETA move on).
    pub fn tick(&mut self) {
        self.draw_bar();
    }

    /// Prints what the feed still holds and removes the bar: the summary follows.
    pub fn finish(&mut self) {
        self.draw_bar();
        if self.bar_shown {
            let _ = write!(self.out, "\r\x1b[2K");
            let _ = self.out.flush();
            self.bar_shown = false;
        }
    }

    /// Prints a line (above the bar, on a terminal), after what the feed holds.
    fn line(&mut self, text: &str) {
        self.print_feed();
        if self.bar_shown {
            let _ = write!(self.out, "\r\x1b[2K");
        }
        let _ = writeln!(self.out, "{}", escape_controls(text));
        self.bar_shown = false;
        self.draw_bar();
    }

    /// Prints the feed's lines (above the bar, on a terminal).
    fn print_feed(&mut self) {
        let lines = self.feed.take_lines();
        if lines.is_empty() {
            return;
        }
        if self.bar_shown {
            let _ = write!(self.out, "\r\x1b[2K");
            self.bar_shown = false;
        }
        for line in lines {
            let _ = writeln!(self.out, "{}", escape_controls(&line));
        }
    }

    fn draw_bar(&mut self) {
        self.print_feed();
        let activity = self.feed.activity_text();
        if self.style != Style::Bar {
            let _ = self.out.flush();
            return;
        }
        let mut text = bar_text(&self.counters, self.started.elapsed());
        if let Some(activity) = activity {
            // Kept short, so that the bar fits one terminal line and redraws in place.
            let short: String = activity.chars().take(80).collect();
            text.push_str(&format!(" | {}", escape_controls(&short)));
        }
        let _ = write!(self.out, "\r\x1b[2K{text}");
        let _ = self.out.flush();
        self.bar_shown = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn a_turn_line_shows_the_first_line_of_the_action_its_output_time_and_cost() {
        let step = |action: &str, observation: &str| crate::trajectory::TrajectoryStep {
            action: action.to_owned(),
            observation: observation.to_owned(),
            execution_time: 0.26,
            ..Default::default()
        };
        assert_eq!(
            turn_line(
                "demo__calc-1",
                3,
                &step("open src/parser.rs 58", "a\nb\n"),
                0.5
            ),
            "[demo__calc-1] step 3: open src/parser.rs 58 → 2 lines in 0.3 s (cost $0.50)"
        );
        assert_eq!(
            turn_line("x", 1, &step("edit 68:68\n    y\nend_of_edit", "ok"), 0.0),
            "[x] step 1: edit 68:68 … → 1 line in 0.3 s (cost $0.00)"
        );
        assert_eq!(
            turn_line(
                "x\u{1b}]0;t\u{7}",
                2,
                &step("echo \u{1b}[2J\u{1b}[31mred\r\u{9b}0m\u{202e}", ""),
                0.0
            ),
            "[x\\x1b]0;t\\x07] step 2: echo \\x1b[2J\\x1b[31mred\\r\\u{9b}0m\\u{202e} → 0 lines in 0.3 s (cost $0.00)"
        );
        let long = "é".repeat(150);
        let line = turn_line("x", 1, &step(&long, ""), 0.0);
        assert_eq!(
            line,
            format!(
                "[x] step 1: {} … → 0 lines in 0.3 s (cost $0.00)",
                "é".repeat(100)
            )
        );
    }

    /// A writer whose bytes the test can read afterwards.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    fn result(id: &str, status: &str, has_patch: bool, cost: f64) -> InstanceResult {
        InstanceResult {
            instance_id: id.to_owned(),
            exit_status: status.into(),
            cost,
            has_patch,
            reason: None,
            run_failure: None,
        }
    }

    #[test]
    fn durations_read_as_minutes_and_seconds_then_hours() {
        assert_eq!(format_duration(Duration::from_secs(0)), "0:00");
        assert_eq!(format_duration(Duration::from_millis(65_900)), "1:05");
        assert_eq!(
            format_duration(Duration::from_secs(3 * 3600 + 7)),
            "3:00:07"
        );
    }

    #[test]
    fn eta_extrapolates_the_rate_so_far_and_is_unknown_before_the_first_result() {
        let mut counters = Counters {
            total: 10,
            to_run: 8,
            ..Counters::default()
        };
        assert_eq!(eta(&counters, Duration::from_secs(30)), None);
        counters.ran = 2;
        assert_eq!(
            eta(&counters, Duration::from_secs(30)),
            Some(Duration::from_secs(90))
        );
        counters.ran = 8;
        assert_eq!(
            eta(&counters, Duration::from_secs(30)),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn the_bar_shows_done_of_total_and_the_counters() {
        let counters = Counters {
            total: 8,
            to_run: 8,
            done: 2,
            ran: 2,
            running: 2,
            submitted: 1,
            errors: 1,
            cost: 0.125,
        };
        assert_eq!(
            bar_text(&counters, Duration::from_secs(20)),
            "[#####---------------] 2/8 | submitted 1 | errors 1 | cost $0.12 | ETA 1:00 | 2 running"
        );
    }

    #[test]
    fn without_a_terminal_each_instance_gets_one_plain_line() {
        let out = Shared::default();
        let mut progress = Progress::new(Box::new(out.clone()), Style::Lines, 3);
        let previous = Previous {
            exit_status: "submitted".into(),
            has_patch: true,
            cost: 0.5,
        };
        progress.skipped("a", &previous);
        progress.plan(2);
        progress.started("b");
        progress.started("c");
        progress.tick();
        progress.finished(
            &result("b", "exit_error", false, 0.0),
            Duration::from_secs(2),
        );
        progress.interrupted(1, 0);
        progress.finished(
            &result("c", "submitted (early_exit)", true, 0.25),
            Duration::ZERO,
        );
        progress.finish();
        let text = out.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert_eq!(lines[0], "[1/3] a: skipped (submitted)");
        assert!(
            lines[1].starts_with(
                "[2/3] b: exit_error (wall with set-up 2.0s) | submitted 1 | errors 1 | cost $0.00 | ETA "
            ),
            "{}",
            lines[1]
        );
        assert!(lines[2].starts_with("interrupted: no new instances start (0 not started)"));
        assert!(
            lines[3].starts_with("[3/3] c: submitted (early_exit) (wall with set-up 0.0s) | submitted 2 | errors 2 | cost $0.25 | ETA 0:00"),
            "{}",
            lines[3]
        );
        assert!(!text.contains('\r') && !text.contains('\x1b'));
        assert_eq!(progress.counters().ran, 2);
    }

    #[test]
    fn a_failed_instance_names_its_reason_in_its_line_without_its_hint() {
        let out = Shared::default();
        let mut progress = Progress::new(Box::new(out.clone()), Style::Lines, 1);
        progress.plan(1);
        progress.started("a");
        let mut failed = result("a", "exit_api", false, 0.0);
        failed.reason = Some(
            "model API request failed (no HTTP response) after 1 attempt(s): cannot connect: \
             Connection refused\nhint: a hint"
                .to_owned(),
        );
        progress.finished(&failed, Duration::from_secs(1));
        assert_eq!(
            out.text(),
            "[1/1] a: exit_api (wall with set-up 1.0s): model API request failed (no HTTP response) after 1 \
             attempt(s): cannot connect: Connection refused | submitted 0 | errors 1 | cost \
             $0.00 | ETA 0:00\n"
        );
    }

    #[test]
    fn on_a_terminal_the_bar_is_redrawn_in_place_and_cleared_at_the_end() {
        let out = Shared::default();
        let mut progress = Progress::new(Box::new(out.clone()), Style::Bar, 1);
        progress.plan(1);
        progress.started("a");
        progress.finished(&result("a", "submitted", true, 0.0), Duration::from_secs(1));
        progress.finish();
        let text = out.text();
        assert!(
            text.contains("\r\x1b[2K[--------------------] 0/1 | "),
            "{text:?}"
        );
        assert!(
            text.contains("\r\x1b[2K[1/1] a: submitted (wall with set-up 1.0s) | submitted 1"),
            "{text:?}"
        );
        assert!(text.contains("[####################] 1/1"), "{text:?}");
        assert!(text.ends_with("\r\x1b[2K"), "{text:?}");
    }
}
