//! `aci images prune`: removes images aci built, and nothing else. Every image aci builds
//! carries the label `aci.image` (`base`, `python`, `rust`, `env`); environment images also
//! carry the `aci.run_id` of the run that built them. Images are untagged without force, so an
//! image a container still uses is kept and reported. Images aci pulled carry no aci label:
//! only `--pulled` removes them, from aci's record of what it pulled.

use std::collections::BTreeMap;

use super::LABEL_IMAGE;
use super::env::ENV_IMAGE_KIND;
use crate::sandbox::SandboxError;
use crate::sandbox::docker::{DockerRuntime, ImageSummary, LABEL_RUN_ID};

/// Which images to remove.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PruneScope {
    /// The environment images built by one run.
    Run(String),
    /// Every environment image (the default): they are rebuilt on demand.
    AllEnv,
    /// Everything aci built: environment, language and base images.
    All,
}

impl PruneScope {
    /// The label filters that select the scope's images (all must match).
    pub fn label_filters(&self) -> Vec<String> {
        match self {
            Self::Run(run_id) => vec![
                format!("{LABEL_IMAGE}={ENV_IMAGE_KIND}"),
                format!("{LABEL_RUN_ID}={run_id}"),
            ],
            Self::AllEnv => vec![format!("{LABEL_IMAGE}={ENV_IMAGE_KIND}")],
            Self::All => vec![LABEL_IMAGE.to_owned()],
        }
    }
}

/// What a prune did to one image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrunedImage {
    /// A tag, or the id of an untagged image.
    pub name: String,
    /// The image id.
    pub id: String,
    /// Its `aci.image` kind.
    pub kind: String,
    /// Its size in bytes (layers shared with other images included).
    pub size: u64,
    /// Removed (`true`) or kept because a container uses it (`false`).
    pub removed: bool,
}

/// The order in which images can be removed: environment images first, then the other kinds
/// (language images), and the base image last, since the others are built on it. Ties go by
/// name, so the output is stable.
pub fn removal_order(mut images: Vec<ImageSummary>) -> Vec<ImageSummary> {
    let rank = |image: &ImageSummary| match image.labels.get(LABEL_IMAGE).map(String::as_str) {
        Some(ENV_IMAGE_KIND) => 0,
        Some("base") => 2,
        _ => 1,
    };
    images.sort_by(|a, b| {
        rank(a)
            .cmp(&rank(b))
            .then_with(|| a.tags.cmp(&b.tags))
            .then_with(|| a.id.cmp(&b.id))
    });
    images
}

/// Removes the images of `scope`, tag by tag (an untagged image by id), never forcing.
/// An image that is not labelled `aci.image` is never touched, whatever the daemon lists.
///
/// # Errors
/// The daemon could not list or remove images.
pub async fn prune(
    runtime: &DockerRuntime,
    scope: &PruneScope,
) -> Result<Vec<PrunedImage>, SandboxError> {
    let images = runtime.list_images_labelled(&scope.label_filters()).await?;
    let mut results = Vec::new();
    for image in removal_order(images) {
        let Some(kind) = image.labels.get(LABEL_IMAGE).cloned() else {
            continue;
        };
        let names = if image.tags.is_empty() {
            vec![image.id.clone()]
        } else {
            image.tags.clone()
        };
        for name in names {
            let removed = runtime.remove_image_unless_used(&name).await?;
            results.push(PrunedImage {
                name,
                id: image.id.clone(),
                kind: kind.clone(),
                size: image.size,
                removed,
            });
        }
    }
    Ok(results)
}

