package retry

import (
	"bufio"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The errors of the network as their sources give them. The h2 errors are
// written as golang.org/x/net/http2's and net/http's bundled copy print
// them (GoAwayError, StreamError, errClientConnGotGoAway,
// shouldRetryRequest's "cannot retry"); the real ones, from a loopback
// server, are in TestIsTransientRealSources.
func TestIsTransientNetwork(t *testing.T) {
	eofGet := &url.Error{Op: "Get", URL: "http://a/", Err: io.EOF}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"net/http: server closed without answering", eofGet, true},
		{"net/http: headers cut", &url.Error{Op: "Get", URL: "http://a/", Err: io.ErrUnexpectedEOF}, true},
		{"net/http: body cut (Read returns it bare)", io.ErrUnexpectedEOF, true},
		{"handler wraps a cut body", fmt.Errorf("read answer: %w", io.ErrUnexpectedEOF), true},
		{"net: read on a closed connection", &net.OpError{Op: "read", Net: "tcp", Err: io.EOF}, true},
		{"application io.EOF", io.EOF, false},
		{"application io.EOF wrapped", fmt.Errorf("decode: %w", io.EOF), false},
		{"url.Error without EOF", &url.Error{Op: "Get", URL: "http://a/", Err: errors.New("boom")}, false},
		{"database/sql: bad connection", driver.ErrBadConn, true},
		{"database/sql: bad connection wrapped", fmt.Errorf("insert: %w", driver.ErrBadConn), true},
		{"broken pipe", &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}, true},
		{"reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, true},
		{"aborted", &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.ECONNABORTED)}, true},
		{"http2.GoAwayError", &url.Error{Op: "Get", URL: "https://a/", Err: errors.New(
			`http2: server sent GOAWAY and closed the connection; LastStreamID=1, ErrCode=NO_ERROR, debug=""`)}, true},
		{"http2 graceful shutdown", errors.New("http2: Transport received Server's graceful shutdown GOAWAY"), true},
		{"http2.StreamError REFUSED_STREAM", errors.New("stream error: stream ID 3; REFUSED_STREAM; received from peer"), true},
		{"net/http could not resend a refused stream", errors.New(
			"http2: Transport: cannot retry err [stream error: stream ID 1; REFUSED_STREAM] after Request.Body was written; define Request.GetBody to avoid this error"), true},
		{"http2.StreamError PROTOCOL_ERROR", errors.New("stream error: stream ID 3; PROTOCOL_ERROR"), false},
		{"HTTP/1 idle connection closed", &url.Error{Op: "Post", URL: "http://a/", Err: errors.New("http: server closed idle connection")}, true},
		{"GOAWAY only in a URL", &url.Error{Op: "Get", URL: "http://a/GOAWAY", Err: errors.New("boom")}, false},
		{"REFUSED_STREAM only in a wrapper", fmt.Errorf("stream REFUSED_STREAM: %w", errors.New("boom")), false},
		{"TLS handshake timeout", &url.Error{Op: "Get", URL: "https://a/", Err: tlsTimeout{}}, true},
		{"given up: not safe to repeat", &ExhaustedError{Reason: ReasonNotRepeatable, Attempts: 1, Err: eofGet}, false},
		{"given up: attempts", &ExhaustedError{Reason: ReasonAttempts, Attempts: 3, Err: eofGet}, true},
		{"marked permanent", Permanent(eofGet), false},
		{"joined", errors.Join(errors.New("a"), errors.New("http2: server sent GOAWAY and closed the connection")), true},
	}
	for _, tt := range tests {
		if got := IsTransient(tt.err); got != tt.want {
			t.Errorf("%s: IsTransient(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

// tlsTimeout is net/http's tlsHandshakeTimeoutError as it behaves.
type tlsTimeout struct{}

func (tlsTimeout) Error() string   { return "net/http: TLS handshake timeout" }
func (tlsTimeout) Timeout() bool   { return true }
func (tlsTimeout) Temporary() bool { return true }

// TestIsTransientRealSources makes each error the way a job meets it: a
// client of a loopback server that misbehaves, and database/sql over a
// driver whose connections are bad.
func TestIsTransientRealSources(t *testing.T) {
	get := func(t *testing.T, c *http.Client, u string) error {
		t.Helper()
		resp, err := c.Get(u)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		if err == nil {
			t.Fatalf("GET %s: %s and a whole body, want an error", u, resp.Status)
		}
		return err
	}
	tests := []struct {
		name string
		// source returns the error, and what it must match.
		source func(t *testing.T) error
		is     error
	}{
		{"server closes without answering", func(t *testing.T) error {
			return get(t, &http.Client{}, "http://"+raw(t, func(c net.Conn) { readHead(c) }))
		}, io.EOF},
		{"server cuts the headers", func(t *testing.T) error {
			return get(t, &http.Client{}, "http://"+raw(t, func(c net.Conn) {
				readHead(c)
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: te")
			}))
		}, io.ErrUnexpectedEOF},
		{"server cuts the body", func(t *testing.T) error {
			return get(t, &http.Client{}, "http://"+raw(t, func(c net.Conn) {
				readHead(c)
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b")
			}))
		}, io.ErrUnexpectedEOF},
		{"server resets", func(t *testing.T) error {
			return get(t, &http.Client{}, "http://"+raw(t, func(c net.Conn) {
				readHead(c)
				c.(*net.TCPConn).SetLinger(0)
			}))
		}, syscall.ECONNRESET},
		{"write to a reset connection", brokenPipe, syscall.EPIPE},
		{"TLS handshake timeout", func(t *testing.T) error {
			tr := &http.Transport{TLSHandshakeTimeout: 20 * time.Millisecond}
			defer tr.CloseIdleConnections()
			hung := make(chan struct{})
			t.Cleanup(func() { close(hung) })
			return get(t, &http.Client{Transport: tr}, "https://"+raw(t, func(net.Conn) { <-hung }))
		}, nil},
		{"HTTP/2 GOAWAY", func(t *testing.T) error {
			return get(t, h2cClient(t), "http://"+raw(t, func(c net.Conn) {
				id := h2Accept(t, c)
				goAway := make([]byte, 8)
				binary.BigEndian.PutUint32(goAway, id) // processed up to this stream
				writeFrame(c, 7, 0, 0, goAway)         // GOAWAY, NO_ERROR
			}))
		}, nil},
		{"HTTP/2 REFUSED_STREAM", func(t *testing.T) error {
			addr := raw(t, func(c net.Conn) {
				id := h2Accept(t, c)
				writeFrame(c, 3, 0, id, binary.BigEndian.AppendUint32(nil, 7)) // RST_STREAM REFUSED_STREAM
				io.Copy(io.Discard, c)
			})
			// A body net/http cannot rewind, so that it returns the
			// refusal instead of resending the request itself.
			req, _ := http.NewRequest("POST", "http://"+addr+"/", io.NopCloser(strings.NewReader("x")))
			resp, err := h2cClient(t).Do(req)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("POST: %s, want an error", resp.Status)
			}
			return err
		}, nil},
		{"database/sql bad connection", func(t *testing.T) error {
			db := sql.OpenDB(badConnector{})
			defer db.Close()
			_, err := db.Exec("UPDATE t SET x = 1")
			return err
		}, driver.ErrBadConn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.source(t)
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Fatalf("the source gave %v (%T), want one that matches %v", err, err, tt.is)
			}
			if !IsTransient(err) {
				t.Errorf("IsTransient(%v) = false, want true", err)
			}
		})
	}
}

