//! The local runtime's provisioning: a repository only, never an image or a container.

use super::*;
use crate::instance::parse_instances;

fn request<'a>(env: &'a EnvConfig, notes: &'a Notes<'a>) -> ProvisionRequest<'a> {
    ProvisionRequest {
        env,
        run_id: "test-source",
        on_step: &|_| {},
        notes,
    }
}

fn instance(record: &serde_json::Value) -> Instance {
    let loaded = parse_instances(&record.to_string(), None).unwrap();
    assert_eq!(loaded.errors, Vec::new());
    loaded.instances.into_iter().next().unwrap()
}

#[tokio::test]
async fn the_host_takes_the_repo_path_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let record = serde_json::json!({
        "instance_id": "demo__host-1", "repo": "demo/host", "problem_statement": "p",
        "repo_path": dir.path(), "base_commit": "abc1234",
    });
    let (env, notes) = (EnvConfig::default(), Notes::quiet());
    let prepared: Provisioned<()> = Provisioner::new()
        .provision_on_host(&instance(&record), &request(&env, &notes))
        .await
        .unwrap();
    assert_eq!(prepared.origin, Origin::RepoPath(dir.path().to_owned()));
    assert_eq!(prepared.checkout, None);
}

#[tokio::test]
async fn the_host_names_the_missing_image_among_what_it_tried() {
    let cache = tempfile::tempdir().unwrap();
    let record = serde_json::json!({
        "instance_id": "demo__host-2", "repo": "demo/host", "problem_statement": "p",
        "base_commit": "abc1234",
    });
    let env = EnvConfig {
        repo_cache: Some(cache.path().to_owned()),
        repo_url: cache.path().join("no-such-clone").display().to_string(),
        ..EnvConfig::default()
    };
    let notes = Notes::quiet();
    let error = Provisioner::new()
        .provision_on_host(&instance(&record), &request(&env, &notes))
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(
        text.starts_with(
            "no repository at base_commit abc1234: no repo_path; no image (--runtime local); "
        ),
        "{text}"
    );
}
