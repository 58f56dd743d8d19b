//! Projects, members, commit statuses, the repository (files, tree, commits, branches) and
//! opening merge requests (<https://docs.gitlab.com/ee/api/projects.html>,
//! <https://docs.gitlab.com/ee/api/members.html>, <https://docs.gitlab.com/ee/api/commits.html>,
//! <https://docs.gitlab.com/ee/api/repository_files.html>, <https://docs.gitlab.com/ee/api/repositories.html>,
//! <https://docs.gitlab.com/ee/api/branches.html>, <https://docs.gitlab.com/ee/api/merge_requests.html#create-mr>).

use super::{
    Answer, Call, Commit, MergeRequest, Shared, Status, created, gl_error, not_found, now_rfc3339,
    ok, paginate, param_error, user_json,
};
use axum::body::Bytes;
use axum::extract::{Path, State};
use base64::Engine;
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// GET /projects/:id.
pub(super) async fn get_project(
    State(s): State<Shared>,
    Path(id): Path<String>,
    call: Call,
) -> Answer {
    s.check(&call, &Value::Null)?;
    s.with_project(&id, |p, _| {
        let name = p.path.rsplit('/').next().unwrap_or(&p.path).to_owned();
        ok(json!({
            "id": p.id,
            "name": name,
            "path": name,
            "path_with_namespace": p.path,
            "default_branch": p.default_branch,
            "web_url": p.web_url(),
            "visibility": "private",
        }))
    })
}

/// GET /projects/:id/members/all/:user_id: the member with `access_level`, or 404.
pub(super) async fn get_member(
    State(s): State<Shared>,
    Path((id, user_id)): Path<(String, i64)>,
    call: Call,
) -> Answer {
    s.check(&call, &Value::Null)?;
    s.with_project(&id, |p, _| match p.members.get(&user_id) {
        Some(m) => {
            let mut v = user_json(user_id, &m.username);
            v["access_level"] = json!(m.access_level);
            ok(v)
        }
        None => Err(gl_error(404, "404 Not found")),
    })
}

/// The event name GitLab's commit status state machine uses to enter `state`.
fn transition(state: &str) -> &'static str {
    match state {
        "pending" => "enqueue",
        "running" => "run",
        "success" => "succeed",
        "failed" => "drop",
        "canceled" => "cancel",
        _ => "skip",
    }
}

