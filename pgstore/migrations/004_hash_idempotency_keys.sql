-- Idempotency keys are kept as a digest, never raw: a key is a bearer of the
-- right to replay its response. The key column now holds
-- idempotency.StoredKey(scope, key): the hex SHA-256 of scope, a NUL byte
-- and the key. This rewrites the keys stored raw before (sha256 needs
-- PostgreSQL 11).
UPDATE heed_idempotency_keys
    SET key = encode(sha256(convert_to(scope, 'UTF8') || '\x00'::bytea || convert_to(key, 'UTF8')), 'hex');

COMMENT ON COLUMN heed_idempotency_keys.key IS
    'hex SHA-256 of scope, NUL and the client''s Idempotency-Key (idempotency.StoredKey); never the key itself';
