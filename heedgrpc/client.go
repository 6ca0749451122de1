// Package heedgrpc brings heed's retries to gRPC: client interceptors that
// retry only what is safe to repeat, only while it may help, inside the
// caller's deadline, a retry budget and a circuit breaker per target, and
// server interceptors that keep one retry owner in a chain of services and
// fail fast when too little time is left.
//
// Most callers want [Client.DialOptions] on the client side and
// [Server.ServerOptions] on the server side:
//
//	conn, err := grpc.NewClient(target, append(hc.DialOptions(), creds)...)
//	srv := grpc.NewServer(hs.ServerOptions()...)
//
// Every decision to retry or give up is made by heed's call protocol
// (retry.Call, around retry.Decide) from a retry.Policy, so a gRPC call
// behaves like any other heed call: the same attempts, backoff, time
// budget, retry budget and breaker as retry.Do and retryhttp.
//
// # Status codes
//
// The status of each attempt is classified by this table:
//
//	code                  outcome          retried when
//	OK                    success          never: returned
//	UNAVAILABLE           transient        the call never left the client (no stream to a server was
//	                      (pushback         opened: no connection, channel in transient failure), or the
//	                      honoured)        method is repeatable (idempotent, or an idempotency key)
//	RESOURCE_EXHAUSTED,   pushback, only   the server sent grpc-retry-pushback-ms >= 0 and the method is
//	ABORTED               with a pushback  repeatable; the wait is honoured as Retry-After is: never
//	                                       retried before it, and a wait that does not fit the
//	                                       deadline, the time budget or Policy.MaxPushback gives up
//	                                       at once; a negative or malformed pushback gives up
//	DEADLINE_EXCEEDED     timeout          from the server's own limit, or cut off by the policy's
//	                                       AttemptTimeout or time budget, while the caller's deadline
//	                                       has not passed: the method is repeatable and the policy
//	                                       leaves time; after the caller's deadline: never (returned)
//	CANCELLED             -                the caller's context ended: returned as is; otherwise permanent
//	anything else         permanent        never: INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS,
//	                                       PERMISSION_DENIED, FAILED_PRECONDITION, OUT_OF_RANGE,
//	                                       UNIMPLEMENTED, INTERNAL, DATA_LOSS, UNAUTHENTICATED, UNKNOWN
//	any code, with the    permanent, not   never: the server is healthy, its own dependency's breaker
//	trailer upstream-     counted by the   is open
//	breaker: open         breaker
//
// A repeatable method is one listed in Client.Idempotent, or whose
// descriptor (found in Client.Files, the global registry by default)
// declares the option idempotency_level NO_SIDE_EFFECTS or IDEMPOTENT, or
// a call that carries an idempotency key in its outgoing metadata
// ("idempotency-key", [IdempotencyKeyMetadata]) unless KeyedRetriesOff is
// set. A failure that is not safe to repeat gives up with
// retry.ReasonNotRepeatable.
//
// # gRPC's own retries
//
// A channel that uses these interceptors must not also retry by itself, or
// the two would multiply. [Client.DialOptions] includes
// grpc.WithDisableRetry(), which turns off the channel's retry and hedging
// policies from the service config (the default one or one sent by the
// resolver) and its retry throttling. Only the transparent retry that
// grpc-go does of an RPC that never reached the server application (a
// stream refused by the server's transport) remains: it makes no
// additional call to a handler. Set the interceptors with your own dial
// options only together with grpc.WithDisableRetry().
//
// # Across services
//
// An attempt carries "retry-attempt: N" in its metadata when this layer
// will retry the call (its policy allows more than one attempt and the
// method is repeatable), and, when a layer above owns the retries (the
// context is marked with deadline.WithUpstreamOwner), to pass that claim on.
// A client that will not retry claims nothing, so the layer below retries
// on its own. A server wrapped in [Server]'s interceptors that sees it
// marks the handler's context with deadline.WithUpstreamOwner: the heed
// clients it calls under that context (gRPC or HTTP) make a single attempt,
// so a chain of services makes (1+r) attempts, not (1+r)^hops. The
// deadline travels as gRPC's own grpc-timeout: the time left.
//
// # Hedging
//
// With Policy.Hedge set (off by default), a unary call to a repeatable
// method whose attempt has not answered after the hedge's delay is raced
// by another attempt (retry.Hedge says how many and when), which carries
// the next retry-attempt number, takes a token from the target's retry
// budget and is refused by its breaker; the first acceptable answer wins
// and the others are cancelled. Each hedge decodes into a new message of
// the reply's type; the winner's is merged into the caller's reply. A
// reply that is not a proto.Message, and streams, are never hedged.
//
// # Streams
//
// A stream is retried only before its first response message: until then
// the messages sent are kept (up to Client.MaxReplay) and sent again on a
// new stream, and CloseSend repeated. Once a message has been received, or
// Header returned, the stream is committed to its attempt and a failure is
// returned to the caller.
package heedgrpc

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/internal/admitfirst"
	"github.com/heed-go/heed/internal/dest"
	"github.com/heed-go/heed/internal/wire"
	"github.com/heed-go/heed/retry"
)

// Metadata keys of heed's wire formats over gRPC (lower case, as gRPC
// metadata keys are).
const (
	// retryAttemptMD carries the attempt number, "1" to "9999", of a
	// call whose caller retries (or passes on the claim of a caller above):
	// the gRPC form of the Retry-Attempt header.
	retryAttemptMD = "retry-attempt"
	// IdempotencyKeyMetadata makes a call to a method that is not declared
	// idempotent safe to repeat, when the server honours it.
	IdempotencyKeyMetadata = "idempotency-key"
	// PushbackMetadata is the trailer in which a server asks the client to
	// wait (milliseconds, an ASCII int32) before retrying, or, negative,
	// not to retry (gRFC A6).
	PushbackMetadata = "grpc-retry-pushback-ms"
	// upstreamBreakerMD is the trailer, "upstream-breaker: open", by
	// which a heed server says that it failed the call because a
	// dependency of its own is refused by an open circuit breaker: the
	// server is healthy, so the call is neither retried nor counted as a
	// failure by the client's breaker (the gRPC form of HTTP's
	// Upstream-Breaker header).
	upstreamBreakerMD = "upstream-breaker"
)

