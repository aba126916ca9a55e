//! Demonstrations: trajectories shown to the model before its task. The ones that ship in
//! `configs/demos/` are compiled in, so the built-in default config finds its demonstration
//! from any working directory and in an installed binary.

use std::path::{Path, PathBuf};

use minijinja::context;

use super::history::{HistoryItem, MessageType, Role};
use super::prompt::{Prompts, TemplateError};
use crate::hint::Hint;
use crate::trajectory::{self, Trajectory};

/// The files of `configs/demos/`, by their path relative to `configs/` (the directory of the
/// built-in `default.yaml`, which names them that way).
pub const BUILTIN: [(&str, &str); 1] = [(
    "demos/demo__inicfg-1.traj",
    include_str!("../../configs/demos/demo__inicfg-1.traj"),
)];

/// Why a demonstration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// No file at the path, and no built-in demonstration of that name.
    #[error("demonstration {path} not found (looked in {looked_in})")]
    NotFound {
        /// The path as configured.
        path: PathBuf,
        /// The directories searched.
        looked_in: String,
        /// The built-in names.
        builtin: String,
    },
    /// The file is not a trajectory.
    #[error("demonstration: {0}")]
    Read(#[from] trajectory::TrajectoryError),
    /// A built-in demonstration does not parse (a build defect).
    #[error("built-in demonstration {path}: {source}")]
    Builtin {
        /// Its name.
        path: String,
        /// The parse error.
        source: serde_json::Error,
    },
    /// The `demonstration` template failed.
    #[error(transparent)]
    Template(#[from] TemplateError),
}

impl Hint for DemoError {
    fn hint(&self) -> Option<String> {
        match self {
            DemoError::NotFound { builtin, .. } => Some(format!(
                "paths are relative to the config file that names them; built-in ones are {builtin}"
            )),
            _ => None,
        }
    }
}

/// The built-in demonstration at `path` (relative to `configs/`, e.g.
/// `demos/demo__inicfg-1.traj`), if there is one.
pub fn builtin(path: &Path) -> Option<&'static str> {
    let wanted = path.strip_prefix(".").unwrap_or(path);
    BUILTIN
        .iter()
        .find(|(name, _)| Path::new(name) == wanted)
        .map(|(_, text)| *text)
}

/// Loads the demonstration at `path`: an absolute path as it is; a relative one from the first
/// of `dirs` (the config files' directories, the last file's first) that has it, else from the
/// built-in `configs/demos/`, else relative to the working directory.
pub fn load(path: &Path, dirs: &[PathBuf]) -> Result<Trajectory, DemoError> {
    if path.is_absolute() {
        return Ok(trajectory::read(path)?);
    }
    if let Some(found) = dirs
        .iter()
        .rev()
        .map(|dir| dir.join(path))
        .find(|p| p.exists())
    {
        return Ok(trajectory::read(&found)?);
    }
    if let Some(text) = builtin(path) {
        return serde_json::from_str(text).map_err(|source| DemoError::Builtin {
            path: path.display().to_string(),
            source,
        });
    }
    if path.exists() {
        return Ok(trajectory::read(path)?);
    }
    let mut looked_in: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    looked_in.push("the working directory".to_owned());
    Err(DemoError::NotFound {
        path: path.to_owned(),
        looked_in: looked_in.join(", "),
        builtin: BUILTIN.map(|(name, _)| name).join(", "),
    })
}

/// A demonstration rendered through the `demonstration` template into one user message
/// (SWE-agent's `put_demos_in_history: false` layout): the contents of its history without the
/// system prompt and without demonstrations of its own, joined by newlines.
pub fn render(demo: &Trajectory, prompts: &Prompts) -> Result<HistoryItem, TemplateError> {
    let text: Vec<&str> = demo
        .history
        .iter()
        .filter(|item| item.role != Role::System && !item.is_demo)
        .map(|item| item.content.as_str())
        .collect();
    let content = prompts.render(
        "demonstration",
        &context! { demonstration => text.join("\n") },
    )?;
    let mut item = HistoryItem::new(Role::User, content, MessageType::Demonstration);
    item.is_demo = true;
    Ok(item)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_demonstration_is_a_finished_submitted_trajectory() {
        for (name, text) in BUILTIN {
            let demo: Trajectory = serde_json::from_str(text).unwrap();
            assert_eq!(
                (
                    demo.info
                        .exit_status
                        .as_ref()
                        .map(ToString::to_string)
                        .as_deref(),
                    demo.info.submission.is_some()
                ),
                (Some("submitted"), true),
                "{name}"
            );
            assert!(demo.history.iter().all(|item| !item.is_demo), "{name}");
        }
    }

    #[test]
    fn builtin_names_match_with_or_without_a_leading_dot() {
        let text = BUILTIN[0].1;
        let name = Path::new(BUILTIN[0].0);
        assert_eq!(
            (builtin(name), builtin(&Path::new(".").join(name))),
            (Some(text), Some(text))
        );
        assert_eq!(builtin(Path::new("demos/missing.traj")), None);
    }

    #[test]
    fn a_file_next_to_a_config_wins_over_the_builtin_of_the_same_name() {
        let dir = tempfile::tempdir().unwrap();
        let own = Trajectory {
            environment: "mine".to_owned(),
            ..Trajectory::default()
        };
        let path = dir.path().join(BUILTIN[0].0);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        trajectory::write_atomic(&path, &own).unwrap();
        let loaded = load(Path::new(BUILTIN[0].0), &[dir.path().to_owned()]).unwrap();
        assert_eq!(loaded.environment, "mine");
        let builtin = load(Path::new(BUILTIN[0].0), &[]).unwrap();
        assert_eq!(builtin.environment, "aci");
    }

    #[test]
    fn a_missing_demonstration_names_where_it_looked() {
        let error = load(Path::new("demos/nope.traj"), &[PathBuf::from("/cfg")]).unwrap_err();
        let text = crate::hint::with_hint(&error);
        assert!(
            text.starts_with(
                "demonstration demos/nope.traj not found (looked in /cfg, the working directory)"
            ),
            "{text}"
        );
        assert!(text.contains("hint: "), "{text}");
    }
}
