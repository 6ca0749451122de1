package retryhttp

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/heed-go/heed/internal/redact"
	"github.com/heed-go/heed/retry"
)

type opKey struct{}

// WithOperation returns a context whose requests are logged under the
// operation name op (default: the method and host).
func WithOperation(ctx context.Context, op string) context.Context {
	return context.WithValue(ctx, opKey{}, op)
}

// progress records how far an attempt got, from httptrace callbacks that
// may run on other goroutines.
type progress struct{ bits atomic.Uint32 }

const (
	pConn uint32 = 1 << iota
	pReused
	pWroteHeaders
	pWroteRequest
	pFirstByte
)

func (p *progress) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) {
			b := pConn
			if i.Reused {
				b |= pReused
			}
			p.bits.Or(b)
		},
		WroteHeaders:         func() { p.bits.Or(pWroteHeaders) },
		WroteRequest:         func(httptrace.WroteRequestInfo) { p.bits.Or(pWroteRequest) },
		GotFirstResponseByte: func() { p.bits.Or(pFirstByte) },
	}
}

// String names the furthest stage reached: "no connection", "connected",
// "connected (reused)", "headers written", "request written",
// "response started".
func (p *progress) String() string {
	b := p.bits.Load()
	var s string
	switch {
	case b&pFirstByte != 0:
		s = "response started"
	case b&pWroteRequest != 0:
		s = "request written"
	case b&pWroteHeaders != 0:
		s = "headers written"
	case b&pConn != 0:
		s = "connected"
	default:
		return "no connection"
	}
	if b&pReused != 0 {
		s += " (reused connection)"
	}
	return s
}

// observe logs the attempt and calls the policy's Observe.
func (c *call) observe(ctx context.Context, p *retry.Policy, l *attemptLog, dur time.Duration) {
	if p.Observe != nil {
		p.Observe(ctx, retry.Event{Decision: l.d, Duration: dur})
	}
	lg := c.t.Logger
	if lg == nil {
		return
	}
	req := c.req
	l.duration = dur
	l.method = req.Method
	if l.method == "" {
		l.method = http.MethodGet
	}
	l.host = req.URL.Hostname()
	l.url = RedactURL(req.URL)
	if op, ok := ctx.Value(opKey{}).(string); ok {
		l.op = op
	} else {
		l.op = l.method + " " + l.host
	}
	if k := c.idempotencyKey(); k != "" {
		l.keyHash = redact.KeyHash(k)
	}
	logAttempt(ctx, lg, l, req.URL)
}

func itoa(n int64) string {
	var b [20]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
