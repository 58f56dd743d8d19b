#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `review-server eval` end to end (docs/review-service.md, "Measuring the reviewer"): the
//! committed scripted cases (tests/fixtures/eval) reviewed by the scripted model, verified by
//! its verifier and judged by its judge, whose rules make known true positives, false
//! positives, false negatives and a dropped finding; the scores are asserted exactly.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use test_doubles::scripted_model::{Behavior, ScriptedModel};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/eval")
}

/// Runs the binary with the scripted model as the Anthropic endpoint.
async fn eval(model: &ScriptedModel, data: &Path, args: &[&str]) -> Output {
    let base = model.base_url();
    let data = data.to_owned();
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_review-server"))
            .arg("eval")
            .args(&args)
            .env("ANTHROPIC_BASE_URL", base)
            .env("AGENT_API_KEY", "k")
            .env("AGENT_MODEL", "anthropic/claude-sonnet-4-5")
            .env("DATA_DIR", &data)
            .current_dir(&data)
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn counts(v: &Value) -> [i64; 6] {
    ["golden", "posted", "dropped", "tp", "fp", "fn"].map(|k| v[k].as_i64().unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn eval_scores_the_scripted_cases_exactly_and_compares_two_runs() {
    let model = ScriptedModel::start(Behavior::Reviewer);
    let data = tempfile::tempdir().unwrap();
    let cases = fixtures().join("cases.json");
    let out = eval(
        &model,
        data.path(),
        &[cases.to_str().unwrap(), "--out", "a"],
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // Progress: case n of N, what it found, the running cost.
    assert!(stderr.contains("[1/3] found: reviewing"), "{stderr}");
    assert!(
        stderr.contains("[1/3] found: 2 posted, 1 dropped · TP 1 FP 1 FN 0 · $"),
        "{stderr}"
    );
    assert!(
        stderr.contains("[3/3] clean: 1 posted, 0 dropped"),
        "{stderr}"
    );
    assert!(stderr.contains("(run $"), "{stderr}");

    let a = read_json(&data.path().join("a/results.json"));
    let total = &a["total"];
    // TP: found's golden comment; FP: found's TODO and clean's TODO; FN: missed's off-by-one;
    // the flagged unwrap was dropped by verification and counts nowhere.
    assert_eq!(counts(total), [2, 3, 1, 1, 2, 1]);
    assert_eq!(total["precision"].as_f64(), Some(1.0 / 3.0));
    assert_eq!(total["recall"].as_f64(), Some(0.5));
    assert_eq!(total["f1"].as_f64(), Some(0.4));
    assert!(total["tokens"].as_i64().unwrap() > 0);
    assert!(total["judge_tokens"].as_i64().unwrap() > 0);
    assert_eq!(a["cases_run"], 3);
    assert_eq!(a["cases_failed"], 0);
    assert_eq!(a["settings"]["passes"], 1);
    assert_eq!(a["settings"]["verify_model"], "anthropic/claude-sonnet-4-5");
    let case = |id: &str| {
        a["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap()
            .clone()
    };
    let found = case("found");
    assert_eq!(counts(&found), [1, 2, 1, 1, 1, 0]);
    assert_eq!(found["precision"].as_f64(), Some(0.5));
    assert_eq!(found["recall"].as_f64(), Some(1.0));
    assert_eq!(found["dropped_findings"][0]["line"], 8);
    assert!(
        found["dropped_findings"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("scripted verifier")
    );
    // The judge's prompts and answers are kept: one golden comment × two findings.
    let judged = found["judgements"].as_array().unwrap();
    assert_eq!(judged.len(), 2);
    assert!(
        judged[0]["prompt"]
            .as_str()
            .unwrap()
            .contains("<golden>\n`parse` now calls `unwrap()`")
    );
    assert!(judged[0]["answer"].as_str().unwrap().contains("\"match\""));
    let matched: Vec<&Value> = found["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["matches"] == serde_json::json!([0]))
        .collect();
    assert_eq!(matched.len(), 1);
    assert_eq!(matched[0]["severity"], "blocking");
    assert_eq!(found["golden_comments"][0]["severity"], "High");
    let missed = case("missed");
    assert_eq!(counts(&missed), [1, 0, 0, 0, 0, 1]);
    assert_eq!(missed["precision"], Value::Null);
    assert_eq!(missed["recall"].as_f64(), Some(0.0));
    let clean = case("clean");
    assert_eq!(counts(&clean), [0, 1, 0, 0, 1, 0]);
    assert_eq!(clean["recall"], Value::Null);

    // The markdown table, on stdout and in results.md.
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let md = std::fs::read_to_string(data.path().join("a/results.md")).unwrap();
    assert_eq!(stdout, md);
    assert!(
        md.contains("| **total** | 2 | 3 | 1 | 1 | 2 | 1 | 0.333 | 0.500 | 0.400 |"),
        "{md}"
    );
    assert!(
        md.contains("| missed | 1 | 0 | 0 | 0 | 0 | 1 | — | 0.000 | 0.000 |"),
        "{md}"
    );

    // One thing varied: only blocking findings are posted, so both TODOs go.
    let out = eval(
        &model,
        data.path(),
        &[
            cases.to_str().unwrap(),
            "--out",
            "b",
            "--min-severity",
            "blocking",
        ],
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let b = read_json(&data.path().join("b/results.json"));
    assert_eq!(counts(&b["total"]), [2, 1, 1, 1, 0, 1]);
    assert_eq!(b["total"]["precision"].as_f64(), Some(1.0));
    assert_eq!(b["settings"]["min_severity"], "blocking");

    let out = eval(
        &model,
        data.path(),
        &["--compare", "a/results.json", "b/results.json"],
    )
    .await;
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        table.contains("| minimum severity | nit | blocking | changed |"),
        "{table}"
    );
    assert!(
        table.contains("| precision | 0.333 | 1.000 | +0.667 |"),
        "{table}"
    );
    assert!(
        table.contains("| recall | 0.500 | 0.500 | +0.000 |"),
        "{table}"
    );
    assert!(table.contains("| FP | 2 | 0 | -2 |"), "{table}");
    assert!(
        table.contains("| found | 0.667 | 1.000 | 1/1/0 | 1/0/0 |"),
        "{table}"
    );
}

/// A clone of the scripted bundle with a pull request ref, as a user's clone of a Martian
/// benchmark repository holds them.
fn clone_with_pull_ref(dir: &Path) -> PathBuf {
    let repo = dir.join("clone.git");
    let git = |args: &[&str]| {
        let out = Command::new("git").args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git(&[
        "clone",
        "--bare",
        "--quiet",
        fixtures().join("scripted.bundle").to_str().unwrap(),
        repo.to_str().unwrap(),
    ]);
    git(&[
        "--git-dir",
        repo.to_str().unwrap(),
        "update-ref",
        "refs/pull/5/head",
        "found",
    ]);
    repo
}

#[tokio::test(flavor = "multi_thread")]
async fn a_martian_golden_file_runs_as_published_against_a_clone() {
    let model = ScriptedModel::start(Behavior::Reviewer);
    let data = tempfile::tempdir().unwrap();
    let repo = clone_with_pull_ref(data.path());
    let golden = data.path().join("golden.json");
    std::fs::write(
        &golden,
        r#"[{"pr_title": "Parse the port directly", "url": "https://github.com/acme/hosts/pull/5",
            "comments": [{"comment": "Calling `unwrap()` on the parsed port panics on bad input.", "severity": "High"}]}]"#,
    )
    .unwrap();
    let out = eval(
        &model,
        data.path(),
        &[
            golden.to_str().unwrap(),
            "--repo",
            repo.to_str().unwrap(),
            "--base-ref",
            "base",
            "--out",
            "m",
            "--verify",
            "false",
        ],
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m = read_json(&data.path().join("m/results.json"));
    assert_eq!(m["cases"][0]["id"], "hosts-5");
    assert_eq!(m["settings"]["verify_model"], Value::Null);
    // Unverified, the flagged unwrap is posted and matches the same comment: TP stays 1 and
    // the duplicate is no false positive; the TODO is.
    assert_eq!(counts(&m["total"]), [1, 3, 0, 1, 1, 0]);
}

#[tokio::test(flavor = "multi_thread")]
async fn cases_that_cannot_run_are_all_named_before_any_model_call() {
    let model = ScriptedModel::start(Behavior::Reviewer);
    let data = tempfile::tempdir().unwrap();
    let repo = clone_with_pull_ref(data.path());
    let bundle = fixtures().join("scripted.bundle");
    let file = data.path().join("cases.json");
    let bundle = bundle.to_str().unwrap();
    std::fs::write(
        &file,
        serde_json::json!([
            {"id": "no-bundle", "pr_title": "t", "url": "u", "comments": [],
             "repo": "missing.bundle", "base": "base", "head": "found"},
            {"id": "no-commit", "pr_title": "t", "url": "u", "comments": [],
             "repo": bundle, "base": "base", "head": "0123456789abcdef0123456789abcdef01234567"},
            {"pr_title": "t", "url": "https://github.com/acme/hosts/pull/9", "comments": []},
            {"id": "fine", "pr_title": "t", "url": "u", "comments": [],
             "repo": bundle, "base": "base", "head": "clean"}
        ])
        .to_string(),
    )
    .unwrap();
    let out = eval(
        &model,
        data.path(),
        &[file.to_str().unwrap(), "--repo", repo.to_str().unwrap()],
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("3 of the cases cannot run"), "{stderr}");
    assert!(
        stderr.contains("case `no-bundle`") && stderr.contains("missing.bundle not found"),
        "{stderr}"
    );
    assert!(
        stderr.contains("case `no-commit`")
            && stderr.contains("head 0123456789abcdef0123456789abcdef01234567 is not in"),
        "{stderr}"
    );
    assert!(
        stderr.contains("case `hosts-9`")
            && stderr.contains("git fetch origin pull/9/head:refs/pull/9/head"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("`fine`") && !stderr.contains("panicked"),
        "{stderr}"
    );
    assert!(model.requests().is_empty(), "a model was called");
    assert!(!data.path().join("eval-results").exists());
}
