-- Webhook deliveries seen in the last 24 hours, by delivery id (X-GitHub-Delivery or
-- X-Forge-Delivery): GitHub redelivers, and a redelivery must not review twice
-- (docs/security.md, "Webhook deliveries").
CREATE TABLE deliveries (
    id          TEXT PRIMARY KEY NOT NULL,
    received_at INTEGER NOT NULL
);
CREATE INDEX deliveries_received_at ON deliveries (received_at);
