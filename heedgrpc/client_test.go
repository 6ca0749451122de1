package heedgrpc_test

import (
	"bytes"
	"context"
	"errors"
	"github.com/heed-go/heed/deadline"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/heedgrpc"
	"github.com/heed-go/heed/retry"
)

// failThen answers the first fails calls of every method with code (and
// a pushback trailer when pb is not ""), then OK.
func failThen(fails int64, code codes.Code, pb string) func(context.Context, string, int64, string) (string, error) {
	return func(ctx context.Context, _ string, n int64, in string) (string, error) {
		if n <= fails {
			if pb != "" {
				grpc.SetTrailer(ctx, metadata.Pairs("grpc-retry-pushback-ms", pb))
			}
			return "", status.Error(code, "scripted failure")
		}
		return "ok:" + in, nil
	}
}

// TestCodes drives every code of the package's table through the unary
// interceptor, over bufconn and over loopback TCP: each server fails the
// first call with the code (and pushback where given), then answers OK.
func TestCodes(t *testing.T) {
	for _, tt := range []struct {
		name     string
		code     codes.Code
		pushback string
		method   string
		calls    int64        // calls the server sees
		reason   retry.Reason // of the give-up; ReasonSuccess for success
	}{
		{"unavailable/idempotent", codes.Unavailable, "", mGet, 2, retry.ReasonSuccess},
		{"unavailable/not idempotent", codes.Unavailable, "", mPost, 1, retry.ReasonNotRepeatable},
		{"unavailable/pushback", codes.Unavailable, "1", mGet, 2, retry.ReasonSuccess},
		{"unavailable/pushback no", codes.Unavailable, "-1", mGet, 1, retry.ReasonServerRefused},
		{"resource exhausted", codes.ResourceExhausted, "", mGet, 1, retry.ReasonPermanent},
		{"resource exhausted/pushback", codes.ResourceExhausted, "2", mGet, 2, retry.ReasonSuccess},
		{"resource exhausted/pushback/not idempotent", codes.ResourceExhausted, "2", mPost, 1, retry.ReasonNotRepeatable},
		{"resource exhausted/pushback malformed", codes.ResourceExhausted, "soon", mGet, 1, retry.ReasonServerRefused},
		{"aborted", codes.Aborted, "", mGet, 1, retry.ReasonPermanent},
		{"aborted/pushback", codes.Aborted, "0", mGet, 2, retry.ReasonSuccess},
		{"deadline exceeded (server's)", codes.DeadlineExceeded, "", mGet, 2, retry.ReasonSuccess},
		{"deadline exceeded/not idempotent", codes.DeadlineExceeded, "", mPost, 1, retry.ReasonNotRepeatable},
		{"cancelled (server's)", codes.Canceled, "", mGet, 1, retry.ReasonPermanent},
		{"unknown", codes.Unknown, "", mGet, 1, retry.ReasonPermanent},
		{"invalid argument", codes.InvalidArgument, "", mGet, 1, retry.ReasonPermanent},
		{"not found", codes.NotFound, "", mGet, 1, retry.ReasonPermanent},
		{"already exists", codes.AlreadyExists, "", mGet, 1, retry.ReasonPermanent},
		{"permission denied", codes.PermissionDenied, "", mGet, 1, retry.ReasonPermanent},
		{"failed precondition", codes.FailedPrecondition, "", mGet, 1, retry.ReasonPermanent},
		{"out of range", codes.OutOfRange, "", mGet, 1, retry.ReasonPermanent},
		{"unimplemented", codes.Unimplemented, "", mGet, 1, retry.ReasonPermanent},
		{"internal", codes.Internal, "", mGet, 1, retry.ReasonPermanent},
		{"data loss", codes.DataLoss, "", mGet, 1, retry.ReasonPermanent},
		{"unauthenticated", codes.Unauthenticated, "", mGet, 1, retry.ReasonPermanent},
	} {
		for _, network := range []string{"bufconn", "tcp"} {
			t.Run(tt.name+"/"+network, func(t *testing.T) {
				e := &echo{unary: failThen(1, tt.code, tt.pushback)}
				hc := &heedgrpc.Client{Policy: fast(3), Files: echoFiles, Budget: budget.Config{Ratio: -1}}
				var cc *grpc.ClientConn
				if network == "bufconn" {
					cc = dial(t, "passthrough:///bufnet", append(hc.DialOptions(), bufServer(t, e))...)
				} else {
					cc = dial(t, tcpServer(t, e), hc.DialOptions()...)
				}
				out, err := invoke(ctxTimeout(t, 10*time.Second), cc, tt.method, "x")
				if got := e.Calls(tt.method); got != tt.calls {
					t.Errorf("server saw %d calls, want %d", got, tt.calls)
				}
				if tt.reason == retry.ReasonSuccess {
					if err != nil || out != "ok:x" {
						t.Fatalf("got %q, %v; want ok:x", out, err)
					}
					return
				}
				var x *retry.ExhaustedError
				if !errors.As(err, &x) || x.Reason != tt.reason {
					t.Fatalf("err = %v, want a give-up with reason %v", err, tt.reason)
				}
				if got := status.Code(err); got != tt.code {
					t.Errorf("status.Code(err) = %v, want %v (the last attempt's)", got, tt.code)
				}
			})
		}
	}
}

