//! Each ACI and agent switch changes what the agent sees when it is flipped. Every test runs
//! `aci run` on the probe instance of `tests/fixtures/switches` twice (or more), with a replayed
//! script and the local runtime, flipping one switch through `--set` or a `--config` layer, and
//! compares the observations, the messages the model was sent and the submitted patch.
//!
//! `configs/swe-agent-0.4.yaml` sets the paper-era switches (`aci.scroll_warning`,
//! `aci.raw_output`, `aci.lint.filter_preexisting`, `aci.lint.rejection_first_line`) and, as
//! `configs/swe-agent-0.7.yaml` does, `aci.open_shell_noise`; each is flipped here on its own.
//!
//! The other switches are flipped elsewhere: `aci.window` and `aci.lint.enabled` in
//! `tests/full/ablate.rs`; `agent.demonstrations` in `tests/full/agent_trajectory.rs`
//! (`the_default_config_carries_its_demonstration_from_any_working_directory`);
//! `agent.history` and `agent.parser` in `tests/fast/agent_loop.rs`; `aci.commands` in
//! `tests/full/aci_commands.rs`; `aci.search.max_files` and `env.command_timeout` in the ACI
//! scenarios `012_search_max_files` and `016_timeout`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a panic is a test failure"
)]

use std::path::{Path, PathBuf};
use std::process::Command;

use aci::sandbox::shell_quote;
use serde_json::Value;

/// The one instance of the fixture: `calc.py`, `legacy.py` (with an undefined name on line 6)
/// and `lib.rs`.
const ID: &str = "switches__probe-1";

/// The rule around the windows of a lint failure.
const RULE: &str = "-------------------------------------------------";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/switches")
}

/// What one `aci run` of [`ID`] left on disk.
struct Run {
    /// The `.traj`.
    traj: Value,
    /// The submitted patch.
    patch: String,
    _dir: tempfile::TempDir,
}

impl Run {
    /// The repository directory, from the first step that recorded a state.
    fn repo(&self) -> String {
        self.steps()
            .iter()
            .find_map(|step| {
                let state: Value = serde_json::from_str(step["state"].as_str()?).ok()?;
                Some(state["working_dir"].as_str()?.to_owned())
            })
            .expect("a step with a state")
    }

    fn steps(&self) -> &Vec<Value> {
        self.traj["trajectory"].as_array().unwrap()
    }

    /// The observation of each replayed action (the closing `submit` aside), with the
    /// repository directory written `{repo}`.
    fn observations(&self) -> Vec<String> {
        let repo = self.repo();
        let steps = self.steps();
        assert_eq!(steps.last().unwrap()["action"], "submit");
        steps[..steps.len() - 1]
            .iter()
            .map(|step| {
                step["observation"]
                    .as_str()
                    .unwrap()
                    .replace(&repo, "{repo}")
            })
            .collect()
    }

    /// The observation messages the model was sent, in order (the closing `submit`'s last),
    /// with the repository directory written `{repo}`.
    fn shown(&self) -> Vec<String> {
        let repo = self.repo();
        self.traj["history"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|item| item["message_type"] == "observation")
            .map(|item| item["content"].as_str().unwrap().replace(&repo, "{repo}"))
            .collect()
    }
}

/// Runs [`ID`] locally with the replayed `actions` (then `submit`) and the extra arguments
/// `switch`, and reads back its trajectory and patch.
fn aci_run(actions: &[&str], switch: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let replay = dir.path().join("replay.json");
    std::fs::write(&replay, serde_json::to_string(actions).unwrap()).unwrap();
    let output = dir.path().join("out");
    let run = Command::new(env!("CARGO_BIN_EXE_aci"))
        .args(["run", "--runtime", "local", "--id", ID, "--instances"])
        .arg(fixtures().join("instances.jsonl"))
        .arg("--replay")
        .arg(&replay)
        .arg("--output")
        .arg(&output)
        .args(switch)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "aci run {switch:?} failed:\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let instance = output.join(ID);
    let traj = std::fs::read_to_string(instance.join(format!("{ID}.traj"))).unwrap();
    let traj: Value = serde_json::from_str(&traj).unwrap();
    assert_eq!(traj["info"]["exit_status"], "submitted", "{switch:?}");
    let patch = std::fs::read_to_string(instance.join(format!("{ID}.patch"))).unwrap();
    Run {
        traj,
        patch,
        _dir: dir,
    }
}

