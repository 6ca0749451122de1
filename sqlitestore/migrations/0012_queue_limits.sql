-- Global limits per queue (issue 28): at most concurrency_limit of the
-- queue's jobs running across every worker, and at most rate_limit started
-- per rate_period (microseconds), metered by a token bucket (rate_tokens
-- left at rate_at, Unix microseconds) that claims move. 0 is no limit.
-- Claims are write transactions, which SQLite runs one at a time in the
-- file. Expand only: a worker one release behind reads name and paused_at
-- as before, and ignores the limits.
--
-- compatible down to: 10
ALTER TABLE heed_queues ADD COLUMN concurrency_limit INTEGER NOT NULL DEFAULT 0;
ALTER TABLE heed_queues ADD COLUMN rate_limit INTEGER NOT NULL DEFAULT 0;
ALTER TABLE heed_queues ADD COLUMN rate_period INTEGER NOT NULL DEFAULT 0;
ALTER TABLE heed_queues ADD COLUMN rate_tokens REAL NOT NULL DEFAULT 0;
ALTER TABLE heed_queues ADD COLUMN rate_at INTEGER;

-- A limited claim counts the queue's running jobs.
CREATE INDEX heed_jobs_running ON heed_jobs (queue) WHERE state = 'running';
