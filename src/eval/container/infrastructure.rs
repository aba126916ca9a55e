//! The test infrastructure of the test sandbox: saved before anything of the patch arrives
//! (its untracked files, and the digests and a tar of those that are infrastructure), and put
//! back after, with the sandbox's own git ([`infra::reset_plan`]).

use super::*;

/// The untracked files of the test sandbox's repository before anything of the patch arrives,
/// and the digests of those that are test infrastructure, which are saved in a tar to be put
/// back after.
pub(super) struct Saved {
    untracked: BTreeSet<String>,
    digests: BTreeMap<String, String>,
}

const SAVED_LIST: &str = "/tmp/aci-eval/saved.list";
const SAVED_TAR: &str = "/tmp/aci-eval/saved.tar";

pub(super) async fn save_infrastructure(
    sandbox: &mut impl Sandbox,
    repo_dir: &str,
) -> Result<Saved, SandboxError> {
    let listed = trusted(
        sandbox,
        repo_dir,
        "list the untracked files",
        &format!("{GIT} ls-files -z --others"),
    )
    .await?;
    let untracked: Vec<String> = nul_list(&listed);
    let keep = infra::worth_saving(&untracked);
    let mut digests = BTreeMap::new();
    if !keep.is_empty() {
        let list: Vec<u8> = keep
            .iter()
            .flat_map(|p| [p.as_bytes(), b"\0"].concat())
            .collect();
        sandbox.write_file(SAVED_LIST, &list).await?;
        let script = format!(
            "tar --null -T {SAVED_LIST} -cf {SAVED_TAR} && xargs -0 sha256sum -z -- < {SAVED_LIST}"
        );
        let sums = trusted(sandbox, repo_dir, "save the test infrastructure", &script).await?;
        digests = digest_map(&sums);
    }
    Ok(Saved {
        untracked: untracked.into_iter().collect(),
        digests,
    })
}

/// `sha256sum -z` output → path → digest.
pub(super) fn digest_map(sums: &[u8]) -> BTreeMap<String, String> {
    nul_list(sums)
        .into_iter()
        .filter_map(|line| {
            let (digest, path) = line.split_once("  ")?;
            Some((path.to_owned(), digest.to_owned()))
        })
        .collect()
}

/// Puts the test infrastructure back ([`infra::reset_plan`], and every saved file) and returns
/// what it restored or removed.
pub(super) async fn reset_infrastructure(
    sandbox: &mut impl Sandbox,
    repo_dir: &str,
    saved: &Saved,
    run: &mut ContainerRun,
) -> Result<Vec<ResetEntry>, SandboxError> {
    let changed = trusted(
        sandbox,
        repo_dir,
        "list the changed files",
        &format!("{GIT} diff --no-renames --name-only -z HEAD"),
    )
    .await?;
    let untracked = trusted(
        sandbox,
        repo_dir,
        "list the untracked files",
        &format!("{GIT} ls-files -z --others"),
    )
    .await?;
    let dirs = trusted(
        sandbox,
        repo_dir,
        "list the base's directories",
        &format!("{GIT} ls-tree -r -d -z --name-only HEAD"),
    )
    .await?;
    let state = TreeState {
        changed: nul_list(&changed),
        untracked: nul_list(&untracked),
        untracked_at_start: saved.untracked.clone(),
        base_dirs: nul_list(&dirs).into_iter().collect(),
    };
    let mut sides = BTreeMap::new();
    for path in infra::section_paths(&state) {
        let base = sandbox
            .run_trusted(
                &format!(
                    "cd {} && {GIT} show {}",
                    shell_quote(repo_dir),
                    shell_quote(&format!("HEAD:{path}"))
                ),
                STEP_TIMEOUT,
            )
            .await?;
        let old =
            (base.exit_code == Some(0)).then(|| String::from_utf8_lossy(&base.stdout).into_owned());
        let new = match sandbox.read_file(&format!("{repo_dir}/{path}")).await {
            Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
            Err(SandboxError::File {
                kind: FileErrorKind::NotFound,
                ..
            }) => None,
            Err(error) => return Err(error),
        };
        sides.insert(path, (old, new));
    }
    let mut plan = infra::reset_plan(&state, &sides);
    let mut commands = Vec::new();
    let restored: Vec<&str> = plan
        .iter()
        .filter(|entry| entry.action == ResetAction::Restored)
        .map(|entry| entry.path.as_str())
        .collect();
    let removed: Vec<&str> = plan
        .iter()
        .filter(|entry| entry.action == ResetAction::Removed)
        .map(|entry| entry.path.as_str())
        .collect();
    for (list, name, command) in [
        (
            &restored,
            "restore.list",
            format!("{GIT} checkout HEAD --pathspec-file-nul --pathspec-from-file="),
        ),
        (&removed, "remove.list", "xargs -0 rm -f -- <".to_owned()),
    ] {
        if list.is_empty() {
            continue;
        }
        let path = format!("{WORK_DIR}/{name}");
        let bytes: Vec<u8> = list
            .iter()
            .flat_map(|p| [p.as_bytes(), b"\0"].concat())
            .collect();
        sandbox.write_file(&path, &bytes).await?;
        commands.push(format!("{command}{path}"));
    }
    if !saved.digests.is_empty() {
        let sums = sandbox
            .run_trusted(
                &format!(
                    "cd {} && xargs -0 sha256sum -z -- < {SAVED_LIST} 2>/dev/null",
                    shell_quote(repo_dir)
                ),
                STEP_TIMEOUT,
            )
            .await?;
        let now = digest_map(&sums.stdout);
        for (path, digest) in &saved.digests {
            if now.get(path) != Some(digest) {
                let why = match infra::class_of(path) {
                    Some(infra::Class::Always(why)) => why.to_owned(),
                    _ => "test infrastructure".to_owned(),
                };
                plan.push(ResetEntry {
                    path: path.clone(),
                    action: ResetAction::Restored,
                    why,
                });
            }
        }
        commands.push(format!("tar -xf {SAVED_TAR}"));
    }
    if !commands.is_empty() {
        let script = inert_script(repo_dir, &commands.join("\n"));
        let path = format!("{WORK_DIR}/reset.sh");
        sandbox.write_file(&path, script.as_bytes()).await?;
        let out = sandbox
            .run_merged(&format!("bash {path}"), STEP_TIMEOUT)
            .await?;
        run.record(&out);
    }
    plan.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(plan)
}
