//! The static site: every page the directory has, rendered once, and the full texts its
//! instance pages link to, written under an output directory; and the warm-up that reads every
//! run's summaries before a live server answers.

use std::path::Path;

use super::*;

impl Site {
    /// Writes the full texts an exported instance page links to (its long ones) under `out`;
    /// returns how many.
    fn export_texts(
        &self,
        out: &Path,
        run_ref: &RunRef,
        id: &str,
        data: &InstanceData,
    ) -> Result<usize, InspectError> {
        let Some(run) = self.run(run_ref) else {
            return Ok(0);
        };
        let mut wanted: Vec<(TextKey, FullText)> = Vec::new();
        let traj = source::list(&run, &self.cache)
            .into_iter()
            .find(|l| l.id == id)
            .and_then(|listed| listed.traj);
        if let (Some(view), Some(path)) = (&data.traj, &traj) {
            for (key, text) in view.texts() {
                if is_long(text.lines, text.bytes) {
                    let parts = text.parts.clone();
                    let path = path.clone();
                    wanted.push((key, FullText::Trajectory { path, parts }));
                }
            }
        }
        let long = |text: &Option<trajectory::Text>| {
            text.as_ref().is_some_and(|t| is_long(t.lines, t.bytes))
        };
        let patch_from_trajectory = data.traj.as_ref().is_some_and(|v| v.submission.is_some());
        if long(&data.patch)
            && !patch_from_trajectory
            && let Some(path) = self.patch_file(&run, id)
        {
            wanted.push((TextKey::Patch, FullText::File(path)));
        }
        if long(&data.test_output)
            && let Some(eval) = &run.eval
        {
            let path = eval.join(id).join("test_output.txt");
            wanted.push((TextKey::TestOutput, FullText::File(path)));
        }
        let count = wanted.len();
        for (key, text) in wanted {
            let path = out.join(Self::path_of(&Route::Text(
                run_ref.clone(),
                id.to_owned(),
                key,
            )));
            let write_error = |source| InspectError::Write {
                path: path.clone(),
                source,
            };
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(write_error)?;
            }
            let file = std::fs::File::create(&path).map_err(write_error)?;
            let mut writer = std::io::BufWriter::new(file);
            text.write_to(&mut writer)
                .and_then(|_| std::io::Write::flush(&mut writer))
                .map_err(write_error)?;
        }
        Ok(count)
    }

    /// Reads every run's summaries into the cache, so the first request for a run page does not
    /// pay for reading thousands of trajectories.
    pub fn warm(&self) {
        let runs: Vec<RunSource> = match &self.kind {
            Kind::Run(run) => vec![run.clone()],
            Kind::Ablation(_) => self
                .table()
                .map(|table| {
                    table
                        .rows
                        .iter()
                        .flat_map(|row| {
                            (1..=self.repeats(&row.config)).filter_map(|repeat| {
                                self.run(&RunRef::Config {
                                    name: row.config.clone(),
                                    repeat,
                                })
                            })
                        })
                        .collect()
                })
                .unwrap_or_default(),
            Kind::Runs(runs) => runs.iter().map(|(_, run)| run.clone()).collect(),
        };
        for run in runs {
            source::rows(&run, &self.cache);
        }
    }

    /// Every page of the site.
    pub fn routes(&self) -> Vec<Route> {
        let mut routes = vec![Route::Root];
        let instances = |run_ref: RunRef, routes: &mut Vec<Route>| {
            if let Some(run) = self.run(&run_ref) {
                for listed in source::list(&run, &self.cache) {
                    routes.push(Route::Instance(run_ref.clone(), listed.id));
                }
            }
        };
        match &self.kind {
            Kind::Run(_) => instances(RunRef::Root, &mut routes),
            Kind::Runs(runs) => {
                let mut ids = std::collections::BTreeSet::new();
                for (name, run) in runs {
                    let run_ref = RunRef::Config {
                        name: name.clone(),
                        repeat: 1,
                    };
                    routes.push(Route::Run(run_ref.clone()));
                    for listed in source::list(run, &self.cache) {
                        ids.insert(listed.id.clone());
                        routes.push(Route::Instance(run_ref.clone(), listed.id));
                    }
                }
                routes.extend(ids.into_iter().map(Route::Across));
            }
            Kind::Ablation(_) => {
                let Some(table) = self.table() else {
                    return routes;
                };
                for row in &table.rows {
                    for repeat in 1..=self.repeats(&row.config) {
                        let run_ref = RunRef::Config {
                            name: row.config.clone(),
                            repeat,
                        };
                        routes.push(Route::Run(run_ref.clone()));
                        instances(run_ref, &mut routes);
                    }
                    if row.config != table.base {
                        for id in row.gained.iter().chain(&row.lost) {
                            routes.push(Route::Compare {
                                variant: row.config.clone(),
                                id: id.clone(),
                            });
                        }
                    }
                }
            }
        }
        routes
    }

    /// Writes every page under `out` as a static site (no server, no network) and returns how
    /// many pages it wrote.
    ///
    /// # Errors
    ///
    /// [`InspectError::Write`] when a directory or file cannot be written.
    pub fn export(&self, out: &Path) -> Result<usize, InspectError> {
        let mut written = 0;
        for route in self.routes() {
            let rendered = match &route {
                Route::Instance(run_ref, id) => {
                    let Some((rendered, data)) =
                        self.instance_page(&route, run_ref, id, Mode::Static)
                    else {
                        continue;
                    };
                    self.export_texts(out, run_ref, id, &data)?;
                    rendered
                }
                _ => {
                    let Some(rendered) = self.render(&route, Mode::Static) else {
                        continue;
                    };
                    rendered
                }
            };
            let path = out.join(Self::path_of(&route));
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|source| InspectError::Write {
                    path: parent.to_owned(),
                    source,
                })?;
            }
            std::fs::write(&path, rendered.html)
                .map_err(|source| InspectError::Write { path, source })?;
            written += 1;
        }
        Ok(written)
    }
}
