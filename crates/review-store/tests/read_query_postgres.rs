#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The chat tool's guard on PostgreSQL (docs/security.md, "The chat tool's SQL"): the reader
//! role's privileges, the one-query wrapper, the read-only transaction and the time cap hold
//! against the ways of reaching the settings table, the server's files, another role, a write
//! or a second statement. Each must be refused, and nothing of it may run. SQLite's guard has
//! its own suite (read_query_guard.rs).

mod common;

use review_domain::EpochSeconds;
use review_store::{READ_QUERY_MAX_ROWS, Store, StoreError};
use serde_json::json;

const SECRET: &str = "sk-ant-canary-1234567890";

async fn store_with_secret() -> Option<common::TestStore> {
    let store = common::postgres().await?;
    store
        .put_setting("agent_api_key", Some(SECRET))
        .await
        .unwrap();
    Some(store)
}

/// Every refused query: an error that is a refusal or PostgreSQL's own error, never rows, and
/// its text does not carry the secret.
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

async fn count(store: &Store, sql: &str) -> i64 {
    sqlx::query_scalar(sql)
        .fetch_one(store.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn the_settings_table_is_unreachable_by_any_path() {
    let Some(store) = store_with_secret().await else {
        return;
    };
    // A view over the secrets, made by someone with write access, does not open them either.
    sqlx::query("CREATE VIEW leak AS SELECT key, value FROM settings")
        .execute(store.pool())
        .await
        .unwrap();
    for sql in [
        "SELECT * FROM settings",
        "select VALUE from SETTINGS",
        "SELECT value FROM public.settings",
        "SELECT \"value\" FROM \"settings\"",
        "SELECT count(*) FROM settings",
        "TABLE settings",
        "WITH s AS (SELECT * FROM settings) SELECT * FROM s",
        "SELECT (SELECT string_agg(value, ',') FROM settings)",
        "SELECT * FROM reviews WHERE EXISTS (SELECT 1 FROM settings WHERE value LIKE 'sk-%')",
        "SELECT * FROM leak",
        "SELECT query_to_xml('SELECT * FROM settings', true, true, '')",
        "SELECT table_to_xml('settings', true, true, '')",
        "SELECT set_config('role', 'none', true), query_to_xml('SELECT value FROM settings', true, true, '')",
        "SELECT * FROM chat_reader",
        "SELECT rolpassword FROM pg_authid",
        "SELECT * FROM pg_read_file('/etc/passwd')",
        "SELECT pg_read_file('PG_VERSION')",
        "SELECT pg_ls_dir('.')",
        "SELECT lo_import('/etc/passwd')",
    ] {
        let text = assert_refused(&store, sql).await;
        if sql.contains("settings") && !sql.contains("leak") {
            assert!(text.contains("settings"), "{sql}: {text}");
        }
    }
}

#[tokio::test]
async fn another_role_cannot_be_taken() {
    let Some(store) = store_with_secret().await else {
        return;
    };
    for sql in [
        "SET ROLE postgres",
        "RESET ROLE",
        "SET SESSION AUTHORIZATION postgres",
        "SELECT set_config('role', 'postgres', false)",
        "SELECT set_config('session_authorization', 'postgres', false)",
    ] {
        assert_refused(&store, sql).await;
    }
    // Whatever a query sets, it is the reader's own role again and cannot read the secrets.
    let who = store
        .read_query(
            "SELECT set_config('role', 'none', false) AS r, current_user AS u, session_user AS s",
        )
        .await
        .unwrap();
    let reader = who.rows[0][2].clone();
    assert!(
        reader.as_str().unwrap().starts_with("review_chat_"),
        "{who:?}"
    );
    assert_eq!(who.rows[0][1], reader);
    assert_refused(&store, "SELECT value FROM settings").await;
}

#[tokio::test]
async fn writes_and_second_statements_are_refused_and_change_nothing() {
    let Some(store) = store_with_secret().await else {
        return;
    };
    store
        .insert_review(
            &review_store::NewReview {
                repo_full_name: "o/r".into(),
                pr_number: 1,
                title: None,
                trigger: None,
                attempt: 0,
                head_sha: None,
            },
            EpochSeconds(100),
        )
        .await
        .unwrap();
    for sql in [
        "DELETE FROM reviews",
        "UPDATE reviews SET status = 'failed'",
        "INSERT INTO settings VALUES ('x', 'y')",
        "DROP TABLE reviews",
        "CREATE TABLE pwn (x int)",
        "TRUNCATE reviews",
        "WITH d AS (DELETE FROM reviews RETURNING *) SELECT * FROM d",
        "WITH x AS (SELECT 1) DELETE FROM reviews",
        "DELETE FROM reviews RETURNING *",
        "SELECT 1; DELETE FROM reviews",
        "SELECT 1; SELECT * FROM settings",
        "SELECT 1 /* ; */ ; DELETE FROM reviews",
        "SELECT 1) AS q; DELETE FROM reviews; SELECT (1",
        "SELECT 1 -- x\n; DELETE FROM reviews",
        "COPY reviews TO '/tmp/pwn'",
        "COPY (SELECT 1) TO PROGRAM 'touch /tmp/pwn'",
        "SELECT * INTO pwn FROM reviews",
        "SELECT * FROM reviews FOR UPDATE",
        "SELECT nextval('reviews_id_seq')",
        "SET statement_timeout = 0",
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity",
        "PREPARE p AS SELECT 1",
        "DO $$ BEGIN DELETE FROM reviews; END $$",
    ] {
        assert_refused(&store, sql).await;
    }
    assert_eq!(count(&store, "SELECT count(*) FROM reviews").await, 1);
    assert_eq!(
        count(
            &store,
            "SELECT count(*) FROM settings WHERE key = 'agent_api_key'"
        )
        .await,
        1
    );
    assert_eq!(
        count(
            &store,
            "SELECT count(*) FROM pg_tables WHERE tablename = 'pwn'"
        )
        .await,
        0
    );
    for sql in ["SELECT 1; SELECT 2", "SELECT $1::int", "SELECT $1"] {
        let text = assert_refused(&store, sql).await;
        assert!(
            text.contains("one statement") || text.contains("bind parameters"),
            "{sql}: {text}"
        );
    }
}

#[tokio::test]
async fn long_and_large_queries_are_stopped() {
    let Some(store) = store_with_secret().await else {
        return;
    };
    // The server's time cap, also when the query tries to lift it.
    for sql in [
        "SELECT pg_sleep(30)",
        "SELECT set_config('statement_timeout', '0', true), pg_sleep(30)",
    ] {
        let started = std::time::Instant::now();
        let err = store.read_query(sql).await.unwrap_err();
        assert!(matches!(err, StoreError::QueryTimeout(_)), "{sql}: {err}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(9),
            "{sql}"
        );
    }
    // A value over the size cap is refused, not sent.
    let err = store
        .read_query("SELECT repeat('x', 2000000) AS big")
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Query { message, .. } if message.contains("larger than")),
        "{err}"
    );
    // Rows past the cap are cut and say so.
    let r = store
        .read_query("SELECT g FROM generate_series(1, 100000) AS g")
        .await
        .unwrap();
    assert_eq!((r.rows.len(), r.truncated), (READ_QUERY_MAX_ROWS, true));
    assert_eq!(r.rows[0], vec![json!(1)]);
    // The store still answers.
    assert_eq!(
        store.read_query("SELECT 1 AS one").await.unwrap().rows,
        vec![vec![json!(1)]]
    );
}