// defaultMaxReplay is how many sent messages a stream keeps, so that it can
// be sent again on a new stream, when Client.MaxReplay is zero: 16. A
// stream that sends more before its first response message is not retried.
const defaultMaxReplay = 16

// Client holds the configuration and the per-target state of heed's client
// interceptors.
//
// The zero value is ready to use: the default retry.Policy (3 attempts,
// exponential backoff with full jitter), the process's default retry
// budget per target (shared with every other Client that calls it), no
// breaker, no logging, and repeatable methods only as the registered
// descriptors declare them. Set the fields before the first call and do not
// change them afterwards. A Client is safe for concurrent use and should be
// shared by every connection to a target: its breakers are per target (the
// ClientConn's Target()), shared by every call through its interceptors;
// one is kept for every target it has called, for its lifetime.
type Client struct {
	// Policy decides retries: Attempts, Backoff, AttemptTimeout (which
	// bounds a whole stream attempt), TimeBudget, MinAttemptTime,
	// MaxPushback (the cap on grpc-retry-pushback-ms, default 30 s), Clock,
	// Rand and Observe apply as in retry.Do. A Budget or Breaker set here
	// is shared by all targets instead of the per-target ones. Hedge hedges
	// unary calls to repeatable methods (see Hedging above), each target
	// with a copy of its own that learns that target's latencies.
	Policy retry.Policy

	// Idempotent lists the full method names ("/package.Service/Method")
	// that are safe to repeat, besides those whose descriptor says so.
	Idempotent []string

	// Files is where method descriptors are looked up for their
	// idempotency_level option (default: protoregistry.GlobalFiles, where
	// generated code registers itself).
	Files *protoregistry.Files

	// DescriptorsOff turns the descriptor lookup off: only Idempotent and
	// idempotency keys make a method repeatable.
	DescriptorsOff bool

	// KeyedRetriesOff stops calls that carry an idempotency key in their
	// metadata from being repeated because of it (default: keyed calls
	// are repeatable). Use it for servers not known to honour the key.
	KeyedRetriesOff bool

	// Propagate chooses the calls that may carry retry-attempt (default,
	// nil: every call to every target). Return false for targets that are
	// not heed services: the metadata means nothing to them and tells them
	// how you retry.
	Propagate func(target, method string) bool

	// Budget configures the retry budget of each target (zero: budget's
	// defaults; a negative Ratio turns the budgets off, as for
	// retryhttp.Transport). The budgets are shared by every Client of the
	// process that calls the same target with the same Budget: see
	// Budgets.
	Budget budget.Config
	// Budgets keeps the budgets per target (default: the process's
	// registry, budget.For, as for retryhttp.Transport), keyed by the
	// target's name (the ClientConn's Target()), so that Clients made per
	// connection or per call still spend one budget per target, as a
	// budget must to bound an outage's load. A target written as
	// "host:port" spends the budget of retryhttp's requests to that host
	// and port. Give a Client a registry of its own only to keep its
	// budgets apart (in tests whose targets share names, say).
	Budgets *budget.Registry
	// Breaker, when set, gives each target a circuit breaker with this
	// configuration (default: none).
	Breaker *breaker.Config
	// OnBreakerChange, when set, is called on every change of state of a
	// target's breaker, with the target, after Breaker.OnStateChange.
	OnBreakerChange func(target string, from, to breaker.State, at time.Time)

	// AttemptShare is the share of the time left before the caller's
	// deadline that one attempt of a unary call takes when the policy sets
	// no AttemptTimeout and the call may still be retried (the method is
	// repeatable, attempts are left, no layer above owns the retries), such
	// as 0.5, so that a server that accepts the call and never answers
	// leaves time for a retry (default: none, as for retryhttp.Transport:
	// an attempt may take all the time left, so a slow server that is
	// working is not cut off; negative: none). It must be at most 1.
	// Streams are not cut: a stream's attempt lasts as long as the stream.
	AttemptShare float64

	// MaxReplay is how many sent messages a stream keeps to send again on
	// a retry (default 16; negative: streams that send
	// messages are never retried).
	MaxReplay int

	// Logger, when set, receives one record per attempt (Debug for a
	// success, Info for a retry, Warn for a give-up) with the target,
	// method, attempt, code, error, decision, reason and delay. Secrets
	// are removed by retryhttp's rules (see retryhttp.RedactURL): metadata
	// values are never logged, an idempotency key appears only as its
	// hash (the first 8 hex digits of its SHA-256), and the error text is cut at 8 KiB with
	// URLs' secrets and credential-like words replaced by REDACTED.
	Logger *slog.Logger

	// OnAttempt, when set, is called after every attempt, and for a call
	// refused before its first attempt or ended by its caller, on the
	// goroutine of the call. It must not block. heedotel uses it.
	OnAttempt func(ctx context.Context, a Attempt)

	initOnce  sync.Once
	initErr   error
	maxReplay int      // MaxReplay after its default
	share     float64  // AttemptShare, 0 for none
	targets   dest.Set // per target: the policy with its budget and breaker
	// fast: a unary call's first attempt may do without the call
	// protocol's state (no one is told about attempts), when
	// admitfirst.Admit (heed's own door for it) admits it under its
	// target's policy.
	fast bool
	// methods says whether a method is repeatable by Idempotent or its
	// descriptor: read with one atomic load, copied on write (once per
	// method name, up to maxMethods). lastMethod is the entry found last,
	// so that a Client that calls one method most of the time compares a
	// string instead of hashing it.
	methods    atomic.Pointer[map[string]*method]
	lastMethod atomic.Pointer[method]
	methodsMu  sync.Mutex
}