/// The viewer's window over a whole file of `lines`.
fn view(file: &str, lines: &[&str]) -> String {
    let mut text = format!("[File: {{repo}}/{file} ({} lines total)]", lines.len());
    for (number, line) in lines.iter().enumerate() {
        text.push_str(&format!("\n{}:{line}", number + 1));
    }
    text
}

/// The observation of an edit that landed, leaving `file` as `lines`.
fn edit_landed(file: &str, lines: &[&str]) -> String {
    format!(
        "{}\nFile updated. Please review the changes and make sure they are correct (correct \
         indentation, no duplicate lines, etc). Edit the file again if necessary.",
        view(file, lines)
    )
}

/// v0.7's first line of a rejected edit.
const REJECTED_V07: &str = "Your proposed edit has introduced new syntax error(s). Please read \
                            this error message carefully and then retry editing the file.";

/// The paper's (v0.1-0.4) first line of a rejected edit, typo included.
const REJECTED_V01: &str = "Your proposed edit has introduced new syntax error(s). Please \
                            understand the fixes and retry your edit commmand.";

/// The observation of an edit the lint gate rolled back for `errors`.
fn edit_rejected(errors: &[&str], file: &str, after: &[&str], before: &[&str]) -> String {
    edit_rejected_with(REJECTED_V07, errors, file, after, before)
}

/// [`edit_rejected`] with another first line.
fn edit_rejected_with(
    first_line: &str,
    errors: &[&str],
    file: &str,
    after: &[&str],
    before: &[&str],
) -> String {
    let errors: Vec<String> = errors.iter().map(|error| format!("- {error}")).collect();
    format!(
        "{first_line}\n\nERRORS:\n{}\n\n\
         This is how your edit would have looked if applied\n{RULE}\n{}\n{RULE}\n\n\
         This is the original code before your edit\n{RULE}\n{}\n{RULE}\n\
         Your changes have NOT been applied. Please fix your edit command and try again.\n\
         You either need to 1) Specify the correct start/end line arguments or 2) Correct your \
         edit code.\nDO NOT re-run the same failed edit command. Running it again will lead to \
         the same error.",
        errors.join("\n"),
        view(file, after),
        view(file, before)
    )
}

const CALC: [&str; 2] = ["def add(a, b):", "    return a + b"];

/// What the model is sent after a command that printed nothing (the closing `submit` of a run
/// that changed no file, among others), with no file open.
const NO_OUTPUT: &str = "Your command ran successfully and did not produce any output.\n\
                         (Open file: n/a)\n(Current directory: {repo})\nbash-$";

// ---------------------------------------------------------------------------------------------
// aci

#[test]
fn overlap_sets_how_many_lines_a_scroll_keeps_from_the_previous_window() {
    let actions = [
        "seq -f 'line %g' 300 > lines.txt",
        "open lines.txt",
        "scroll_down",
        "rm lines.txt",
    ];
    // The window as `scroll_down` shows it: lines `first..=last` of the 300.
    let scrolled = |first: usize, last: usize| {
        let mut text = format!(
            "[File: {{repo}}/lines.txt (300 lines total)]\n({} more lines above)",
            first - 1
        );
        for number in first..=last {
            text.push_str(&format!("\n{number}:line {number}"));
        }
        text + &format!("\n({} more lines below)", 300 - last)
    };
    let opened = scrolled(1, 100).replace("\n(0 more lines above)", "");

    let default = aci_run(&actions, &[]);
    assert_eq!(
        default.observations(),
        ["", opened.as_str(), &scrolled(99, 198), ""],
        "the default overlap of 2 shows lines 99 and 100 again"
    );

    let none = aci_run(&actions, &["--set", "aci.overlap=0"]);
    assert_eq!(
        none.observations(),
        ["", opened.as_str(), &scrolled(101, 200), ""],
        "with no overlap the scroll starts right after the last line shown"
    );
}

