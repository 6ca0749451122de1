-- Periodic jobs visible (issue 29): each periodic job's schedule ("every
-- 1h0m0s", "cron 0 9 * * 1-5"), its next tick, and when a worker running
-- it last said so (Unix microseconds), written by workers of this release
-- after each tick (queue.ScheduleRecorder) for the dashboard and `heed
-- jobs periodic`. Expand only: the columns are nullable, a worker one
-- release behind leaves them as they are, and readers show "not
-- recorded".
--
-- compatible down to: 10
ALTER TABLE heed_periodic ADD COLUMN schedule TEXT;
ALTER TABLE heed_periodic ADD COLUMN next_tick INTEGER;
ALTER TABLE heed_periodic ADD COLUMN seen_at INTEGER;