// An application's own EOF, as a handler meets it, stays permanent.
func TestIsTransientApplicationEOF(t *testing.T) {
	var v any
	err := json.NewDecoder(strings.NewReader("")).Decode(&v)
	if !errors.Is(err, io.EOF) || IsTransient(err) {
		t.Errorf("decoding an empty input: IsTransient(%v) = %v, want false", err, IsTransient(err))
	}
	_, err = bufio.NewReader(strings.NewReader("no newline")).ReadString('\n')
	if IsTransient(fmt.Errorf("read line: %w", err)) {
		t.Errorf("IsTransient of a reader's EOF = true, want false")
	}
}

// raw serves each connection to a listener on loopback with serve, then
// closes it, and returns the listener's address.
func raw(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// readHead reads an HTTP/1 request's head.
func readHead(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil || line == "\r\n" {
			return
		}
	}
}

// brokenPipe writes to a connection its peer reset, until the kernel says
// EPIPE (Linux reports the reset once, as ECONNRESET, then EPIPE).
func brokenPipe(t *testing.T) error {
	closed := make(chan struct{})
	addr := raw(t, func(c net.Conn) {
		c.Read(make([]byte, 1))
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
		close(closed)
	})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	<-closed
	c.Read(make([]byte, 1)) // sees the reset
	for range 100 {
		if _, err = c.Write([]byte("x")); errors.Is(err, syscall.EPIPE) {
			break
		}
	}
	return err
}

// h2cClient is a client that speaks HTTP/2 without TLS (prior knowledge).
func h2cClient(t *testing.T) *http.Client {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &p}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// h2Accept plays an HTTP/2 server's side of a connection until the first
// request's HEADERS frame, and returns its stream ID.
func h2Accept(t *testing.T, c net.Conn) uint32 {
	preface := make([]byte, len("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
	if _, err := io.ReadFull(c, preface); err != nil {
		return 0
	}
	writeFrame(c, 4, 0, 0, nil) // SETTINGS
	var hdr [9]byte
	for {
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return 0
		}
		n := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
		if _, err := io.CopyN(io.Discard, c, int64(n)); err != nil {
			return 0
		}
		switch typ, flags := hdr[3], hdr[4]; {
		case typ == 4 && flags&1 == 0:
			writeFrame(c, 4, 1, 0, nil) // SETTINGS ACK
		case typ == 1: // HEADERS
			return binary.BigEndian.Uint32(hdr[5:]) &^ (1 << 31)
		}
	}
}

func writeFrame(w io.Writer, typ, flags byte, stream uint32, payload []byte) {
	f := []byte{byte(len(payload) >> 16), byte(len(payload) >> 8), byte(len(payload)), typ, flags}
	f = binary.BigEndian.AppendUint32(f, stream)
	w.Write(append(f, payload...))
}

// badConnector is a database/sql driver whose every connection is bad.
type badConnector struct{}

func (badConnector) Connect(context.Context) (driver.Conn, error) { return badConn{}, nil }
func (badConnector) Driver() driver.Driver                        { return nil }

type badConn struct{}

func (badConn) Prepare(string) (driver.Stmt, error) { return nil, driver.ErrBadConn }
func (badConn) Close() error                        { return nil }
func (badConn) Begin() (driver.Tx, error)           { return nil, driver.ErrBadConn }
