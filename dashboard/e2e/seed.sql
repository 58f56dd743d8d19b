-- The database the browser tests run on (apps/review-server/tests/dashboard_browser.rs loads
-- it into the server's SQLite after start, with :now replaced by the current epoch second).
-- Three repositories, 220 archived reviews 35 to 44 days old (so the list pages past 200), 39
-- reviews over the last 30 days in every status (one running, one waiting, two failures in the
-- last day for the overview's triage band), their findings, one transcript (written beside it
-- by the harness), one skill. Deterministic.

INSERT INTO repos (full_name, installation_id, prompt, model, enabled, created_at) VALUES
  ('acme/widgets', 77, NULL, 'openai/gpt-5', 0, :now - 40 * 86400),
  ('acme/gadgets', 77, 'Focus on error handling and retries.', NULL, 1, :now - 35 * 86400),
  ('octo/docs', 78, NULL, 'zai-coding-plan/glm-4.6', 1, :now - 33 * 86400);

-- The archive first, so it has the lowest ids: the list shows it only after "Load older".
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 220)
INSERT INTO reviews (repo_full_name, pr_number, title, session_id, status, error, "trigger",
                     attempt, cost, tokens, model, created_at, completed_at)
SELECT 'octo/docs', 500 + i, 'Archived change ' || i, NULL, 'completed', NULL, 'opened', 0,
       0.02, 2000, 'anthropic/claude-sonnet-4-5',
       :now - 44 * 86400 + i * 3600, :now - 44 * 86400 + i * 3600 + 90
FROM n;

-- 30 completed reviews, one a day: gadgets on even days, docs on odd days.
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30)
INSERT INTO reviews (repo_full_name, pr_number, title, session_id, status, error, "trigger",
                     attempt, cost, tokens, model, created_at, completed_at)
SELECT CASE WHEN i % 2 = 0 THEN 'acme/gadgets' ELSE 'octo/docs' END,
       100 + i % 7,
       'Seeded change ' || i,
       NULL, 'completed', NULL,
       CASE i % 3 WHEN 0 THEN 'opened' WHEN 1 THEN 'synchronize' ELSE 'command' END,
       0,
       0.01 * i,
       1000 * i,
       CASE WHEN i % 3 = 0 THEN 'openai/gpt-5' ELSE 'anthropic/claude-sonnet-4-5' END,
       :now - (31 - i) * 86400 + 3600,
       :now - (31 - i) * 86400 + 3600 + 60 + 10 * i
FROM n;

-- The review with findings and a transcript.
INSERT INTO reviews (repo_full_name, pr_number, title, session_id, status, error, "trigger",
                     attempt, cost, tokens, model, created_at, completed_at)
VALUES ('acme/gadgets', 12, 'Add retry to HTTP client', 'ses_seed_transcript', 'completed', NULL,
        'opened', 0, 0.4213, 182300, 'anthropic/claude-sonnet-4-5', :now - 2 * 86400, :now - 2 * 86400 + 312);

-- In the overview's triage band: one review running, one waiting, two failures of the last
-- day (the provider overloaded; a timeout).
INSERT INTO reviews (repo_full_name, pr_number, title, session_id, status, error, "trigger",
                     attempt, cost, tokens, model, created_at, completed_at) VALUES
  ('octo/docs', 60, 'Translate the FAQ', NULL, 'running', NULL, 'opened', 0, NULL, NULL, NULL,
   :now - 95, NULL),
  ('octo/docs', 61, 'Fix broken links', NULL, 'pending', NULL, 'opened', 0, NULL, NULL, NULL,
   :now - 30, NULL),
  ('acme/gadgets', 63, 'Live transcript', 'ses_running', 'running', NULL, 'opened', 0, NULL, NULL,
   NULL, :now - 50, NULL),
  ('acme/gadgets', 21, 'Bump serde', NULL, 'failed', 'running the agent: model provider answered 529: Overloaded',
   'opened', 0, NULL, NULL, NULL, :now - 2 * 3600, :now - 2 * 3600 + 40),
  ('octo/docs', 62, 'New tutorial', NULL, 'failed', 'timeout: no model progress for 120 s',
   'synchronize', 0, NULL, NULL, NULL, :now - 5 * 3600, :now - 5 * 3600 + 130);

