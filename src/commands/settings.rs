//! The configuration of every command, layered the same way: the built-in
//! `configs/default.yaml`, the command's own layer (`aci shell`'s), the `--images` preset, the
//! `--config` files in order, then each `--set`. Relative paths in a config file (custom
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
    /// The directories of the `--config` files, in order.
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
    let config = config::resolve_with_presets(&presets, &args.configs, &args.sets)?;
    for warning in config.warnings() {
        eprintln!("warning: {}\nhint: {}", warning.message, warning.hint);
    }
    Ok(Settings {
        config,
        dirs: config_dirs(&args.configs),
    })
}

/// The directories of `files`, in order (the built-in default is compiled in, so not listed).
pub fn config_dirs(files: &[PathBuf]) -> Vec<PathBuf> {
    files
        .iter()
        .map(|path| path.parent().map(Path::to_owned).unwrap_or_default())
        .collect()
}