// Attempt describes one attempt of a call through a [Client]'s
// interceptors, for Client.OnAttempt.
type Attempt struct {
	// Target is the ClientConn's target, Method the full method name.
	Target, Method string
	// Code is the attempt's status code (OK for a success; for a call
	// refused before its attempt, the code of the error returned).
	Code codes.Code
	// Event is the decision taken after the attempt and how long it ran.
	// A refusal before the attempt (breaker open, no time left) has
	// Duration zero and Attempt the attempts made before it.
	retry.Event
	// Refused says no attempt was made: the breaker or the time left
	// refused it.
	Refused bool
	// Canceled says the caller's context ended: there is no decision.
	Canceled bool
}

func (c *Client) init() {
	c.initOnce.Do(func() {
		if err := c.Policy.Validate(); err != nil {
			c.initErr = err
			return
		}
		if err := c.targets.Init(dest.Config{Policy: c.Policy, Budget: c.Budget, Budgets: c.Budgets,
			Breaker: c.Breaker, OnBreakerChange: c.OnBreakerChange}); err != nil {
			c.initErr = err
			return
		}
		if math.IsNaN(c.AttemptShare) || c.AttemptShare > 1 {
			c.initErr = fmt.Errorf("heedgrpc: AttemptShare is %v, must be at most 1 (negative: none)", c.AttemptShare)
			return
		}
		c.share = max(c.AttemptShare, 0)
		c.maxReplay = c.MaxReplay
		if c.maxReplay == 0 {
			c.maxReplay = defaultMaxReplay
		}
		p := &c.Policy
		c.fast = p.Observe == nil && c.OnAttempt == nil && c.Logger == nil
		m := make(map[string]*method, len(c.Idempotent))
		for _, name := range c.Idempotent {
			m[name] = &method{name: name, idempotent: true}
		}
		c.methods.Store(&m)
	})
}

// DialOptions returns the dial options that make a channel use c: both
// interceptors (chained after any set before them) and
// grpc.WithDisableRetry(), so that the channel does not retry by itself.
func (c *Client) DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithDisableRetry(),
		grpc.WithChainUnaryInterceptor(c.UnaryInterceptor()),
		grpc.WithChainStreamInterceptor(c.StreamInterceptor()),
	}
}

// attemptMD are the outgoing metadata of the first attempts, shared (gRPC
// only reads outgoing metadata).
var attemptMD = func() (m [9]metadata.MD) {
	for i := range m {
		m[i] = metadata.MD{retryAttemptMD: {strconv.Itoa(i + 1)}}
	}
	return m
}()

// attemptMDValue are attemptMD as package metadata keeps them in a
// context (its own type, unexported, which a context holds as an
// interface): read back from a context made with each, so that adding one
// to a context allocates only the context.
var attemptMDValue = func() (v [len(attemptMD)]any) {
	if outgoingMDKey == nil {
		return v
	}
	for i, md := range attemptMD {
		v[i] = metadata.NewOutgoingContext(context.Background(), md).Value(outgoingMDKey)
	}
	return v
}()

// withAttempt returns ctx, a context of the call's attempt, with
// retry-attempt: n added to its outgoing metadata. A context without
// outgoing metadata (the common case) gets a shared one, with one
// allocation (the context) instead of the four of
// metadata.AppendToOutgoingContext. What the caller's context holds was
// read by prepare: an attempt's context holds the same values, and
// looking through it (a race's, see retry.Call.Race) costs each hedged
// call one more call.
func (cs *call) withAttempt(ctx context.Context, n int) context.Context {
	// A call that passes on its caller's claim carries the caller's
	// attempt number, so that a server down the chain sees a retry.
	n = max(n, cs.upAttempt)
	if n >= 1 && n <= len(attemptMDValue) && attemptMDValue[n-1] != nil && !cs.outMD {
		return context.WithValue(ctx, outgoingMDKey, attemptMDValue[n-1])
	}
	return metadata.AppendToOutgoingContext(ctx, retryAttemptMD, strconv.Itoa(min(max(n, 1), 9999)))
}

// outgoingMDKey is the context key under which package metadata keeps
// outgoing metadata, learnt by asking it to read a probe context: with it,
// whether a context has outgoing metadata costs one lookup and no copy.
// Should the probe learn nothing, withAttempt always appends.
var outgoingMDKey = func() any {
	var p probeContext
	metadata.ValueFromOutgoingContext(&p, retryAttemptMD)
	return p.key
}()

// probeContext records the first key it is asked for.
type probeContext struct {
	context.Context
	key any
}

func (p *probeContext) Value(key any) any {
	if p.key == nil {
		p.key = key
	}
	return nil
}

// outgoingKey returns the idempotency key in ctx's outgoing metadata, if
// any: the first value, as a server reading the first value sees it.
func outgoingKey(ctx context.Context) string {
	if v := metadata.ValueFromOutgoingContext(ctx, IdempotencyKeyMetadata); len(v) > 0 {
		return v[0]
	}
	return ""
}

// call is the state of one call through the interceptors, kept from the
// first attempt to the last.
type call struct {
	c          *Client
	p          *retry.Policy // the target's, never written
	target     string        // the ClientConn's target
	method     string
	key        string // the idempotency key sent, if any (read when needed)
	repeatable bool
	owned      bool // a caller up the chain owns retries (known when ownKnown)
	ownKnown   bool
	upAttempt  int  // the attempt number the caller's request carried (known when ownKnown)
	outMD      bool // the caller's context has outgoing metadata (known when claim)
	claim      bool // attempts carry retry-attempt

	// What gRPC fills in after each attempt, through call options that
	// point here (so that passing them allocates nothing): opts holds
	// grpc.Peer(&peer), grpc.Trailer(&trailer), then the caller's options.
	trailer metadata.MD
	peer    peer.Peer
	tracing bool // peer is asked for: it decides whether the call was sent
	opts    [8]grpc.CallOption
	optsSet bool // opts holds the first two
	nopts   int  // caller's options in opts

	racer *racer // made by the call's first race, kept through the pool
}

