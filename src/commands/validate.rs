//! `aci validate`: read the instances and the config, grade each instance with its gold patch
//! and with none, print the table, and remove the run's containers (also on Ctrl-C or SIGTERM,
//! exit 130).

use std::process::ExitCode;
use std::sync::Arc;

use aci::config::Seconds;
use aci::engine::Engine;
use aci::eval::run::EvalSettings;
use aci::provision::Provisioner;
use aci::text::{escape_controls, escape_controls_in_lines};
use aci::validate::{table, validate as validate_instances};

use super::{
    Failure, Signals, connect_engine, create_output_dir, default_run_id, engine, keep_ids,
    load_instances, settings,
};
use crate::cli::ValidateArgs;

/// `aci validate`.
pub async fn validate(args: ValidateArgs) -> Result<ExitCode, Failure> {
    let timeout = Seconds::new(args.timeout)
        .map_err(|error| Failure::new(format!("invalid --timeout: {error}")))?;
    let instances = keep_ids(load_instances(&args.instances)?, &args.ids, &args.instances)?;
    if instances.is_empty() {
        return Err(Failure::new(format!(
            "no instance of {} is selected",
            args.instances.display()
        )));
    }
    let mut config = settings::resolve(&args.config, None)?.config;
    if let Some(spec) = args.spec {
        config.env.spec_source = spec.source();
    }
    if args.plan {
        return super::print_plans(&instances, &config.env, false);
    }
    let Some(output) = args.output.clone() else {
        return Err(Failure::new(
            "validate needs --output DIR (only --plan goes without)",
        ));
    };
    // A spec file that cannot be read stops the run here, not once per instance.
    let provisioner = Arc::new(Provisioner::new());
    provisioner.table(&config.env.specs)?;
    create_output_dir(&output)?;
    let run_id = args.run_id.clone().unwrap_or_else(default_run_id);
    // SIGTERM (a CI runner's stop, `kill`) ends the run as Ctrl-C does.
    let mut signals = Signals::listen()?;
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
    eprintln!(
        "validating {} instance(s) with {} worker(s) into {}",
        instances.len(),
        args.workers,
        output.display()
    );
    let mut progress = |line: &str| eprintln!("{}", escape_controls_in_lines(line));
    let result = tokio::select! {
        result = validate_instances(engine.clone(), instances, settings, &mut progress) => result,
        () = signals.first() => {
            remove_containers(&engine, &run_id).await;
            eprintln!(
                "interrupted: the containers were removed; rerun the same command to resume"
            );
            return Ok(ExitCode::from(130));
        }
    };
    remove_containers(&engine, &run_id).await;
    let verdicts = result?;
    // The ids and the notes (errors quoting paths and build output) come from outside.
    print!("{}", escape_controls_in_lines(&table(&verdicts)));
    println!("verdicts: {}", output.join("validation.json").display());
    Ok(ExitCode::SUCCESS)
}

/// Removes the containers (or pods) of both evaluations (`<run id>-gold`, `<run id>-empty`).
async fn remove_containers(engine: &Engine, run_id: &str) {
    for part in ["gold", "empty"] {
        engine.remove_run(&format!("{run_id}-{part}")).await;
    }
}
