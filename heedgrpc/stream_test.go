package heedgrpc_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/heedgrpc"
	"github.com/heed-go/heed/retry"
)

var (
	watchDesc = &grpc.StreamDesc{StreamName: "Watch", ServerStreams: true}
	chatDesc  = &grpc.StreamDesc{StreamName: "Chat", ServerStreams: true, ClientStreams: true}
)

// watch opens Watch with in and reads every message.
func watch(ctx context.Context, cc *grpc.ClientConn, in string) ([]string, error) {
	s, err := cc.NewStream(ctx, watchDesc, mWatch)
	if err != nil {
		return nil, err
	}
	if err := s.SendMsg(wrapperspb.String(in)); err != nil {
		return nil, err
	}
	if err := s.CloseSend(); err != nil {
		return nil, err
	}
	var got []string
	for {
		m := new(wrapperspb.StringValue)
		if err := s.RecvMsg(m); err == io.EOF {
			return got, nil
		} else if err != nil {
			return got, err
		}
		got = append(got, m.GetValue())
	}
}

// TestStreamBeforeFirstMessage: a stream that fails before its first
// response message is retried, its request sent again.
func TestStreamBeforeFirstMessage(t *testing.T) {
	e := &echo{stream: func(_ string, n int64, ss grpc.ServerStream) error {
		in := new(wrapperspb.StringValue)
		if err := ss.RecvMsg(in); err != nil {
			return err
		}
		if n == 1 {
			return status.Error(codes.Unavailable, "not yet")
		}
		for i := 0; i < 3; i++ {
			ss.SendMsg(wrapperspb.String(in.GetValue()))
		}
		return nil
	}}
	hc := &heedgrpc.Client{Policy: fast(3), Files: echoFiles, Budget: budget.Config{Ratio: -1}}
	cc := dial(t, "passthrough:///bufnet", append(hc.DialOptions(), bufServer(t, e))...)
	got, err := watch(ctxTimeout(t, 10*time.Second), cc, "a")
	if err != nil || len(got) != 3 || got[0] != "a" {
		t.Fatalf("got %v, %v; want [a a a]", got, err)
	}
	if n := e.Calls(mWatch); n != 2 {
		t.Errorf("%d streams, want 2", n)
	}
}

// TestStreamAfterFirstMessage: once a message has arrived, a failure is
// returned and the stream is not opened again.
func TestStreamAfterFirstMessage(t *testing.T) {
	e := &echo{stream: func(_ string, n int64, ss grpc.ServerStream) error {
		in := new(wrapperspb.StringValue)
		if err := ss.RecvMsg(in); err != nil {
			return err
		}
		ss.SendMsg(wrapperspb.String("first"))
		return status.Error(codes.Unavailable, "gone midway")
	}}
	hc := &heedgrpc.Client{Policy: fast(3), Files: echoFiles, Budget: budget.Config{Ratio: -1}}
	cc := dial(t, "passthrough:///bufnet", append(hc.DialOptions(), bufServer(t, e))...)
	got, err := watch(ctxTimeout(t, 10*time.Second), cc, "a")
	if status.Code(err) != codes.Unavailable || len(got) != 1 {
		t.Fatalf("got %v, %v; want [first] and UNAVAILABLE", got, err)
	}
	if errors.Is(err, retry.ErrExhausted) {
		t.Errorf("a committed stream's failure is returned as is, got %v", err)
	}
	if n := e.Calls(mWatch); n != 1 {
		t.Errorf("%d streams, want 1", n)
	}
}

// TestStreamGivesUp: a stream failing before its first message every time
// gives up after the policy's attempts, with the last status.
func TestStreamGivesUp(t *testing.T) {
	e := &echo{stream: func(string, int64, grpc.ServerStream) error {
		return status.Error(codes.Unavailable, "down")
	}}
	hc := &heedgrpc.Client{Policy: fast(3), Files: echoFiles, Budget: budget.Config{Ratio: -1}}
	cc := dial(t, "passthrough:///bufnet", append(hc.DialOptions(), bufServer(t, e))...)
	_, err := watch(ctxTimeout(t, 10*time.Second), cc, "a")
	var x *retry.ExhaustedError
	if !errors.As(err, &x) || x.Reason != retry.ReasonAttempts || status.Code(err) != codes.Unavailable {
		t.Fatalf("err = %v, want attempts exhausted with UNAVAILABLE", err)
	}
	if n := e.Calls(mWatch); n != 3 {
		t.Errorf("%d streams, want 3", n)
	}
}

