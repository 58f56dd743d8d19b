-- A repository's own review_min_severity (issue 27, "Less noise by setting";
-- docs/review-service.md, "Minimum severity and quiet reviews"): nit, question or blocking, or
-- null to follow the global setting.
ALTER TABLE repos ADD COLUMN min_severity TEXT;
