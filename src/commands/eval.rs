//! `aci eval`: read the inputs, run, print, and turn the outcome into an
//! exit code (3 when `--expect` finds a regression, 130 on Ctrl-C or SIGTERM).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use aci::config::Seconds;
use aci::eval::from_logs::{FromLogsSettings, grade_logs};
use aci::eval::predictions::{Prediction, gold_predictions, parse_predictions};
use aci::eval::report::{RunSummary, expected_but_unresolved, parse_expected};
use aci::eval::run::{EvalSettings, InstanceDone, InstanceStatus, evaluate};
use aci::instance::{self, Instance, Selection};
use aci::provision::Provisioner;
use aci::text::escape_controls;

use aci::batch::Interrupt;

use super::{
    Failure, Out, Signals, connect_engine, create_output_dir, default_run_id, engine, keep_ids,
    load_instances, settings, shown,
};
use crate::cli::{EvalArgs, SpecArg};

/// `aci eval`.
pub async fn eval(args: EvalArgs) -> Result<ExitCode, Failure> {
    execute(&args, None, Out::Stdout).await
}

/// Grades as `args` say, stopped in order by `stop` (by default: SIGINT or SIGTERM), with the
/// summary on `out`.
pub async fn execute(
    args: &EvalArgs,
    stop: Option<Interrupt>,
    out: Out,
) -> Result<ExitCode, Failure> {
    let timeout = Seconds::new(args.timeout)
        .map_err(|error| Failure::new(format!("invalid --timeout: {error}")))?;
    let all = load_instances(&args.instances)?;
    let predictions = args
        .predictions
        .as_deref()
        .map(|source| load_predictions(source, &all, &args.instances))
        .transpose()?;
    let expected = args.expect.as_deref().map(read_expected).transpose()?;
    let selected = select(all, args)?;
    if selected.is_empty() {
        return Err(Failure::new(format!(
            "no instance of {} is selected",
            args.instances.display()
        ))
        .hint("check --id, --filter and --slice"));
    }
    if args.plan {
        let mut config = settings::resolve(&args.config, None)?.config;
        if let Some(spec) = args.spec {
            config.env.spec_source = spec.source();
        }
        return super::print_plans(&selected, &config.env, false);
    }
    let run_id = args.run_id.clone().unwrap_or_else(default_run_id);
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from("aci-eval").join(&run_id));
    create_output_dir(&output)?;
    if let Some(logs) = &args.from_logs {
        let settings = FromLogsSettings {
            logs: logs.clone(),
            output,
            spec: args.spec.map(SpecArg::source).unwrap_or_default(),
        };
        return eval_from_logs(&selected, predictions.as_deref(), &settings, expected, out);
    }
    let Some(predictions) = predictions else {
        return Err(
            Failure::new("--predictions is required unless --from-logs is given")
                .hint("pass --predictions FILE or --predictions gold"),
        );
    };
    let mut config = settings::resolve(&args.config, None)?.config;
    if let Some(spec) = args.spec {
        config.env.spec_source = spec.source();
    }
    // A spec file (env.specs) that cannot be read stops the run here, not once per instance.
    let provisioner = Arc::new(Provisioner::new());
    provisioner.table(&config.env.specs)?;
    // SIGTERM (a CI runner's stop, `kill`) ends the run as Ctrl-C does.
    let mut stop = match stop {
        Some(stop) => stop,
        None => Signals::listen()?.first_sets(),
    };
    let docker = connect_engine(args.cluster.engine).await?;
    let engine = engine::eval_engine(docker, &args.cluster, &config.env).await?;
    let settings = EvalSettings {
        run_id: run_id.clone(),
        output: output.clone(),
        workers: usize::from(args.workers),
        timeout: timeout.duration(),
        env: config.env,
        on_step: Arc::new(|line: &str| eprintln!("{}", escape_controls(line))),
        provisioner,
        network: args.network,
    };
    let total = selected.len();
    eprintln!(
        "evaluating {total} instance(s) with {} worker(s) into {}",
        args.workers,
        shown(&output)
    );
    let mut finished = 0;
    let mut progress = |done: &InstanceDone| {
        finished += 1;
        eprintln!("[{finished}/{total}] {}", done.describe());
    };
    let result = tokio::select! {
        result = evaluate(engine.clone(), selected, &predictions, settings, &mut progress) => result,
        () = stop.wait() => {
            engine.remove_run(&run_id).await;
            eprintln!(
                "interrupted: the evaluation containers were removed; finished instances keep \
                 their files in {}; rerun the same command to resume",
                shown(&output)
            );
            return Ok(ExitCode::from(130));
        }
    };
    engine.remove_run(&run_id).await;
    let summary = result?;
    print_summary(&summary, &output, out);
    Ok(check_expected(expected.as_deref(), &summary))
}

/// `aci eval --from-logs DIR`: no container, no Docker daemon.
fn eval_from_logs(
    selected: &[Instance],
    predictions: Option<&[Prediction]>,
    settings: &FromLogsSettings,
    expected: Option<Vec<String>>,
    out: Out,
) -> Result<ExitCode, Failure> {
    let total = selected.len();
    eprintln!(
        "grading the logs of {total} instance(s) under {} into {}",
        shown(&settings.logs),
        shown(&settings.output)
    );
    if !settings.logs.is_dir() {
        return Err(Failure::new(format!(
            "--from-logs {} is not a directory",
            settings.logs.display()
        )));
    }
    let mut progress = |done: &InstanceDone| {
        if done.status != InstanceStatus::NoPrediction {
            eprintln!("{}", done.describe());
        }
    };
    let summary = grade_logs(selected, predictions, settings, &mut progress)
        .map_err(|e| Failure::new(e.to_string()))?;
    print_summary(&summary, &settings.output, out);
    Ok(check_expected(expected.as_deref(), &summary))
}

