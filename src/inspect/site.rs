//! The site over one directory: which pages it has (their paths are the same served and
//! exported, so relative links work from `file://` too), reading what each page shows, and the
//! version a live page polls.
//!
//! Page paths: `index.html` (the run, evaluation or ablation), `i/<id>.html` (an instance),
//! `c/<config>/r<k>/index.html` and `c/<config>/r<k>/i/<id>.html` (an ablation's runs), and
//! `compare/<variant>/<id>.html` (an instance under the base and a variant), and beside each
//! instance page its long texts in full, `i/<id>/<key>.txt` ([`TextKey`]: streamed from the
//! trajectory when served, written as files by the static site). Ids and names are encoded with
//! [`encode_segment`]; a page is served only for an id the directory lists, so no path from a
//! request is ever used to open a file.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::ablate::table::Table;

use super::ablation_page;
use super::compare_page::{self, RunColumn};
use super::evidence::{LogFindings, failing_tests, scan_log};
use super::html::{Shell, decode_segment, encode_segment, page};
use super::instance_page::{self, InstanceData, Nav};
use super::run_page::{self, RunHeader};
use super::source::{self, Cache, Kind, Layout, Listed, RunSource, files_version};
use super::trajectory::{self, Keep, Part, TextKey, read_text_file, write_full};
use super::turns::is_long;

/// Which run of the site a page is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunRef {
    /// The directory itself.
    Root,
    /// One repeat of one configuration of an ablation.
    Config {
        /// The configuration's name.
        name: String,
        /// The repeat, from 1.
        repeat: usize,
    },
}

/// A page of the site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `index.html`.
    Root,
    /// A run's table (of an ablation's configuration).
    Run(RunRef),
    /// An instance of a run.
    Instance(RunRef, String),
    /// An instance under the base and a variant.
    Compare {
        /// The variant.
        variant: String,
        /// The instance.
        id: String,
    },
    /// The full text of one of an instance's texts.
    Text(RunRef, String, TextKey),
    /// An instance in every run of a comparison, side by side.
    Across(String),
}

/// Where a full text is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FullText {
    /// Strings of a trajectory file.
    Trajectory {
        /// The trajectory.
        path: PathBuf,
        /// The pieces of the text.
        parts: Vec<Part>,
    },
    /// A whole file.
    File(PathBuf),
}

impl FullText {
    /// Writes the text to `out`, a piece at a time; returns how many bytes.
    ///
    /// # Errors
    /// The file cannot be read, or `out` cannot be written.
    pub fn write_to(&self, out: &mut dyn std::io::Write) -> std::io::Result<u64> {
        match self {
            FullText::Trajectory { path, parts } => {
                write_full(&mut std::fs::File::open(path)?, parts, out)
            }
            FullText::File(path) => std::io::copy(&mut std::fs::File::open(path)?, out),
        }
    }
}

/// Whether a page is served (live, with raw files) or exported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Served: polls for changes, links raw files.
    Live,
    /// A static file.
    Static,
}

/// A rendered page.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The HTML.
    pub html: String,
    /// The version of the files it was rendered from.
    pub version: String,
}

/// Why a site cannot be opened or written.
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    /// Nothing to show at the path.
    #[error("{0}")]
    Open(String),
    /// The static site could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// One directory's pages.
pub struct Site {
    root: PathBuf,
    kind: Kind,
    eval_arg: Option<PathBuf>,
    cache: Cache,
}

fn depth_prefix(page: &str) -> String {
    "../".repeat(page.matches('/').count())
}

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

