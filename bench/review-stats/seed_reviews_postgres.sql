-- PostgreSQL's spelling of seed_reviews.sql: the same $1 reviews over the two years before $2
-- (epoch seconds), column by column the same hashes of the row number.
INSERT INTO reviews (repo_full_name, pr_number, title, session_id, status, error, "trigger",
                     attempt, cost, tokens, model, check_run_id, patch_id, created_at, completed_at)
SELECT 'org' || repo || '/service-' || repo, 1 + i % 5000,
       'Fix the widget parser in module ' || (i % 97), 'ses_' || i,
       CASE WHEN s < 850 THEN 'completed' WHEN s < 930 THEN 'failed' WHEN s < 990 THEN 'skipped'
            WHEN s < 995 THEN 'pending' ELSE 'running' END,
       CASE WHEN s >= 850 AND s < 930 THEN 'provider error: overloaded' END,
       CASE WHEN t < 50 THEN 'synchronize' WHEN t < 80 THEN 'opened' WHEN t < 88 THEN 'reopened'
            WHEN t < 95 THEN 'command' WHEN t < 98 THEN 'retry' END,
       CASE WHEN t >= 95 AND t < 98 THEN 1 ELSE 0 END,
       CASE WHEN s < 930 THEN c / 10000.0 END,
       CASE WHEN s < 930 THEN 2000 + c * 3 END,
       CASE WHEN s < 930 THEN CASE m WHEN 0 THEN 'anthropic/claude-sonnet-4-5'
            WHEN 1 THEN 'anthropic/claude-opus-4-1' WHEN 2 THEN 'anthropic/claude-haiku-4-5'
            WHEN 3 THEN 'openai/gpt-5' WHEN 4 THEN 'openai/gpt-5-mini' WHEN 5 THEN 'openai/o3'
            WHEN 6 THEN 'zai/glm-4.6' ELSE 'openai/gpt-4.1' END END,
       CASE WHEN s < 990 THEN 100000000 + i END,
       CASE WHEN s < 850 OR (s >= 930 AND s < 990) THEN lpad(to_hex(i), 40, '0') END,
       at,
       CASE WHEN s < 990 THEN at + dur END
FROM (
    SELECT i,
           (i * 2654435761) % 4294967291 % 1000 AS s,
           (i * 1103515245 + 12345) % 2147483647 % 50 AS repo,
           (i * 69069 + 1) % 4294967291 % 8 AS m,
           (i * 22695477 + 1) % 4294967291 % 100 AS t,
           30 + (i * 134775813 + 1) % 4294967291 % 600 AS dur,
           (i * 214013 + 2531011) % 4294967291 % 100000 AS c,
           $2 - 63072000 + i * (63072000 / $1) AS at
    FROM generate_series(1, $1) AS i
) AS g
ORDER BY i
