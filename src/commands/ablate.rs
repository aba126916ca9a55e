//! `aci ablate`: each configuration's batch and evaluation, and the comparison table.

use std::path::PathBuf;
use std::process::ExitCode;

use aci::config;

use super::{Failure, Signals, default_run_id, load_instances};
use crate::cli::{self, AblateArgs};

/// `aci ablate`.
pub async fn ablate(args: AblateArgs) -> Result<ExitCode, Failure> {
    // Listen before any step starts: a signal is sent on to the running step.
    let signals = Signals::listen()?;
    // Check every configuration before anything runs: a typo fails now, not after an hour.
    for variant in std::iter::once(&args.base).chain(&args.variants) {
        config::resolve(&[args.base.clone(), variant.clone()], &args.sets)?;
    }
    let instances = load_instances(&args.instances)?;
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from("aci-ablations").join(default_run_id()));
    let images_args = match args.images {
        cli::Images::Local => Vec::new(),
        cli::Images::Swebench => vec!["--images".to_owned(), "swebench".to_owned()],
    };
    let mut batch_args = vec!["--model".to_owned(), args.model.clone()];
    batch_args.extend(images_args.iter().cloned());
    if let Some(api_base) = &args.api_base {
        batch_args.extend(["--api-base".to_owned(), api_base.clone()]);
    }
    if args.runtime == cli::Runtime::Local {
        batch_args.extend(["--runtime".to_owned(), "local".to_owned()]);
    }
    for set in &args.sets {
        batch_args.extend(["--set".to_owned(), set.clone()]);
    }
    batch_args.extend(args.cluster.to_args());
    let plan = aci::ablate::AblationPlan {
        exe: std::env::current_exe()
            .map_err(|e| Failure::new(format!("cannot find the aci executable: {e}")))?,
        instances: args.instances.clone(),
        instance_ids: instances.iter().map(|i| i.instance_id.clone()).collect(),
        base: args.base.clone(),
        variants: args.variants.clone(),
        output: output.clone(),
        workers: usize::try_from(args.workers).unwrap_or(1),
        repeats: usize::try_from(args.repeats).unwrap_or(1),
        batch_args,
        eval_args: [images_args, args.cluster.to_args()].concat(),
        replay_dir: args.replay_dir.clone(),
    };
    let control = signals.forward_to_steps();
    let ran = tokio::task::spawn_blocking(move || aci::ablate::run(&plan, &control))
        .await
        .map_err(|e| Failure::new(format!("the ablation stopped: {e}")))?;
    let table = match ran {
        Err(aci::ablate::AblateError::Interrupted { what }) => {
            eprintln!(
                "interrupted during {what}: the finished steps are in {}; rerun the same \
                 command to resume",
                output.display()
            );
            return Ok(ExitCode::from(130));
        }
        ran => ran?,
    };
    aci::ablate::write(&table, &output)?;
    print!("{}", table.to_markdown());
    eprintln!("wrote {}/ablation.{{md,csv,json,svg}}", output.display());
    Ok(ExitCode::SUCCESS)
}
