-- Per-UTC-day rollups split by repo and by model, kept exact by triggers in the writing
-- transaction like those of 0007 (docs/review-service.md section 4, Stats; docs/architecture.md,
-- Store). A stats or charts request filtered on one repo or one model reads whole days from here
-- and only the partial days at its edges from the raw rows, instead of every review of the repo
-- or model (issue 19: 380 ms at a million reviews; bench/review-stats).
--
-- A facet is 'repo' (value: repo_full_name) or 'model' (value: model; reviews without a model
-- have no model row). One table per shape rather than one cube keyed by day, repo, model,
-- status and trigger: with 50 repos and 8 models such a cube has nearly a row per review.
-- - stats_day_facet: reviews per facet value, day and status, with cost, tokens and durations.
--   Every status, skipped included; dur_sum and dur_n count the rows with a completed_at, per
--   status (as stats_day_status): the readers take the completed rows for latency and
--   avg_duration. Answers projects (repo filter), models (model filter), daily, latency and
--   reliability.
-- - stats_day_facet_trigger: non-skipped reviews per facet value, day and trigger (unknown for
--   null), as stats_day_trigger: triggers.
-- - stats_day_repo_model: non-skipped reviews with a model per repo, day and model, durations of
--   completed reviews only (as stats_day_repo). Answers models under a repo filter and projects
--   under a model filter.
-- - stats_total_repo_model: the all-time sums of stats_day_repo_model per repo and model, for
--   an unbounded window (as stats_total_repo).
-- - stats_day_facet_severity: findings per facet value, day and severity, of non-skipped
--   reviews (as stats_day_severity): severity and findingsDaily.
-- - stats_total_facet_path: all-time inline findings per facet value and path, of non-skipped
--   reviews (as stats_total_path): topFiles of an unbounded window.
-- A finding counts on its review's day, repo and model, so a review's findings move when its
-- status enters or leaves skipped, or its day, repo or model changes (the model is set when it
-- completes). Rows are never deleted: a group whose counts fall back to 0 is filtered out by
-- the readers. A window filtered on both a repo and a model reads the raw rows.

CREATE TABLE stats_day_facet (
    facet TEXT NOT NULL CHECK (facet IN ('repo', 'model')), value TEXT NOT NULL,
    day INTEGER NOT NULL, status TEXT NOT NULL,
    reviews INTEGER NOT NULL, cost REAL NOT NULL, tokens INTEGER NOT NULL,
    dur_sum INTEGER NOT NULL, dur_n INTEGER NOT NULL,
    PRIMARY KEY (facet, value, day, status)
) WITHOUT ROWID;
CREATE TABLE stats_day_facet_trigger (
    facet TEXT NOT NULL CHECK (facet IN ('repo', 'model')), value TEXT NOT NULL,
    day INTEGER NOT NULL, trig TEXT NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (facet, value, day, trig)
) WITHOUT ROWID;
CREATE TABLE stats_day_repo_model (
    repo TEXT NOT NULL, day INTEGER NOT NULL, model TEXT NOT NULL,
    reviews INTEGER NOT NULL, cost REAL NOT NULL, tokens INTEGER NOT NULL,
    dur_sum INTEGER NOT NULL, dur_n INTEGER NOT NULL,
    PRIMARY KEY (repo, day, model)
) WITHOUT ROWID;
CREATE INDEX stats_day_repo_model_by_model
    ON stats_day_repo_model (model, day, repo, reviews, cost, tokens, dur_sum, dur_n);
CREATE TABLE stats_total_repo_model (
    repo TEXT NOT NULL, model TEXT NOT NULL,
    reviews INTEGER NOT NULL, cost REAL NOT NULL, tokens INTEGER NOT NULL,
    dur_sum INTEGER NOT NULL, dur_n INTEGER NOT NULL,
    PRIMARY KEY (repo, model)
) WITHOUT ROWID;
CREATE INDEX stats_total_repo_model_by_model
    ON stats_total_repo_model (model, repo, reviews, cost, tokens, dur_sum, dur_n);
