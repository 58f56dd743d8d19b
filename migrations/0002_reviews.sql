-- spec/review-service.md section 2, ReviewRow.
CREATE TABLE reviews (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    repo_full_name TEXT NOT NULL,
    pr_number      INTEGER NOT NULL,
    title          TEXT,
    session_id     TEXT,
    status         TEXT NOT NULL CHECK (status IN ('pending', 'running', 'completed', 'failed', 'skipped')),
    error          TEXT,
    "trigger"      TEXT,
    attempt        INTEGER NOT NULL DEFAULT 0,
    cost           REAL,
    tokens         INTEGER,
    model          TEXT,
    check_run_id   INTEGER,
    patch_id       TEXT,
    created_at     INTEGER NOT NULL,
    completed_at   INTEGER
);
CREATE INDEX reviews_repo_pr ON reviews (repo_full_name, pr_number, id);
CREATE INDEX reviews_created_at ON reviews (created_at);
CREATE INDEX reviews_status ON reviews (status, id);
