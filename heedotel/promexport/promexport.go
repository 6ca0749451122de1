// Package promexport serves heed's OpenTelemetry instruments
// ([heedotel.Metrics]) in the Prometheus text format over HTTP, for programs
// (such as heed jobs work --metrics-addr) that have no OpenTelemetry SDK of
// their own. Most callers want [Serve]:
//
//	srv, err := promexport.Serve(ctx, ":9090") // 127.0.0.1:9090 only
//	policy.Observe = srv.Metrics().RetryObserver("charge")
//
// It is apart from heedotel so that programs with an SDK of their own do
// not link the Prometheus client.
package promexport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/heed-go/heed/heedotel"
)

// metricsPath is where a [Server] serves its metrics.
const metricsPath = "/metrics"

// Server serves a [heedotel.Metrics] in the Prometheus text format over
// HTTP. Make one with [Serve]; the zero value is not usable. Its methods
// are safe for concurrent use.
type Server struct {
	m    *heedotel.Metrics
	mp   *sdkmetric.MeterProvider
	srv  *http.Server
	addr net.Addr

	stop     func() bool // stops the AfterFunc of Serve's ctx
	stopOnce sync.Once
	stopErr  error
	done     chan struct{} // closed when the serving goroutine has ended
}

// listenAddr returns the address [Serve] listens on for addr:
// addr itself when it names a host ("0.0.0.0:9090", "[::]:9090",
// "metrics.internal:9090"), and 127.0.0.1 with addr's port when it does not
// (":9090", or just "9090"), so that metrics are reachable from this machine
// only unless a host is asked for.
func listenAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		// A bare port, such as "9090".
		if _, perr := net.LookupPort("tcp", addr); perr != nil || addr == "" {
			return "", fmt.Errorf("promexport: metrics address %q: want HOST:PORT or :PORT", addr)
		}
		host, port = "", addr
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// Serve listens on addr (on 127.0.0.1 unless addr names a host: ":9090" and
// "9090" mean 127.0.0.1:9090, "0.0.0.0:9090" every interface) and serves, at /metrics, the instruments of a new
// [heedotel.Metrics] in the Prometheus text format, through the OpenTelemetry
// Prometheus exporter and its own registry, along with the Go runtime's and
// the process's collectors. Metric names follow the exporter's translation:
// heed.retry.attempts becomes heed_retry_attempts_total, a histogram in
// seconds gets _seconds, attribute keys have their dots replaced by
// underscores.
//
// It returns once it listens, and serves until ctx ends or Close is called.
// Wire s.Metrics() into the executors to report.
func Serve(ctx context.Context, addr string) (*Server, error) {
	laddr, err := listenAddr(addr)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, fmt.Errorf("promexport: prometheus exporter: %w", err)
	}
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("promexport: go collector: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("promexport: process collector: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	m, err := heedotel.New(mp)
	if err != nil {
		mp.Shutdown(context.Background())
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", laddr)
	if err != nil {
		mp.Shutdown(context.Background())
		return nil, fmt.Errorf("promexport: metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+metricsPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	s := &Server{
		m:    m,
		mp:   mp,
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		addr: ln.Addr(),
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		s.srv.Serve(ln) // returns http.ErrServerClosed after Shutdown
	}()
	s.stop = context.AfterFunc(ctx, func() { s.Close() })
	return s, nil
}

// Metrics returns the Metrics whose instruments s serves.
func (s *Server) Metrics() *heedotel.Metrics { return s.m }

// URL returns the URL of the metrics, such as
// "http://127.0.0.1:9090/metrics", with the port chosen by the system when
// the address given to [Serve] had port 0.
func (s *Server) URL() string { return "http://" + s.addr.String() + metricsPath }

// Close stops serving (letting scrapes in progress finish, for up to 5 s),
// shuts the meter provider down, and waits for its goroutines to end. It
// returns the first error, and the same error when called again.
func (s *Server) Close() error {
	s.stopOnce.Do(func() {
		s.stop()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := s.srv.Shutdown(ctx)
		if errors.Is(err, context.DeadlineExceeded) {
			err = s.srv.Close()
		}
		<-s.done
		s.stopErr = errors.Join(err, s.mp.Shutdown(ctx))
	})
	return s.stopErr
}
