//! Reading what a directory holds: which kind of output it is (a batch, an evaluation, an
//! ablation, SWE-agent's flat layout), its instances, each instance's [`Summary`] and
//! evaluation outcome. Summaries and reports are cached by file modification time and size,
//! so a page over thousands of instances re-reads only the files that changed; a cold cache
//! is filled on every core.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::summary::Summary;
use super::trajectory::{self, Keep};

/// A file's identity for the cache: modification time and size. A `.traj` is rewritten by
/// renaming a new file over it, which changes both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stamp {
    /// Modification time.
    pub modified: SystemTime,
    /// Size in bytes.
    pub len: u64,
}

impl Stamp {
    /// The stamp of `path`, or `None` when it is not a readable file.
    pub fn of(path: &Path) -> Option<Self> {
        let metadata = std::fs::metadata(path).ok()?;
        metadata.is_file().then(|| Stamp {
            modified: metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            len: metadata.len(),
        })
    }

    fn hash_into(stamp: Option<Self>, hasher: &mut Sha256) {
        match stamp {
            Some(stamp) => {
                let nanos = stamp
                    .modified
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos());
                hasher.update(nanos.to_le_bytes());
                hasher.update(stamp.len.to_le_bytes());
            }
            None => hasher.update([0u8]),
        }
    }
}

/// Where a run keeps its trajectories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// `DIR/<id>/<id>.traj` (aci, SWE-agent 1.x), or `DIR/<id>/<id>.traj.json`
    /// (mini-swe-agent, beside its `preds.json`).
    Nested,
    /// `DIR/<id>.traj` (SWE-agent v0.7).
    Flat,
    /// One trajectory file.
    Single(PathBuf),
    /// No trajectories: an evaluation's output on its own.
    EvalOnly,
}

/// A run: its trajectories and the evaluation that graded them, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSource {
    /// The directory (for [`Layout::Single`], the file's directory).
    pub dir: PathBuf,
    /// Where the trajectories are.
    pub layout: Layout,
    /// The evaluation's output directory.
    pub eval: Option<PathBuf>,
}

/// One instance of a run, as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The instance id.
    pub id: String,
    /// Its trajectory file, when it has one.
    pub traj: Option<PathBuf>,
}

/// How the evaluation counted an instance.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum EvalState {
    /// No evaluation, or the evaluation has not reached it.
    #[default]
    NotEvaluated,
    /// Every FAIL_TO_PASS and PASS_TO_PASS test passed.
    Resolved,
    /// Graded, not resolved.
    Unresolved,
    /// Could not be graded, with the reason when one was written.
    Error(Option<String>),
    /// The prediction had no patch.
    EmptyPatch,
}

impl EvalState {
    /// The word shown for it (and matched by the filter).
    pub fn label(&self) -> &'static str {
        match self {
            EvalState::NotEvaluated => "—",
            EvalState::Resolved => "resolved",
            EvalState::Unresolved => "unresolved",
            EvalState::Error(_) => "error",
            EvalState::EmptyPatch => "empty patch",
        }
    }

    /// The state a per-instance `report.json` gives.
    pub fn from_report(report: &Value) -> Self {
        if let Some(error) = report.get("error").and_then(Value::as_str) {
            return EvalState::Error(Some(error.to_owned()));
        }
        match report.get("resolved").and_then(Value::as_bool) {
            Some(true) => EvalState::Resolved,
            Some(false) if report.get("patch_exists") == Some(&Value::Bool(false)) => {
                EvalState::EmptyPatch
            }
            Some(false) => EvalState::Unresolved,
            None => EvalState::Error(None),
        }
    }
}

/// The id lists of an evaluation's summary `report.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EvalSummary {
    resolved: HashSet<String>,
    unresolved: HashSet<String>,
    error: HashSet<String>,
    empty_patch: HashSet<String>,
}

