//! Layering: `--config a.yaml --config b.yaml --set k=v` → one [`Config`].
//!
//! Precedence, lowest first: the built-in defaults, each `--config` file in the order given,
//! then each `--set` in the order given. Mappings merge key by key; any other value (a scalar,
//! a list) replaces the earlier one whole. Each layer is checked against the schema on its own
//! first, so an error names the file, the line and the key, with the nearest valid key as a
//! hint; a `--set` is type-checked the same way. A file's `extends` puts the files it names
//! (relative to it) right before it ([`expand_extends`]).

use std::path::{Path, PathBuf};

use serde_yaml::{Mapping, Value};
use sha2::{Digest, Sha256};

use super::Config;
use crate::hint::Hint;

/// Why a configuration could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A file could not be read.
    #[error("cannot read config {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file (or a `--set`) does not fit the schema.
    #[error("{origin}{location}: {message}")]
    Invalid {
        /// The file path, or `--set key=value`.
        origin: String,
        /// `:line:column` when known.
        location: String,
        /// serde's message, which names the key path.
        message: String,
        /// The nearest valid key, as a `hint:` line's text ([`Hint`]).
        hint: Option<String>,
    },
    /// A file (or a `--set` value) nests collections deeper than [`MAX_DEPTH`]: no key of the
    /// schema is that deep, and parsing such a text takes minutes.
    #[error("{origin}:{line}: nested more than {MAX_DEPTH} levels deep; no configuration key is")]
    TooDeep {
        /// The file path, or `--set key=value`.
        origin: String,
        /// The 1-based line where the limit is passed.
        line: usize,
    },
    /// A `--set` without `=`.
    #[error("--set {0}: expected key.path=value")]
    SetSyntax(String),
    /// A file extends itself, directly or through others.
    #[error("config {path} extends itself (through {chain})")]
    ExtendsCycle {
        /// The file.
        path: PathBuf,
        /// The files between, in order, joined with ` -> `.
        chain: String,
    },
    /// `extends` in a layer that is not a file (a `--set`, a built-in layer).
    #[error("{0}: `extends` works only in a config file")]
    ExtendsOutsideFile(String),
}

/// The nearest valid key for an unknown one.
impl Hint for ConfigError {
    fn hint(&self) -> Option<String> {
        match self {
            ConfigError::Invalid { hint, .. } => hint.clone(),
            _ => None,
        }
    }
}

/// A setting that is valid but works against another, for a `warning:` line and a `hint:`
/// line under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigWarning {
    /// What is wrong.
    pub message: String,
    /// What to do about it.
    pub hint: String,
}

/// The built-in defaults, as a YAML document.
fn defaults_value() -> Result<Value, ConfigError> {
    serde_yaml::to_value(Config::default()).map_err(|e| invalid("built-in defaults", None, &e))
}

fn invalid(
    origin: &str,
    location: Option<(usize, usize)>,
    error: &serde_yaml::Error,
) -> ConfigError {
    let message = error.to_string();
    // serde_yaml appends " at line L column C"; the location is reported in front instead.
    let message = match message.rfind(" at line ") {
        Some(at) => message[..at].to_owned(),
        None => message,
    };
    ConfigError::Invalid {
        origin: origin.to_owned(),
        location: location
            .map(|(l, c)| format!(":{l}:{c}"))
            .unwrap_or_default(),
        hint: nearest_key_hint(&message),
        message,
    }
}

/// For "unknown field `x`, expected one of `a`, `b`": the expected key closest to `x`.
fn nearest_key_hint(message: &str) -> Option<String> {
    let rest = message.split("unknown field `").nth(1)?;
    let (unknown, expected) = rest.split_once('`')?;
    let candidates: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    candidates
        .iter()
        .map(|c| (edit_distance(unknown, c), *c))
        .min()
        .filter(|(distance, c)| *distance <= (c.len().max(unknown.len()) / 2).max(2))
        .map(|(_, c)| format!("did you mean `{c}`?"))
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let current = row[j + 1];
            row[j + 1] = (current + 1)
                .min(row[j] + 1)
                .min(previous + usize::from(ca != *cb));
            previous = current;
        }
    }
    row[b.len()]
}

