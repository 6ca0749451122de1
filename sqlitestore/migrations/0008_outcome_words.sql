-- One vocabulary for history words: an attempt that succeeded has the
-- outcome "success" (retry.OutcomeSuccess.Key, the word of the reason
-- "success") instead of "ok". The rewrite of the jobs whose history holds
-- "outcome":"ok" is Go (the store's rewriteJobs, with queue's reader of the
-- older words), run in this migration's transaction.
SELECT 1;
