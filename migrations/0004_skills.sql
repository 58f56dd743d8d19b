-- spec/review-service.md section 2, SkillMetaRow; the blob is stored but never returned.
CREATE TABLE skills (
    name        TEXT PRIMARY KEY NOT NULL,
    source_url  TEXT NOT NULL,
    owner       TEXT NOT NULL,
    repo        TEXT NOT NULL,
    path        TEXT NOT NULL,
    "ref"       TEXT NOT NULL,
    description TEXT,
    enabled     INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    blob        BLOB,
    created_at  INTEGER NOT NULL
);