/// Merges `layer` into `base`: mappings key by key, anything else replaced.
fn merge(base: &mut Value, layer: Value) {
    match (base, layer) {
        (Value::Mapping(base), Value::Mapping(layer)) => {
            for (key, value) in layer {
                match base.get_mut(&key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (base, layer) => *base = layer,
    }
}

/// How deep a configuration text may nest mappings and lists (block or flow); the schema's
/// deepest key is a few levels down.
pub const MAX_DEPTH: usize = 32;

/// The 1-based line where `text` first nests more than `max` levels deep, counting block
/// indentation levels, `- ` list markers and open flow brackets (outside quotes and comments).
/// A rough count, always at least the real depth.
fn too_deep_at(text: &str, max: usize) -> Option<usize> {
    let mut indents: Vec<usize> = Vec::new();
    let mut flow = 0usize;
    for (index, line) in text.lines().enumerate() {
        let content = line.trim_start_matches(' ');
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        let indent = line.len() - content.len();
        if flow == 0 {
            while indents.last().is_some_and(|&last| last >= indent) {
                indents.pop();
            }
            indents.push(indent);
        }
        let dashes = content
            .as_bytes()
            .chunks(2)
            .take_while(|pair| *pair == b"- ")
            .count();
        let (mut single, mut double, mut previous) = (false, false, ' ');
        for c in content.chars() {
            match c {
                '\'' if !double => single = !single,
                '"' if !single && previous != '\\' => double = !double,
                '#' if !single && !double && previous.is_whitespace() => break,
                '[' | '{' if !single && !double => flow += 1,
                ']' | '}' if !single && !double => flow = flow.saturating_sub(1),
                _ => {}
            }
            if indents.len() + dashes + flow > max {
                return Some(index + 1);
            }
            previous = c;
        }
        if indents.len() + dashes > max {
            return Some(index + 1);
        }
    }
    None
}

fn check_depth(origin: &str, text: &str) -> Result<(), ConfigError> {
    match too_deep_at(text, MAX_DEPTH) {
        Some(line) => Err(ConfigError::TooDeep {
            origin: origin.to_owned(),
            line,
        }),
        None => Ok(()),
    }
}

/// Parses one layer's text, checking it against the schema on its own.
fn parse_layer(origin: &str, text: &str) -> Result<Value, ConfigError> {
    check_depth(origin, text)?;
    let located =
        |e: &serde_yaml::Error| invalid(origin, e.location().map(|l| (l.line(), l.column())), e);
    serde_yaml::from_str::<Config>(text).map_err(|e| located(&e))?;
    let mut value: Value = serde_yaml::from_str(text).map_err(|e| located(&e))?;
    if let Value::Mapping(mapping) = &mut value {
        mapping.remove("extends");
    }
    Ok(if value.is_null() {
        Value::Mapping(Mapping::new())
    } else {
        value
    })
}

/// The files a file's `extends` names, resolved against its directory (none when it has no
/// `extends`).
fn extended_files(path: &Path) -> Result<Vec<PathBuf>, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    let origin = path.display().to_string();
    check_depth(&origin, &text)?;
    let layer: Config = serde_yaml::from_str(&text)
        .map_err(|e| invalid(&origin, e.location().map(|l| (l.line(), l.column())), &e))?;
    let named = match layer.extends {
        None => Vec::new(),
        Some(super::Extends::One(one)) => vec![one],
        Some(super::Extends::Many(many)) => many,
    };
    let dir = path.parent().unwrap_or_else(|| Path::new(""));
    Ok(named.into_iter().map(|file| dir.join(file)).collect())
}

/// `files` with every file's `extends` in front of it, recursively, in layering order: the
/// files a config extends, then the config. A file may appear more than once (two configs
/// extending the same one); a file that extends itself is an error.
///
/// # Errors
/// A file cannot be read or does not fit the schema, or `extends` runs in a circle.
pub fn expand_extends(files: &[PathBuf]) -> Result<Vec<PathBuf>, ConfigError> {
    fn visit(
        path: &Path,
        stack: &mut Vec<PathBuf>,
        out: &mut Vec<PathBuf>,
    ) -> Result<(), ConfigError> {
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
        if let Some(at) = stack.iter().position(|seen| *seen == key) {
            let chain = stack[at..]
                .iter()
                .chain([&key])
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" -> ");
            return Err(ConfigError::ExtendsCycle {
                path: path.to_owned(),
                chain,
            });
        }
        stack.push(key);
        for extended in extended_files(path)? {
            visit(&extended, stack, out)?;
        }
        stack.pop();
        out.push(path.to_owned());
        Ok(())
    }
    let mut out = Vec::new();
    for file in files {
        visit(file, &mut Vec::new(), &mut out)?;
    }
    Ok(out)
}

/// Whether the layer text sets `extends` (which only a file may).
fn has_extends(text: &str) -> bool {
    serde_yaml::from_str::<Value>(text)
        .ok()
        .and_then(|value| value.get("extends").cloned())
        .is_some()
}

/// Turns `a.b.c=value` into the YAML layer `{a: {b: {c: value}}}`, the value parsed as YAML.
fn set_layer(assignment: &str) -> Result<Value, ConfigError> {
    let (path, raw) = assignment
        .split_once('=')
        .ok_or_else(|| ConfigError::SetSyntax(assignment.to_owned()))?;
    if path.is_empty() || path.split('.').any(str::is_empty) {
        return Err(ConfigError::SetSyntax(assignment.to_owned()));
    }
    if path.split('.').next() == Some("extends") {
        return Err(ConfigError::ExtendsOutsideFile(format!(
            "--set {assignment}"
        )));
    }
    let origin = format!("--set {assignment}");
    check_depth(&origin, raw)?;
    let scalar: Value = serde_yaml::from_str(raw).map_err(|e| invalid(&origin, None, &e))?;
    let scalar = if scalar.is_null()
        && !raw.trim().is_empty()
        && raw.trim() != "null"
        && raw.trim() != "~"
    {
        Value::String(raw.to_owned())
    } else {
        scalar
    };
    let value = path.rsplit('.').fold(scalar, |inner, key| {
        let mut map = Mapping::new();
        map.insert(Value::String(key.to_owned()), inner);
        Value::Mapping(map)
    });
    // Checked through text, so serde's message carries the key path.
    let text = serde_yaml::to_string(&value).map_err(|e| invalid(&origin, None, &e))?;
    serde_yaml::from_str::<Config>(&text).map_err(|e| invalid(&origin, None, &e))?;
    Ok(value)
}

/// `configs/default.yaml`, compiled in: the first layer of every configuration.
pub const DEFAULT_CONFIG: &str = include_str!("../../configs/default.yaml");

/// Resolves the configuration: the built-in `configs/default.yaml`, then `files` (each after
/// the files its `extends` names), then `sets`.
pub fn resolve(files: &[PathBuf], sets: &[String]) -> Result<Config, ConfigError> {
    resolve_with_presets(&[], files, sets)
}

/// [`resolve`] with `presets` (`(origin, YAML text)`, e.g. `--images swebench`) layered right
/// after the built-in default, so that config files and `--set` override them.
pub fn resolve_with_presets(
    presets: &[(&str, &str)],
    files: &[PathBuf],
    sets: &[String],
) -> Result<Config, ConfigError> {
    let mut merged = defaults_value()?;
    merge(
        &mut merged,
        parse_layer("configs/default.yaml (built in)", DEFAULT_CONFIG)?,
    );
    for (origin, text) in presets {
        if has_extends(text) {
            return Err(ConfigError::ExtendsOutsideFile((*origin).to_owned()));
        }
        merge(&mut merged, parse_layer(origin, text)?);
    }
    for path in &expand_extends(files)? {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.clone(),
            source,
        })?;
        merge(
            &mut merged,
            parse_layer(&path.display().to_string(), &text)?,
        );
    }
    for assignment in sets {
        merge(&mut merged, set_layer(assignment)?);
    }
    serde_yaml::from_value(merged).map_err(|e| invalid("the merged configuration", None, &e))
}

