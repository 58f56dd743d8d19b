//! The review-thread calls of [`GitHubForge`] against the fake forge (docs/architecture.md,
//! Test doubles and real parts): replies, reactions, the GraphQL review threads and
//! `resolveReviewThread`, with GitHub's error paths and the pagination caps.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use forge::webhook::PullRequestReviewCommentEvent;
use forge::{
    AppCredentials, Forge, ForgeError, GitHubForge, REACTION_PAGES_CAP, Reaction, RepoRef,
    THREAD_PAGES_CAP,
};
use pretty_assertions::assert_eq;
use review_domain::ReviewSubmission;
use serde_json::{Value, json};
use test_doubles::fake_forge::{APP_LOGIN, FakeForge, TEST_APP_ID, TEST_APP_KEY};

const FULL_NAME: &str = "octo/widgets";
const INSTALLATION: i64 = 7;

fn repo() -> RepoRef {
    RepoRef {
        installation_id: INSTALLATION,
        owner: "octo".into(),
        name: "widgets".into(),
    }
}

async fn start() -> (FakeForge, GitHubForge) {
    let fake = FakeForge::start().await;
    fake.set_installation(FULL_NAME, INSTALLATION);
    let client = GitHubForge::new(
        &fake.api_url(),
        Some(AppCredentials {
            app_id: TEST_APP_ID.into(),
            private_key_pem: TEST_APP_KEY.to_owned().into(),
        }),
    )
    .unwrap();
    (fake, client)
}

/// Posts a review of PR `number` with `count` inline comments through the client; their ids.
async fn post_comments(client: &GitHubForge, number: i64, count: usize) -> Vec<i64> {
    let comments: Vec<Value> = (0..count)
        .map(|i| json!({"path": "src/lib.rs", "line": i + 1, "severity": "nit", "body": format!("finding {i}")}))
        .collect();
    let review: ReviewSubmission = serde_json::from_value(
        json!({"summary": "Summary", "event": "COMMENT", "comments": comments}),
    )
    .unwrap();
    let posted = client
        .create_review(&repo(), number, &"a".repeat(40), &review)
        .await
        .unwrap();
    posted.comment_ids.into_iter().map(Option::unwrap).collect()
}

#[tokio::test]
async fn a_reply_lands_in_the_thread_of_the_comment_it_answers() {
    let (fake, client) = start().await;
    let first = post_comments(&client, 1, 1).await[0];
    let id = client
        .reply_to_review_comment(&repo(), 1, first, "Fixed in the next push?")
        .await
        .unwrap();
    let reply = fake.pull_comment(FULL_NAME, 1, id).unwrap();
    assert_eq!(reply["in_reply_to_id"], json!(first));
    assert_eq!(reply["user"], json!({"login": APP_LOGIN, "type": "Bot"}));
    assert_eq!(reply["body"], "Fixed in the next push?");
    let posted = fake.posted("POST", &format!("/pulls/1/comments/{first}/replies"));
    assert_eq!(posted.len(), 1);
    assert_eq!(posted[0].body, json!({"body": "Fixed in the next push?"}));
    assert!(posted[0].authenticated);
}

#[tokio::test]
async fn a_reply_is_refused_where_github_refuses_it() {
    let (_fake, client) = start().await;
    let first = post_comments(&client, 1, 1).await[0];
    let status = |r: Result<i64, ForgeError>| match r {
        Err(ForgeError::Api { status, .. }) => status,
        other => panic!("expected GitHub's refusal, got {other:?}"),
    };
    // A comment of another PR, or none at all, is not found.
    let other_pr = client.reply_to_review_comment(&repo(), 2, first, "x").await;
    assert_eq!(status(other_pr), 404);
    let unknown = client
        .reply_to_review_comment(&repo(), 1, 999_999, "x")
        .await;
    assert_eq!(status(unknown), 404);
    assert_eq!(
        status(client.reply_to_review_comment(&repo(), 1, first, "").await),
        422
    );
    // GitHub supports no replies to replies.
    let reply = client
        .reply_to_review_comment(&repo(), 1, first, "x")
        .await
        .unwrap();
    assert_eq!(
        status(client.reply_to_review_comment(&repo(), 1, reply, "y").await),
        422
    );
}

