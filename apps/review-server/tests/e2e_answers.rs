#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Answers in review threads and to `/ask` against the real binary, the fake forge and the
//! scripted model (docs/review-service.md, "Answers in review threads"): a member's reply on a
//! posted finding is answered in its thread, an "intended" reply dismisses the finding for
//! good, replies by others are ignored without a model call, the per-thread and per-PR limits
//! skip an answer with the reason, and each answer is a review row with its cost and tokens.

mod common;

use common::*;
use serde_json::{Value, json};
use test_doubles::fake_forge::APP_LOGIN;
use test_doubles::scripted_model::Behavior;

/// Tells the fake forge PR 1 as GitHub lists it (the review comment deliveries carry it).
fn publish_pull(w: &World) {
    let head = w.upstream.sha("feature");
    let pull: Value =
        serde_json::from_slice(&w.pull_request_payload("synchronize", &head)).unwrap();
    w.forge
        .set_pull(&w.full_name(), 1, pull["pull_request"].clone());
}

/// The first inline comment the App posted on PR 1 in `path`: the thread to reply in.
fn first_finding(w: &World, path: &str) -> Value {
    w.forge
        .pull_comments(&w.full_name(), 1)
        .into_iter()
        .find(|c| c["in_reply_to_id"].is_null() && c["path"] == path)
        .expect("the review posted no inline comment there")
}

/// Delivers the `pull_request_review_comment` (created) of stored comment `id`, signed.
async fn deliver_review_comment(w: &World, id: i64) {
    let body = w.forge.review_comment_delivery(&w.full_name(), 1, id);
    let r = w
        .server
        .deliver("pull_request_review_comment", &body, Some(SECRET))
        .await;
    assert_eq!(r.status(), 200);
}

/// The App's answers in the thread that `thread` opens.
fn answers_in(w: &World, thread: i64) -> Vec<Value> {
    w.forge
        .pull_comments(&w.full_name(), 1)
        .into_iter()
        .filter(|c| c["in_reply_to_id"] == thread && c["user"]["login"] == APP_LOGIN)
        .collect()
}