CREATE TABLE stats_day_facet_severity (
    facet TEXT NOT NULL CHECK (facet IN ('repo', 'model')), value TEXT NOT NULL,
    day INTEGER NOT NULL, severity TEXT NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (facet, value, day, severity)
) WITHOUT ROWID;
CREATE TABLE stats_total_facet_path (
    facet TEXT NOT NULL CHECK (facet IN ('repo', 'model')), value TEXT NOT NULL,
    path TEXT NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (facet, value, path)
) WITHOUT ROWID;

-- The latency p95 of a repo or model walks that repo's or model's completed durations from the
-- top instead of every completed review's, from the index alone (it holds every column the
-- walk reads, status included).
CREATE INDEX reviews_repo_duration
    ON reviews (repo_full_name, (completed_at - created_at), created_at, completed_at, status)
    WHERE status = 'completed' AND completed_at IS NOT NULL;
CREATE INDEX reviews_model_duration
    ON reviews (model, (completed_at - created_at), created_at, completed_at, status)
    WHERE status = 'completed' AND completed_at IS NOT NULL;

-- Backfill from the rows already there.
INSERT INTO stats_day_facet
SELECT 'repo', repo_full_name, created_at / 86400, status, count(*), total(cost), coalesce(sum(tokens), 0),
       coalesce(sum(completed_at - created_at), 0), count(completed_at)
FROM reviews GROUP BY 2, 3, 4;
INSERT INTO stats_day_facet
SELECT 'model', model, created_at / 86400, status, count(*), total(cost), coalesce(sum(tokens), 0),
       coalesce(sum(completed_at - created_at), 0), count(completed_at)
FROM reviews WHERE model IS NOT NULL GROUP BY 2, 3, 4;
INSERT INTO stats_day_facet_trigger
SELECT 'repo', repo_full_name, created_at / 86400, coalesce("trigger", 'unknown'), count(*)
FROM reviews WHERE status != 'skipped' GROUP BY 2, 3, 4;
INSERT INTO stats_day_facet_trigger
SELECT 'model', model, created_at / 86400, coalesce("trigger", 'unknown'), count(*)
FROM reviews WHERE status != 'skipped' AND model IS NOT NULL GROUP BY 2, 3, 4;
INSERT INTO stats_day_repo_model
SELECT repo_full_name, created_at / 86400, model, count(*), total(cost), coalesce(sum(tokens), 0),
       coalesce(sum(CASE WHEN status = 'completed' THEN completed_at - created_at END), 0),
       count(CASE WHEN status = 'completed' THEN completed_at END)
FROM reviews WHERE status != 'skipped' AND model IS NOT NULL GROUP BY 1, 2, 3;
INSERT INTO stats_total_repo_model
SELECT repo, model, sum(reviews), total(cost), sum(tokens), sum(dur_sum), sum(dur_n)
FROM stats_day_repo_model GROUP BY 1, 2;
INSERT INTO stats_day_facet_severity
SELECT 'repo', r.repo_full_name, r.created_at / 86400, f.severity, count(*)
FROM findings f JOIN reviews r ON r.id = f.review_id
WHERE r.status != 'skipped' AND f.severity IS NOT NULL GROUP BY 2, 3, 4;
INSERT INTO stats_day_facet_severity
SELECT 'model', r.model, r.created_at / 86400, f.severity, count(*)
FROM findings f JOIN reviews r ON r.id = f.review_id
WHERE r.status != 'skipped' AND r.model IS NOT NULL AND f.severity IS NOT NULL GROUP BY 2, 3, 4;
INSERT INTO stats_total_facet_path
SELECT 'repo', r.repo_full_name, f.path, count(*)
FROM findings f JOIN reviews r ON r.id = f.review_id
WHERE r.status != 'skipped' AND f.kind = 'inline' AND f.path IS NOT NULL GROUP BY 2, 3;
INSERT INTO stats_total_facet_path
SELECT 'model', r.model, f.path, count(*)
FROM findings f JOIN reviews r ON r.id = f.review_id
WHERE r.status != 'skipped' AND r.model IS NOT NULL AND f.kind = 'inline' AND f.path IS NOT NULL GROUP BY 2, 3;

