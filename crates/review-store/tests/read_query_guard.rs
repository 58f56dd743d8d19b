#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The chat tool's guard (docs/security.md, "The chat tool's SQL") against the ways of reaching
//! the settings table or running a second statement that a security review found or that
//! belong to the same class: bind-parameter tokens of every SQLite form, comments, CTEs,
//! views, the schema table, pragma functions, `dbstat`, ATTACH, and values built to exhaust
//! memory. Each must be refused, and nothing of it may run.

use review_store::{Store, StoreError};
use serde_json::json;

const SECRET: &str = "sk-ant-canary-1234567890";

async fn store_with_secret() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/review.db", dir.path().display());
    let store = Store::open(&url).await.unwrap();
    store
        .put_setting("agent_api_key", Some(SECRET))
        .await
        .unwrap();
    (dir, store)
}

/// Every refused query: the error is a refusal (or SQLite's own error), never rows, and its
/// text does not carry the secret.
async fn assert_refused(store: &Store, sql: &str) -> String {
    match store.read_query(sql).await {
        Ok(r) => panic!("{sql:?} answered {r:?}"),
        Err(e) => {
            let text = e.to_string();
            assert!(!text.contains(SECRET), "{sql:?}: {text}");
            assert!(
                matches!(e, StoreError::QueryRefused(_) | StoreError::Query { .. }),
                "{sql:?}: {e:?}"
            );
            text
        }
    }
}

#[tokio::test]
async fn statements_hidden_in_bind_parameter_tokens_never_run() {
    let (dir, store) = store_with_secret().await;
    let target = dir.path().join("pwn.db");
    let t = target.display();
    // SQLite reads `$name(...)` (Tcl style) as one variable token when the parentheses hold no
    // white space, so a `;` inside it is no statement end to SQLite but was one to a scanner.
    for sql in [
        format!("SELECT $1(;);ATTACH DATABASE '{t}' AS pwn"),
        format!("SELECT $a(;);ATTACH'{t}'AS\"pwn\""),
        format!("SELECT :a(;);ATTACH DATABASE '{t}' AS pwn"),
        format!("SELECT @a(;);ATTACH DATABASE '{t}' AS pwn"),
        format!("SELECT $a::b(;);ATTACH DATABASE '{t}' AS pwn"),
        format!("SELECT $1(; ATTACH DATABASE '{t}' AS pwn; SELECT 1)"),
        format!("SELECT 1 WHERE $x(;) IS NULL; ATTACH DATABASE '{t}' AS pwn"),
        "SELECT $1(;);SELECT value FROM settings".to_owned(),
    ] {
        assert_refused(&store, &sql).await;
    }
    for sql in [
        "SELECT ?",
        "SELECT ?1",
        "SELECT :name",
        "SELECT @name",
        "SELECT $a(;)",
        "SELECT $a::b(x;y)",
    ] {
        let text = assert_refused(&store, sql).await;
        assert!(text.contains("bind parameters"), "{sql}: {text}");
    }
    assert!(!target.exists(), "an ATTACH ran");
}

#[tokio::test]
async fn a_second_statement_is_refused_before_the_first_runs() {
    let (dir, store) = store_with_secret().await;
    let target = dir.path().join("second.db");
    let t = target.display();
    for sql in [
        format!("SELECT 1; ATTACH DATABASE '{t}' AS x"),
        format!("SELECT 1 /* ; */ ; ATTACH DATABASE '{t}' AS x"),
        format!("SELECT 1 -- x\n; ATTACH DATABASE '{t}' AS x"),
        "SELECT 1; SELECT * FROM settings".to_owned(),
        "SELECT 1; DELETE FROM reviews".to_owned(),
        "SELECT 'a;b'; PRAGMA query_only = OFF".to_owned(),
    ] {
        let text = assert_refused(&store, &sql).await;
        assert!(text.contains("one statement"), "{sql}: {text}");
    }
    assert!(!target.exists(), "an ATTACH ran");
    // Trailing semicolons and comments are not a second statement.
    for sql in [
        "SELECT 1;",
        "SELECT 1;;  ",
        "SELECT 1; -- done",
        "SELECT 1 /* ; */",
    ] {
        assert_eq!(
            store.read_query(sql).await.unwrap().rows,
            vec![vec![json!(1)]],
            "{sql}"
        );
    }
}

