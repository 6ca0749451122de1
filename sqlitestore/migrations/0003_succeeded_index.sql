-- Purging succeeded jobs by age (Store.SucceededDelete).
CREATE INDEX IF NOT EXISTS heed_jobs_succeeded ON heed_jobs (finished_at) WHERE state = 'succeeded';