#[tokio::test]
async fn reactions_are_read_with_who_reacted() {
    let (fake, client) = start().await;
    let first = post_comments(&client, 1, 1).await[0];
    fake.add_reaction(FULL_NAME, first, "alice", "User", "-1");
    fake.add_reaction(FULL_NAME, first, "ci[bot]", "Bot", "+1");
    let reactions = client
        .review_comment_reactions(&repo(), 7, first)
        .await
        .unwrap();
    assert_eq!(
        reactions,
        vec![
            Reaction {
                content: "-1".into(),
                user_login: "alice".into(),
                user_type: "User".into(),
            },
            Reaction {
                content: "+1".into(),
                user_login: "ci[bot]".into(),
                user_type: "Bot".into(),
            },
        ]
    );
    assert!(reactions[0].by_human() && !reactions[1].by_human());
    match client.review_comment_reactions(&repo(), 7, 999_999).await {
        Err(ForgeError::Api { status: 404, .. }) => {}
        other => panic!("expected 404, got {other:?}"),
    }
}

#[tokio::test]
async fn reactions_are_paged_by_100_up_to_the_cap() {
    let (fake, client) = start().await;
    let [small, large] = post_comments(&client, 1, 2).await[..] else {
        unreachable!()
    };
    for i in 0..250 {
        fake.add_reaction(FULL_NAME, small, &format!("u{i}"), "User", "heart");
    }
    let over_cap = REACTION_PAGES_CAP * 100 + 50;
    for i in 0..over_cap {
        fake.add_reaction(FULL_NAME, large, &format!("u{i}"), "User", "eyes");
    }
    let reactions = client
        .review_comment_reactions(&repo(), 7, small)
        .await
        .unwrap();
    assert_eq!(reactions.len(), 250);
    assert_eq!(reactions[249].user_login, "u249");
    assert_eq!(
        fake.posted(
            "GET",
            &format!("/comments/{small}/reactions?per_page=100&page=3")
        )
        .len(),
        1
    );
    let reactions = client
        .review_comment_reactions(&repo(), 7, large)
        .await
        .unwrap();
    assert_eq!(reactions.len(), REACTION_PAGES_CAP * 100);
    let pages = fake
        .requests()
        .into_iter()
        .filter(|r| r.path.contains(&format!("/comments/{large}/reactions")))
        .count();
    assert_eq!(pages, REACTION_PAGES_CAP);
}

#[tokio::test]
async fn review_threads_hold_their_comments_in_order_with_the_resolved_flag() {
    let (fake, client) = start().await;
    let ids = post_comments(&client, 1, 2).await;
    let reply = fake.add_reply_as(
        FULL_NAME,
        1,
        ids[0],
        "alice",
        "User",
        "OWNER",
        "This is intended.",
    );
    fake.set_thread_resolved(ids[1], true);
    let threads = client.review_threads(&repo(), 1).await.unwrap();
    assert_eq!(threads.len(), 2);
    assert_eq!(threads[0].id, fake.thread_id(ids[0]));
    assert_eq!(threads[0].first_comment_id(), Some(ids[0]));
    assert!(!threads[0].is_resolved);
    assert!(threads[1].is_resolved);
    let comments: Vec<_> = threads[0]
        .comments
        .iter()
        .map(|c| {
            (
                c.database_id,
                c.author_login.clone(),
                c.author_association.clone(),
                c.body.clone(),
            )
        })
        .collect();
    assert_eq!(
        comments,
        vec![
            (
                Some(ids[0]),
                Some("review-bot".into()),
                "NONE".into(),
                "finding 0".into()
            ),
            (
                Some(reply),
                Some("alice".into()),
                "OWNER".into(),
                "This is intended.".into()
            ),
        ]
    );
    let calls = fake.posted("POST", "/graphql");
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].body["variables"],
        json!({"owner": "octo", "name": "widgets", "number": 1, "cursor": null})
    );
}