/// What to do about a predictions file that is not there.
const PREDICTIONS_HINT: &str = "aci batch writes its predictions to <output>/preds.json; \
--predictions gold evaluates each record's own patch";

/// `gold`, or a predictions file in any of the three shapes. Every prediction must name an
/// instance of the instances file.
fn load_predictions(
    source: &str,
    instances: &[Instance],
    instances_file: &Path,
) -> Result<Vec<Prediction>, Failure> {
    if source == "gold" {
        return Ok(gold_predictions(instances));
    }
    let text = std::fs::read_to_string(source).map_err(|e| {
        let failure = Failure::new(format!("cannot read the predictions {source}: {e}"));
        if e.kind() == std::io::ErrorKind::NotFound {
            failure.hint(PREDICTIONS_HINT)
        } else {
            failure
        }
    })?;
    let loaded = parse_predictions(&text).map_err(|e| Failure::new(format!("{source}: {e}")))?;
    if !loaded.duplicates.is_empty() {
        eprintln!(
            "warning: {} instance(s) have more than one prediction in {source}; the last of each \
             is kept, as the SWE-bench harness does: {}",
            loaded.duplicates.len(),
            escape_controls(&loaded.duplicates.join(", "))
        );
    }
    let predictions = loaded.predictions;
    let known: BTreeSet<&str> = instances.iter().map(|i| i.instance_id.as_str()).collect();
    let unknown: Vec<&str> = predictions
        .iter()
        .map(|p| p.instance_id.as_str())
        .filter(|id| !known.contains(id))
        .collect();
    if !unknown.is_empty() {
        return Err(Failure::new(format!(
            "{} prediction(s) in {source} name instances that are not in {}: {}",
            unknown.len(),
            instances_file.display(),
            unknown.join(", ")
        ))
        .hint("grade predictions against the instances file they were made from"));
    }
    Ok(predictions)
}

fn read_expected(path: &Path) -> Result<Vec<String>, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Failure::new(format!(
            "cannot read the --expect file {}: {e}",
            path.display()
        ))
    })?;
    parse_expected(&text).map_err(|e| Failure::new(format!("{}: {e}", path.display())))
}

/// `--id` (exact, repeatable), then `--filter`, then `--slice`, in file order.
fn select(instances: Vec<Instance>, args: &EvalArgs) -> Result<Vec<Instance>, Failure> {
    let instances = keep_ids(instances, &args.ids, &args.instances)?;
    let selection = Selection {
        shuffle_seed: None,
        filter: args.selection.filter.clone(),
        slice: args.selection.slice,
        shard: None,
    };
    Ok(instance::select(instances, &selection))
}

fn print_summary(summary: &RunSummary, output: &Path, out: Out) {
    out.print(&format!(
        "resolved {} of {} instances (unresolved {}, errors {}, empty patches {}, \
         without prediction {}); resolve rate {:.1}%, {:.1}% without the {} infrastructure \
         failure(s)\n",
        summary.resolved_instances,
        summary.total_instances,
        summary.unresolved_instances,
        summary.error_instances,
        summary.empty_patch_instances,
        summary.incomplete_ids.len(),
        summary.resolve_rate * 100.0,
        summary.resolve_rate_without_infrastructure * 100.0,
        summary.infrastructure_failures
    ));
    if !summary.causes.is_empty() {
        let causes: Vec<String> = summary
            .causes
            .iter()
            .map(|(kind, count)| format!("{kind} {count}"))
            .collect();
        out.print(&format!("causes: {}\n", causes.join(", ")));
    }
    out.print(&format!(
        "summary: {}\n",
        shown(&output.join("report.json"))
    ));
    let touching = &summary.resolved_touching_tests_ids;
    if !touching.is_empty() {
        eprintln!(
            "warning: {} resolved instance(s) changed test infrastructure, so the tests that \
             resolved them did not run as given: {}\nhint: review `touches_tests` in each one's \
             report.json",
            touching.len(),
            escape_controls(&touching.join(", "))
        );
    }
}

/// Exit status 3, naming each expected id that is not resolved and what it is instead.
fn check_expected(expected: Option<&[String]>, summary: &RunSummary) -> ExitCode {
    let Some(expected) = expected else {
        return ExitCode::SUCCESS;
    };
    let missing = expected_but_unresolved(expected, summary);
    if missing.is_empty() {
        eprintln!(
            "--expect: all {} expected instance(s) are resolved",
            expected.len()
        );
        return ExitCode::SUCCESS;
    }
    eprintln!(
        "regression: {} of {} expected instance(s) are not resolved:",
        missing.len(),
        expected.len()
    );
    for id in &missing {
        let state = [
            (&summary.unresolved_ids, "unresolved"),
            (&summary.error_ids, "error"),
            (&summary.empty_patch_ids, "empty patch"),
            (&summary.incomplete_ids, "no prediction"),
        ]
        .into_iter()
        .find(|(ids, _)| ids.contains(id))
        .map_or("not evaluated in this run", |(_, state)| state);
        eprintln!("  {}: {state}", escape_controls(id));
    }
    ExitCode::from(3)
}