impl EvalSummary {
    /// The lists of a summary's JSON, or `None` when it is not a summary.
    pub fn from_json(value: &Value) -> Option<Self> {
        let ids = |key: &str| -> HashSet<String> {
            value
                .get(key)
                .and_then(Value::as_array)
                .map(|ids| {
                    ids.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        value.get("resolved_ids")?;
        Some(EvalSummary {
            resolved: ids("resolved_ids"),
            unresolved: ids("unresolved_ids"),
            error: ids("error_ids"),
            empty_patch: ids("empty_patch_ids"),
        })
    }

    /// Every id the summary names.
    pub fn ids(&self) -> impl Iterator<Item = &String> {
        self.resolved
            .iter()
            .chain(&self.unresolved)
            .chain(&self.error)
            .chain(&self.empty_patch)
    }

    fn state(&self, id: &str) -> EvalState {
        if self.resolved.contains(id) {
            EvalState::Resolved
        } else if self.error.contains(id) {
            EvalState::Error(None)
        } else if self.empty_patch.contains(id) {
            EvalState::EmptyPatch
        } else if self.unresolved.contains(id) {
            EvalState::Unresolved
        } else {
            EvalState::NotEvaluated
        }
    }
}

/// Whether `name` is one plain path component: no separator, not `.` or `..`, not empty.
pub fn is_plain_component(name: &str) -> bool {
    let mut components = Path::new(name).components();
    matches!(components.next(), Some(Component::Normal(_)))
        && components.next().is_none()
        && !name.contains('/')
        && !name.contains('\0')
}

/// The per-instance report of an evaluation: `EVAL/<id>/report.json`.
pub fn report_path(eval: &Path, id: &str) -> Option<PathBuf> {
    is_plain_component(id).then(|| eval.join(id).join("report.json"))
}

/// The entry for `id` in a per-instance `report.json` (`{"<id>": {…}}`); a file with a single
/// entry under another key is taken as it is.
pub fn report_entry<'a>(report: &'a Value, id: &str) -> Option<&'a Value> {
    let object = report.as_object()?;
    object.get(id).or_else(|| {
        (object.len() == 1)
            .then(|| object.values().next())
            .flatten()
    })
}

/// One row of the run view.
#[derive(Debug, Clone)]
pub struct Row {
    /// The instance.
    pub id: String,
    /// Its trajectory's summary; `None` without a trajectory.
    pub summary: Option<Arc<Summary>>,
    /// Why the trajectory could not be read, when it could not.
    pub unreadable: Option<String>,
    /// The evaluation's outcome.
    pub eval: EvalState,
}

type Cached<T> = Mutex<HashMap<PathBuf, (Stamp, Arc<T>)>>;

/// Summaries and reports already read, by path and stamp.
#[derive(Default)]
pub struct Cache {
    summaries: Cached<Result<Arc<Summary>, String>>,
    reports: Cached<EvalState>,
    eval_summaries: Cached<Option<EvalSummary>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn read_json(path: &Path) -> Option<Value> {
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

impl Cache {
    /// The summary of `path` as of `stamp`, read when the cache holds an older one.
    fn summary(&self, path: &Path, stamp: Stamp) -> Arc<Result<Arc<Summary>, String>> {
        if let Some((cached, value)) = lock(&self.summaries).get(path)
            && *cached == stamp
        {
            return Arc::clone(value);
        }
        let value = Arc::new(read_summary(path));
        lock(&self.summaries).insert(path.to_owned(), (stamp, Arc::clone(&value)));
        value
    }

    /// Fills the cache for every `(path, stamp)` it does not hold yet, on every core.
    fn warm(&self, wanted: &[(PathBuf, Stamp)]) {
        let missing: Vec<&(PathBuf, Stamp)> = {
            let cache = lock(&self.summaries);
            wanted
                .iter()
                .filter(|(path, stamp)| cache.get(path).is_none_or(|(s, _)| s != stamp))
                .collect()
        };
        if missing.len() < 16 {
            for (path, stamp) in missing {
                self.summary(path, *stamp);
            }
            return;
        }
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        let chunk = missing.len().div_ceil(threads);
        let results: Vec<(PathBuf, Stamp, Result<Arc<Summary>, String>)> =
            std::thread::scope(|scope| {
                let handles: Vec<_> = missing
                    .chunks(chunk)
                    .map(|part| {
                        scope.spawn(move || {
                            part.iter()
                                .map(|(path, stamp)| (path.clone(), *stamp, read_summary(path)))
                                .collect::<Vec<_>>()
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .flat_map(|handle| handle.join().unwrap_or_default())
                    .collect()
            });
        let mut cache = lock(&self.summaries);
        for (path, stamp, summary) in results {
            cache.insert(path, (stamp, Arc::new(summary)));
        }
    }

    fn report_state(&self, path: &Path, stamp: Stamp, id: &str) -> EvalState {
        if let Some((cached, value)) = lock(&self.reports).get(path)
            && *cached == stamp
        {
            return (**value).clone();
        }
        let state = read_json(path)
            .as_ref()
            .and_then(|report| report_entry(report, id).map(EvalState::from_report))
            .unwrap_or(EvalState::Error(Some(format!(
                "cannot read {}",
                path.display()
            ))));
        lock(&self.reports).insert(path.to_owned(), (stamp, Arc::new(state.clone())));
        state
    }

    /// The summary `EVAL/report.json`, when there is one.
    pub fn eval_summary(&self, eval: &Path) -> (Option<Stamp>, Arc<Option<EvalSummary>>) {
        let path = eval.join("report.json");
        let Some(stamp) = Stamp::of(&path) else {
            return (None, Arc::new(None));
        };
        if let Some((cached, value)) = lock(&self.eval_summaries).get(&path)
            && *cached == stamp
        {
            return (Some(stamp), Arc::clone(value));
        }
        let value = Arc::new(read_json(&path).as_ref().and_then(EvalSummary::from_json));
        lock(&self.eval_summaries).insert(path, (stamp, Arc::clone(&value)));
        (Some(stamp), value)
    }
}

/// The summary of a trajectory, read through once ([`trajectory::read_file`]): memory does not
/// grow with the file.
fn read_summary(path: &Path) -> Result<Arc<Summary>, String> {
    trajectory::read_file(path, Keep::Summary)
        .map(|view| Arc::new(view.summary))
        .map_err(|e| e.to_string())
}

/// What a directory holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A batch (or one trajectory, or an evaluation on its own).
    Run(RunSource),
    /// An `aci ablate` output: `ablation.json` and `<config>/r<k>/{run,eval}`.
    Ablation(PathBuf),
    /// Several runs side by side, each with its name.
    Runs(Vec<(String, RunSource)>),
}

/// The trajectory of the instance folder `folder` named `name`: `<name>.traj`, else
/// mini-swe-agent's `<name>.traj.json`.
fn nested_trajectory(folder: &Path, name: &str) -> Option<(PathBuf, Stamp)> {
    [format!("{name}.traj"), format!("{name}.traj.json")]
        .into_iter()
        .map(|file| folder.join(file))
        .find_map(|path| Stamp::of(&path).map(|stamp| (path, stamp)))
}

/// The instance id a single trajectory file stands for: its name without `.traj` or
/// `.traj.json`.
fn single_id(path: &Path) -> String {
    let name = path
        .file_name()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    name.strip_suffix(".traj.json")
        .or_else(|| name.strip_suffix(".traj"))
        .unwrap_or(&name)
        .to_owned()
}

fn has_nested_trajectory(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|entry| {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        nested_trajectory(&entry.path(), &name).is_some()
    })
}

fn has_flat_trajectory(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|entry| {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        name.ends_with(".traj") && !name.starts_with('.') && entry.path().is_file()
    })
}

/// Whether `dir/<name>/report.json` is a per-instance report: `{"<name>": {…}}`.
fn is_instance_report(dir: &Path, name: &str) -> bool {
    read_json(&dir.join(name).join("report.json"))
        .is_some_and(|report| report.get(name).is_some_and(Value::is_object))
}

/// Whether `dir` is an evaluation's output: a summary with id lists, or per-instance reports
/// (`<id>/report.json` holding `{"<id>": …}`).
pub fn is_eval_dir(dir: &Path) -> bool {
    if read_json(&dir.join("report.json"))
        .as_ref()
        .and_then(EvalSummary::from_json)
        .is_some()
    {
        return true;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().into_string().ok())
        .take(20)
        .any(|name| is_instance_report(dir, &name))
}

/// Whether the evaluation `eval` graded any of `ids`.
fn grades_any(eval: &Path, ids: &[String]) -> bool {
    let summary = read_json(&eval.join("report.json"))
        .as_ref()
        .and_then(EvalSummary::from_json);
    ids.iter().any(|id| {
        summary
            .as_ref()
            .is_some_and(|s| s.ids().any(|listed| listed == id))
            || (is_plain_component(id) && is_instance_report(eval, id))
    })
}

/// The evaluation next to a run: `RUN/eval`, `RUN/../eval`, or a sibling of `RUN` (in name
/// order) that graded one of the run's instances. Before the run has any instance, only the
/// first two are taken.
pub fn find_eval_next_to(run: &Path) -> Option<PathBuf> {
    let run = std::fs::canonicalize(run).ok()?;
    let parent = run.parent()?;
    let ids: Vec<String> = std::fs::read_dir(&run)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|entry| entry.file_name().into_string().ok())
                .map(|name| {
                    name.strip_suffix(".traj")
                        .map_or(name.clone(), str::to_owned)
                })
                .take(200)
                .collect()
        })
        .unwrap_or_default();
    let named = [run.join("eval"), parent.join("eval")];
    if let Some(found) = named.iter().find(|candidate| {
        candidate.is_dir()
            && is_eval_dir(candidate)
            && (ids.is_empty() || grades_any(candidate, &ids))
    }) {
        return Some(found.clone());
    }
    let mut siblings: Vec<PathBuf> = std::fs::read_dir(parent)
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.path())
                .filter(|p| p.is_dir())
                .take(1000)
                .collect()
        })
        .unwrap_or_default();
    siblings.sort();
    siblings.into_iter().find(|candidate| {
        *candidate != run && is_eval_dir(candidate) && grades_any(candidate, &ids)
    })
}

