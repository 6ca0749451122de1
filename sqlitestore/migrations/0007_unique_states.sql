-- Unique jobs by state (queue.UniqueOptions.ByState): each job lists the
-- states in which it holds its unique key, as a JSON array of state names.
-- Jobs written before hold it while available or running, as they always
-- did.
ALTER TABLE heed_jobs ADD COLUMN unique_states TEXT NOT NULL DEFAULT '["available","running"]';

-- At most one job per key among the jobs in one of their own unique
-- states (a quoted state name is found in the array only as itself).
DROP INDEX heed_jobs_unique;
CREATE UNIQUE INDEX heed_jobs_unique ON heed_jobs (unique_key)
    WHERE unique_key IS NOT NULL AND instr(unique_states, '"' || state || '"') > 0;
