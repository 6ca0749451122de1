-- heed job queue: one table for every job, live, succeeded or dead.
-- Times are integer Unix microseconds, UTC.
CREATE TABLE heed_jobs (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    kind         TEXT    NOT NULL,
    queue        TEXT    NOT NULL,
    args         TEXT    NOT NULL,
    state        TEXT    NOT NULL CHECK (state IN ('available', 'running', 'succeeded', 'dead')),
    priority     INTEGER NOT NULL DEFAULT 0,
    attempt      INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL DEFAULT 0,
    policy       TEXT    NOT NULL DEFAULT '{}',
    available_at INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    started_at   INTEGER,
    attempted_at INTEGER,
    finished_at  INTEGER,
    unique_key   TEXT,
    lease_token  TEXT,
    lease_until  INTEGER,
    worker       TEXT    NOT NULL DEFAULT '',
    dead_reason  TEXT,
    history      TEXT    NOT NULL DEFAULT '[]'
) STRICT;

-- Claim: due jobs of a queue in (priority, available_at, id) order.
CREATE INDEX heed_jobs_claim ON heed_jobs (queue, priority, available_at, id) WHERE state = 'available';
-- Rescue: running jobs by lease expiry.
CREATE INDEX heed_jobs_lease ON heed_jobs (lease_until) WHERE state = 'running';
-- Dead-letter listing and purging by age.
CREATE INDEX heed_jobs_dead ON heed_jobs (finished_at) WHERE state = 'dead';
-- Unique keys: at most one live (available or running) job per key.
CREATE UNIQUE INDEX heed_jobs_unique ON heed_jobs (unique_key)
    WHERE unique_key IS NOT NULL AND state IN ('available', 'running');
