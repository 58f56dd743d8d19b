-- Per-UTC-day rollups split by repo and by model: the tables, indexes and backfill of SQLite's
-- 0013 (docs/review-service.md section 4, Stats; docs/architecture.md, Store), kept exact by
-- the triggers of 0002, whose functions stats_reviews_changed() and stats_findings_changed()
-- are replaced here to also call the functions below. A stats or charts
-- request filtered on one repo or one model reads whole days from here and only the partial
-- days at its edges from the raw rows (issue 19; bench/review-stats).
--
-- A facet is 'repo' (value: repo_full_name) or 'model' (value: model; reviews without a model
-- have no model row).
-- - stats_day_facet: reviews per facet value, day and status, with cost, tokens and durations;
--   every status, skipped included; dur_sum and dur_n count the rows with a completed_at, per
--   status (as stats_day_status).
-- - stats_day_facet_trigger: non-skipped reviews per facet value, day and trigger (unknown for
--   null).
-- - stats_day_repo_model: non-skipped reviews with a model per repo, day and model; durations
--   of completed reviews only (as stats_day_repo).
-- - stats_total_repo_model: the all-time sums of stats_day_repo_model per repo and model.
-- - stats_day_facet_severity: findings of non-skipped reviews per facet value, day, severity.
-- - stats_total_facet_path: all-time inline findings of non-skipped reviews per facet value
--   and path.
-- A finding counts on its review's day, repo and model, so a review's findings move when its
-- status enters or leaves skipped, or its day, repo or model changes (the model is set when it
-- completes). Such a move takes the advisory lock that orders finding writes
-- (crates/review-store/src/findings.rs, FINDINGS_LOCK) before touching any rollup row: it
-- writes severity rows in another order than a concurrent insert of findings would.

CREATE TABLE stats_day_facet (
    facet TEXT NOT NULL CHECK (facet IN ('repo', 'model')), value TEXT NOT NULL,
    day BIGINT NOT NULL, status TEXT NOT NULL,
    reviews BIGINT NOT NULL, cost DOUBLE PRECISION NOT NULL, tokens BIGINT NOT NULL,
    dur_sum BIGINT NOT NULL, dur_n BIGINT NOT NULL,
    PRIMARY KEY (facet, value, day, status) INCLUDE (reviews, cost, tokens, dur_sum, dur_n)
);
CREATE TABLE stats_day_facet_trigger (
    facet TEXT NOT NULL CHECK (facet IN ('repo', 'model')), value TEXT NOT NULL,
    day BIGINT NOT NULL, trig TEXT NOT NULL, n BIGINT NOT NULL,
    PRIMARY KEY (facet, value, day, trig) INCLUDE (n)
);
CREATE TABLE stats_day_repo_model (
    repo TEXT NOT NULL, day BIGINT NOT NULL, model TEXT NOT NULL,
    reviews BIGINT NOT NULL, cost DOUBLE PRECISION NOT NULL, tokens BIGINT NOT NULL,
    dur_sum BIGINT NOT NULL, dur_n BIGINT NOT NULL,
    PRIMARY KEY (repo, day, model) INCLUDE (reviews, cost, tokens, dur_sum, dur_n)
);
CREATE INDEX stats_day_repo_model_by_model
    ON stats_day_repo_model (model, day, repo) INCLUDE (reviews, cost, tokens, dur_sum, dur_n);
CREATE TABLE stats_total_repo_model (
    repo TEXT NOT NULL, model TEXT NOT NULL,
    reviews BIGINT NOT NULL, cost DOUBLE PRECISION NOT NULL, tokens BIGINT NOT NULL,
    dur_sum BIGINT NOT NULL, dur_n BIGINT NOT NULL,
    PRIMARY KEY (repo, model) INCLUDE (reviews, cost, tokens, dur_sum, dur_n)
);
CREATE INDEX stats_total_repo_model_by_model
    ON stats_total_repo_model (model, repo) INCLUDE (reviews, cost, tokens, dur_sum, dur_n);
CREATE TABLE stats_day_facet_severity (
    facet TEXT NOT NULL CHECK (facet IN ('repo', 'model')), value TEXT NOT NULL,
    day BIGINT NOT NULL, severity TEXT NOT NULL, n BIGINT NOT NULL,
    PRIMARY KEY (facet, value, day, severity) INCLUDE (n)
);
CREATE TABLE stats_total_facet_path (
    facet TEXT NOT NULL CHECK (facet IN ('repo', 'model')), value TEXT NOT NULL,
    path TEXT NOT NULL, n BIGINT NOT NULL,
    PRIMARY KEY (facet, value, path) INCLUDE (n)
);

