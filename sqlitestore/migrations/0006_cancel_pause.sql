-- Operators' changes (issue 15): the state 'cancelled', and paused queues.
--
-- SQLite cannot change a CHECK constraint in place, so heed_jobs is
-- rebuilt with one that admits 'cancelled' (the migration runs in one
-- transaction: readers see the old table or the new one). Its AUTOINCREMENT
-- counter is carried over, so that IDs of deleted jobs are never reused.
CREATE TABLE heed_jobs_new (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    kind         TEXT    NOT NULL,
    queue        TEXT    NOT NULL,
    args         TEXT    NOT NULL,
    state        TEXT    NOT NULL CHECK (state IN ('available', 'running', 'succeeded', 'dead', 'cancelled')),
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

INSERT INTO heed_jobs_new (id, kind, queue, args, state, priority, attempt, max_attempts, policy,
        available_at, created_at, started_at, attempted_at, finished_at, unique_key,
        lease_token, lease_until, worker, dead_reason, history)
    SELECT id, kind, queue, args, state, priority, attempt, max_attempts, policy,
        available_at, created_at, started_at, attempted_at, finished_at, unique_key,
        lease_token, lease_until, worker, dead_reason, history
    FROM heed_jobs;

DELETE FROM sqlite_sequence WHERE name = 'heed_jobs_new';
INSERT INTO sqlite_sequence (name, seq) SELECT 'heed_jobs_new', seq FROM sqlite_sequence WHERE name = 'heed_jobs';

DROP TABLE heed_jobs;
ALTER TABLE heed_jobs_new RENAME TO heed_jobs;

-- The indexes of 0001 and 0003, as they were.
CREATE INDEX heed_jobs_claim ON heed_jobs (queue, priority, available_at, id) WHERE state = 'available';
CREATE INDEX heed_jobs_lease ON heed_jobs (lease_until) WHERE state = 'running';
CREATE INDEX heed_jobs_dead ON heed_jobs (finished_at) WHERE state = 'dead';
CREATE UNIQUE INDEX heed_jobs_unique ON heed_jobs (unique_key)
    WHERE unique_key IS NOT NULL AND state IN ('available', 'running');
CREATE INDEX heed_jobs_succeeded ON heed_jobs (finished_at) WHERE state = 'succeeded';
-- Retention and listing of cancelled jobs by age.
CREATE INDEX heed_jobs_cancelled ON heed_jobs (finished_at) WHERE state = 'cancelled';

-- Queues with settings of their own. A queue is paused while paused_at is
-- set (Unix microseconds, UTC): claims skip it.
CREATE TABLE heed_queues (
    name      TEXT    PRIMARY KEY,
    paused_at INTEGER
) STRICT;
