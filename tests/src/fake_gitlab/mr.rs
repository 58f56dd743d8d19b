//! Merge requests: the merge request, its diffs, notes, discussions (with GitLab's position
//! checks), award emoji and approvals
//! (<https://docs.gitlab.com/ee/api/merge_requests.html>, <https://docs.gitlab.com/ee/api/notes.html>,
//! <https://docs.gitlab.com/ee/api/discussions.html>, <https://docs.gitlab.com/ee/api/emoji_reactions.html>,
//! <https://docs.gitlab.com/ee/api/merge_request_approvals.html#approve-merge-request>).

use super::{
    Answer, Call, Discussion, FakeGitLab, MergeRequest, Project, Shared, created, gl_error,
    not_found, now_rfc3339, ok, paginate, param_error, user_json,
};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::Response;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// GitLab's answer to a diff note whose position is not on a line of the diff.
pub(super) const LINE_CODE_ERROR: &str =
    "400 Bad request - Note {:line_code=>[\"can't be blank\", \"must be a valid line code\"]}";

/// One file of a unified diff.
#[derive(Debug, Clone, Default)]
struct FileDiff {
    old_path: String,
    new_path: String,
    new_file: bool,
    deleted_file: bool,
    /// The hunks, from the first `@@`.
    hunks: String,
    /// New line numbers of added lines.
    added: BTreeSet<i64>,
    /// Old line numbers of removed lines.
    removed: BTreeSet<i64>,
    /// Unchanged lines: old number -> new number.
    context: BTreeMap<i64, i64>,
    /// Line codes (`<sha1(new path)>_<old counter>_<new counter>`) -> (old_line, new_line) of
    /// the line, as GitLab's `line_range` names lines.
    codes: BTreeMap<String, (Option<i64>, Option<i64>)>,
}

/// GitLab's line code: `Gitlab::Git.diff_line_code`
/// (<https://gitlab.com/gitlab-org/gitlab/-/issues/323760>).
pub(super) fn line_code(path: &str, old: i64, new: i64) -> String {
    let digest = <sha1::Sha1 as sha1::Digest>::digest(path.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{hex}_{old}_{new}")
}

/// The files of `git diff base...head` output.
fn parse_diff(diff: &str) -> Vec<FileDiff> {
    let mut files: Vec<FileDiff> = Vec::new();
    let (mut old, mut new) = (0i64, 0i64);
    let mut in_hunks = false;
    for l in diff.lines() {
        if let Some(rest) = l.strip_prefix("diff --git ") {
            let (a, b) = rest.split_once(" b/").unwrap_or((rest, rest));
            files.push(FileDiff {
                old_path: a.strip_prefix("a/").unwrap_or(a).to_owned(),
                new_path: b.to_owned(),
                ..FileDiff::default()
            });
            in_hunks = false;
            continue;
        }
        let Some(f) = files.last_mut() else { continue };
        if !in_hunks {
            if let Some(p) = l.strip_prefix("--- ") {
                if p == "/dev/null" {
                    f.new_file = true;
                } else {
                    f.old_path = p.strip_prefix("a/").unwrap_or(p).to_owned();
                }
                continue;
            }
            if let Some(p) = l.strip_prefix("+++ ") {
                if p == "/dev/null" {
                    f.deleted_file = true;
                } else {
                    f.new_path = p.strip_prefix("b/").unwrap_or(p).to_owned();
                }
                continue;
            }
            if l.starts_with("new file mode") {
                f.new_file = true;
            }
            if l.starts_with("deleted file mode") {
                f.deleted_file = true;
            }
        }
        if let Some(h) = l.strip_prefix("@@ ") {
            in_hunks = true;
            let mut nums = h.split(' ').take(2).map(|r| {
                r.get(1..)
                    .and_then(|r| r.split(',').next())
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0)
            });
            old = nums.next().unwrap_or(0);
            new = nums.next().unwrap_or(0);
            f.hunks.push_str(l);
            f.hunks.push('\n');
            continue;
        }
        if !in_hunks {
            continue;
        }
        f.hunks.push_str(l);
        f.hunks.push('\n');
        let code = line_code(&f.new_path, old, new);
        match l.as_bytes().first() {
            Some(b'+') => {
                f.codes.insert(code, (None, Some(new)));
                f.added.insert(new);
                new += 1;
            }
            Some(b'-') => {
                f.codes.insert(code, (Some(old), None));
                f.removed.insert(old);
                old += 1;
            }
            Some(b' ') => {
                f.codes.insert(code, (Some(old), Some(new)));
                f.context.insert(old, new);
                old += 1;
                new += 1;
            }
            _ => {}
        }
    }
    files
}