// TestBidiReplay: the messages a bidirectional stream sent before its first
// response are sent again, in order, on the retry; past MaxReplay the
// stream is not retried.
func TestBidiReplay(t *testing.T) {
	chat := func(fails int64, got chan<- []string) func(string, int64, grpc.ServerStream) error {
		return func(_ string, n int64, ss grpc.ServerStream) error {
			var ins []string
			for {
				in := new(wrapperspb.StringValue)
				if err := ss.RecvMsg(in); err == io.EOF {
					break
				} else if err != nil {
					return err
				}
				ins = append(ins, in.GetValue())
			}
			got <- ins
			if n <= fails {
				return status.Error(codes.Unavailable, "not yet")
			}
			return ss.SendMsg(wrapperspb.String("done"))
		}
	}
	run := func(t *testing.T, hc *heedgrpc.Client, e *echo, msgs int) error {
		cc := dial(t, "passthrough:///bufnet", append(hc.DialOptions(), bufServer(t, e))...)
		s, err := cc.NewStream(ctxTimeout(t, 10*time.Second), chatDesc, mChat)
		if err != nil {
			return err
		}
		for i := 0; i < msgs; i++ {
			if err := s.SendMsg(wrapperspb.String(string(rune('a' + i)))); err != nil {
				return err
			}
		}
		s.CloseSend()
		m := new(wrapperspb.StringValue)
		if err := s.RecvMsg(m); err != nil {
			return err
		}
		if m.GetValue() != "done" {
			t.Errorf("got %q", m.GetValue())
		}
		return nil
	}
	t.Run("replayed", func(t *testing.T) {
		got := make(chan []string, 3)
		e := &echo{stream: chat(1, got)}
		hc := &heedgrpc.Client{Policy: fast(3), Files: echoFiles, Budget: budget.Config{Ratio: -1}}
		if err := run(t, hc, e, 3); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			if ins := <-got; len(ins) != 3 || ins[0] != "a" || ins[2] != "c" {
				t.Errorf("attempt %d received %v, want [a b c]", i+1, ins)
			}
		}
	})
	t.Run("past MaxReplay", func(t *testing.T) {
		got := make(chan []string, 3)
		e := &echo{stream: chat(1, got)}
		hc := &heedgrpc.Client{Policy: fast(3), Files: echoFiles, Budget: budget.Config{Ratio: -1}, MaxReplay: 2}
		err := run(t, hc, e, 3)
		var x *retry.ExhaustedError
		if !errors.As(err, &x) || x.Reason != retry.ReasonNotRepeatable {
			t.Fatalf("err = %v, want not repeatable", err)
		}
		if n := e.Calls(mChat); n != 1 {
			t.Errorf("%d streams, want 1", n)
		}
	})
}

// TestStreamNeverOpened: a stream whose creation fails (nothing listens)
// is retried inside NewStream and gives up with the attempts.
func TestStreamNeverOpened(t *testing.T) {
	addr := closedPort(t)
	hc := &heedgrpc.Client{Policy: fast(3), Files: echoFiles, Budget: budget.Config{Ratio: -1}}
	cc := dial(t, addr, hc.DialOptions()...)
	_, err := watch(ctxTimeout(t, 10*time.Second), cc, "a")
	var x *retry.ExhaustedError
	if !errors.As(err, &x) || x.Attempts != 3 || status.Code(err) != codes.Unavailable {
		t.Fatalf("err = %v, want 3 attempts, UNAVAILABLE", err)
	}
}

// TestBidiConcurrent: one goroutine sends while another receives, and the
// first attempt fails before any response: the retry replays what was
// sent, and the receiver gets every echo of the second attempt.
func TestBidiConcurrent(t *testing.T) {
	const msgs = 8
	e := &echo{stream: func(_ string, n int64, ss grpc.ServerStream) error {
		for i := 0; ; i++ {
			in := new(wrapperspb.StringValue)
			if err := ss.RecvMsg(in); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
			if n == 1 {
				if i == 2 { // three messages in, no response yet
					return status.Error(codes.Unavailable, "dropped")
				}
				continue
			}
			if err := ss.SendMsg(in); err != nil {
				return err
			}
		}
	}}
	hc := &heedgrpc.Client{Policy: fast(3), Files: echoFiles, Budget: budget.Config{Ratio: -1}}
	cc := dial(t, "passthrough:///bufnet", append(hc.DialOptions(), bufServer(t, e))...)
	s, err := cc.NewStream(ctxTimeout(t, 10*time.Second), chatDesc, mChat)
	if err != nil {
		t.Fatal(err)
	}
	sendErr := make(chan error, 1)
	go func() {
		for i := 0; i < msgs; i++ {
			if err := s.SendMsg(wrapperspb.String(string(rune('a' + i)))); err != nil {
				sendErr <- err
				return
			}
		}
		sendErr <- s.CloseSend()
	}()
	var got []string
	for {
		m := new(wrapperspb.StringValue)
		if err := s.RecvMsg(m); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		got = append(got, m.GetValue())
	}
	if err := <-sendErr; err != nil {
		t.Fatal(err)
	}
	// The first response commits the stream: every message from there on
	// is this attempt's, so the echoes are the whole sequence, in order.
	if len(got) != msgs || got[0] != "a" || got[msgs-1] != string(rune('a'+msgs-1)) {
		t.Errorf("got %v, want a..%c", got, 'a'+msgs-1)
	}
}