#[test]
fn lint_languages_leave_files_of_other_languages_ungated() {
    let actions = [
        "open lib.rs",
        "edit 2:2\n    a +\nend_of_edit",
        "open calc.py",
        "edit 2:2\n    return a +\nend_of_edit",
    ];
    let lib_rs = ["pub fn add(a: i32, b: i32) -> i32 {", "    a + b", "}"];
    let rust_rejected = edit_rejected(
        &["E999 syntax error: missing identifier"],
        "lib.rs",
        &[lib_rs[0], "    a +", lib_rs[2]],
        &lib_rs,
    );
    let broken_calc = [CALC[0], "    return a +"];

    let default = aci_run(&actions, &[]);
    assert_eq!(
        default.observations(),
        [
            view("lib.rs", &lib_rs),
            rust_rejected.clone(),
            view("calc.py", &CALC),
            edit_rejected(
                &["E999 SyntaxError: invalid syntax"],
                "calc.py",
                &broken_calc,
                &CALC
            ),
        ]
    );
    assert_eq!(default.patch, "", "both broken edits were rolled back");

    let rust_only = fixtures().join("rust-only.yaml");
    let rust_only = aci_run(&actions, &["--config", rust_only.to_str().unwrap()]);
    assert_eq!(
        rust_only.observations(),
        [
            view("lib.rs", &lib_rs),
            rust_rejected,
            view("calc.py", &CALC),
            edit_landed("calc.py", &broken_calc),
        ],
        "Rust is still gated, Python no longer"
    );
    assert_eq!(
        rust_only.patch,
        "diff --git a/calc.py b/calc.py\n\
         index 4693ad3..e6f5242 100644\n\
         --- a/calc.py\n\
         +++ b/calc.py\n\
         @@ -1,2 +1,2 @@\n \
         def add(a, b):\n\
         -    return a + b\n\
         +    return a +\n"
    );
}

#[test]
fn an_external_linter_blocks_edits_the_builtin_gate_accepts() {
    let actions = [
        "open calc.py",
        "edit 2:2\n    return a +\nend_of_edit",
        "edit 2:2\n    return a + b  # TODO: check for overflow\nend_of_edit",
        "edit 1:1\ndef add(a, b):  # two numbers\nend_of_edit",
    ];
    let with_todo = [CALC[0], "    return a + b  # TODO: check for overflow"];
    // The built-in gate still rejects a syntax error, with or without an external linter.
    let syntax_error = edit_rejected(
        &["E999 SyntaxError: invalid syntax"],
        "calc.py",
        &[CALC[0], "    return a +"],
        &CALC,
    );

    let builtin_only = aci_run(&actions, &[]);
    assert_eq!(
        builtin_only.observations(),
        [
            view("calc.py", &CALC),
            syntax_error.clone(),
            edit_landed("calc.py", &with_todo),
            edit_landed("calc.py", &["def add(a, b):  # two numbers", with_todo[1]]),
        ]
    );
    assert_eq!(
        builtin_only.patch,
        "diff --git a/calc.py b/calc.py\n\
         index 4693ad3..67008a8 100644\n\
         --- a/calc.py\n\
         +++ b/calc.py\n\
         @@ -1,2 +1,2 @@\n\
         -def add(a, b):\n\
         -    return a + b\n\
         +def add(a, b):  # two numbers\n\
         +    return a + b  # TODO: check for overflow\n"
    );

    // The stand-in linter reports every TODO as flake8-todo's T000. The local runtime runs
    // commands on the host, so the script is named by its path here.
    let linter = fixtures().join("todo_lint.py");
    let external = format!(
        "aci.lint.external=python3 {} {{file}}",
        shell_quote(linter.to_str().unwrap())
    );
    let external = aci_run(&actions, &["--set", &external]);
    assert_eq!(
        external.observations(),
        [
            view("calc.py", &CALC),
            syntax_error,
            edit_rejected(&["T000 Todo note found."], "calc.py", &with_todo, &CALC),
            edit_landed("calc.py", &["def add(a, b):  # two numbers", CALC[1]]),
        ],
        "the TODO edit is rolled back, the clean one lands"
    );
    assert_eq!(
        external.patch,
        "diff --git a/calc.py b/calc.py\n\
         index 4693ad3..86460d1 100644\n\
         --- a/calc.py\n\
         +++ b/calc.py\n\
         @@ -1,2 +1,2 @@\n\
         -def add(a, b):\n\
         +def add(a, b):  # two numbers\n     \
         return a + b\n"
    );
}

