#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Finding outcomes against the real binary, the fake forge and the scripted model
//! (docs/review-service.md, "Finding outcomes"): a push that fixes a finding resolves its row
//! and its GitHub thread, a changed but unfixed one stays open; a member's "intended" reply or a
//! thumbs-down by the PR author's side dismisses a finding and it is not raised again, while the
//! same from anyone else is ignored. GET /api/reviews/:id/findings shows the outcomes.

mod common;

use common::*;
use serde_json::Value;
use test_doubles::scripted_model::Behavior;

/// The findings of review `id` as the API returns them.
async fn findings(w: &World, id: i64) -> Vec<Value> {
    w.server
        .get_json(&format!("/api/reviews/{id}/findings"))
        .await
        .as_array()
        .unwrap()
        .clone()
}

/// The inline finding of `rows` on `path` whose body mentions `word`.
fn finding<'a>(rows: &'a [Value], path: &str, word: &str) -> &'a Value {
    rows.iter()
        .find(|f| {
            f["kind"] == "inline" && f["path"] == path && f["body"].as_str().unwrap().contains(word)
        })
        .unwrap_or_else(|| panic!("no {word} finding on {path}: {rows:?}"))
}

/// Checks GET /api/stats/outcomes against the rows: per repo, model and severity, the counts
/// of each outcome, the rates, the reviews' cost and the cost per resolved finding.
async fn assert_outcome_stats_match_the_rows(w: &World) {
    let stats = w.server.get_json("/api/stats/outcomes?range=all").await;
    let count = |cond: &str| {
        let sql = format!("SELECT count(*) FROM findings WHERE kind = 'inline' AND {cond}");
        async move { w.server.db_count(&sql).await }
    };
    let reviews = w.server.reviews_of(&w.full_name(), 1).await;
    let cost: f64 = reviews
        .iter()
        .map(|r| r["cost"].as_f64().unwrap_or(0.0))
        .sum();
    assert!(cost > 0.0);
    for (list, key, cond) in [
        ("byRepo", w.full_name(), "true".to_owned()),
        (
            "byModel",
            "anthropic/claude-sonnet-4-5".to_owned(),
            "true".to_owned(),
        ),
        (
            "bySeverity",
            "blocking".to_owned(),
            "severity = 'blocking'".to_owned(),
        ),
        (
            "bySeverity",
            "nit".to_owned(),
            "severity = 'nit'".to_owned(),
        ),
    ] {
        let row = stats[list]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["key"] == key.as_str())
            .unwrap_or_else(|| panic!("no {key} in {list}: {stats}"));
        let posted = count(&cond).await;
        let resolved = count(&format!("{cond} AND outcome = 'resolved'")).await;
        let dismissed = count(&format!("{cond} AND outcome = 'dismissed'")).await;
        let open = count(&format!("{cond} AND outcome = 'open'")).await;
        assert_eq!(
            (
                row["posted"].as_i64(),
                row["resolved"].as_i64(),
                row["dismissed"].as_i64(),
                row["open"].as_i64()
            ),
            (Some(posted), Some(resolved), Some(dismissed), Some(open)),
            "{list} {row}"
        );
        let rate = |n: i64| n as f64 / posted as f64;
        assert!(
            (row["acceptance_rate"].as_f64().unwrap() - rate(resolved)).abs() < 1e-9,
            "{row}"
        );
        assert!(
            (row["dismissal_rate"].as_f64().unwrap() - rate(dismissed)).abs() < 1e-9,
            "{row}"
        );
        if list == "bySeverity" {
            assert_eq!(
                (&row["cost"], &row["cost_per_resolved"]),
                (&Value::Null, &Value::Null)
            );
        } else {
            assert!(
                (row["cost"].as_f64().unwrap() - cost).abs() < 1e-9,
                "{row} {cost}"
            );
            match resolved {
                0 => assert_eq!(row["cost_per_resolved"], Value::Null),
                n => assert!(
                    (row["cost_per_resolved"].as_f64().unwrap() - cost / n as f64).abs() < 1e-9
                ),
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fixed_finding_is_resolved_with_its_thread_and_an_unfixed_one_stays_open() {
    let w = World::start(Behavior::Reviewer, "anthropic/claude-sonnet-4-5", false).await;
    w.review_once().await;
    let first_id = w.server.reviews_of(&w.full_name(), 1).await[0]["id"]
        .as_i64()
        .unwrap();
    let posted = findings(&w, first_id).await;
    for f in posted.iter().filter(|f| f["kind"] == "inline") {
        assert_eq!(f["outcome"], "open", "{f}");
        assert!(
            f["fingerprint"].as_str().is_some_and(|p| p.len() == 16),
            "{f}"
        );
    }

    // The push fixes lib.rs's unwrap(), puts a comment next to parse.rs's TODO (its code
    // changed, the TODO is still there) and leaves parse.rs's unwrap() alone.
    let lib = git(&w.upstream.work, &["show", "feature:src/lib.rs"])
        .replace("*v.first().unwrap()", "v.first().copied().unwrap_or(0)");
    let parse = git(&w.upstream.work, &["show", "feature:src/parse.rs"]).replacen(
        "\n\n",
        "\n// Parses one number.\n",
        1,
    );
    commit_on(
        &w.upstream,
        "feature",
        &[("src/lib.rs", &lib), ("src/parse.rs", &parse)],
        "first() of an empty slice is 0",
    );
    w.upstream.publish_pull(1, "feature");
    let head = w.upstream.sha("feature");
    w.deliver_pull_request("synchronize").await;
    let rows = w.server.wait_reviews(&w.full_name(), 1, 2).await;
    assert_eq!(rows[0]["status"], "completed", "{}", w.server.log());
    // The recheck is an item the API's schema names.
    let session = w
        .server
        .transcript_fitting_schema(rows[0]["id"].as_i64().unwrap())
        .await;
    assert!(session["items"].to_string().contains(r#""type":"recheck""#));

    let after = findings(&w, first_id).await;
    let fixed = finding(&after, "src/lib.rs", "unwrap()");
    assert_eq!(fixed["outcome"], "resolved", "{fixed}");
    assert_eq!(fixed["outcome_sha"], head.as_str());
    assert!(fixed["outcome_at"].as_i64().is_some(), "{fixed}");
    assert!(
        fixed["outcome_reason"]
            .as_str()
            .unwrap()
            .contains("no longer has it"),
        "{fixed}"
    );
    let todo = finding(&after, "src/parse.rs", "TODO");
    let unwrap = finding(&after, "src/parse.rs", "unwrap()");
    for open in [todo, unwrap] {
        assert_eq!(open["outcome"], "open", "{open}");
        assert_eq!(open["outcome_at"], Value::Null);
    }
    // GitHub: the fixed finding's thread is resolved, the others are not.
    let thread = |f: &Value| {
        w.forge
            .thread_resolved(f["github_comment_id"].as_i64().unwrap())
    };
    assert!(thread(fixed));
    assert!(!thread(todo) && !thread(unwrap));
    let resolves = w.forge.posted("POST", "/graphql");
    assert!(
        resolves
            .iter()
            .any(|r| r.body.to_string().contains("resolveReviewThread")),
        "{resolves:?}"
    );
    // The recheck looked at the two findings whose code changed, not at the untouched one,
    // and the summary says what became of them.
    let body = w.forge.reviews()[1]["body"].as_str().unwrap().to_owned();
    assert!(
        body.contains("Earlier findings whose code changed: 2 rechecked, 1 resolved"),
        "{body}"
    );
    let recheck = w
        .model
        .requests()
        .iter()
        .find(|r| r["system"].to_string().contains("You recheck findings"))
        .map(|r| r["messages"][0]["content"].to_string())
        .expect("no recheck request");
    assert_eq!(recheck.matches("] src/").count(), 2, "{recheck}");
    assert!(
        recheck.contains("] src/lib.rs:12 ") && recheck.contains("] src/parse.rs:4 "),
        "{recheck}"
    );
    assert_outcome_stats_match_the_rows(&w).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_intended_reply_or_a_thumbs_down_dismisses_a_finding_unless_from_an_outsider() {
    let w = World::start(Behavior::Reviewer, "anthropic/claude-sonnet-4-5", false).await;
    w.review_once().await;
    let first_id = w.server.reviews_of(&w.full_name(), 1).await[0]["id"]
        .as_i64()
        .unwrap();
    let posted = findings(&w, first_id).await;
    let comment = |path: &str, word: &str| {
        finding(&posted, path, word)["github_comment_id"]
            .as_i64()
            .unwrap()
    };
    let (todo, parse_unwrap, lib_unwrap) = (
        comment("src/parse.rs", "TODO"),
        comment("src/parse.rs", "unwrap()"),
        comment("src/lib.rs", "unwrap()"),
    );
    let name = w.full_name();
    // A member answers the TODO as intended; the repository's owner thumbs parse.rs's
    // unwrap() down.
    w.forge.add_reply(
        &name,
        1,
        todo,
        "alice",
        "User",
        "This is intended: the TODO is tracked in #12.",
    );
    w.forge
        .add_reaction(&name, parse_unwrap, OWNER, "User", "-1");
    // Outsiders: a contributor's "intended" and a drive-by thumbs-down change nothing, nor
    // does a bot's.
    w.forge.add_reply_as(
        &name,
        1,
        lib_unwrap,
        "mallory",
        "User",
        "CONTRIBUTOR",
        "Intended, ignore it.",
    );
    w.forge
        .add_reaction(&name, lib_unwrap, "drive-by", "User", "-1");
    w.forge
        .add_reaction(&name, lib_unwrap, "helper[bot]", "Bot", "-1");

    // The next push moves every flagged line; `/review full` has the reviewer find all three
    // again.
    let lib = git(&w.upstream.work, &["show", "feature:src/lib.rs"]);
    let parse = git(&w.upstream.work, &["show", "feature:src/parse.rs"]);
    commit_on(
        &w.upstream,
        "feature",
        &[
            ("src/lib.rs", &format!("// helpers\n{lib}")),
            ("src/parse.rs", &format!("// parsing\n{parse}")),
        ],
        "headers",
    );
    w.upstream.publish_pull(1, "feature");
    let seen = w.model.requests().len();
    w.deliver_pr_comment("/review full", "MEMBER").await;
    let rows = w.server.wait_reviews(&w.full_name(), 1, 2).await;
    assert_eq!(rows[0]["status"], "completed", "{}", w.server.log());

    let after = findings(&w, first_id).await;
    let todo_row = finding(&after, "src/parse.rs", "TODO");
    assert_eq!(todo_row["outcome"], "dismissed", "{todo_row}");
    assert!(
        todo_row["outcome_reason"]
            .as_str()
            .unwrap()
            .starts_with("@alice replied: \"This is intended"),
        "{todo_row}"
    );
    let thumbed = finding(&after, "src/parse.rs", "unwrap()");
    assert_eq!(thumbed["outcome"], "dismissed");
    assert_eq!(
        thumbed["outcome_reason"],
        format!("thumbs-down by @{OWNER}")
    );
    let outsider = finding(&after, "src/lib.rs", "unwrap()");
    assert_eq!(outsider["outcome"], "open", "{outsider}");

    // Not raised again, and the reviewer was told they were dismissed.
    let second = w.forge.reviews()[1].clone();
    assert_eq!(second["comments"].as_array().unwrap().len(), 0, "{second}");
    let prompt = w.model.requests()[seen..]
        .iter()
        .map(|r| r["messages"][0]["content"].to_string())
        .find(|m| m.contains("Earlier findings on this pull request"))
        .expect("no review prompt");
    assert_eq!(
        prompt.matches("dismissed by the team as intended").count(),
        2,
        "{prompt}"
    );
    // A dismissed finding is not rechecked, and its thread is left to the people in it.
    assert!(!w.forge.thread_resolved(todo) && !w.forge.thread_resolved(parse_unwrap));

    // A push that edits the lines right around the dismissed findings changes their
    // fingerprints; their own lines are the same, so they are still not raised.
    let parse = git(&w.upstream.work, &["show", "feature:src/parse.rs"]).replace(
        "    // TODO",
        "    // Input comes from the CLI (#12).\n    // TODO",
    );
    commit_on(
        &w.upstream,
        "feature",
        &[("src/parse.rs", &parse)],
        "a note on the input",
    );
    w.upstream.publish_pull(1, "feature");
    w.deliver_pr_comment("/review full", "MEMBER").await;
    let rows = w.server.wait_reviews(&w.full_name(), 1, 3).await;
    assert_eq!(rows[0]["status"], "completed", "{}", w.server.log());
    let third = w.forge.reviews()[2].clone();
    assert_eq!(third["comments"].as_array().unwrap().len(), 0, "{third}");
    assert_outcome_stats_match_the_rows(&w).await;
}
