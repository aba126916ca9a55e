//! The configuration of every command, layered the same way: the built-in
//! `configs/default.yaml`, the command's own layer (`aci shell`'s), the `--images` preset, the
//! project config ([`project_config`]: `aci.yaml` in the working directory), the `--config`
//! files in order, then each `--set`. Relative paths in a config file (custom
//! commands, demonstrations) resolve against that file's directory; the built-in default's
//! resolve against the files compiled into the binary.

use std::path::{Path, PathBuf};

use aci::config::{self, Config};
use aci::image;

use super::Failure;
use crate::cli::{ConfigArgs, Images};

/// A resolved configuration and the directories its relative paths resolve against.
pub struct Settings {
    /// The configuration.
    pub config: Config,
    /// The directories of the `--config` files (and of the files they extend), in order.
    pub dirs: Vec<PathBuf>,
}

/// The configuration of `args`, with `command` (`(origin, YAML)`) layered right over the
/// built-in default; its warnings are printed.
pub fn resolve(args: &ConfigArgs, command: Option<(&str, &str)>) -> Result<Settings, Failure> {
    let preset = match args.images {
        Images::Local => None,
        Images::Swebench => Some(image::pull::swebench_preset()),
    };
    let presets: Vec<(&str, &str)> = command
        .into_iter()
        .chain(
            preset
                .iter()
                .map(|text| ("--images swebench", text.as_str())),
        )
        .collect();
    let files: Vec<PathBuf> = project_config(args.no_project_config)
        .into_iter()
        .chain(args.configs.iter().cloned())
        .collect();
    let config = config::resolve_with_presets(&presets, &files, &args.sets)?;
    for warning in config.warnings() {
        eprintln!("warning: {}\nhint: {}", warning.message, warning.hint);
    }
    // The directories of the files `extends` adds too: their relative paths resolve there.
    let dirs = config_dirs(&config::load::expand_extends(&files)?);
    Ok(Settings { config, dirs })
}

/// The project config's file name, read from the working directory.
pub const PROJECT_CONFIG: &str = "aci.yaml";

/// The environment variable that names another project config, or, set empty, turns it off.
pub const PROJECT_CONFIG_ENV: &str = "ACI_PROJECT_CONFIG";

/// The project config: the settings a user should not repeat on every command (`env.repo_url`,
/// `env.repo_cache`, …), layered like a first `--config` file. It is the file
/// `ACI_PROJECT_CONFIG` names (which must exist), none when that is set empty or `off` is true
/// (`--no-project-config`), else `aci.yaml` in the working directory when there is one.
pub fn project_config(off: bool) -> Option<PathBuf> {
    if off {
        return None;
    }
    match std::env::var_os(PROJECT_CONFIG_ENV) {
        Some(named) if named.is_empty() => None,
        Some(named) => Some(PathBuf::from(named)),
        None => Some(PathBuf::from(PROJECT_CONFIG)).filter(|path| path.is_file()),
    }
}

/// The directories of `files`, in order (the built-in default is compiled in, so not listed).
pub fn config_dirs(files: &[PathBuf]) -> Vec<PathBuf> {
    files
        .iter()
        .map(|path| path.parent().map(Path::to_owned).unwrap_or_default())
        .collect()
}