/// Finds out what `path` holds.
///
/// # Errors
///
/// A one-line reason when `path` holds nothing `aci inspect` can show.
pub fn detect(path: &Path, eval: Option<&Path>) -> Result<Kind, String> {
    let eval_for = |dir: &Path| match eval {
        Some(eval) => Some(eval.to_owned()),
        None => find_eval_next_to(dir),
    };
    if path.is_file() {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if name.ends_with(".traj") || name.ends_with(".traj.json") {
            let dir = path.parent().unwrap_or(Path::new(".")).to_owned();
            return Ok(Kind::Run(RunSource {
                eval: eval.map(Path::to_owned),
                dir,
                layout: Layout::Single(path.to_owned()),
            }));
        }
        return Err(format!(
            "{} is a file, not a .traj or .traj.json file or a directory",
            path.display()
        ));
    }
    if !path.is_dir() {
        return Err(format!("{} does not exist", path.display()));
    }
    if path.join("ablation.json").is_file() {
        return Ok(Kind::Ablation(path.to_owned()));
    }
    let layout = if has_nested_trajectory(path) || path.join("manifest.json").is_file() {
        Layout::Nested
    } else if has_flat_trajectory(path) {
        Layout::Flat
    } else if is_eval_dir(path) {
        return Ok(Kind::Run(RunSource {
            dir: path.to_owned(),
            layout: Layout::EvalOnly,
            eval: Some(eval.map_or_else(|| path.to_owned(), Path::to_owned)),
        }));
    } else {
        return Err(format!(
            "{} holds no trajectories (<id>/<id>.traj, <id>/<id>.traj.json or <id>.traj), evaluation reports or ablation.json",
            path.display()
        ));
    };
    Ok(Kind::Run(RunSource {
        eval: eval_for(path),
        dir: path.to_owned(),
        layout,
    }))
}

