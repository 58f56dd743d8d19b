-- SQLite's 0016 one folder up (docs/review-service.md, "Minimum severity and quiet reviews"): a
-- repository's own review_min_severity, or null to follow the global setting.
ALTER TABLE repos ADD COLUMN min_severity TEXT;