impl Site {
    /// Opens `path` (a batch, an evaluation, an ablation output or one `.traj` or `.traj.json`
    /// file), with the evaluation `eval` when given (else the one found next to the run).
    ///
    /// # Errors
    ///
    /// [`InspectError::Open`] when `path` holds nothing to show or `eval` is not a directory.
    pub fn open(path: &Path, eval: Option<&Path>) -> Result<Self, InspectError> {
        let root = std::fs::canonicalize(path)
            .map_err(|e| InspectError::Open(format!("cannot open {}: {e}", path.display())))?;
        let eval = match eval {
            Some(eval) => Some(std::fs::canonicalize(eval).map_err(|e| {
                InspectError::Open(format!(
                    "cannot open the evaluation {}: {e}",
                    eval.display()
                ))
            })?),
            None => None,
        };
        if let Some(eval) = &eval
            && !eval.is_dir()
        {
            return Err(InspectError::Open(format!(
                "the evaluation {} is not a directory",
                eval.display()
            )));
        }
        let kind = source::detect(&root, eval.as_deref()).map_err(InspectError::Open)?;
        let root = match &kind {
            Kind::Run(run) => run.dir.clone(),
            Kind::Ablation(dir) => dir.clone(),
            Kind::Runs(_) => root,
        };
        Ok(Site {
            root,
            kind,
            eval_arg: eval,
            cache: Cache::default(),
        })
    }

    /// Opens several runs (batches or evaluations, each as [`Site::open`] takes it) to be shown
    /// side by side; each is named by its directory, made unique.
    ///
    /// # Errors
    ///
    /// [`InspectError::Open`] when a path holds nothing to show or is an ablation.
    pub fn open_many(paths: &[PathBuf]) -> Result<Self, InspectError> {
        let mut runs: Vec<(String, RunSource)> = Vec::new();
        for path in paths {
            let root = std::fs::canonicalize(path)
                .map_err(|e| InspectError::Open(format!("cannot open {}: {e}", path.display())))?;
            let run = match source::detect(&root, None).map_err(InspectError::Open)? {
                Kind::Run(run) => run,
                Kind::Ablation(_) | Kind::Runs(_) => {
                    return Err(InspectError::Open(format!(
                        "{} is an ablation: compare its runs (<config>/r<k>/run) or open it alone",
                        path.display()
                    )));
                }
            };
            runs.push((unique_name(&runs, &run_name(&root)), run));
        }
        let root = std::env::current_dir().unwrap_or_default();
        Ok(Site {
            root,
            kind: Kind::Runs(runs),
            eval_arg: None,
            cache: Cache::default(),
        })
    }

    /// The runs shown side by side, with their names (empty unless opened with
    /// [`Site::open_many`]).
    pub fn runs(&self) -> &[(String, RunSource)] {
        match &self.kind {
            Kind::Runs(runs) => runs,
            Kind::Run(_) | Kind::Ablation(_) => &[],
        }
    }

    /// The directory the site shows.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The evaluation the root run is graded by, if any.
    pub fn eval_dir(&self) -> Option<&Path> {
        match &self.kind {
            Kind::Run(run) => run.eval.as_deref(),
            Kind::Ablation(_) | Kind::Runs(_) => None,
        }
    }

    /// The directories raw files may be served from: the root, and `--eval`.
    pub fn raw_bases(&self) -> Vec<PathBuf> {
        if let Kind::Runs(runs) = &self.kind {
            // Raw files are served from the root only: a comparison links none.
            return runs
                .first()
                .map(|(_, run)| run.dir.clone())
                .into_iter()
                .collect();
        }
        let mut bases = vec![self.root.clone()];
        if let Some(eval) = self
            .eval_arg
            .clone()
            .or_else(|| self.eval_dir().map(Path::to_owned))
        {
            bases.push(eval);
        }
        bases
    }

    fn table(&self) -> Option<Table> {
        let Kind::Ablation(dir) = &self.kind else {
            return None;
        };
        serde_json::from_value(read_json(&dir.join("ablation.json"))?).ok()
    }

    fn repeats(&self, config: &str) -> usize {
        let dir = self.root.join(config);
        (1..)
            .take_while(|k| dir.join(format!("r{k}")).join("run").is_dir())
            .count()
    }

    /// The run a page is about.
    pub fn run(&self, run: &RunRef) -> Option<RunSource> {
        match (run, &self.kind) {
            (RunRef::Root, Kind::Run(source)) => Some(source.clone()),
            (RunRef::Config { name, repeat }, Kind::Ablation(dir)) => {
                let table = self.table()?;
                table.rows.iter().find(|row| &row.config == name)?;
                if !source::is_plain_component(name) {
                    return None;
                }
                let base = dir.join(name).join(format!("r{repeat}"));
                let eval = base.join("eval");
                Some(RunSource {
                    dir: base.join("run"),
                    layout: Layout::Nested,
                    eval: eval.is_dir().then_some(eval),
                })
            }
            (RunRef::Config { name, repeat: 1 }, Kind::Runs(runs)) => runs
                .iter()
                .find(|(run_name, _)| run_name == name)
                .map(|(_, run)| run.clone()),
            _ => None,
        }
    }