#[test]
fn filter_preexisting_off_blocks_an_edit_to_a_file_that_already_has_an_error() {
    let actions = [
        "open legacy.py",
        "edit 2:2\n    return sum(items, 0)\nend_of_edit",
    ];
    let legacy = [
        "def total(items):",
        "    return sum(items)",
        "",
        "",
        "def average(items):",
        "    return total(items) / count",
    ];
    let mut edited = legacy;
    edited[1] = "    return sum(items, 0)";

    let filtered = aci_run(&actions, &[]);
    assert_eq!(
        filtered.observations(),
        [
            view("legacy.py", &legacy),
            edit_landed("legacy.py", &edited),
        ],
        "the undefined `count` on line 6 was there before the edit"
    );
    assert_eq!(
        filtered.patch,
        "diff --git a/legacy.py b/legacy.py\n\
         index dd5efa6..7e07d9a 100644\n\
         --- a/legacy.py\n\
         +++ b/legacy.py\n\
         @@ -1,5 +1,5 @@\n \
         def total(items):\n\
         -    return sum(items)\n\
         +    return sum(items, 0)\n \n \n \
         def average(items):\n"
    );

    let unfiltered = aci_run(&actions, &["--set", "aci.lint.filter_preexisting=false"]);
    assert_eq!(
        unfiltered.observations(),
        [
            view("legacy.py", &legacy),
            edit_rejected(
                &["F821 undefined name 'count'"],
                "legacy.py",
                &edited,
                &legacy
            ),
        ]
    );
    assert_eq!(unfiltered.patch, "");
}

#[test]
fn scroll_warning_off_drops_the_warning_of_the_third_scroll_in_a_row() {
    let actions = [
        "seq -f 'line %g' 300 > lines.txt",
        "open lines.txt",
        "scroll_down",
        "scroll_down",
        "scroll_down",
        "rm lines.txt",
    ];
    let warned = |view: &str| {
        format!(
            "{view}\n\nWARNING: Scrolling many times in a row is very inefficient.\n\
             If you know what you are looking for, use `search_file <pattern>` instead.\n"
        )
    };
    let default = aci_run(&actions, &[]);
    let plain = aci_run(&actions, &["--set", "aci.scroll_warning=false"]);
    let default = default.observations();
    let plain = plain.observations();
    assert_eq!(default[..4], plain[..4], "the first two scrolls never warn");
    assert!(plain[4].ends_with("\n300:line 300"), "{}", plain[4]);
    assert_eq!(
        default[4],
        warned(&plain[4]),
        "the third scroll warns by default"
    );
}

#[test]
fn open_shell_noise_prints_v0s_awk_and_test_errors_before_a_missing_file() {
    let actions = ["open missing.py 101", "open missing.py"];
    let clean = aci_run(&actions, &[]);
    assert_eq!(
        clean.observations(),
        ["File missing.py not found", "File missing.py not found"]
    );
    let noisy = aci_run(&actions, &["--set", "aci.open_shell_noise=true"]);
    assert_eq!(
        noisy.observations(),
        [
            "awk: cannot open missing.py (No such file or directory)\n\
             /root/commands/defaults.sh: line 54: [: 101: unary operator expected\n\
             File missing.py not found",
            "File missing.py not found",
        ]
    );
}