// TestNeverSent: a call to a method that is not idempotent is retried when
// it never left the client (nothing listens on the port), and not when it
// may have been processed (TestCodes).
func TestNeverSent(t *testing.T) {
	addr := closedPort(t) // every attempt is refused before it is sent
	hc := &heedgrpc.Client{Policy: fast(3), Files: echoFiles, Budget: budget.Config{Ratio: -1}}
	cc := dial(t, addr, hc.DialOptions()...)
	_, err := invoke(ctxTimeout(t, 10*time.Second), cc, mPost, "x")
	var x *retry.ExhaustedError
	if !errors.As(err, &x) || x.Reason != retry.ReasonAttempts || x.Attempts != 3 {
		t.Fatalf("err = %v, want 3 attempts then attempts exhausted", err)
	}
	if status.Code(err) != codes.Unavailable {
		t.Errorf("code %v, want Unavailable", status.Code(err))
	}
}

// TestPushback: the server's wait is honoured (never retried before it),
// and a wait that does not fit the deadline or MaxPushback gives up at once
// with the server's wait as the decision's delay.
func TestPushback(t *testing.T) {
	t.Run("honoured", func(t *testing.T) {
		e := &echo{unary: failThen(1, codes.ResourceExhausted, "60")}
		var delays []time.Duration
		p := fast(3)
		p.Observe = func(_ context.Context, ev retry.Event) {
			if ev.Action == retry.Retry {
				delays = append(delays, ev.Delay)
			}
		}
		hc := &heedgrpc.Client{Policy: p, Files: echoFiles, Budget: budget.Config{Ratio: -1}}
		cc := dial(t, "passthrough:///bufnet", append(hc.DialOptions(), bufServer(t, e))...)
		start := time.Now()
		if _, err := invoke(ctxTimeout(t, 10*time.Second), cc, mGet, "x"); err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el < 60*time.Millisecond {
			t.Errorf("retried after %v, before the server's 60ms", el)
		}
		if len(delays) != 1 || delays[0] != 60*time.Millisecond {
			t.Errorf("delays %v, want [60ms]", delays)
		}
	})
	for _, tt := range []struct {
		name    string
		pb      string
		timeout time.Duration
		maxPB   time.Duration
		reason  retry.Reason
	}{
		{"longer than the deadline", "5000", time.Second, 0, retry.ReasonDeadline},
		{"longer than MaxPushback", "5000", 10 * time.Second, time.Second, retry.ReasonPushbackTooLong},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := &echo{unary: failThen(1, codes.ResourceExhausted, tt.pb)}
			p := fast(3)
			p.MaxPushback = tt.maxPB
			hc := &heedgrpc.Client{Policy: p, Files: echoFiles, Budget: budget.Config{Ratio: -1}}
			cc := dial(t, "passthrough:///bufnet", append(hc.DialOptions(), bufServer(t, e))...)
			start := time.Now()
			_, err := invoke(ctxTimeout(t, tt.timeout), cc, mGet, "x")
			var x *retry.ExhaustedError
			if !errors.As(err, &x) || x.Reason != tt.reason {
				t.Fatalf("err = %v, want reason %v", err, tt.reason)
			}
			if d := x.Trace[len(x.Trace)-1].Delay; d != 5*time.Second {
				t.Errorf("give-up delay %v, want the server's 5s", d)
			}
			// Waiting would have taken the server's 5s, or the whole
			// deadline.
			if el := time.Since(start); el >= min(tt.timeout*9/10, 4*time.Second) {
				t.Errorf("gave up after %v: it waited", el)
			}
		})
	}
}