-- Reviews: a row contributes +1 when it appears, -1 when it goes; an update is both.
CREATE TRIGGER stats_facet_reviews_insert AFTER INSERT ON reviews BEGIN
    INSERT INTO stats_day_facet SELECT 'repo', NEW.repo_full_name, NEW.created_at / 86400, NEW.status, 1, coalesce(NEW.cost, 0), coalesce(NEW.tokens, 0), coalesce(NEW.completed_at - NEW.created_at, 0), NEW.completed_at IS NOT NULL WHERE true
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
    INSERT INTO stats_day_facet_trigger SELECT 'repo', NEW.repo_full_name, NEW.created_at / 86400, coalesce(NEW."trigger", 'unknown'), 1 WHERE NEW.status != 'skipped'
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_facet SELECT 'model', NEW.model, NEW.created_at / 86400, NEW.status, 1, coalesce(NEW.cost, 0), coalesce(NEW.tokens, 0), coalesce(NEW.completed_at - NEW.created_at, 0), NEW.completed_at IS NOT NULL WHERE NEW.model IS NOT NULL
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
    INSERT INTO stats_day_facet_trigger SELECT 'model', NEW.model, NEW.created_at / 86400, coalesce(NEW."trigger", 'unknown'), 1 WHERE NEW.status != 'skipped' AND NEW.model IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_repo_model SELECT NEW.repo_full_name, NEW.created_at / 86400, NEW.model, 1, coalesce(NEW.cost, 0), coalesce(NEW.tokens, 0), CASE WHEN NEW.status = 'completed' THEN coalesce(NEW.completed_at - NEW.created_at, 0) ELSE 0 END, NEW.status = 'completed' AND NEW.completed_at IS NOT NULL WHERE NEW.status != 'skipped' AND NEW.model IS NOT NULL
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
    INSERT INTO stats_total_repo_model SELECT NEW.repo_full_name, NEW.model, 1, coalesce(NEW.cost, 0), coalesce(NEW.tokens, 0), CASE WHEN NEW.status = 'completed' THEN coalesce(NEW.completed_at - NEW.created_at, 0) ELSE 0 END, NEW.status = 'completed' AND NEW.completed_at IS NOT NULL WHERE NEW.status != 'skipped' AND NEW.model IS NOT NULL
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
END;