    /// The route of a page path (without the leading `/`).
    pub fn route(&self, page: &str) -> Option<Route> {
        let parts: Vec<&str> = page.split('/').collect();
        let id_of = |file: &str| decode_segment(file.strip_suffix(".html")?);
        let key_of = |file: &str| TextKey::parse(file.strip_suffix(".txt")?);
        let repeat_of = |part: &str| {
            part.strip_prefix('r')?
                .parse::<usize>()
                .ok()
                .filter(|k| *k > 0)
        };
        match parts.as_slice() {
            [""] | ["index.html"] => Some(Route::Root),
            ["i", file] => Some(Route::Instance(RunRef::Root, id_of(file)?)),
            ["i", id, file] => Some(Route::Text(
                RunRef::Root,
                decode_segment(id)?,
                key_of(file)?,
            )),
            ["c", name, repeat, rest @ ..] => {
                let run = RunRef::Config {
                    name: decode_segment(name)?,
                    repeat: repeat_of(repeat)?,
                };
                match rest {
                    [] | [""] | ["index.html"] => Some(Route::Run(run)),
                    ["i", file] => Some(Route::Instance(run, id_of(file)?)),
                    ["i", id, file] => Some(Route::Text(run, decode_segment(id)?, key_of(file)?)),
                    _ => None,
                }
            }
            ["across", file] => Some(Route::Across(id_of(file)?)),
            ["compare", variant, file] => Some(Route::Compare {
                variant: decode_segment(variant)?,
                id: id_of(file)?,
            }),
            _ => None,
        }
    }

    /// The page path of a route.
    pub fn path_of(route: &Route) -> String {
        let run_dir = |run: &RunRef| match run {
            RunRef::Root => String::new(),
            RunRef::Config { name, repeat } => format!("c/{}/r{repeat}/", encode_segment(name)),
        };
        match route {
            Route::Root => "index.html".to_owned(),
            Route::Run(run) => format!("{}index.html", run_dir(run)),
            Route::Instance(run, id) => format!("{}i/{}.html", run_dir(run), encode_segment(id)),
            Route::Compare { variant, id } => ablation_page::compare_link(variant, id),
            Route::Across(id) => super::compare_page::across_link(id),
            Route::Text(run, id, key) => format!(
                "{}i/{}/{}.txt",
                run_dir(run),
                encode_segment(id),
                key.name()
            ),
        }
    }