// TestCallerDeadline: when the caller's own deadline ends the attempt, the
// status is returned as is, after one attempt.
func TestCallerDeadline(t *testing.T) {
	e := &echo{unary: func(ctx context.Context, _ string, _ int64, _ string) (string, error) {
		<-ctx.Done()
		return "", status.FromContextError(ctx.Err()).Err()
	}}
	// No AttemptShare: the first attempt may take all the time left
	// (TestAttemptShare shows the retry a share leaves time for).
	hc := &heedgrpc.Client{Policy: fast(3), Files: echoFiles, Budget: budget.Config{Ratio: -1}}
	cc := dial(t, "passthrough:///bufnet", append(hc.DialOptions(), bufServer(t, e))...)
	_, err := invoke(ctxTimeout(t, 200*time.Millisecond), cc, mGet, "x")
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("err = %v, want the caller's DEADLINE_EXCEEDED", err)
	}
	// Returned as is; or, when the server's answer to the same deadline
	// came a hair before the caller's own clock reached it, given up as
	// having no time left.
	if x, ok := errors.AsType[*retry.ExhaustedError](err); ok && x.Reason != retry.ReasonDeadline {
		t.Fatalf("err = %v, want the status as is or deadline too close", err)
	}
	// One attempt at most: on a busy machine the deadline may even end
	// before the first reaches the handler.
	if n := e.Calls(mGet); n > 1 {
		t.Errorf("%d calls, want 1", n)
	}
}

// TestAttemptTimeout: an attempt cut off by the policy's AttemptTimeout is
// a timeout, retried while the caller's deadline leaves time.
func TestAttemptTimeout(t *testing.T) {
	e := &echo{unary: func(ctx context.Context, _ string, n int64, _ string) (string, error) {
		if n == 1 {
			<-ctx.Done()
			return "", status.FromContextError(ctx.Err()).Err()
		}
		return "ok", nil
	}}
	p := fast(3)
	p.AttemptTimeout = 300 * time.Millisecond
	var reasons []retry.Reason
	p.Observe = func(_ context.Context, ev retry.Event) { reasons = append(reasons, ev.Reason) }
	hc := &heedgrpc.Client{Policy: p, Files: echoFiles, Budget: budget.Config{Ratio: -1}}
	cc := dial(t, "passthrough:///bufnet", append(hc.DialOptions(), bufServer(t, e))...)
	if _, err := invoke(ctxTimeout(t, 10*time.Second), cc, mGet, "x"); err != nil {
		t.Fatal(err)
	}
	if len(reasons) != 2 || reasons[0] != retry.ReasonTimeout {
		t.Errorf("reasons %v, want [attempt timed out, success]", reasons)
	}
}

