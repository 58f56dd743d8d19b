-- Covering indexes for repo- and model-filtered stats and charts (spec/review-service.md
-- section 4, Stats, rule on filters). Those filters cannot use the per-day rollups, so they
-- read their reviews from these indexes without touching the table: about 3x faster per query
-- than (model, created_at) plus a row lookup each (bench/review-stats). They replace the two
-- narrower indexes of 0006, whose columns are their prefix.
DROP INDEX IF EXISTS reviews_model_created;
DROP INDEX IF EXISTS reviews_repo_created;
CREATE INDEX reviews_model_cover
    ON reviews (model, created_at, status, repo_full_name, "trigger", cost, tokens, completed_at);
CREATE INDEX reviews_repo_cover
    ON reviews (repo_full_name, created_at, status, model, "trigger", cost, tokens, completed_at);