CREATE TRIGGER stats_facet_reviews_delete AFTER DELETE ON reviews BEGIN
    INSERT INTO stats_day_facet SELECT 'repo', OLD.repo_full_name, OLD.created_at / 86400, OLD.status, -1, -coalesce(OLD.cost, 0), -coalesce(OLD.tokens, 0), -coalesce(OLD.completed_at - OLD.created_at, 0), -(OLD.completed_at IS NOT NULL) WHERE true
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
    INSERT INTO stats_day_facet_trigger SELECT 'repo', OLD.repo_full_name, OLD.created_at / 86400, coalesce(OLD."trigger", 'unknown'), -1 WHERE OLD.status != 'skipped'
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_facet SELECT 'model', OLD.model, OLD.created_at / 86400, OLD.status, -1, -coalesce(OLD.cost, 0), -coalesce(OLD.tokens, 0), -coalesce(OLD.completed_at - OLD.created_at, 0), -(OLD.completed_at IS NOT NULL) WHERE OLD.model IS NOT NULL
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
    INSERT INTO stats_day_facet_trigger SELECT 'model', OLD.model, OLD.created_at / 86400, coalesce(OLD."trigger", 'unknown'), -1 WHERE OLD.status != 'skipped' AND OLD.model IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_repo_model SELECT OLD.repo_full_name, OLD.created_at / 86400, OLD.model, -1, -coalesce(OLD.cost, 0), -coalesce(OLD.tokens, 0), -(CASE WHEN OLD.status = 'completed' THEN coalesce(OLD.completed_at - OLD.created_at, 0) ELSE 0 END), -(OLD.status = 'completed' AND OLD.completed_at IS NOT NULL) WHERE OLD.status != 'skipped' AND OLD.model IS NOT NULL
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
    INSERT INTO stats_total_repo_model SELECT OLD.repo_full_name, OLD.model, -1, -coalesce(OLD.cost, 0), -coalesce(OLD.tokens, 0), -(CASE WHEN OLD.status = 'completed' THEN coalesce(OLD.completed_at - OLD.created_at, 0) ELSE 0 END), -(OLD.status = 'completed' AND OLD.completed_at IS NOT NULL) WHERE OLD.status != 'skipped' AND OLD.model IS NOT NULL
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
    INSERT INTO stats_day_facet_severity SELECT 'repo', OLD.repo_full_name, OLD.created_at / 86400, severity, -count(*) FROM findings WHERE review_id = OLD.id AND severity IS NOT NULL AND OLD.status != 'skipped' GROUP BY severity
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_facet_severity SELECT 'model', OLD.model, OLD.created_at / 86400, severity, -count(*) FROM findings WHERE review_id = OLD.id AND severity IS NOT NULL AND OLD.status != 'skipped' AND OLD.model IS NOT NULL GROUP BY severity
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_total_facet_path SELECT 'repo', OLD.repo_full_name, path, -count(*) FROM findings WHERE review_id = OLD.id AND kind = 'inline' AND path IS NOT NULL AND OLD.status != 'skipped' GROUP BY path
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_total_facet_path SELECT 'model', OLD.model, path, -count(*) FROM findings WHERE review_id = OLD.id AND kind = 'inline' AND path IS NOT NULL AND OLD.status != 'skipped' AND OLD.model IS NOT NULL GROUP BY path
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER stats_facet_reviews_update AFTER UPDATE OF repo_full_name, status, "trigger", cost, tokens, model, created_at, completed_at ON reviews BEGIN
    INSERT INTO stats_day_facet SELECT 'repo', OLD.repo_full_name, OLD.created_at / 86400, OLD.status, -1, -coalesce(OLD.cost, 0), -coalesce(OLD.tokens, 0), -coalesce(OLD.completed_at - OLD.created_at, 0), -(OLD.completed_at IS NOT NULL) WHERE true
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
    INSERT INTO stats_day_facet_trigger SELECT 'repo', OLD.repo_full_name, OLD.created_at / 86400, coalesce(OLD."trigger", 'unknown'), -1 WHERE OLD.status != 'skipped'
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_facet SELECT 'model', OLD.model, OLD.created_at / 86400, OLD.status, -1, -coalesce(OLD.cost, 0), -coalesce(OLD.tokens, 0), -coalesce(OLD.completed_at - OLD.created_at, 0), -(OLD.completed_at IS NOT NULL) WHERE OLD.model IS NOT NULL
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
    INSERT INTO stats_day_facet_trigger SELECT 'model', OLD.model, OLD.created_at / 86400, coalesce(OLD."trigger", 'unknown'), -1 WHERE OLD.status != 'skipped' AND OLD.model IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_repo_model SELECT OLD.repo_full_name, OLD.created_at / 86400, OLD.model, -1, -coalesce(OLD.cost, 0), -coalesce(OLD.tokens, 0), -(CASE WHEN OLD.status = 'completed' THEN coalesce(OLD.completed_at - OLD.created_at, 0) ELSE 0 END), -(OLD.status = 'completed' AND OLD.completed_at IS NOT NULL) WHERE OLD.status != 'skipped' AND OLD.model IS NOT NULL
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
    INSERT INTO stats_total_repo_model SELECT OLD.repo_full_name, OLD.model, -1, -coalesce(OLD.cost, 0), -coalesce(OLD.tokens, 0), -(CASE WHEN OLD.status = 'completed' THEN coalesce(OLD.completed_at - OLD.created_at, 0) ELSE 0 END), -(OLD.status = 'completed' AND OLD.completed_at IS NOT NULL) WHERE OLD.status != 'skipped' AND OLD.model IS NOT NULL
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
    INSERT INTO stats_day_facet SELECT 'repo', NEW.repo_full_name, NEW.created_at / 86400, NEW.status, 1, coalesce(NEW.cost, 0), coalesce(NEW.tokens, 0), coalesce(NEW.completed_at - NEW.created_at, 0), NEW.completed_at IS NOT NULL WHERE true
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
    INSERT INTO stats_day_facet_trigger SELECT 'repo', NEW.repo_full_name, NEW.created_at / 86400, coalesce(NEW."trigger", 'unknown'), 1 WHERE NEW.status != 'skipped'
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_facet SELECT 'model', NEW.model, NEW.created_at / 86400, NEW.status, 1, coalesce(NEW.cost, 0), coalesce(NEW.tokens, 0), coalesce(NEW.completed_at - NEW.created_at, 0), NEW.completed_at IS NOT NULL WHERE NEW.model IS NOT NULL
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
    INSERT INTO stats_day_facet_trigger SELECT 'model', NEW.model, NEW.created_at / 86400, coalesce(NEW."trigger", 'unknown'), 1 WHERE NEW.status != 'skipped' AND NEW.model IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_repo_model SELECT NEW.repo_full_name, NEW.created_at / 86400, NEW.model, 1, coalesce(NEW.cost, 0), coalesce(NEW.tokens, 0), CASE WHEN NEW.status = 'completed' THEN coalesce(NEW.completed_at - NEW.created_at, 0) ELSE 0 END, NEW.status = 'completed' AND NEW.completed_at IS NOT NULL WHERE NEW.status != 'skipped' AND NEW.model IS NOT NULL
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
    INSERT INTO stats_total_repo_model SELECT NEW.repo_full_name, NEW.model, 1, coalesce(NEW.cost, 0), coalesce(NEW.tokens, 0), CASE WHEN NEW.status = 'completed' THEN coalesce(NEW.completed_at - NEW.created_at, 0) ELSE 0 END, NEW.status = 'completed' AND NEW.completed_at IS NOT NULL WHERE NEW.status != 'skipped' AND NEW.model IS NOT NULL
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
END;

