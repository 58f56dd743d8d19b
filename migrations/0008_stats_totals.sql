-- All-time totals per repo and per file, kept by triggers like the daily rollups of 0007
-- (spec/review-service.md section 4, Stats): an unbounded window reads 50 repo rows and the top
-- files straight from here instead of summing every day (bench/review-stats).

CREATE TABLE stats_total_repo (
    repo TEXT PRIMARY KEY NOT NULL,
    reviews INTEGER NOT NULL, cost REAL NOT NULL, tokens INTEGER NOT NULL,
    dur_sum INTEGER NOT NULL, dur_n INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE stats_total_path (
    path TEXT PRIMARY KEY NOT NULL, n INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX stats_total_path_n ON stats_total_path (n, path);

INSERT INTO stats_total_repo
SELECT repo, sum(reviews), total(cost), sum(tokens), sum(dur_sum), sum(dur_n) FROM stats_day_repo GROUP BY repo;
INSERT INTO stats_total_path SELECT path, sum(n) FROM stats_day_path GROUP BY path;

CREATE TRIGGER stats_total_reviews_insert AFTER INSERT ON reviews
BEGIN
    INSERT INTO stats_total_repo SELECT NEW.repo_full_name, 1, coalesce(NEW.cost, 0), coalesce(NEW.tokens, 0), coalesce(NEW.completed_at - NEW.created_at, 0), NEW.completed_at IS NOT NULL WHERE NEW.status != 'skipped'
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
END;

CREATE TRIGGER stats_total_reviews_delete AFTER DELETE ON reviews
BEGIN
    INSERT INTO stats_total_repo SELECT OLD.repo_full_name, -1, -coalesce(OLD.cost, 0), -coalesce(OLD.tokens, 0), -coalesce(OLD.completed_at - OLD.created_at, 0), -(OLD.completed_at IS NOT NULL) WHERE OLD.status != 'skipped'
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
    INSERT INTO stats_total_path SELECT path, -count(*) FROM findings WHERE review_id = OLD.id AND kind = 'inline' AND path IS NOT NULL AND OLD.status != 'skipped' GROUP BY path
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER stats_total_reviews_update AFTER UPDATE OF repo_full_name, status, "trigger", cost, tokens, model, created_at, completed_at ON reviews
BEGIN
    INSERT INTO stats_total_repo SELECT OLD.repo_full_name, -1, -coalesce(OLD.cost, 0), -coalesce(OLD.tokens, 0), -coalesce(OLD.completed_at - OLD.created_at, 0), -(OLD.completed_at IS NOT NULL) WHERE OLD.status != 'skipped'
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
    INSERT INTO stats_total_repo SELECT NEW.repo_full_name, 1, coalesce(NEW.cost, 0), coalesce(NEW.tokens, 0), coalesce(NEW.completed_at - NEW.created_at, 0), NEW.completed_at IS NOT NULL WHERE NEW.status != 'skipped'
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
END;

CREATE TRIGGER stats_total_reviews_findings_move AFTER UPDATE OF status, created_at ON reviews
WHEN (OLD.status = 'skipped') != (NEW.status = 'skipped')
BEGIN
    INSERT INTO stats_total_path SELECT path, -count(*) FROM findings WHERE review_id = OLD.id AND kind = 'inline' AND path IS NOT NULL AND OLD.status != 'skipped' GROUP BY path
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_total_path SELECT path, count(*) FROM findings WHERE review_id = NEW.id AND kind = 'inline' AND path IS NOT NULL AND NEW.status != 'skipped' GROUP BY path
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER stats_total_findings_insert AFTER INSERT ON findings
BEGIN
    INSERT INTO stats_total_path SELECT NEW.path, 1 FROM reviews r WHERE r.id = NEW.review_id AND r.status != 'skipped' AND NEW.kind = 'inline' AND NEW.path IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER stats_total_findings_delete AFTER DELETE ON findings
BEGIN
    INSERT INTO stats_total_path SELECT OLD.path, -1 FROM reviews r WHERE r.id = OLD.review_id AND r.status != 'skipped' AND OLD.kind = 'inline' AND OLD.path IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER stats_total_findings_update AFTER UPDATE OF review_id, kind, severity, path ON findings
BEGIN
    INSERT INTO stats_total_path SELECT OLD.path, -1 FROM reviews r WHERE r.id = OLD.review_id AND r.status != 'skipped' AND OLD.kind = 'inline' AND OLD.path IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_total_path SELECT NEW.path, 1 FROM reviews r WHERE r.id = NEW.review_id AND r.status != 'skipped' AND NEW.kind = 'inline' AND NEW.path IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