var callPool = sync.Pool{New: func() any { return new(call) }}

// prepare sets what the call's first attempt needs: its target's policy,
// whether it is repeatable, whether it claims ownership.
func (c *Client) prepare(ctx context.Context, cc *grpc.ClientConn, method string, cs *call) {
	name := ""
	if cc != nil {
		name = cc.Target()
	}
	cs.c, cs.target, cs.method = c, name, method
	cs.p = &c.targets.Get(name, nil).Policy
	cs.repeatable = c.idempotent(method)
	if !cs.repeatable || c.Logger != nil {
		cs.key = outgoingKey(ctx)
		if cs.key != "" && !c.KeyedRetriesOff {
			cs.repeatable = true
		}
	}
	// A method that is not repeatable may still be retried when it never
	// left the client: whether it did is asked of gRPC (the peer).
	cs.tracing = !cs.repeatable
	cs.owned, cs.ownKnown, cs.claim = false, false, false
	if c.Propagate == nil || c.Propagate(name, method) {
		// A call this layer retries claims whoever owns it above: who
		// does is asked only when it matters.
		cs.claim = cs.repeatable && cs.p.MaxAttempts() != 1 || cs.upstreamOwns(ctx)
		if cs.claim {
			// What withAttempt needs of the caller's context.
			cs.upstreamOwns(ctx)
			cs.outMD = outgoingMDKey == nil || ctx.Value(outgoingMDKey) != nil
		}
	}
}

// upstreamOwns reports whether a caller up the chain owns the call's
// retries (deadline.UpstreamOwns), asking the context once, and reads
// the attempt number the caller's request carried with it
// (wire.UpstreamAttempt).
func (cs *call) upstreamOwns(ctx context.Context) bool {
	if !cs.ownKnown {
		cs.owned, cs.upAttempt = false, 0
		if s, ok := wire.StateOf(ctx); ok {
			cs.owned, cs.upAttempt = s.Owned, s.Attempt
		}
		cs.ownKnown = true
	}
	return cs.owned
}

// release returns cs to the pool, cleared of what its attempts got from
// the caller and from gRPC (the Client, its policy and the names, which
// live as long as the Client or its connection, are overwritten by the
// next call; opts' first two point into cs itself; its racer keeps
// nothing of the call: see racer.clear). The call protocol's state is not
// in cs: a unary call keeps it on its stack (see startCall).
func (cs *call) release() {
	cs.clearAttempt()
	clear(cs.opts[2 : 2+cs.nopts])
	cs.key, cs.nopts = "", 0
	callPool.Put(cs)
}

// clearAttempt clears what gRPC filled in after an attempt.
func (cs *call) clearAttempt() {
	cs.trailer, cs.peer = nil, peer.Peer{}
}

// callOptions returns opts with the options that make gRPC fill in the
// attempt's trailer (and peer, when tracing) before them.
func (cs *call) callOptions(opts []grpc.CallOption) []grpc.CallOption {
	cs.clearAttempt()
	if !cs.optsSet {
		cs.opts[0], cs.opts[1], cs.optsSet = grpc.Peer(&cs.peer), grpc.Trailer(&cs.trailer), true
	}
	first := 1
	if cs.tracing {
		first = 0
	}
	if 2+len(opts) > len(cs.opts) {
		all := make([]grpc.CallOption, 0, 2-first+len(opts))
		return append(append(all, cs.opts[first:2]...), opts...)
	}
	cs.nopts = max(cs.nopts, copy(cs.opts[2:], opts))
	return cs.opts[first : 2+len(opts)]
}

// sent reports whether the attempt that just ended reached a server, as
// far as the client can tell: a stream to one was opened. Without tracing
// (a repeatable call) it is taken as true.
func (cs *call) sent() bool {
	return !cs.tracing || cs.peer.Addr != nil
}

// method is what a Client knows of a method.
type method struct {
	name       string
	idempotent bool // listed in Idempotent, or declared so by its descriptor
}

// idempotent reports whether method is safe to repeat: listed in
// Idempotent or declared so by its descriptor.
func (c *Client) idempotent(name string) bool {
	if m := c.lastMethod.Load(); m != nil && m.name == name {
		return m.idempotent
	}
	if m, ok := (*c.methods.Load())[name]; ok {
		c.lastMethod.Store(m)
		return m.idempotent
	}
	if c.DescriptorsOff {
		return false
	}
	m := &method{name: name, idempotent: descriptorIdempotent(c.Files, name)}
	c.methodsMu.Lock()
	defer c.methodsMu.Unlock()
	old := *c.methods.Load()
	if _, known := old[name]; !known && len(old) < len(c.Idempotent)+maxMethods {
		all := make(map[string]*method, len(old)+1)
		for k, v := range old {
			all[k] = v
		}
		all[name] = m
		c.methods.Store(&all)
	}
	return m.idempotent
}

// maxMethods caps the descriptor lookups a Client remembers, so that a
// proxy that forwards arbitrary method names cannot grow it without bound
// (each new one copies the map: 1024 cost half a million copied entries
// over a Client's life). Others are looked up on every call.
const maxMethods = 1024

