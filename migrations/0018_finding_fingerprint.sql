-- The fingerprint of an inline finding (docs/review-service.md, "Repeated findings"): a hash of
-- its file and the code it anchors to with two lines around, the same when the lines move. A
-- later review of the pull request does not post a finding again at the same fingerprint with
-- the same claim. Null for other rows and for rows written before it existed.
ALTER TABLE findings ADD COLUMN fingerprint TEXT;
