-- spec/review-service.md section 2, FindingRow.
CREATE TABLE findings (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    review_id         INTEGER NOT NULL,
    repo_full_name    TEXT NOT NULL,
    pr_number         INTEGER NOT NULL,
    kind              TEXT NOT NULL CHECK (kind IN ('inline', 'summary', 'comment')),
    severity          TEXT CHECK (severity IN ('blocking', 'nit', 'question')),
    event             TEXT CHECK (event IN ('COMMENT', 'APPROVE', 'REQUEST_CHANGES')),
    path              TEXT,
    line              INTEGER,
    body              TEXT NOT NULL,
    github_review_id  INTEGER,
    github_comment_id INTEGER,
    created_at        INTEGER NOT NULL
);
CREATE INDEX findings_review ON findings (review_id, id);
CREATE INDEX findings_repo_pr ON findings (repo_full_name, pr_number);
