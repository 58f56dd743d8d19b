-- Per-UTC-day rollups and all-time totals of reviews and findings, kept exact by triggers in the
-- writing transaction: the tables of SQLite's 0007 and 0008 with the completed-only durations
-- of 0011 (docs/review-service.md section 4, Stats). day is created_at / 86400 of the review; a
-- finding counts on its review's day. Skipped reviews are left out of every rollup except
-- stats_day_status. dur_sum and dur_n of the repo tables count completed reviews only;
-- stats_day_status keeps the durations of every row with a completed_at, per status. Rows are
-- never deleted: a group whose counts fall back to 0 is filtered out by the readers.
--
-- Where SQLite has one trigger per event and table, here one row-level trigger per table calls
-- a function that adds a row's contribution with a sign: +1 when it appears, -1 when it goes,
-- both for an update. Each upsert serializes concurrent writers on the rollup row it touches.

CREATE TABLE stats_day_repo (
    day BIGINT NOT NULL, repo TEXT NOT NULL,
    reviews BIGINT NOT NULL, cost DOUBLE PRECISION NOT NULL, tokens BIGINT NOT NULL,
    dur_sum BIGINT NOT NULL, dur_n BIGINT NOT NULL,
    PRIMARY KEY (day, repo)
);
CREATE TABLE stats_day_model (
    day BIGINT NOT NULL, model TEXT NOT NULL,
    reviews BIGINT NOT NULL, cost DOUBLE PRECISION NOT NULL, tokens BIGINT NOT NULL,
    PRIMARY KEY (day, model)
);
CREATE TABLE stats_day_trigger (
    day BIGINT NOT NULL, trig TEXT NOT NULL, n BIGINT NOT NULL,
    PRIMARY KEY (day, trig)
);
CREATE TABLE stats_day_status (
    day BIGINT NOT NULL, status TEXT NOT NULL,
    reviews BIGINT NOT NULL, cost DOUBLE PRECISION NOT NULL, tokens BIGINT NOT NULL,
    dur_sum BIGINT NOT NULL, dur_n BIGINT NOT NULL,
    PRIMARY KEY (day, status)
);
CREATE TABLE stats_day_severity (
    day BIGINT NOT NULL, severity TEXT NOT NULL, n BIGINT NOT NULL,
    PRIMARY KEY (day, severity)
);
CREATE TABLE stats_day_path (
    day BIGINT NOT NULL, path TEXT NOT NULL, n BIGINT NOT NULL,
    PRIMARY KEY (day, path)
);
CREATE INDEX stats_day_path_by_path ON stats_day_path (path, day, n);
CREATE TABLE stats_total_repo (
    repo TEXT PRIMARY KEY NOT NULL,
    reviews BIGINT NOT NULL, cost DOUBLE PRECISION NOT NULL, tokens BIGINT NOT NULL,
    dur_sum BIGINT NOT NULL, dur_n BIGINT NOT NULL
);
CREATE TABLE stats_total_path (
    path TEXT PRIMARY KEY NOT NULL, n BIGINT NOT NULL
);
CREATE INDEX stats_total_path_n ON stats_total_path (n, path);

-- The contribution of review r, times sign, to every review rollup.
CREATE FUNCTION stats_review_add(r reviews, sign BIGINT) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_day BIGINT := r.created_at / 86400;
    v_cost DOUBLE PRECISION := sign * coalesce(r.cost, 0);
    v_tokens BIGINT := sign * coalesce(r.tokens, 0);
    v_done BOOLEAN := r.status = 'completed' AND r.completed_at IS NOT NULL;
    v_dur_sum BIGINT := CASE WHEN v_done THEN sign * (r.completed_at - r.created_at) ELSE 0 END;
    v_dur_n BIGINT := CASE WHEN v_done THEN sign ELSE 0 END;
