package heedgrpc

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/deadline"
	"github.com/heed-go/heed/internal/wire"
	"github.com/heed-go/heed/overload"
)

// Server is the server side of heed's wire formats over gRPC, the
// counterpart of retryhttp.Handler. Its interceptors, for every call:
//
//   - clamp the call's deadline (the client's grpc-timeout, which gRPC has
//     already made the context's deadline) to the server's own Limit: a
//     client can only shorten the time a call may take;
//   - answer DEADLINE_EXCEEDED at once, without calling the handler, when
//     less than MinRemaining is left;
//   - for a call from a trusted peer that carries retry-attempt, mark the
//     handler's context as deadline.WithUpstreamOwner does, with the attempt
//     number (or as Owner marks it), so that the heed
//     clients it calls under it (gRPC or HTTP) make a single attempt, the
//     caller owning the retries, and send the caller's attempt number on,
//     so that a server further down refuses a user's retry before first
//     attempts under overload; a malformed retry-attempt
//     (not 1 to 9999 without a leading zero), or more than one, is answered
//     INVALID_ARGUMENT without calling the handler;
//   - for a trusted peer, when the handler's error says that a heed client
//     it called was refused by its open circuit breaker (the error matches
//     breaker.ErrOpen), add the trailer "upstream-breaker: open": this
//     server is healthy, its dependency is not, and heed clients that
//     receive it neither retry the call nor count it against this server
//     in their own breakers, so breakers do not open one after another up
//     a chain of healthy services;
//   - with a Limiter, admit each unary call through it (see
//     overload.Limiter.Acquire; retry-attempt 2 or more is a retry, refused
//     before first attempts): a refused call is answered UNAVAILABLE at
//     once, without calling the handler, with grpc-retry-pushback-ms saying
//     when to come back, which heed clients honour.
//
// Per-step budgets (deadline.Step, deadline.Plan) in the handler work
// under the clamped deadline. The zero Server is usable: no own limit, the
// 10 ms minimum, trust loopback and private-network peers, ownership on.
// A Server is a plain value; its interceptors are safe for concurrent use.
type Server struct {
	// Limit is the server's own limit on the time a call may take
	// (default: none, only the client's deadline bounds it).
	Limit time.Duration

	// MinRemaining is the least time worth starting the handler with
	// (default deadline.DefaultMinRemaining, 10 ms); with less left, the
	// call is answered DEADLINE_EXCEEDED. Negative means never.
	MinRemaining time.Duration

	// Trusted reports whether the call's peer may claim retry ownership
	// (default [TrustPrivate]). The deadline is gRPC's own and is always
	// honoured (it can only shorten the call).
	Trusted func(ctx context.Context) bool

	// Owner marks the context of a call whose caller owns retries
	// (default: the mark of deadline.WithUpstreamOwner with the call's
	// retry-attempt number, which heed clients called under it send on).
	Owner func(ctx context.Context) context.Context

	// OwnershipOff turns ownership off: retry-attempt is neither
	// checked nor acted on.
	OwnershipOff bool

	// Limiter, when set, limits the unary calls in the handler and queues
	// or refuses the rest (default nil: none). Streams are not limited: a
	// stream's lifetime is no sample of the handler's latency.
	Limiter *overload.Limiter
}

// TrustPrivate is the default trust predicate of [Server]: it trusts peers
// whose address is loopback, private (RFC 1918, RFC 4193) or link-local,
// as deadline.TrustPrivate does for HTTP. Peers without an IP address (a
// Unix socket, an in-memory bufconn listener) are not trusted: use
// [TrustAll] for them.
func TrustPrivate(ctx context.Context) bool {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return false
	}
	var ip netip.Addr
	switch a := p.Addr.(type) {
	case *net.TCPAddr:
		ip, _ = netip.AddrFromSlice(a.IP)
	default:
		host, _, err := net.SplitHostPort(p.Addr.String())
		if err != nil {
			return false
		}
		if ip, err = netip.ParseAddr(host); err != nil {
			return false
		}
	}
	ip = ip.Unmap()
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast()
}

// TrustAll trusts every peer. Use it for in-process or Unix-socket servers,
// or where an edge proxy strips retry-attempt from outside calls.
func TrustAll(context.Context) bool { return true }

// ServerOptions returns the server options that install both of s's
// interceptors (chained after any set before them).
func (s Server) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(s.UnaryInterceptor()),
		grpc.ChainStreamInterceptor(s.StreamInterceptor()),
	}
}