-- The latency p95 of a repo or model walks that repo's or model's completed durations. Each
-- duration index also holds completed_at, so PostgreSQL reads the walk from the index alone (an
-- index-only scan needs every column of the expression): reviews_duration of 0001 is rebuilt
-- so (the unfiltered p95 read 42,000 table rows at a million reviews: 300 ms).
CREATE INDEX reviews_repo_duration ON reviews (repo_full_name, (completed_at - created_at), created_at)
    INCLUDE (completed_at) WHERE status = 'completed' AND completed_at IS NOT NULL;
CREATE INDEX reviews_model_duration ON reviews (model, (completed_at - created_at), created_at)
    INCLUDE (completed_at) WHERE status = 'completed' AND completed_at IS NOT NULL;
DROP INDEX reviews_duration;
CREATE INDEX reviews_duration ON reviews ((completed_at - created_at), created_at, repo_full_name, model)
    INCLUDE (completed_at) WHERE status = 'completed' AND completed_at IS NOT NULL;

-- The contribution of review r, times sign, to the repo and model rollups.
CREATE FUNCTION stats_review_facet_add(r reviews, sign BIGINT) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_day BIGINT := r.created_at / 86400;
    v_trig TEXT := coalesce(r."trigger", 'unknown');
    v_cost DOUBLE PRECISION := sign * coalesce(r.cost, 0);
    v_tokens BIGINT := sign * coalesce(r.tokens, 0);
    v_dur_sum BIGINT := CASE WHEN r.completed_at IS NOT NULL THEN sign * (r.completed_at - r.created_at) ELSE 0 END;
    v_dur_n BIGINT := CASE WHEN r.completed_at IS NOT NULL THEN sign ELSE 0 END;
    v_done BOOLEAN := r.status = 'completed' AND r.completed_at IS NOT NULL;
BEGIN
    INSERT INTO stats_day_facet AS t VALUES ('repo', r.repo_full_name, v_day, r.status, sign, v_cost, v_tokens, v_dur_sum, v_dur_n)
        ON CONFLICT (facet, value, day, status) DO UPDATE SET reviews = t.reviews + excluded.reviews,
            cost = t.cost + excluded.cost, tokens = t.tokens + excluded.tokens,
            dur_sum = t.dur_sum + excluded.dur_sum, dur_n = t.dur_n + excluded.dur_n;
    IF r.status <> 'skipped' THEN
        INSERT INTO stats_day_facet_trigger AS t VALUES ('repo', r.repo_full_name, v_day, v_trig, sign)
            ON CONFLICT (facet, value, day, trig) DO UPDATE SET n = t.n + excluded.n;
    END IF;
    IF r.model IS NULL THEN
        RETURN;
    END IF;
    INSERT INTO stats_day_facet AS t VALUES ('model', r.model, v_day, r.status, sign, v_cost, v_tokens, v_dur_sum, v_dur_n)
        ON CONFLICT (facet, value, day, status) DO UPDATE SET reviews = t.reviews + excluded.reviews,
            cost = t.cost + excluded.cost, tokens = t.tokens + excluded.tokens,
            dur_sum = t.dur_sum + excluded.dur_sum, dur_n = t.dur_n + excluded.dur_n;
    IF r.status <> 'skipped' THEN
        INSERT INTO stats_day_facet_trigger AS t VALUES ('model', r.model, v_day, v_trig, sign)
            ON CONFLICT (facet, value, day, trig) DO UPDATE SET n = t.n + excluded.n;
        INSERT INTO stats_day_repo_model AS t VALUES (r.repo_full_name, v_day, r.model, sign, v_cost, v_tokens,
                CASE WHEN v_done THEN v_dur_sum ELSE 0 END, CASE WHEN v_done THEN sign ELSE 0 END)
            ON CONFLICT (repo, day, model) DO UPDATE SET reviews = t.reviews + excluded.reviews,
                cost = t.cost + excluded.cost, tokens = t.tokens + excluded.tokens,
                dur_sum = t.dur_sum + excluded.dur_sum, dur_n = t.dur_n + excluded.dur_n;
        INSERT INTO stats_total_repo_model AS t VALUES (r.repo_full_name, r.model, sign, v_cost, v_tokens,
                CASE WHEN v_done THEN v_dur_sum ELSE 0 END, CASE WHEN v_done THEN sign ELSE 0 END)
            ON CONFLICT (repo, model) DO UPDATE SET reviews = t.reviews + excluded.reviews,
                cost = t.cost + excluded.cost, tokens = t.tokens + excluded.tokens,
                dur_sum = t.dur_sum + excluded.dur_sum, dur_n = t.dur_n + excluded.dur_n;
    END IF;
