#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The reviewer on GitLab end to end (docs/review-service.md, "GitLab"): the real binary, a
//! real repository published as GitLab publishes a merge request's head, GitLab's merge request
//! and note hooks, the strict fake GitLab (token, positions against the diff, commit status
//! transitions) and the scripted model. Run on SQLite and, by scripts/test.sh, on PostgreSQL.

mod common;

use common::gitlab::*;
use common::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use test_doubles::scripted_model::Behavior;

/// The review rows of merge request 1, newest first.
async fn rows(w: &GitLabWorld) -> Vec<Value> {
    w.server.reviews_of(&w.full_name(), 1).await
}

async fn wait_status(w: &GitLabWorld, id: i64, status: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let row = w.server.get_json(&format!("/api/reviews/{id}")).await;
        if row["status"] == status {
            return row;
        }
        assert!(
            Instant::now() < deadline,
            "review {id} never became {status}: {row}\n{}",
            w.server.log()
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The discussions on lines of the diff (the summary note is an individual note, listed
/// among the discussions as GitLab lists it).
fn diff_discussions(w: &GitLabWorld) -> Vec<Value> {
    w.gitlab
        .discussions(PROJECT, 1)
        .into_iter()
        .filter(|d| d["notes"][0]["type"] == "DiffNote")
        .collect()
}

/// (new_path, new_line) of every discussion GitLab holds on merge request 1, sorted.
fn discussion_lines(w: &GitLabWorld) -> Vec<(String, i64)> {
    let mut lines: Vec<(String, i64)> = w
        .gitlab
        .discussions(PROJECT, 1)
        .iter()
        .filter_map(|d| {
            let p = &d["notes"][0]["position"];
            Some((p["new_path"].as_str()?.to_owned(), p["new_line"].as_i64()?))
        })
        .collect();
    lines.sort();
    lines
}

#[tokio::test(flavor = "multi_thread")]
async fn an_opened_merge_request_gets_a_note_discussions_on_its_lines_and_a_status() {
    let w = GitLabWorld::start(Behavior::Reviewer, &[]).await;
    let head = w.upstream.sha("feature");
    w.set_mr(1, &head);
    // The first delivery registers the project, disabled, under its full name with the
    // project id: nothing is reviewed.
    w.deliver_mr("open", &head, None).await;
    let repo = w
        .server
        .get_json(&format!("/api/repos/{}", repo_path(&w.full_name())))
        .await;
    assert_eq!(
        (
            repo["full_name"].as_str(),
            repo["installation_id"].as_i64(),
            repo["enabled"].as_i64()
        ),
        (Some(w.full_name().as_str()), Some(PROJECT_ID), Some(0))
    );
    assert_eq!(rows(&w).await.len(), 0);

    w.enable().await;
    w.deliver_mr("open", &head, None).await;
    let done = w.server.wait_reviews(&w.full_name(), 1, 1).await;
    assert_eq!(
        (done[0]["status"].as_str(), done[0]["trigger"].as_str()),
        (Some("completed"), Some("opened")),
        "{}",
        w.server.log()
    );

    // The summary is a merge request note; the inline comments are discussions on exactly
    // the added lines that hold unwrap() or TODO.
    let notes = w.gitlab.notes(PROJECT, 1);
    assert!(
        notes
            .iter()
            .any(|n| n["type"].is_null() && !n["body"].as_str().unwrap_or_default().is_empty()),
        "no summary note: {notes:?}"
    );
    let flagged = w.upstream.flagged_lines(&w.upstream.sha("main"), &head);
    assert!(!flagged.is_empty());
    assert_eq!(discussion_lines(&w), flagged);
    // Every discussion is positioned with the merge request's diff_refs.
    let mr = w.gitlab.merge_request(PROJECT, 1).unwrap();
    for d in diff_discussions(&w) {
        let p = &d["notes"][0]["position"];
        assert_eq!(p["head_sha"], mr["diff_refs"]["head_sha"]);
        assert_eq!(p["base_sha"], mr["diff_refs"]["base_sha"]);
        assert_eq!(p["start_sha"], mr["diff_refs"]["start_sha"]);
    }
    // The findings keep GitLab's ids: an inline finding's id is its discussion's first note.
    let id = done[0]["id"].as_i64().unwrap();
    let findings = w
        .server
        .get_json(&format!("/api/reviews/{id}/findings"))
        .await;
    let first_notes: Vec<i64> = diff_discussions(&w)
        .iter()
        .map(|d| d["notes"][0]["id"].as_i64().unwrap())
        .collect();
    let inline: Vec<&Value> = findings
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "inline")
        .collect();
    assert_eq!(inline.len(), flagged.len());
    for f in inline {
        let note = f["github_comment_id"].as_i64().unwrap();
        assert!(first_notes.contains(&note), "{f}");
    }
    // The commit status moved pending, running, success.
    assert_eq!(
        w.final_statuses(&head).await,
        ["pending", "running", "success"]
    );
    // The clone lives under repos/<gitlab host>/<namespace>/<project>.git.
    let host = w.full_name().split('/').next().unwrap().replace(':', "_");
    assert!(
        w.server
            .data_dir
            .join("repos")
            .join(host)
            .join("acme/platform/widgets.git")
            .is_dir()
    );
    // Nothing but the GitLab API was called, always with the token.
    for r in w.gitlab.requests() {
        assert!(
            r.path.starts_with("/api/v4/projects/"),
            "{} {}",
            r.method,
            r.path
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_push_or_a_reopen_reviews_again_and_other_updates_do_not() {
    let w = GitLabWorld::reviewing().await;
    let first = w.open_mr().await;
    w.server.wait_reviews(&w.full_name(), 1, 1).await;

    // A title edit: an update without oldrev.
    w.deliver_mr("update", &first, None).await;
    // New commits: an update with oldrev.
    let head2 = w.upstream.push_feature_commit();
    w.publish_mr(1, "feature");
    w.set_mr(1, &head2);
    w.deliver_mr("update", &head2, Some(&first)).await;
    let all = w.server.wait_reviews(&w.full_name(), 1, 2).await;
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!(
        (all[0]["trigger"].as_str(), all[0]["status"].as_str()),
        (Some("synchronize"), Some("completed"))
    );
    assert_eq!(
        w.final_statuses(&head2).await,
        ["pending", "running", "success"]
    );

    w.deliver_mr("close", &head2, None).await;
    w.deliver_mr("reopen", &head2, None).await;
    let all = w.server.wait_reviews(&w.full_name(), 1, 3).await;
    assert_eq!(all.len(), 3, "{all:?}");
    assert_eq!(all[0]["trigger"], "reopened");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_delivery_sent_twice_makes_one_review() {
    let w = GitLabWorld::reviewing().await;
    let head = w.upstream.sha("feature");
    w.set_mr(1, &head);
    let body = w.mr_payload(1, "open", &head, None);
    let uuid = "7f3c1a2e-9b4d-4e5f-8a6b-0c1d2e3f4a5b";
    for _ in 0..2 {
        let r = w
            .deliver("Merge Request Hook", &body, Some(GITLAB_SECRET), Some(uuid))
            .await;
        assert_eq!(r.status(), 200);
        assert_eq!(r.json::<Value>().await.unwrap(), json!({"ok": true}));
    }
    w.server.wait_reviews(&w.full_name(), 1, 1).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(rows(&w).await.len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn review_from_a_developer_reviews_and_from_a_guest_does_not() {
    let w = GitLabWorld::reviewing().await;
    let head = w.upstream.sha("feature");
    w.set_mr(1, &head);
    w.deliver_note(&w.note_payload("/review", GUEST, 5001, None))
        .await;
    w.deliver_note(&w.note_payload("/review please", (99, "stranger"), 5002, None))
        .await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(
        rows(&w).await.len(),
        0,
        "a guest's and a non-member's /review start nothing"
    );

    w.deliver_note(&w.note_payload("/review", DEVELOPER, 5003, None))
        .await;
    let done = w.server.wait_reviews(&w.full_name(), 1, 1).await;
    assert_eq!(
        (done[0]["trigger"].as_str(), done[0]["status"].as_str()),
        (Some("command"), Some("completed"))
    );
    // The access levels were read from GitLab's members API.
    assert!(!w.gitlab.posted("GET", "/members/all/").is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_or_missing_token_is_refused_401_and_starts_nothing() {
    let w = GitLabWorld::reviewing().await;
    let head = w.upstream.sha("feature");
    w.set_mr(1, &head);
    let body = w.mr_payload(1, "open", &head, None);
    for token in [
        Some("wrong"),
        Some(""),
        None,
        Some("e2e-gitlab-secret-tokeN"),
        Some("e2e-gitlab-secret-toke"),
    ] {
        let r = w.deliver("Merge Request Hook", &body, token, None).await;
        assert_eq!(r.status(), 401, "{token:?}");
        // The spec's body, as the GitHub route answers it.
        assert_eq!(
            r.json::<Value>().await.unwrap(),
            json!({"error": "invalid signature", "code": "invalid_signature"})
        );
    }
    // The token is checked before the body is read: a 25 MiB delivery with a wrong token is
    // answered while its body has not been sent.
    let port: u16 = w.server.url.rsplit(':').next().unwrap().parse().unwrap();
    let answer = tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(
            b"POST /webhook/gitlab HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Gitlab-Event: Merge Request Hook\r\n\
              X-Gitlab-Token: wrong\r\nContent-Type: application/json\r\nContent-Length: 26213376\r\n\r\n{",
        )
        .unwrap();
        let mut buf = [0u8; 64];
        let n = s.read(&mut buf).unwrap_or(0);
        String::from_utf8_lossy(&buf[..n]).into_owned()
    })
    .await
    .unwrap();
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(rows(&w).await.len(), 0);
    assert!(w.gitlab.requests().is_empty());

    // Without GITLAB_WEBHOOK_SECRET every delivery is refused, whatever it carries.
    let env: Vec<(&str, String)> = w
        .env
        .iter()
        .filter(|(k, _)| *k != "GITLAB_WEBHOOK_SECRET")
        .cloned()
        .collect();
    let (_dir, bare) = start_temp(&env).await;
    for token in [Some(GITLAB_SECRET), Some(""), None] {
        let mut req = bare
            .http
            .post(format!("{}/webhook/gitlab", bare.url))
            .header("X-Gitlab-Event", "Merge Request Hook")
            .body(body.clone());
        if let Some(t) = token {
            req = req.header("X-Gitlab-Token", t);
        }
        assert_eq!(req.send().await.unwrap().status(), 401, "{token:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_draft_waits_until_it_leaves_draft() {
    let w = GitLabWorld::reviewing().await;
    let head = w.upstream.sha("feature");
    w.set_mr(1, &head);
    let mut draft: Value = serde_json::from_slice(&w.mr_payload(1, "open", &head, None)).unwrap();
    draft["object_attributes"]["draft"] = json!(true);
    draft["object_attributes"]["title"] = json!("Draft: Parse helpers");
    let r = w
        .deliver(
            "Merge Request Hook",
            &serde_json::to_vec(&draft).unwrap(),
            Some(GITLAB_SECRET),
            None,
        )
        .await;
    assert_eq!(r.status(), 200);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(rows(&w).await.len(), 0, "a draft is not reviewed");

    let mut ready: Value = serde_json::from_slice(&w.mr_payload(1, "update", &head, None)).unwrap();
    ready["changes"] = json!({ "draft": { "previous": true, "current": false } });
    let r = w
        .deliver(
            "Merge Request Hook",
            &serde_json::to_vec(&ready).unwrap(),
            Some(GITLAB_SECRET),
            None,
        )
        .await;
    assert_eq!(r.status(), 200);
    let done = w.server.wait_reviews(&w.full_name(), 1, 1).await;
    assert_eq!(done[0]["trigger"], "ready_for_review");
}

/// A world whose model answers after `delay`, with merge request 1 opened and its review
/// running: the world and the review's id.
async fn running_review(delay: Duration, extra: &[(&'static str, String)]) -> (GitLabWorld, i64) {
    let w = GitLabWorld::start(Behavior::Slow(delay), extra).await;
    w.enable().await;
    w.open_mr().await;
    let first = w.server.wait_reviews_any(&w.full_name(), 1).await;
    let id = first["id"].as_i64().unwrap();
    wait_status(&w, id, "running").await;
    (w, id)
}

#[tokio::test(flavor = "multi_thread")]
async fn stop_cancels_the_run_and_its_commit_status() {
    let (w, id) = running_review(Duration::from_secs(3), &[("RETRY_DELAY_SECS", "1".into())]).await;
    let r = w
        .server
        .http
        .post(format!("{}/api/reviews/{id}/stop", w.server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let row = wait_status(&w, id, "failed").await;
    assert_eq!(row["error"], "Stopped by user");
    let head = w.upstream.sha("feature");
    assert_eq!(
        w.final_statuses(&head).await,
        ["pending", "running", "canceled"]
    );
    w.server
        .wait_log_line(&[
            "no automatic retry: the run was cancelled",
            &format!("review_id={id}"),
        ])
        .await;
    assert_eq!(rows(&w).await.len(), 1, "a stopped review is never retried");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_newer_push_supersedes_the_running_review() {
    let (w, first_id) = running_review(
        Duration::from_millis(700),
        &[("RETRY_DELAY_SECS", "1".into())],
    )
    .await;
    let first_head = w.upstream.sha("feature");
    let head2 = w.upstream.push_feature_commit();
    w.publish_mr(1, "feature");
    w.set_mr(1, &head2);
    w.deliver_mr("update", &head2, Some(&first_head)).await;
    let all = w.server.wait_reviews(&w.full_name(), 1, 2).await;
    let old = all.iter().find(|r| r["id"] == first_id).unwrap();
    assert_eq!(
        (old["status"].as_str(), old["error"].as_str()),
        (Some("failed"), Some("superseded by a newer push"))
    );
    assert_eq!(all[0]["status"], "completed");
    assert_eq!(
        w.final_statuses(&first_head)
            .await
            .last()
            .map(String::as_str),
        Some("canceled")
    );
    assert_eq!(
        w.final_statuses(&head2).await,
        ["pending", "running", "success"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_genuine_failure_is_retried_once_and_the_status_fails() {
    let w = GitLabWorld::start(Behavior::Fail500, &[("RETRY_DELAY_SECS", "1".into())]).await;
    w.enable().await;
    // The retry reads the merge request from GitLab.
    let head = w.open_mr().await;
    let all = w.server.wait_reviews(&w.full_name(), 1, 2).await;
    let (retry, first) = (&all[0], &all[1]);
    assert_eq!(
        (first["status"].as_str(), first["attempt"].as_i64()),
        (Some("failed"), Some(0))
    );
    assert_eq!(
        (
            retry["status"].as_str(),
            retry["attempt"].as_i64(),
            retry["trigger"].as_str()
        ),
        (Some("failed"), Some(1), Some("retry"))
    );
    let states = w.final_statuses(&head).await;
    assert_eq!(
        states.last().map(String::as_str),
        Some("failed"),
        "{states:?}"
    );
    // The failed retry says so on the merge request, as a note.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !w.gitlab.notes(PROJECT, 1).iter().any(|n| {
        n["body"]
            .as_str()
            .unwrap_or_default()
            .contains("failed twice")
    }) {
        assert!(Instant::now() < deadline, "no note about the failed retry");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_and_restarted_server_fails_its_interrupted_gitlab_review_at_boot() {
    let settings = [
        ("RETRY_DELAY_SECS", "1".to_owned()),
        ("QUEUE_POLL_MS", "100".to_owned()),
    ];
    let (mut w, id) = running_review(Duration::from_secs(30), &settings).await;
    w.kill_and_restart().await;
    let row = w.server.get_json(&format!("/api/reviews/{id}")).await;
    assert_eq!(
        (row["status"].as_str(), row["error"].as_str()),
        (Some("failed"), Some("interrupted by restart"))
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        rows(&w).await.len(),
        1,
        "an interrupted review is not retried"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reply_in_a_findings_discussion_is_answered_in_it() {
    let w = GitLabWorld::reviewing().await;
    w.open_mr().await;
    let done = w.server.wait_reviews(&w.full_name(), 1, 1).await;
    assert_eq!(done[0]["status"], "completed");
    let discussion = diff_discussions(&w)[0].clone();
    let discussion_id = discussion["id"].as_str().unwrap().to_owned();
    let reply = w.gitlab.add_discussion_reply(
        PROJECT,
        1,
        &discussion_id,
        AUTHOR.1,
        "Why is this a problem?",
    );
    w.deliver_note(&w.note_payload(
        "Why is this a problem?",
        AUTHOR,
        reply,
        Some(&discussion_id),
    ))
    .await;
    let all = w.server.wait_reviews(&w.full_name(), 1, 2).await;
    assert_eq!(
        (all[0]["trigger"].as_str(), all[0]["status"].as_str()),
        (Some("reply"), Some("completed")),
        "{}",
        w.server.log()
    );
    // The answer is a note in that discussion.
    let after = w
        .gitlab
        .discussions(PROJECT, 1)
        .into_iter()
        .find(|d| d["id"] == discussion_id.as_str())
        .unwrap();
    let notes = after["notes"].as_array().unwrap();
    assert!(notes.len() >= 3, "{notes:?}");
}

/// Merge request 1 reviewed with its findings, then fixed (no unwrap, no TODO left) and pushed:
/// the second review clears the first one's requested changes with an approval. Returns the
/// rows, newest first.
async fn fixed_after_review(w: &GitLabWorld) -> Vec<Value> {
    let first = w.open_mr().await;
    w.server.wait_reviews(&w.full_name(), 1, 1).await;
    let parse = "use std::str::FromStr;\n\npub fn parse(s: &str) -> Option<i32> {\n    i32::from_str(s).ok()\n}\n";
    let lib = "pub mod parse;\n\npub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\npub fn sub(a: i32, b: i32) -> i32 {\n    a - b\n}\n\npub fn first(v: &[i32]) -> Option<i32> {\n    v.first().copied()\n}\n";
    commit_on(
        &w.upstream,
        "feature",
        &[("src/parse.rs", parse), ("src/lib.rs", lib)],
        "fix",
    );
    w.publish_mr(1, "feature");
    let fixed = w.upstream.sha("feature");
    w.set_mr(1, &fixed);
    w.deliver_mr("update", &fixed, Some(&first)).await;
    w.server.wait_reviews(&w.full_name(), 1, 2).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fixed_merge_request_is_approved_through_the_approvals_api() {
    let w = GitLabWorld::reviewing().await;
    let all = fixed_after_review(&w).await;
    assert_eq!(all[0]["status"], "completed", "{}", w.server.log());
    // One approval, at the fixed head.
    assert_eq!(
        w.gitlab.approvals(PROJECT, 1),
        [w.upstream.sha("feature")],
        "{}",
        w.server.log()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn where_the_instance_refuses_approvals_a_note_says_so() {
    let w = GitLabWorld::reviewing().await;
    w.gitlab.refuse_approvals(401, "401 Unauthorized");
    let all = fixed_after_review(&w).await;
    assert_eq!(all[0]["status"], "completed", "{}", w.server.log());
    assert!(w.gitlab.approvals(PROJECT, 1).is_empty());
    let notes = w.gitlab.notes(PROJECT, 1);
    assert!(
        notes.iter().any(|n| n["body"]
            .as_str()
            .unwrap_or_default()
            .contains("did not accept an approval")),
        "{notes:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn review_command_reviews_a_merge_request_of_a_gitlab_checkout() {
    let w = GitLabWorld::start(Behavior::Reviewer, &[]).await;
    // A clone of the GitLab project with merge request 1 fetched as GitLab's docs show it.
    let clone = w.upstream.root.path().join("checkout");
    git(
        w.upstream.root.path(),
        &[
            "clone",
            "-q",
            w.bare.to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
    );
    git(
        &clone,
        &["fetch", "-q", "origin", "merge-requests/1/head:mr-1"],
    );
    let data = tempfile::tempdir().unwrap();
    let out = tokio::task::spawn_blocking({
        let base_url = w.model.base_url();
        let clone = clone.clone();
        let data = data.path().to_owned();
        move || {
            std::process::Command::new(env!("CARGO_BIN_EXE_review-server"))
                .args(["review", "--repo", clone.to_str().unwrap()])
                .args(["--base", "origin/main", "--head", "mr-1"])
                .args(["--model", "anthropic/claude-sonnet-4-5"])
                .env("ANTHROPIC_BASE_URL", base_url)
                .env("AGENT_API_KEY", "k")
                .env("DATA_DIR", data)
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.starts_with("# Review ("), "{stdout}");
    // The same lines the server flags on the merge request.
    let head = w.upstream.sha("feature");
    for (path, line) in w.upstream.flagged_lines(&w.upstream.sha("main"), &head) {
        assert!(
            stdout.contains(&format!("{path}:{line}")),
            "{path}:{line} in {stdout}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_improver_learns_from_a_developers_reply_and_opens_a_merge_request() {
    use test_doubles::scripted_model::IMPROVED_REVIEW_MD;
    let w = GitLabWorld::reviewing().await;
    w.open_mr().await;
    assert_eq!(
        w.server.wait_reviews(&w.full_name(), 1, 1).await[0]["status"],
        "completed"
    );
    w.gitlab.add_commit(
        PROJECT,
        &["main"],
        &w.upstream.sha("main"),
        &[("REVIEW.md", b"# Review guide\n\n- Keep functions small.\n")],
    );
    let discussion = diff_discussions(&w)[0]["id"].as_str().unwrap().to_owned();
    w.gitlab.add_discussion_reply(
        PROJECT,
        1,
        &discussion,
        DEVELOPER.1,
        "In this repo library code never unwraps; return an error instead.",
    );
    let r = w
        .server
        .http
        .post(format!(
            "{}/api/repos/{}/improve",
            w.server.url,
            repo_path(&w.full_name())
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let rows = w.server.wait_reviews(&w.full_name(), 0, 1).await;
    assert_eq!(
        rows[0]["status"],
        "completed",
        "{}\n{}",
        rows[0],
        w.server.log()
    );
    // A branch from main with the file written whole, and a merge request against main.
    let branch = format!("review-server/improve-review-md-{}", rows[0]["id"]);
    let written = w.gitlab.file_at(PROJECT, &branch, "REVIEW.md").unwrap();
    assert_eq!(String::from_utf8(written).unwrap(), IMPROVED_REVIEW_MD);
    let opened = w
        .gitlab
        .merge_request(PROJECT, 2)
        .expect("a merge request opened");
    assert_eq!(
        (
            opened["source_branch"].as_str(),
            opened["target_branch"].as_str()
        ),
        (Some(branch.as_str()), Some("main"))
    );
    // The row links it on GitLab.
    let findings = w
        .server
        .get_json(&format!("/api/reviews/{}/findings", rows[0]["id"]))
        .await;
    let link = opened["web_url"].as_str().unwrap();
    assert!(
        findings[0]["body"].as_str().unwrap().contains(link),
        "{findings}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_manual_retry_reads_the_merge_request_from_gitlab() {
    let w = GitLabWorld::reviewing().await;
    w.open_mr().await;
    let first = w.server.wait_reviews(&w.full_name(), 1, 1).await[0].clone();
    let r = w
        .server
        .http
        .post(format!(
            "{}/api/reviews/{}/retry",
            w.server.url, first["id"]
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202, "{}", r.text().await.unwrap());
    let all = w.server.wait_reviews(&w.full_name(), 1, 2).await;
    assert_eq!(all[0]["trigger"], "retry");
    assert!(!w.gitlab.posted("GET", "/merge_requests/1").is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_gitlab_deliveries_get_clear_errors_and_start_nothing() {
    let w = GitLabWorld::reviewing().await;
    let head = w.upstream.sha("feature");
    let send = |event: Option<&'static str>, body: Vec<u8>| {
        let mut req = w
            .server
            .http
            .post(format!("{}/webhook/gitlab", w.server.url))
            .header("X-Gitlab-Token", GITLAB_SECRET)
            .body(body);
        if let Some(e) = event {
            req = req.header("X-Gitlab-Event", e);
        }
        req.send()
    };
    // Not JSON.
    let r = send(Some("Merge Request Hook"), b"{not json".to_vec())
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["code"], "invalid_payload", "{body}");
    // No event header.
    let r = send(None, w.mr_payload(1, "open", &head, None))
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(r.json::<Value>().await.unwrap()["code"], "missing_event");
    // A merge request hook without the head commit it needs.
    let mut v: Value = serde_json::from_slice(&w.mr_payload(1, "open", &head, None)).unwrap();
    v["object_attributes"]
        .as_object_mut()
        .unwrap()
        .remove("last_commit");
    let r = send(Some("Merge Request Hook"), serde_json::to_vec(&v).unwrap())
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert!(
        body["error"].as_str().unwrap().contains("last_commit"),
        "{body}"
    );
    // A merge request hook whose iid is a string: the payload's own error, 400.
    v["object_attributes"]["iid"] = json!("1; DROP TABLE reviews");
    let r = send(Some("Merge Request Hook"), serde_json::to_vec(&v).unwrap())
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    // Events the reviewer does not act on are acknowledged: a push, a note on an issue.
    let r = send(Some("Push Hook"), br#"{"object_kind":"push"}"#.to_vec())
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let mut issue_note: Value =
        serde_json::from_slice(&w.note_payload("/review", DEVELOPER, 6001, None)).unwrap();
    issue_note["object_attributes"]["noteable_type"] = json!("Issue");
    issue_note.as_object_mut().unwrap().remove("merge_request");
    let r = send(Some("Note Hook"), serde_json::to_vec(&issue_note).unwrap())
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(rows(&w).await.len(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_github_repository_and_a_gitlab_project_of_the_same_name_are_two_repositories() {
    use test_doubles::fake_gitlab::FakeGitLab;
    let gitlab = FakeGitLab::start().await;
    let upstream = Upstream::new();
    // GitLab serves the same repository as acme/widgets, its merge request 1 at the feature
    // head, from the same bare repository GitHub's pull request 1 comes from.
    git(
        &upstream.work,
        &[
            "push",
            "-q",
            upstream.bare.to_str().unwrap(),
            "feature:refs/merge-requests/1/head",
        ],
    );
    // Both forges clone from the same folder here.
    let git_url = upstream.git_url();
    let w = World::start_with(
        upstream,
        Behavior::Reviewer,
        "anthropic/claude-sonnet-4-5",
        true,
        &[
            ("GITLAB_URL", gitlab.base_url()),
            ("GITLAB_TOKEN", FakeGitLab::TOKEN.to_owned()),
            ("GITLAB_WEBHOOK_SECRET", GITLAB_SECRET.to_owned()),
            ("GITLAB_GIT_URL", git_url),
        ],
    )
    .await;
    let server = &w.server;
    let head = w.upstream.sha("feature");
    let main = w.upstream.sha("main");
    gitlab.add_project("acme/widgets", 5, "main");
    gitlab.add_merge_request(
        "acme/widgets",
        json!({
            "iid": 1, "title": "Parse helpers", "author": {"id": 7, "username": "ada"},
            "source_branch": "feature", "target_branch": "main", "sha": head,
            "diff_refs": {"base_sha": git(&w.upstream.work, &["merge-base", &main, &head]),
                          "start_sha": main, "head_sha": head},
        }),
    );
    let diff = git(&w.upstream.work, &["diff", &format!("main...{head}")]);
    gitlab.set_merge_request_diff("acme/widgets", 1, &format!("{diff}\n"));
    w.forge.set_diff("acme/widgets", &head, &diff);

    let gitlab_name = format!(
        "{}/acme/widgets",
        gitlab.base_url().trim_start_matches("http://")
    );
    server.enable("acme/widgets", None).await;
    let (status, _) = server
        .post_json(
            "/api/repos",
            json!({"full_name": gitlab_name, "installation_id": 5}),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = server
        .put_json(
            &format!("/api/repos/{}", repo_path(&gitlab_name)),
            json!({"enabled": 1}),
        )
        .await;
    assert_eq!(status, 200);

    let r = server
        .deliver(
            "pull_request",
            &w.pull_request_payload("opened", &head),
            Some(SECRET),
        )
        .await;
    assert_eq!(r.status(), 200);
    let mut mr = fixture("merge_request.open.json");
    mr["project"]["id"] = json!(5);
    mr["project"]["path_with_namespace"] = json!("acme/widgets");
    mr["object_attributes"]["last_commit"]["id"] = json!(head);
    let r = server
        .http
        .post(format!("{}/webhook/gitlab", server.url))
        .header("X-Gitlab-Event", "Merge Request Hook")
        .header("X-Gitlab-Token", GITLAB_SECRET)
        .body(serde_json::to_vec(&mr).unwrap())
        .send()
        .await
        .unwrap();
    let status = r.status();
    assert_eq!(status, 200, "{}\n{}", r.text().await.unwrap(), server.log());

    let github = server.wait_reviews("acme/widgets", 1, 1).await;
    let on_gitlab = server.wait_reviews(&gitlab_name, 1, 1).await;
    assert_eq!((github.len(), on_gitlab.len()), (1, 1));
    assert_eq!(github[0]["status"], "completed", "{}", server.log());
    assert_eq!(on_gitlab[0]["status"], "completed", "{}", server.log());
    // Each review went to its own forge, and each repository has its own clone.
    assert_eq!(w.forge.reviews().len(), 1);
    assert!(!gitlab.discussions("acme/widgets", 1).is_empty());
    let repos = server.data_dir.join("repos");
    let gitlab_host = gitlab_name.split('/').next().unwrap().replace(':', "_");
    assert!(repos.join("github.com/acme/widgets.git").is_dir());
    assert!(repos.join(gitlab_host).join("acme/widgets.git").is_dir());
    let listed = server.get_json("/api/repos").await;
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["full_name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"acme/widgets") && names.contains(&gitlab_name.as_str()),
        "{names:?}"
    );
}
