-- Purging succeeded jobs by age (Store.SucceededDelete).
CREATE INDEX IF NOT EXISTS heed_jobs_succeeded_idx ON heed_jobs (finished_at, id)
    WHERE state = 'succeeded';
