-- The dead-letter's causes over every dead job (issue 29): dead_cause is
-- computed by the database from the job's row, so that a worker one
-- release behind, which never names the column, keeps it right: for a
-- dead job, the first 300 characters of its last history entry's error
-- text with every digit read as 0 (NULL for every other state). Texts
-- that differ only in their digits (addresses, ports, counts, IDs) share
-- it, and package ui's Fingerprint reads it as it reads any of them, so
-- that the dashboard counts the dead-letter by cause with one GROUP BY
-- over this index instead of reading the jobs.
--
-- Expand only. Adding a stored generated column rewrites the table under
-- an exclusive lock, in the migration's transaction: workers wait for it
-- (about 2 s per million jobs here) and go on.
ALTER TABLE heed_jobs ADD COLUMN dead_cause text GENERATED ALWAYS AS (
    CASE WHEN state = 'dead'
    THEN translate(left(coalesce(history -> -1 ->> 'error', ''), 300), '123456789', '000000000')
    END) STORED;

CREATE INDEX heed_jobs_dead_cause_idx ON heed_jobs (kind, dead_reason, dead_cause, finished_at, id)
    INCLUDE (queue) WHERE state = 'dead';
