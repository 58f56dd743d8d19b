-- Candidate inline findings that verification dropped (issue 27; docs/review-service.md,
-- "Verification before posting"): never posted, kept with the verifier's reason so the review
-- page can show them. Not findings: no stats rollup, no re-review memory reads them.
CREATE TABLE dropped_findings (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    review_id      INTEGER NOT NULL,
    repo_full_name TEXT NOT NULL,
    pr_number      INTEGER NOT NULL,
    path           TEXT NOT NULL,
    line           INTEGER NOT NULL,
    severity       TEXT NOT NULL CHECK (severity IN ('blocking', 'nit', 'question')),
    body           TEXT NOT NULL,
    reason         TEXT NOT NULL,
    created_at     INTEGER NOT NULL
);
CREATE INDEX dropped_findings_review ON dropped_findings (review_id, id);