#[tokio::test]
async fn review_threads_are_paged_by_100_up_to_the_cap() {
    let (fake, client) = start().await;
    post_comments(&client, 1, 250).await;
    let threads = client.review_threads(&repo(), 1).await.unwrap();
    assert_eq!(threads.len(), 250);
    let calls = fake.posted("POST", "/graphql");
    assert_eq!(calls.len(), 3);
    assert!(calls[1].body["variables"]["cursor"].is_string());

    let over_cap = THREAD_PAGES_CAP * 100 + 30;
    let ids = post_comments(&client, 2, over_cap).await;
    let threads = client.review_threads(&repo(), 2).await.unwrap();
    assert_eq!(threads.len(), THREAD_PAGES_CAP * 100);
    assert_eq!(
        threads.last().unwrap().first_comment_id(),
        Some(ids[THREAD_PAGES_CAP * 100 - 1])
    );
    assert_eq!(fake.posted("POST", "/graphql").len(), 3 + THREAD_PAGES_CAP);
}

#[tokio::test]
async fn resolving_a_thread_marks_it_resolved_on_the_forge() {
    let (fake, client) = start().await;
    let first = post_comments(&client, 1, 1).await[0];
    let thread = client.review_threads(&repo(), 1).await.unwrap().remove(0);
    client
        .resolve_review_thread(&repo(), 7, &thread.id)
        .await
        .unwrap();
    assert!(fake.thread_resolved(first));
    // Resolving it again is fine, as on GitHub.
    client
        .resolve_review_thread(&repo(), 7, &thread.id)
        .await
        .unwrap();
    let calls = fake.posted("POST", "/graphql");
    assert_eq!(calls[1].body["variables"], json!({"threadId": thread.id}));
    assert!(
        calls[1].body["query"]
            .as_str()
            .unwrap()
            .contains("resolveReviewThread")
    );
}

#[tokio::test]
async fn graphql_errors_become_forge_errors_with_githubs_message() {
    let (fake, client) = start().await;
    post_comments(&client, 1, 1).await;
    let not_found = |r: Result<_, ForgeError>| match r {
        Err(ForgeError::GraphQl { kind, message, .. }) => {
            assert_eq!(kind.as_deref(), Some("NOT_FOUND"));
            message
        }
        other => panic!("expected a GraphQL NOT_FOUND, got {other:?}"),
    };
    let message = not_found(client.resolve_review_thread(&repo(), 7, "PRRT_nope").await);
    assert_eq!(
        message,
        "Could not resolve to a node with the global id of 'PRRT_nope'"
    );
    let message = not_found(client.review_threads(&repo(), 42).await.map(|_| ()));
    assert_eq!(
        message,
        "Could not resolve to a PullRequest with the number of 42."
    );
    // Another installation's token does not see the repository, nor its threads.
    let thread = fake.thread_id(fake.pull_comments(FULL_NAME, 1)[0]["id"].as_i64().unwrap());
    let stranger = RepoRef {
        installation_id: INSTALLATION + 1,
        ..repo()
    };
    let message = not_found(client.review_threads(&stranger, 1).await.map(|_| ()));
    assert_eq!(
        message,
        "Could not resolve to a Repository with the name 'octo/widgets'."
    );
    not_found(client.resolve_review_thread(&stranger, 7, &thread).await);
    let err = client
        .resolve_review_thread(&repo(), 7, "PRRT_nope")
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "GitHub GraphQL resolveReviewThread failed: Could not resolve to a node with the global id of 'PRRT_nope'"
    );
}

#[tokio::test]
async fn the_fake_forges_review_comment_delivery_parses_as_a_reply_to_answer() {
    let (fake, client) = start().await;
    let first = post_comments(&client, 1, 1).await[0];
    let reply = fake.add_reply_as(FULL_NAME, 1, first, "alice", "User", "MEMBER", "Intended.");
    fake.set_pull(
        FULL_NAME,
        1,
        json!({"number": 1, "title": "T", "user": {"login": "carol"},
               "head": {"ref": "feature", "sha": "b".repeat(40)},
               "base": {"ref": "main", "sha": "c".repeat(40)}}),
    );
    let body = fake.review_comment_delivery(FULL_NAME, 1, reply);
    let e: PullRequestReviewCommentEvent = serde_json::from_slice(&body).unwrap();
    assert_eq!(e.comment.id, reply);
    assert_eq!(e.comment.in_reply_to_id, Some(first));
    assert_eq!(e.pull_request.head.sha, "b".repeat(40));
    assert_eq!(e.repository.full_name, FULL_NAME);
    assert_eq!(e.installation.map(|i| i.id), Some(INSTALLATION));
    assert!(e.is_reply_by_author_or_maintainer());
}
