-- Operators' changes (issue 15): the state 'cancelled', and paused queues.

-- A cancelled job is finished: it has a finished_at and no lease.
ALTER TABLE heed_jobs
    DROP CONSTRAINT heed_jobs_state_check,
    ADD CONSTRAINT heed_jobs_state_check
        CHECK (state IN ('available', 'running', 'succeeded', 'dead', 'cancelled')),
    DROP CONSTRAINT heed_jobs_finished_check,
    ADD CONSTRAINT heed_jobs_finished_check
        CHECK ((state IN ('succeeded', 'dead', 'cancelled')) = (finished_at IS NOT NULL));

-- Retention and listing of cancelled jobs by age.
CREATE INDEX heed_jobs_cancelled_idx ON heed_jobs (finished_at, id)
    WHERE state = 'cancelled';

-- Queues with settings of their own. A queue is paused while paused_at is
-- set: claims skip it.
CREATE TABLE heed_queues (
    name      text PRIMARY KEY,
    paused_at timestamptz
);
