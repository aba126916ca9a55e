//! Building and finding images, with no registry.
//!
//! The base image comes from Debian packages (`docker/build-base.sh`: debootstrap, then
//! `docker import`); the language images (`docker/<lang>.Dockerfile`) are built on top of it
//! through the daemon's build API from a tar context. The recipes are compiled into the binary,
//! so `aci images build` works from any directory. Each language image carries the label
//! `aci.recipe`, a hash of its Dockerfile and of the base image's id: a build is a no-op when
//! that hash matches, and a changed recipe or base rebuilds it.

pub mod as_of;
pub mod build_log;
pub mod env;
pub mod prune;
pub mod pull;
pub mod push;
pub mod release;
pub mod spec_env;

use std::collections::HashMap;
use std::path::Path;

use futures_util::StreamExt;
use sha2::{Digest, Sha256};

use crate::hint::Hint;
use crate::sandbox::SandboxError;
use crate::sandbox::docker::{BuildRequest, DockerRuntime};
use release::DebianRelease;

/// The base image's tag.
pub const BASE_TAG: &str = "aci-base:bookworm";
/// The recipe that builds [`BASE_TAG`].
pub const BASE_SCRIPT: &str = include_str!("../docker/build-base.sh");
/// Label on every image aci builds: what it is (`base`, `python`, `rust`, `env`).
pub const LABEL_IMAGE: &str = "aci.image";
/// Label holding the recipe hash of a built image.
pub const LABEL_RECIPE: &str = "aci.recipe";
/// Where the host's CA bundle is read from, for pip during builds.
pub const HOST_CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// A language image: its name, tag and Dockerfile.
#[derive(Debug, Clone, Copy)]
pub struct LanguageImage {
    /// `python` or `rust`.
    pub language: &'static str,
    /// The image tag on bookworm (on any release: [`DebianRelease::language_tag`]).
    pub tag: &'static str,
    /// The Dockerfile text.
    pub dockerfile: &'static str,
    /// Whether the build needs the host CA bundle in its context.
    pub needs_ca_bundle: bool,
}

/// Every language image aci knows how to build: Python and Rust (the default), then the
/// toolchains of SWE-bench Multilingual's records.
pub const LANGUAGE_IMAGES: [LanguageImage; 8] = [
    LanguageImage {
        language: "python",
        tag: "aci-python:bookworm",
        dockerfile: include_str!("../docker/python.Dockerfile"),
        needs_ca_bundle: true,
    },
    LanguageImage {
        language: "rust",
        tag: "aci-rust:bookworm",
        dockerfile: include_str!("../docker/rust.Dockerfile"),
        needs_ca_bundle: false,
    },
    LanguageImage {
        language: "go",
        tag: "aci-go:bookworm",
        dockerfile: include_str!("../docker/go.Dockerfile"),
        needs_ca_bundle: false,
    },
    LanguageImage {
        language: "java",
        tag: "aci-java:bookworm",
        dockerfile: include_str!("../docker/java.Dockerfile"),
        needs_ca_bundle: false,
    },
    LanguageImage {
        language: "node",
        tag: "aci-node:bookworm",
        dockerfile: include_str!("../docker/node.Dockerfile"),
        needs_ca_bundle: false,
    },
    LanguageImage {
        language: "php",
        tag: "aci-php:bookworm",
        dockerfile: include_str!("../docker/php.Dockerfile"),
        needs_ca_bundle: false,
    },
    LanguageImage {
        language: "ruby",
        tag: "aci-ruby:bookworm",
        dockerfile: include_str!("../docker/ruby.Dockerfile"),
        needs_ca_bundle: false,
    },
    LanguageImage {
        language: "c",
        tag: "aci-c:bookworm",
        dockerfile: include_str!("../docker/c.Dockerfile"),
        needs_ca_bundle: false,
    },
];

/// The images `--lang default` builds: the ones the Python and Rust tasks run in.
pub const DEFAULT_LANGUAGES: [&str; 2] = ["python", "rust"];