// TestAttemptShare: with the caller's deadline, no AttemptTimeout and an
// AttemptShare of 0.5, an attempt of a repeatable call takes half the time
// left, so that a server that accepts the call and never answers leaves
// time for a retry; a call that is not repeatable gives its one attempt
// all of it (as every call does without a share: TestCallerDeadline).
func TestAttemptShare(t *testing.T) {
	e := &echo{unary: func(ctx context.Context, _ string, n int64, _ string) (string, error) {
		if n == 1 {
			<-ctx.Done() // a black hole: accepted, never answered
			return "", status.FromContextError(ctx.Err()).Err()
		}
		return "ok", nil
	}}
	p := fast(3)
	var reasons []retry.Reason
	p.Observe = func(_ context.Context, ev retry.Event) { reasons = append(reasons, ev.Reason) }
	hc := &heedgrpc.Client{Policy: p, Files: echoFiles, Budget: budget.Config{Ratio: -1}, AttemptShare: 0.5}
	cc := dial(t, "passthrough:///bufnet", append(hc.DialOptions(), bufServer(t, e))...)
	if _, err := invoke(ctxTimeout(t, 4*time.Second), cc, mGet, "x"); err != nil {
		t.Fatalf("err = %v, want a success on the retry", err)
	}
	if len(reasons) != 2 || reasons[0] != retry.ReasonTimeout {
		t.Errorf("reasons %v, want [attempt timed out, success]", reasons)
	}

	// Post is not repeatable: its one attempt keeps all the time left.
	_, err := invoke(ctxTimeout(t, 300*time.Millisecond), cc, mPost, "x")
	if status.Code(err) != codes.DeadlineExceeded || e.Calls(mPost) != 1 {
		t.Errorf("Post: err %v after %d calls, want the caller's DEADLINE_EXCEEDED after 1", err, e.Calls(mPost))
	}

	bad := &heedgrpc.Client{AttemptShare: 1.5}
	cc = dial(t, "passthrough:///bufnet", append(bad.DialOptions(), bufServer(t, e))...)
	if _, err := invoke(ctxTimeout(t, time.Second), cc, mGet, "x"); err == nil || !strings.Contains(err.Error(), "AttemptShare is 1.5") {
		t.Errorf("AttemptShare 1.5: err = %v, want one naming it", err)
	}
}

// TestOnlyHeedAttempts: a channel whose service config asks gRPC to retry
// UNAVAILABLE 5 times makes only heed's attempts when it uses DialOptions.
// The same channel without heed shows that the config is live, and heed's
// interceptor without grpc.WithDisableRetry that the two would multiply.
func TestOnlyHeedAttempts(t *testing.T) {
	const cfg = `{"methodConfig":[{"name":[{"service":"heedtest.Echo"}],"retryPolicy":{
		"maxAttempts":5,"initialBackoff":"0.001s","maxBackoff":"0.001s","backoffMultiplier":1,
		"retryableStatusCodes":["UNAVAILABLE"]}}]}`
	for _, tt := range []struct {
		name   string
		heed   bool
		gRetry bool // the heed interceptor without grpc.WithDisableRetry
		want   int64
	}{
		{"grpc alone", false, false, 5},
		{"with heed", true, false, 3},
		{"heed's interceptor, gRPC's retries left on", true, true, 15},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := &echo{unary: failThen(100, codes.Unavailable, "")}
			opts := []grpc.DialOption{grpc.WithDefaultServiceConfig(cfg), bufServer(t, e)}
			hc := &heedgrpc.Client{Policy: fast(3), Files: echoFiles, Budget: budget.Config{Ratio: -1}}
			switch {
			case tt.gRetry:
				opts = append(opts, grpc.WithUnaryInterceptor(hc.UnaryInterceptor()))
			case tt.heed:
				opts = append(opts, hc.DialOptions()...)
			}
			cc := dial(t, "passthrough:///bufnet", opts...)
			invoke(ctxTimeout(t, 10*time.Second), cc, mGet, "x")
			if got := e.Calls(mGet); got != tt.want {
				t.Errorf("server saw %d attempts, want %d", got, tt.want)
			}
		})
	}
}

// TestRetryAttempt: attempts carry retry-attempt only when this layer will
// retry the call, or passes on the claim of an owner above.
func TestRetryAttempt(t *testing.T) {
	for _, tt := range []struct {
		name   string
		policy retry.Policy
		method string
		key    string
		owned  bool
		fails  int64
		want   []string
	}{
		{"retrying layer", fast(3), mGet, "", false, 2, []string{"1", "2", "3"}},
		{"not repeatable", fast(3), mPost, "", false, 0, []string{""}},
		{"keyed", fast(3), mPost, "k-123", false, 1, []string{"1", "2"}},
		{"one attempt", fast(1), mGet, "", false, 0, []string{""}},
		{"owned above", fast(3), mGet, "", true, 1, []string{"1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := &echo{unary: failThen(tt.fails, codes.Unavailable, "")}
			hc := &heedgrpc.Client{Policy: tt.policy, Files: echoFiles, Budget: budget.Config{Ratio: -1}}
			cc := dial(t, "passthrough:///bufnet", append(hc.DialOptions(), bufServer(t, e))...)
			ctx := ctxTimeout(t, 10*time.Second)
			if tt.owned {
				ctx = deadline.WithUpstreamOwner(ctx)
			}
			if tt.key != "" {
				ctx = metadata.AppendToOutgoingContext(ctx, "Idempotency-Key", tt.key)
			}
			invoke(ctx, cc, tt.method, "x")
			if got := strings.Join(e.Seen(), ","); got != strings.Join(tt.want, ",") {
				t.Errorf("retry-attempt values %q, want %q", got, strings.Join(tt.want, ","))
			}
		})
	}
}

