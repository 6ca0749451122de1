package heedgrpc_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/heed-go/heed/heedgrpc"
	"github.com/heed-go/heed/overload"
)

// A Server with a Limiter refuses a call it cannot take at once with
// UNAVAILABLE and grpc-retry-pushback-ms, without calling the handler;
// a retry never waits.
func TestServerLimiter(t *testing.T) {
	lim, err := overload.New(overload.Config{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	running, finish := make(chan struct{}), make(chan struct{})
	e := &echo{unary: func(ctx context.Context, method string, n int64, in string) (string, error) {
		if in == "hold" {
			close(running)
			<-finish
		}
		return in, nil
	}}
	cc := dial(t, "passthrough:///buf", bufServer(t, e, heedgrpc.Server{Limiter: lim}.ServerOptions()...))
	held := make(chan error, 1)
	go func() {
		_, err := invoke(ctxTimeout(t, 5*time.Second), cc, mGet, "hold")
		held <- err
	}()
	<-running

	var trailer metadata.MD
	ctx := metadata.AppendToOutgoingContext(ctxTimeout(t, 5*time.Second), heedgrpc.RetryAttemptMetadata, "2")
	err = cc.Invoke(ctx, mGet, wrapperspb.String("retry"), new(wrapperspb.StringValue), grpc.Trailer(&trailer))
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("retry at the limit: %v, want UNAVAILABLE", err)
	}
	v := trailer.Get(heedgrpc.PushbackMetadata)
	if len(v) != 1 {
		t.Fatalf("trailer %v, want one %s", trailer, heedgrpc.PushbackMetadata)
	}
	if ms, err := strconv.Atoi(v[0]); err != nil || ms < 1 {
		t.Errorf("%s = %q, want a positive number of milliseconds", heedgrpc.PushbackMetadata, v[0])
	}
	if got := e.Calls(mGet); got != 1 {
		t.Errorf("handler called %d times, want 1 (the refused call never reaches it)", got)
	}
	close(finish)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if out, err := invoke(ctxTimeout(t, 5*time.Second), cc, mGet, "after"); err != nil || out != "after" {
		t.Errorf("after the limit freed: %q, %v", out, err)
	}
}

// A Server records the attempt number of a call that carries retry-attempt,
// so that the heed client its handler calls sends it on: a user's retry is
// still a retry two hops down, and a Limiter there refuses it at once
// while a first attempt waits for a place.
func TestServerAttemptTravelsDown(t *testing.T) {
	lim, err := overload.New(overload.Config{Limit: 1, MaxQueue: 10})
	if err != nil {
		t.Fatal(err)
	}
	running, finish := make(chan struct{}), make(chan struct{})
	back := &echo{unary: func(ctx context.Context, method string, n int64, in string) (string, error) {
		if in == "hold" {
			close(running)
			<-finish
		}
		return in, nil
	}}
	ccBack := dial(t, "passthrough:///back", bufServer(t, back, heedgrpc.Server{Trusted: heedgrpc.TrustAll, Limiter: lim}.ServerOptions()...),
		grpc.WithChainUnaryInterceptor((&heedgrpc.Client{Policy: fast(3), Files: echoFiles}).UnaryInterceptor()))
	front := &echo{unary: func(ctx context.Context, method string, n int64, in string) (string, error) {
		return invoke(ctx, ccBack, mGet, in)
	}}
	ccFront := dial(t, "passthrough:///front", bufServer(t, front, heedgrpc.Server{Trusted: heedgrpc.TrustAll}.ServerOptions()...))

	call := func(attempt, in string) error {
		ctx := ctxTimeout(t, 5*time.Second)
		if attempt != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, heedgrpc.RetryAttemptMetadata, attempt)
		}
		_, err := invoke(ctx, ccFront, mGet, in)
		return err
	}
	if err := call("3", "free"); err != nil {
		t.Fatal(err)
	}
	if got := back.Seen(); len(got) != 1 || got[0] != "3" {
		t.Fatalf("retry-attempt at the back: %q, want [3]: the user's attempt number sent on", got)
	}

	held := make(chan error, 1)
	go func() { held <- call("", "hold") }()
	<-running
	// The user's retry, through the front: refused at once at the limit.
	if err := call("2", "retry"); status.Code(err) == codes.OK {
		t.Errorf("a user's retry two hops down at the limit: %v, want refused", err)
	}
	// A first attempt waits for the place instead.
	first := make(chan error, 1)
	go func() { first <- call("1", "first") }()
	for lim.Stats().Queued == 0 {
		time.Sleep(time.Millisecond)
	}
	close(finish)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Errorf("a first attempt at the limit: %v, want served after the wait", err)
	}
	if got := back.Calls(mGet); got != 3 {
		t.Errorf("the back's handler ran %d times, want 3 (the retry never reached it)", got)
	}
}
