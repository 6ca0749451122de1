package retry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

type selfTransient struct{ ok bool }

func (e selfTransient) Error() string   { return "self" }
func (e selfTransient) Transient() bool { return e.ok }

func TestDecide(t *testing.T) {
	ms := time.Millisecond
	plain := Policy{Backoff: backoff.Schedule{Base: 100 * ms, Jitter: backoff.NoJitter}}
	transient := Transient(errors.New("reset"))
	tests := []struct {
		name    string
		p       Policy
		h       History
		err     error
		now     time.Time
		action  Action
		reason  Reason
		outcome Outcome
		delay   time.Duration
	}{
		{"success", plain, History{Attempts: 1}, nil, t0, Done, ReasonSuccess, OutcomeSuccess, 0},
		{"permanent mark", plain, History{Attempts: 1}, Permanent(errors.New("bad")), t0, GiveUp, ReasonPermanent, OutcomePermanent, 0},
		{"unknown error is not retried", plain, History{Attempts: 1}, errors.New("bad"), t0, GiveUp, ReasonPermanent, OutcomePermanent, 0},
		{"permanent before attempts", plain, History{Attempts: 3}, Permanent(transient), t0, GiveUp, ReasonPermanent, OutcomePermanent, 0},
		{"transient retries", plain, History{Attempts: 1}, transient, t0, Retry, ReasonTransient, OutcomeTransient, 100 * ms},
		{"second retry doubles", plain, History{Attempts: 2}, transient, t0, Retry, ReasonTransient, OutcomeTransient, 200 * ms},
		{"attempts exhausted", plain, History{Attempts: 3}, transient, t0, GiveUp, ReasonAttempts, OutcomeTransient, 0},
		{"one attempt means no retry", Policy{Attempts: 1}, History{Attempts: 1}, transient, t0, GiveUp, ReasonAttempts, OutcomeTransient, 0},
		{"unlimited", Policy{Attempts: Unlimited, Backoff: backoff.Schedule{Kind: backoff.Immediate}}, History{Attempts: 1 << 40}, transient, t0, Retry, ReasonTransient, OutcomeTransient, 0},
		{"attempt timeout", plain, History{Attempts: 1, TimedOut: true}, context.DeadlineExceeded, t0, Retry, ReasonTimeout, OutcomeTimeout, 100 * ms},
		{"pushback larger than backoff", plain, History{Attempts: 1}, After(2*time.Second, errors.New("429")), t0, Retry, ReasonPushback, OutcomePushback, 2 * time.Second},
		{"pushback smaller than backoff", plain, History{Attempts: 2}, After(ms, errors.New("429")), t0, Retry, ReasonPushback, OutcomePushback, 200 * ms},
		{"pushback above the cap gives up with the hint", Policy{MaxPushback: time.Second}, History{Attempts: 1}, After(time.Hour, errors.New("503")), t0, GiveUp, ReasonPushbackTooLong, OutcomePushback, time.Hour},
		{"pushback above the default cap", plain, History{Attempts: 1}, After(DefaultMaxPushback+time.Second, errors.New("503")), t0, GiveUp, ReasonPushbackTooLong, OutcomePushback, DefaultMaxPushback + time.Second},
		{"pushback at the cap", Policy{MaxPushback: time.Second}, History{Attempts: 1}, After(time.Second, errors.New("503")), t0, Retry, ReasonPushback, OutcomePushback, time.Second},
		{"not repeatable beats attempts", plain, History{Attempts: 3, NotRepeatable: true}, transient, t0, GiveUp, ReasonNotRepeatable, OutcomeTransient, 0},
		{"whole attempt must fit: AttemptTimeout", Policy{AttemptTimeout: 800 * ms, Backoff: plain.Backoff}, History{Attempts: 1, Deadline: t0.Add(899 * ms)}, transient, t0, GiveUp, ReasonDeadline, OutcomeTransient, 100 * ms},
		{"whole attempt fits", Policy{AttemptTimeout: 800 * ms, Backoff: plain.Backoff}, History{Attempts: 1, Deadline: t0.Add(900 * ms)}, transient, t0, Retry, ReasonTransient, OutcomeTransient, 100 * ms},
		{"MinAttemptTime below AttemptTimeout", Policy{AttemptTimeout: 800 * ms, MinAttemptTime: 50 * ms, Backoff: plain.Backoff}, History{Attempts: 1, Deadline: t0.Add(150 * ms)}, transient, t0, Retry, ReasonTransient, OutcomeTransient, 100 * ms},
		{"MinAttemptTime above AttemptTimeout counts as it", Policy{AttemptTimeout: 800 * ms, MinAttemptTime: time.Hour, Backoff: plain.Backoff}, History{Attempts: 1, Deadline: t0.Add(900 * ms)}, transient, t0, Retry, ReasonTransient, OutcomeTransient, 100 * ms},
		{"not repeatable", plain, History{Attempts: 1, NotRepeatable: true}, transient, t0, GiveUp, ReasonNotRepeatable, OutcomeTransient, 0},
		{"not repeatable but succeeded", plain, History{Attempts: 1, NotRepeatable: true}, nil, t0, Done, ReasonSuccess, OutcomeSuccess, 0},
		{"not repeatable and permanent", plain, History{Attempts: 1, NotRepeatable: true}, errors.New("bad"), t0, GiveUp, ReasonPermanent, OutcomePermanent, 0},
		{"server refused", plain, History{Attempts: 1}, After(-1, errors.New("503")), t0, GiveUp, ReasonServerRefused, OutcomeRefused, 0},
		{"deadline fits", plain, History{Attempts: 1, Deadline: t0.Add(110 * ms)}, transient, t0, Retry, ReasonTransient, OutcomeTransient, 100 * ms},
		{"deadline too close", plain, History{Attempts: 1, Deadline: t0.Add(109 * ms)}, transient, t0, GiveUp, ReasonDeadline, OutcomeTransient, 100 * ms},
		{"deadline passed", plain, History{Attempts: 1, Deadline: t0.Add(-ms)}, transient, t0, GiveUp, ReasonDeadline, OutcomeTransient, 100 * ms},
		{"pushback beyond deadline gives up with the hint", plain, History{Attempts: 1, Deadline: t0.Add(time.Second)}, After(5*time.Second, errors.New("429")), t0, GiveUp, ReasonDeadline, OutcomePushback, 5 * time.Second},
		{"time budget", Policy{TimeBudget: time.Second, Backoff: plain.Backoff}, History{Attempts: 1, Start: t0}, transient, t0.Add(950 * ms), GiveUp, ReasonTimeBudget, OutcomeTransient, 100 * ms},
		{"time budget fits", Policy{TimeBudget: time.Second, Backoff: plain.Backoff}, History{Attempts: 1, Start: t0}, transient, t0.Add(800 * ms), Retry, ReasonTransient, OutcomeTransient, 100 * ms},
		{"earlier of deadline and budget: deadline", Policy{TimeBudget: time.Second, Backoff: plain.Backoff}, History{Attempts: 1, Start: t0, Deadline: t0.Add(500 * ms)}, transient, t0.Add(450 * ms), GiveUp, ReasonDeadline, OutcomeTransient, 100 * ms},
		{"earlier of deadline and budget: budget", Policy{TimeBudget: time.Second, Backoff: plain.Backoff}, History{Attempts: 1, Start: t0, Deadline: t0.Add(time.Hour)}, transient, t0.Add(950 * ms), GiveUp, ReasonTimeBudget, OutcomeTransient, 100 * ms},
		{"min attempt time", Policy{MinAttemptTime: time.Second, Backoff: plain.Backoff}, History{Attempts: 1, Deadline: t0.Add(time.Second)}, transient, t0, GiveUp, ReasonDeadline, OutcomeTransient, 100 * ms},
		{"custom classifier", Policy{Retryable: func(error) bool { return true }, Backoff: plain.Backoff}, History{Attempts: 1}, errors.New("x"), t0, Retry, ReasonTransient, OutcomeTransient, 100 * ms},
		{"transient mark beats classifier", Policy{Retryable: func(error) bool { return false }, Backoff: plain.Backoff}, History{Attempts: 1}, transient, t0, Retry, ReasonTransient, OutcomeTransient, 100 * ms},
		{"permanent mark beats classifier", Policy{Retryable: func(error) bool { return true }}, History{Attempts: 1}, Permanent(errors.New("x")), t0, GiveUp, ReasonPermanent, OutcomePermanent, 0},
		{"decorrelated uses last delay", Policy{Backoff: backoff.Schedule{Base: 100 * ms, Cap: time.Second, Jitter: backoff.DecorrelatedJitter}}, History{Attempts: 2, LastDelay: time.Second}, transient, t0, Retry, ReasonTransient, OutcomeTransient, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(&tt.p, tt.h, tt.err, tt.now, nil)
			if d.Action != tt.action || d.Reason != tt.reason || d.Outcome != tt.outcome {
				t.Fatalf("got %v/%v/%v, want %v/%v/%v", d.Action, d.Reason, d.Outcome, tt.action, tt.reason, tt.outcome)
			}
			if tt.delay >= 0 && d.Delay != tt.delay {
				t.Errorf("delay %v, want %v", d.Delay, tt.delay)
			}
			if d.Attempt != tt.h.Attempts || d.Err != tt.err {
				t.Errorf("decision does not carry the attempt: %+v", d)
			}
			if d.Action == Retry && !d.At.Equal(tt.now.Add(d.Delay)) {
				t.Errorf("At = %v, want now + %v", d.At, d.Delay)
			}
		})
	}
}