-- A review's findings move with it when it enters or leaves skipped, or changes day, repo or
-- model.
CREATE TRIGGER stats_facet_reviews_findings_move AFTER UPDATE OF status, created_at, repo_full_name, model ON reviews
WHEN (OLD.status = 'skipped') != (NEW.status = 'skipped') OR OLD.created_at / 86400 != NEW.created_at / 86400
    OR OLD.repo_full_name != NEW.repo_full_name OR OLD.model IS NOT NEW.model
BEGIN
    INSERT INTO stats_day_facet_severity SELECT 'repo', OLD.repo_full_name, OLD.created_at / 86400, severity, -count(*) FROM findings WHERE review_id = OLD.id AND severity IS NOT NULL AND OLD.status != 'skipped' GROUP BY severity
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_facet_severity SELECT 'model', OLD.model, OLD.created_at / 86400, severity, -count(*) FROM findings WHERE review_id = OLD.id AND severity IS NOT NULL AND OLD.status != 'skipped' AND OLD.model IS NOT NULL GROUP BY severity
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_total_facet_path SELECT 'repo', OLD.repo_full_name, path, -count(*) FROM findings WHERE review_id = OLD.id AND kind = 'inline' AND path IS NOT NULL AND OLD.status != 'skipped' GROUP BY path
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_total_facet_path SELECT 'model', OLD.model, path, -count(*) FROM findings WHERE review_id = OLD.id AND kind = 'inline' AND path IS NOT NULL AND OLD.status != 'skipped' AND OLD.model IS NOT NULL GROUP BY path
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_facet_severity SELECT 'repo', NEW.repo_full_name, NEW.created_at / 86400, severity, count(*) FROM findings WHERE review_id = NEW.id AND severity IS NOT NULL AND NEW.status != 'skipped' GROUP BY severity
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_facet_severity SELECT 'model', NEW.model, NEW.created_at / 86400, severity, count(*) FROM findings WHERE review_id = NEW.id AND severity IS NOT NULL AND NEW.status != 'skipped' AND NEW.model IS NOT NULL GROUP BY severity
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_total_facet_path SELECT 'repo', NEW.repo_full_name, path, count(*) FROM findings WHERE review_id = NEW.id AND kind = 'inline' AND path IS NOT NULL AND NEW.status != 'skipped' GROUP BY path
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_total_facet_path SELECT 'model', NEW.model, path, count(*) FROM findings WHERE review_id = NEW.id AND kind = 'inline' AND path IS NOT NULL AND NEW.status != 'skipped' AND NEW.model IS NOT NULL GROUP BY path
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

