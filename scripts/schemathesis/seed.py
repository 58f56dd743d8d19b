"""Seeds a review-server data dir so schemathesis reaches the code behind every lookup.

Usage: python3 seed.py DATA_DIR. Run it on a database the server has migrated and then left
(the server is restarted after), so every row is read back through the real store:
- 200 reviews and 600 findings from bench/review-stats/seed_*.sql (every status, trigger and
  finding kind), and the repos they name;
- the repo `acme/widgets` (enabled, installation 1), which the fuzz config names for path
  parameters, with review 1 on it;
- the skill `lint-rules` (enabled), named for PUT /api/skills/{name};
- a JSON transcript for review 1 and a non-JSON one for review 2, so GET .../session returns
  both the transcript and the `session-unparseable` shape.
"""
import pathlib
import sqlite3
import sys
import time

data = pathlib.Path(sys.argv[1])
bench = pathlib.Path(__file__).resolve().parents[2] / "bench" / "review-stats"
now = int(time.time())
con = sqlite3.connect(data / "review.db")
con.executescript("PRAGMA busy_timeout = 5000;")
with con:
    con.execute((bench / "seed_reviews.sql").read_text(), (200, now))
    con.execute((bench / "seed_findings.sql").read_text(), (600,))
    con.execute(
        "INSERT OR IGNORE INTO repos (full_name, installation_id, enabled, created_at) "
        "SELECT DISTINCT repo_full_name, 1, 1, ?1 FROM reviews",
        (now,),
    )
    con.execute(
        "INSERT INTO repos (full_name, installation_id, prompt, model, enabled, created_at) "
        "VALUES ('acme/widgets', 1, 'Focus on error handling.', 'anthropic/claude-sonnet-4-5', 1, ?1)",
        (now,),
    )
    con.execute(
        "UPDATE reviews SET repo_full_name = 'acme/widgets', session_id = 'ses_1' WHERE id = 1"
    )
    con.execute("UPDATE reviews SET session_id = 'ses_2' WHERE id = 2")
    con.execute(
        "INSERT INTO skills (name, source_url, owner, repo, path, \"ref\", description, enabled, blob, created_at) "
        "VALUES ('lint-rules', 'https://github.com/acme/skills/tree/main/lint-rules', 'acme', 'skills', "
        "'lint-rules', '0123456789abcdef0123456789abcdef01234567', 'House lint rules', 1, NULL, ?1)",
        (now,),
    )
sessions = data / "sessions"
sessions.mkdir(exist_ok=True)
(sessions / "ses_1.json").write_text(
    '{"session_id":"ses_1","model":"anthropic/claude-sonnet-4-5","started_at":%d,'
    '"updated_at":%d,"status":"completed","items":[{"type":"message","at":%d,"role":"user",'
    '"text":"Review this pull request."}]}' % (now, now, now)
)
(sessions / "ses_2.json").write_text("not json: the transcript was cut short")
print(
    "seeded:",
    con.execute("SELECT count(*) FROM reviews").fetchone()[0], "reviews,",
    con.execute("SELECT count(*) FROM findings").fetchone()[0], "findings,",
    con.execute("SELECT count(*) FROM repos").fetchone()[0], "repos",
)