/// POST /projects/:id/statuses/:sha {state, name, description}: the sha must be a commit of
/// the project (404), the state one of GitLab's (400), the description at most 255
/// characters (400), and a status cannot move into the state it is in, nor back from running
/// to pending (400 `Cannot transition status via :run from :running`).
pub(super) async fn post_status(
    State(s): State<Shared>,
    Path((id, sha)): Path<(String, String)>,
    call: Call,
    body: Bytes,
) -> Answer {
    let params = call.params(&body);
    s.check(&call, &params)?;
    s.with_project(&id, |p, s| {
        if p.commit(&sha).is_none_or(|c| c.sha != sha) {
            return Err(not_found("Commit"));
        }
        let Some(state) = params["state"].as_str() else {
            return Err(param_error("state is missing"));
        };
        if !matches!(
            state,
            "pending" | "running" | "success" | "failed" | "canceled" | "skipped"
        ) {
            return Err(param_error("state does not have a valid value"));
        }
        let name = params["name"]
            .as_str()
            .or(params["context"].as_str())
            .unwrap_or("default")
            .to_owned();
        let description = params["description"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if description.chars().count() > 255 {
            return Err(gl_error(
                400,
                json!({ "description": ["is too long (maximum is 255 characters)"] }),
            ));
        }
        if let Some(last) = p
            .statuses
            .iter()
            .rev()
            .find(|st| st.sha == sha && st.name == name)
        {
            let backwards = last.state == "running" && state == "pending";
            if last.state == state || backwards {
                return Err(gl_error(
                    400,
                    format!(
                        "Cannot transition status via :{} from :{}",
                        transition(state),
                        last.state
                    ),
                ));
            }
        }
        let status = Status {
            id: s.id(),
            sha: sha.clone(),
            name: name.clone(),
            state: state.to_owned(),
            description: description.clone(),
        };
        let out = json!({
            "id": status.id, "sha": sha, "ref": params["ref"], "status": state, "name": name,
            "description": description, "target_url": params["target_url"],
            "created_at": now_rfc3339(), "allow_failure": false,
            "author": user_json(super::FakeGitLab::BOT_USER_ID, super::FakeGitLab::BOT_USERNAME),
        });
        p.statuses.push(status);
        created(out)
    })
}

/// The commit a `ref` parameter names, or GitLab's 404.
fn commit_of(
    p: &super::Project,
    git_ref: Option<&str>,
) -> Result<Commit, axum::response::Response> {
    let git_ref = git_ref.unwrap_or(&p.default_branch);
    p.commit(git_ref)
        .cloned()
        .ok_or_else(|| not_found("Commit"))
}

/// GET /projects/:id/repository/files/:file_path?ref=: the file, base64; `ref` is required.
pub(super) async fn get_file(
    State(s): State<Shared>,
    Path((id, file_path)): Path<(String, String)>,
    call: Call,
) -> Answer {
    s.check(&call, &Value::Null)?;
    let Some(git_ref) = call.query.get("ref").cloned() else {
        return Err(param_error("ref is missing"));
    };
    s.with_project(&id, |p, _| {
        let commit = p
            .commit(&git_ref)
            .cloned()
            .ok_or_else(|| not_found("File"))?;
        let Some(bytes) = commit.files.get(&file_path) else {
            return Err(not_found("File"));
        };
        let digest = <sha2::Sha256 as sha2::Digest>::digest(bytes);
        ok(json!({
            "file_name": file_path.rsplit('/').next().unwrap_or(&file_path),
            "file_path": file_path,
            "size": bytes.len(),
            "encoding": "base64",
            "content_sha256": digest.iter().map(|b| format!("{b:02x}")).collect::<String>(),
            "ref": git_ref,
            "blob_id": format!("{:040x}", bytes.len()),
            "commit_id": commit.sha,
            "last_commit_id": commit.sha,
            "content": base64::engine::general_purpose::STANDARD.encode(bytes),
        }))
    })
}

/// GET /projects/:id/repository/tree?path=&ref=: the entries of one folder (`tree` first,
/// then `blob`, by name), paginated; 404 `Tree Not Found` for a folder that is not there.
pub(super) async fn get_tree(
    State(s): State<Shared>,
    Path(id): Path<String>,
    call: Call,
) -> Answer {
    s.check(&call, &Value::Null)?;
    let entries = s.with_project(&id, |p, _| {
        let commit = commit_of(p, call.query.get("ref").map(String::as_str))?;
        let dir = call
            .query
            .get("path")
            .map(|d| d.trim_matches('/').to_owned())
            .unwrap_or_default();
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let mut dirs = BTreeSet::new();
        let mut files = Vec::new();
        for path in commit.files.keys() {
            let Some(rest) = path.strip_prefix(&prefix) else {
                continue;
            };
            match rest.split_once('/') {
                Some((d, _)) => {
                    dirs.insert(d.to_owned());
                }
                None => files.push(rest.to_owned()),
            }
        }
        if dirs.is_empty() && files.is_empty() {
            return Err(not_found("Tree"));
        }
        let entry = |name: &str, kind: &str, mode: &str| {
            json!({
                "id": format!("{:040x}", name.len()), "name": name, "type": kind,
                "path": format!("{prefix}{name}"), "mode": mode,
            })
        };
        let mut out: Vec<Value> = dirs.iter().map(|d| entry(d, "tree", "040000")).collect();
        out.extend(files.iter().map(|f| entry(f, "blob", "100644")));
        Ok(out)
    })?;
    ok(Value::Array(paginate(entries, &call.query)))
}

/// GET /projects/:id/repository/commits/:sha (a SHA, branch or tag).
pub(super) async fn get_commit(
    State(s): State<Shared>,
    Path((id, sha)): Path<(String, String)>,
    call: Call,
) -> Answer {
    s.check(&call, &Value::Null)?;
    s.with_project(&id, |p, _| {
        let c = p.commit(&sha).ok_or_else(|| not_found("Commit"))?;
        ok(json!({
            "id": c.sha, "short_id": &c.sha[..c.sha.len().min(8)], "title": "fake commit",
            "message": "fake commit\n", "parent_ids": [], "created_at": now_rfc3339(),
            "web_url": format!("{}/-/commit/{}", p.web_url(), c.sha),
        }))
    })
}

/// POST /projects/:id/repository/branches?branch=&ref=: a branch at a commit; 400 when it
/// exists or the ref names nothing.
pub(super) async fn post_branch(
    State(s): State<Shared>,
    Path(id): Path<String>,
    call: Call,
    body: Bytes,
) -> Answer {
    let params = call.params(&body);
    s.check(&call, &params)?;
    let (Some(branch), Some(git_ref)) = (params["branch"].as_str(), params["ref"].as_str()) else {
        return Err(param_error("branch is missing, ref is missing"));
    };
    s.with_project(&id, |p, _| {
        if p.commit(branch).is_some() {
            return Err(gl_error(400, "Branch already exists"));
        }
        let Some(base) = p.commit(git_ref).cloned() else {
            return Err(gl_error(400, "Invalid reference name: ref"));
        };
        p.commits.push(Commit {
            names: vec![branch.to_owned()],
            ..base.clone()
        });
        created(json!({
            "name": branch, "merged": false, "protected": false, "default": false,
            "commit": { "id": base.sha },
            "web_url": format!("{}/-/tree/{branch}", p.web_url()),
        }))
    })
}

/// POST /projects/:id/repository/commits {branch, commit_message, actions}: one commit on an
/// existing branch; `create` of a file that exists and `update` of one that does not are 400.
pub(super) async fn post_commit(
    State(s): State<Shared>,
    Path(id): Path<String>,
    call: Call,
    body: Bytes,
) -> Answer {
    let params = call.params(&body);
    s.check(&call, &params)?;
    let (Some(branch), Some(message), Some(actions)) = (
        params["branch"].as_str(),
        params["commit_message"].as_str(),
        params["actions"].as_array(),
    ) else {
        return Err(param_error(
            "branch is missing, commit_message is missing, actions is missing",
        ));
    };
    s.with_project(&id, |p, s| {
        let Some(parent) = p.commit(branch).cloned() else {
            return Err(gl_error(
                400,
                "You can only create or edit files when you are on a branch",
            ));
        };
        let mut files = parent.files.clone();
        for a in actions {
            let path = a["file_path"].as_str().unwrap_or_default().to_owned();
            let content = a["content"].as_str().unwrap_or_default();
            let bytes = if a["encoding"] == "base64" {
                base64::engine::general_purpose::STANDARD
                    .decode(content)
                    .map_err(|_| gl_error(400, "content is not valid Base64"))?
            } else {
                content.as_bytes().to_vec()
            };
            match a["action"].as_str() {
                Some("create") if files.contains_key(&path) => {
                    return Err(gl_error(400, "A file with this name already exists"));
                }
                Some("update" | "delete") if !files.contains_key(&path) => {
                    return Err(gl_error(400, "A file with this name doesn't exist"));
                }
                Some("create" | "update") => {
                    files.insert(path, bytes);
                }
                Some("delete") => {
                    files.remove(&path);
                }
                _ => {
                    return Err(param_error(
                        "actions[0][action] does not have a valid value",
                    ));
                }
            }
        }
        let sha = s.hex_id();
        for c in &mut p.commits {
            c.names.retain(|n| n != branch);
        }
        p.commits.push(Commit {
            names: vec![branch.to_owned(), sha.clone()],
            sha: sha.clone(),
            files,
        });
        created(json!({
            "id": sha, "short_id": &sha[..8], "title": message.lines().next().unwrap_or_default(),
            "message": message, "parent_ids": [parent.sha], "created_at": now_rfc3339(),
        }))
    })
}

/// POST /projects/:id/merge_requests {source_branch, target_branch, title, description}: an
/// open merge request as the bot user; both branches must exist.
pub(super) async fn post_merge_request(
    State(s): State<Shared>,
    Path(id): Path<String>,
    call: Call,
    body: Bytes,
) -> Answer {
    let params = call.params(&body);
    s.check(&call, &params)?;
    let (Some(source), Some(target), Some(title)) = (
        params["source_branch"].as_str(),
        params["target_branch"].as_str(),
        params["title"].as_str(),
    ) else {
        return Err(param_error(
            "source_branch is missing, target_branch is missing, title is missing",
        ));
    };
    s.with_project(&id, |p, s| {
        let (Some(head), Some(base)) = (p.commit(source).cloned(), p.commit(target).cloned())
        else {
            return Err(gl_error(404, "404 Branch Not Found"));
        };
        let iid = p.mrs.keys().max().copied().unwrap_or(0) + 1;
        let json = json!({
            "id": s.id(), "iid": iid, "project_id": p.id, "title": title,
            "description": params["description"], "state": "opened", "draft": false,
            "work_in_progress": false,
            "author": user_json(super::FakeGitLab::BOT_USER_ID, super::FakeGitLab::BOT_USERNAME),
            "source_branch": source, "target_branch": target, "sha": head.sha,
            "diff_refs": { "base_sha": base.sha, "start_sha": base.sha, "head_sha": head.sha },
            "web_url": format!("{}/-/merge_requests/{iid}", p.web_url()),
            "created_at": now_rfc3339(),
        });
        p.mrs.insert(
            iid,
            MergeRequest {
                json: json.clone(),
                ..MergeRequest::default()
            },
        );
        created(json)
    })
}
