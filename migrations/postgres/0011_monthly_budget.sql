-- SQLite's 0020 one folder up (docs/review-service.md, "Monthly budget"): a repository's own
-- monthly budget in USD, or null to fall under the global `monthly_budget` setting; and one
-- row per repository and UTC month whose budget notice was posted, written with INSERT ... ON
-- CONFLICT DO NOTHING so that only the replica that wrote it posts the comment.
ALTER TABLE repos ADD COLUMN monthly_budget DOUBLE PRECISION;
CREATE TABLE budget_notices (
    repo_full_name TEXT NOT NULL,
    month          TEXT NOT NULL,
    pr_number      BIGINT NOT NULL,
    posted_at      BIGINT NOT NULL,
    PRIMARY KEY (repo_full_name, month)
);