    fn shell<'a>(
        &self,
        route: &Route,
        mode: Mode,
        title: &'a str,
        kind: &'a str,
        version: String,
    ) -> Shell<'a> {
        let path = Self::path_of(route);
        let up = depth_prefix(&path);
        let root_name = if let Kind::Runs(runs) = &self.kind {
            format!("{} runs", runs.len())
        } else {
            self.root.file_name().map_or_else(
                || self.root.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            )
        };
        let mut crumbs = vec![(root_name, Some(format!("{up}index.html")))];
        match route {
            Route::Root => {}
            Route::Run(RunRef::Config { name, repeat }) => {
                crumbs.push((format!("{name} r{repeat}"), None))
            }
            Route::Instance(RunRef::Root, id) => crumbs.push((id.clone(), None)),
            Route::Instance(RunRef::Config { name, repeat }, id) => {
                crumbs.push((
                    format!("{name} r{repeat}"),
                    Some("../index.html".to_owned()),
                ));
                crumbs.push((id.clone(), None));
            }
            Route::Compare { variant, id } => crumbs.push((format!("{id}: {variant}"), None)),
            Route::Across(id) => crumbs.push((format!("{id}: every run"), None)),
            Route::Run(RunRef::Root) | Route::Text(..) => {}
        }
        if route == &Route::Root {
            crumbs[0].1 = None;
        }
        Shell {
            title,
            kind,
            crumbs,
            live: (mode == Mode::Live).then(|| format!("/_version/{path}")),
            version,
        }
    }

    /// The current version of a page's files, without rendering it.
    pub fn version(&self, route: &Route) -> Option<String> {
        match route {
            Route::Root => match &self.kind {
                Kind::Run(run) => Some(source::rows(run, &self.cache).1),
                Kind::Ablation(dir) => Some(files_version(&[&dir.join("ablation.json")])),
                Kind::Runs(runs) => Some(
                    runs.iter()
                        .map(|(_, run)| source::rows(run, &self.cache).1)
                        .collect::<Vec<_>>()
                        .join("+"),
                ),
            },
            Route::Across(id) => {
                let mut files = Vec::new();
                for (_, run) in self.runs() {
                    files.extend(self.instance_files(run, id));
                }
                Some(files_version(
                    &files.iter().map(PathBuf::as_path).collect::<Vec<_>>(),
                ))
            }
            Route::Run(run) => Some(source::rows(&self.run(run)?, &self.cache).1),
            Route::Instance(run, id) => {
                let run = self.run(run)?;
                Some(files_version(
                    &self
                        .instance_files(&run, id)
                        .iter()
                        .map(PathBuf::as_path)
                        .collect::<Vec<_>>(),
                ))
            }
            Route::Compare { variant, id } => {
                let mut files = Vec::new();
                for run in self.compare_runs(variant)? {
                    files.extend(self.instance_files(&run, id));
                }
                Some(files_version(
                    &files.iter().map(PathBuf::as_path).collect::<Vec<_>>(),
                ))
            }
            Route::Text(..) => None,
        }
    }

    fn instance_files(&self, run: &RunSource, id: &str) -> Vec<PathBuf> {
        let mut files = Vec::new();
        if let Some(listed) = source::list(run, &self.cache)
            .into_iter()
            .find(|l| l.id == id)
            && let Some(traj) = listed.traj
        {
            files.push(traj);
        }
        if let Some(eval) = &run.eval
            && source::is_plain_component(id)
        {
            files.push(eval.join(id).join("report.json"));
            files.push(eval.join("report.json"));
        }
        files
    }

    fn compare_runs(&self, variant: &str) -> Option<[RunSource; 2]> {
        let table = self.table()?;
        if variant == table.base {
            return None;
        }
        let base = self.run(&RunRef::Config {
            name: table.base,
            repeat: 1,
        })?;
        let other = self.run(&RunRef::Config {
            name: variant.to_owned(),
            repeat: 1,
        })?;
        Some([base, other])
    }

    /// Renders a page; `None` when the site has no such page.
    pub fn render(&self, route: &Route, mode: Mode) -> Option<Rendered> {
        match route {
            Route::Root => match &self.kind {
                Kind::Run(run) => Some(self.render_run(route, run, mode)),
                Kind::Ablation(_) => self.render_ablation(mode),
                Kind::Runs(runs) => Some(self.render_runs(runs, mode)),
            },
            Route::Across(id) => self.render_across(route, id, mode),
            Route::Run(run_ref) => Some(self.render_run(route, &self.run(run_ref)?, mode)),
            Route::Instance(run_ref, id) => self.render_instance(route, run_ref, id, mode),
            Route::Compare { variant, id } => self.render_compare(route, variant, id, mode),
            Route::Text(..) => None,
        }
    }

    /// Where the full text of a [`Route::Text`] is; `None` for another route, an instance the
    /// run does not list, or a text it does not have.
    pub fn full_text(&self, route: &Route) -> Option<FullText> {
        let Route::Text(run_ref, id, key) = route else {
            return None;
        };
        let run = self.run(run_ref)?;
        let listed = source::list(&run, &self.cache)
            .into_iter()
            .find(|l| &l.id == id)?;
        let from_trajectory = |keep: Keep| -> Option<FullText> {
            let path = listed.traj.clone()?;
            let view = trajectory::read_file(&path, keep).ok()?;
            let parts = view.text(key)?.parts.clone();
            // A field that is absent, or not a string, has no text to show.
            (!parts.is_empty()).then_some(FullText::Trajectory { path, parts })
        };
        match key {
            TextKey::Step { number, .. } => from_trajectory(Keep::Step(*number)),
            TextKey::System | TextKey::Demo | TextKey::Task => from_trajectory(Keep::View),
            TextKey::Patch => from_trajectory(Keep::View)
                .or_else(|| self.patch_file(&run, id).map(FullText::File)),
            TextKey::TestOutput => {
                let path = run.eval.as_ref()?.join(id).join("test_output.txt");
                (source::is_plain_component(id) && path.is_file()).then_some(FullText::File(path))
            }
        }
    }

    /// The patch file beside the run or in its evaluation, when the trajectory has none.
    fn patch_file(&self, run: &RunSource, id: &str) -> Option<PathBuf> {
        if !source::is_plain_component(id) {
            return None;
        }
        let candidates = [
            run.dir.join(id).join(format!("{id}.patch")),
            run.eval
                .clone()
                .unwrap_or_default()
                .join(id)
                .join("patch.diff"),
        ];
        candidates.into_iter().find(|path| {
            path.is_file() && read_text_file(path).is_ok_and(|text| !text.head().trim().is_empty())
        })
    }

    fn render_run(&self, route: &Route, run: &RunSource, mode: Mode) -> Rendered {
        let (rows, version) = source::rows(run, &self.cache);
        let mut notes = Vec::new();
        if run.layout != Layout::EvalOnly {
            notes.push(format!("trajectories: {}", run.dir.display()));
        }
        match &run.eval {
            Some(eval) => notes.push(format!("evaluation: {}", eval.display())),
            None => notes.push("no evaluation found next to this run (pass --eval DIR)".to_owned()),
        }
        if let Some(manifest) = read_json(&run.dir.join("manifest.json")) {
            let field = |key: &str| {
                manifest
                    .get(key)
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_owned()
            };
            notes.push(format!(
                "model {} · run id {} · aci {} · config hash {}",
                field("model"),
                field("run_id"),
                field("aci_version"),
                field("config_hash").chars().take(12).collect::<String>()
            ));
        }
        let title = run.dir.display().to_string();
        let header = RunHeader {
            title: title.clone(),
            notes,
        };
        let body = run_page::render(&header, &rows, "i/");
        let shell = self.shell(route, mode, &title, "run", version.clone());
        Rendered {
            html: page(&shell, &body),
            version,
        }
    }

    fn render_ablation(&self, mode: Mode) -> Option<Rendered> {
        let table = self.table()?;
        let version = self.version(&Route::Root)?;
        let title = format!("ablation: {}", self.root.display());
        let body = ablation_page::render(&title, &table, &|config| self.repeats(config));
        let shell = self.shell(&Route::Root, mode, &title, "ablation", version.clone());
        Some(Rendered {
            html: page(&shell, &body),
            version,
        })
    }

    /// The served link of a raw file under one of [`Site::raw_bases`] (`/raw/…`, `/raw-eval/…`).
    fn raw_link(&self, path: &Path) -> Option<String> {
        if !path.is_file() {
            return None;
        }
        for (index, base) in self.raw_bases().iter().enumerate() {
            if let Ok(rel) = path.strip_prefix(base) {
                let segments: Vec<String> = rel
                    .components()
                    .map(|c| percent_encode(&c.as_os_str().to_string_lossy()))
                    .collect();
                let prefix = if index == 0 { "raw" } else { "raw-eval" };
                return Some(format!("/{prefix}/{}", segments.join("/")));
            }
        }
        None
    }

    fn load(&self, run: &RunSource, listed: &Listed) -> InstanceData {
        let id = &listed.id;
        let (eval, report) = source::eval_of(run.eval.as_deref(), id, &self.cache);
        let mut data = InstanceData {
            id: id.clone(),
            eval,
            report,
            ..InstanceData::default()
        };
        if let Some(eval) = &run.eval
            && source::is_plain_component(id)
        {
            let output = eval.join(id).join("test_output.txt");
            data.test_output = read_text_file(&output).ok();
            if let Some(report) = &data.report {
                data.findings = scan_test_output(&output, &failing_tests(report));
            }
        }
        if let Some(traj) = &listed.traj {
            data = data.with_view(trajectory::read_file(traj, Keep::View));
        }
        if data.patch.is_none() {
            data.patch = self
                .patch_file(run, id)
                .and_then(|path| read_text_file(&path).ok());
        }
        data
    }

    fn render_instance(
        &self,
        route: &Route,
        run_ref: &RunRef,
        id: &str,
        mode: Mode,
    ) -> Option<Rendered> {
        self.instance_page(route, run_ref, id, mode)
            .map(|(rendered, _)| rendered)
    }

    /// An instance's page and what it was rendered from.
    fn instance_page(
        &self,
        route: &Route,
        run_ref: &RunRef,
        id: &str,
        mode: Mode,
    ) -> Option<(Rendered, InstanceData)> {
        let run = self.run(run_ref)?;
        let listed = source::list(&run, &self.cache);
        let index = listed.iter().position(|l| l.id == id)?;
        let data = self.load(&run, &listed[index]);
        let link = |i: usize| {
            listed
                .get(i)
                .map(|l| format!("{}.html", encode_segment(&l.id)))
        };
        let mut nav = Nav {
            prev: index.checked_sub(1).and_then(link),
            next: link(index + 1),
            raw: Vec::new(),
            texts: format!("{}/", encode_segment(id)),
        };
        if mode == Mode::Live {
            let mut files: Vec<(&str, PathBuf)> = Vec::new();
            if let Some(traj) = &listed[index].traj {
                files.push(("trajectory", traj.clone()));
            }
            if let Some(eval) = &run.eval {
                files.push(("report.json", eval.join(id).join("report.json")));
                files.push(("test_output.txt", eval.join(id).join("test_output.txt")));
                files.push(("eval.sh", eval.join(id).join("eval.sh")));
            }
            nav.raw = files
                .into_iter()
                .filter_map(|(label, path)| Some((label.to_owned(), self.raw_link(&path)?)))
                .collect();
        }
        let version = self.version(route)?;
        let body = instance_page::render(&data, &nav);
        let shell = self.shell(route, mode, id, "instance", version.clone());
        let rendered = Rendered {
            html: page(&shell, &body),
            version,
        };
        Some((rendered, data))
    }

    fn render_runs(&self, runs: &[(String, RunSource)], mode: Mode) -> Rendered {
        let columns: Vec<RunColumn> = runs
            .iter()
            .map(|(name, run)| RunColumn {
                name: name.clone(),
                dir: run.dir.display().to_string(),
                rows: source::rows(run, &self.cache).0,
            })
            .collect();
        let version = self.version(&Route::Root).unwrap_or_default();
        let title = format!("{} runs side by side", runs.len());
        let body = compare_page::render(&columns);
        let shell = self.shell(&Route::Root, mode, &title, "runs", version.clone());
        Rendered {
            html: page(&shell, &body),
            version,
        }
    }

    fn render_across(&self, route: &Route, id: &str, mode: Mode) -> Option<Rendered> {
        let runs = self.runs();
        let mut columns = Vec::new();
        for (side, (name, run)) in runs.iter().enumerate() {
            let link = format!("../{}", compare_page::instance_link(name, id));
            let Some(listed) = source::list(run, &self.cache)
                .into_iter()
                .find(|l| l.id == id)
            else {
                columns.push(format!(
                    "<h2>{}</h2><p class=\"muted\">not in this run</p>",
                    super::html::escape(name)
                ));
                continue;
            };
            let data = self.load(run, &listed);
            let texts = format!("../c/{}/r1/i/{}/", encode_segment(name), encode_segment(id));
            columns.push(instance_page::render_column(
                &data,
                name,
                &link,
                &format!("r{side}-"),
                &texts,
            ));
        }
        if columns.len() < 2 {
            return None;
        }
        let mut body = format!(
            "<h1>{}</h1>",
            super::html::escape(&format!("{id}: {} runs", runs.len()))
        );
        let _ = write!(
            body,
            "<div class=\"side-by-side runs-{}\">",
            columns.len().min(4)
        );
        for column in &columns {
            body.push_str("<div>");
            body.push_str(column);
            body.push_str("</div>");
        }
        body.push_str("</div>");
        let version = self.version(route)?;
        let title = format!("{id}: {} runs", runs.len());
        let shell = self.shell(route, mode, &title, "compare", version.clone());
        Some(Rendered {
            html: page(&shell, &body),
            version,
        })
    }

    fn render_compare(
        &self,
        route: &Route,
        variant: &str,
        id: &str,
        mode: Mode,
    ) -> Option<Rendered> {
        let table = self.table()?;
        let row = table.rows.iter().find(|row| row.config == variant)?;
        let runs = self.compare_runs(variant)?;
        let names = [table.base.as_str(), variant];
        let mut columns = Vec::new();
        for (side, (run, name)) in runs.iter().zip(names).enumerate() {
            let listed = source::list(run, &self.cache)
                .into_iter()
                .find(|l| l.id == id)?;
            let data = self.load(run, &listed);
            let link = format!(
                "../../{}",
                Self::path_of(&Route::Instance(
                    RunRef::Config {
                        name: name.to_owned(),
                        repeat: 1
                    },
                    id.to_owned()
                ))
            );
            let texts = format!(
                "../../c/{}/r1/i/{}/",
                encode_segment(name),
                encode_segment(id)
            );
            columns.push(instance_page::render_column(
                &data,
                name,
                &link,
                if side == 0 { "a-" } else { "b-" },
                &texts,
            ));
        }
        let pairs: Vec<&String> = row.gained.iter().chain(&row.lost).collect();
        let here = pairs.iter().position(|p| *p == id);
        let link = |i: usize| pairs.get(i).map(|p| format!("{}.html", encode_segment(p)));
        let nav = Nav {
            prev: here.and_then(|i| i.checked_sub(1)).and_then(link),
            next: here.and_then(|i| link(i + 1)),
            raw: Vec::new(),
            texts: String::new(),
        };
        let mut body = format!(
            "<h1>{}</h1>",
            super::html::escape(&format!("{id}: {} vs {variant}", table.base))
        );
        body.push_str(&instance_page::render_nav(&nav));
        body.push_str("<div class=\"side-by-side\"><div>");
        body.push_str(&columns[0]);
        body.push_str("</div><div>");
        body.push_str(&columns[1]);
        body.push_str("</div></div>");
        let version = self.version(route)?;
        let title = format!("{id}: {} vs {variant}", table.base);
        let shell = self.shell(route, mode, &title, "compare", version.clone());
        Some(Rendered {
            html: page(&shell, &body),
            version,
        })
    }
}

