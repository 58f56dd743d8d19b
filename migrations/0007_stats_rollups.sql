-- Per-UTC-day rollups of reviews and findings, kept exact by triggers in the writing
-- transaction (spec/review-service.md section 4, Stats). /api/stats and /api/stats/charts read
-- whole days from here and only the partial days at the edges of a window from the raw rows,
-- so a year of history costs hundreds of rows instead of a million (bench/review-stats).
-- day is created_at / 86400 of the review; a finding counts on its review's day. Skipped
-- reviews are left out of every rollup except stats_day_status. Rows are never deleted: a
-- group whose counts fall back to 0 is filtered out by the readers.

CREATE TABLE stats_day_repo (
    day INTEGER NOT NULL, repo TEXT NOT NULL,
    reviews INTEGER NOT NULL, cost REAL NOT NULL, tokens INTEGER NOT NULL,
    dur_sum INTEGER NOT NULL, dur_n INTEGER NOT NULL,
    PRIMARY KEY (day, repo)
) WITHOUT ROWID;
CREATE TABLE stats_day_model (
    day INTEGER NOT NULL, model TEXT NOT NULL,
    reviews INTEGER NOT NULL, cost REAL NOT NULL, tokens INTEGER NOT NULL,
    PRIMARY KEY (day, model)
) WITHOUT ROWID;
CREATE TABLE stats_day_trigger (
    day INTEGER NOT NULL, trig TEXT NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (day, trig)
) WITHOUT ROWID;
CREATE TABLE stats_day_status (
    day INTEGER NOT NULL, status TEXT NOT NULL,
    reviews INTEGER NOT NULL, cost REAL NOT NULL, tokens INTEGER NOT NULL,
    dur_sum INTEGER NOT NULL, dur_n INTEGER NOT NULL,
    PRIMARY KEY (day, status)
) WITHOUT ROWID;
CREATE TABLE stats_day_severity (
    day INTEGER NOT NULL, severity TEXT NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (day, severity)
) WITHOUT ROWID;
CREATE TABLE stats_day_path (
    day INTEGER NOT NULL, path TEXT NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (day, path)
) WITHOUT ROWID;
CREATE INDEX stats_day_path_by_path ON stats_day_path (path, day, n);

-- Backfill from the rows already there.
INSERT INTO stats_day_repo
SELECT created_at / 86400, repo_full_name, count(*), total(cost), coalesce(sum(tokens), 0),
       coalesce(sum(completed_at - created_at), 0), count(completed_at)
FROM reviews WHERE status != 'skipped' GROUP BY 1, 2;
INSERT INTO stats_day_model
SELECT created_at / 86400, model, count(*), total(cost), coalesce(sum(tokens), 0)
FROM reviews WHERE status != 'skipped' AND model IS NOT NULL GROUP BY 1, 2;
INSERT INTO stats_day_trigger
SELECT created_at / 86400, coalesce("trigger", 'unknown'), count(*)
FROM reviews WHERE status != 'skipped' GROUP BY 1, 2;
INSERT INTO stats_day_status
SELECT created_at / 86400, status, count(*), total(cost), coalesce(sum(tokens), 0),
       coalesce(sum(completed_at - created_at), 0), count(completed_at)
FROM reviews GROUP BY 1, 2;
INSERT INTO stats_day_severity
SELECT r.created_at / 86400, f.severity, count(*)
FROM findings f JOIN reviews r ON r.id = f.review_id
WHERE r.status != 'skipped' AND f.severity IS NOT NULL GROUP BY 1, 2;
INSERT INTO stats_day_path
SELECT r.created_at / 86400, f.path, count(*)
FROM findings f JOIN reviews r ON r.id = f.review_id
WHERE r.status != 'skipped' AND f.kind = 'inline' AND f.path IS NOT NULL GROUP BY 1, 2;