// UnaryInterceptor returns the unary client interceptor: it makes each
// call's attempts through heed's call protocol, as the package
// documentation says. Set it with grpc.WithChainUnaryInterceptor together
// with grpc.WithDisableRetry(), or use [Client.DialOptions].
//
// It returns nil on success; the caller's context error, as a gRPC status
// (CANCELLED or DEADLINE_EXCEEDED), when the caller's context ends; and,
// when it gives up, a *retry.ExhaustedError (matching retry.ErrExhausted,
// and budget.ErrExhausted or breaker.ErrOpen when those ended the call)
// that wraps the last attempt's status: status.Code and status.FromError
// see that status, so a handler that returns the error passes the code on.
//
// A first attempt that succeeds costs one reading of the monotonic clock
// (for the retry budget and the deadline), the budget's lock, when the
// call carries retry-attempt one allocation for its context, and when the
// Client gives attempts a share of the caller's deadline (AttemptShare,
// none by default) a context.WithDeadline: it is admitted as
// retry.Call.Admit would admit it, and the call protocol's state is built
// only if it fails. A hedged call's first attempt is admitted the same
// way; its race needs the protocol's state (retry.Call.Race), built on the
// stack, but neither Admit nor, when it succeeds with no hedge sent and a
// fixed Hedge.Delay, End. A breaker, policy time
// limits or anyone told of attempts (Policy.Observe, OnAttempt, Logger)
// make the call go through the protocol from its first attempt.
func (c *Client) UnaryInterceptor() grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		c.init()
		if c.initErr != nil {
			return c.initErr
		}
		if err := ctx.Err(); err != nil {
			return status.FromContextError(err).Err()
		}
		cs := callPool.Get().(*call)
		c.prepare(ctx, cc, method, cs)
		err := cs.unary(ctx, req, reply, cc, invoker, opts)
		cs.release()
		return err
	}
}

func (cs *call) unary(ctx context.Context, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts []grpc.CallOption) error {
	// One clock reading for the first attempt, however it is admitted.
	now := firstNow(cs.p.Clock)
	if cs.c.fast {
		// The first attempt admitted without the call protocol's state
		// (the policy has no breaker and no time limits of its own; no
		// one is told of attempts): a success needs none.
		dl, _ := ctx.Deadline()
		share := 0.0
		if cs.shared() {
			share = cs.c.share
		}
		if lim, ok := admitfirst.Admit(cs.p, now, dl, share, share > 0 && cs.upstreamOwns(ctx)); ok {
			if cs.repeatable && cs.p.Hedge != nil {
				return cs.raceFirst(ctx, now, lim, req, reply, cc, invoker, opts)
			}
			timedOut, err := cs.attemptUnary(ctx, 1, now, lim, req, reply, cc, invoker, opts)
			if err == nil {
				return nil
			}
			// It failed: the call protocol takes the call over, as if
			// its Admit had admitted the attempt at now.
			return cs.protocol(ctx, now, req, reply, cc, invoker, opts, &firstAttempt{err: err, timedOut: timedOut, start: now})
		}
	}
	return cs.protocol(ctx, now, req, reply, cc, invoker, opts, nil)
}

// firstAttempt is a first attempt admitted by admitfirst.Admit, without
// the call protocol, that failed: its error, whether its limit cut it
// off, and when it started (a hedge's start, when a hedge's result is the
// race's).
type firstAttempt struct {
	err      error
	timedOut bool
	start    time.Time
}

// startCall starts rc, the call protocol's state of the call under ctx,
// before its first attempt: the policy, the caller's deadline and whether
// a caller above owns the retries. rc is kept on the stack of the function that
// calls it, not in cs, which is on the heap: building it there and
// clearing it for the next call cost more than the call protocol's steps
// (Race keeps no pointer to it). It is written field by field: a literal
// is built beside it, then copied.
func (cs *call) startCall(ctx context.Context, rc *retry.Call) {
	rc.Policy = *cs.p
	rc.History.UpstreamOwns = cs.upstreamOwns(ctx)
	if dl, ok := ctx.Deadline(); ok {
		rc.History.Deadline = dl
	}
}

// raceFirst makes the first attempt of a hedged call, admitted by
// admitfirst.Admit at now to end by lim, with the hedges the policy
// allows beside it (retry.Call.Race, on a Call started as if its Admit
// had admitted the attempt). A success without a hedge needs no End
// (nothing to tell a breaker or anyone, no budget to credit for a first
// attempt), unless an adaptive hedge delay learns its latency.
func (cs *call) raceFirst(ctx context.Context, now time.Time, lim retry.Limit, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts []grpc.CallOption) error {
	var rc retry.Call
	cs.startCall(ctx, &rc)
	rc.History.Start = now
	timedOut, err, start := cs.raceUnary(ctx, &rc, now, lim, req, reply, cc, invoker, opts)
	if err == nil && rc.History.Attempts == 0 && rc.Policy.Hedge.Delay > 0 {
		return nil
	}
	return cs.run(ctx, &rc, now, req, reply, cc, invoker, opts, &firstAttempt{err: err, timedOut: timedOut, start: start})
}

// protocol makes the attempts of a unary call through the call protocol,
// from its first, at now; first, when set, is that attempt, admitted by
// admitfirst.Admit at now and failed.
func (cs *call) protocol(ctx context.Context, now time.Time, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts []grpc.CallOption, first *firstAttempt) error {
	var rc retry.Call
	cs.startCall(ctx, &rc)
	if first != nil {
		// The Call goes on as if its Admit had admitted the attempt.
		rc.History.Start = now
	}
	return cs.run(ctx, &rc, now, req, reply, cc, invoker, opts, first)
}

