#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Bad input end to end: every case answers the documented status or leaves a failed row with
//! its error, never a panic and never a leftover worktree.

mod common;

use common::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use test_doubles::scripted_model::Behavior;

async fn error_of(r: reqwest::Response) -> (u16, Value) {
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// What a delivery must be answered with, beside its status.
enum Answer {
    /// Exactly this JSON body.
    Body(Value),
    /// An error whose message names `mentions`, with the code `code` when one is given.
    Error {
        code: Option<&'static str>,
        mentions: &'static str,
    },
    /// The status alone.
    Status,
}

#[tokio::test(flavor = "multi_thread")]
async fn deliveries_with_bad_signatures_or_bodies_get_the_documented_status() {
    use Answer::{Body, Error, Status};
    let w = World::start(Behavior::Reviewer, "anthropic/claude-sonnet-4-5", true).await;
    let body = w.pull_request_payload("opened", &w.upstream.sha("feature"));
    let invalid = json!({ "error": "invalid signature", "code": "invalid_signature" });
    let ok = json!({ "ok": true });
    let mut no_repository: Value = serde_json::from_slice(&body).unwrap();
    no_repository.as_object_mut().unwrap().remove("repository");
    let no_repository = serde_json::to_vec(&no_repository).unwrap();
    // A POST on the webhook signed over `signed`, with no header but the signature.
    let signed_over = |signed: &[u8]| {
        w.server
            .http
            .post(format!("{}/webhook/github", w.server.url))
            .header(
                "X-Hub-Signature-256",
                forge::sign(SECRET.as_bytes(), signed),
            )
    };
    let server = &w.server;
    // (what is sent, the request, the status, the answer)
    let cases: Vec<(&str, reqwest::RequestBuilder, u16, Answer)> = vec![
        (
            "a signature with the wrong secret",
            server.delivery("pull_request", &body, Some("wrong secret")),
            401,
            Body(invalid.clone()),
        ),
        (
            "no signature",
            server.delivery("pull_request", &body, None),
            401,
            Body(invalid.clone()),
        ),
        (
            "a body altered after signing",
            signed_over(&body)
                .header("X-GitHub-Event", "pull_request")
                .body([&body[..], b" "].concat()),
            401,
            Body(invalid),
        ),
        (
            "a body that is not JSON",
            server.delivery("pull_request", b"{not json", Some(SECRET)),
            400,
            Error {
                code: Some("invalid_payload"),
                mentions: "not JSON",
            },
        ),
        (
            "a signed delivery without an event header",
            signed_over(&body).body(body.clone()),
            400,
            Error {
                code: None,
                mentions: "X-GitHub-Event",
            },
        ),
        (
            "a signed delivery with an empty event header",
            signed_over(&body)
                .header("X-GitHub-Event", "")
                .body(body.clone()),
            400,
            Error {
                code: None,
                mentions: "X-GitHub-Event",
            },
        ),
        (
            "a signed delivery with a blank event header",
            signed_over(&body)
                .header("X-GitHub-Event", "  ")
                .body(body.clone()),
            400,
            Error {
                code: None,
                mentions: "X-GitHub-Event",
            },
        ),
        (
            "an event the server does not handle (star)",
            server.delivery("star", b"{\"action\":\"created\"}", Some(SECRET)),
            200,
            Body(ok.clone()),
        ),
        (
            "a ping",
            server.delivery(
                "ping",
                b"{\"zen\":\"Keep it logically awesome.\"}",
                Some(SECRET),
            ),
            200,
            Body(ok),
        ),
        (
            "a pull_request payload without its repository",
            server.delivery("pull_request", &no_repository, Some(SECRET)),
            400,
            Error {
                code: Some("invalid_payload"),
                mentions: "repository",
            },
        ),
        (
            "a signed empty object without an event name",
            signed_over(b"{}").body("{}"),
            400,
            Body(json!({ "error": "missing X-GitHub-Event header", "code": "missing_event" })),
        ),
        (
            "the Forge-named headers of the spec",
            signed_over(b"{}")
                .header("X-Forge-Event", "ping")
                .header("X-Forge-Delivery", "d-1")
                .body("{}"),
            200,
            Status,
        ),
    ];
    for (what, request, status, answer) in cases {
        let (got, v) = error_of(request.send().await.unwrap()).await;
        assert_eq!(got, status, "{what}: {v}");
        match answer {
            Body(expected) => assert_eq!(v, expected, "{what}"),
            Error { code, mentions } => {
                if let Some(code) = code {
                    assert_eq!(v["code"], code, "{what}: {v}");
                }
                assert!(
                    v["error"].as_str().unwrap().contains(mentions),
                    "{what}: {v}"
                );
            }
            Status => {}
        }
    }
    // Nothing was reviewed and the server is still healthy.
    assert_eq!(w.forge.reviews().len(), 0);
    assert_eq!(w.server.get_json("/health").await, json!({ "ok": true }));
    assert!(!w.server.log().contains("panicked"));
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_routes_get_the_global_not_found() {
    let w = World::start(Behavior::Reviewer, "anthropic/claude-sonnet-4-5", true).await;
    let r = w
        .server
        .http
        // Outside /api an unknown path is the dashboard's (routes/dashboard.rs).
        .get(format!("{}/api/nope", w.server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(
        error_of(r).await,
        (404, json!({ "error": "not found", "code": "not_found" }))
    );
    // A known route asked with another method: 405 in JSON, with the methods it takes.
    let r = w
        .server
        .http
        .delete(format!("{}/api/stats", w.server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["allow"], "GET,HEAD");
    assert_eq!(
        error_of(r).await,
        (
            405,
            json!({ "error": "method not allowed on this route", "code": "method_not_allowed" })
        )
    );
    let r = w
        .server
        .http
        .get(format!("{}/api/reviews/999", w.server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    assert_eq!(r.text().await.unwrap(), "Not found");
    assert_eq!(
        w.server.get_json("/api/reviews/999/findings").await,
        json!([])
    );
}

async fn failed_review(w: &World) -> Value {
    w.server.enable(&w.full_name(), None).await;
    w.open_pr().await;
    let rows = w.server.wait_reviews(&w.full_name(), 1, 1).await;
    assert_eq!(w.leftover_worktrees(), Vec::<std::path::PathBuf>::new());
    assert!(!w.server.log().contains("panicked"));
    rows[0].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_clone_that_fails_fails_the_review_with_its_error() {
    let up = Upstream::new();
    std::fs::remove_dir_all(&up.bare).unwrap();
    let w = World::reviewing(up).await;
    let row = failed_review(&w).await;
    assert_eq!(row["status"], "failed");
    assert!(
        row["error"].as_str().unwrap().contains("widgets.git"),
        "{row}"
    );
    assert!(
        !w.bare_clone_path().exists(),
        "a failed clone leaves no folder"
    );
    let completed = w.forge.completed_check_runs();
    assert_eq!(completed[0]["conclusion"], "failure");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_answering_500_fails_the_review_with_the_providers_message() {
    let w = World::start(Behavior::Fail500, "anthropic/claude-sonnet-4-5", true).await;
    let row = failed_review(&w).await;
    assert_eq!(row["status"], "failed");
    let error = row["error"].as_str().unwrap();
    assert!(error.contains("500"), "{error}");
    assert_eq!(w.forge.reviews().len(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_call_with_bad_arguments_goes_back_to_the_model_and_the_review_completes() {
    let w = World::start(Behavior::BadToolArgs, "openai/gpt-4o", true).await;
    let row = failed_review(&w).await;
    assert_eq!(row["status"], "completed", "{row}");
    assert_eq!(w.forge.reviews().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_that_never_posts_fails_after_one_nudge() {
    let w = World::start(Behavior::Silent, "anthropic/claude-sonnet-4-5", false).await;
    let row = failed_review(&w).await;
    assert_eq!(row["status"], "failed");
    assert!(
        row["error"].as_str().unwrap().contains("without posting"),
        "{row}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forge_rejecting_the_review_fails_it_with_githubs_message() {
    let w = World::start(Behavior::Reviewer, "anthropic/claude-sonnet-4-5", true).await;
    w.forge.fail(
        "/repos/acme/widgets/pulls/1/reviews",
        422,
        "Unprocessable Entity",
    );
    w.forge.fail(
        "/repos/acme/widgets/issues/1/comments",
        403,
        "Resource not accessible by integration",
    );
    let row = failed_review(&w).await;
    assert_eq!(row["status"], "failed", "{row}");
}

#[tokio::test(flavor = "multi_thread")]
async fn findings_route_is_guarded_by_the_boot_secret() {
    let w = World::start(Behavior::Reviewer, "anthropic/claude-sonnet-4-5", true).await;
    let r = w
        .server
        .http
        .post(format!("{}/internal/reviews/1/findings", w.server.url))
        .header("X-Internal-Secret", "guess")
        .json(&json!({ "findings": [] }))
        .send()
        .await
        .unwrap();
    assert_eq!(
        error_of(r).await,
        (
            401,
            json!({ "error": "missing or wrong internal secret", "code": "bad_internal_secret" })
        )
    );
}

/// POST and PUT repo bodies must be JSON objects (serde alone would read a struct from an
/// array), and a whole number written as `7.0` is the integer JSON Schema says it is.
#[tokio::test(flavor = "multi_thread")]
async fn repo_bodies_must_be_objects_and_whole_numbers_may_be_written_as_floats() {
    let w = World::start(Behavior::Reviewer, "anthropic/claude-sonnet-4-5", true).await;
    let send = |method: reqwest::Method, path: &str, body: Value| {
        w.server
            .http
            .request(method, format!("{}{path}", w.server.url))
            .json(&body)
            .send()
    };
    let put = reqwest::Method::PUT;
    let post = reqwest::Method::POST;
    for body in [
        json!([null, null]),
        json!(["p", "m", 1]),
        json!("x"),
        json!(null),
    ] {
        for (method, path) in [(&put, "/api/repos/acme/widgets"), (&post, "/api/repos")] {
            let r = send(method.clone(), path, body.clone()).await.unwrap();
            let (status, v) = error_of(r).await;
            assert_eq!(
                (status, v["error"].clone()),
                (422, json!("expected a JSON object")),
                "{method} {path} {body}"
            );
        }
    }
    let (status, v) = error_of(
        send(
            post.clone(),
            "/api/repos",
            json!({"full_name": "acme/gadgets", "installation_id": 7.0}),
        )
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(
        (status, v["installation_id"].clone()),
        (200, json!(7)),
        "{v}"
    );
    let (status, v) = error_of(
        send(
            post,
            "/api/repos",
            json!({"full_name": "acme/gadgets", "installation_id": 7.5}),
        )
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(status, 422, "{v}");
    let (status, v) = error_of(
        send(put, "/api/repos/acme/gadgets", json!({"enabled": 1.0}))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, v["enabled"].clone()), (200, json!(1)), "{v}");
}
