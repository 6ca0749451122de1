package schema

// OldJob is a job's policy and history as heed stored them before
// migration 0005/005 (Go's default encoding: enum numbers, durations in
// nanoseconds, the action "give up"), with the forms the migration must
// rewrite them to. The stores' migration tests insert it raw and check the
// result; it is not used outside tests.
var OldJob = struct {
	Policy, History       string // as stored before
	NewPolicy, NewHistory string // as stored after, byte for byte
}{
	Policy: `{"backoff":{"Kind":2,"Base":1000000000,"Cap":60000000000,"Multiplier":0,"Jitter":2},"time_budget":5000000000,"attempt_timeout":1500000000}`,
	History: `[{"attempt":1,"worker":"w1","started_at":"2026-05-04T03:02:01.123456Z","finished_at":"2026-05-04T03:02:02.123456Z","outcome":"transient","error":"boom","action":"retry","reason":"transient","delay":4000000000},` +
		`{"attempt":2,"worker":"w1","started_at":"2026-05-04T03:02:06.123456Z","finished_at":"2026-05-04T03:02:07.123456Z","outcome":"permanent","error":"no","action":"give up","reason":"permanent"}]`,
	NewPolicy: `{"backoff":{"kind":"linear","base":"1s","cap":"1m0s","jitter":"equal"},"time_budget":"5s","attempt_timeout":"1.5s"}`,
	NewHistory: `[{"attempt":1,"worker":"w1","started_at":"2026-05-04T03:02:01.123456Z","finished_at":"2026-05-04T03:02:02.123456Z","outcome":"transient","error":"boom","action":"retry","reason":"transient","delay":"4s"},` +
		`{"attempt":2,"worker":"w1","started_at":"2026-05-04T03:02:06.123456Z","finished_at":"2026-05-04T03:02:07.123456Z","outcome":"permanent","error":"no","action":"give_up","reason":"permanent"}]`,
}

// OKJob is a job's history as heed stored it before migration 0008/008
// (the outcome "ok" for a success), with the form the migration must
// rewrite it to, and a history the migration must leave alone byte for
// byte because it holds no "ok" (it is not in the canonical form, so a
// rewrite would show). The stores' migration tests insert them raw at
// schema 7 and check the result; they are not used outside tests.
var OKJob = struct {
	History, NewHistory string
	Untouched           string
}{
	History: `[{"attempt":1,"worker":"w1","started_at":"2026-05-04T03:02:01.123456Z","finished_at":"2026-05-04T03:02:02.123456Z","outcome":"transient","error":"boom","action":"retry","reason":"transient","delay":"4s"},` +
		`{"attempt":2,"worker":"w1","started_at":"2026-05-04T03:02:06.123456Z","finished_at":"2026-05-04T03:02:07.123456Z","outcome":"ok","action":"done","reason":"success"}]`,
	NewHistory: `[{"attempt":1,"worker":"w1","started_at":"2026-05-04T03:02:01.123456Z","finished_at":"2026-05-04T03:02:02.123456Z","outcome":"transient","error":"boom","action":"retry","reason":"transient","delay":"4s"},` +
		`{"attempt":2,"worker":"w1","started_at":"2026-05-04T03:02:06.123456Z","finished_at":"2026-05-04T03:02:07.123456Z","outcome":"success","action":"done","reason":"success"}]`,
	Untouched: `[{"attempt":1,"outcome":"transient","action":"retry"}]`,
}

// DeferredJob is a job's history as heed stored it before migration
// 0010/010 (one entry per deferral: here a transient failure, three
// deferrals of attempt 2 by the open breaker, one by the budget, then the
// success), with the form the migration must rewrite it to (the three as
// one entry, count 3, from the first's start to the last's end; the
// budget's apart), and a history the migration must leave alone byte for
// byte because it holds no deferral. The stores' migration tests insert
// them raw at schema 9 and check the result; they are not used outside
// tests.
var DeferredJob = struct {
	History, NewHistory string
	Untouched           string
}{
	History: `[{"attempt":1,"worker":"w1","started_at":"2026-05-04T03:02:01Z","finished_at":"2026-05-04T03:02:02Z","outcome":"transient","error":"boom","action":"retry","reason":"transient","delay":"2s"},` +
		`{"attempt":2,"worker":"w1","started_at":"2026-05-04T03:02:04Z","finished_at":"2026-05-04T03:02:04Z","outcome":"deferred","error":"breaker: circuit open","action":"defer","reason":"breaker_open","delay":"5s"},` +
		`{"attempt":2,"worker":"w2","started_at":"2026-05-04T03:02:09Z","finished_at":"2026-05-04T03:02:09Z","outcome":"deferred","error":"breaker: circuit open","action":"defer","reason":"breaker_open","delay":"5s"},` +
		`{"attempt":2,"worker":"w1","started_at":"2026-05-04T03:02:14Z","finished_at":"2026-05-04T03:02:14Z","outcome":"deferred","error":"breaker: circuit open","action":"defer","reason":"breaker_open","delay":"4s"},` +
		`{"attempt":2,"worker":"w1","started_at":"2026-05-04T03:02:18Z","finished_at":"2026-05-04T03:02:18Z","outcome":"deferred","error":"retry: retry budget empty","action":"defer","reason":"budget","delay":"1s"},` +
		`{"attempt":2,"worker":"w1","started_at":"2026-05-04T03:02:19Z","finished_at":"2026-05-04T03:02:20Z","outcome":"success","action":"done","reason":"success"}]`,
	NewHistory: `[{"attempt":1,"worker":"w1","started_at":"2026-05-04T03:02:01Z","finished_at":"2026-05-04T03:02:02Z","outcome":"transient","error":"boom","action":"retry","reason":"transient","delay":"2s"},` +
		`{"attempt":2,"worker":"w1","started_at":"2026-05-04T03:02:04Z","finished_at":"2026-05-04T03:02:14Z","outcome":"deferred","error":"breaker: circuit open","action":"defer","reason":"breaker_open","count":3,"delay":"4s"},` +
		`{"attempt":2,"worker":"w1","started_at":"2026-05-04T03:02:18Z","finished_at":"2026-05-04T03:02:18Z","outcome":"deferred","error":"retry: retry budget empty","action":"defer","reason":"budget","delay":"1s"},` +
		`{"attempt":2,"worker":"w1","started_at":"2026-05-04T03:02:19Z","finished_at":"2026-05-04T03:02:20Z","outcome":"success","action":"done","reason":"success"}]`,
	Untouched: `[{"attempt":1,"outcome":"transient","action":"retry"}]`,
}