/// The instances of a run, sorted by id.
pub fn list(run: &RunSource, cache: &Cache) -> Vec<Listed> {
    list_stamped(run, cache)
        .into_iter()
        .map(|(listed, _)| listed)
        .collect()
}

/// The instances of a run, sorted by id, each with its trajectory's stamp (one `stat` per
/// instance: the directory entries' types come with the listing).
fn list_stamped(run: &RunSource, cache: &Cache) -> Vec<(Listed, Option<Stamp>)> {
    let mut listed: BTreeMap<String, (Option<PathBuf>, Option<Stamp>)> = BTreeMap::new();
    match &run.layout {
        Layout::Single(path) => {
            listed.insert(single_id(path), (Some(path.clone()), Stamp::of(path)));
        }
        Layout::Nested | Layout::Flat => {
            if let Ok(entries) = std::fs::read_dir(&run.dir) {
                for entry in entries.flatten() {
                    let Ok(name) = entry.file_name().into_string() else {
                        continue;
                    };
                    if name.starts_with('.') {
                        continue;
                    }
                    let found = if run.layout == Layout::Nested {
                        if entry.file_type().is_ok_and(|t| t.is_file()) {
                            continue;
                        }
                        nested_trajectory(&entry.path(), &name)
                    } else if name.ends_with(".traj") {
                        Stamp::of(&entry.path()).map(|stamp| (entry.path(), stamp))
                    } else {
                        continue;
                    };
                    if let Some((path, stamp)) = found {
                        let id = match run.layout {
                            Layout::Flat => name.strip_suffix(".traj").unwrap_or(&name).to_owned(),
                            _ => name,
                        };
                        listed.insert(id, (Some(path), Some(stamp)));
                    }
                }
            }
        }
        Layout::EvalOnly => {
            if let Some(eval) = &run.eval {
                if let Ok(entries) = std::fs::read_dir(eval) {
                    for entry in entries.flatten() {
                        if let Ok(name) = entry.file_name().into_string()
                            && entry.path().join("report.json").is_file()
                        {
                            listed.insert(name, (None, None));
                        }
                    }
                }
                if let Some(summary) = cache.eval_summary(eval).1.as_ref() {
                    for id in summary.ids() {
                        listed.entry(id.clone()).or_insert((None, None));
                    }
                }
            }
        }
    }
    listed
        .into_iter()
        .map(|(id, (traj, stamp))| (Listed { id, traj }, stamp))
        .collect()
}