/// A discussion as GitLab serialises one.
pub(super) fn discussion_json(d: &Discussion) -> Value {
    json!({ "id": d.id, "individual_note": d.individual_note, "notes": d.notes })
}

fn mr_mut(p: &mut Project, iid: i64) -> Result<&mut MergeRequest, Response> {
    p.mrs
        .get_mut(&iid)
        .ok_or_else(|| not_found("Merge Request"))
}

fn discussion_mut<'a>(mr: &'a mut MergeRequest, did: &str) -> Result<&'a mut Discussion, Response> {
    mr.discussions
        .iter_mut()
        .find(|d| d.id == did)
        .ok_or_else(|| not_found("Discussion"))
}

/// A note by the token's bot user on merge request `mr`.
fn new_note(
    s: &Shared,
    project_id: i64,
    mr: &Value,
    body: &str,
    kind: Value,
    position: Option<&Value>,
) -> Value {
    let now = now_rfc3339();
    let diff = position.is_some();
    let mut note = json!({
        "id": s.id(),
        "type": kind,
        "body": body,
        "attachment": null,
        "author": user_json(FakeGitLab::BOT_USER_ID, FakeGitLab::BOT_USERNAME),
        "created_at": now,
        "updated_at": now,
        "system": false,
        "noteable_id": mr["id"],
        "noteable_type": "MergeRequest",
        "project_id": project_id,
        "noteable_iid": mr["iid"],
        "resolvable": diff,
        "confidential": false,
        "internal": false,
    });
    if diff {
        note["resolved"] = json!(false);
        note["resolved_by"] = Value::Null;
    }
    if let Some(p) = position {
        note["position"] = p.clone();
    }
    note
}

/// The note body parameter: missing is grape's 400, blank GitLab's validation 400.
fn body_param(params: &Value) -> Result<String, Response> {
    match params["body"].as_str() {
        None => Err(param_error("body is missing")),
        Some(b) if b.trim().is_empty() => Err(gl_error(400, json!({ "note": ["can't be blank"] }))),
        Some(b) => Ok(b.to_owned()),
    }
}

/// GET /projects/:id/merge_requests/:iid.
pub(super) async fn get_merge_request(
    State(s): State<Shared>,
    Path((id, iid)): Path<(String, i64)>,
    call: Call,
) -> Answer {
    s.check(&call, &Value::Null)?;
    s.with_project(&id, |p, _| ok(mr_mut(p, iid)?.json.clone()))
}

/// GET /projects/:id/merge_requests/:iid/diffs (GitLab 15.7+): one entry per file with its
/// hunks, paginated.
pub(super) async fn get_diffs(
    State(s): State<Shared>,
    Path((id, iid)): Path<(String, i64)>,
    call: Call,
) -> Answer {
    s.check(&call, &Value::Null)?;
    let diff = s.with_project(&id, |p, _| Ok(mr_mut(p, iid)?.diff.clone()))?;
    let files: Vec<Value> = parse_diff(&diff)
        .into_iter()
        .map(|f| {
            json!({
                "old_path": f.old_path, "new_path": f.new_path,
                "a_mode": "100644", "b_mode": "100644",
                "new_file": f.new_file, "renamed_file": f.old_path != f.new_path && !f.new_file && !f.deleted_file,
                "deleted_file": f.deleted_file, "generated_file": false,
                "diff": f.hunks,
            })
        })
        .collect();
    ok(Value::Array(paginate(files, &call.query)))
}

/// GET .../notes: every note, newest first (GitLab's default `sort=desc`), paginated.
pub(super) async fn list_notes(
    State(s): State<Shared>,
    Path((id, iid)): Path<(String, i64)>,
    call: Call,
) -> Answer {
    s.check(&call, &Value::Null)?;
    let mut notes: Vec<Value> = s.with_project(&id, |p, _| {
        Ok(mr_mut(p, iid)?
            .discussions
            .iter()
            .flat_map(|d| d.notes.iter().cloned())
            .collect())
    })?;
    if call.query.get("sort").map(String::as_str) != Some("asc") {
        notes.reverse();
    }
    ok(Value::Array(paginate(notes, &call.query)))
}

/// POST .../notes {body}: a plain note (a discussion of its own).
pub(super) async fn post_note(
    State(s): State<Shared>,
    Path((id, iid)): Path<(String, i64)>,
    call: Call,
    body: Bytes,
) -> Answer {
    let params = call.params(&body);
    s.check(&call, &params)?;
    s.with_project(&id, |p, s| {
        let pid = p.id;
        let mr = mr_mut(p, iid)?;
        let text = body_param(&params)?;
        let note = new_note(s, pid, &mr.json, &text, Value::Null, None);
        mr.discussions.push(Discussion {
            id: s.hex_id(),
            individual_note: true,
            notes: vec![note.clone()],
        });
        created(note)
    })
}

