-- The durable work queue of docs/architecture.md, "Many replicas": a review is run by the
-- replica that claims its queue row and holds a lease on it, renewed while the run lives.
-- A lapsed lease means the replica died: another one fails the review as interrupted. The
-- automatic retry of docs/review-service.md section 3 is a row with a not-before time, and
-- transcripts are kept in the database so every replica can serve them.

-- One row per review run through the queue (PR reviews and improver runs), deleted when the
-- run ends. owner NULL: waiting to be claimed; else the replica running it, until
-- lease_until (epoch milliseconds). cancel: a stop or a supersede asked of the owner.
CREATE TABLE review_queue (
    review_id   INTEGER PRIMARY KEY NOT NULL,
    job         TEXT NOT NULL,
    owner       TEXT,
    lease_until INTEGER,
    cancel      TEXT
);
CREATE INDEX review_queue_waiting ON review_queue (review_id) WHERE owner IS NULL;
CREATE INDEX review_queue_leases ON review_queue (lease_until) WHERE owner IS NOT NULL;

-- Automatic retries waiting for their time (not_before, epoch milliseconds). A replica claims
-- a due one with a lease like a review; the retry's review row replaces it in one transaction.
CREATE TABLE review_retries (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    review_id   INTEGER NOT NULL,
    job         TEXT NOT NULL,
    not_before  INTEGER NOT NULL,
    owner       TEXT,
    lease_until INTEGER
);
CREATE INDEX review_retries_due ON review_retries (not_before);

-- Agent session transcripts (the document of docs/architecture.md, Agent), mirrored here on
-- every write so GET /api/reviews/:id/session works on every replica.
CREATE TABLE transcripts (
    session_id TEXT PRIMARY KEY NOT NULL,
    doc        TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);