// TestIdempotentList: a method named in Client.Idempotent is repeatable
// without a descriptor.
func TestIdempotentList(t *testing.T) {
	e := &echo{unary: failThen(1, codes.Unavailable, "")}
	hc := &heedgrpc.Client{Policy: fast(3), DescriptorsOff: true, Idempotent: []string{mPost}, Budget: budget.Config{Ratio: -1}}
	cc := dial(t, "passthrough:///bufnet", append(hc.DialOptions(), bufServer(t, e))...)
	if _, err := invoke(ctxTimeout(t, 10*time.Second), cc, mPost, "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := invoke(ctxTimeout(t, 10*time.Second), cc, mGet, "x"); status.Code(err) != codes.Unavailable {
		t.Fatalf("Get without its descriptor: %v, want not retried", err)
	}
}

// TestBreakerAndBudgetPerTarget: the breaker and budget are per target and
// shared by every call: once the breaker opens, calls fail at once with
// breaker.ErrOpen and UNAVAILABLE, without reaching the server.
func TestBreakerAndBudgetPerTarget(t *testing.T) {
	e := &echo{unary: failThen(1000, codes.Unavailable, "")}
	var changes []string
	hc := &heedgrpc.Client{Policy: fast(1), Files: echoFiles,
		Breaker: &breaker.Config{MinCalls: 5, Cooldown: time.Minute},
		OnBreakerChange: func(target string, from, to breaker.State, _ time.Time) {
			changes = append(changes, target+":"+to.String())
		}}
	cc := dial(t, "passthrough:///bufnet", append(hc.DialOptions(), bufServer(t, e))...)
	var err error
	for i := 0; i < 10; i++ {
		_, err = invoke(ctxTimeout(t, 10*time.Second), cc, mGet, "x")
	}
	if !errors.Is(err, breaker.ErrOpen) || status.Code(err) != codes.Unavailable {
		t.Fatalf("err = %v, want breaker.ErrOpen as UNAVAILABLE", err)
	}
	if n := e.Calls(mGet); n != 5 {
		t.Errorf("server saw %d calls, want 5 before the breaker opened", n)
	}
	if len(changes) != 1 || changes[0] != "passthrough:///bufnet:open" {
		t.Errorf("breaker changes %v", changes)
	}
}