/// GET .../notes/:note_id/award_emoji, paginated; 404 for a note not on the merge request.
pub(super) async fn list_awards(
    State(s): State<Shared>,
    Path((id, iid, note_id)): Path<(String, i64, i64)>,
    call: Call,
) -> Answer {
    s.check(&call, &Value::Null)?;
    s.with_project(&id, |p, _| {
        let mr = mr_mut(p, iid)?;
        let exists = mr
            .discussions
            .iter()
            .flat_map(|d| &d.notes)
            .any(|n| n["id"] == json!(note_id));
        if exists {
            Ok(())
        } else {
            Err(not_found("Note"))
        }
    })?;
    let awards = s.lock().awards.get(&note_id).cloned().unwrap_or_default();
    ok(Value::Array(paginate(awards, &call.query)))
}

/// GET .../discussions, oldest first, paginated.
pub(super) async fn list_discussions(
    State(s): State<Shared>,
    Path((id, iid)): Path<(String, i64)>,
    call: Call,
) -> Answer {
    s.check(&call, &Value::Null)?;
    let all: Vec<Value> = s.with_project(&id, |p, _| {
        Ok(mr_mut(p, iid)?
            .discussions
            .iter()
            .map(discussion_json)
            .collect())
    })?;
    ok(Value::Array(paginate(all, &call.query)))
}

/// GET .../discussions/:did.
pub(super) async fn get_discussion(
    State(s): State<Shared>,
    Path((id, iid, did)): Path<(String, i64, String)>,
    call: Call,
) -> Answer {
    s.check(&call, &Value::Null)?;
    s.with_project(&id, |p, _| {
        ok(discussion_json(discussion_mut(mr_mut(p, iid)?, &did)?))
    })
}

/// Check a diff note's `position` against the merge request as GitLab does: position_type
/// `text`, the three SHAs of its `diff_refs`, and a line of the diff: `new_line` alone for an
/// added line, `old_line` alone for a removed one, both for an unchanged one.
fn check_position(mr: &MergeRequest, pos: &Value) -> Result<(), Response> {
    for key in ["position_type", "base_sha", "start_sha", "head_sha"] {
        if pos[key].as_str().is_none_or(str::is_empty) {
            return Err(param_error(&format!("position[{key}] is missing")));
        }
    }
    if pos["position_type"] != "text" {
        return Err(param_error(
            "position[position_type] does not have a valid value",
        ));
    }
    let refs = &mr.json["diff_refs"];
    for key in ["base_sha", "start_sha", "head_sha"] {
        if pos[key] != refs[key] {
            return Err(gl_error(
                400,
                format!(
                    "400 Bad request - Note {{:position=>[\"{key} is not one of the merge request's diff refs\"]}}"
                ),
            ));
        }
    }
    let files = parse_diff(&mr.diff);
    let new_path = pos["new_path"]
        .as_str()
        .or(pos["old_path"].as_str())
        .unwrap_or_default();
    let old_path = pos["old_path"].as_str().unwrap_or(new_path);
    let Some(file) = files.iter().find(|f| f.new_path == new_path) else {
        return Err(gl_error(400, LINE_CODE_ERROR));
    };
    let paths_ok = file.old_path == old_path || (file.new_file && old_path == new_path);
    let line = |k: &str| {
        pos[k]
            .as_i64()
            .or_else(|| pos[k].as_str().and_then(|s| s.parse().ok()))
    };
    let on = match (line("old_line"), line("new_line")) {
        (None, Some(n)) => file.added.contains(&n),
        (Some(o), None) => file.removed.contains(&o),
        (Some(o), Some(n)) => file.context.get(&o) == Some(&n),
        (None, None) => false,
    };
    if !(paths_ok && on) {
        return Err(gl_error(400, LINE_CODE_ERROR));
    }
    // A multi-line comment: both ends must be lines of the file, by line code, and the range
    // must end at the line the note is on.
    if let Some(range) = pos.get("line_range").filter(|r| !r.is_null()) {
        let end_of = |key: &str| -> Option<(Option<i64>, Option<i64>)> {
            let end = &range[key];
            let lines = *file.codes.get(end["line_code"].as_str()?)?;
            let given = (end["old_line"].as_i64(), end["new_line"].as_i64());
            (given == lines).then_some(lines)
        };
        match (end_of("start"), end_of("end")) {
            (Some(_), Some(end)) if end == (line("old_line"), line("new_line")) => {}
            _ => return Err(gl_error(400, LINE_CODE_ERROR)),
        }
    }
    Ok(())
}

