-- A run of consecutive deferrals of one attempt for one reason (a job
-- waiting for an open breaker or an empty retry budget) is one history
-- entry with a count ("count"), not one entry per wave. The rewrite of the
-- histories that hold deferrals is Go (the store's rewriteJobs, with
-- queue.CompactHistory), run in this migration's transaction. Expand only:
-- a worker one release behind reads the count as an unknown field and
-- appends its deferrals one by one, which this release reads as runs of
-- count 1.
SELECT 1;
