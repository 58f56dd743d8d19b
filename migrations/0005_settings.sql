-- spec/review-service.md section 2, Settings: flat key-value, string values.
CREATE TABLE settings (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);