/// What `--lang` accepts: each image's language, `default` and `all`.
pub const LANG_CHOICES: [&str; 10] = [
    "default", "all", "python", "rust", "go", "java", "node", "php", "ruby", "c",
];

/// Why images could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// The daemon failed.
    #[error(transparent)]
    Docker(#[from] SandboxError),
    /// The base recipe failed or could not run.
    #[error("building the base image failed: {message}")]
    Base {
        /// What failed: the recipe's own `error:` line when it printed one.
        message: String,
        /// The recipe's own `hint:` line, when it printed one.
        hint: Option<String>,
    },
    /// A file the build needs is missing.
    #[error("{0}")]
    Missing(String),
    /// The language's recipe needs the host CA bundle (for pip), and it cannot be read.
    #[error("the {language} image needs the host CA bundle {HOST_CA_BUNDLE} for pip: {reason}")]
    CaBundle {
        /// The language.
        language: &'static str,
        /// Why it cannot be read.
        reason: std::io::Error,
    },
    /// An unknown language was asked for.
    #[error(
        "no image recipe for language `{0}` (known: python, rust, go, java, node, php, ruby, c)"
    )]
    UnknownLanguage(String),
    /// The release has no image for the language asked for.
    #[error("no {language} image for {release}: {reason}")]
    NotInRelease {
        /// The language.
        language: String,
        /// The release.
        release: DebianRelease,
        /// Why.
        reason: &'static str,
    },
}

/// What happened to one image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltImage {
    /// The tag.
    pub tag: String,
    /// The image id.
    pub id: String,
    /// Whether it was built now (`false`: it was already up to date).
    pub built: bool,
}

/// The language images for `--lang`: one language, `default` (Python and Rust) or `all`.
pub fn select_languages(lang: &str) -> Result<Vec<LanguageImage>, ImageError> {
    match lang {
        "all" => return Ok(LANGUAGE_IMAGES.to_vec()),
        "default" => {
            return Ok(LANGUAGE_IMAGES
                .into_iter()
                .filter(|image| DEFAULT_LANGUAGES.contains(&image.language))
                .collect());
        }
        _ => {}
    }
    LANGUAGE_IMAGES
        .iter()
        .find(|image| image.language == lang)
        .map(|image| vec![*image])
        .ok_or_else(|| ImageError::UnknownLanguage(lang.to_owned()))
}

/// The recipe hash of a language image on a given base.
pub fn recipe_hash(image: &LanguageImage, base_id: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(image.dockerfile.as_bytes());
    hasher.update(b"\0");
    hasher.update(base_id.as_bytes());
    let digest = hasher.finalize();
    data_encoding::HEXLOWER.encode(&digest[..12])
}