#[tokio::test]
async fn the_settings_table_is_unreachable_by_any_path() {
    let (_dir, store) = store_with_secret().await;
    // A view over the secrets, made by someone with write access, does not open them either.
    sqlx::query("CREATE VIEW leak AS SELECT key, value FROM settings")
        .execute(store.pool())
        .await
        .unwrap();
    for sql in [
        "SELECT * FROM settings",
        "select VALUE from SETTINGS",
        "SELECT value FROM main.settings",
        "SELECT \"value\" FROM \"settings\"",
        "SELECT [value] FROM [settings]",
        "SELECT count(*) FROM settings",
        "SELECT rowid FROM settings",
        "SELECT EXISTS (SELECT 1 FROM settings WHERE value LIKE 'sk-%')",
        "SELECT (SELECT group_concat(value) FROM settings) AS v",
        "WITH s AS (SELECT * FROM settings) SELECT * FROM s",
        "WITH RECURSIVE s(v) AS (SELECT value FROM settings) SELECT v FROM s",
        "SELECT * FROM reviews WHERE title IN (SELECT value FROM settings)",
        "SELECT * FROM reviews UNION ALL SELECT key, value, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 FROM settings",
        "SELECT * FROM leak",
        "SELECT sql FROM sqlite_master",
        "SELECT * FROM sqlite_schema WHERE name = 'settings'",
        "SELECT * FROM temp.sqlite_master",
        "SELECT * FROM pragma_table_info('settings')",
        "SELECT * FROM pragma_database_list",
        "SELECT pragma_table_info.name FROM pragma_table_info('settings')",
        "SELECT * FROM dbstat",
        "SELECT pgsize FROM dbstat WHERE name = 'settings'",
        "SELECT * FROM sqlite_dbpage",
        "PRAGMA table_info(settings)",
        "ATTACH DATABASE ':memory:' AS other",
        "SELECT load_extension('/tmp/x.so')",
    ] {
        assert_refused(&store, sql).await;
    }
    let text = assert_refused(&store, "SELECT value FROM settings").await;
    assert!(text.contains("settings table is not readable"), "{text}");
}

#[tokio::test]
async fn writes_are_refused_and_change_nothing() {
    let (_dir, store) = store_with_secret().await;
    for sql in [
        "DELETE FROM reviews",
        "INSERT INTO repos (full_name, installation_id, enabled, created_at) VALUES ('a/b', 1, 0, 0)",
        "UPDATE settings SET value = 'x'",
        "WITH x AS (SELECT 1) DELETE FROM reviews",
        "CREATE TEMP VIEW v AS SELECT * FROM settings",
        "CREATE TEMP TABLE t (x)",
        "DROP TABLE reviews",
        "PRAGMA query_only = OFF",
        "VACUUM",
        "BEGIN",
    ] {
        assert_refused(&store, sql).await;
    }
    assert_eq!(
        store
            .settings()
            .await
            .unwrap()
            .get("agent_api_key")
            .map(String::as_str),
        Some(SECRET)
    );
    let repos: i64 = sqlx::query_scalar("SELECT count(*) FROM repos")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(repos, 0);
}

#[tokio::test]
async fn values_too_large_to_allocate_are_refused_or_null() {
    let (_dir, store) = store_with_secret().await;
    // SQLITE_LIMIT_LENGTH (1 MiB) stops each of these before it allocates: SQLite answers
    // "string or blob too big", or, for printf, NULL (its buffer refuses to grow).
    for sql in [
        "SELECT printf('%.*c', 500000000, 'x')",
        "SELECT printf('%.*c', 2000000, 'x')",
        "SELECT randomblob(1000000000)",
        "SELECT zeroblob(1000000000)",
        "SELECT replace(hex(zeroblob(600000)), '0', 'xx')",
        "SELECT group_concat(printf('%.*c', 100000, 'x')) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100) SELECT x FROM c)",
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT length(group_concat('xxxxxxxxxx')) FROM c",
    ] {
        match store.read_query(sql).await {
            Ok(r) => assert_eq!(r.rows, vec![vec![json!(null)]], "{sql}"),
            Err(e) => assert!(e.to_string().contains("too big"), "{sql}: {e}"),
        }
    }
    // Values under the cap are fine.
    assert_eq!(
        store
            .read_query("SELECT length(printf('%.*c', 1000, 'x'))")
            .await
            .unwrap()
            .rows,
        vec![vec![json!(1000)]]
    );
}

#[tokio::test]
async fn ordinary_questions_still_work() {
    let (_dir, store) = store_with_secret().await;
    for sql in [
        "SELECT count(*) FROM reviews",
        "SELECT status, count(*) FROM reviews GROUP BY status",
        "WITH r AS (SELECT * FROM reviews) SELECT count(*) FROM r",
        "SELECT date(created_at, 'unixepoch') AS day, sum(cost) FROM reviews GROUP BY day",
        "SELECT f.path, count(*) FROM findings f JOIN reviews r ON r.id = f.review_id GROUP BY f.path",
        "SELECT value FROM json_each('[1,2,3]')",
        "SELECT * FROM stats_day_repo LIMIT 1",
        "VALUES (1), (2)",
        "SELECT 'settings' AS word",
    ] {
        store
            .read_query(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
}

#[tokio::test]
async fn an_in_memory_store_is_guarded_the_same_way() {
    let store = Store::open("sqlite::memory:").await.unwrap();
    store
        .put_setting("agent_api_key", Some(SECRET))
        .await
        .unwrap();
    assert_eq!(
        store
            .read_query("SELECT count(*) FROM reviews")
            .await
            .unwrap()
            .rows,
        vec![vec![json!(0)]]
    );
    assert_refused(&store, "SELECT * FROM settings").await;
}