/// The failing tests' and the canaries' lines of a test output, read a line at a time.
fn scan_test_output(path: &Path, tests: &[String]) -> Option<LogFindings> {
    use std::io::BufRead as _;
    let file = std::fs::File::open(path).ok()?;
    let lines = std::io::BufReader::new(file)
        .split(b'\n')
        .map_while(Result::ok)
        .map(|line| String::from_utf8_lossy(&line).into_owned());
    Some(scan_log(lines, tests))
}

/// A run's name: its directory's, or its parent's when it is the `run` or `eval` of a batch.
fn run_name(dir: &Path) -> String {
    let name = |path: &Path| {
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "run".to_owned())
    };
    let own = name(dir);
    match dir.parent() {
        Some(parent) if matches!(own.as_str(), "run" | "eval") => {
            // `<config>/r<k>/run` of an ablation reads better as `<config>-r<k>`.
            let up = name(parent);
            match parent.parent() {
                Some(grand) if up.starts_with('r') && up[1..].parse::<usize>().is_ok() => {
                    format!("{}-{up}", name(grand))
                }
                _ => up,
            }
        }
        _ => own,
    }
}

/// `name`, or `name-2`, `name-3`… when a run already has it.
fn unique_name(runs: &[(String, RunSource)], name: &str) -> String {
    let taken = |candidate: &str| runs.iter().any(|(n, _)| n == candidate);
    if !taken(name) {
        return name.to_owned();
    }
    (2..)
        .map(|k| format!("{name}-{k}"))
        .find(|candidate| !taken(candidate))
        .unwrap_or_default()
}

/// A path segment percent-encoded for a URL.
fn percent_encode(segment: &str) -> String {
    let mut out = String::new();
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

mod export;

#[cfg(test)]
#[path = "site_tests.rs"]
mod tests;