// run is protocol's loop, under rc, from now.
func (cs *call) run(ctx context.Context, rc *retry.Call, now time.Time, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts []grpc.CallOption, first *firstAttempt) error {
	p := &rc.Policy
	clk := p.Clock
	var (
		start    time.Time
		err      error
		timedOut bool
		timer    clock.Timer
		last     error
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if first != nil {
			start, err, timedOut = first.start, first.err, first.timedOut
			first = nil
		} else {
			lim, ok := cs.admit(rc, now)
			if !ok {
				return cs.refused(ctx, rc, last)
			}
			n := rc.History.Attempts + 1
			timedOut, err, start = cs.attempt(ctx, rc, now, lim, req, reply, cc, invoker, opts)
			if err == nil && p.Breaker == nil && !cs.observed(rc) && (p.Hedge == nil || p.Hedge.Delay > 0 && rc.History.Attempts == n-1) {
				// Success, and nothing needs the time it ended at (no
				// breaker to tell, no one to report to, no hedge sent
				// and no latency to learn for an adaptive hedge delay):
				// the call ends without a second clock reading.
				rc.End(now, retry.Result{})
				return nil
			}
		}
		now = clock.Now(clk)
		if err != nil && cs.callerEnded(ctx, rc, now) {
			rc.Abandon(now)
			cs.canceled(ctx, rc, err, now.Sub(start))
			return err
		}
		res, code := cs.result(err, timedOut)
		d := rc.End(now, res)
		last = err
		cs.observe(ctx, rc, code, d, now.Sub(start), false)
		switch d.Action {
		case retry.Done:
			return nil
		case retry.GiveUp:
			return rc.Exhausted(err)
		}
		if err := cs.wait(ctx, rc, &timer, d.Delay); err != nil {
			cs.canceled(ctx, rc, err, 0)
			return err
		}
		now = clock.Now(clk)
	}
}

// admit is rc.Admit, with the attempt's share of the time left when the
// call takes one.
func (cs *call) admit(rc *retry.Call, now time.Time) (retry.Limit, bool) {
	lim, ok := rc.Admit(now)
	if ok && cs.shared() {
		// The share of the time left, so that a retry fits (ShareLimit
		// leaves the last attempt all of it).
		lim = rc.ShareLimit(lim, now, cs.c.share)
	}
	return lim, ok
}

// attempt makes the call's next attempt, admitted at now to end by lim:
// with the hedges the policy allows beside it for a repeatable call. It
// returns the result the call goes on with and when its attempt started.
func (cs *call) attempt(ctx context.Context, rc *retry.Call, now time.Time, lim retry.Limit, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts []grpc.CallOption) (bool, error, time.Time) {
	if cs.repeatable && rc.Policy.Hedge != nil {
		return cs.raceUnary(ctx, rc, now, lim, req, reply, cc, invoker, opts)
	}
	timedOut, err := cs.attemptUnary(ctx, rc.History.Attempts+1, now, lim, req, reply, cc, invoker, opts)
	return timedOut, err, now
}

// shared reports whether the call's attempts take a share of the time
// left before the caller's deadline: it is repeatable, the Client has a
// share and the policy no AttemptTimeout of its own ([retry.Call.ShareLimit]
// checks the rest: attempts left, no owner above, a deadline).
func (cs *call) shared() bool {
	return cs.repeatable && cs.c.share > 0 && cs.c.share < 1 && cs.p.AttemptTimeout <= 0
}

// monoBase anchors monoNow.
var monoBase = time.Now()

// monoNow returns the time now, read from the monotonic clock alone: half
// the cost of time.Now, which reads the wall clock too (about 65 ns of its
// 130 on the VMs heed is measured on). The success path only compares it
// with other times from time.Now (the deadline, the budget's window, which
// both go by the monotonic reading), so its wall-clock reading, that of
// the process's start plus the monotonic time since, need not follow the
// system clock's steps. A deadline made from a wall-clock time (no
// monotonic reading) is compared by wall clock, off by any step of the
// system clock since the process started; a first attempt so let past its
// deadline is refused by gRPC, which reads the wall clock, and the call
// ends with DEADLINE_EXCEEDED all the same. Inside a testing/synctest
// bubble, where the clock is fake and has no monotonic reading
// (time.Since(monoBase) is then negative: the fake clock starts in 2000),
// it is time.Now.
func monoNow() time.Time {
	if d := time.Since(monoBase); d >= 0 {
		return monoBase.Add(d)
	}
	return time.Now()
}

// firstNow is the time a call's first attempt through the call protocol
// starts at: clk's, or monoNow's (as the fast first attempt's).
func firstNow(clk clock.Clock) time.Time {
	if clk != nil {
		return clk.Now()
	}
	return monoNow()
}

// attemptUnary makes unary attempt n, which must end by lim, and reports
// whether lim, not the caller's context, cut it off.
func (cs *call) attemptUnary(ctx context.Context, n int, now time.Time, lim retry.Limit, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts []grpc.CallOption) (timedOut bool, err error) {
	actx, cancel := cs.attemptContext(ctx, n, now, lim)
	err = invoker(actx, cs.method, req, reply, cc, cs.callOptions(opts)...)
	if cancel != nil {
		timedOut = err != nil && ctx.Err() == nil && actx.Err() == context.DeadlineExceeded
		cancel()
	}
	return timedOut, err
}

