-- Monthly budgets (issue 29; docs/review-service.md, "Monthly budget"). A repository's own
-- monthly budget in USD (as ReviewRow.cost), or null to fall under the global `monthly_budget`
-- setting, which caps the whole service. And one row per repository and UTC month whose budget
-- notice was posted: the replica whose INSERT ... ON CONFLICT DO NOTHING wrote the row posts
-- the one PR comment of that month, so no other replica repeats it.
ALTER TABLE repos ADD COLUMN monthly_budget REAL;
CREATE TABLE budget_notices (
    repo_full_name TEXT NOT NULL,
    month          TEXT NOT NULL,
    pr_number      INTEGER NOT NULL,
    posted_at      INTEGER NOT NULL,
    PRIMARY KEY (repo_full_name, month)
);
