package heedotel

import (
	"context"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc/codes"

	"github.com/heed-go/heed/heedgrpc"
	"github.com/heed-go/heed/internal/redact"
	"github.com/heed-go/heed/retry"
)

// maxGRPCMethods caps the (target, method) pairs the gRPC instruments of
// one heedgrpc.Client tell apart. Calls of further pairs are recorded with
// server.address, rpc.service and rpc.method "_OTHER", so that a client
// that forwards arbitrary methods or dials targets taken from data cannot
// grow the number of series without bound.
const maxGRPCMethods = 256

// Semantic-convention attribute keys of the gRPC instruments, besides
// server.address (the ClientConn's target).
const (
	keyRPCSystem  = attribute.Key("rpc.system")
	keyRPCService = attribute.Key("rpc.service")
	keyRPCMethod  = attribute.Key("rpc.method")
	keyGRPCStatus = attribute.Key("rpc.grpc.status_code")
)

// numCodes is the number of gRPC codes, plus one slot for codes beyond
// them (recorded as UNKNOWN's 2).
const numCodes = 17

func codeIndex(c codes.Code) int {
	if c < numCodes {
		return int(c)
	}
	return int(codes.Unknown)
}

// reasonCanceledGRPC is the final reason of a call whose caller's context
// ended: it has no decision.
const reasonCanceledGRPC = numReasons

// grpcInstruments are the instruments of heedgrpc.Client calls.
type grpcInstruments struct {
	attemptDur metric.Float64Histogram
	attempts   metric.Int64Counter
	retries    metric.Int64Counter
	giveUps    metric.Int64Counter
	refused    metric.Int64Counter
	delay      metric.Float64Histogram
	callDur    metric.Float64Histogram
	hedges     metric.Int64Counter
	hedgeWon   metric.Int64Counter
}

// GRPCClient makes c record its calls: it sets c.OnAttempt (calling any
// function already there first), so call it once, before c is used.
// Every attempt is recorded as heed.grpc.client.attempt.duration and
// heed.grpc.client.attempts (by rpc.grpc.status_code and outcome class);
// retries, their waits, give-ups (by status code and reason, "canceled"
// for a call whose caller's context ended), breaker refusals and whole
// calls (heed.grpc.client.call.duration, from the first attempt to the
// final decision), hedges sent and hedges that won (heed.grpc.client.hedges,
// heed.grpc.client.hedges.won) as the other heed.grpc.client.* instruments; all with
// rpc.system "grpc", rpc.service, rpc.method and server.address (the
// target, with anything that looks like a credential replaced by
// REDACTED). Metadata and messages are never recorded. At most
// 256 (target, method) pairs are told apart.
//
// It returns an error when an instrument cannot be created.
func (m *Metrics) GRPCClient(c *heedgrpc.Client) error {
	b := builder{meter: m.meter}
	in := &grpcInstruments{
		attemptDur: b.histogram("heed.grpc.client.attempt.duration", "s", "Duration of one attempt of a gRPC call through heedgrpc, by status code and outcome class.", durationBuckets),
		attempts:   b.counter("heed.grpc.client.attempts", "{attempt}", "gRPC attempts made by heedgrpc, by status code and outcome class."),
		retries:    b.counter("heed.grpc.client.retries", "{retry}", "gRPC retries decided by heedgrpc, by status code of the attempt retried and reason."),
		giveUps:    b.counter("heed.grpc.client.give_ups", "{call}", "gRPC calls on which heedgrpc gave up, by status code of the last attempt and reason (canceled: the caller's context ended)."),
		refused:    b.counter("heed.grpc.client.breaker.refused", "{call}", "gRPC attempts refused by an open per-target circuit breaker before they were sent."),
		delay:      b.histogram("heed.grpc.client.retry.delay", "s", "Wait before a gRPC retry, by reason.", delayBuckets),
		hedges:     b.counter("heed.grpc.client.hedges", "{attempt}", "Hedges heedgrpc sent beside a slow unary attempt (retry.Policy.Hedge); heed.grpc.client.attempts counts a race as one attempt."),
		hedgeWon:   b.counter("heed.grpc.client.hedges.won", "{call}", "Races of heedgrpc whose result came from a hedge, not from the attempt it raced."),
		callDur:    b.histogram("heed.grpc.client.call.duration", "s", "Duration of a gRPC call through heedgrpc, all attempts and waits included, by final status code and reason.", durationBuckets),
	}
	if b.err != nil {
		return b.err
	}
	t := &grpcTable{}
	prev := c.OnAttempt
	c.OnAttempt = func(ctx context.Context, a heedgrpc.Attempt) {
		if prev != nil {
			prev(ctx, a)
		}
		in.observe(ctx, t.get(a.Target, a.Method), &a)
	}
	return nil
}