END $$;

-- The contribution of the findings of review r, times sign, to the repo and model finding
-- rollups.
CREATE FUNCTION stats_review_facet_findings_add(r reviews, sign BIGINT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF r.status = 'skipped' THEN
        RETURN;
    END IF;
    INSERT INTO stats_day_facet_severity AS t
        SELECT k.facet, k.value, r.created_at / 86400, f.severity, sign * count(*)
        FROM findings f, (VALUES ('repo', r.repo_full_name), ('model', r.model)) AS k(facet, value)
        WHERE f.review_id = r.id AND f.severity IS NOT NULL AND k.value IS NOT NULL
        GROUP BY k.facet, k.value, f.severity ORDER BY k.facet DESC, f.severity
        ON CONFLICT (facet, value, day, severity) DO UPDATE SET n = t.n + excluded.n;
    INSERT INTO stats_total_facet_path AS t
        SELECT k.facet, k.value, f.path, sign * count(*)
        FROM findings f, (VALUES ('repo', r.repo_full_name), ('model', r.model)) AS k(facet, value)
        WHERE f.review_id = r.id AND f.kind = 'inline' AND f.path IS NOT NULL AND k.value IS NOT NULL
        GROUP BY k.facet, k.value, f.path ORDER BY k.facet DESC, f.path
        ON CONFLICT (facet, value, path) DO UPDATE SET n = t.n + excluded.n;
END $$;

CREATE OR REPLACE FUNCTION stats_reviews_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    -- The findings move with the review (0002: when it goes, enters or leaves skipped, or
    -- changes day; here also when its repo or model changes).
    v_moves_day BOOLEAN := TG_OP = 'DELETE' OR (TG_OP = 'UPDATE'
        AND ((OLD.status = 'skipped') <> (NEW.status = 'skipped') OR OLD.created_at / 86400 <> NEW.created_at / 86400));
    v_moves_facet BOOLEAN := v_moves_day OR (TG_OP = 'UPDATE'
        AND (OLD.repo_full_name <> NEW.repo_full_name OR OLD.model IS DISTINCT FROM NEW.model));
BEGIN
    IF v_moves_facet AND EXISTS (SELECT 1 FROM findings WHERE review_id = OLD.id) THEN
        -- FINDINGS_LOCK of crates/review-store/src/findings.rs, before any rollup row.
        PERFORM pg_advisory_xact_lock(8243124888017528369);
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM stats_review_add(OLD, -1);
        PERFORM stats_review_facet_add(OLD, -1);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM stats_review_add(NEW, 1);
        PERFORM stats_review_facet_add(NEW, 1);
    END IF;
    IF v_moves_day THEN
        PERFORM stats_review_findings_add(OLD, -1);
    END IF;
    IF v_moves_facet THEN
        PERFORM stats_review_facet_findings_add(OLD, -1);
    END IF;
    IF v_moves_day AND TG_OP = 'UPDATE' THEN
        PERFORM stats_review_findings_add(NEW, 1);
    END IF;
    IF v_moves_facet AND TG_OP = 'UPDATE' THEN
        PERFORM stats_review_facet_findings_add(NEW, 1);
    END IF;
    RETURN NULL;
END $$;

-- The contribution of finding f, times sign, to the repo and model rollups, while its review
-- exists and is not skipped.
CREATE FUNCTION stats_finding_facet_add(f findings, sign BIGINT) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_day BIGINT;
    v_repo TEXT;
    v_model TEXT;
BEGIN
    SELECT r.created_at / 86400, r.repo_full_name, r.model INTO v_day, v_repo, v_model
        FROM reviews r WHERE r.id = f.review_id AND r.status <> 'skipped';
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF f.severity IS NOT NULL THEN
        INSERT INTO stats_day_facet_severity AS t VALUES ('repo', v_repo, v_day, f.severity, sign)
            ON CONFLICT (facet, value, day, severity) DO UPDATE SET n = t.n + excluded.n;
        IF v_model IS NOT NULL THEN
            INSERT INTO stats_day_facet_severity AS t VALUES ('model', v_model, v_day, f.severity, sign)
                ON CONFLICT (facet, value, day, severity) DO UPDATE SET n = t.n + excluded.n;
        END IF;
    END IF;
    IF f.kind = 'inline' AND f.path IS NOT NULL THEN
        INSERT INTO stats_total_facet_path AS t VALUES ('repo', v_repo, f.path, sign)
            ON CONFLICT (facet, value, path) DO UPDATE SET n = t.n + excluded.n;
        IF v_model IS NOT NULL THEN
            INSERT INTO stats_total_facet_path AS t VALUES ('model', v_model, f.path, sign)
                ON CONFLICT (facet, value, path) DO UPDATE SET n = t.n + excluded.n;
        END IF;
    END IF;
END $$;

CREATE OR REPLACE FUNCTION stats_findings_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM stats_finding_add(OLD, -1);
        PERFORM stats_finding_facet_add(OLD, -1);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM stats_finding_add(NEW, 1);
        PERFORM stats_finding_facet_add(NEW, 1);
    END IF;
    RETURN NULL;
END $$;

-- The repo and model rollups from the rows: part of stats_rebuild(), and the backfill below.
CREATE FUNCTION stats_rebuild_facets() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE stats_day_facet, stats_day_facet_trigger, stats_day_repo_model, stats_total_repo_model,
        stats_day_facet_severity, stats_total_facet_path;
    INSERT INTO stats_day_facet
        SELECT k.facet, k.value, r.created_at / 86400, r.status, count(*),
            coalesce(sum(r.cost), 0), coalesce(sum(r.tokens), 0),
            coalesce(sum(r.completed_at - r.created_at), 0), count(r.completed_at)
        FROM reviews r, LATERAL (VALUES ('repo', r.repo_full_name), ('model', r.model)) AS k(facet, value)
        WHERE k.value IS NOT NULL GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4;
    INSERT INTO stats_day_facet_trigger
        SELECT k.facet, k.value, r.created_at / 86400, coalesce(r."trigger", 'unknown'), count(*)
        FROM reviews r, LATERAL (VALUES ('repo', r.repo_full_name), ('model', r.model)) AS k(facet, value)
        WHERE r.status <> 'skipped' AND k.value IS NOT NULL GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4;
    INSERT INTO stats_day_repo_model
        SELECT repo_full_name, created_at / 86400, model, count(*), coalesce(sum(cost), 0),
            coalesce(sum(tokens), 0),
            coalesce(sum(completed_at - created_at) FILTER (WHERE status = 'completed'), 0),
            count(completed_at) FILTER (WHERE status = 'completed')
        FROM reviews WHERE status <> 'skipped' AND model IS NOT NULL GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;
    INSERT INTO stats_total_repo_model
        SELECT repo, model, sum(reviews), sum(cost), sum(tokens), sum(dur_sum), sum(dur_n)
        FROM stats_day_repo_model GROUP BY 1, 2 ORDER BY 1, 2;
    INSERT INTO stats_day_facet_severity
        SELECT k.facet, k.value, r.created_at / 86400, f.severity, count(*)
        FROM findings f JOIN reviews r ON r.id = f.review_id,
            LATERAL (VALUES ('repo', r.repo_full_name), ('model', r.model)) AS k(facet, value)
        WHERE r.status <> 'skipped' AND f.severity IS NOT NULL AND k.value IS NOT NULL
        GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4;
    INSERT INTO stats_total_facet_path
        SELECT k.facet, k.value, f.path, count(*)
        FROM findings f JOIN reviews r ON r.id = f.review_id,
            LATERAL (VALUES ('repo', r.repo_full_name), ('model', r.model)) AS k(facet, value)
        WHERE r.status <> 'skipped' AND f.kind = 'inline' AND f.path IS NOT NULL AND k.value IS NOT NULL
        GROUP BY 1, 2, 3;
END $$;

-- stats_rebuild() recomputes these rollups too: the function of 0002 keeps its body under
-- another name and the new one calls both.
ALTER FUNCTION stats_rebuild() RENAME TO stats_rebuild_days;
CREATE FUNCTION stats_rebuild() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM stats_rebuild_days();
    PERFORM stats_rebuild_facets();
END $$;

-- Backfill from the rows already there.
SELECT stats_rebuild_facets();