-- Reviews: a row contributes +1 when it appears, -1 when it goes; an update is both.
CREATE TRIGGER stats_reviews_insert AFTER INSERT ON reviews BEGIN
    INSERT INTO stats_day_repo SELECT NEW.created_at / 86400, NEW.repo_full_name, 1, coalesce(NEW.cost, 0), coalesce(NEW.tokens, 0), coalesce(NEW.completed_at - NEW.created_at, 0), NEW.completed_at IS NOT NULL WHERE NEW.status != 'skipped'
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
    INSERT INTO stats_day_model SELECT NEW.created_at / 86400, NEW.model, 1, coalesce(NEW.cost, 0), coalesce(NEW.tokens, 0) WHERE NEW.status != 'skipped' AND NEW.model IS NOT NULL
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens;
    INSERT INTO stats_day_trigger SELECT NEW.created_at / 86400, coalesce(NEW."trigger", 'unknown'), 1 WHERE NEW.status != 'skipped'
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_status SELECT NEW.created_at / 86400, NEW.status, 1, coalesce(NEW.cost, 0), coalesce(NEW.tokens, 0), coalesce(NEW.completed_at - NEW.created_at, 0), NEW.completed_at IS NOT NULL WHERE true
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
END;

CREATE TRIGGER stats_reviews_delete AFTER DELETE ON reviews BEGIN
    INSERT INTO stats_day_repo SELECT OLD.created_at / 86400, OLD.repo_full_name, -1, -coalesce(OLD.cost, 0), -coalesce(OLD.tokens, 0), -coalesce(OLD.completed_at - OLD.created_at, 0), -(OLD.completed_at IS NOT NULL) WHERE OLD.status != 'skipped'
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
    INSERT INTO stats_day_model SELECT OLD.created_at / 86400, OLD.model, -1, -coalesce(OLD.cost, 0), -coalesce(OLD.tokens, 0) WHERE OLD.status != 'skipped' AND OLD.model IS NOT NULL
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens;
    INSERT INTO stats_day_trigger SELECT OLD.created_at / 86400, coalesce(OLD."trigger", 'unknown'), -1 WHERE OLD.status != 'skipped'
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_status SELECT OLD.created_at / 86400, OLD.status, -1, -coalesce(OLD.cost, 0), -coalesce(OLD.tokens, 0), -coalesce(OLD.completed_at - OLD.created_at, 0), -(OLD.completed_at IS NOT NULL) WHERE true
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
    INSERT INTO stats_day_severity SELECT OLD.created_at / 86400, severity, -count(*) FROM findings WHERE review_id = OLD.id AND severity IS NOT NULL AND OLD.status != 'skipped' GROUP BY severity
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_path SELECT OLD.created_at / 86400, path, -count(*) FROM findings WHERE review_id = OLD.id AND kind = 'inline' AND path IS NOT NULL AND OLD.status != 'skipped' GROUP BY path
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER stats_reviews_update AFTER UPDATE OF repo_full_name, status, "trigger", cost, tokens, model, created_at, completed_at ON reviews BEGIN
    INSERT INTO stats_day_repo SELECT OLD.created_at / 86400, OLD.repo_full_name, -1, -coalesce(OLD.cost, 0), -coalesce(OLD.tokens, 0), -coalesce(OLD.completed_at - OLD.created_at, 0), -(OLD.completed_at IS NOT NULL) WHERE OLD.status != 'skipped'
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
    INSERT INTO stats_day_model SELECT OLD.created_at / 86400, OLD.model, -1, -coalesce(OLD.cost, 0), -coalesce(OLD.tokens, 0) WHERE OLD.status != 'skipped' AND OLD.model IS NOT NULL
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens;
    INSERT INTO stats_day_trigger SELECT OLD.created_at / 86400, coalesce(OLD."trigger", 'unknown'), -1 WHERE OLD.status != 'skipped'
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_status SELECT OLD.created_at / 86400, OLD.status, -1, -coalesce(OLD.cost, 0), -coalesce(OLD.tokens, 0), -coalesce(OLD.completed_at - OLD.created_at, 0), -(OLD.completed_at IS NOT NULL) WHERE true
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
    INSERT INTO stats_day_repo SELECT NEW.created_at / 86400, NEW.repo_full_name, 1, coalesce(NEW.cost, 0), coalesce(NEW.tokens, 0), coalesce(NEW.completed_at - NEW.created_at, 0), NEW.completed_at IS NOT NULL WHERE NEW.status != 'skipped'
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
    INSERT INTO stats_day_model SELECT NEW.created_at / 86400, NEW.model, 1, coalesce(NEW.cost, 0), coalesce(NEW.tokens, 0) WHERE NEW.status != 'skipped' AND NEW.model IS NOT NULL
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens;
    INSERT INTO stats_day_trigger SELECT NEW.created_at / 86400, coalesce(NEW."trigger", 'unknown'), 1 WHERE NEW.status != 'skipped'
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_status SELECT NEW.created_at / 86400, NEW.status, 1, coalesce(NEW.cost, 0), coalesce(NEW.tokens, 0), coalesce(NEW.completed_at - NEW.created_at, 0), NEW.completed_at IS NOT NULL WHERE true
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
END;

