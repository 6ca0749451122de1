-- Stored forms without Go enum numbers or display text: job policies keep
-- backoff kinds and jitters by name and durations as text
-- ({"backoff":{"kind":"linear","base":"1s","jitter":"equal"},"time_budget":"5s"}),
-- history entries their delay as text ("4s") and the action key "give_up"
-- instead of "give up". The rewrite of existing rows is Go (sqlitestore's
-- rewriteStoredForms), run in this migration's transaction.
SELECT 1;
