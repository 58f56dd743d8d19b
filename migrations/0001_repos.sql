-- spec/review-service.md section 2, RepoRow. enabled is 0/1; timestamps are epoch seconds.
CREATE TABLE repos (
    full_name       TEXT PRIMARY KEY NOT NULL,
    installation_id INTEGER NOT NULL,
    prompt          TEXT,
    model           TEXT,
    enabled         INTEGER NOT NULL DEFAULT 0 CHECK (enabled IN (0, 1)),
    created_at      INTEGER NOT NULL
);