-- A review's findings move with it when it enters or leaves skipped or changes day.
CREATE TRIGGER stats_reviews_findings_move AFTER UPDATE OF status, created_at ON reviews
WHEN (OLD.status = 'skipped') != (NEW.status = 'skipped') OR OLD.created_at / 86400 != NEW.created_at / 86400
BEGIN
    INSERT INTO stats_day_severity SELECT OLD.created_at / 86400, severity, -count(*) FROM findings WHERE review_id = OLD.id AND severity IS NOT NULL AND OLD.status != 'skipped' GROUP BY severity
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_path SELECT OLD.created_at / 86400, path, -count(*) FROM findings WHERE review_id = OLD.id AND kind = 'inline' AND path IS NOT NULL AND OLD.status != 'skipped' GROUP BY path
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_severity SELECT NEW.created_at / 86400, severity, count(*) FROM findings WHERE review_id = NEW.id AND severity IS NOT NULL AND NEW.status != 'skipped' GROUP BY severity
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_path SELECT NEW.created_at / 86400, path, count(*) FROM findings WHERE review_id = NEW.id AND kind = 'inline' AND path IS NOT NULL AND NEW.status != 'skipped' GROUP BY path
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

-- Findings count on their review's day while the review is not skipped.
CREATE TRIGGER stats_findings_insert AFTER INSERT ON findings BEGIN
    INSERT INTO stats_day_severity SELECT r.created_at / 86400, NEW.severity, 1 FROM reviews r WHERE r.id = NEW.review_id AND r.status != 'skipped' AND NEW.severity IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_path SELECT r.created_at / 86400, NEW.path, 1 FROM reviews r WHERE r.id = NEW.review_id AND r.status != 'skipped' AND NEW.kind = 'inline' AND NEW.path IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER stats_findings_delete AFTER DELETE ON findings BEGIN
    INSERT INTO stats_day_severity SELECT r.created_at / 86400, OLD.severity, -1 FROM reviews r WHERE r.id = OLD.review_id AND r.status != 'skipped' AND OLD.severity IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_path SELECT r.created_at / 86400, OLD.path, -1 FROM reviews r WHERE r.id = OLD.review_id AND r.status != 'skipped' AND OLD.kind = 'inline' AND OLD.path IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER stats_findings_update AFTER UPDATE OF review_id, kind, severity, path ON findings BEGIN
    INSERT INTO stats_day_severity SELECT r.created_at / 86400, OLD.severity, -1 FROM reviews r WHERE r.id = OLD.review_id AND r.status != 'skipped' AND OLD.severity IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_path SELECT r.created_at / 86400, OLD.path, -1 FROM reviews r WHERE r.id = OLD.review_id AND r.status != 'skipped' AND OLD.kind = 'inline' AND OLD.path IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_severity SELECT r.created_at / 86400, NEW.severity, 1 FROM reviews r WHERE r.id = NEW.review_id AND r.status != 'skipped' AND NEW.severity IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_path SELECT r.created_at / 86400, NEW.path, 1 FROM reviews r WHERE r.id = NEW.review_id AND r.status != 'skipped' AND NEW.kind = 'inline' AND NEW.path IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
