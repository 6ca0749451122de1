// Package idempotency is the server side of safe retries: HTTP middleware
// for the Idempotency-Key header (IETF httpapi draft, with Stripe's
// practice where the draft is silent) that makes a handler run at most
// once per key, over a durable store of keys.
//
// A client may repeat a POST only when the server deduplicates it. heed's
// retryhttp client sends an Idempotency-Key (its own, or one it generates
// with Transport.GenerateKey) and repeats keyed requests whose outcome is
// unknown; this package is the other half. Most callers want
// [Middleware.Wrap]:
//
//	mw := idempotency.Middleware{
//		Store:     store, // sqlitestore.Store, pgstore.Store or idempotency.NewMemoryStore()
//		Required:  true,
//		Principal: func(r *http.Request) string { return userID(r) },
//	}
//	mux.Handle("POST /payments", mw.Wrap(payments))
//
// and a [Reaper] (or a scheduled [Reap]) to delete expired keys.
//
// A store of keys (sqlitestore.Store, pgstore.Store, or [NewMemoryStore]'s)
// is given to the middleware without being named. Its side of the
// contract, the keystore.Store interface with what it is given and
// returns, lives in package idempotency/keystore, for store authors.
//
// The behaviour, as published to clients (the draft asks servers to
// publish it):
//
//	request                                        answer
//	no key, route requires one                     400 problem+json (idempotency_key_missing)
//	malformed key, or two Idempotency-Key headers  400 problem+json (idempotency_key_invalid)
//	new key                                        the handler runs; its response is stored
//	same key, first request still running          409 problem+json, Retry-After: 1 (idempotency_key_in_use)
//	same key, same request, first one finished     the stored response, byte for byte, with
//	                                               Idempotent-Replayed: true
//	same key, another request (method, target,     422 problem+json (idempotency_key_mismatch)
//	body or named headers differ)
//	store unavailable                              503 problem+json, Retry-After; handler not run
//
// Keys are kept 24 hours after their request completes (Middleware.TTL).
// Every final response is stored, errors included (a 500 is replayed, as
// the draft says: retrying a request that failed needs a new key). A
// response body over 1 MiB (MaxResponseBody) is not stored: the key is
// released and a retry runs the handler again. A handler that panics, or a
// process that dies, leaves a claim that lapses after the lease (30 s,
// Middleware.Lease); until then retries get 409, and after it the next one
// runs the handler. A handler that is merely slow keeps its claim: its
// process renews the lease every 15 s.
//
// Limits of the promise: a handler whose process cannot reach the store
// for a whole lease can be run twice; a handler that panics after its side
// effect will run it again after the lease; keys
// are deduplicated per store, so every server of one service must share
// the store (sqlitestore for one machine, pgstore for many). For a handler
// whose side effect is in the same database, Brandur Leach's atomic phases
// go further; this middleware is the general case.
package idempotency