/// The language images of `--lang` that `release` has: naming one it lacks is an error, and
/// `all` leaves it out (`progress` says so).
pub fn languages_in_release(
    languages: Vec<LanguageImage>,
    release: DebianRelease,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<LanguageImage>, ImageError> {
    let lacking: Vec<(&str, &'static str)> = languages
        .iter()
        .filter_map(|image| Some((image.language, release.lacks_language(image.language)?)))
        .collect();
    match lacking.as_slice() {
        [] => Ok(languages),
        [(language, reason)] if languages.len() == 1 => Err(ImageError::NotInRelease {
            language: (*language).to_owned(),
            release,
            reason,
        }),
        _ => {
            for (language, reason) in &lacking {
                progress(&format!(
                    "[{language}] no {language} image for {release}: {reason}"
                ));
            }
            Ok(languages
                .into_iter()
                .filter(|image| release.lacks_language(image.language).is_none())
                .collect())
        }
    }
}

/// How many language images are built at once.
pub const BUILD_JOBS: usize = 2;

/// Builds the bookworm images: [`build_release`] with [`DebianRelease::DEFAULT`].
pub async fn build(
    runtime: &DockerRuntime,
    languages: &[LanguageImage],
    force: bool,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<Vec<BuiltImage>, ImageError> {
    build_release(runtime, DebianRelease::DEFAULT, languages, force, progress).await
}

/// Builds the base image of `release` (`aci-base:<release>`, when absent or forced) and the
/// given language images on it (`aci-<lang>:<release>`, when absent, out of date or forced),
/// [`BUILD_JOBS`] at a time. `progress` gets one line per step, each behind its language.
pub async fn build_release(
    runtime: &DockerRuntime,
    release: DebianRelease,
    languages: &[LanguageImage],
    force: bool,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<Vec<BuiltImage>, ImageError> {
    let base_tag = release.base_tag();
    let base = match runtime.inspect_image(&base_tag).await? {
        Some(info) if !force => {
            progress(&format!(
                "[base] {base_tag} is present ({})",
                short_id(&info.id)
            ));
            BuiltImage {
                tag: base_tag.clone(),
                id: info.id,
                built: false,
            }
        }
        _ => {
            build_base(&base_tag, release, progress).await?;
            let info = runtime.inspect_image(&base_tag).await?.ok_or_else(|| {
                ImageError::base(format!("the recipe ran but {base_tag} does not exist"))
            })?;
            BuiltImage {
                tag: base_tag.clone(),
                id: info.id,
                built: true,
            }
        }
    };
    // Which images need building; the up-to-date ones are reported as they are found.
    let mut pending: Vec<(usize, LanguageImage, String, String)> = Vec::new();
    let mut done: Vec<Option<BuiltImage>> = Vec::new();
    for image in languages {
        if let Some(reason) = release.lacks_language(image.language) {
            return Err(ImageError::NotInRelease {
                language: image.language.to_owned(),
                release,
                reason,
            });
        }
        let tag = release.language_tag(image.language);
        let hash = recipe_hash(image, &base.id);
        let existing = runtime.inspect_image(&tag).await?;
        if let Some(info) =
            existing.filter(|info| !force && info.labels.get(LABEL_RECIPE) == Some(&hash))
        {
            progress(&format!(
                "[{}] {tag} is up to date ({})",
                image.language,
                short_id(&info.id)
            ));
            done.push(Some(BuiltImage {
                tag,
                id: info.id,
                built: false,
            }));
            continue;
        }
        pending.push((done.len(), *image, tag, hash));
        done.push(None);
    }
    // The builds run BUILD_JOBS at a time: one image's downloads overlap another's unpacking.
    let progress = std::sync::Mutex::new(progress);
    let say = |line: &str| {
        let mut progress = progress
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        progress(line);
    };
    let base_tag = &base_tag;
    let builds = futures_util::stream::iter(pending.into_iter().map(|(slot, image, tag, hash)| {
        let say = &say;
        async move {
            let context = build_context(&image)?;
            let labels = HashMap::from([
                (LABEL_IMAGE.to_owned(), image.language.to_owned()),
                (LABEL_RECIPE.to_owned(), hash),
            ]);
            let args = HashMap::from([("BASE".to_owned(), base_tag.clone())]);
            let prefix = format!("[{}] ", image.language);
            let request = BuildRequest {
                tag: &tag,
                dockerfile: "Dockerfile",
                context,
                build_args: &args,
                labels: &labels,
                network: true,
                host_network: false,
            };
            let id = runtime
                .build_image(request, |line| say(&format!("{prefix}{line}")))
                .await?;
            say(&format!(
                "[{}] built {tag} ({})",
                image.language,
                short_id(&id)
            ));
            Ok::<_, ImageError>((
                slot,
                BuiltImage {
                    tag,
                    id,
                    built: true,
                },
            ))
        }
    }))
    .buffer_unordered(BUILD_JOBS)
    .collect::<Vec<_>>()
    .await;
    for build in builds {
        let (slot, built) = build?;
        done[slot] = Some(built);
    }
    let mut results: Vec<BuiltImage> = done.into_iter().flatten().collect();
    results.insert(0, base);
    Ok(results)
}

fn short_id(id: &str) -> &str {
    let id = id.strip_prefix("sha256:").unwrap_or(id);
    &id[..id.len().min(12)]
}

/// The tar build context: the Dockerfile, plus the host CA bundle when pip needs it.
fn build_context(image: &LanguageImage) -> Result<Vec<u8>, ImageError> {
    let mut builder = tar::Builder::new(Vec::new());
    let mut append = |name: &str, data: &[u8]| -> Result<(), ImageError> {
        env::append_file(&mut builder, name, data)
            .map_err(|e| ImageError::Missing(format!("cannot write the build context: {e}")))
    };
    append("Dockerfile", image.dockerfile.as_bytes())?;
    if image.needs_ca_bundle {
        let bundle =
            std::fs::read(Path::new(HOST_CA_BUNDLE)).map_err(|reason| ImageError::CaBundle {
                language: image.language,
                reason,
            })?;
        append("ca-certificates.crt", &bundle)?;
    }
    builder
        .into_inner()
        .map_err(|e| ImageError::Missing(format!("cannot write the build context: {e}")))
}

impl ImageError {
    fn base(message: String) -> Self {
        ImageError::Base {
            message,
            hint: None,
        }
    }
}

/// For a failed base recipe, its own hint, or what the recipe needs.
impl Hint for ImageError {
    fn hint(&self) -> Option<String> {
        let hint = match self {
            ImageError::Base {
                hint: Some(hint), ..
            } => hint,
            ImageError::Base { hint: None, .. } => {
                "the base image is built as root on a Debian or Ubuntu host, with debootstrap \
                 (installed with apt-get when missing); see docker/build-base.sh"
            }
            ImageError::CaBundle { .. } => "apt-get install -y ca-certificates",
            ImageError::NotInRelease { .. } => "use --debian bookworm or trixie",
            _ => return None,
        };
        Some(hint.to_owned())
    }
}

/// A failed recipe's stderr: its own `error:` and `hint:` lines when it printed them,
/// otherwise the whole output.
fn recipe_failure(stderr: &str) -> ImageError {
    let text = stderr.trim();
    let text = text.strip_prefix("error: ").unwrap_or(text);
    match text.split_once("\nhint: ") {
        Some((message, hint)) => ImageError::Base {
            message: message.to_owned(),
            hint: Some(hint.to_owned()),
        },
        None => ImageError::base(text.to_owned()),
    }
}

/// Runs the base recipe (`bash -s TAG` with `ACI_SUITE=<release>`), streaming its lines to
/// `progress`.
async fn build_base(
    tag: &str,
    release: DebianRelease,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<(), ImageError> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let mut child = tokio::process::Command::new("bash")
        .args(["-s", tag])
        .env("ACI_SUITE", release.name())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| ImageError::base(format!("cannot run bash: {e}")))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(BASE_SCRIPT.as_bytes())
            .await
            .map_err(|e| ImageError::base(format!("cannot send the recipe: {e}")))?;
    }
    if let Some(stdout) = child.stdout.take() {
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            progress(&line);
        }
    }
    let output = child
        .wait_with_output()
        .await
        .map_err(|e| ImageError::base(e.to_string()))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(recipe_failure(&String::from_utf8_lossy(&output.stderr)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_are_selected_by_name_default_or_all() {
        let names = |lang: &str| -> Vec<&str> {
            select_languages(lang)
                .unwrap()
                .iter()
                .map(|image| image.language)
                .collect()
        };
        assert_eq!(names("default"), ["python", "rust"]);
        assert_eq!(
            names("all"),
            ["python", "rust", "go", "java", "node", "php", "ruby", "c"]
        );
        assert_eq!(
            select_languages("node").unwrap()[0].tag,
            "aci-node:bookworm"
        );
        for choice in LANG_CHOICES {
            assert!(select_languages(choice).is_ok(), "{choice}");
        }
        assert_eq!(
            select_languages("rust").unwrap()[0].tag,
            "aci-rust:bookworm"
        );
        assert_eq!(
            select_languages("cobol").unwrap_err().to_string(),
            "no image recipe for language `cobol` (known: python, rust, go, java, node, php, \
             ruby, c)"
        );
    }

    #[test]
    fn bullseye_has_no_rust_image_naming_it_is_an_error_and_all_leaves_it_out() {
        let mut lines = Vec::new();
        let mut progress = |line: &str| lines.push(line.to_owned());
        let all = select_languages("default").unwrap();
        let bullseye = DebianRelease::Bullseye;
        let kept = languages_in_release(all.clone(), bullseye, &mut progress).unwrap();
        let kept: Vec<&str> = kept.iter().map(|image| image.language).collect();
        assert_eq!(kept, ["python"]);
        assert_eq!(
            lines,
            ["[rust] no rust image for bullseye: bullseye's rustc 1.48 predates the 2021 edition"]
        );
        let rust = select_languages("rust").unwrap();
        let error = languages_in_release(rust.clone(), bullseye, &mut |_| {}).unwrap_err();
        assert_eq!(
            error.to_string(),
            "no rust image for bullseye: bullseye's rustc 1.48 predates the 2021 edition"
        );
        assert_eq!(
            error.hint().as_deref(),
            Some("use --debian bookworm or trixie")
        );
        let trixie = languages_in_release(all, DebianRelease::Trixie, &mut |_| {}).unwrap();
        assert_eq!(trixie.len(), 2);
        assert_eq!(
            languages_in_release(rust, DebianRelease::Bookworm, &mut |_| {})
                .unwrap()
                .len(),
            1
        );
    }

    /// The first 24 hex digits of SHA-256 over `bytes`, computed by coreutils' `sha256sum`.
    fn sha256sum_prefix(bytes: &[u8]) -> String {
        use std::io::Write;
        let mut child = std::process::Command::new("sha256sum")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(bytes).unwrap();
        let out = child.wait_with_output().unwrap();
        String::from_utf8(out.stdout).unwrap()[..24].to_owned()
    }

    #[test]
    fn the_recipe_hash_is_the_dockerfile_and_the_base_id_and_nothing_else() {
        let python = LANGUAGE_IMAGES[0];
        let base = "sha256:aaa";
        let hash = recipe_hash(&python, base);
        // The Dockerfile's bytes, a NUL, the base image's id.
        let mut input = python.dockerfile.as_bytes().to_vec();
        input.push(0);
        input.extend_from_slice(base.as_bytes());
        assert_eq!(hash, sha256sum_prefix(&input));

        // What must change it: any byte of the Dockerfile, and the base image it builds on.
        let mut dockerfile = python.dockerfile.to_owned();
        dockerfile.push('\n');
        let edited = LanguageImage {
            dockerfile: Box::leak(dockerfile.into_boxed_str()),
            ..python
        };
        assert_ne!(recipe_hash(&edited, base), hash);
        assert_ne!(recipe_hash(&python, "sha256:aab"), hash);
        assert_ne!(
            recipe_hash(&LANGUAGE_IMAGES[1], base),
            hash,
            "the rust Dockerfile"
        );
        // The NUL keeps a Dockerfile's tail from passing for the base id's head.
        let split = |dockerfile: &'static str, base: &str| {
            recipe_hash(
                &LanguageImage {
                    dockerfile,
                    ..python
                },
                base,
            )
        };
        assert_ne!(split("FROM a\nsha", "256:x"), split("FROM a\n", "sha256:x"));

        // What must not: the tag, the language's name, whether the build gets a CA bundle.
        let renamed = LanguageImage {
            language: "python3",
            tag: "registry.example/aci-python:v2",
            needs_ca_bundle: !python.needs_ca_bundle,
            ..python
        };
        assert_eq!(recipe_hash(&renamed, base), hash);
    }
}
