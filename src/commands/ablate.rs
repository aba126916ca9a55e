//! `aci ablate`: each configuration's batch and evaluation, run here through the batch and
//! evaluation of [`super::batch`] and [`super::eval`] (the library's `run_batch` and
//! `evaluate`), and the comparison table ([`aci::ablate`]).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aci::batch::Interrupt;
use aci::config;

use super::batch::{BatchEnd, Stop};
use super::{Failure, Out, Signals, default_run_id, load_instances};
use crate::cli::{AblateArgs, AgentArgs, BatchArgs, ConfigArgs, EvalArgs, SelectionArgs};

/// Seconds the tests of one instance may run in an ablation's evaluation (`aci eval`'s
/// default).
const EVAL_TIMEOUT_SECS: f64 = 1800.0;

/// `aci ablate`.
pub async fn ablate(args: AblateArgs) -> Result<ExitCode, Failure> {
    // Listen before any step starts: the first signal stops the running step in order and
    // lets no further step start; the second quits at once.
    let signals = Signals::listen()?;
    // Check every configuration before anything runs: a typo fails now, not after an hour.
    // Each one's protocol goes into the table.
    let mut protocols = Vec::new();
    for variant in std::iter::once(&args.base).chain(&args.variants) {
        let layers: Vec<PathBuf> = super::settings::project_config(false)
            .into_iter()
            .chain([args.base.clone(), variant.clone()])
            .collect();
        protocols.push(aci::ablate::protocol::protocol(&config::resolve(
            &layers, &args.sets,
        )?));
    }
    let instances = load_instances(&args.instances)?;
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from("aci-ablations").join(default_run_id()));
    let plan = aci::ablate::AblationPlan {
        instance_ids: instances.iter().map(|i| i.instance_id.clone()).collect(),
        base: args.base.clone(),
        variants: args.variants.clone(),
        output: output.clone(),
        repeats: usize::try_from(args.repeats).unwrap_or(1),
        replay_dir: args.replay_dir.clone(),
        protocols,
    };
    let mut steps = InProcess {
        args: &args,
        stop: signals.spawn(None, None),
    };
    let table = match aci::ablate::run(&plan, &mut steps).await {
        Ok(table) => table,
        Err(StepError::Interrupted(what)) => {
            eprintln!(
                "interrupted during {what}: the finished steps are in {}; rerun the same \
                 command to resume",
                output.display()
            );
            return Ok(ExitCode::from(130));
        }
        Err(StepError::Failed(failure)) => return Err(failure),
    };
    aci::ablate::write(&table, &output)?;
    print!("{}", table.to_markdown());
    eprintln!("wrote {}/ablation.{{md,csv,json,svg}}", output.display());
    Ok(ExitCode::SUCCESS)
}

/// Why a step ended the ablation.
enum StepError {
    /// A signal stopped the step named (or came before it started).
    Interrupted(String),
    /// The step failed.
    Failed(Failure),
}

impl From<Failure> for StepError {
    fn from(failure: Failure) -> Self {
        StepError::Failed(failure)
    }
}

/// The steps of `aci ablate`, run in this process.
struct InProcess<'a> {
    args: &'a AblateArgs,
    /// Set by the first signal.
    stop: Interrupt,
}

impl InProcess<'_> {
    /// Announces the step `what`, unless a signal came first.
    fn start(&self, what: &str) -> Result<(), StepError> {
        if self.stop.is_set() {
            return Err(StepError::Interrupted(what.to_owned()));
        }
        eprintln!("ablate: {what}");
        Ok(())
    }

    /// After the step `what`: interrupted if a signal came.
    fn end(&self, what: String, failed: bool) -> Result<(), StepError> {
        if self.stop.is_set() {
            Err(StepError::Interrupted(what))
        } else if failed {
            Err(StepError::Failed(Failure::new(format!(
                "{what} failed (its error is above)"
            ))))
        } else {
            Ok(())
        }
    }

    /// The workers of an evaluation, as many as the batch's.
    fn eval_workers(&self) -> u16 {
        u16::try_from(self.args.workers).unwrap_or(u16::MAX)
    }
}

/// The configuration directory of a step writing into `dir` (its `run` or `eval`).
fn step_name(dir: &Path) -> String {
    dir.parent().unwrap_or(dir).display().to_string()
}

impl aci::ablate::Steps for InProcess<'_> {
    type Error = StepError;

    async fn batch(
        &mut self,
        layers: &[PathBuf],
        replay_dir: Option<&Path>,
        run: &Path,
    ) -> Result<(), StepError> {
        let what = format!("batch {}", step_name(run));
        self.start(&what)?;
        let args = self.args;
        let batch = BatchArgs {
            instances: args.instances.clone(),
            replay_dir: replay_dir.map(Path::to_owned),
            workers: args.workers,
            selection: SelectionArgs {
                filter: None,
                slice: None,
            },
            shuffle: false,
            seed: None,
            shard: None,
            redo: false,
            plan: false,
            agent: AgentArgs {
                config: ConfigArgs {
                    configs: layers.to_vec(),
                    sets: args.sets.clone(),
                    images: args.images,
                    no_project_config: false,
                },
                model: args.model.clone(),
                api_base: args.api_base.clone(),
                runtime: args.runtime,
                output: Some(run.to_owned()),
                run_id: None,
                cluster: args.cluster.clone(),
            },
        };
        let stop = Stop::Given(self.stop.clone());
        let end = super::batch::execute(&batch, stop, Out::Stderr).await?;
        self.end(what, end == BatchEnd::Failed)
    }

    async fn eval(&mut self, preds: &Path, eval: &Path) -> Result<(), StepError> {
        let what = format!("eval {}", step_name(eval));
        self.start(&what)?;
        let args = self.args;
        let eval = EvalArgs {
            instances: args.instances.clone(),
            predictions: Some(preds.display().to_string()),
            from_logs: None,
            plan: false,
            workers: self.eval_workers(),
            run_id: None,
            output: Some(eval.to_owned()),
            timeout: EVAL_TIMEOUT_SECS,
            expect: None,
            spec: None,
            network: false,
            ids: Vec::new(),
            selection: SelectionArgs {
                filter: None,
                slice: None,
            },
            config: ConfigArgs {
                configs: Vec::new(),
                sets: Vec::new(),
                images: args.images,
                no_project_config: false,
            },
            cluster: args.cluster.clone(),
        };
        let code = super::eval::execute(&eval, Some(self.stop.clone()), Out::Stderr).await?;
        self.end(what, code != ExitCode::SUCCESS)
    }
}
