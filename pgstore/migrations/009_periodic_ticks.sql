-- Periodic jobs (issue 15): the latest tick enqueued for each periodic job,
-- by kind and queue. It outlives the jobs, which retention deletes, so
-- that a tick whose job was deleted is never enqueued again
-- (queue.TickInserter). Ticks enqueued before this migration are still
-- marked by their jobs' unique keys while the jobs exist; the first tick
-- enqueued after it records itself.
CREATE TABLE heed_periodic (
    kind      text        NOT NULL,
    queue     text        NOT NULL,
    last_tick timestamptz NOT NULL,
    PRIMARY KEY (kind, queue)
);