#[test]
fn rejection_first_line_replaces_the_first_line_of_a_rejected_edit() {
    let actions = ["open calc.py", "edit 2:2\n    return a +\nend_of_edit"];
    let broken = [CALC[0], "    return a +"];
    let errors = ["E999 SyntaxError: invalid syntax"];
    let v07 = aci_run(&actions, &[]);
    assert_eq!(
        v07.observations()[1],
        edit_rejected_with(REJECTED_V07, &errors, "calc.py", &broken, &CALC)
    );
    let setting = format!("aci.lint.rejection_first_line={REJECTED_V01}");
    let v01 = aci_run(&actions, &["--set", &setting]);
    assert_eq!(
        v01.observations()[1],
        edit_rejected_with(REJECTED_V01, &errors, "calc.py", &broken, &CALC)
    );
    assert_eq!((v07.patch.as_str(), v01.patch.as_str()), ("", ""));
}

#[test]
fn raw_output_keeps_the_final_newline_and_carriage_returns() {
    let actions = ["printf 'a\\r\\nb\\n'", "open calc.py", "printf '\\n'"];
    let prompt = |observation: &str, open: &str| {
        format!("{observation}\n(Open file: {open})\n(Current directory: {{repo}})\nbash-$")
    };
    let calc = "{repo}/calc.py";

    let v07 = aci_run(&actions, &[]);
    assert_eq!(v07.observations(), ["a\nb", &view("calc.py", &CALC), ""]);
    let raw = aci_run(&actions, &["--set", "aci.raw_output=true"]);
    assert_eq!(
        raw.observations(),
        ["a\r\nb\n", &format!("{}\n", view("calc.py", &CALC)), "\n"]
    );
    // An observation of only whitespace is "no output" either way, as v0's `.strip() == ""`.
    let no_output = "Your command ran successfully and did not produce any output.\n\
                     (Open file: {repo}/calc.py)\n(Current directory: {repo})\nbash-$";
    assert_eq!(
        raw.shown()[..3],
        [
            prompt("a\r\nb\n", "n/a"),
            prompt(&format!("{}\n", view("calc.py", &CALC)), calc),
            no_output.to_owned(),
        ]
    );
    assert_eq!(v07.shown()[2], no_output);
}

#[test]
fn the_swe_agent_0_4_config_sets_the_papers_aci() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let paper =
        aci::config::load::resolve(&[root.join("configs/swe-agent-0.4.yaml")], &[]).unwrap();
    let v07 = aci::config::load::resolve(&[], &[]).unwrap();
    let switches = |config: &aci::config::Config| {
        (
            config.aci.scroll_warning,
            config.aci.raw_output,
            config.aci.lint.filter_preexisting,
            config.aci.lint.rejection_first_line.clone(),
            config.aci.open_shell_noise,
        )
    };
    assert_eq!(
        switches(&v07),
        (true, false, true, REJECTED_V07.to_owned(), false)
    );
    assert_eq!(
        switches(&paper),
        (false, true, false, REJECTED_V01.to_owned(), true)
    );
    // Everything else is the default's.
    let mut reset = paper;
    reset.aci.open_shell_noise = false;
    reset.aci.scroll_warning = true;
    reset.aci.raw_output = false;
    reset.aci.lint.filter_preexisting = true;
    reset.aci.lint.rejection_first_line = REJECTED_V07.to_owned();
    assert_eq!(reset, v07);
}

#[test]
fn the_swe_agent_0_7_config_prints_opens_shell_noise_and_gates_with_flake8() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let v07 = aci::config::load::resolve(&[root.join("configs/swe-agent-0.7.yaml")], &[]).unwrap();
    let default = aci::config::load::resolve(&[], &[]).unwrap();
    assert!(v07.aci.open_shell_noise);
    assert!(!default.aci.open_shell_noise);
    let mut reset = v07;
    reset.aci.open_shell_noise = false;
    reset.aci.lint = default.aci.lint.clone();
    assert_eq!(reset, default, "the rest is the default's");
}