func (in *grpcInstruments) observe(ctx context.Context, s *grpcSets, a *heedgrpc.Attempt) {
	ci := codeIndex(a.Code)
	if a.Canceled {
		in.giveUps.Add(ctx, 1, s.get(gGiveUps, ci, reasonCanceledGRPC).add...)
		return
	}
	e := &a.Event
	if e.Hedges > 0 {
		in.hedges.Add(ctx, int64(e.Hedges), s.base.add...)
		if e.HedgeWon {
			in.hedgeWon.Add(ctx, 1, s.base.add...)
		}
	}
	ri := reasonIndex(e.Reason)
	if a.Refused {
		if e.Reason == retry.ReasonBreakerOpen {
			in.refused.Add(ctx, 1, s.base.add...)
		}
	} else {
		oi := outcomeIndex(e.Outcome)
		in.attempts.Add(ctx, 1, s.get(gAttempts, ci, oi).add...)
		in.attemptDur.Record(ctx, e.Duration.Seconds(), s.get(gAttempts, ci, oi).rec...)
	}
	switch e.Action {
	case retry.Retry:
		in.retries.Add(ctx, 1, s.get(gRetries, ci, ri).add...)
		in.delay.Record(ctx, e.Delay.Seconds(), s.get(gDelay, 0, ri).rec...)
		return
	case retry.GiveUp:
		in.giveUps.Add(ctx, 1, s.get(gGiveUps, ci, ri).add...)
	}
	in.callDur.Record(ctx, e.Elapsed.Seconds(), s.get(gCallDur, ci, ri).rec...)
}

// Kinds of attribute sets of a (target, method) pair.
const (
	gAttempts = iota // a: code, b: outcome
	gRetries         // a: code, b: reason
	gGiveUps         // a: code, b: reason (or reasonCanceledGRPC)
	gDelay           // b: reason
	gCallDur         // a: code, b: reason
)

// grpcSets are the attribute sets of one (target, method) pair, built on
// first use.
type grpcSets struct {
	kv   []attribute.KeyValue
	base opts
	sets sync.Map // setKey -> *opts
}

func (s *grpcSets) get(kind, a, b int) *opts {
	k := setKey{kind, a, b}
	if v, ok := s.sets.Load(k); ok {
		return v.(*opts)
	}
	kv := s.kv[:len(s.kv):len(s.kv)]
	switch kind {
	case gAttempts:
		kv = append(kv, keyGRPCStatus.Int(a), keyOutcome.String(outcomeName(b)))
	case gDelay:
		kv = append(kv, keyReason.String(reasonName(b)))
	default:
		r := "canceled"
		if b != reasonCanceledGRPC {
			r = reasonName(b)
		}
		kv = append(kv, keyGRPCStatus.Int(a), keyReason.String(r))
	}
	o := newOpts(kv...)
	v, _ := s.sets.LoadOrStore(k, &o)
	return v.(*opts)
}

// grpcTable holds the (target, method) pairs seen, up to maxGRPCMethods.
type grpcTable struct {
	m     sync.Map // [2]string -> *grpcSets
	mu    sync.Mutex
	n     int
	other *grpcSets
}

func (t *grpcTable) get(target, method string) *grpcSets {
	k := [2]string{target, method}
	if v, ok := t.m.Load(k); ok {
		return v.(*grpcSets)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.m.Load(k); ok {
		return v.(*grpcSets)
	}
	if t.n >= maxGRPCMethods {
		if t.other == nil {
			t.other = newGRPCSets("_OTHER", "_OTHER", "_OTHER")
		}
		return t.other
	}
	svc, name := "_OTHER", "_OTHER"
	if s, n, ok := strings.Cut(strings.TrimPrefix(method, "/"), "/"); ok && s != "" && n != "" {
		svc, name = s, n
	}
	s := newGRPCSets(redact.Text(redact.Host(target)), svc, name)
	t.m.Store(k, s)
	t.n++
	return s
}

func newGRPCSets(target, svc, method string) *grpcSets {
	kv := []attribute.KeyValue{keyRPCSystem.String("grpc"), keyAddress.String(target), keyRPCService.String(svc), keyRPCMethod.String(method)}
	return &grpcSets{kv: kv, base: newOpts(kv...)}
}