/// POST .../discussions {body, position?}: a diff discussion (checked) or a plain one.
pub(super) async fn post_discussion(
    State(s): State<Shared>,
    Path((id, iid)): Path<(String, i64)>,
    call: Call,
    body: Bytes,
) -> Answer {
    let params = call.params(&body);
    s.check(&call, &params)?;
    s.with_project(&id, |p, s| {
        let pid = p.id;
        let mr = mr_mut(p, iid)?;
        let text = body_param(&params)?;
        let position = params.get("position").filter(|v| !v.is_null());
        let note = match position {
            Some(pos) => {
                check_position(mr, pos)?;
                new_note(s, pid, &mr.json, &text, json!("DiffNote"), Some(pos))
            }
            None => new_note(s, pid, &mr.json, &text, json!("DiscussionNote"), None),
        };
        let d = Discussion {
            id: s.hex_id(),
            individual_note: false,
            notes: vec![note],
        };
        let out = discussion_json(&d);
        mr.discussions.push(d);
        created(out)
    })
}

/// POST .../discussions/:did/notes {body}: a reply, of the discussion's type and position.
pub(super) async fn post_discussion_note(
    State(s): State<Shared>,
    Path((id, iid, did)): Path<(String, i64, String)>,
    call: Call,
    body: Bytes,
) -> Answer {
    let params = call.params(&body);
    s.check(&call, &params)?;
    s.with_project(&id, |p, s| {
        let pid = p.id;
        let mr = mr_mut(p, iid)?;
        let mr_json = mr.json.clone();
        let d = discussion_mut(mr, &did)?;
        if d.individual_note {
            return Err(gl_error(
                400,
                "400 Bad request - Cannot reply to an individual note",
            ));
        }
        let text = body_param(&params)?;
        let first = &d.notes[0];
        let note = new_note(
            s,
            pid,
            &mr_json,
            &text,
            first["type"].clone(),
            first.get("position"),
        );
        d.notes.push(note.clone());
        created(note)
    })
}

/// PUT .../discussions/:did?resolved=true|false: (un)resolve every resolvable note.
pub(super) async fn put_discussion(
    State(s): State<Shared>,
    Path((id, iid, did)): Path<(String, i64, String)>,
    call: Call,
    body: Bytes,
) -> Answer {
    let params = call.params(&body);
    s.check(&call, &params)?;
    let resolved = match &params["resolved"] {
        Value::Bool(b) => *b,
        Value::String(v) if v == "true" => true,
        Value::String(v) if v == "false" => false,
        Value::Null => return Err(param_error("resolved is missing")),
        _ => return Err(param_error("resolved is invalid")),
    };
    s.with_project(&id, |p, _| {
        let d = discussion_mut(mr_mut(p, iid)?, &did)?;
        if !d.notes.iter().any(|n| n["resolvable"] == json!(true)) {
            return Err(gl_error(
                400,
                "400 Bad request - Discussion is not resolvable",
            ));
        }
        for n in &mut d.notes {
            if n["resolvable"] == json!(true) {
                n["resolved"] = json!(resolved);
                n["resolved_by"] = if resolved {
                    user_json(FakeGitLab::BOT_USER_ID, FakeGitLab::BOT_USERNAME)
                } else {
                    Value::Null
                };
            }
        }
        ok(discussion_json(d))
    })
}

/// POST .../approve {sha?}: approve as the bot user. A `sha` other than the head is 409; an
/// approval already given is 401 (as GitLab answers); [`FakeGitLab::refuse_approvals`] makes
/// every approval fail.
pub(super) async fn post_approve(
    State(s): State<Shared>,
    Path((id, iid)): Path<(String, i64)>,
    call: Call,
    body: Bytes,
) -> Answer {
    let params = call.params(&body);
    s.check(&call, &params)?;
    let refusal = s.lock().approval_refusal.clone();
    s.with_project(&id, |p, _| {
        let mr = mr_mut(p, iid)?;
        if let Some((status, message)) = refusal {
            return Err(gl_error(status, message));
        }
        let head = mr.json["sha"].as_str().unwrap_or_default().to_owned();
        if let Some(sha) = params["sha"].as_str()
            && sha != head
        {
            return Err(gl_error(409, "SHA does not match HEAD of source branch"));
        }
        if !mr.approvals.is_empty() {
            return Err(gl_error(401, "401 Unauthorized"));
        }
        mr.approvals.push(head);
        created(json!({
            "id": mr.json["id"], "iid": iid, "approved": true,
            "approved_by": [{ "user": user_json(FakeGitLab::BOT_USER_ID, FakeGitLab::BOT_USERNAME) }],
        }))
    })
}
