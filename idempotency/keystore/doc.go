// Package keystore is what a store of idempotency keys implements, and
// what it is given: the [Store] interface, the parameters of each call
// ([Claim], [Completion], [Extension], [Release], and [ValidateReap] for
// KeyReap's), the rows a store keeps ([Record], [Response], [State]), the
// digest it keeps in place of a client's key ([StoredKey]), the limits and
// checks it applies before it writes ([MaxKeyLen], [MaxScopeLen],
// [MaxStoredBody], the Validate methods) and the errors it returns
// ([ErrInvalid], [ErrLeaseLost]).
//
// Users of the middleware do not import it: package idempotency is their
// API. They hand a store (sqlitestore.Store, pgstore.Store or
// idempotency.NewMemoryStore's) to idempotency.Middleware without naming
// this package. A store stores and never decides: what a key's request
// gets (a run, a replay, a 409 or a 422) is decided by the middleware,
// with every time in the store's arguments. idempotency/storetest is the
// conformance suite every Store must pass. The split is the one of
// queue and queue/jobstore, after River's river and riverdriver.
package keystore
