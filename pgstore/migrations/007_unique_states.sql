-- Unique jobs by state (queue.UniqueOptions.ByState): each job lists the
-- states in which it holds its unique key, as state names. Jobs written
-- before hold it while available or running, as they always did.
ALTER TABLE heed_jobs ADD COLUMN unique_states text[] NOT NULL DEFAULT '{available,running}';

-- At most one job per key among the jobs in one of their own unique
-- states. Inserts use ON CONFLICT DO NOTHING against it.
DROP INDEX heed_jobs_unique_key_idx;
CREATE UNIQUE INDEX heed_jobs_unique_key_idx ON heed_jobs (unique_key)
    WHERE unique_key IS NOT NULL AND state = ANY (unique_states);
