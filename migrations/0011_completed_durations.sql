-- projects[].avg_duration averages completed reviews only (docs/review-service.md section 2,
-- ProjectStatsRow; issue 19): dur_sum and dur_n of stats_day_repo and stats_total_repo counted
-- every non-skipped row with a completed_at, so a review failed at boot after a long wait
-- inflated the average. stats_day_status keeps its per-status durations (the latency figures
-- read its completed rows). The triggers that write the two repo tables are recreated with
-- the completed-only durations and the two tables' durations are recomputed from the reviews.

DROP TRIGGER stats_reviews_insert;
DROP TRIGGER stats_reviews_delete;
DROP TRIGGER stats_reviews_update;
DROP TRIGGER stats_total_reviews_insert;
DROP TRIGGER stats_total_reviews_delete;
DROP TRIGGER stats_total_reviews_update;

CREATE TRIGGER stats_reviews_insert AFTER INSERT ON reviews BEGIN
    INSERT INTO stats_day_repo SELECT NEW.created_at / 86400, NEW.repo_full_name, 1, coalesce(NEW.cost, 0), coalesce(NEW.tokens, 0), CASE WHEN NEW.status = 'completed' THEN coalesce(NEW.completed_at - NEW.created_at, 0) ELSE 0 END, NEW.status = 'completed' AND NEW.completed_at IS NOT NULL WHERE NEW.status != 'skipped'
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
    INSERT INTO stats_day_model SELECT NEW.created_at / 86400, NEW.model, 1, coalesce(NEW.cost, 0), coalesce(NEW.tokens, 0) WHERE NEW.status != 'skipped' AND NEW.model IS NOT NULL
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens;
    INSERT INTO stats_day_trigger SELECT NEW.created_at / 86400, coalesce(NEW."trigger", 'unknown'), 1 WHERE NEW.status != 'skipped'
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_status SELECT NEW.created_at / 86400, NEW.status, 1, coalesce(NEW.cost, 0), coalesce(NEW.tokens, 0), coalesce(NEW.completed_at - NEW.created_at, 0), NEW.completed_at IS NOT NULL WHERE true
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
END;

CREATE TRIGGER stats_reviews_delete AFTER DELETE ON reviews BEGIN
    INSERT INTO stats_day_repo SELECT OLD.created_at / 86400, OLD.repo_full_name, -1, -coalesce(OLD.cost, 0), -coalesce(OLD.tokens, 0), -(CASE WHEN OLD.status = 'completed' THEN coalesce(OLD.completed_at - OLD.created_at, 0) ELSE 0 END), -(OLD.status = 'completed' AND OLD.completed_at IS NOT NULL) WHERE OLD.status != 'skipped'
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
    INSERT INTO stats_day_repo SELECT OLD.created_at / 86400, OLD.repo_full_name, -1, -coalesce(OLD.cost, 0), -coalesce(OLD.tokens, 0), -(CASE WHEN OLD.status = 'completed' THEN coalesce(OLD.completed_at - OLD.created_at, 0) ELSE 0 END), -(OLD.status = 'completed' AND OLD.completed_at IS NOT NULL) WHERE OLD.status != 'skipped'
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
    INSERT INTO stats_day_model SELECT OLD.created_at / 86400, OLD.model, -1, -coalesce(OLD.cost, 0), -coalesce(OLD.tokens, 0) WHERE OLD.status != 'skipped' AND OLD.model IS NOT NULL
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens;
    INSERT INTO stats_day_trigger SELECT OLD.created_at / 86400, coalesce(OLD."trigger", 'unknown'), -1 WHERE OLD.status != 'skipped'
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_status SELECT OLD.created_at / 86400, OLD.status, -1, -coalesce(OLD.cost, 0), -coalesce(OLD.tokens, 0), -coalesce(OLD.completed_at - OLD.created_at, 0), -(OLD.completed_at IS NOT NULL) WHERE true
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
    INSERT INTO stats_day_repo SELECT NEW.created_at / 86400, NEW.repo_full_name, 1, coalesce(NEW.cost, 0), coalesce(NEW.tokens, 0), CASE WHEN NEW.status = 'completed' THEN coalesce(NEW.completed_at - NEW.created_at, 0) ELSE 0 END, NEW.status = 'completed' AND NEW.completed_at IS NOT NULL WHERE NEW.status != 'skipped'
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
    INSERT INTO stats_day_model SELECT NEW.created_at / 86400, NEW.model, 1, coalesce(NEW.cost, 0), coalesce(NEW.tokens, 0) WHERE NEW.status != 'skipped' AND NEW.model IS NOT NULL
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens;
    INSERT INTO stats_day_trigger SELECT NEW.created_at / 86400, coalesce(NEW."trigger", 'unknown'), 1 WHERE NEW.status != 'skipped'
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO stats_day_status SELECT NEW.created_at / 86400, NEW.status, 1, coalesce(NEW.cost, 0), coalesce(NEW.tokens, 0), coalesce(NEW.completed_at - NEW.created_at, 0), NEW.completed_at IS NOT NULL WHERE true
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
END;

