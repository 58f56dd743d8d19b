//! Review threads on the fake forge: replies to inline review comments, reactions on them,
//! GitHub's GraphQL endpoint for the review threads of a pull request and
//! `resolveReviewThread`, and the `pull_request_review_comment` delivery of a stored comment.
//!
//! A thread is what GitHub makes of the stored review comments: each comment without
//! `in_reply_to_id` opens one, and the comments replying to it follow in order. Its GraphQL
//! node id is `PRRT_fake_<id of the opening comment>`.
//!
//! The GraphQL endpoint answers the two operations review-server sends (recognised by the
//! field they name, with their arguments in `variables`) with the fields those select; any
//! other document gets an `errors` array, as GitHub answers what it cannot run. Errors come
//! with HTTP 200, in GitHub's shape (`type`, `path`, `locations`, `message`).

use super::{APP_LOGIN, Answer, FakeForge, Inner, Shared, gh_error, now_rfc3339};
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use base64::Engine;
use serde_json::{Value, json};
use std::collections::HashMap;

/// GitHub's reaction names (<https://docs.github.com/en/rest/reactions/reactions#about-reactions>).
const REACTION_CONTENTS: [&str; 8] = [
    "+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes",
];

/// GitHub's limit on `first` of a GraphQL connection.
const MAX_FIRST: usize = 100;

const THREAD_ID_PREFIX: &str = "PRRT_fake_";

impl FakeForge {
    /// A reaction by `login` (`kind` `User` or `Bot`) on review comment `comment_id` of
    /// `full_name`, as GET .../pulls/comments/{id}/reactions then lists it; returns its id.
    /// Panics on a comment the forge does not hold or a `content` GitHub does not know
    /// (`+1`, `-1`, `laugh`, `confused`, `heart`, `hooray`, `rocket`, `eyes`).
    pub fn add_reaction(
        &self,
        full_name: &str,
        comment_id: i64,
        login: &str,
        kind: &str,
        content: &str,
    ) -> i64 {
        assert!(
            REACTION_CONTENTS.contains(&content),
            "GitHub has no reaction {content:?}"
        );
        let id = self.shared.id();
        let mut inner = self.shared.inner.lock().unwrap();
        assert!(
            inner.comment_of_repo(full_name, comment_id).is_some(),
            "no review comment {comment_id} in {full_name}"
        );
        inner.reactions.entry(comment_id).or_default().push(json!({
            "id": id,
            "node_id": format!("REA_fake_{id}"),
            "user": { "login": login, "id": id, "type": kind },
            "content": content,
            "created_at": now_rfc3339(),
        }));
        id
    }

    /// The stored review comment `id` of PR `number`, in the REST API's format.
    pub fn pull_comment(&self, full_name: &str, number: i64, id: i64) -> Option<Value> {
        self.pull_comments(full_name, number)
            .into_iter()
            .find(|c| c["id"] == id)
    }

    /// The GraphQL node id of the review thread that comment `first_comment_id` opened.
    pub fn thread_id(&self, first_comment_id: i64) -> String {
        format!("{THREAD_ID_PREFIX}{first_comment_id}")
    }

    /// Whether the review thread that comment `first_comment_id` opened is resolved.
    pub fn thread_resolved(&self, first_comment_id: i64) -> bool {
        let inner = self.shared.inner.lock().unwrap();
        inner.resolved_threads.contains(&first_comment_id)
    }

    /// Resolve or unresolve that thread, as a person does on GitHub's page.
    pub fn set_thread_resolved(&self, first_comment_id: i64, resolved: bool) {
        let mut inner = self.shared.inner.lock().unwrap();
        if resolved {
            inner.resolved_threads.insert(first_comment_id);
        } else {
            inner.resolved_threads.remove(&first_comment_id);
        }
    }

