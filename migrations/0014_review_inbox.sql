-- Accepted pull_request deliveries not yet turned into reviews (docs/architecture.md, "The
-- webhook inbox"). The webhook writes its delivery claim and this row in one transaction and
-- acknowledges; a replica then moves the rows, oldest first, into reviews and review_queue
-- rows. The review insert runs the stats rollup triggers, which is why it is not on the
-- acknowledgement's path. received_at: epoch milliseconds.
CREATE TABLE review_inbox (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    repo_full_name TEXT NOT NULL,
    pr_number      INTEGER NOT NULL,
    title          TEXT,
    "trigger"      TEXT,
    attempt        INTEGER NOT NULL DEFAULT 0,
    job            TEXT NOT NULL,
    received_at    INTEGER NOT NULL
);
