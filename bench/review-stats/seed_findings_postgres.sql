-- PostgreSQL's spelling of seed_findings.sql: the same $1 findings over all reviews.
INSERT INTO findings (review_id, repo_full_name, pr_number, kind, severity, event, path, line,
                      body, github_review_id, github_comment_id, created_at)
SELECT g.rid, r.repo_full_name, r.pr_number,
       CASE WHEN k < 80 THEN 'inline' WHEN k < 95 THEN 'summary' ELSE 'comment' END,
       CASE WHEN k < 16 THEN 'blocking' WHEN k < 56 THEN 'nit' WHEN k < 80 THEN 'question' END,
       CASE WHEN k >= 80 AND k < 95 THEN 'COMMENT' END,
       CASE WHEN k < 80 THEN 'src/module_' || p || '/lib.rs' END,
       CASE WHEN k < 80 THEN 1 + j % 400 END,
       'This unwrap panics on malformed input; return an error instead.',
       200000000 + g.rid, CASE WHEN k < 80 THEN 300000000 + j END,
       coalesce(r.completed_at, r.created_at)
FROM (
    SELECT j,
           1 + (j * 2654435761) % 4294967291 % (SELECT max(id) FROM reviews) AS rid,
           (j * 1103515245 + 12345) % 2147483647 % 100 AS k,
           (j * 69069 + 1) % 4294967291 % 200 AS p
    FROM generate_series(1, $1) AS j
) AS g JOIN reviews r ON r.id = g.rid
ORDER BY j
