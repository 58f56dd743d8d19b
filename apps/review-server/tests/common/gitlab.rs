//! The GitLab side of the end-to-end harness: the fake GitLab of `tests/` serving a project in
//! a nested group, its repository published bare over file:// with
//! `refs/merge-requests/<iid>/head`, the scripted model and the real binary, with GitLab's
//! deliveries (docs/review-service.md, "GitLab").

use super::*;
use test_doubles::fake_gitlab::FakeGitLab;

/// GitLab's webhook secret token in these tests.
pub(crate) const GITLAB_SECRET: &str = "e2e-gitlab-secret-token";
/// The project, in a nested group.
pub(crate) const PROJECT: &str = "acme/platform/widgets";
pub(crate) const PROJECT_ID: i64 = 42;
/// The merge request's author (Developer).
pub(crate) const AUTHOR: (i64, &str) = (7, "ada");
/// A member with Developer access.
pub(crate) const DEVELOPER: (i64, &str) = (9, "grace");
/// A member with Guest access.
pub(crate) const GUEST: (i64, &str) = (11, "gus");

/// Everything a GitLab end-to-end test needs, started.
pub(crate) struct GitLabWorld {
    pub upstream: Upstream,
    /// The bare repository GitLab serves: `<root>/gitlab/acme/platform/widgets.git`.
    pub bare: PathBuf,
    pub data: tempfile::TempDir,
    pub gitlab: FakeGitLab,
    pub model: ScriptedModel,
    pub server: Server,
    pub env: Vec<(&'static str, String)>,
}

impl GitLabWorld {
    /// The scripted reviewer (Anthropic's wire format, streaming) and the project enabled.
    pub(crate) async fn reviewing() -> GitLabWorld {
        let w = Self::start(Behavior::Reviewer, &[]).await;
        w.enable().await;
        w
    }