// prepare applies s to an incoming call's context. It returns the
// handler's context and its cancel function (nil when there is none), or
// the status error to answer with.
func (s *Server) prepare(ctx context.Context) (context.Context, context.CancelFunc, error) {
	now := time.Now()
	var cancel context.CancelFunc
	if s.Limit > 0 {
		ctx, cancel = context.WithDeadline(ctx, now.Add(s.Limit))
	}
	minLeft := s.MinRemaining
	if minLeft == 0 {
		minLeft = deadline.DefaultMinRemaining
	}
	if left, ok := deadline.RemainingAt(ctx, now); ok && (left <= 0 || minLeft > 0 && left < minLeft) {
		if cancel != nil {
			cancel()
		}
		return nil, nil, status.Error(codes.DeadlineExceeded, "heedgrpc: "+deadline.ErrTooClose.Error())
	}
	if !s.OwnershipOff {
		if v := metadata.ValueFromIncomingContext(ctx, retryAttemptMD); len(v) > 0 {
			trusted := s.Trusted
			if trusted == nil {
				trusted = TrustPrivate
			}
			if trusted(ctx) {
				n, err := wire.ParseRetryAttempt(v[0])
				if err == nil && len(v) > 1 {
					err = &wire.RetryAttemptError{Value: v[1], Reason: "more than one value"}
				}
				if err != nil {
					if cancel != nil {
						cancel()
					}
					return nil, nil, status.Error(codes.InvalidArgument, "heedgrpc: "+err.Error())
				}
				if s.Owner != nil {
					ctx = s.Owner(ctx)
				} else {
					// The attempt number too, so that a heed client called
					// by the handler sends it on and a server further down
					// refuses a user's retry before first attempts.
					ctx = wire.WithUpstreamAttempt(ctx, n)
				}
			}
		}
	}
	return ctx, cancel, nil
}

// upstreamOpen reports whether a handler's error says that a heed client
// it called was refused by its open circuit breaker (the error matches
// breaker.ErrOpen: return such errors as they are, or wrapped with %w),
// for a trusted peer, which is then told so in the trailer.
func (s *Server) upstreamOpen(ctx context.Context, err error) bool {
	if err == nil || !errors.Is(err, breaker.ErrOpen) {
		return false
	}
	trusted := s.Trusted
	if trusted == nil {
		trusted = TrustPrivate
	}
	return trusted(ctx)
}

// upstreamOpenMD is the trailer of an answer caused by a dependency's open
// breaker.
var upstreamOpenMD = metadata.MD{upstreamBreakerMD: {"open"}}

// UnaryInterceptor returns the unary server interceptor (see [Server]).
func (s Server) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, cancel, err := s.prepare(ctx)
		if err != nil {
			return nil, err
		}
		if cancel != nil {
			defer cancel()
		}
		if s.Limiter != nil {
			p, err := s.Limiter.Acquire(ctx, callAttempt(ctx))
			if err != nil {
				return nil, overloadStatus(ctx, err)
			}
			defer p.Release()
		}
		resp, err := handler(ctx, req)
		if s.upstreamOpen(ctx, err) {
			grpc.SetTrailer(ctx, upstreamOpenMD)
		}
		return resp, err
	}
}

// StreamInterceptor returns the stream server interceptor (see [Server]):
// the handler's stream has the prepared context.
func (s Server) StreamInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx, cancel, err := s.prepare(ss.Context())
		if err != nil {
			return err
		}
		if cancel != nil {
			defer cancel()
		}
		if ctx != ss.Context() {
			ss = &serverStream{ServerStream: ss, ctx: ctx}
		}
		err = handler(srv, ss)
		if s.upstreamOpen(ctx, err) {
			ss.SetTrailer(upstreamOpenMD)
		}
		return err
	}
}

// callAttempt is the call's attempt number from retry-attempt (0 when it
// has none or a malformed one).
func callAttempt(ctx context.Context) int {
	v := metadata.ValueFromIncomingContext(ctx, retryAttemptMD)
	if len(v) == 0 {
		return 0
	}
	n, _ := wire.ParseRetryAttempt(v[0])
	return n
}

// overloadStatus is the status of a call the limiter refused: UNAVAILABLE with
// grpc-retry-pushback-ms in the trailer, or the context's own status when
// the caller has gone.
func overloadStatus(ctx context.Context, err error) error {
	var re *overload.RefusedError
	if !errors.As(err, &re) || re.Reason == overload.ReasonGone {
		return status.FromContextError(ctx.Err()).Err()
	}
	ms := (re.RetryAfter + time.Millisecond - 1) / time.Millisecond
	grpc.SetTrailer(ctx, metadata.Pairs(PushbackMetadata, strconv.FormatInt(int64(ms), 10)))
	return status.Error(codes.Unavailable, "heedgrpc: "+err.Error())
}

// serverStream is a ServerStream with the prepared context.
type serverStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *serverStream) Context() context.Context { return s.ctx }