-- Findings count on their review's day, repo and model while the review is not skipped.
CREATE TRIGGER stats_facet_findings_insert AFTER INSERT ON findings BEGIN
    INSERT INTO stats_day_facet_severity SELECT 'repo', r.repo_full_name, r.created_at / 86400, NEW.severity, 1 FROM reviews r WHERE r.id = NEW.review_id AND r.status != 'skipped' AND NEW.severity IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_facet_severity SELECT 'model', r.model, r.created_at / 86400, NEW.severity, 1 FROM reviews r WHERE r.id = NEW.review_id AND r.status != 'skipped' AND r.model IS NOT NULL AND NEW.severity IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_total_facet_path SELECT 'repo', r.repo_full_name, NEW.path, 1 FROM reviews r WHERE r.id = NEW.review_id AND r.status != 'skipped' AND NEW.kind = 'inline' AND NEW.path IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_total_facet_path SELECT 'model', r.model, NEW.path, 1 FROM reviews r WHERE r.id = NEW.review_id AND r.status != 'skipped' AND r.model IS NOT NULL AND NEW.kind = 'inline' AND NEW.path IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER stats_facet_findings_delete AFTER DELETE ON findings BEGIN
    INSERT INTO stats_day_facet_severity SELECT 'repo', r.repo_full_name, r.created_at / 86400, OLD.severity, -1 FROM reviews r WHERE r.id = OLD.review_id AND r.status != 'skipped' AND OLD.severity IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_facet_severity SELECT 'model', r.model, r.created_at / 86400, OLD.severity, -1 FROM reviews r WHERE r.id = OLD.review_id AND r.status != 'skipped' AND r.model IS NOT NULL AND OLD.severity IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_total_facet_path SELECT 'repo', r.repo_full_name, OLD.path, -1 FROM reviews r WHERE r.id = OLD.review_id AND r.status != 'skipped' AND OLD.kind = 'inline' AND OLD.path IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_total_facet_path SELECT 'model', r.model, OLD.path, -1 FROM reviews r WHERE r.id = OLD.review_id AND r.status != 'skipped' AND r.model IS NOT NULL AND OLD.kind = 'inline' AND OLD.path IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER stats_facet_findings_update AFTER UPDATE OF review_id, kind, severity, path ON findings BEGIN
    INSERT INTO stats_day_facet_severity SELECT 'repo', r.repo_full_name, r.created_at / 86400, OLD.severity, -1 FROM reviews r WHERE r.id = OLD.review_id AND r.status != 'skipped' AND OLD.severity IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_facet_severity SELECT 'model', r.model, r.created_at / 86400, OLD.severity, -1 FROM reviews r WHERE r.id = OLD.review_id AND r.status != 'skipped' AND r.model IS NOT NULL AND OLD.severity IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_total_facet_path SELECT 'repo', r.repo_full_name, OLD.path, -1 FROM reviews r WHERE r.id = OLD.review_id AND r.status != 'skipped' AND OLD.kind = 'inline' AND OLD.path IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_total_facet_path SELECT 'model', r.model, OLD.path, -1 FROM reviews r WHERE r.id = OLD.review_id AND r.status != 'skipped' AND r.model IS NOT NULL AND OLD.kind = 'inline' AND OLD.path IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_facet_severity SELECT 'repo', r.repo_full_name, r.created_at / 86400, NEW.severity, 1 FROM reviews r WHERE r.id = NEW.review_id AND r.status != 'skipped' AND NEW.severity IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_facet_severity SELECT 'model', r.model, r.created_at / 86400, NEW.severity, 1 FROM reviews r WHERE r.id = NEW.review_id AND r.status != 'skipped' AND r.model IS NOT NULL AND NEW.severity IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_total_facet_path SELECT 'repo', r.repo_full_name, NEW.path, 1 FROM reviews r WHERE r.id = NEW.review_id AND r.status != 'skipped' AND NEW.kind = 'inline' AND NEW.path IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_total_facet_path SELECT 'model', r.model, NEW.path, 1 FROM reviews r WHERE r.id = NEW.review_id AND r.status != 'skipped' AND r.model IS NOT NULL AND NEW.kind = 'inline' AND NEW.path IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
