-- heed idempotency keys: one row per (scope, key), running or completed.
CREATE TABLE heed_idempotency_keys (
    scope       text        NOT NULL,  -- principal, method and route (see idempotency.Middleware)
    key         text        NOT NULL,  -- the client's Idempotency-Key
    fingerprint text        NOT NULL,  -- of the request that claimed the key
    state       text        NOT NULL CHECK (state IN ('running', 'completed')),
    token       text,                  -- the running claim's token; NULL once completed
    created_at  timestamptz NOT NULL,
    lease_until timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    status      integer,               -- the stored response, once completed
    headers     text,                  -- JSON object of header lists, or NULL
    body        bytea,
    PRIMARY KEY (scope, key)           -- the atomic claim: one row per key
);

-- Reaping by expiry.
CREATE INDEX heed_idempotency_keys_expiry ON heed_idempotency_keys (expires_at);
