package retry

// Keys are the stable identifiers of actions, reasons and outcomes: the
// text that is stored (job histories, dead reasons), logged and used as
// metric attributes. They never depend on the order of the constants, and
// they are never reworded; String gives the words for people. They are one
// vocabulary with the queue's own words (queue.Outcome*, queue.Action*):
// one concept has one key everywhere, in snake_case.

var actionKeys = [...]string{Done: "done", Retry: "retry", GiveUp: "give_up", Defer: "defer"}

// Key returns the action's stable identifier: "done", "retry", "give_up"
// or "defer" ("unknown" for a value outside them).
func (a Action) Key() string {
	if int(a) < len(actionKeys) {
		return actionKeys[a]
	}
	return "unknown"
}

var reasonKeys = [...]string{
	ReasonSuccess:         "success",
	ReasonTransient:       "transient",
	ReasonTimeout:         "timeout",
	ReasonPushback:        "pushback",
	ReasonPermanent:       "permanent",
	ReasonAttempts:        "attempts",
	ReasonTimeBudget:      "time_budget",
	ReasonDeadline:        "deadline",
	ReasonBudget:          "budget",
	ReasonBreakerOpen:     "breaker_open",
	ReasonNotRepeatable:   "not_repeatable",
	ReasonServerRefused:   "server_refused",
	ReasonUpstreamOwns:    "upstream_owns",
	ReasonPushbackTooLong: "pushback_too_long",
}

// Key returns a short identifier for the reason, for storage, metrics and
// logs: "success", "transient", "timeout", "pushback", "permanent",
// "attempts", "time_budget", "deadline", "budget", "breaker_open",
// "not_repeatable", "server_refused", "upstream_owns", "pushback_too_long"
// ("unknown" for a value outside them).
func (r Reason) Key() string {
	if int(r) < len(reasonKeys) {
		return reasonKeys[r]
	}
	return "unknown"
}

var outcomeKeys = [...]string{
	OutcomeSuccess:   "success",
	OutcomeTransient: "transient",
	OutcomeTimeout:   "timeout",
	OutcomePushback:  "pushback",
	OutcomePermanent: "permanent",
	OutcomeRefused:   "refused",
}

// Key returns the outcome's stable identifier: "success", "transient",
// "timeout", "pushback", "permanent" or "refused" ("unknown" for a value
// outside them). A success is "success" here as in [Reason.Key]
// (job histories written before the stores' migration 8 said "ok"). It is also the outcome's String.
func (o Outcome) Key() string {
	if int(o) < len(outcomeKeys) {
		return outcomeKeys[o]
	}
	return "unknown"
}