/// `aci images prune --pulled`: removes the images aci pulled ([`super::pull`] keeps their
/// record), never forcing. A recorded name that is gone, or now names another image (pulled
/// again by hand, retagged), is dropped from the record and left alone; one a container uses is
/// kept, in the record too.
///
/// # Errors
/// The daemon failed, or the record cannot be read or written.
pub async fn prune_pulled(runtime: &DockerRuntime) -> Result<Vec<PrunedImage>, SandboxError> {
    let Some(path) = super::pull::pulled_record_path() else {
        return Ok(Vec::new());
    };
    let io_error = |source: std::io::Error| SandboxError::Io {
        context: format!("the record of pulled images {}", path.display()),
        source,
    };
    // The daemon is asked with the record unlocked: a pull in another process meanwhile adds
    // its entry, and only what this prune settled is taken out afterwards, under the lock.
    let pulled = super::pull::read_pulled(&path).map_err(io_error)?;
    let mut results = Vec::new();
    let mut settled = BTreeMap::new();
    for (name, id) in pulled {
        let Some(info) = runtime.inspect_image(&name).await? else {
            settled.insert(name, id);
            continue;
        };
        if info.id != id {
            settled.insert(name, id);
            continue;
        }
        let removed = runtime.remove_image_unless_used(&name).await?;
        if removed {
            settled.insert(name.clone(), id.clone());
        }
        results.push(PrunedImage {
            name,
            id,
            kind: "pulled".to_owned(),
            size: 0,
            removed,
        });
    }
    let forget = move |record: &mut BTreeMap<String, String>| forget_settled(record, &settled);
    let record = path.clone();
    tokio::task::spawn_blocking(move || super::pull::update_pulled(&record, forget))
        .await
        .unwrap_or_else(|error| Err(std::io::Error::other(error)))
        .map_err(io_error)?;
    Ok(results)
}

/// Drops from `record` each entry of `settled` (removed, gone or retagged) that still names
/// the same image: one recorded again since, with another id, stays, as do entries added since.
pub fn forget_settled(record: &mut BTreeMap<String, String>, settled: &BTreeMap<String, String>) {
    for (name, id) in settled {
        if record.get(name) == Some(id) {
            record.remove(name);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn image(id: &str, tag: &str, kind: &str) -> ImageSummary {
        ImageSummary {
            id: id.to_owned(),
            tags: vec![tag.to_owned()],
            labels: HashMap::from([(LABEL_IMAGE.to_owned(), kind.to_owned())]),
            size: 1,
        }
    }

    #[test]
    fn images_are_removed_env_first_and_base_last() {
        let images = vec![
            image("1", "aci-base:bookworm", "base"),
            image("2", "aci-python:bookworm", "python"),
            image("3", "aci-env-rust:bbb", "env"),
            image("4", "aci-env-python:aaa", "env"),
            image("5", "aci-rust:bookworm", "rust"),
        ];
        let order: Vec<String> = removal_order(images)
            .into_iter()
            .map(|i| i.tags[0].clone())
            .collect();
        assert_eq!(
            order,
            [
                "aci-env-python:aaa",
                "aci-env-rust:bbb",
                "aci-python:bookworm",
                "aci-rust:bookworm",
                "aci-base:bookworm"
            ]
        );
    }

    #[test]
    fn a_prune_forgets_only_what_it_settled_and_keeps_what_others_recorded_meanwhile() {
        let entry = |name: &str, id: &str| (name.to_owned(), id.to_owned());
        let settled = BTreeMap::from([entry("a:1", "sha256:a"), entry("b:1", "sha256:b")]);
        let mut record = BTreeMap::from([
            entry("a:1", "sha256:a"),
            entry("b:1", "sha256:b2"),
            entry("c:1", "sha256:c"),
            entry("kept:1", "sha256:k"),
        ]);
        forget_settled(&mut record, &settled);
        assert_eq!(
            record,
            BTreeMap::from([
                entry("b:1", "sha256:b2"),
                entry("c:1", "sha256:c"),
                entry("kept:1", "sha256:k"),
            ])
        );
    }

    #[test]
    fn scopes_select_by_aci_labels_only() {
        assert_eq!(
            PruneScope::Run("r1".to_owned()).label_filters(),
            ["aci.image=env", "aci.run_id=r1"]
        );
        assert_eq!(PruneScope::AllEnv.label_filters(), ["aci.image=env"]);
        assert_eq!(PruneScope::All.label_filters(), ["aci.image"]);
    }
}
