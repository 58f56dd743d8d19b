//! [`GitLabForge`] against the fake GitLab over real HTTP on loopback (docs/architecture.md,
//! Test doubles and real parts): a merge request with a diff `git diff base...head` produced,
//! reviews with inline comments and suggestions, approvals, commit statuses, the repository
//! reads, discussions as review threads, award emoji, the improver's merge request, errors
//! and OAuth sign-in.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use forge::gitlab::{GitLabForge, MergeRequest};
use forge::oauth::{GitLabOAuthApp, OAuthProvider, Pkce};
use forge::{
    CheckConclusion, CheckRun, Contents, FileChangePull, Forge, ForgeError, ForgeKind, RepoRead,
    RepoRef,
};
use pretty_assertions::assert_eq;
use review_domain::ReviewSubmission;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};
use test_doubles::fake_gitlab::FakeGitLab;

const PATH: &str = "group/sub/project";
const PROJECT_ID: i64 = 42;
const BASE: &str = "1111111111111111111111111111111111111111";
const HEAD: &str = "2222222222222222222222222222222222222222";

/// `git diff master...feature` of a branch that rewrote the body of `a()` and added NOTES.md.
const DIFF: &str = "diff --git a/NOTES.md b/NOTES.md
new file mode 100644
index 0000000..227e3d3
--- /dev/null
+++ b/NOTES.md
@@ -0,0 +1,2 @@
+# Notes
+hello
diff --git a/src/lib.rs b/src/lib.rs
index 40b32fb..3c41f65 100644
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,5 +1,7 @@
 fn a() {
-    old();
+    new();
+    more();
+    again();
 }
 
 fn b() {
";

fn repo() -> RepoRef {
    RepoRef {
        installation_id: PROJECT_ID,
        owner: "gitlab.example.com/group/sub".into(),
        name: "project".into(),
    }
}

fn read() -> RepoRead {
    RepoRead {
        owner: "gitlab.example.com/group/sub".into(),
        name: "project".into(),
        installation_id: Some(PROJECT_ID),
    }
}

async fn start() -> (FakeGitLab, GitLabForge) {
    let fake = FakeGitLab::start().await;
    fake.add_project(PATH, PROJECT_ID, "main");
    fake.add_merge_request(
        PATH,
        json!({
            "iid": 7, "title": "Rewrite a()", "description": "Why: speed.", "state": "opened",
            "draft": false, "work_in_progress": false,
            "author": {"id": 100, "username": "alice"},
            "source_branch": "feature", "target_branch": "main", "sha": HEAD,
            "diff_refs": {"base_sha": BASE, "start_sha": BASE, "head_sha": HEAD},
        }),
    );
    fake.set_merge_request_diff(PATH, 7, DIFF);
    let client = GitLabForge::new(
        &format!("{}/", fake.base_url()),
        SecretString::from(FakeGitLab::TOKEN),
    )
    .unwrap();
    (fake, client)
}

fn review(event: &str, comments: Value) -> ReviewSubmission {
    serde_json::from_value(json!({"summary": "Summary", "event": event, "comments": comments}))
        .unwrap()
}

fn status(r: Result<impl std::fmt::Debug, ForgeError>) -> u16 {
    match r {
        Err(ForgeError::Api { status, .. }) => status,
        other => panic!("expected an Api error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_merge_request_reads_as_a_pull_request() {
    let (fake, client) = start().await;
    assert_eq!(client.api_url(), format!("{}/api/v4", fake.base_url()));
    let pr = client.pull_request(&repo(), 7).await.unwrap();
    assert_eq!(pr.number, 7);
    assert_eq!(pr.title, "Rewrite a()");
    assert_eq!(pr.body.as_deref(), Some("Why: speed."));
    assert!(!pr.draft);
    assert_eq!(pr.state.as_deref(), Some("open"));
    assert_eq!(pr.user.unwrap().login, "alice");
    assert_eq!(
        (pr.head.git_ref.as_str(), pr.head.sha.as_str()),
        ("feature", HEAD)
    );
    assert_eq!(
        (pr.base.git_ref.as_str(), pr.base.sha.as_str()),
        ("main", BASE)
    );
    // The nested group's path went out encoded as one segment.
    let calls = fake.posted("GET", "/merge_requests/7");
    assert_eq!(
        calls[0].path,
        "/api/v4/projects/group%2Fsub%2Fproject/merge_requests/7"
    );
    assert!(calls[0].authenticated);

    let mr: MergeRequest = client.merge_request(&repo(), 7).await.unwrap();
    assert_eq!(mr.diff_refs.unwrap().head_sha, HEAD);
    assert!(
        mr.web_url
            .ends_with("/group/sub/project/-/merge_requests/7")
    );
    // The numeric id addresses the same project.
    assert_eq!(client.merge_request(&PROJECT_ID, 7).await.unwrap().iid, 7);

    fake.add_merge_request(
        PATH,
        json!({"iid": 8, "title": "WIP", "work_in_progress": true, "state": "merged",
               "source_branch": "x", "target_branch": "main", "sha": HEAD,
               "diff_refs": {"base_sha": BASE, "start_sha": BASE, "head_sha": HEAD}}),
    );
    let pr = client.pull_request(&repo(), 8).await.unwrap();
    assert!(pr.draft, "work_in_progress counts as draft");
    assert_eq!(pr.state.as_deref(), Some("merged"));
}

#[tokio::test]
async fn a_review_posts_a_summary_note_and_discussions_on_the_diff() {
    let (fake, client) = start().await;
    let comments = json!([
        {"path": "src/lib.rs", "line": 3, "severity": "nit", "body": "One line:\n```suggestion\n    more(1);\n```"},
        {"path": "src/lib.rs", "line": 4, "start_line": 2, "severity": "nit", "body": "Three lines:\n```suggestion\n    all();\n```"},
        {"path": "src/lib.rs", "line": 7, "severity": "nit", "body": "An unchanged line"},
        {"path": "src/lib.rs", "line": 2, "side": "LEFT", "severity": "nit", "body": "The removed line"},
        {"path": "src/lib.rs", "line": 40, "severity": "nit", "body": "Outside the diff"},
        {"path": "NOTES.md", "line": 1, "severity": "nit", "body": "A new file"},
    ]);
    let posted = client
        .create_review(&repo(), 7, HEAD, &review("COMMENT", comments))
        .await
        .unwrap();
    let notes = fake.notes(PATH, 7);
    let summary = notes.iter().find(|n| n["body"] == "Summary").unwrap();
    assert_eq!(posted.review_id, summary["id"].as_i64());
    assert_eq!(posted.comment_ids.len(), 6);
    assert!(
        posted.comment_ids[4].is_none(),
        "line 40 is not on the diff"
    );
    let discussions = fake.discussions(PATH, 7);
    let diff_notes: Vec<&Value> = discussions
        .iter()
        .filter(|d| d["notes"][0]["type"] == "DiffNote")
        .map(|d| &d["notes"][0])
        .collect();
    assert_eq!(diff_notes.len(), 5);
    for (i, at) in [0usize, 1, 2, 3, 5].into_iter().enumerate() {
        assert_eq!(
            Some(diff_notes[i]["id"].as_i64().unwrap()),
            posted.comment_ids[at]
        );
        assert_eq!(
            diff_notes[i]["author"]["username"],
            FakeGitLab::BOT_USERNAME
        );
    }
    let line = |n: &Value| {
        (
            n["position"]["old_line"].clone(),
            n["position"]["new_line"].clone(),
        )
    };
    assert_eq!(line(diff_notes[0]), (Value::Null, json!(3)));
    assert_eq!(
        line(diff_notes[2]),
        (json!(5), json!(7)),
        "an unchanged line carries both"
    );
    assert_eq!(line(diff_notes[3]), (json!(2), Value::Null));
    assert_eq!(diff_notes[4]["position"]["old_path"], "NOTES.md");
    // The three-line comment spans its lines with GitLab's line codes (an added line's code
    // carries the next old line: 3).
    assert_eq!(
        diff_notes[1]["position"]["line_range"],
        json!({
            "start": {"line_code": forge::gitlab::line_code("src/lib.rs", 3, 2), "type": "new", "old_line": null, "new_line": 2},
            "end": {"line_code": forge::gitlab::line_code("src/lib.rs", 3, 4), "type": "new", "old_line": null, "new_line": 4},
        })
    );
    assert!(diff_notes[0]["position"].get("line_range").is_none());
    assert_eq!(diff_notes[0]["position"]["base_sha"], BASE);
    assert_eq!(diff_notes[0]["position"]["position_type"], "text");
    assert_eq!(
        diff_notes[0]["body"],
        "One line:\n```suggestion:-0+0\n    more(1);\n```"
    );
    assert_eq!(
        diff_notes[1]["body"],
        "Three lines:\n```suggestion:-2+0\n    all();\n```"
    );
    assert!(fake.posted("POST", "/approve").is_empty());
    // Nothing went anywhere but this merge request.
    for r in fake.requests() {
        assert!(
            r.path
                .starts_with("/api/v4/projects/group%2Fsub%2Fproject/merge_requests/7"),
            "{} {}",
            r.method,
            r.path
        );
        assert!(r.authenticated);
    }
}

#[tokio::test]
async fn a_review_of_a_commit_the_merge_request_moved_past_is_refused() {
    let (fake, client) = start().await;
    let err = client
        .create_review(&repo(), 7, &"9".repeat(40), &review("COMMENT", json!([])))
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        ForgeError::Api {
            status: 409,
            forge: ForgeKind::GitLab,
            ..
        }
    ));
    assert!(err.to_string().contains("moved"), "{err}");
    assert!(fake.notes(PATH, 7).is_empty(), "nothing is posted");
}

#[tokio::test]
async fn approve_approves_or_says_why_it_could_not() {
    let (fake, client) = start().await;
    client
        .create_review(&repo(), 7, HEAD, &review("APPROVE", json!([])))
        .await
        .unwrap();
    assert_eq!(fake.approvals(PATH, 7), [HEAD]);
    assert_eq!(fake.posted("POST", "/approve")[0].body["sha"], HEAD);

    let (fake, client) = start().await;
    fake.refuse_approvals(401, "401 Unauthorized");
    let posted = client
        .create_review(&repo(), 7, HEAD, &review("APPROVE", json!([])))
        .await
        .unwrap();
    assert!(fake.approvals(PATH, 7).is_empty());
    let bodies: Vec<String> = fake
        .notes(PATH, 7)
        .iter()
        .map(|n| n["body"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        bodies,
        [
            "Summary".to_owned(),
            "Approved by the reviewer (this GitLab instance did not accept an approval: 401 Unauthorized)".to_owned()
        ]
    );
    assert!(posted.review_id.is_some());

    // REQUEST_CHANGES is the summary and nothing more.
    let (fake, client) = start().await;
    client
        .create_review(&repo(), 7, HEAD, &review("REQUEST_CHANGES", json!([])))
        .await
        .unwrap();
    assert_eq!(fake.notes(PATH, 7).len(), 1);
    assert!(fake.posted("POST", "/approve").is_empty());
}

#[tokio::test]
async fn statuses_go_pending_running_then_done() {
    let (fake, client) = start().await;
    let r = repo();
    client.mark_queued(&r, HEAD, "review").await.unwrap();
    client.mark_queued(&r, HEAD, "review").await.unwrap();
    let id = client.create_check_run(&r, HEAD, "review").await.unwrap();
    client.mark_queued(&r, HEAD, "review").await.unwrap();
    let run = CheckRun {
        id,
        head_sha: HEAD.into(),
        name: "review".into(),
    };
    let title = "é".repeat(300);
    client
        .complete_check_run(&r, &run, CheckConclusion::Success, &title, "summary")
        .await
        .unwrap();
    // Completing twice in the same state is fine.
    client
        .complete_check_run(&r, &run, CheckConclusion::Neutral, "again", "summary")
        .await
        .unwrap();
    let statuses = fake.statuses(PATH, HEAD);
    let states: Vec<&str> = statuses.iter().map(|(_, s, _)| s.as_str()).collect();
    assert_eq!(states, ["pending", "running", "success"]);
    assert!(statuses.iter().all(|(n, _, _)| n == "review"));
    assert_eq!(statuses[2].2.chars().count(), 255);

    client.create_check_run(&r, HEAD, "other").await.unwrap();
    let run = CheckRun {
        id: 0,
        head_sha: HEAD.into(),
        name: "other".into(),
    };
    client
        .complete_check_run(&r, &run, CheckConclusion::Failure, "Failed", "")
        .await
        .unwrap();
    assert_eq!(fake.statuses(PATH, HEAD).last().unwrap().1, "failed");
    // A commit GitLab does not know is an error.
    let err = client.create_check_run(&r, &"0".repeat(40), "review").await;
    assert_eq!(status(err), 404);
}

#[tokio::test]
async fn contents_reads_files_and_folders_and_refs_resolve() {
    let (fake, client) = start().await;
    let big = vec![b'x'; 1024 * 1024 + 1];
    fake.add_commit(
        PATH,
        &["main", "release/v1"],
        HEAD,
        &[
            ("REVIEW.md", b"# Review\n".as_slice()),
            ("skills/my skill/SKILL.md", b"skill".as_slice()),
            ("skills/other.md", b"o".as_slice()),
            ("big.bin", big.as_slice()),
        ],
    );
    assert_eq!(
        client.resolve_commit(&read(), "release/v1").await.unwrap(),
        HEAD
    );
    assert!(
        fake.posted("GET", "/repository/commits/release%2Fv1").len() == 1,
        "the ref goes out encoded"
    );
    assert_eq!(status(client.resolve_commit(&read(), "nope").await), 404);
    assert_eq!(client.default_branch(&repo()).await.unwrap(), "main");

    let file = client
        .contents(&read(), "skills/my skill/SKILL.md", HEAD)
        .await
        .unwrap();
    assert_eq!(
        file,
        Contents::File {
            path: "skills/my skill/SKILL.md".into(),
            content: b"skill".to_vec()
        }
    );
    let Contents::Dir(entries) = client.contents(&read(), "skills", HEAD).await.unwrap() else {
        panic!("a folder");
    };
    let listed: Vec<(&str, &str, &str)> = entries
        .iter()
        .map(|e| (e.kind.as_str(), e.name.as_str(), e.path.as_str()))
        .collect();
    assert_eq!(
        listed,
        [
            ("dir", "my skill", "skills/my skill"),
            ("file", "other.md", "skills/other.md")
        ]
    );
    let Contents::Dir(root) = client.contents(&read(), "", HEAD).await.unwrap() else {
        panic!("the root folder");
    };
    assert_eq!(root.len(), 3);
    assert_eq!(status(client.contents(&read(), "missing", HEAD).await), 404);
    let err = client.contents(&read(), "big.bin", HEAD).await.unwrap_err();
    assert!(matches!(err, ForgeError::Decode { .. }), "{err}");
}

#[tokio::test]
async fn threads_replies_and_resolving_go_through_discussions() {
    let (fake, client) = start().await;
    fake.add_member(PATH, 100, "alice", 30);
    fake.add_member(PATH, 101, "owner", 50);
    let posted = client
        .create_review(
            &repo(),
            7,
            HEAD,
            &review(
                "COMMENT",
                json!([{"path": "src/lib.rs", "line": 3, "severity": "nit", "body": "finding"}]),
            ),
        )
        .await
        .unwrap();
    let first = posted.comment_ids[0].unwrap();
    let discussion_id = fake
        .discussions(PATH, 7)
        .iter()
        .find(|d| d["notes"][0]["id"] == json!(first))
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    fake.add_discussion_reply(PATH, 7, &discussion_id, "alice", "Intended, see the RFC.");
    let reply = client
        .reply_to_review_comment(&repo(), 7, first, "Noted.")
        .await
        .unwrap();
    assert_eq!(
        status(
            client
                .reply_to_review_comment(&repo(), 7, 999_999, "x")
                .await
        ),
        404
    );

    let threads = client.review_threads(&repo(), 7).await.unwrap();
    assert_eq!(threads.len(), 1, "the summary note is no thread");
    let t = &threads[0];
    assert_eq!(t.id, discussion_id);
    assert!(!t.is_resolved);
    assert_eq!(t.first_comment_id(), Some(first));
    let who: Vec<(Option<&str>, &str, &str)> = t
        .comments
        .iter()
        .map(|c| {
            (
                c.author_login.as_deref(),
                c.author_association.as_str(),
                c.body.as_str(),
            )
        })
        .collect();
    assert_eq!(
        who,
        [
            (Some(FakeGitLab::BOT_USERNAME), "NONE", "finding"),
            (Some("alice"), "MEMBER", "Intended, see the RFC."),
            (Some(FakeGitLab::BOT_USERNAME), "NONE", "Noted."),
        ]
    );
    assert_eq!(t.comments[2].database_id, Some(reply));

    client
        .resolve_review_thread(&repo(), 7, &discussion_id)
        .await
        .unwrap();
    let one = client.discussion(&repo(), 7, &discussion_id).await.unwrap();
    assert!(one.is_resolved);
    assert_eq!(one.comments.len(), 3);
    assert_eq!(
        status(
            client
                .resolve_review_thread(&repo(), 7, &"f".repeat(40))
                .await
        ),
        404
    );

    // The REST-shaped comments: replies point at the first note, authors are classified.
    let comments = client.pull_review_comments(&repo(), 7).await.unwrap();
    assert_eq!(comments.len(), 3);
    assert_eq!(comments[0].in_reply_to_id, None);
    assert_eq!(comments[1].in_reply_to_id, Some(first));
    assert_eq!(
        comments[0].user.as_ref().unwrap().kind.as_deref(),
        Some("Bot")
    );
    assert!(!comments[0].by_human());
    assert!(comments[1].by_maintainer(), "a Developer is a MEMBER");
    assert_eq!(comments[1].path.as_deref(), Some("src/lib.rs"));
    // One members call per author and call (review_threads, discussion and this one), not
    // per note.
    assert_eq!(fake.posted("GET", "/members/all/100").len(), 3);
    assert_eq!(
        fake.posted("GET", &format!("/members/all/{}", FakeGitLab::BOT_USER_ID))
            .len(),
        3
    );

    fake.add_discussion_reply(PATH, 7, &discussion_id, "owner", "Agreed");
    fake.add_discussion_reply(PATH, 7, &discussion_id, "stranger", "Me too");
    let comments = client.pull_review_comments(&repo(), 7).await.unwrap();
    let associations: Vec<&str> = comments
        .iter()
        .map(|c| c.author_association.as_deref().unwrap())
        .collect();
    assert_eq!(associations, ["NONE", "MEMBER", "NONE", "OWNER", "NONE"]);
    assert_eq!(
        client.member_access_level(PATH, 101).await.unwrap(),
        Some(50)
    );
    assert_eq!(
        client.member_access_level(&repo(), 555).await.unwrap(),
        None
    );
}

#[tokio::test]
async fn award_emoji_read_as_reactions() {
    let (fake, client) = start().await;
    let note = client.post_comment(&repo(), 7, "hello").await.unwrap();
    for (name, user) in [
        ("thumbsup", "alice"),
        ("thumbsdown", "bob"),
        ("tada", "carol"),
        ("laughing", "dave"),
        ("eyes", "project_9_bot_x"),
        ("rocket", "erin"),
    ] {
        fake.add_award(PATH, note, name, user);
    }
    let reactions = client
        .review_comment_reactions(&repo(), 7, note)
        .await
        .unwrap();
    let got: Vec<(&str, &str, &str)> = reactions
        .iter()
        .map(|r| {
            (
                r.content.as_str(),
                r.user_login.as_str(),
                r.user_type.as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("+1", "alice", "User"),
            ("-1", "bob", "User"),
            ("hooray", "carol", "User"),
            ("laugh", "dave", "User"),
            ("eyes", "project_9_bot_x", "Bot"),
            ("rocket", "erin", "User"),
        ]
    );
    assert!(!reactions[4].by_human());
    assert_eq!(
        status(client.review_comment_reactions(&repo(), 7, 1).await),
        404
    );
}

#[tokio::test]
async fn the_improver_opens_a_merge_request_changing_one_file() {
    let (fake, client) = start().await;
    fake.add_commit(PATH, &["main"], BASE, &[("REVIEW.md", b"old".as_slice())]);
    let change = |branch: &str, path: &str| FileChangePull {
        base: "main".into(),
        base_sha: BASE.into(),
        branch: branch.into(),
        path: path.into(),
        content: b"new rules\n".to_vec(),
        commit_message: "REVIEW.md: learn from replies".into(),
        title: "Update REVIEW.md".into(),
        body: "From maintainers' replies.".into(),
    };
    let opened = client
        .open_file_pull(&repo(), &change("review-bot/update", "REVIEW.md"))
        .await
        .unwrap();
    assert_eq!(
        fake.file_at(PATH, "review-bot/update", "REVIEW.md")
            .unwrap(),
        b"new rules\n"
    );
    assert_eq!(fake.file_at(PATH, "main", "REVIEW.md").unwrap(), b"old");
    let mr = fake.merge_request(PATH, opened.number).unwrap();
    assert_eq!(mr["source_branch"], "review-bot/update");
    assert_eq!(mr["target_branch"], "main");
    assert_eq!(mr["description"], "From maintainers' replies.");
    assert_eq!(opened.html_url, mr["web_url"].as_str().unwrap());
    assert_eq!(
        fake.posted("POST", "/repository/commits")[0].body["actions"][0]["action"],
        "update"
    );
    // A file the branch does not have yet is created.
    client
        .open_file_pull(&repo(), &change("review-bot/new", "docs/REVIEW.md"))
        .await
        .unwrap();
    assert_eq!(
        fake.posted("POST", "/repository/commits")[1].body["actions"][0]["action"],
        "create"
    );
    // The same branch twice is GitLab's 400.
    assert_eq!(
        status(
            client
                .open_file_pull(&repo(), &change("review-bot/new", "x.md"))
                .await
        ),
        400
    );
}

#[tokio::test]
async fn errors_name_gitlab_and_keep_its_status() {
    let (fake, _) = start().await;
    let bad = GitLabForge::new(&fake.base_url(), SecretString::from("glpat-wrong")).unwrap();
    let err = bad.pull_request(&repo(), 7).await.unwrap_err();
    assert!(matches!(err, ForgeError::Api { status: 401, .. }));
    assert_eq!(
        err.to_string(),
        "GitLab GET /projects/group%2Fsub%2Fproject/merge_requests/7 failed with 401: 401 Unauthorized"
    );
    let (_fake, client) = start().await;
    let other = RepoRef {
        installation_id: 1,
        owner: "gitlab.example.com/group".into(),
        name: "missing".into(),
    };
    let err = client.default_branch(&other).await.unwrap_err();
    assert!(matches!(err, ForgeError::Api { status: 404, .. }));
    assert!(err.to_string().ends_with("404 Project Not Found"), "{err}");
    assert_eq!(
        client.clone_token(&repo()).await.unwrap().expose_secret(),
        FakeGitLab::TOKEN
    );
    assert!(GitLabForge::new("gitlab.com", SecretString::from("t")).is_err());
    let down = GitLabForge::new("http://127.0.0.1:9", SecretString::from("t")).unwrap();
    let err = down.default_branch(&repo()).await.unwrap_err();
    assert!(err.to_string().starts_with("GitLab unreachable: "), "{err}");
}

#[tokio::test]
async fn oauth_sign_in_with_pkce_returns_the_username() {
    let (fake, _) = start().await;
    fake.set_oauth_client("app-id", "app-secret");
    fake.set_oauth_login("alice");
    let app = GitLabOAuthApp {
        client_id: "app-id".into(),
        client_secret: SecretString::from("app-secret"),
        base_url: fake.base_url(),
    };
    let redirect = "https://reviews.example.com/api/auth/callback/gitlab";
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let code_for = async |pkce: &Pkce| {
        let url = app.authorize_url(redirect, "st4te", pkce).unwrap();
        let resp = browser.get(url).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 302);
        let location = resp.headers()["location"].to_str().unwrap().to_owned();
        let query = location.split_once('?').unwrap().1.to_owned();
        let code = query
            .split('&')
            .find_map(|kv| kv.strip_prefix("code="))
            .unwrap()
            .to_owned();
        assert!(query.contains("state=st4te"));
        code
    };
    let pkce = Pkce::new_random();
    let code = code_for(&pkce).await;
    let provider = OAuthProvider::GitLab(app.clone());
    assert_eq!(provider.forge(), ForgeKind::GitLab);
    let login = provider
        .sign_in(&code, pkce.verifier(), redirect)
        .await
        .unwrap();
    assert_eq!(login, "alice");
    // The code was used up; a wrong verifier is refused too.
    let err = app
        .sign_in(&code, pkce.verifier(), redirect)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("GitLab POST /oauth/token failed with 400"),
        "{err}"
    );
    let other = Pkce::new_random();
    let code = code_for(&other).await;
    let err = app
        .sign_in(&code, pkce.verifier(), redirect)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("invalid_grant"), "{err}");
    let token = fake.posted("POST", "/oauth/token");
    assert_eq!(token[0].body["grant_type"], "authorization_code");
}

#[tokio::test]
async fn a_self_managed_base_with_a_path_prefix_works() {
    let fake = FakeGitLab::start_under("/gitlab").await;
    fake.add_project(PATH, PROJECT_ID, "trunk");
    assert!(fake.base_url().ends_with("/gitlab"));
    let client = GitLabForge::new(&fake.base_url(), SecretString::from(FakeGitLab::TOKEN)).unwrap();
    assert_eq!(client.default_branch(&repo()).await.unwrap(), "trunk");
    // Without the prefix nothing answers.
    let bare = fake.base_url().trim_end_matches("/gitlab").to_owned();
    let client = GitLabForge::new(&bare, SecretString::from(FakeGitLab::TOKEN)).unwrap();
    assert_eq!(status(client.default_branch(&repo()).await), 404);
}
