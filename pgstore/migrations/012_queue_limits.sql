-- Global limits per queue (issue 28): at most concurrency_limit of the
-- queue's jobs running across every worker, and at most rate_limit started
-- per rate_period (microseconds), metered by a token bucket (rate_tokens
-- left at rate_at) that claims move. 0 is no limit. A limited claim locks
-- the queue's row, so that claimers in every process count the running
-- jobs and take tokens one at a time. Expand only: a worker one release
-- behind reads name and paused_at as before, and ignores the limits.
--
-- compatible down to: 10
ALTER TABLE heed_queues
    ADD COLUMN concurrency_limit integer          NOT NULL DEFAULT 0,
    ADD COLUMN rate_limit        integer          NOT NULL DEFAULT 0,
    ADD COLUMN rate_period       bigint           NOT NULL DEFAULT 0,
    ADD COLUMN rate_tokens       double precision NOT NULL DEFAULT 0,
    ADD COLUMN rate_at           timestamptz;

-- A limited claim counts the queue's running jobs.
CREATE INDEX IF NOT EXISTS heed_jobs_running_idx ON heed_jobs (queue)
    WHERE state = 'running';