-- Two failures, one retried; one skipped.
INSERT INTO reviews (repo_full_name, pr_number, title, session_id, status, error, "trigger",
                     attempt, cost, tokens, model, created_at, completed_at) VALUES
  ('octo/docs', 41, 'Rewrite install guide', NULL, 'failed', 'provider error: overloaded (529)',
   'opened', 0, NULL, NULL, NULL, :now - 3 * 86400, :now - 3 * 86400 + 20),
  ('octo/docs', 41, 'Rewrite install guide', NULL, 'completed', NULL,
   'retry', 1, 0.2750, 99100, 'anthropic/claude-sonnet-4-5', :now - 3 * 86400 + 80, :now - 3 * 86400 + 400),
  ('acme/gadgets', 4, 'Add metrics endpoint', NULL, 'failed', 'Stopped by user',
   'command', 0, NULL, NULL, NULL, :now - 4 * 86400, :now - 4 * 86400 + 50),
  ('acme/gadgets', 7, 'Drop Node 18 support', NULL, 'skipped', NULL,
   'synchronize', 0, NULL, NULL, NULL, :now - 1 * 86400, :now - 1 * 86400 + 5);

INSERT INTO findings (review_id, repo_full_name, pr_number, kind, severity, event, path, line,
                      body, github_review_id, github_comment_id, created_at)
SELECT id, repo_full_name, pr_number, f.kind, f.severity, f.event, f.path, f.line, f.body,
       5001, f.comment, created_at + 300
FROM reviews,
     (SELECT 'summary' AS kind, NULL AS severity, 'REQUEST_CHANGES' AS event, NULL AS path, NULL AS line,
             'The retry loop never backs off: two blocking issues below.' AS body, NULL AS comment
      UNION ALL SELECT 'inline', 'blocking', NULL, 'src/http/client.rs', 88,
             '`retry` sleeps for 0 ms when `attempt == 0`; the first retry hammers the server.', 9001
      UNION ALL SELECT 'inline', 'blocking', NULL, 'src/http/client.rs', 102,
             'A 4xx is retried too; only 5xx and timeouts should be.', 9002
      UNION ALL SELECT 'inline', 'question', NULL, 'src/http/client.rs', 120,
             'Should the jitter be configurable?

_Unverified: the verifier gave no verdict on this candidate._', 9003
      UNION ALL SELECT 'inline', 'nit', NULL, 'src/http/mod.rs', 7,
             'Unused import `std::time::Instant`.

```suggestion
use std::time::Duration;
```', 9004) AS f
WHERE reviews.session_id = 'ses_seed_transcript';

-- Outcomes (issue 29): the inline findings start open; one was fixed, one answered as intended.
UPDATE findings SET outcome = 'open' WHERE kind = 'inline';
UPDATE findings SET outcome = 'resolved', outcome_at = created_at + 3600, outcome_sha = 'c0ffee1',
    outcome_reason = 'fixed at c0ffee1: the retry now waits 100 ms before the first attempt'
WHERE github_comment_id = 9001;
UPDATE findings SET outcome = 'dismissed', outcome_at = created_at + 7200,
    outcome_reason = '@octocat replied: "Intended: jitter is fixed by the SLA."'
WHERE github_comment_id = 9003;

-- A candidate verification dropped from the review with findings (issue 27).
INSERT INTO dropped_findings (review_id, repo_full_name, pr_number, path, line, severity, body,
                              reason, created_at)
SELECT id, repo_full_name, pr_number, 'src/http/client.rs', 64, 'blocking',
       'The timeout is never applied to the request.',
       'src/http/client.rs:58 sets the timeout on the client builder, which applies it to every request.',
       created_at + 300
FROM reviews WHERE session_id = 'ses_seed_transcript';

-- A nit on a few of the daily reviews, so the severity chart has days.
INSERT INTO findings (review_id, repo_full_name, pr_number, kind, severity, event, path, line,
                      body, created_at)
SELECT id, repo_full_name, pr_number, 'inline', 'nit', NULL, 'docs/install.md', 10 + id,
       'Wrap this line.', created_at + 100
FROM reviews WHERE title LIKE 'Seeded change %' AND id % 4 = 0;

INSERT INTO skills (name, source_url, owner, repo, path, "ref", description, enabled, blob, created_at)
VALUES ('rust-errors', 'https://github.com/acme/skills/tree/main/rust-errors', 'acme', 'skills',
        'rust-errors', '0123456789abcdef0123456789abcdef01234567',
        'Checks error handling in Rust code', 0, NULL, :now - 5 * 86400);
