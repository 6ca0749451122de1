// Package plan is heed's planner, in one place: what a retry policy's
// attempts look like before anything runs ([Schedule], [Describe]), what
// retries at every layer of a call chain do to the bottom service in an
// outage ([ChainAmplification]), and the review of a request's per-step
// deadline budgets ([Check]). It is pure: no clock, no random numbers.
//
// It lives with the command because `heed plan` is its only user: the
// library keeps what runs at request time (deadline.Plan and its Step,
// retry.Policy.Fits, the rule [Schedule] shares with the call), and the
// command renders what this package computes (planreport, planfile).
package plan
