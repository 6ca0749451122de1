-- Idempotency keys are kept as a digest, never raw: a key is a bearer of the
-- right to replay its response. The key column now holds
-- idempotency.StoredKey(scope, key): the hex SHA-256 of scope, a NUL byte
-- and the key. This rewrites the keys stored raw before; heed_stored_key is
-- that function, registered by sqlitestore with the driver.
UPDATE heed_idempotency_keys SET key = heed_stored_key(scope, key);