#[test]
fn a_command_taken_off_the_blocklist_runs() {
    let actions = ["git rev-list --count HEAD"];

    let default = aci_run(&actions, &[]);
    let refusal = "Interactive operation 'git' is not supported by this environment. \
                   Use a non-interactive command instead.";
    let steps = default.steps();
    assert_eq!(
        (
            steps[0]["action"].as_str(),
            steps[0]["observation"].as_str(),
            steps[0]["format_error"].as_str()
        ),
        (Some(""), Some(refusal), Some(refusal)),
        "git is refused before it runs"
    );
    assert_eq!(
        default.shown(),
        [NO_OUTPUT],
        "nothing ran before the submit"
    );

    // The v0.7 list without `git`.
    let without_git = "aci.blocklist.first_word=[vim, vi, emacs, nano, nohup, gdb]";
    let allowed = aci_run(&actions, &["--set", without_git]);
    let steps = allowed.steps();
    assert_eq!(
        (
            steps[0]["action"].as_str(),
            steps[0]["observation"].as_str(),
            steps[0]["format_error"].as_str()
        ),
        (Some("git rev-list --count HEAD"), Some("1"), None),
        "git runs and counts the base commit"
    );
    assert_eq!(
        allowed.shown(),
        [
            "1\n(Open file: n/a)\n(Current directory: {repo})\nbash-$",
            NO_OUTPUT
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// agent

#[test]
fn max_observation_length_sets_where_the_model_sees_an_observation_cut() {
    let actions = ["seq 1 60"];
    // `seq 1 60` prints 170 characters.
    let numbers = |range: std::ops::RangeInclusive<u32>| {
        range.map(|n| n.to_string()).collect::<Vec<_>>().join("\n")
    };
    let note = |max: usize, elided: usize| {
        format!(
            "\n<response clipped><NOTE>Observations should not exceed {max} characters. {elided} \
             characters were elided from the middle of this output. Please try a different \
             command that produces less output or use head/tail/grep/redirect the output to a \
             file. Do not use interactive pagers.</NOTE>\n"
        )
    };
    let prompt = |observation: String| {
        format!("{observation}\n(Open file: n/a)\n(Current directory: {{repo}})\nbash-$")
    };

    let whole = aci_run(&actions, &[]);
    assert_eq!(
        whole.shown(),
        [prompt(numbers(1..=60)), NO_OUTPUT.to_owned()]
    );

    let at_100 = aci_run(&actions, &["--set", "agent.max_observation_length=100"]);
    assert_eq!(
        at_100.shown(),
        [
            prompt(numbers(1..=20) + &note(100, 70) + &numbers(44..=60)),
            NO_OUTPUT.to_owned()
        ],
        "50 characters from each end"
    );

    let at_40 = aci_run(&actions, &["--set", "agent.max_observation_length=40"]);
    assert_eq!(
        at_40.shown(),
        [
            prompt(numbers(1..=10) + &note(40, 130) + &numbers(54..=60)),
            NO_OUTPUT.to_owned()
        ],
        "20 characters from each end"
    );

    for run in [&whole, &at_100, &at_40] {
        assert_eq!(
            run.observations()[0],
            numbers(1..=60),
            "the trajectory keeps the whole output"
        );
    }
}

#[test]
fn max_stored_observation_length_bounds_what_the_trajectory_keeps_and_not_what_the_model_sees() {
    let actions = ["seq 1 60"];
    // `seq 1 60` prints 170 characters: 1..=9 are 18, 10..=60 are 152 (lines joined by `\n`).
    let numbers = |range: std::ops::RangeInclusive<u32>| {
        range.map(|n| n.to_string()).collect::<Vec<_>>().join("\n")
    };
    let prompt = |observation: String| {
        format!("{observation}\n(Open file: n/a)\n(Current directory: {{repo}})\nbash-$")
    };
    let at_40 = aci_run(
        &actions,
        &["--set", "agent.max_stored_observation_length=40"],
    );
    assert_eq!(
        at_40.shown(),
        [prompt(numbers(1..=60)), NO_OUTPUT.to_owned()],
        "the model sees the whole output"
    );
    assert_eq!(
        at_40.observations()[0],
        format!(
            "{}\n<aci: 130 characters elided from the middle of this observation in the \
             trajectory (agent.max_stored_observation_length = 40)>\n{}",
            numbers(1..=10),
            numbers(54..=60)
        ),
        "20 characters from each end"
    );
}