    /// The body of the `pull_request_review_comment` delivery (action `created`) GitHub sends
    /// for the stored review comment `comment_id` of PR `number`: GitHub's example delivery
    /// (`fixtures/webhooks/pull_request_review_comment.created.json`) with the comment, the
    /// pull request (as given to [`FakeForge::set_pull`]), the repository and its installation
    /// (as given to [`FakeForge::set_installation`]) put in. Sign it like any delivery
    /// (`X-Hub-Signature-256`, `X-GitHub-Event: pull_request_review_comment`). Panics when the
    /// comment, the pull request or the installation is unknown.
    pub fn review_comment_delivery(
        &self,
        full_name: &str,
        number: i64,
        comment_id: i64,
    ) -> Vec<u8> {
        let comment = self
            .pull_comment(full_name, number, comment_id)
            .unwrap_or_else(|| panic!("no review comment {comment_id} on {full_name}#{number}"));
        let inner = self.shared.inner.lock().unwrap();
        let pull = inner
            .pulls
            .get(&format!("{full_name}#{number}"))
            .cloned()
            .unwrap_or_else(|| panic!("set_pull({full_name:?}, {number}, ..) first"));
        let installation = *inner
            .installations
            .get(full_name)
            .unwrap_or_else(|| panic!("set_installation({full_name:?}, ..) first"));
        drop(inner);
        let mut v: Value = serde_json::from_str(include_str!(
            "../../fixtures/webhooks/pull_request_review_comment.created.json"
        ))
        .unwrap();
        for (key, value) in comment.as_object().unwrap() {
            v["comment"][key] = value.clone();
        }
        // GitHub's example is a comment that opens a thread; a reply names its thread.
        v["comment"]["in_reply_to_id"] = comment["in_reply_to_id"].clone();
        v["comment"]["author_association"] = comment
            .get("author_association")
            .cloned()
            .unwrap_or_else(|| json!("NONE"));
        v["comment"]["pull_request_url"] = json!(format!(
            "https://api.github.com/repos/{full_name}/pulls/{number}"
        ));
        for (key, value) in pull.as_object().unwrap() {
            v["pull_request"][key] = value.clone();
        }
        v["pull_request"]["number"] = json!(number);
        let (owner, name) = full_name.split_once('/').unwrap();
        v["repository"]["full_name"] = json!(full_name);
        v["repository"]["name"] = json!(name);
        v["repository"]["owner"]["login"] = json!(owner);
        v["installation"]["id"] = json!(installation);
        serde_json::to_vec(&v).unwrap()
    }
}

impl Inner {
    /// The stored review comment `id` of any pull request of `full_name`.
    fn comment_of_repo(&self, full_name: &str, id: i64) -> Option<&Value> {
        self.pull_comments
            .iter()
            .filter(|(key, _)| {
                key.rsplit_once('#')
                    .is_some_and(|(repo, _)| repo == full_name)
            })
            .find_map(|(_, comments)| comments.iter().find(|c| c["id"] == id))
    }

    /// The review threads of `owner/repo#number`, oldest first: (opening comment id, its
    /// comments).
    fn threads(&self, key: &str) -> Vec<(i64, Vec<Value>)> {
        let comments = self.pull_comments.get(key).cloned().unwrap_or_default();
        comments
            .iter()
            .filter(|c| c["in_reply_to_id"].is_null())
            .filter_map(|first| {
                let id = first["id"].as_i64()?;
                let thread = comments
                    .iter()
                    .filter(|c| c["id"] == id || c["in_reply_to_id"] == id)
                    .cloned()
                    .collect();
                Some((id, thread))
            })
            .collect()
    }
}