func TestIsTransient(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("plain"), false},
		{Transient(errors.New("x")), true},
		{fmt.Errorf("wrapped: %w", Transient(errors.New("x"))), true},
		{After(time.Second, errors.New("x")), true},
		{Permanent(Transient(errors.New("x"))), false},
		{Transient(Permanent(errors.New("x"))), false},
		{selfTransient{true}, true},
		{fmt.Errorf("w: %w", selfTransient{false}), false},
		{timeoutErr{}, true},
		{refused, true},
		{fmt.Errorf("call: %w", reset), true},
		{&net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}, false},
		{&net.DNSError{Err: "server misbehaving", Name: "x", IsTemporary: true}, true},
		{context.Canceled, false},
		{context.DeadlineExceeded, false},
		{os.ErrDeadlineExceeded, true},
	}
	for _, tt := range tests {
		if got := IsTransient(tt.err); got != tt.want {
			t.Errorf("IsTransient(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestValidatePolicy(t *testing.T) {
	tests := []struct {
		p    Policy
		want string
	}{
		{Policy{}, ""},
		{Policy{Attempts: Unlimited}, ""},
		{Policy{Attempts: -2}, ""}, // any negative: no limit
		{Policy{AttemptTimeout: -1, TimeBudget: -time.Second}, ""}, // negative: off
		{Policy{MinAttemptTime: -1}, "MinAttemptTime"},
		{Policy{MaxPushback: -1}, "MaxPushback"},
		{Policy{Backoff: backoff.Schedule{Base: -1}}, "Backoff: backoff: Base"},
	}
	for _, tt := range tests {
		err := tt.p.Validate()
		if tt.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", tt.p, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "Policy."+tt.want) {
			t.Errorf("%+v: got %v, want it to name %s", tt.p, err, tt.want)
		}
	}
}

func TestDecisionString(t *testing.T) {
	d := Decision{Action: Retry, Reason: ReasonTimeout, Attempt: 2, Err: errors.New("timeout"), Delay: 180 * time.Millisecond}
	if got, want := d.String(), "attempt 2: timeout, retry in 180ms (attempt timed out)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	d = Decision{Action: GiveUp, Reason: ReasonDeadline, Attempt: 3, Err: errors.New("503")}
	if got, want := d.String(), "attempt 3: 503, gave up: deadline too close"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// A give-up for the time budget is taken while the budget may still
	// have time left: the words say the next retry does not fit, not that
	// the budget ran out.
	p := Policy{TimeBudget: time.Second, AttemptTimeout: 300 * time.Millisecond,
		Backoff: backoff.Schedule{Base: 100 * time.Millisecond, Jitter: backoff.NoJitter}}
	d = Decide(&p, History{Attempts: 2, Start: t0}, Transient(errors.New("503")), t0.Add(700*time.Millisecond), nil)
	if d.Reason != ReasonTimeBudget {
		t.Fatalf("reason = %v, want ReasonTimeBudget", d.Reason)
	}
	if got, want := d.String(), "attempt 2: 503, gave up: no retry fits in the time budget left"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	for r := ReasonSuccess; r <= ReasonUpstreamOwns; r++ {
		if r.String() == "" || r.Key() == "unknown" {
			t.Errorf("reason %d has no name", r)
		}
	}
}

func TestDecideBudgetAndBreaker(t *testing.T) {
	ms := time.Millisecond
	transient := Transient(errors.New("reset"))
	b, err := budget.New(budget.Config{Burst: 1}) // one retry in the bucket
	if err != nil {
		t.Fatal(err)
	}
	p := Policy{Budget: b, Backoff: backoff.Schedule{Base: 100 * ms, Jitter: backoff.NoJitter}}

	// A retry that the deadline rules out spends no token...
	d := Decide(&p, History{Attempts: 1, Deadline: t0.Add(50 * ms)}, transient, t0, nil)
	if d.Reason != ReasonDeadline {
		t.Fatalf("got %v, want deadline too close", d.Reason)
	}
	// ...so the one token is still there for a retry that fits,
	if d := Decide(&p, History{Attempts: 1}, transient, t0, nil); d.Action != Retry {
		t.Fatalf("got %v (%v), want a retry", d.Action, d.Reason)
	}
	// and then the budget is empty.
	if d := Decide(&p, History{Attempts: 1}, transient, t0, nil); d.Reason != ReasonBudget {
		t.Fatalf("got %v, want retry budget empty", d.Reason)
	}
	// A permanent error never touches the budget.
	if d := Decide(&p, History{Attempts: 1}, errors.New("bad"), t0, nil); d.Reason != ReasonPermanent {
		t.Fatalf("got %v", d.Reason)
	}

	br, err := breaker.New(breaker.Config{MinCalls: 1, FailureRatio: 0.5, Cooldown: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	permit, err := br.AllowAt(t0)
	if err != nil {
		t.Fatal(err)
	}
	permit.RecordAt(t0, breaker.Failure)
	p = Policy{Breaker: br}
	if d := Decide(&p, History{Attempts: 1}, transient, t0, nil); d.Reason != ReasonBreakerOpen {
		t.Fatalf("got %v, want circuit open", d.Reason)
	}
	// After the cooldown the breaker is half-open, and a retry may probe.
	if d := Decide(&p, History{Attempts: 1}, transient, t0.Add(2*time.Second), nil); d.Action != Retry {
		t.Fatalf("got %v (%v), want a retry", d.Action, d.Reason)
	}
}

func TestRoundDelay(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                     "0s",
		37 * time.Microsecond:                 "37µs",
		1234567:                               "1.235ms",
		180*time.Millisecond + 7:              "180ms",
		12*time.Second + 345*time.Millisecond: "12.3s",
	} {
		if got := roundDelay(d).String(); got != want {
			t.Errorf("roundDelay(%v) = %s, want %s", d, got, want)
		}
	}
}