    pub(crate) async fn start(behavior: Behavior, extra: &[(&'static str, String)]) -> GitLabWorld {
        let upstream = Upstream::new();
        let root = upstream.root.path().join("gitlab");
        let bare = root.join(format!("{PROJECT}.git"));
        std::fs::create_dir_all(bare.parent().unwrap()).unwrap();
        git(
            upstream.root.path(),
            &[
                "clone",
                "-q",
                "--bare",
                upstream.work.to_str().unwrap(),
                bare.to_str().unwrap(),
            ],
        );
        let gitlab = FakeGitLab::start().await;
        gitlab.add_project(PROJECT, PROJECT_ID, "main");
        gitlab.add_member(PROJECT, AUTHOR.0, AUTHOR.1, 30);
        gitlab.add_member(PROJECT, DEVELOPER.0, DEVELOPER.1, 30);
        gitlab.add_member(PROJECT, GUEST.0, GUEST.1, 10);
        let model = ScriptedModel::start(behavior);
        let data = tempfile::tempdir().unwrap();
        let data_dir = data.path().join("data");
        std::fs::create_dir_all(&data_dir).unwrap();
        let mut env = vec![
            ("GITLAB_URL", gitlab.base_url()),
            ("GITLAB_TOKEN", FakeGitLab::TOKEN.to_owned()),
            ("GITLAB_WEBHOOK_SECRET", GITLAB_SECRET.to_owned()),
            ("GITLAB_GIT_URL", format!("file://{}", root.display())),
        ];
        env.extend(model_env(&model, "anthropic/claude-sonnet-4-5", true));
        env.extend(extra.iter().cloned());
        let server = Server::start(&data_dir, &env).await;
        let w = GitLabWorld {
            upstream,
            bare,
            data,
            gitlab,
            model,
            server,
            env,
        };
        w.publish_mr(1, "feature");
        w
    }

    /// `<gitlab host>/acme/platform/widgets`.
    pub(crate) fn full_name(&self) -> String {
        let host = self
            .gitlab
            .base_url()
            .trim_start_matches("http://")
            .to_owned();
        format!("{host}/{PROJECT}")
    }

    /// Registers (POST /api/repos with the project id) and enables the project.
    pub(crate) async fn enable(&self) {
        let (status, body) = self
            .server
            .post_json(
                "/api/repos",
                json!({ "full_name": self.full_name(), "installation_id": PROJECT_ID }),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        let (status, body) = self
            .server
            .put_json(
                &format!("/api/repos/{}", repo_path(&self.full_name())),
                json!({ "enabled": 1 }),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }

    /// Publishes `branch` as merge request `iid`'s head (`refs/merge-requests/<iid>/head`) and
    /// main, as GitLab keeps them.
    pub(crate) fn publish_mr(&self, iid: i64, branch: &str) {
        git(
            &self.upstream.work,
            &[
                "push",
                "-q",
                "-f",
                self.bare.to_str().unwrap(),
                &format!("{branch}:refs/merge-requests/{iid}/head"),
                "main:main",
            ],
        );
    }

    /// Tells the fake GitLab merge request `iid` is at `head` (its JSON with `diff_refs`, and
    /// its diff, which discussions are checked against).
    pub(crate) fn set_mr(&self, iid: i64, head: &str) {
        let work = &self.upstream.work;
        let main = self.upstream.sha("main");
        let base = git(work, &["merge-base", &main, head]);
        self.gitlab.add_merge_request(
            PROJECT,
            json!({
                "iid": iid,
                "title": "Parse helpers",
                "description": "Adds a parser and a first() helper.",
                "author": { "id": AUTHOR.0, "username": AUTHOR.1 },
                "source_branch": "feature",
                "target_branch": "main",
                "sha": head,
                "diff_refs": { "base_sha": base, "start_sha": main, "head_sha": head },
            }),
        );
        let diff = git(work, &["diff", &format!("main...{head}")]);
        self.gitlab
            .set_merge_request_diff(PROJECT, iid, &format!("{diff}\n"));
    }

    /// The Merge Request Hook of `action` for merge request `iid` at `head`, with `oldrev`
    /// when given (an update that pushed commits).
    pub(crate) fn mr_payload(
        &self,
        iid: i64,
        action: &str,
        head: &str,
        oldrev: Option<&str>,
    ) -> Vec<u8> {
        let mut v = fixture("merge_request.open.json");
        let mr = &mut v["object_attributes"];
        mr["iid"] = json!(iid);
        mr["action"] = json!(action);
        mr["last_commit"]["id"] = json!(head);
        if let Some(old) = oldrev {
            mr["oldrev"] = json!(old);
        }
        serde_json::to_vec(&v).unwrap()
    }

    /// A Note Hook: `text` by `user` on merge request 1 at the feature head; in discussion
    /// `discussion` as a `DiscussionNote` when given.
    pub(crate) fn note_payload(
        &self,
        text: &str,
        user: (i64, &str),
        note_id: i64,
        discussion: Option<&str>,
    ) -> Vec<u8> {
        let mut v = fixture("note.merge_request.json");
        v["user"]["id"] = json!(user.0);
        v["user"]["username"] = json!(user.1);
        let note = &mut v["object_attributes"];
        note["id"] = json!(note_id);
        note["note"] = json!(text);
        note["description"] = json!(text);
        note["author_id"] = json!(user.0);
        if let Some(d) = discussion {
            note["discussion_id"] = json!(d);
            note["type"] = json!("DiscussionNote");
        }
        v["merge_request"]["last_commit"]["id"] = json!(self.upstream.sha("feature"));
        serde_json::to_vec(&v).unwrap()
    }

    /// POST /webhook/gitlab with `X-Gitlab-Event: event`, the token when given and the event
    /// UUID `uuid` (a fresh one when None).
    pub(crate) async fn deliver(
        &self,
        event: &str,
        body: &[u8],
        token: Option<&str>,
        uuid: Option<&str>,
    ) -> reqwest::Response {
        let mut req = self
            .server
            .http
            .post(format!("{}/webhook/gitlab", self.server.url))
            .header("X-Gitlab-Event", event)
            .header(
                "X-Gitlab-Event-UUID",
                uuid.map_or_else(uuid_like, str::to_owned),
            )
            .header("X-Gitlab-Instance", self.gitlab.base_url())
            .header("content-type", "application/json")
            .body(body.to_vec());
        if let Some(t) = token {
            req = req.header("X-Gitlab-Token", t);
        }
        req.send().await.unwrap()
    }

    /// Delivers a Merge Request Hook with the right token; asserts 200.
    pub(crate) async fn deliver_mr(&self, action: &str, head: &str, oldrev: Option<&str>) {
        let body = self.mr_payload(1, action, head, oldrev);
        let r = self
            .deliver("Merge Request Hook", &body, Some(GITLAB_SECRET), None)
            .await;
        assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    }

    /// Delivers a Note Hook with the right token; asserts 200.
    pub(crate) async fn deliver_note(&self, body: &[u8]) {
        let r = self
            .deliver("Note Hook", body, Some(GITLAB_SECRET), None)
            .await;
        assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    }

    /// Merge request 1 opened at the feature head, GitLab knowing it; the head.
    pub(crate) async fn open_mr(&self) -> String {
        let head = self.upstream.sha("feature");
        self.set_mr(1, &head);
        self.deliver_mr("open", &head, None).await;
        head
    }

    /// The commit states posted for `sha`, oldest first, once the last is terminal (or 30 s).
    pub(crate) async fn final_statuses(&self, sha: &str) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let states: Vec<String> = self
                .gitlab
                .statuses(PROJECT, sha)
                .into_iter()
                .map(|(_, state, _)| state)
                .collect();
            let done = states
                .last()
                .is_some_and(|s| matches!(s.as_str(), "success" | "failed" | "canceled"));
            if done || Instant::now() > deadline {
                return states;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// Kills the server (SIGKILL) and starts it again on the same folder and environment.
    pub(crate) async fn kill_and_restart(&mut self) {
        let data_dir = self.server.data_dir.clone();
        let _ = self.server.child.kill();
        let _ = self.server.child.wait();
        self.server = Server::start(&data_dir, &self.env).await;
    }
}

/// A GitLab example delivery of tests/fixtures/webhooks/gitlab.
pub(crate) fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/../../tests/fixtures/webhooks/gitlab/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}