/// `POST /repos/{o}/{r}/pulls/{n}/comments/{id}/replies {body}`: a reply by the App in the
/// thread of comment `id`, stored with `in_reply_to_id` and answered 201 with the comment.
/// 404 when `id` is not a review comment of PR `n`; 422 when it is a reply itself (GitHub
/// supports no replies to replies) or the body is missing or empty.
pub(super) async fn post_reply(
    State(s): State<Shared>,
    Path((o, r, n, id)): Path<(String, String, i64, i64)>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Answer {
    let path = format!("/repos/{o}/{r}/pulls/{n}/comments/{id}/replies");
    s.check("POST", path, &headers, body.clone(), true)?;
    let key = format!("{o}/{r}#{n}");
    let first = s
        .inner
        .lock()
        .unwrap()
        .pull_comments
        .get(&key)
        .and_then(|comments| comments.iter().find(|c| c["id"] == id).cloned());
    let Some(first) = first else {
        return Err(gh_error(404, "Not Found"));
    };
    if !first["in_reply_to_id"].is_null() {
        return Err(gh_error(
            422,
            "Validation Failed: replies to replies are not supported",
        ));
    }
    let Some(text) = body["body"].as_str().filter(|b| !b.is_empty()) else {
        return Err(gh_error(422, "Validation Failed: body can't be blank"));
    };
    let reply = json!({
        "id": s.id(),
        "in_reply_to_id": id,
        "user": { "login": APP_LOGIN, "type": "Bot" },
        "path": first["path"],
        "line": first["line"],
        "side": first["side"],
        "body": text,
        "created_at": now_rfc3339(),
    });
    let mut inner = s.inner.lock().unwrap();
    inner
        .pull_comments
        .entry(key)
        .or_default()
        .push(reply.clone());
    Ok((StatusCode::CREATED, Json(reply)).into_response())
}

/// `GET /repos/{o}/{r}/pulls/comments/{id}/reactions?per_page&page&content`: the reactions on
/// a review comment, oldest first, `per_page` (default 30, at most 100) from page `page`
/// (from 1). 404 for a comment the repository does not hold. Recorded with its query.
pub(super) async fn list_reactions(
    State(s): State<Shared>,
    Path((o, r, id)): Path<(String, String, i64)>,
    Query(query): Query<HashMap<String, String>>,
    uri: axum::http::Uri,
    headers: HeaderMap,
) -> Answer {
    let mut path = format!("/repos/{o}/{r}/pulls/comments/{id}/reactions");
    if let Some(q) = uri.query() {
        path = format!("{path}?{q}");
    }
    s.check("GET", path, &headers, Value::Null, true)?;
    let inner = s.inner.lock().unwrap();
    if inner.comment_of_repo(&format!("{o}/{r}"), id).is_none() {
        return Err(gh_error(404, "Not Found"));
    }
    let number = |name: &str, default: usize| {
        query
            .get(name)
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(default)
    };
    let per_page = number("per_page", 30).clamp(1, 100);
    let page = number("page", 1).max(1);
    let items: Vec<Value> = inner
        .reactions
        .get(&id)
        .into_iter()
        .flatten()
        .filter(|v| {
            query
                .get("content")
                .is_none_or(|c| v["content"] == c.as_str())
        })
        .skip((page - 1) * per_page)
        .take(per_page)
        .cloned()
        .collect();
    Ok(Json(Value::Array(items)).into_response())
}

/// `POST /graphql {query, variables}`: the `reviewThreads` query or the
/// `resolveReviewThread` mutation (see the module doc). Needs an installation token, and sees
/// only the repositories of its installation (others are NOT_FOUND, as on GitHub).
pub(super) async fn graphql(
    State(s): State<Shared>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Answer {
    s.check("POST", "/graphql".into(), &headers, body.clone(), true)?;
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let Some(query) = body["query"].as_str() else {
        return Ok(errors(
            Value::Null,
            None,
            &[],
            "A query attribute must be specified and must be a string.",
        ));
    };
    let vars = &body["variables"];
    let mut inner = s.inner.lock().unwrap();
    let answer = if query.contains("resolveReviewThread") {
        resolve_thread(&mut inner, auth, vars)
    } else if query.contains("reviewThreads") {
        review_threads(&inner, auth, query, vars)
    } else {
        errors(
            Value::Null,
            None,
            &[],
            "the fake forge answers only reviewThreads and resolveReviewThread",
        )
    };
    Ok(answer)
}

/// A GraphQL answer with one error (HTTP 200): `data` as far as it got, the error's `type`
/// when GitHub gives one, the `path` of the field that failed and GitHub's message.
fn errors(
    data: Value,
    kind: Option<&str>,
    path: &[&str],
    message: &str,
) -> axum::response::Response {
    let mut error = json!({ "message": message, "locations": [{ "line": 2, "column": 3 }] });
    if let Some(kind) = kind {
        error["type"] = json!(kind);
    }
    if !path.is_empty() {
        error["path"] = json!(path);
    }
    let mut answer = json!({ "errors": [error] });
    if !data.is_null() {
        answer["data"] = data;
    }
    Json(answer).into_response()
}

/// The integer argument `arg` of the connection `field` in a GraphQL document
/// (`reviewThreads(first: 100, ...)`), when written as a literal.
fn literal_arg(query: &str, field: &str, arg: &str) -> Option<usize> {
    let args = query
        .split_once(&format!("{field}("))?
        .1
        .split(')')
        .next()?;
    let value = args.split_once(&format!("{arg}:"))?.1.trim_start();
    let digits: String = value.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The `first` of connection `field`, or the error GitHub gives without one or above 100.
#[expect(
    clippy::result_large_err,
    reason = "the error is the answer itself, built once per request"
)]
fn page_size(query: &str, field: &str) -> Result<usize, axum::response::Response> {
    match literal_arg(query, field, "first") {
        None => Err(errors(
            Value::Null,
            None,
            &[],
            &format!(
                "You must provide a `first` or `last` value to properly paginate the `{field}` connection."
            ),
        )),
        Some(n) if n > MAX_FIRST => Err(errors(
            Value::Null,
            None,
            &[],
            &format!(
                "Requesting {n} records on the `{field}` connection exceeds the `first` limit of {MAX_FIRST} records."
            ),
        )),
        Some(n) => Ok(n),
    }
}

/// An opaque cursor after the `n`th thread, and back.
fn cursor(n: usize) -> String {
    base64::engine::general_purpose::STANDARD.encode(format!("cursor:v2:{n}"))
}

fn after(cursor: &str) -> Option<usize> {
    let raw = base64::engine::general_purpose::STANDARD
        .decode(cursor)
        .ok()?;
    String::from_utf8(raw)
        .ok()?
        .strip_prefix("cursor:v2:")?
        .parse()
        .ok()
}

/// `repository(owner, name) { pullRequest(number) { reviewThreads(first, after: $cursor) } }`.
fn review_threads(
    inner: &Inner,
    auth: &str,
    query: &str,
    vars: &Value,
) -> axum::response::Response {
    let (first, comments_first) = match (
        page_size(query, "reviewThreads"),
        page_size(query, "comments"),
    ) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let owner = vars["owner"].as_str().unwrap_or_default();
    let name = vars["name"].as_str().unwrap_or_default();
    let full_name = format!("{owner}/{name}");
    if !inner.reaches(auth, &full_name) {
        return errors(
            json!({ "repository": null }),
            Some("NOT_FOUND"),
            &["repository"],
            &format!("Could not resolve to a Repository with the name '{full_name}'."),
        );
    }
    let number = vars["number"].as_i64().unwrap_or_default();
    let key = format!("{full_name}#{number}");
    if !inner.pulls.contains_key(&key) && !inner.pull_comments.contains_key(&key) {
        return errors(
            json!({ "repository": { "pullRequest": null } }),
            Some("NOT_FOUND"),
            &["repository", "pullRequest"],
            &format!("Could not resolve to a PullRequest with the number of {number}."),
        );
    }
    let start = match vars["cursor"].as_str() {
        None => 0,
        Some(c) => match after(c) {
            Some(n) => n,
            None => {
                return errors(
                    Value::Null,
                    None,
                    &[],
                    &format!("`{c}` does not appear to be a valid cursor."),
                );
            }
        },
    };
    let threads = inner.threads(&key);
    let page: Vec<Value> = threads
        .iter()
        .skip(start)
        .take(first)
        .map(|(id, comments)| {
            let nodes: Vec<Value> = comments
                .iter()
                .take(comments_first)
                .map(|c| {
                    let author = c["user"]["login"].as_str().map(|login| {
                        json!({ "login": login.strip_suffix("[bot]").unwrap_or(login) })
                    });
                    json!({
                        "databaseId": c["id"],
                        "body": c["body"],
                        "author": author,
                        "authorAssociation": c.get("author_association").cloned().unwrap_or_else(|| json!("NONE")),
                        "createdAt": c["created_at"],
                    })
                })
                .collect();
            json!({
                "id": format!("{THREAD_ID_PREFIX}{id}"),
                "isResolved": inner.resolved_threads.contains(id),
                "comments": { "nodes": nodes },
            })
        })
        .collect();
    let end = start + page.len();
    let end_cursor = if page.is_empty() {
        Value::Null
    } else {
        json!(cursor(end))
    };
    Json(
        json!({ "data": { "repository": { "pullRequest": { "reviewThreads": {
        "nodes": page,
        "pageInfo": { "hasNextPage": end < threads.len(), "endCursor": end_cursor },
    } } } } }),
    )
    .into_response()
}

/// `resolveReviewThread(input: { threadId: $threadId }) { thread { id isResolved } }`.
fn resolve_thread(inner: &mut Inner, auth: &str, vars: &Value) -> axum::response::Response {
    let Some(thread_id) = vars["threadId"].as_str() else {
        return errors(
            Value::Null,
            None,
            &[],
            "Variable $threadId of type ID! was provided invalid value",
        );
    };
    let first = thread_id
        .strip_prefix(THREAD_ID_PREFIX)
        .and_then(|id| id.parse::<i64>().ok())
        .filter(|id| {
            inner.pull_comments.iter().any(|(key, comments)| {
                let repo = key.rsplit_once('#').map_or("", |(repo, _)| repo);
                inner.reaches(auth, repo)
                    && comments
                        .iter()
                        .any(|c| c["id"] == *id && c["in_reply_to_id"].is_null())
            })
        });
    let Some(first) = first else {
        return errors(
            json!({ "resolveReviewThread": null }),
            Some("NOT_FOUND"),
            &["resolveReviewThread"],
            &format!("Could not resolve to a node with the global id of '{thread_id}'"),
        );
    };
    inner.resolved_threads.insert(first);
    Json(json!({ "data": { "resolveReviewThread": {
        "thread": { "id": thread_id, "isResolved": true },
    } } }))
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// POST /graphql with `token` (None: none); the status and the JSON answer.
    async fn graphql(forge: &FakeForge, token: Option<&str>, body: Value) -> (u16, Value) {
        let mut req = reqwest::Client::new()
            .post(format!("{}/graphql", forge.api_url()))
            .header("x-github-api-version", "2022-11-28")
            .json(&body);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let resp = req.send().await.unwrap();
        (resp.status().as_u16(), resp.json().await.unwrap())
    }

    /// A fake forge with installation 5 on `o/r`, PR 1 holding one App comment and a reply
    /// by an OWNER: (forge, comment id, reply id).
    async fn seeded() -> (FakeForge, i64, i64) {
        let forge = FakeForge::start().await;
        forge.set_installation("o/r", 5);
        // Stored as post_review stores the App's inline comments.
        let first = forge.shared.id();
        forge
            .shared
            .inner
            .lock()
            .unwrap()
            .pull_comments
            .entry("o/r#1".into())
            .or_default()
            .push(json!({
                "id": first, "path": "src/a.rs", "line": 2, "side": "RIGHT", "body": "finding",
                "user": { "login": APP_LOGIN, "type": "Bot" }, "created_at": "2026-01-02T03:04:05Z",
            }));
        let reply = forge.add_reply_as("o/r", 1, first, "alice", "User", "OWNER", "intended");
        (forge, first, reply)
    }

    const THREADS: &str = "query($owner: String!, $name: String!, $number: Int!, $cursor: String) { repository(owner: $owner, name: $name) { pullRequest(number: $number) { reviewThreads(first: 100, after: $cursor) { nodes { id isResolved comments(first: 100) { nodes { databaseId body author { login } authorAssociation createdAt } } } pageInfo { hasNextPage endCursor } } } } }";

    #[tokio::test]
    async fn review_threads_answer_in_githubs_graphql_shape() {
        let (forge, first, reply) = seeded().await;
        let vars = json!({"owner": "o", "name": "r", "number": 1, "cursor": null});
        let (status, mut v) = graphql(
            &forge,
            Some("ghs_fake_5"),
            json!({"query": THREADS, "variables": vars}),
        )
        .await;
        assert_eq!(status, 200);
        let connection = &mut v["data"]["repository"]["pullRequest"]["reviewThreads"];
        let reply_at = connection["nodes"][0]["comments"]["nodes"][1]["createdAt"].take();
        assert!(reply_at.as_str().unwrap().ends_with('Z'), "{reply_at}");
        assert_eq!(
            v,
            json!({"data": {"repository": {"pullRequest": {"reviewThreads": {
                "nodes": [{
                    "id": format!("PRRT_fake_{first}"),
                    "isResolved": false,
                    "comments": {"nodes": [
                        {"databaseId": first, "body": "finding", "author": {"login": "review-bot"},
                         "authorAssociation": "NONE", "createdAt": "2026-01-02T03:04:05Z"},
                        {"databaseId": reply, "body": "intended", "author": {"login": "alice"},
                         "authorAssociation": "OWNER", "createdAt": null},
                    ]},
                }],
                "pageInfo": {"hasNextPage": false, "endCursor": cursor(1)},
            }}}}})
        );
    }

    #[tokio::test]
    async fn resolve_review_thread_answers_the_thread_or_not_found() {
        let (forge, first, _) = seeded().await;
        let mutation = "mutation($threadId: ID!) { resolveReviewThread(input: {threadId: $threadId}) { thread { id isResolved } } }";
        let id = forge.thread_id(first);
        let body = json!({"query": mutation, "variables": {"threadId": id}});
        let (status, v) = graphql(&forge, Some("ghs_fake_5"), body.clone()).await;
        assert_eq!(status, 200);
        assert_eq!(
            v,
            json!({"data": {"resolveReviewThread": {"thread": {"id": id, "isResolved": true}}}})
        );
        assert!(forge.thread_resolved(first));
        // A reply's id names no thread; neither does a made-up one.
        for bad in [format!("PRRT_fake_{}", first + 1), "PRRT_x".into()] {
            let body = json!({"query": mutation, "variables": {"threadId": bad}});
            let (status, v) = graphql(&forge, Some("ghs_fake_5"), body).await;
            assert_eq!(status, 200);
            assert_eq!(
                v,
                json!({
                    "data": {"resolveReviewThread": null},
                    "errors": [{
                        "type": "NOT_FOUND",
                        "path": ["resolveReviewThread"],
                        "locations": [{"line": 2, "column": 3}],
                        "message": format!("Could not resolve to a node with the global id of '{bad}'"),
                    }],
                })
            );
        }
        // Without an installation token GitHub does not run the document at all.
        let (status, v) = graphql(&forge, None, body.clone()).await;
        assert_eq!((status, &v["message"]), (401, &json!("Bad credentials")));
        assert_eq!(forge.posted("POST", "/graphql").len(), 4);
    }

    #[tokio::test]
    async fn documents_github_would_refuse_get_errors() {
        let (forge, _, _) = seeded().await;
        let vars = json!({"owner": "o", "name": "r", "number": 1});
        let cases = [
            (
                THREADS.replace("reviewThreads(first: 100", "reviewThreads(first: 101"),
                vars.clone(),
                "Requesting 101 records on the `reviewThreads` connection exceeds the `first` limit of 100 records.",
            ),
            (
                THREADS.replace("comments(first: 100)", "comments"),
                vars.clone(),
                "You must provide a `first` or `last` value to properly paginate the `comments` connection.",
            ),
            (
                "{ viewer { login } }".into(),
                Value::Null,
                "the fake forge answers only reviewThreads and resolveReviewThread",
            ),
            (
                THREADS.into(),
                json!({"owner": "o", "name": "r", "number": 1, "cursor": "nope"}),
                "`nope` does not appear to be a valid cursor.",
            ),
        ];
        for (query, variables, expected) in cases {
            let body = json!({"query": query, "variables": variables});
            let (status, v) = graphql(&forge, Some("ghs_fake_5"), body).await;
            assert_eq!(status, 200);
            assert_eq!(v["errors"][0]["message"], expected, "{query}");
            assert!(v["data"].is_null(), "{v}");
        }
    }

    #[tokio::test]
    async fn a_review_comment_delivery_describes_the_stored_comment() {
        let (forge, first, reply) = seeded().await;
        let head = "b".repeat(40);
        forge.set_pull(
            "o/r",
            1,
            json!({"number": 1, "title": "T", "user": {"login": "carol"},
                   "head": {"ref": "feature", "sha": head}, "base": {"ref": "main", "sha": "c".repeat(40)}}),
        );
        let v: Value =
            serde_json::from_slice(&forge.review_comment_delivery("o/r", 1, reply)).unwrap();
        assert_eq!(v["action"], "created");
        assert_eq!(v["comment"]["id"], reply);
        assert_eq!(v["comment"]["in_reply_to_id"], first);
        assert_eq!(
            v["comment"]["user"],
            json!({"login": "alice", "type": "User"})
        );
        assert_eq!(v["comment"]["author_association"], "OWNER");
        assert_eq!(v["comment"]["body"], "intended");
        assert_eq!(v["pull_request"]["head"]["sha"], json!(head));
        assert_eq!(v["pull_request"]["user"]["login"], "carol");
        assert_eq!(v["repository"]["full_name"], "o/r");
        assert_eq!(v["repository"]["owner"]["login"], "o");
        assert_eq!(v["installation"]["id"], 5);
    }
}
