-- SQLite's 0015 one folder up (docs/architecture.md, "One review per head"): the head SHA a
-- review was queued for, so a second delivery for the same head is recorded skipped.
ALTER TABLE reviews ADD COLUMN head_sha TEXT;
ALTER TABLE review_inbox ADD COLUMN head_sha TEXT;
CREATE INDEX reviews_pr_head ON reviews (repo_full_name, pr_number, head_sha);