// raceUnary makes the attempt admitted at now with the hedges the policy
// allows beside it (retry.Call.Race), for a repeatable call whose reply
// is a proto.Message (another reply is not hedged): each hedge decodes
// into a reply and a trailer of its own, and the winner's are the call's.
// It returns the result the call goes on with and when its attempt
// started.
func (cs *call) raceUnary(ctx context.Context, rc *retry.Call, now time.Time, lim retry.Limit, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts []grpc.CallOption) (bool, error, time.Time) {
	first := rc.History.Attempts + 1
	msg, ok := reply.(proto.Message)
	if !ok {
		timedOut, err := cs.attemptUnary(ctx, first, now, lim, req, reply, cc, invoker, opts)
		return timedOut, err, now
	}
	cs.upstreamOwns(ctx) // known now: the attempts must not change cs
	if cs.racer == nil {
		cs.racer = newRacer(cs)
	}
	r := cs.racer
	r.first, r.now = first, now
	if clk := rc.Policy.Clock; r.clk != clk {
		r.clk = clk
	}
	r.req, r.msg, r.cc, r.invoker, r.opts = req, msg, cc, invoker, opts
	// The Result is not kept: it is a struct of seven fields, which the
	// compiler copies through memory, and the copy's wide loads stall on
	// the narrow stores of the fields just returned. The first attempt's
	// error is in r (see newRacer), its trailer in cs.
	_, n, cancel := rc.Race(ctx, now, lim, r.fn)
	if cancel != nil {
		cancel()
	}
	timedOut, err, start := r.timedOut, r.err, now
	if err != nil {
		r.err = nil
	}
	if n != first {
		s := &r.slots[n-first]
		timedOut, err, start = s.timedOut, s.err, s.start
		proto.Reset(msg)
		proto.Merge(msg, s.reply)
		cs.trailer = s.trailer
	}
	r.clear()
	return timedOut, err, start
}

// racer is what the attempts of a hedged call share (see raceUnary). A
// call keeps its racer through the pool, with the function that makes an
// attempt, so that a race allocates no state of its own: its slots and a
// closure over them cost a hedged call 540 bytes in three allocations.
type racer struct {
	cs      *call
	first   int // the first attempt's number
	now     time.Time
	clk     clock.Clock
	req     any
	msg     proto.Message // the caller's reply
	cc      *grpc.ClientConn
	invoker grpc.UnaryInvoker
	opts    []grpc.CallOption
	// the first attempt's error and whether its limit cut it off; err
	// is nil between calls.
	err      error
	timedOut bool
	slots    [maxRacers]raceSlot
	fn       func(ctx context.Context, n int, lim retry.Limit) retry.Result // see newRacer
}

// raceSlot is what a hedge of a race got (the first attempt's slot stays
// zero: see raceUnary).
type raceSlot struct {
	reply    proto.Message // a hedge's own
	trailer  metadata.MD
	timedOut bool
	err      error
	start    time.Time
}

// newRacer returns the racer of cs, with the function that makes attempt
// n of a race: the first on the call's goroutine, as without hedges, a
// hedge on a goroutine of its own (hedge). The first attempt is made in
// the closure itself, not in a method it calls, and a success returns
// its Result at once: each call that returns a Result copies it through
// memory.
func newRacer(cs *call) *racer {
	r := &racer{cs: cs}
	r.fn = func(ctx context.Context, n int, lim retry.Limit) retry.Result {
		if n != r.first {
			return r.hedge(ctx, n, lim)
		}
		// What the first attempt got is kept in r (its slot stays
		// zero), its trailer in cs (see raceUnary); err is written only
		// when it is set: each pointer written costs a write barrier
		// while the GC marks.
		timedOut, err := cs.attemptUnary(ctx, n, r.now, lim, r.req, r.msg, r.cc, r.invoker, r.opts)
		r.timedOut = timedOut
		if err == nil {
			return retry.Result{}
		}
		r.err = err
		res, _ := cs.resultOf(err, timedOut, cs.trailer)
		return res
	}
	return r
}

// hedge makes hedge n of the race, on a goroutine of its own.
func (r *racer) hedge(actx context.Context, n int, lim retry.Limit) retry.Result {
	cs := r.cs
	s := &r.slots[n-r.first]
	s.start = clock.Now(r.clk)
	s.reply = r.msg.ProtoReflect().New().Interface()
	hopts := append(make([]grpc.CallOption, 0, len(r.opts)+1), grpc.Trailer(&s.trailer))
	hctx, hcancel := cs.attemptContext(actx, n, s.start, lim)
	s.err = r.invoker(hctx, cs.method, r.req, s.reply, r.cc, append(hopts, r.opts...)...)
	if hcancel != nil {
		s.timedOut = s.err != nil && actx.Err() == nil && hctx.Err() == context.DeadlineExceeded
		hcancel()
	}
	res, _ := cs.resultOf(s.err, s.timedOut, s.trailer)
	return res
}

// clear lets go of what the race's hedges got and of the caller's values,
// once the race is over: its hedges have returned (Race waits for them).
// A slot is written only when it is set: each pointer written costs a
// write barrier while the GC marks. The clock, the Client's, is kept.
func (r *racer) clear() {
	for i := range r.slots {
		if s := &r.slots[i]; s.reply != nil || s.trailer != nil || s.err != nil {
			*s = raceSlot{}
		}
	}
	r.req, r.msg, r.cc, r.invoker, r.opts = nil, nil, nil, nil, nil
}

// maxRacers is the most attempts a race makes: the first and
// retry.Hedge's largest Max.
const maxRacers = 5

// attemptContext returns the context of attempt n, which must end by lim,
// and its cancel function (nil when there is none to call).
func (cs *call) attemptContext(ctx context.Context, n int, now time.Time, lim retry.Limit) (context.Context, context.CancelFunc) {
	actx := ctx
	var cancel context.CancelFunc
	switch {
	case lim.At.IsZero() || lim.Reason == retry.ReasonDeadline:
	case cs.p.Clock == nil:
		// lim.At is a time on the real clock: no second reading of it.
		actx, cancel = context.WithDeadline(ctx, lim.At)
	default:
		actx, cancel = context.WithTimeout(ctx, lim.At.Sub(now))
	}
	if cs.claim {
		actx = cs.withAttempt(actx, n)
	}
	return actx, cancel
}

// wait waits d, or until ctx ends (then it returns the context's status).
func (cs *call) wait(ctx context.Context, rc *retry.Call, timer *clock.Timer, d time.Duration) error {
	if d > 0 {
		if *timer == nil {
			*timer = clock.Or(rc.Policy.Clock).NewTimer(d)
		} else {
			(*timer).Reset(d)
		}
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-(*timer).C():
		}
		return nil
	}
	if err := ctx.Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	return nil
}