CREATE TRIGGER stats_total_reviews_insert AFTER INSERT ON reviews
BEGIN
    INSERT INTO stats_total_repo SELECT NEW.repo_full_name, 1, coalesce(NEW.cost, 0), coalesce(NEW.tokens, 0), CASE WHEN NEW.status = 'completed' THEN coalesce(NEW.completed_at - NEW.created_at, 0) ELSE 0 END, NEW.status = 'completed' AND NEW.completed_at IS NOT NULL WHERE NEW.status != 'skipped'
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
END;

CREATE TRIGGER stats_total_reviews_delete AFTER DELETE ON reviews
BEGIN
    INSERT INTO stats_total_repo SELECT OLD.repo_full_name, -1, -coalesce(OLD.cost, 0), -coalesce(OLD.tokens, 0), -(CASE WHEN OLD.status = 'completed' THEN coalesce(OLD.completed_at - OLD.created_at, 0) ELSE 0 END), -(OLD.status = 'completed' AND OLD.completed_at IS NOT NULL) WHERE OLD.status != 'skipped'
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
    INSERT INTO stats_total_path SELECT path, -count(*) FROM findings WHERE review_id = OLD.id AND kind = 'inline' AND path IS NOT NULL AND OLD.status != 'skipped' GROUP BY path
        ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER stats_total_reviews_update AFTER UPDATE OF repo_full_name, status, "trigger", cost, tokens, model, created_at, completed_at ON reviews
BEGIN
    INSERT INTO stats_total_repo SELECT OLD.repo_full_name, -1, -coalesce(OLD.cost, 0), -coalesce(OLD.tokens, 0), -(CASE WHEN OLD.status = 'completed' THEN coalesce(OLD.completed_at - OLD.created_at, 0) ELSE 0 END), -(OLD.status = 'completed' AND OLD.completed_at IS NOT NULL) WHERE OLD.status != 'skipped'
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
    INSERT INTO stats_total_repo SELECT NEW.repo_full_name, 1, coalesce(NEW.cost, 0), coalesce(NEW.tokens, 0), CASE WHEN NEW.status = 'completed' THEN coalesce(NEW.completed_at - NEW.created_at, 0) ELSE 0 END, NEW.status = 'completed' AND NEW.completed_at IS NOT NULL WHERE NEW.status != 'skipped'
        ON CONFLICT DO UPDATE SET reviews = reviews + excluded.reviews, cost = cost + excluded.cost, tokens = tokens + excluded.tokens, dur_sum = dur_sum + excluded.dur_sum, dur_n = dur_n + excluded.dur_n;
END;

UPDATE stats_day_repo SET
    dur_sum = coalesce((SELECT sum(r.completed_at - r.created_at) FROM reviews r
        WHERE r.repo_full_name = stats_day_repo.repo AND r.created_at >= stats_day_repo.day * 86400
          AND r.created_at < (stats_day_repo.day + 1) * 86400
          AND r.status = 'completed' AND r.completed_at IS NOT NULL), 0),
    dur_n = (SELECT count(*) FROM reviews r
        WHERE r.repo_full_name = stats_day_repo.repo AND r.created_at >= stats_day_repo.day * 86400
          AND r.created_at < (stats_day_repo.day + 1) * 86400
          AND r.status = 'completed' AND r.completed_at IS NOT NULL);
UPDATE stats_total_repo SET
    dur_sum = (SELECT coalesce(sum(d.dur_sum), 0) FROM stats_day_repo d WHERE d.repo = stats_total_repo.repo),
    dur_n = (SELECT coalesce(sum(d.dur_n), 0) FROM stats_day_repo d WHERE d.repo = stats_total_repo.repo);