/// The rows of the run view and a version that changes when any file behind them does.
pub fn rows(run: &RunSource, cache: &Cache) -> (Vec<Row>, String) {
    let (listed, stamps): (Vec<Listed>, Vec<Option<Stamp>>) =
        list_stamped(run, cache).into_iter().unzip();
    let mut hasher = Sha256::new();
    let wanted: Vec<(PathBuf, Stamp)> = listed
        .iter()
        .zip(&stamps)
        .filter_map(|(entry, stamp)| Some((entry.traj.clone()?, (*stamp)?)))
        .collect();
    cache.warm(&wanted);
    let (summary_stamp, eval_summary) = match &run.eval {
        Some(eval) => cache.eval_summary(eval),
        None => (None, Arc::new(None)),
    };
    Stamp::hash_into(summary_stamp, &mut hasher);
    let mut rows = Vec::with_capacity(listed.len());
    for (entry, stamp) in listed.into_iter().zip(stamps) {
        hasher.update(entry.id.as_bytes());
        Stamp::hash_into(stamp, &mut hasher);
        let (summary, unreadable) = match (&entry.traj, stamp) {
            (Some(path), Some(stamp)) => match &*cache.summary(path, stamp) {
                Ok(summary) => (Some(Arc::clone(summary)), None),
                Err(reason) => (None, Some(reason.clone())),
            },
            _ => (None, None),
        };
        let eval = match run.eval.as_deref().and_then(|e| report_path(e, &entry.id)) {
            Some(path) => match Stamp::of(&path) {
                Some(report_stamp) => {
                    Stamp::hash_into(Some(report_stamp), &mut hasher);
                    cache.report_state(&path, report_stamp, &entry.id)
                }
                None => eval_summary
                    .as_ref()
                    .as_ref()
                    .map_or(EvalState::NotEvaluated, |s| s.state(&entry.id)),
            },
            None => EvalState::NotEvaluated,
        };
        rows.push(Row {
            id: entry.id,
            summary,
            unreadable,
            eval,
        });
    }
    (rows, data_encoding::HEXLOWER.encode(&hasher.finalize()))
}

/// The evaluation's outcome for one instance and its per-instance report entry, if any: the
/// report when there is one, else the summary's id lists.
pub fn eval_of(eval: Option<&Path>, id: &str, cache: &Cache) -> (EvalState, Option<Value>) {
    let Some(eval) = eval else {
        return (EvalState::NotEvaluated, None);
    };
    if let Some(path) = report_path(eval, id)
        && let Some(report) = read_json(&path)
        && let Some(entry) = report_entry(&report, id)
    {
        return (EvalState::from_report(entry), Some(entry.clone()));
    }
    let state = cache
        .eval_summary(eval)
        .1
        .as_ref()
        .as_ref()
        .map_or(EvalState::NotEvaluated, |summary| summary.state(id));
    (state, None)
}

/// A version over a few files: changes when any of them changes, appears or goes.
pub fn files_version(paths: &[&Path]) -> String {
    let mut hasher = Sha256::new();
    for path in paths {
        hasher.update(path.as_os_str().as_encoded_bytes());
        Stamp::hash_into(Stamp::of(path), &mut hasher);
    }
    data_encoding::HEXLOWER.encode(&hasher.finalize()[..16])
}

#[cfg(test)]
#[path = "source_tests.rs"]
pub(crate) mod tests;