// refused returns the error of a call whose attempt Admit refused, after
// last (nil before the first attempt).
func (cs *call) refused(ctx context.Context, rc *retry.Call, last error) error {
	d := rc.Last()
	if d.Reason == retry.ReasonDeadline && ctx.Err() != nil {
		err := status.FromContextError(ctx.Err()).Err()
		cs.canceled(ctx, rc, err, 0)
		return err
	}
	if last == nil {
		code := codes.Unavailable
		if d.Reason == retry.ReasonDeadline || d.Reason == retry.ReasonTimeBudget {
			code = codes.DeadlineExceeded
		}
		last = &refusal{err: d.Err, code: code}
	}
	cs.observe(ctx, rc, status.Code(last), d, 0, true)
	return rc.Exhausted(last)
}

// refusal is the error of a call refused before its first attempt: the
// refusal's own error (breaker.ErrOpen, or no time left) with a gRPC
// status, so that a handler returning it passes a meaningful code on.
type refusal struct {
	err  error
	code codes.Code
}

func (e *refusal) Error() string { return "heedgrpc: " + e.err.Error() }
func (e *refusal) Unwrap() error { return e.err }

// GRPCStatus returns the refusal's status: UNAVAILABLE for an open
// breaker, DEADLINE_EXCEEDED when no time was left.
func (e *refusal) GRPCStatus() *status.Status { return status.New(e.code, e.Error()) }

// result classifies the attempt's error for the call protocol, per the
// package's table.
func (cs *call) result(err error, timedOut bool) (retry.Result, codes.Code) {
	return cs.resultOf(err, timedOut, cs.trailer)
}

// resultOf is result for an attempt whose trailer is trailer. It does not
// change cs: the attempts of a race call it at the same time.
func (cs *call) resultOf(err error, timedOut bool, trailer metadata.MD) (retry.Result, codes.Code) {
	if err == nil {
		return retry.Result{}, codes.OK
	}
	code := status.Code(err)
	res := retry.Result{Err: err, TimedOut: timedOut, Outcome: retry.OutcomePermanent}
	if v := trailer[upstreamBreakerMD]; len(v) > 0 && v[0] == "open" {
		// A healthy server whose dependency's breaker is open: not worth
		// a retry, and no failure of this server's (permanent outcomes
		// are not counted by the breaker).
		return res, code
	}
	switch code {
	case codes.Unavailable:
		res.Outcome = retry.OutcomeTransient
		if wait, ok, stop := pushback(trailer); stop {
			res.Outcome = retry.OutcomeRefused
		} else if ok {
			res.Outcome, res.Wait = retry.OutcomePushback, wait
		}
		res.NotRepeatable = !cs.repeatable && cs.sent()
	case codes.ResourceExhausted, codes.Aborted:
		if wait, ok, stop := pushback(trailer); stop {
			res.Outcome = retry.OutcomeRefused
		} else if ok {
			res.Outcome, res.Wait = retry.OutcomePushback, wait
			res.NotRepeatable = !cs.repeatable && cs.sent()
		}
	case codes.DeadlineExceeded:
		res.Outcome = retry.OutcomeTimeout
		res.NotRepeatable = !cs.repeatable && cs.sent()
	}
	return res, code
}

// pushback reads grpc-retry-pushback-ms from a trailer: the wait and true
// for a value >= 0; stop for a negative or malformed one (the server says
// not to retry); nothing when the trailer has none.
func pushback(md metadata.MD) (wait time.Duration, ok, stop bool) {
	v := md[PushbackMetadata]
	if len(v) == 0 {
		return 0, false, false
	}
	ms, err := strconv.ParseInt(v[0], 10, 32)
	if err != nil || ms < 0 || len(v) > 1 {
		return 0, false, true
	}
	return time.Duration(ms) * time.Millisecond, true, false
}

// canceled reports a call ended by its caller to OnAttempt.
func (cs *call) canceled(ctx context.Context, rc *retry.Call, err error, dur time.Duration) {
	if f := cs.c.OnAttempt; f != nil {
		f(ctx, Attempt{Target: cs.target, Method: cs.method, Code: status.Code(err), Canceled: true,
			Event: retry.Event{Decision: retry.Decision{Attempt: rc.History.Attempts, Err: err}, Duration: dur}})
	}
}

// observe reports an attempt (or a refusal) to the policy's observer,
// OnAttempt and the logger.
func (cs *call) observe(ctx context.Context, rc *retry.Call, code codes.Code, d retry.Decision, dur time.Duration, refused bool) {
	if !cs.observed(rc) {
		return
	}
	c := cs.c
	p := &rc.Policy
	e := retry.Event{Decision: d, Duration: dur}
	if p.Observe != nil {
		p.Observe(ctx, e)
	}
	if c.OnAttempt != nil {
		c.OnAttempt(ctx, Attempt{Target: cs.target, Method: cs.method, Code: code, Event: e, Refused: refused})
	}
	if c.Logger != nil {
		logAttempt(ctx, c.Logger, cs, code, e)
	}
}

// observed reports whether anyone is told about attempts: the policy's
// Observe, OnAttempt or the logger.
func (cs *call) observed(rc *retry.Call) bool {
	return rc.Policy.Observe != nil || cs.c.OnAttempt != nil || cs.c.Logger != nil
}

// callerEnded reports whether the caller's context has ended at now: done,
// or past its deadline (its timer may not have fired yet when the server's
// answer to the same deadline arrives).
func (cs *call) callerEnded(ctx context.Context, rc *retry.Call, now time.Time) bool {
	if ctx.Err() != nil {
		return true
	}
	dl := rc.History.Deadline
	return !dl.IsZero() && !now.IsZero() && !now.Before(dl)
}