/// Resolves from YAML text (tests, embedded configs).
pub fn resolve_text(layers: &[(&str, &str)], sets: &[String]) -> Result<Config, ConfigError> {
    let mut merged = defaults_value()?;
    for (origin, text) in layers {
        if has_extends(text) {
            return Err(ConfigError::ExtendsOutsideFile((*origin).to_owned()));
        }
        merge(&mut merged, parse_layer(origin, text)?);
    }
    for assignment in sets {
        merge(&mut merged, set_layer(assignment)?);
    }
    serde_yaml::from_value(merged).map_err(|e| invalid("the merged configuration", None, &e))
}

impl Config {
    /// Settings that are valid but work against each other.
    pub fn warnings(&self) -> Vec<ConfigWarning> {
        let mut warnings = Vec::new();
        let wall = self.agent.limits.max_wall_time_secs;
        if wall > 0 && self.env.instance_timeout.get() <= wall as f64 {
            warnings.push(ConfigWarning {
                message: format!(
                    "env.instance_timeout ({} s) ends an instance before \
                     agent.limits.max_wall_time_secs ({wall} s) can, so the model is never \
                     warned that its time is running out",
                    self.env.instance_timeout
                ),
                hint: "keep env.instance_timeout above agent.limits.max_wall_time_secs".to_owned(),
            });
        }
        warnings
    }

    /// The resolved configuration as YAML, as saved with every run.
    pub fn to_yaml(&self) -> String {
        serde_yaml::to_string(self).unwrap_or_default()
    }

