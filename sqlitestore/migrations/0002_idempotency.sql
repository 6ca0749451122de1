-- heed idempotency keys: one row per (scope, key), running or completed.
-- Times are integer Unix microseconds, UTC.
CREATE TABLE heed_idempotency_keys (
    scope       TEXT    NOT NULL,  -- principal, method and route (see idempotency.Middleware)
    key         TEXT    NOT NULL,  -- the client's Idempotency-Key
    fingerprint TEXT    NOT NULL,  -- of the request that claimed the key
    state       TEXT    NOT NULL CHECK (state IN ('running', 'completed')),
    token       TEXT,              -- the running claim's token; NULL once completed
    created_at  INTEGER NOT NULL,
    lease_until INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    status      INTEGER,           -- the stored response, once completed
    headers     TEXT,              -- JSON object of header lists, or NULL
    body        BLOB,
    PRIMARY KEY (scope, key)       -- the atomic claim: one row per key
) STRICT;

-- Reaping by expiry.
CREATE INDEX heed_idempotency_keys_expiry ON heed_idempotency_keys (expires_at);
