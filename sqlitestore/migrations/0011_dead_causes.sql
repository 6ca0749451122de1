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
-- Expand only. The column is VIRTUAL (computed when read, nothing
-- rewritten); the index stores it.
--
-- compatible down to: 10
ALTER TABLE heed_jobs ADD COLUMN dead_cause TEXT GENERATED ALWAYS AS (
    CASE WHEN state = 'dead'
    THEN replace(replace(replace(replace(replace(replace(replace(replace(replace(
        substr(coalesce(json_extract(history, '$[#-1].error'), ''), 1, 300),
        '1', '0'), '2', '0'), '3', '0'), '4', '0'), '5', '0'), '6', '0'), '7', '0'), '8', '0'), '9', '0')
    END) VIRTUAL;

CREATE INDEX heed_jobs_dead_cause ON heed_jobs (kind, dead_reason, dead_cause, finished_at, id, queue)
    WHERE state = 'dead';
