-- The head SHA a review was queued for (issue 26, "one review per PR head";
-- docs/architecture.md, "One review per head"). A pull_request delivery for a head that already
-- has a pending, running or completed review of the same PR is recorded skipped instead of
-- reviewed again. Rows written before this migration have none and never match.
ALTER TABLE reviews ADD COLUMN head_sha TEXT;
ALTER TABLE review_inbox ADD COLUMN head_sha TEXT;
CREATE INDEX reviews_pr_head ON reviews (repo_full_name, pr_number, head_sha);
