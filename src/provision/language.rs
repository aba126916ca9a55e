//! Which language a record is in, and which of aci's language images runs it. A record names
//! its language in `language` (aci's records do); SWE-bench Multilingual's records do not, so
//! their repository decides ([`MULTILINGUAL_REPOS`]). The language is a name of
//! `aci.lint.languages` (`javascript`, `cpp`, …); the image is named by its toolchain
//! (`aci-node:<release>` runs JavaScript and TypeScript, `aci-c:<release>` C and C++).

use crate::instance::Instance;

/// One repository of SWE-bench Multilingual: its language and whether it runs on aci's image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RepoLanguage {
    /// `owner/name`, as the records spell it.
    pub repo: &'static str,
    /// The language, as `aci.lint.languages` names it.
    pub language: &'static str,
    /// Whether its records' eval scripts need nothing but the toolchain of aci's language image
    /// (no dependency download): otherwise they run in the records' own images
    /// (`--images swebench`).
    pub offline: bool,
}

const fn repo(repo: &'static str, language: &'static str, offline: bool) -> RepoLanguage {
    RepoLanguage {
        repo,
        language,
        offline,
    }
}

/// The 41 repositories of SWE-bench Multilingual, by name. Only the C and C++ projects that
/// vendor their test framework and build with Make or CMake (fmt's GoogleTest, redis's and
/// valkey's Tcl suite) run offline; every other one fetches its dependencies (Maven, Gradle,
/// npm, Composer, Bundler, Go modules, crates) when it builds.
pub const MULTILINGUAL_REPOS: [RepoLanguage; 41] = [
    repo("apache/druid", "java", false),
    repo("apache/lucene", "java", false),
    repo("astral-sh/ruff", "rust", false),
    repo("axios/axios", "javascript", false),
    repo("babel/babel", "javascript", false),
    repo("briannesbitt/carbon", "php", false),
    repo("burntsushi/ripgrep", "rust", false),
    repo("caddyserver/caddy", "go", false),
    repo("facebook/docusaurus", "typescript", false),
    repo("faker-ruby/faker", "ruby", false),
    repo("fastlane/fastlane", "ruby", false),
    repo("fluent/fluentd", "ruby", false),
    repo("fmtlib/fmt", "cpp", true),
    repo("gin-gonic/gin", "go", false),
    repo("gohugoio/hugo", "go", false),
    repo("google/gson", "java", false),
    repo("hashicorp/terraform", "go", false),
    repo("immutable-js/immutable-js", "javascript", false),
    repo("javaparser/javaparser", "java", false),
    repo("jekyll/jekyll", "ruby", false),
    repo("jordansissel/fpm", "ruby", false),
    repo("jqlang/jq", "c", false),
    repo("laravel/framework", "php", false),
    repo("micropython/micropython", "c", false),
    repo("mrdoob/three.js", "javascript", false),
    repo("nlohmann/json", "cpp", false),
    repo("nushell/nushell", "rust", false),
    repo("php-cs-fixer/php-cs-fixer", "php", false),
    repo("phpoffice/phpspreadsheet", "php", false),
    repo("preactjs/preact", "javascript", false),
    repo("projectlombok/lombok", "java", false),
    repo("prometheus/prometheus", "go", false),
    repo("reactivex/rxjava", "java", false),
    repo("redis/redis", "c", true),
    repo("rubocop/rubocop", "ruby", false),
    repo("sharkdp/bat", "rust", false),
    repo("tokio-rs/axum", "rust", false),
    repo("tokio-rs/tokio", "rust", false),
    repo("uutils/coreutils", "rust", false),
    repo("valkey-io/valkey", "c", true),
    repo("vuejs/core", "typescript", false),
];

/// The Multilingual repository `repo` (`owner/name`, any case).
pub fn multilingual_repo(repo: &str) -> Option<&'static RepoLanguage> {
    MULTILINGUAL_REPOS
        .iter()
        .find(|known| known.repo.eq_ignore_ascii_case(repo))
}

/// The language of `instance`: its `language`, else its Multilingual repository's; `None` when
/// it names none and its repository is not one of them (a Python record of SWE-bench).
pub fn language_of(instance: &Instance) -> Option<&str> {
    instance
        .language
        .as_deref()
        .or_else(|| multilingual_repo(&instance.repo).map(|repo| repo.language))
}

/// The language image that runs `language`: `node` for JavaScript and TypeScript, `c` for C and
/// C++, the language itself otherwise.
pub fn image_language(language: &str) -> &str {
    match language {
        "javascript" | "typescript" => "node",
        "cpp" => "c",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::LANGUAGE_IMAGES;
    use crate::lint::Language;

    #[test]
    fn every_language_runs_on_an_image_aci_builds() {
        for name in Language::NAMES {
            let image = image_language(name);
            assert!(
                LANGUAGE_IMAGES.iter().any(|built| built.language == image),
                "{name} -> {image}"
            );
        }
        assert_eq!(image_language("typescript"), "node");
        assert_eq!(image_language("cpp"), "c");
        assert_eq!(image_language("go"), "go");
    }

    #[test]
    fn a_records_own_language_wins_over_its_repository() {
        let line = r#"{"instance_id": "fmtlib__fmt-1", "problem_statement": "", "repo": "FmtLib/fmt",
            "base_commit": "0000000000000000000000000000000000000000"}"#;
        let mut record = crate::instance::parse_instances(&line.replace('\n', " "), None)
            .unwrap()
            .instances
            .remove(0);
        assert_eq!(language_of(&record), Some("cpp"));
        record.language = Some("c".to_owned());
        assert_eq!(language_of(&record), Some("c"));
        record.repo = "django/django".to_owned();
        record.language = None;
        assert_eq!(language_of(&record), None);
        let offline: Vec<&str> = MULTILINGUAL_REPOS
            .iter()
            .filter(|repo| repo.offline)
            .map(|repo| repo.repo)
            .collect();
        assert_eq!(offline, ["fmtlib/fmt", "redis/redis", "valkey-io/valkey"]);
    }
}
