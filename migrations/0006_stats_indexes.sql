-- Indexes of the stats, charts and review-list queries (spec/review-service.md section 4,
-- Stats; section 8), each chosen with EXPLAIN QUERY PLAN against a 1M-review database
-- (bench/review-stats).
-- Completed reviews of a window, newest first, covered: the chart latency sample and its cap.
CREATE INDEX reviews_status_created ON reviews (status, created_at, completed_at, repo_full_name, model);
-- Repo- and model-filtered stats read only their reviews.
CREATE INDEX reviews_repo_created ON reviews (repo_full_name, created_at);
CREATE INDEX reviews_model_created ON reviews (model, created_at);
-- topCost walks cost downwards and stops after 5 matching rows.
CREATE INDEX reviews_cost ON reviews (cost);
-- Latency p95 walks durations downwards from the top and stops at the nearest rank.
CREATE INDEX reviews_duration ON reviews ((completed_at - created_at), created_at, repo_full_name, model)
    WHERE status = 'completed' AND completed_at IS NOT NULL;
-- Severity, findings per day and top files of a set of reviews, without reading findings rows.
CREATE INDEX findings_review_kind ON findings (review_id, kind, severity, path);
