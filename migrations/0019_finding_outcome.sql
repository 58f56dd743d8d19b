-- What became of a posted inline finding (docs/review-service.md, "Finding outcomes"): open
-- until a later head's recheck finds the problem gone (resolved, with the head SHA) or a person
-- answers it as intended or thumbs it down (dismissed). Null for summary and comment rows.
-- Inline rows recorded before this existed start open.
ALTER TABLE findings ADD COLUMN outcome TEXT;
ALTER TABLE findings ADD COLUMN outcome_at INTEGER;
ALTER TABLE findings ADD COLUMN outcome_sha TEXT;
ALTER TABLE findings ADD COLUMN outcome_reason TEXT;
UPDATE findings SET outcome = 'open' WHERE kind = 'inline';
CREATE INDEX findings_open ON findings (repo_full_name, pr_number) WHERE outcome = 'open';