#[tokio::test]
async fn ordinary_questions_still_work() {
    let Some(store) = store_with_secret().await else {
        return;
    };
    let r = store
        .read_query(
            "SELECT status, count(*) AS n, avg(cost) AS a, now() > '2020-01-01' AS recent,
                    ARRAY[1, 2] AS arr, '{\"k\": 1}'::jsonb AS doc, 'a' AS x, 'b' AS x
             FROM reviews GROUP BY status
             UNION ALL SELECT 'none', 0, NULL, true, ARRAY[3], NULL, 'c', 'd'",
        )
        .await
        .unwrap();
    assert_eq!(
        r.columns,
        vec!["status", "n", "a", "recent", "arr", "doc", "x", "x"]
    );
    assert_eq!(
        r.rows,
        vec![vec![
            json!("none"),
            json!(0),
            json!(null),
            json!(true),
            json!([3]),
            json!(null),
            json!("c"),
            json!("d")
        ]]
    );
    let tables = store
        .read_query("SELECT count(*) FROM information_schema.tables WHERE table_name = 'reviews'")
        .await
        .unwrap();
    assert_eq!(tables.rows, vec![vec![json!(1)]]);
    let long = store
        .read_query("SELECT repeat('é', 5000) AS body;")
        .await
        .unwrap();
    assert_eq!(
        long.rows[0][0].as_str().unwrap().chars().count(),
        review_store::READ_QUERY_CELL_CHARS + 1
    );
}

/// A database user without CREATEROLE cannot create the reader role: the store does not
/// start without its guard, and says what to grant (docs/operations.md, PostgreSQL).
#[tokio::test]
async fn a_user_without_createrole_gets_a_clear_error_at_first_start() {
    use sqlx::Connection;
    let Some(url) = common::fresh_database_url().await else {
        return;
    };
    let database = url.rsplit('/').next().unwrap().to_owned();
    let user = format!("app_{database}");
    let admin_url = std::env::var(common::DATABASE_URL_VAR).unwrap();
    let mut admin = sqlx::postgres::PgConnection::connect(&admin_url)
        .await
        .unwrap();
    for sql in [
        format!("CREATE ROLE {user} LOGIN PASSWORD 'pw' NOCREATEROLE"),
        format!("ALTER DATABASE {database} OWNER TO {user}"),
    ] {
        sqlx::query(&sql).execute(&mut admin).await.unwrap();
    }
    admin.close().await.unwrap();
    let mut as_user = url::Url::parse(&url).unwrap();
    as_user.set_username(&user).unwrap();
    as_user.set_password(Some("pw")).unwrap();
    let err = Store::open(as_user.as_str()).await.err().unwrap();
    assert!(
        matches!(&err, StoreError::ReaderRole(_)) && err.to_string().contains("CREATEROLE"),
        "{err}"
    );
}
