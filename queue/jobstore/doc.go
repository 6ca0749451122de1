// Package jobstore is what a store of heed's job queue implements, and
// what it is given: the [Store] interface and its optional companions
// ([Notifier], [TransitionBatcher], [BatchInserter], [TickInserter],
// [ScheduleRecorder], [HeldClaimer], [CancelNotifier], [Inspector] for
// dashboards), the parameters of each call ([JobInsert], [ClaimParams],
// [RescueParams], [LeaseParams], [Transition], [OpParams], [PruneParams],
// [SearchParams], [JobFilter]), the rows a store keeps ([Job] with its
// history of [Attempt] entries and [JobPolicy], [State], the Outcome and
// Action words, [MaxHistory]), the checks a store runs before it writes
// (the Validate methods, [CancelFilter], [RunNowFilter], [DeleteFilter]),
// and the errors it returns ([ErrNotFound], [ErrLeaseLost], [ErrInvalid],
// [SchemaTooNewError], [SchemaBehindError]).
//
// Users of the queue do not import it: package queue is their API, and it
// names the types they share with stores ([Job], [State], [JobFilter], ...)
// by alias. A store stores and never decides: every retry, give-up and
// timing decision is taken by package queue and handed to the store as
// data, with every time in its arguments. heed ships sqlitestore
// (embedded) and pgstore (PostgreSQL); queue/storetest is the conformance
// suite every Store must pass. The split follows River's: river (users),
// rivertype (shared types) and riverdriver (drivers); here the shared
// types live with the drivers' side, so that a user imports one package.
package jobstore