    /// A SHA-256 of the resolved configuration (its canonical JSON), saved with every run.
    pub fn hash(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_default();
        let digest = Sha256::digest(json.as_bytes());
        data_encoding::HEXLOWER.encode(&digest)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_watchdog_shorter_than_the_wall_time_limit_is_warned_about() {
        let config = super::resolve_text(&[], &[]).unwrap();
        assert_eq!(config.warnings(), Vec::new());
        let short = super::resolve_text(&[], &["env.instance_timeout=1800".to_owned()]).unwrap();
        assert_eq!(
            short.warnings(),
            [super::ConfigWarning {
                message: "env.instance_timeout (1800 s) ends an instance before \
                          agent.limits.max_wall_time_secs (3600 s) can, so the model is never \
                          warned that its time is running out"
                    .to_owned(),
                hint: "keep env.instance_timeout above agent.limits.max_wall_time_secs".to_owned()
            }]
        );
        let off = super::resolve_text(
            &[],
            &[
                "env.instance_timeout=1800".to_owned(),
                "agent.limits.max_wall_time_secs=0".to_owned(),
            ],
        )
        .unwrap();
        assert!(off.warnings().is_empty());
    }

    use super::*;

    #[test]
    fn extends_layers_the_named_files_first_relative_to_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
            path
        };
        write("base.yaml", "aci:\n  window: 30\n  overlap: 5\n");
        write(
            "more.yaml",
            "aci:\n  overlap: 7\nagent:\n  max_observation_length: 9\n",
        );
        let one = write(
            "sub/one.yaml",
            "extends: ../base.yaml\naci:\n  window: 40\n",
        );
        let many = write(
            "sub/many.yaml",
            "extends: [one.yaml, ../more.yaml]\nagent:\n  max_observation_length: 8\n",
        );
        assert_eq!(
            expand_extends(std::slice::from_ref(&many)).unwrap(),
            [
                dir.path().join("sub/../base.yaml"),
                dir.path().join("sub/one.yaml"),
                dir.path().join("sub/../more.yaml"),
                many.clone()
            ]
        );
        let config = resolve(&[one], &[]).unwrap();
        assert_eq!((config.aci.window, config.aci.overlap), (40, 5));
        assert_eq!(config.extends, None);
        let config = resolve(&[many], &[]).unwrap();
        assert_eq!(
            (
                config.aci.window,
                config.aci.overlap,
                config.agent.max_observation_length
            ),
            (40, 7, 8)
        );
        assert!(!config.to_yaml().contains("extends"));
    }

    #[test]
    fn extends_in_a_circle_or_outside_a_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.yaml");
        let b = dir.path().join("b.yaml");
        std::fs::write(&a, "extends: b.yaml\n").unwrap();
        std::fs::write(&b, "extends: [a.yaml]\n").unwrap();
        let message = resolve(std::slice::from_ref(&a), &[])
            .unwrap_err()
            .to_string();
        assert!(
            message.starts_with(&format!("config {} extends itself (through ", a.display())),
            "{message}"
        );
        assert_eq!(
            error(&[("test", "extends: x.yaml\n")], &[]),
            "test: `extends` works only in a config file"
        );
        assert_eq!(
            error(&[], &["extends=x.yaml"]),
            "--set extends=x.yaml: `extends` works only in a config file"
        );
        std::fs::write(&b, "extends: missing.yaml\n").unwrap();
        let message = resolve(&[b], &[]).unwrap_err().to_string();
        assert!(message.starts_with("cannot read config "), "{message}");
        assert!(message.contains("missing.yaml"), "{message}");
    }

    /// The error's two lines as printed: the message, then its hint.
    fn error(layers: &[(&str, &str)], sets: &[&str]) -> String {
        let sets: Vec<String> = sets.iter().map(|s| (*s).to_owned()).collect();
        let error = resolve_text(layers, &sets).unwrap_err();
        crate::hint::with_hint(&error)
    }

    #[test]
    fn a_config_nested_too_deep_is_refused_at_once_with_its_line() {
        let flow = format!(
            "agent:\n  limits: {}{}\n",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert_eq!(
            error(&[("deep.yaml", &flow)], &[]),
            format!(
                "deep.yaml:2: nested more than {MAX_DEPTH} levels deep; no configuration key is"
            )
        );
        let block: String = (0..40)
            .map(|depth| format!("{}k{depth}:\n", "  ".repeat(depth)))
            .collect();
        assert_eq!(
            error(&[("block.yaml", &block)], &[]),
            format!(
                "block.yaml:33: nested more than {MAX_DEPTH} levels deep; no configuration key is"
            )
        );
        let set = format!("agent.limits={}", "{a: ".repeat(1000));
        assert!(error(&[], &[&set]).starts_with(&format!("--set {set}:1: nested more than")));
        // The shipped configurations are far from the limit, brackets in strings and comments
        // not counted.
        assert_eq!(too_deep_at(DEFAULT_CONFIG, 8), None);
        assert_eq!(
            too_deep_at("a: '[[[[[[[[[['  # {{{{{{{{{{\nb: \"[[[[[[[[[[\"\n", 3),
            None
        );
    }

    #[test]
    fn an_unknown_key_names_file_line_key_and_the_nearest_valid_key() {
        let text = "env:\n  command_timeout: 5\n  comand_timeout: 3\n";
        assert_eq!(
            error(&[("configs/x.yaml", text)], &[]),
            "configs/x.yaml:3:3: env: unknown field `comand_timeout`, expected one of `image`, `images`, \
             `repo_dir`, `command_timeout`, `instance_timeout`, `build_timeout`, `memory_mb`, `cpus`, `pids`, `disk_mb`, `network`, \
             `output_head_bytes`, `output_tail_bytes`, `variables`, `min_free_disk_gb`, `repo_url`, `repo_cache`, \
             `image_template`, `pull`, `activate`, `max_starting`, `k8s`, `specs`, `spec_source`, `build_logs`, `resolve_as_of`\nhint: did you mean `command_timeout`?"
        );
    }

    #[test]
    fn max_starting_is_a_count_and_a_bad_one_is_one_line_naming_the_key() {
        assert_eq!(resolve_text(&[], &[]).unwrap().env.max_starting, 0);
        let set = ["env.max_starting=4".to_owned()];
        assert_eq!(resolve_text(&[], &set).unwrap().env.max_starting, 4);
        assert_eq!(
            error(&[], &["env.max_starting=-1"]),
            "--set env.max_starting=-1: env.max_starting: expected a count, 0 or more, got -1"
        );
        assert_eq!(
            error(&[], &["env.max_starting=1.5"]),
            "--set env.max_starting=1.5: env.max_starting: invalid type: floating point `1.5`, \
             expected a count, 0 or more"
        );
        assert_eq!(
            error(&[("a.yaml", "env:\n  max_starting: some\n")], &[]),
            "a.yaml:2:17: env.max_starting: invalid type: string \"some\", expected a count, 0 or more"
        );
    }

    #[test]
    fn a_wrong_type_names_the_key_path() {
        let text = "env:\n  memory_mb: lots\n";
        assert_eq!(
            error(&[("a.yaml", text)], &[]),
            "a.yaml:2:14: env.memory_mb: invalid type: string \"lots\", expected u64"
        );
    }

    #[test]
    fn later_layers_override_earlier_ones_and_sets_come_last() {
        let a = "env:\n  command_timeout: 5\n  pids: 10\n";
        let b = "env:\n  command_timeout: 7\n";
        let config = resolve_text(&[("a", a), ("b", b)], &["env.pids=99".to_owned()]).unwrap();
        assert_eq!(
            (config.env.command_timeout.get(), config.env.pids.get()),
            (7.0, 99)
        );
        assert_eq!(config.env.repo_dir, "/testbed");
    }

    #[test]
    fn a_set_is_type_checked_against_the_schema() {
        assert_eq!(
            error(&[], &["env.pids=many"]),
            "--set env.pids=many: env.pids: invalid type: string \"many\", expected i64"
        );
        assert_eq!(
            error(&[], &["env.pid=3"]).lines().last(),
            Some("hint: did you mean `pids`?")
        );
        assert_eq!(
            error(&[], &["env.pids"]),
            "--set env.pids: expected key.path=value"
        );
    }

    #[test]
    fn the_built_in_default_config_resolves_and_sets_the_paper_aci() {
        let config = resolve(&[], &[]).unwrap();
        assert_eq!(
            (
                config.aci.window,
                config.aci.overlap,
                config.aci.commands.len()
            ),
            (100, 2, 10)
        );
        assert!(config.aci.lint.enabled);
        assert!(config.agent.templates.system.contains("{{command_docs}}"));
    }

    #[test]
    fn the_hash_changes_with_the_configuration() {
        let a = resolve_text(&[], &[]).unwrap();
        let b = resolve_text(&[], &["env.pids=3".to_owned()]).unwrap();
        assert_eq!(a.hash(), resolve_text(&[], &[]).unwrap().hash());
        assert_ne!(a.hash(), b.hash());
        assert_eq!(a.hash().len(), 64);
    }
}
