#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Settings, model search and skills end to end (docs/review-service.md §4: Settings,
//! Models, Skills; §7 and §8): the real binary, the fake forge serving skill folders
//! through the contents API, a tiny catalog server in models.dev format, and the scripted model.

mod common;

use common::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use test_doubles::fake_forge::{FakeForge, TEST_APP_ID, TEST_APP_KEY};
use test_doubles::scripted_model::{Behavior, REPLY_WITHOUT_TOOLS, ScriptedModel};

// ---- helpers ------------------------------------------------------------------------------

/// A models.dev-format catalog on loopback, counting downloads.
struct CatalogServer {
    url: String,
    hits: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for CatalogServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn catalog_server(catalog: Value) -> CatalogServer {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let body = catalog.to_string();
    let app = axum::Router::new().route(
        "/api.json",
        axum::routing::get(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            let body = body.clone();
            async move { ([("content-type", "application/json")], body) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    CatalogServer {
        url: format!("http://{addr}/api.json"),
        hits,
        task,
    }
}

/// A server reading the models.dev catalog of [`sample_catalog`], with `extra` in its
/// environment.
async fn models_server(
    extra: &[(&'static str, String)],
) -> (CatalogServer, tempfile::TempDir, Server) {
    let catalog = catalog_server(sample_catalog()).await;
    let mut env = vec![("MODELS_CATALOG_URL", catalog.url.clone())];
    env.extend(extra.iter().cloned());
    let (dir, server) = start_temp(&env).await;
    (catalog, dir, server)
}

fn provider(id: &str, name: &str, models: &[&str]) -> Value {
    let models: serde_json::Map<String, Value> = models
        .iter()
        .map(|m| {
            (
                (*m).to_owned(),
                json!({"id": m, "name": format!("{name} {m}"), "tool_call": true,
                       "cost": {"input": 1, "output": 2}, "limit": {"context": 1000, "output": 100}}),
            )
        })
        .collect();
    json!({"id": id, "name": name, "env": [], "npm": "@ai-sdk/x", "doc": "https://x", "models": models})
}

/// anthropic (3), zai-coding-plan (2), openai (a live-only model), mistral (2), deepseek (1)
/// and bigco (150 models).
fn sample_catalog() -> Value {
    let big: Vec<String> = (0..150).map(|i| format!("big-{i:03}")).collect();
    let big: Vec<&str> = big.iter().map(String::as_str).collect();
    json!({
        "anthropic": provider("anthropic", "Anthropic", &["claude-a", "claude-b", "claude-c"]),
        "zai-coding-plan": provider("zai-coding-plan", "Z.AI Coding Plan", &["glm-x", "glm-y"]),
        "openai": provider("openai", "OpenAI", &["live-only"]),
        "mistral": provider("mistral", "Mistral", &["Large-Model", "small"]),
        "deepseek": provider("deepseek", "DeepSeek", &["chat"]),
        "bigco": provider("bigco", "BigCo", &big),
    })
}

fn ids(list: &Value) -> Vec<String> {
    field_strings(&list["models"], "id")
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

// ---- settings -----------------------------------------------------------------------------

#[tokio::test]
async fn absent_setting_keeps_its_value() {
    let (_d, s) = start_temp(&[]).await;
    assert_eq!(s.get_json("/api/settings").await, json!({}));
    let (status, body) = s
        .put_json(
            "/api/settings",
            json!({"agent_model": "anthropic/claude-a", "agent_api_key": "sk-stored"}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({"agent_model": "anthropic/claude-a", "agent_api_key": "sk-stored"})
    );
    let (status, body) = s
        .put_json("/api/settings", json!({"default_prompt": "Be brief."}))
        .await;
    assert_eq!(status, 200);
    let expected = json!({
        "agent_model": "anthropic/claude-a",
        "agent_api_key": "sk-stored",
        "default_prompt": "Be brief."
    });
    assert_eq!(body, expected);
    // API keys are returned as stored, unredacted.
    assert_eq!(s.get_json("/api/settings").await, expected);
}

#[tokio::test]
async fn empty_string_deletes_so_env_fallback_applies() {
    let (model, _d, s) = start_with_anthropic(
        Behavior::Reviewer,
        "anthropic/claude-env",
        &[("AGENT_API_KEY", "env-key".into())],
    )
    .await;
    s.put_json(
        "/api/settings",
        json!({"agent_api_key": "stored-key", "agent_model": "anthropic/claude-stored"}),
    )
    .await;
    let (status, body) = s
        .put_json(
            "/api/settings",
            json!({"agent_api_key": "", "agent_model": ""}),
        )
        .await;
    assert_eq!((status, body), (200, json!({})));
    // The key falls back to AGENT_API_KEY and the model to the cascade (AGENT_MODEL).
    let test = s.get_json("/api/settings/test").await;
    assert_eq!(test["ok"], true, "{test}");
    let last = model.requests().last().cloned().unwrap();
    assert_eq!(last["model"], "claude-env");
}

/// The noise and verification settings take their closed values, and an empty
/// string deletes them (rule 2) so the defaults (post every severity, never quiet, verify with
/// the review's model) apply again.
#[tokio::test]
async fn noise_settings_store_their_values_and_an_empty_string_deletes_them() {
    let (_d, s) = start_temp(&[]).await;
    let (status, body) = s
        .put_json(
            "/api/settings",
            json!({"review_min_severity": " blocking ", "review_quiet": "true",
            "review_verify": "false", "verify_model": "openai/gpt-5-mini"}),
        )
        .await;
    assert_eq!(
        (status, body),
        (
            200,
            json!({"review_min_severity": "blocking", "review_quiet": "true",
                "review_verify": "false", "verify_model": "openai/gpt-5-mini"})
        )
    );
    let (status, body) = s
        .put_json(
            "/api/settings",
            json!({"review_min_severity": "", "review_quiet": "  ", "review_verify": "",
            "verify_model": ""}),
        )
        .await;
    assert_eq!((status, body), (200, json!({})));
}

/// A repository's own min_severity is stored, kept when omitted (unlike prompt and
/// model), cleared by null or "", and refused with 422 naming it for any other text.
#[tokio::test]
async fn a_repositorys_min_severity_is_kept_when_omitted_and_cleared_by_null() {
    let (_d, s) = start_temp(&[]).await;
    s.post_json(
        "/api/repos",
        json!({"full_name": "acme/widgets", "installation_id": 1}),
    )
    .await;
    let path = "/api/repos/acme/widgets";
    let (status, row) = s.put_json(path, json!({"min_severity": "blocking"})).await;
    assert_eq!((status, &row["min_severity"]), (200, &json!("blocking")));
    let (_, row) = s.put_json(path, json!({"prompt": "Be brief."})).await;
    assert_eq!(row["min_severity"], "blocking", "{row}");
    let (status, err) = s.put_json(path, json!({"min_severity": "loud"})).await;
    assert_eq!(status, 422, "{err}");
    assert!(
        err["error"].as_str().unwrap().starts_with("min_severity"),
        "{err}"
    );
    for clear in [json!(null), json!(""), json!(" ")] {
        s.put_json(path, json!({"min_severity": "question"})).await;
        let (_, row) = s.put_json(path, json!({"min_severity": clear})).await;
        assert_eq!(row["min_severity"], json!(null), "{row}");
    }
}

#[tokio::test]
async fn empty_default_prompt_is_a_noop() {
    let (_d, s) = start_temp(&[]).await;
    s.put_json("/api/settings", json!({"default_prompt": "Focus on SQL."}))
        .await;
    for empty in ["", "   "] {
        let (status, body) = s
            .put_json("/api/settings", json!({"default_prompt": empty}))
            .await;
        assert_eq!(status, 200);
        assert_eq!(body, json!({"default_prompt": "Focus on SQL."}));
    }
    // Replacing it works.
    let (_, body) = s
        .put_json(
            "/api/settings",
            json!({"default_prompt": "Focus on tests."}),
        )
        .await;
    assert_eq!(body, json!({"default_prompt": "Focus on tests."}));
}

#[tokio::test]
async fn non_string_or_unknown_setting_is_422_naming_the_field_and_writes_nothing() {
    let (_d, s) = start_temp(&[]).await;
    for (body, field) in [
        (
            json!({"agent_model": "anthropic/a", "third_api_key": 7}),
            "third_api_key",
        ),
        (json!({"agent_api_key": null}), "agent_api_key"),
        (json!({"agent_api_key": "k", "toggle": "1"}), "toggle"),
        (json!({"refine_model": "no-provider"}), "refine_model"),
        (
            json!({"review_min_severity": "loud"}),
            "review_min_severity",
        ),
        (json!({"review_quiet": "yes"}), "review_quiet"),
        (json!({"review_verify": "maybe"}), "review_verify"),
        (json!({"verify_model": "no-slash"}), "verify_model"),
        (json!({"review_passes": "6"}), "review_passes"),
        (json!({"review_passes": "0"}), "review_passes"),
    ] {
        let (status, err) = s.put_json("/api/settings", body).await;
        assert_eq!(
            (status, &err["code"]),
            (422, &json!("invalid_body")),
            "{err}"
        );
        assert!(err["error"].as_str().unwrap().starts_with(field), "{err}");
    }
    let (status, _) = s.put_json("/api/settings", json!(["agent_api_key"])).await;
    assert_eq!(status, 422);
    assert_eq!(s.get_json("/api/settings").await, json!({}));
}

#[tokio::test]
async fn settings_test_replies_with_the_model_text() {
    let (model, _d, s) = start_with_anthropic(Behavior::Reviewer, "anthropic/claude-a", &[]).await;
    s.put_json("/api/settings", json!({"agent_api_key": "sk-stored"}))
        .await;
    let test = s.get_json("/api/settings/test").await;
    assert_eq!(test["ok"], true, "{test}");
    assert_eq!(test["text"], REPLY_WITHOUT_TOOLS);
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test]
async fn settings_test_uses_the_cascade_model() {
    let model = ScriptedModel::start(Behavior::Reviewer);
    let (_d, s) = start_temp(&[
        ("THIRD_API_KEY", "sk-openai".into()),
        ("OPENAI_BASE_URL", model.openai_base_url()),
        ("AGENT_MODEL", "anthropic/claude-a".into()),
    ])
    .await;
    s.put_json("/api/settings", json!({"agent_model": "openai/gpt-5-mini"}))
        .await;
    let test = s.get_json("/api/settings/test").await;
    assert_eq!(test["ok"], true, "{test}");
    assert_eq!(model.requests()[0]["model"], "gpt-5-mini");
}

#[tokio::test]
async fn settings_test_reports_failure_in_the_body() {
    // No key at all: the failure names the setting and its env var, with status 200.
    let (_d, s) = start_temp(&[("AGENT_MODEL", "anthropic/claude-a".into())]).await;
    let (status, body) = s
        .call(reqwest::Method::GET, "/api/settings/test", None)
        .await;
    assert_eq!((status, &body["ok"]), (200, &json!(false)), "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(
        error.contains("agent_api_key") && error.contains("AGENT_API_KEY"),
        "{error}"
    );

    // A provider that fails: its error, still 200.
    let (_model, _d2, s2) = start_with_anthropic(
        Behavior::Fail500,
        "anthropic/claude-a",
        &[("AGENT_API_KEY", "k".into())],
    )
    .await;
    let body = s2.get_json("/api/settings/test").await;
    assert_eq!(body["ok"], false, "{body}");
    assert!(body["error"].as_str().is_some_and(|e| !e.is_empty()));
}

// ---- models -------------------------------------------------------------------------------

#[tokio::test]
async fn models_without_all_lists_configured_providers_only() {
    let (_catalog, _d, s) = models_server(&[
        ("AGENT_API_KEY", "k".into()),
        ("AGENT_MODEL", "anthropic/claude-a".into()),
    ])
    .await;
    let list = s.get_json("/api/models").await;
    assert_eq!(strings(&list["providers"]), vec!["anthropic"]);
    assert_eq!(
        ids(&list),
        vec![
            "anthropic/claude-a",
            "anthropic/claude-b",
            "anthropic/claude-c"
        ]
    );
    assert_eq!(list["total"], 3);
    assert_eq!(
        list["models"][0],
        json!({"id": "anthropic/claude-a", "provider": "anthropic", "providerName": "Anthropic",
               "model": "claude-a", "modelName": "Anthropic claude-a", "configured": true})
    );

    // The second key configures the coding-plan provider.
    s.put_json("/api/settings", json!({"second_api_key": "z"}))
        .await;
    // Providers named by the improver model or a repo override count even without a key.
    s.put_json("/api/settings", json!({"improver_model": "mistral/small"}))
        .await;
    s.post_json(
        "/api/repos",
        json!({"full_name": "acme/widgets", "installation_id": 1}),
    )
    .await;
    s.put_json("/api/repos/acme/widgets", json!({"model": "deepseek/chat"}))
        .await;
    let list = s.get_json("/api/models").await;
    assert_eq!(
        strings(&list["providers"]),
        vec!["anthropic", "deepseek", "mistral", "zai-coding-plan"]
    );
    assert_eq!(list["total"], 3 + 1 + 2 + 2);
    assert!(ids(&list).iter().all(|id| !id.starts_with("bigco/")));

    // The default model's provider counts too, without its key.
    s.put_json(
        "/api/settings",
        json!({"agent_api_key": "", "agent_model": "bigco/big-001"}),
    )
    .await;
    let providers = strings(&s.get_json("/api/models").await["providers"]);
    assert!(providers.contains(&"bigco".to_owned()), "{providers:?}");
}

#[tokio::test]
async fn third_key_lists_the_bundled_openai_models() {
    let (_catalog, _d, s) = models_server(&[
        ("THIRD_API_KEY", "k".into()),
        ("AGENT_MODEL", "openai/gpt-5".into()),
    ])
    .await;
    let list = s.get_json("/api/models").await;
    assert_eq!(strings(&list["providers"]), vec!["openai"]);
    let listed = ids(&list);
    assert!(listed.contains(&"openai/gpt-5".to_owned()), "{listed:?}");
    assert!(
        !listed.contains(&"openai/live-only".to_owned()),
        "{listed:?}"
    );
    // The whole catalog still has the live entry.
    let all = s.get_json("/api/models?all=1&q=openai").await;
    assert_eq!(ids(&all), vec!["openai/live-only"]);
}

#[tokio::test]
async fn models_query_is_case_insensitive_on_provider_slash_model() {
    let (_catalog, _d, s) = models_server(&[]).await;
    let list = s.get_json("/api/models?all=1&q=MISTRAL/large").await;
    assert_eq!(ids(&list), vec!["mistral/Large-Model"]);
    assert_eq!(list["models"][0]["configured"], false);
    let list = s.get_json("/api/models?all=1&q=%20LARGE%20").await;
    assert_eq!(ids(&list), vec!["mistral/Large-Model"]);
    // A parameter given twice is not guessed at: 400 in JSON, with its code.
    let (status, body) = s
        .call(reqwest::Method::GET, "/api/models?q=a&q=b", None)
        .await;
    assert_eq!(
        (status, &body["code"]),
        (400, &json!("invalid_query")),
        "{body}"
    );
}

#[tokio::test]
async fn models_results_are_capped_at_100() {
    let (_catalog, _d, s) = models_server(&[]).await;
    let list = s.get_json("/api/models?all=1").await;
    assert_eq!(list["total"], 3 + 2 + 1 + 2 + 1 + 150);
    assert_eq!(list["models"].as_array().unwrap().len(), 100);
    let list = s.get_json("/api/models?all=1&q=bigco/big-1").await;
    assert_eq!(list["total"], 50);
    assert_eq!(list["models"].as_array().unwrap().len(), 50);
}

#[tokio::test]
async fn catalog_is_cached_and_refresh_rebuilds() {
    let (catalog, _d, s) = models_server(&[]).await;
    s.get_json("/api/models?all=1").await;
    s.get_json("/api/models?q=x").await;
    assert_eq!(catalog.hits.load(Ordering::SeqCst), 1);
    s.get_json("/api/models?refresh=1").await;
    assert_eq!(catalog.hits.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn catalog_unreachable_uses_bundled_snapshot() {
    let closed = format!("http://127.0.0.1:{}/api.json", free_port());
    let (_d, s) = start_temp(&[("MODELS_CATALOG_URL", closed)]).await;
    let list = s.get_json("/api/models?all=1").await;
    let mut providers: Vec<String> = list["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["provider"].as_str().unwrap().to_owned())
        .collect();
    providers.dedup();
    assert_eq!(providers, vec!["anthropic", "openai", "zai-coding-plan"]);
    assert!(ids(&list).contains(&"anthropic/claude-sonnet-4-5".to_owned()));
}

// ---- skills -------------------------------------------------------------------------------

const SKILLS_REPO: &str = "acme/skill-pack";
const SHA1: &str = "1111111111111111111111111111111111111111";
const SHA2: &str = "2222222222222222222222222222222222222222";

const SQL_SKILL_MD: &str = "---\nname: sql-safety\ndescription: Flags SQL built from strings\n---\n# SQL safety\nEvery query string built with format! is a blocking finding (marker SQL-7731).\n";

fn skill_url(git_ref: &str, path: &str) -> String {
    format!("https://github.com/{SKILLS_REPO}/tree/{git_ref}/{path}")
}

/// The skill pack at main = SHA1: sql-safety (SKILL.md + refs/checklist.md), too-many (26
/// files), too-big (1.1 MB), no-skill-md (README only).
fn publish_pack(forge: &FakeForge) {
    let many: Vec<(String, Vec<u8>)> = (0..26)
        .map(|i| (format!("skills/too-many/f{i}.md"), b"x".to_vec()))
        .collect();
    let big = vec![b'a'; 600 * 1024];
    let mut files: Vec<(&str, &[u8])> = vec![
        ("skills/sql-safety/SKILL.md", SQL_SKILL_MD.as_bytes()),
        (
            "skills/sql-safety/refs/checklist.md",
            b"- bind parameters (marker CHECK-5512)\n",
        ),
        ("skills/too-big/SKILL.md", b"# big\n"),
        ("skills/too-big/a.txt", &big),
        ("skills/too-big/b.txt", &big),
        ("skills/no-skill-md/README.md", b"# nothing\n"),
        ("README.md", b"# pack\n"),
    ];
    files.extend(many.iter().map(|(p, b)| (p.as_str(), b.as_slice())));
    forge.add_commit(SKILLS_REPO, "main", SHA1, &files);
}

async fn skills_server(forge: &FakeForge, extra: &[(&str, String)]) -> (tempfile::TempDir, Server) {
    let mut env = vec![("FORGE_API_URL", forge.api_url())];
    env.extend(extra.iter().map(|(k, v)| (*k, v.clone())));
    start_temp(&env).await
}

/// The fake forge with the skill pack published, and a server reading skills from it.
async fn skills_world() -> (FakeForge, tempfile::TempDir, Server) {
    let forge = FakeForge::start().await;
    publish_pack(&forge);
    let (dir, server) = skills_server(&forge, &[]).await;
    (forge, dir, server)
}

/// POST /api/skills with the skill at `path` on `git_ref` of the pack.
async fn install(server: &Server, git_ref: &str, path: &str) -> (u16, Value) {
    server
        .post_json("/api/skills", json!({ "url": skill_url(git_ref, path) }))
        .await
}

#[tokio::test]
async fn skill_install_pins_the_commit_sha() {
    let (forge, _d, s) = skills_world().await;
    let url = skill_url("main", "skills/sql-safety");
    let (status, row) = s.post_json("/api/skills", json!({ "url": url })).await;
    assert_eq!(status, 200, "{row}");
    let created_at = row["created_at"].as_i64().unwrap();
    assert_eq!(
        row,
        json!({"name": "sql-safety", "source_url": url, "owner": "acme", "repo": "skill-pack",
               "path": "skills/sql-safety", "ref": SHA1, "description": "Flags SQL built from strings",
               "enabled": 1, "created_at": created_at})
    );
    // Files fetched at the SHA, not at the branch.
    let contents: Vec<String> = forge
        .requests()
        .into_iter()
        .filter(|r| r.path.contains("/contents/"))
        .map(|r| r.path)
        .collect();
    assert!(!contents.is_empty());
    assert!(
        contents
            .iter()
            .all(|p| p.ends_with(&format!("?ref={SHA1}"))),
        "{contents:?}"
    );
    // Materialised on disk.
    let dir = s.data_dir.join("skills/sql-safety");
    assert_eq!(
        std::fs::read_to_string(dir.join("SKILL.md")).unwrap(),
        SQL_SKILL_MD
    );
    assert!(dir.join("refs/checklist.md").is_file());
}

#[tokio::test]
async fn skill_ref_with_slashes_resolves() {
    let forge = FakeForge::start().await;
    forge.add_commit(
        SKILLS_REPO,
        "release/v1",
        SHA2,
        &[("skills/sql-safety/SKILL.md", SQL_SKILL_MD.as_bytes())],
    );
    let (_d, s) = skills_server(&forge, &[]).await;
    let (status, row) = install(&s, "release/v1", "skills/sql-safety").await;
    assert_eq!(status, 200, "{row}");
    assert_eq!(
        (row["ref"].as_str(), row["path"].as_str()),
        (Some(SHA2), Some("skills/sql-safety"))
    );
}

#[tokio::test]
async fn skill_blob_is_never_returned() {
    let (_forge, _d, s) = skills_world().await;
    let (_, row) = install(&s, "main", "skills/sql-safety").await;
    let (_, row2) = s
        .put_json("/api/skills/sql-safety", json!({"enabled": false}))
        .await;
    let list = s.get_json("/api/skills").await;
    let expected_keys = [
        "created_at",
        "description",
        "enabled",
        "name",
        "owner",
        "path",
        "ref",
        "repo",
        "source_url",
    ];
    for v in [&row, &row2, &list[0]] {
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort();
        assert_eq!(keys, expected_keys, "{v}");
    }
}

#[tokio::test]
async fn bad_skill_url_is_422() {
    let (_forge, _d, s) = skills_world().await;
    for body in [
        json!({}),
        json!({"url": 5}),
        json!({"url": "not a url"}),
        json!({"url": format!("https://gitlab.com/{SKILLS_REPO}/tree/main/skills/sql-safety")}),
        json!({"url": format!("https://github.com/{SKILLS_REPO}/blob/main/skills/sql-safety")}),
        json!({"url": format!("https://github.com/{SKILLS_REPO}/tree/main")}),
        json!({"url": skill_url("main", "skills/Bad_Name")}),
        json!({"url": skill_url("no-such-branch", "skills/sql-safety")}),
        json!({"url": skill_url("main", "skills/missing")}),
        json!({"url": skill_url("main", "README.md")}),
        json!({"url": skill_url("main", "skills/no-skill-md")}),
        json!({"url": "https://github.com/acme/no-such-repo/tree/main/skills/sql-safety"}),
    ] {
        let (status, err) = s.post_json("/api/skills", body.clone()).await;
        // No url string at all breaks the body's schema; a url that cannot be installed fails
        // the install.
        let code = if body["url"].is_string() {
            "skill_install_failed"
        } else {
            "invalid_body"
        };
        assert_eq!(
            (status, &err["code"]),
            (422, &json!(code)),
            "{body} -> {err}"
        );
        assert!(
            err["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{body} -> {err}"
        );
    }
    assert_eq!(s.get_json("/api/skills").await, json!([]));
}

#[tokio::test]
async fn skill_over_25_files_or_1_mb_is_422() {
    let (_forge, _d, s) = skills_world().await;
    // (the skill, the limit its refusal names)
    for (path, limit) in [
        ("skills/too-many", "25 files"),
        ("skills/too-big", "1048576 bytes"),
    ] {
        let (status, err) = install(&s, "main", path).await;
        assert_eq!(status, 422, "{path}: {err}");
        assert!(
            err["error"].as_str().unwrap().contains(limit),
            "{path}: {err}"
        );
    }
    assert!(!s.data_dir.join("skills/too-big").exists());
}

#[tokio::test]
async fn skill_reinstall_updates_in_place_and_reenables() {
    let (forge, _d, s) = skills_world().await;
    let url = skill_url("main", "skills/sql-safety");
    let (_, first) = s.post_json("/api/skills", json!({ "url": url })).await;
    let (status, off) = s
        .put_json("/api/skills/sql-safety", json!({"enabled": false}))
        .await;
    assert_eq!((status, off["enabled"].as_i64()), (200, Some(0)));
    assert!(!s.data_dir.join("skills/sql-safety").exists());

    // main moves on: a new commit with a new SKILL.md.
    forge.add_commit(
        SKILLS_REPO,
        "main",
        SHA2,
        &[(
            "skills/sql-safety/SKILL.md",
            b"---\ndescription: v2\n---\nVersion two.\n",
        )],
    );
    let (status, again) = s.post_json("/api/skills", json!({ "url": url })).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(
        (
            again["ref"].as_str(),
            again["enabled"].as_i64(),
            again["description"].as_str()
        ),
        (Some(SHA2), Some(1), Some("v2"))
    );
    assert_eq!(again["created_at"], first["created_at"]);
    assert_eq!(s.get_json("/api/skills").await.as_array().unwrap().len(), 1);
    let dir = s.data_dir.join("skills/sql-safety");
    assert!(
        std::fs::read_to_string(dir.join("SKILL.md"))
            .unwrap()
            .contains("Version two.")
    );
    assert!(
        !dir.join("refs").exists(),
        "files of the old version are gone"
    );
}

#[tokio::test]
async fn enable_unknown_skill_is_404_not_found() {
    let (_d, s) = start_temp(&[]).await;
    let (status, body) = s
        .put_json("/api/skills/nope", json!({"enabled": true}))
        .await;
    assert_eq!(
        (status, body),
        (404, json!({"error": "not found", "code": "not_found"}))
    );
}

#[tokio::test]
async fn enable_requires_a_json_boolean() {
    let (_forge, _d, s) = skills_world().await;
    install(&s, "main", "skills/sql-safety").await;
    for body in [json!({"enabled": 1}), json!({"enabled": "true"}), json!({})] {
        let (status, err) = s.put_json("/api/skills/sql-safety", body.clone()).await;
        assert_eq!(
            (status, &err["code"]),
            (422, &json!("invalid_body")),
            "{body}"
        );
        assert!(err["error"].is_string());
    }
    let (status, row) = s
        .put_json("/api/skills/sql-safety", json!({"enabled": true}))
        .await;
    assert_eq!((status, row["enabled"].as_i64()), (200, Some(1)));
}

#[tokio::test]
async fn delete_skill_is_204_also_when_unknown() {
    let (_forge, _d, s) = skills_world().await;
    install(&s, "main", "skills/sql-safety").await;
    for name in ["sql-safety", "sql-safety", "never-installed"] {
        let r = s
            .http
            .delete(format!("{}/api/skills/{name}", s.url))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 204);
        assert!(r.text().await.unwrap().is_empty());
    }
    assert_eq!(s.get_json("/api/skills").await, json!([]));
    assert!(!s.data_dir.join("skills/sql-safety").exists());
}

#[tokio::test]
async fn skill_fetch_uses_the_installation_of_a_registered_repo() {
    let forge = FakeForge::start().await;
    publish_pack(&forge);
    let (_d, s) = skills_server(
        &forge,
        &[
            ("FORGE_APP_ID", TEST_APP_ID.to_owned()),
            ("FORGE_APP_PRIVATE_KEY", TEST_APP_KEY.to_owned()),
        ],
    )
    .await;
    let reads = |forge: &FakeForge| -> Vec<bool> {
        forge
            .requests()
            .into_iter()
            .filter(|r| r.path.contains("/contents/") || r.path.contains("/commits/"))
            .map(|r| r.authenticated)
            .collect()
    };
    // Not registered: anonymous reads (public repositories).
    let url = skill_url("main", "skills/sql-safety");
    assert_eq!(
        s.post_json("/api/skills", json!({ "url": url })).await.0,
        200
    );
    let anonymous = reads(&forge);
    assert!(
        !anonymous.is_empty() && anonymous.iter().all(|a| !a),
        "{anonymous:?}"
    );
    // Registered: the installation's token.
    s.post_json(
        "/api/repos",
        json!({"full_name": SKILLS_REPO, "installation_id": 9}),
    )
    .await;
    assert_eq!(
        s.post_json("/api/skills", json!({ "url": url })).await.0,
        200
    );
    let all = reads(&forge);
    let authenticated = &all[anonymous.len()..];
    assert!(
        !authenticated.is_empty() && authenticated.iter().all(|a| *a),
        "{all:?}"
    );
}

#[tokio::test]
async fn enabled_skills_reach_the_agent_prompt() {
    let w = World::start(Behavior::Reviewer, "anthropic/claude-sonnet-4-5", false).await;
    publish_pack(&w.forge);
    w.forge.add_commit(
        SKILLS_REPO,
        "other",
        SHA2,
        &[(
            "skills/off-skill/SKILL.md",
            b"# Off\nNever shown (marker OFF-9090).\n",
        )],
    );
    let s = &w.server;
    let (status, _) = install(s, "main", "skills/sql-safety").await;
    assert_eq!(status, 200);
    let (status, _) = install(s, "other", "skills/off-skill").await;
    assert_eq!(status, 200);
    s.put_json("/api/skills/off-skill", json!({"enabled": false}))
        .await;

    s.enable(&w.full_name(), None).await;
    w.deliver_pull_request("opened").await;
    let rows = s.wait_reviews(&w.full_name(), 1, 1).await;
    assert_eq!(rows[0]["status"], "completed", "{}", s.log());

    let first = w.model.requests().first().cloned().unwrap();
    let system = first["system"].to_string();
    assert!(system.contains("sql-safety"), "{system}");
    assert!(system.contains("Flags SQL built from strings"), "{system}");
    assert!(system.contains("marker SQL-7731"), "{system}");
    assert!(
        system.contains("marker CHECK-5512"),
        "other text files are included: {system}"
    );
    assert!(
        !system.contains("name: sql-safety"),
        "front matter is left out: {system}"
    );
    assert!(
        !system.contains("OFF-9090"),
        "a disabled skill is not offered: {system}"
    );
}

/// docs/review-service.md, "Settings in force": each role's model with its source, each key's
/// state, and the alarms the overview shows, before and after settings change them.
#[tokio::test]
async fn settings_in_force_name_each_models_source_and_each_keys_state() {
    let (_c, _d, s) = models_server(&[
        ("AGENT_MODEL", "anthropic/claude-b".to_owned()),
        ("AGENT_API_KEY", "sk-env".to_owned()),
        ("FORGE_URL", "https://ghe.example.com/".to_owned()),
    ])
    .await;
    let v = s.get_json("/api/settings/effective").await;
    assert_eq!(v["forgeUrl"], "https://ghe.example.com");
    assert_eq!(v["apiExposure"], "open_on_loopback");
    let role = |v: &Value, role: &str| -> Value {
        v["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == role)
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(
        role(&v, "review"),
        json!({"role": "review", "setting": "agent_model", "model": "anthropic/claude-b",
               "source": "environment", "key": "agent_api_key", "hasKey": true,
               "inCatalog": true, "problem": null})
    );
    assert_eq!(role(&v, "verify")["source"], "inherited");
    let key = |v: &Value, setting: &str| -> Value {
        v["keys"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["setting"] == setting)
            .cloned()
            .unwrap()
    };
    assert_eq!(key(&v, "agent_api_key")["source"], "environment");
    assert_eq!(key(&v, "third_api_key")["source"], "missing");
    let codes = |v: &Value| field_strings(&v["alarms"], "code");
    assert_eq!(codes(&v), ["no_webhook_secret", "no_app_credentials"]);

    // A stored verifier on a provider without a key, and a review model the catalog lacks.
    let (status, _) = s
        .put_json(
            "/api/settings",
            json!({"verify_model": "openai/gpt-x", "agent_model": "anthropic/claude-next",
                   "agent_api_key": "sk-stored"}),
        )
        .await;
    assert_eq!(status, 200);
    let v = s.get_json("/api/settings/effective").await;
    let review = role(&v, "review");
    assert_eq!(
        (&review["source"], &review["inCatalog"], &review["problem"]),
        (&json!("setting"), &json!(false), &Value::Null)
    );
    let verify = role(&v, "verify");
    assert_eq!(
        (&verify["source"], &verify["hasKey"]),
        (&json!("setting"), &json!(false))
    );
    assert_eq!(key(&v, "agent_api_key")["source"], "setting");
    assert_eq!(key(&v, "third_api_key")["usedBy"], json!(["verify"]));
    assert_eq!(
        codes(&v),
        [
            "model_without_key",
            "no_webhook_secret",
            "no_app_credentials"
        ]
    );
    let settings = s.get_json("/api/settings/effective").await.to_string();
    assert!(!settings.contains("sk-stored") && !settings.contains("sk-env"));
}

/// docs/review-service.md, "GitLab": a server for GitLab alone raises no GitHub alarm, and
/// GitLab without its webhook secret raises its own.
#[tokio::test]
async fn a_gitlab_only_server_raises_gitlab_alarms_and_not_githubs() {
    let codes = |v: &Value| field_strings(&v["alarms"], "code");
    let gitlab = [
        ("GITLAB_URL", "https://gitlab.example.com".to_owned()),
        ("GITLAB_TOKEN", "glpat-x".to_owned()),
        ("AGENT_API_KEY", "sk-env".to_owned()),
    ];
    let (_d, s) = start_temp(&gitlab).await;
    let v = s.get_json("/api/settings/effective").await;
    assert_eq!(codes(&v), ["no_gitlab_webhook_secret"]);
    assert_eq!(v["gitlabUrl"], "https://gitlab.example.com");
    let mut both = gitlab.to_vec();
    both.push(("GITLAB_WEBHOOK_SECRET", "s".to_owned()));
    both.push(("FORGE_WEBHOOK_SECRET", "s".to_owned()));
    let (_d, s) = start_temp(&both).await;
    // A GitHub setting given: GitHub is meant to work, and its App is missing.
    let v = s.get_json("/api/settings/effective").await;
    assert_eq!(codes(&v), ["no_app_credentials"]);
}

/// docs/review-service.md, "GitLab": a skill installs from a GitLab tree URL of a project in a
/// nested group, pinned to the commit its ref names, read with GitLab's token.
#[tokio::test]
async fn skill_installs_from_a_gitlab_tree_url_pinned_to_its_commit() {
    use test_doubles::fake_gitlab::FakeGitLab;
    let gitlab = FakeGitLab::start().await;
    gitlab.add_project("platform/tools/skill-pack", 77, "main");
    let files: Vec<(&str, &[u8])> = vec![
        ("skills/sql-safety/SKILL.md", SQL_SKILL_MD.as_bytes()),
        (
            "skills/sql-safety/refs/checklist.md",
            b"- bind parameters (marker CHECK-5512)\n",
        ),
        ("README.md", b"# pack\n"),
    ];
    gitlab.add_commit("platform/tools/skill-pack", &["release/v2"], SHA1, &files);
    let (_dir, s) = start_temp(&[
        ("GITLAB_URL", gitlab.base_url()),
        ("GITLAB_TOKEN", FakeGitLab::TOKEN.to_owned()),
    ])
    .await;
    let host = gitlab.base_url().trim_start_matches("http://").to_owned();
    let url = format!(
        "{}/platform/tools/skill-pack/-/tree/release/v2/skills/sql-safety?ref_type=heads",
        gitlab.base_url()
    );
    let (status, row) = s.post_json("/api/skills", json!({ "url": url })).await;
    assert_eq!(status, 200, "{row}");
    assert_eq!(
        (
            row["owner"].as_str(),
            row["repo"].as_str(),
            row["path"].as_str(),
            row["ref"].as_str()
        ),
        (
            Some(format!("{host}/platform/tools").as_str()),
            Some("skill-pack"),
            Some("skills/sql-safety"),
            Some(SHA1)
        )
    );
    let dir = s.data_dir.join("skills/sql-safety");
    assert_eq!(
        std::fs::read_to_string(dir.join("SKILL.md")).unwrap(),
        SQL_SKILL_MD
    );
    assert!(dir.join("refs/checklist.md").is_file());
    // Every file was read at the commit, not at the branch.
    let reads: Vec<String> = gitlab
        .requests()
        .into_iter()
        .filter(|r| r.path.contains("/repository/files/") || r.path.contains("/repository/tree"))
        .map(|r| r.path)
        .collect();
    assert!(!reads.is_empty());
    assert!(
        reads.iter().all(|p| p.contains(&format!("ref={SHA1}"))),
        "{reads:?}"
    );
    // A GitLab URL that is not a tree URL is refused with GitLab's form in the message.
    let (status, body) = s
        .post_json(
            "/api/skills",
            json!({ "url": format!("{}/platform/tools/skill-pack/tree/main/skills/x", gitlab.base_url()) }),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("/-/tree/"),
        "{body}"
    );
}