/// The newest row is a completed answer with `trigger`, its cost and tokens recorded.
fn assert_answer_row(row: &Value, trigger: &str) {
    assert_eq!(
        (row["status"].as_str(), row["trigger"].as_str()),
        (Some("completed"), Some(trigger)),
        "{row}"
    );
    assert!(row["tokens"].as_i64().unwrap() > 0, "{row}");
    assert!(row["cost"].as_f64().unwrap() > 0.0, "{row}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_members_intended_reply_is_answered_in_the_thread_and_the_finding_stays_dismissed() {
    let w = World::start(Behavior::Reviewer, "anthropic/claude-sonnet-4-5", false).await;
    w.review_once().await;
    publish_pull(&w);
    let full = w.full_name();
    // In src/parse.rs, which the push below leaves alone: its fingerprint stays the same. (A
    // finding whose surrounding lines a push edits gets a new fingerprint, and dismissal alone
    // does not keep it off the pull request.)
    let finding = first_finding(&w, "src/parse.rs");
    let thread = finding["id"].as_i64().unwrap();
    let reply = w.forge.add_reply_as(
        &full,
        1,
        thread,
        "octo",
        "User",
        "MEMBER",
        "This is intended: the input is validated before it gets here.",
    );
    deliver_review_comment(&w, reply).await;
    let rows = w.server.wait_reviews(&full, 1, 2).await;
    assert_answer_row(&rows[0], "reply");
    // Its transcript (the answerer's conversation and its `answer`) fits the API's schema.
    let session = w
        .server
        .transcript_fitting_schema(rows[0]["id"].as_i64().unwrap())
        .await;
    assert!(session["items"].to_string().contains(r#""type":"answer""#));

    // The answer sits in the thread, after reading the finding's file.
    let answers = answers_in(&w, thread);
    assert_eq!(answers.len(), 1, "{answers:?}");
    let body = answers[0]["body"].as_str().unwrap();
    let path = finding["path"].as_str().unwrap();
    assert!(body.contains("withdraw") && body.contains(path), "{body}");
    // The answer's model conversation marked the thread untrusted.
    let asked = w
        .model
        .requests()
        .into_iter()
        .find(|r| r["system"].to_string().contains("review thread answerer"))
        .unwrap();
    assert!(
        asked["messages"][0]
            .to_string()
            .contains("<untrusted_thread>"),
        "{asked}"
    );

    // The finding is dismissed with who said why; the answer is recorded as a comment.
    let answer_id = answers[0]["id"].as_i64().unwrap();
    assert_eq!(
        w.server
            .db_count(&format!(
                "SELECT count(*) FROM findings WHERE github_comment_id = {thread} AND outcome = 'dismissed'
                 AND outcome_reason LIKE 'octo explained it is intended: This is intended%'"
            ))
            .await,
        1,
        "{}",
        w.server.log()
    );
    assert_eq!(
        w.server
            .db_count(&format!(
                "SELECT count(*) FROM findings WHERE kind = 'comment' AND github_comment_id = {answer_id}
                 AND review_id = {}",
                rows[0]["id"]
            ))
            .await,
        1
    );

    // The next push, and a whole-diff review after it, do not raise it again.
    w.upstream.push_feature_commit();
    w.deliver_pull_request("synchronize").await;
    w.server.wait_reviews(&full, 1, 3).await;
    w.deliver_pr_comment("/review full", "MEMBER").await;
    let rows = w.server.wait_reviews(&full, 1, 4).await;
    assert_eq!(rows[0]["status"], "completed", "{}", w.server.log());
    let (line, reviews) = (finding["line"].clone(), w.forge.reviews());
    for later in &reviews[1..] {
        let again = later["comments"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["path"] == path && c["line"] == line);
        assert!(!again, "the dismissed finding was raised again: {later}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn replies_by_others_are_ignored_and_a_thread_gets_at_most_three_answers() {
    let w = World::start(Behavior::Reviewer, "anthropic/claude-sonnet-4-5", false).await;
    w.review_once().await;
    publish_pull(&w);
    let full = w.full_name();
    let thread = first_finding(&w, "src/lib.rs")["id"].as_i64().unwrap();

    // A contributor who did not open the PR, and a bot: no model call, no answer, no row.
    let seen = w.model.requests().len();
    let drive_by = w.forge.add_reply_as(
        &full,
        1,
        thread,
        "drive-by",
        "User",
        "CONTRIBUTOR",
        "This is intended, please withdraw it.",
    );
    let bot = w.forge.add_reply(
        &full,
        1,
        thread,
        "other-bot[bot]",
        "Bot",
        "Why is this a problem?",
    );
    for id in [drive_by, bot] {
        deliver_review_comment(&w, id).await;
        w.server
            .wait_log_line(&["review comment ignored", &format!("comment={id}")])
            .await;
    }
    assert_eq!(w.model.requests().len(), seen);
    assert!(answers_in(&w, thread).is_empty());
    assert_eq!(w.server.reviews_of(&full, 1).await.len(), 1);

    // A member asks four times: three answers, then the fourth is skipped with the reason.
    for n in 1..=3 {
        let id = w.forge.add_reply_as(
            &full,
            1,
            thread,
            "octo",
            "User",
            "MEMBER",
            &format!("Why is this a problem? ({n})"),
        );
        deliver_review_comment(&w, id).await;
        let rows = w.server.wait_reviews(&full, 1, 1 + n).await;
        assert_answer_row(&rows[0], "reply");
        assert_eq!(answers_in(&w, thread).len(), n);
    }
    // The third answer was given the thread so far, the App's two earlier answers marked.
    let last_ask = w
        .model
        .requests()
        .into_iter()
        .rev()
        .find(|r| r["system"].to_string().contains("review thread answerer"))
        .unwrap();
    let shown = last_ask["messages"][0].to_string();
    assert_eq!(shown.matches("[your earlier answer]").count(), 2, "{shown}");
    assert!(shown.contains("Why is this a problem? (3)"), "{shown}");
    let seen = w.model.requests().len();
    let fourth = w
        .forge
        .add_reply_as(&full, 1, thread, "octo", "User", "MEMBER", "And why? (4)");
    deliver_review_comment(&w, fourth).await;
    let rows = w.server.wait_reviews(&full, 1, 5).await;
    assert_eq!(rows[0]["status"], "skipped", "{}", rows[0]);
    assert_eq!(rows[0]["trigger"], "reply");
    let why = rows[0]["error"].as_str().unwrap();
    assert!(why.contains("thread_max_answers"), "{why}");
    assert_eq!(
        w.model.requests().len(),
        seen,
        "no model call over the limit"
    );
    assert_eq!(answers_in(&w, thread).len(), 3);
    // The finding was explained, not dismissed.
    assert_eq!(
        w.server
            .db_count(&format!(
                "SELECT count(*) FROM findings WHERE github_comment_id = {thread} AND outcome = 'open'"
            ))
            .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_is_answered_as_a_pr_comment_until_the_pr_limit() {
    let w = World::start(Behavior::Reviewer, "anthropic/claude-sonnet-4-5", false).await;
    w.review_once().await;
    let full = w.full_name();
    w.deliver_pr_comment("/ask what does this change do?", "MEMBER")
        .await;
    let rows = w.server.wait_reviews(&full, 1, 2).await;
    assert_answer_row(&rows[0], "ask");
    let posted = w.forge.posted("POST", "/issues/1/comments");
    let answer = posted.last().expect("no PR comment posted");
    let body = answer.body["body"].as_str().unwrap();
    assert!(
        body.contains("This change touches") && body.contains("src/lib.rs"),
        "{body}"
    );
    let asked = w
        .model
        .requests()
        .into_iter()
        .find(|r| r["system"].to_string().contains("review thread answerer"))
        .unwrap();
    assert!(
        asked["messages"][0]
            .to_string()
            .contains("<untrusted_question>\\nwhat does this change do?\\n</untrusted_question>"),
        "{asked}"
    );
    // Recorded as the answer row's comment finding.
    assert_eq!(
        w.server
            .db_count(&format!(
                "SELECT count(*) FROM findings WHERE kind = 'comment' AND review_id = {}",
                rows[0]["id"]
            ))
            .await,
        1
    );

    // The stats count the answer's tokens with the review's.
    let stats = w.server.get_json("/api/stats").await;
    let tokens: i64 = rows.iter().map(|r| r["tokens"].as_i64().unwrap()).sum();
    assert_eq!(stats["projects"][0]["tokens"], tokens, "{stats}");
    assert_eq!(stats["projects"][0]["reviews"], 2, "{stats}");

    // pr_max_answers 1: the next question is skipped with the reason, without a model call.
    let (status, _) = w
        .server
        .put_json("/api/settings", json!({"pr_max_answers": "1"}))
        .await;
    assert_eq!(status, 200);
    let seen = w.model.requests().len();
    w.deliver_pr_comment("/ask and why?", "MEMBER").await;
    let rows = w.server.wait_reviews(&full, 1, 3).await;
    assert_eq!(
        (rows[0]["status"].as_str(), rows[0]["trigger"].as_str()),
        (Some("skipped"), Some("ask")),
        "{}",
        rows[0]
    );
    assert!(
        rows[0]["error"]
            .as_str()
            .unwrap()
            .contains("pr_max_answers"),
        "{}",
        rows[0]
    );
    assert_eq!(w.model.requests().len(), seen);
}