BEGIN
    IF r.status <> 'skipped' THEN
        INSERT INTO stats_day_repo AS t VALUES (v_day, r.repo_full_name, sign, v_cost, v_tokens, v_dur_sum, v_dur_n)
            ON CONFLICT (day, repo) DO UPDATE SET reviews = t.reviews + excluded.reviews,
                cost = t.cost + excluded.cost, tokens = t.tokens + excluded.tokens,
                dur_sum = t.dur_sum + excluded.dur_sum, dur_n = t.dur_n + excluded.dur_n;
        INSERT INTO stats_total_repo AS t VALUES (r.repo_full_name, sign, v_cost, v_tokens, v_dur_sum, v_dur_n)
            ON CONFLICT (repo) DO UPDATE SET reviews = t.reviews + excluded.reviews,
                cost = t.cost + excluded.cost, tokens = t.tokens + excluded.tokens,
                dur_sum = t.dur_sum + excluded.dur_sum, dur_n = t.dur_n + excluded.dur_n;
        IF r.model IS NOT NULL THEN
            INSERT INTO stats_day_model AS t VALUES (v_day, r.model, sign, v_cost, v_tokens)
                ON CONFLICT (day, model) DO UPDATE SET reviews = t.reviews + excluded.reviews,
                    cost = t.cost + excluded.cost, tokens = t.tokens + excluded.tokens;
        END IF;
        INSERT INTO stats_day_trigger AS t VALUES (v_day, coalesce(r."trigger", 'unknown'), sign)
            ON CONFLICT (day, trig) DO UPDATE SET n = t.n + excluded.n;
    END IF;
    -- Per status, every row with a completed_at counts its duration (as in SQLite's 0007).
    INSERT INTO stats_day_status AS t VALUES (v_day, r.status, sign, v_cost, v_tokens,
            CASE WHEN r.completed_at IS NOT NULL THEN sign * (r.completed_at - r.created_at) ELSE 0 END,
            CASE WHEN r.completed_at IS NOT NULL THEN sign ELSE 0 END)
        ON CONFLICT (day, status) DO UPDATE SET reviews = t.reviews + excluded.reviews,
            cost = t.cost + excluded.cost, tokens = t.tokens + excluded.tokens,
            dur_sum = t.dur_sum + excluded.dur_sum, dur_n = t.dur_n + excluded.dur_n;
END $$;

-- The contribution of the findings of review r, times sign, to the finding rollups.
CREATE FUNCTION stats_review_findings_add(r reviews, sign BIGINT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF r.status = 'skipped' THEN
        RETURN;
    END IF;
    INSERT INTO stats_day_severity AS t
        SELECT r.created_at / 86400, f.severity, sign * count(*) FROM findings f
        WHERE f.review_id = r.id AND f.severity IS NOT NULL GROUP BY f.severity ORDER BY f.severity
        ON CONFLICT (day, severity) DO UPDATE SET n = t.n + excluded.n;
    INSERT INTO stats_day_path AS t
        SELECT r.created_at / 86400, f.path, sign * count(*) FROM findings f
        WHERE f.review_id = r.id AND f.kind = 'inline' AND f.path IS NOT NULL GROUP BY f.path ORDER BY f.path
        ON CONFLICT (day, path) DO UPDATE SET n = t.n + excluded.n;
    INSERT INTO stats_total_path AS t
        SELECT f.path, sign * count(*) FROM findings f
        WHERE f.review_id = r.id AND f.kind = 'inline' AND f.path IS NOT NULL GROUP BY f.path ORDER BY f.path
        ON CONFLICT (path) DO UPDATE SET n = t.n + excluded.n;
END $$;

CREATE FUNCTION stats_reviews_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM stats_review_add(OLD, -1);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM stats_review_add(NEW, 1);
    END IF;
    -- A review's findings move with it when it goes, enters or leaves skipped, or changes day.
    IF TG_OP = 'DELETE' THEN
        PERFORM stats_review_findings_add(OLD, -1);
    ELSIF TG_OP = 'UPDATE' AND ((OLD.status = 'skipped') <> (NEW.status = 'skipped')
            OR OLD.created_at / 86400 <> NEW.created_at / 86400) THEN
        PERFORM stats_review_findings_add(OLD, -1);
        PERFORM stats_review_findings_add(NEW, 1);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER stats_reviews
    AFTER INSERT OR DELETE
        OR UPDATE OF repo_full_name, status, "trigger", cost, tokens, model, created_at, completed_at
    ON reviews FOR EACH ROW EXECUTE FUNCTION stats_reviews_changed();

-- The contribution of finding f, times sign, while its review exists and is not skipped.
CREATE FUNCTION stats_finding_add(f findings, sign BIGINT) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_day BIGINT;
BEGIN
    SELECT r.created_at / 86400 INTO v_day FROM reviews r WHERE r.id = f.review_id AND r.status <> 'skipped';
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF f.severity IS NOT NULL THEN
        INSERT INTO stats_day_severity AS t VALUES (v_day, f.severity, sign)
            ON CONFLICT (day, severity) DO UPDATE SET n = t.n + excluded.n;
    END IF;
    IF f.kind = 'inline' AND f.path IS NOT NULL THEN
        INSERT INTO stats_day_path AS t VALUES (v_day, f.path, sign)
            ON CONFLICT (day, path) DO UPDATE SET n = t.n + excluded.n;
        INSERT INTO stats_total_path AS t VALUES (f.path, sign)
            ON CONFLICT (path) DO UPDATE SET n = t.n + excluded.n;
    END IF;
END $$;

CREATE FUNCTION stats_findings_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM stats_finding_add(OLD, -1);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM stats_finding_add(NEW, 1);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER stats_findings
    AFTER INSERT OR DELETE OR UPDATE OF review_id, kind, severity, path
    ON findings FOR EACH ROW EXECUTE FUNCTION stats_findings_changed();

-- Recomputes every rollup from the rows, for a bulk load made with the triggers disabled
-- (docs/operations.md, PostgreSQL): `SELECT stats_rebuild();` in one transaction.
CREATE FUNCTION stats_rebuild() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE stats_day_repo, stats_day_model, stats_day_trigger, stats_day_status,
        stats_day_severity, stats_day_path, stats_total_repo, stats_total_path;
    INSERT INTO stats_day_repo
        SELECT created_at / 86400, repo_full_name, count(*), coalesce(sum(cost), 0),
            coalesce(sum(tokens), 0),
            coalesce(sum(completed_at - created_at) FILTER (WHERE status = 'completed'), 0),
            count(completed_at) FILTER (WHERE status = 'completed')
        FROM reviews WHERE status <> 'skipped' GROUP BY 1, 2;
    INSERT INTO stats_total_repo
        SELECT repo, sum(reviews), sum(cost), sum(tokens), sum(dur_sum), sum(dur_n)
        FROM stats_day_repo GROUP BY repo;
    INSERT INTO stats_day_model
        SELECT created_at / 86400, model, count(*), coalesce(sum(cost), 0), coalesce(sum(tokens), 0)
        FROM reviews WHERE status <> 'skipped' AND model IS NOT NULL GROUP BY 1, 2;
    INSERT INTO stats_day_trigger
        SELECT created_at / 86400, coalesce("trigger", 'unknown'), count(*)
        FROM reviews WHERE status <> 'skipped' GROUP BY 1, 2;
    INSERT INTO stats_day_status
        SELECT created_at / 86400, status, count(*), coalesce(sum(cost), 0), coalesce(sum(tokens), 0),
            coalesce(sum(completed_at - created_at), 0), count(completed_at)
        FROM reviews GROUP BY 1, 2;
    INSERT INTO stats_day_severity
        SELECT r.created_at / 86400, f.severity, count(*)
        FROM findings f JOIN reviews r ON r.id = f.review_id
        WHERE r.status <> 'skipped' AND f.severity IS NOT NULL GROUP BY 1, 2;
    INSERT INTO stats_day_path
        SELECT r.created_at / 86400, f.path, count(*)
        FROM findings f JOIN reviews r ON r.id = f.review_id
        WHERE r.status <> 'skipped' AND f.kind = 'inline' AND f.path IS NOT NULL GROUP BY 1, 2;
    INSERT INTO stats_total_path SELECT path, sum(n) FROM stats_day_path GROUP BY path;
END $$;
