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