// TestLogRedaction: attempts are logged without metadata values; the
// idempotency key appears only as its hash, secrets in the error text are
// removed.
func TestLogRedaction(t *testing.T) {
	const secret = "sk_live_9fQ2xT7bLm3ZpR8vK1wY"
	e := &echo{unary: func(context.Context, string, int64, string) (string, error) {
		return "", status.Error(codes.Unavailable, "upstream https://u:pw@example.com/?token="+secret+" down")
	}}
	var buf bytes.Buffer
	hc := &heedgrpc.Client{Policy: fast(2), Files: echoFiles, Budget: budget.Config{Ratio: -1},
		Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	cc := dial(t, "passthrough:///bufnet", append(hc.DialOptions(), bufServer(t, e))...)
	ctx := metadata.AppendToOutgoingContext(ctxTimeout(t, 10*time.Second), "idempotency-key", "key-"+secret, "authorization", "Bearer "+secret)
	invoke(ctx, cc, mPost, "x")
	out := buf.String()
	for _, bad := range []string{secret, "pw@", "Bearer"} {
		if strings.Contains(out, bad) {
			t.Errorf("log holds %q:\n%s", bad, out)
		}
	}
	for _, want := range []string{"method=/heedtest.Echo/Post", "code=Unavailable", "idempotency_key_hash=", "decision=retry", "decision=\"give up\""} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

// TestBudgets: every first attempt counts as a request in its target's
// budget, whether anyone is told about attempts or not (with nobody, a
// first attempt skips the call protocol's state); the budget is the
// registry's for the target, so Clients on one registry share it and a
// Client on another registry does not.
func TestBudgets(t *testing.T) {
	reg := &budget.Registry{}
	e := &echo{unary: failThen(0, codes.OK, "")}
	quiet := &heedgrpc.Client{Files: echoFiles, Budgets: reg}
	told := &heedgrpc.Client{Files: echoFiles, Budgets: reg, OnAttempt: func(context.Context, heedgrpc.Attempt) {}}
	apart := &heedgrpc.Client{Files: echoFiles, Budgets: &budget.Registry{}}
	for _, hc := range []*heedgrpc.Client{quiet, told, apart} {
		cc := dial(t, "passthrough:///bufnet", append(hc.DialOptions(), bufServer(t, e))...)
		for range 5 {
			if _, err := invoke(ctxTimeout(t, 10*time.Second), cc, mGet, "x"); err != nil {
				t.Fatal(err)
			}
		}
	}
	b, _ := reg.For("passthrough:///bufnet", budget.Config{})
	if got := b.Stats().Requests; got != 10 {
		t.Errorf("the shared budget counted %d requests, want 10 (5 unobserved, 5 observed)", got)
	}
}

// TestCallOptions: the caller's call options reach gRPC beside heed's own,
// however many there are: the caller gets the trailer it asked for, and
// heed still reads the pushback trailer it needs to retry, on the first
// attempt (which, with no one told about attempts, skips the call
// protocol's state) and on a retry.
func TestCallOptions(t *testing.T) {
	e := &echo{unary: func(ctx context.Context, _ string, n int64, in string) (string, error) {
		if n%2 == 1 { // every call's first attempt
			grpc.SetTrailer(ctx, metadata.Pairs("grpc-retry-pushback-ms", "1"))
			return "", status.Error(codes.ResourceExhausted, "slow down")
		}
		return "ok:" + in, nil
	}}
	hc := &heedgrpc.Client{Policy: fast(3), Files: echoFiles, Budget: budget.Config{Ratio: -1}}
	cc := dial(t, "passthrough:///bufnet", append(hc.DialOptions(), bufServer(t, e))...)
	for _, extra := range []int{0, 1, 12} {
		var trailer metadata.MD
		opts := []grpc.CallOption{grpc.Trailer(&trailer)}
		for range extra {
			opts = append(opts, grpc.EmptyCallOption{})
		}
		before := e.Calls(mGet)
		out := new(wrapperspb.StringValue)
		if err := cc.Invoke(ctxTimeout(t, 10*time.Second), mGet, wrapperspb.String("x"), out, opts...); err != nil {
			t.Fatalf("%d options more: %v", extra, err)
		}
		if n := e.Calls(mGet) - before; n != 2 {
			t.Errorf("%d options more: %d attempts, want 2 (the pushback retried)", extra, n)
		}
		if trailer == nil {
			t.Errorf("%d options more: the caller's trailer was not filled in", extra)
		}
	}
}

// TestLogRedactsErrorText: whatever form the secret in a status message
// takes, the attempt's log record does not show it.
func TestLogRedactsErrorText(t *testing.T) {
	const c = "Zq7cAnAry4secret"
	for _, msg := range []string{
		"upstream said: Authorization: Bearer " + c,
		"upstream said: token=" + c,
		"redirected to https://login.example.com/cb?access_token=" + c,
		"redirected to https://login.example.com/cb#" + c,
		"db postgres://bob:" + c + "@db.example.com/app down",
		`upstream said {"password":"` + c + `"}`,
	} {
		e := &echo{unary: func(context.Context, string, int64, string) (string, error) {
			return "", status.Error(codes.Unavailable, msg)
		}}
		var buf bytes.Buffer
		hc := &heedgrpc.Client{Policy: fast(2), Files: echoFiles, Budget: budget.Config{Ratio: -1},
			Logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
		cc := dial(t, "passthrough:///bufnet", append(hc.DialOptions(), bufServer(t, e))...)
		invoke(ctxTimeout(t, 10*time.Second), cc, mGet, "x") // repeatable: two attempts
		if out := buf.String(); strings.Contains(out, c) || strings.Count(out, "REDACTED") < 2 {
			t.Errorf("log of %q shows the secret, or not two redacted records:\n%s", msg, out)
		}
	}
}
