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
-- Expand only, without rewriting the table: a stored generated column
-- would rewrite every row under an exclusive lock (15.5 s at 1,000,000
-- jobs here, workers waiting), so the column is plain and nullable and a
-- trigger computes it, only when a row is or was dead; the dead jobs
-- already there are filled in here. At 1,000,000 jobs with 10,000 dead
-- the migration took 1.6 s here (the fill 1.0 s, locking dead jobs only;
-- the index 0.5 s, holding writes).
--
-- compatible down to: 10
ALTER TABLE heed_jobs ADD COLUMN dead_cause text;

CREATE FUNCTION heed_dead_cause() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.dead_cause := CASE WHEN NEW.state = 'dead'
        THEN translate(left(coalesce(NEW.history -> -1 ->> 'error', ''), 300), '123456789', '000000000')
        END;
    RETURN NEW;
END
$$;

CREATE TRIGGER heed_jobs_dead_cause BEFORE INSERT OR UPDATE ON heed_jobs
    FOR EACH ROW WHEN (NEW.state = 'dead' OR NEW.dead_cause IS NOT NULL)
    EXECUTE FUNCTION heed_dead_cause();

UPDATE heed_jobs SET state = state WHERE state = 'dead';

CREATE INDEX heed_jobs_dead_cause_idx ON heed_jobs (kind, dead_reason, dead_cause, finished_at, id)
    INCLUDE (queue) WHERE state = 'dead';
