-- heed's job queue: one row per job, from enqueue to success or the
-- dead-letter (state 'dead'). Requires PostgreSQL 13 or later
-- (gen_random_uuid).

CREATE TABLE heed_jobs (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind         text        NOT NULL,
    queue        text        NOT NULL,
    -- args is kept as enqueued, byte for byte: json, not jsonb.
    args         json        NOT NULL,
    state        text        NOT NULL,
    priority     integer     NOT NULL DEFAULT 0,
    attempt      integer     NOT NULL DEFAULT 0,
    max_attempts integer     NOT NULL DEFAULT 0,
    policy       jsonb       NOT NULL DEFAULT '{}',
    available_at timestamptz NOT NULL,
    created_at   timestamptz NOT NULL,
    started_at   timestamptz,
    attempted_at timestamptz,
    finished_at  timestamptz,
    unique_key   text,
    lease_token  text,
    lease_until  timestamptz,
    worker       text        NOT NULL DEFAULT '',
    dead_reason  text        NOT NULL DEFAULT '',
    -- history is a JSON array of attempts, appended to and never
    -- rewritten. json rather than jsonb: it keeps every entry as written
    -- (jsonb rejects the escape \u0000, which an error text may need).
    history      json        NOT NULL DEFAULT '[]',

    CONSTRAINT heed_jobs_state_check
        CHECK (state IN ('available', 'running', 'succeeded', 'dead')),
    CONSTRAINT heed_jobs_lease_check
        CHECK ((state = 'running') = (lease_token IS NOT NULL AND lease_until IS NOT NULL)),
    CONSTRAINT heed_jobs_finished_check
        CHECK ((state IN ('succeeded', 'dead')) = (finished_at IS NOT NULL))
);

-- Claim: due jobs of one queue in (priority, available_at, id) order.
CREATE INDEX heed_jobs_claim_idx ON heed_jobs (queue, priority, available_at, id)
    WHERE state = 'available';

-- Rescue: running jobs whose lease ended.
CREATE INDEX heed_jobs_lease_idx ON heed_jobs (lease_until)
    WHERE state = 'running';

-- Dead-letter listing and purging by age.
CREATE INDEX heed_jobs_dead_idx ON heed_jobs (finished_at, id)
    WHERE state = 'dead';

-- Unique keys: at most one available or running job per key. Inserts use
-- ON CONFLICT DO NOTHING against it, which makes the check race-free.
CREATE UNIQUE INDEX heed_jobs_unique_key_idx ON heed_jobs (unique_key)
    WHERE unique_key IS NOT NULL AND state IN ('available', 'running');
