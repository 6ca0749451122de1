package queue

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/heed-go/heed/queue/internal/check"
	"github.com/heed-go/heed/queue/jobstore"
)

// UniqueOptions make a job unique by what it is rather than by a key of
// the caller's (River's unique jobs): the store derives the job's unique
// key from its kind and, as asked, its arguments, its queue and the period
// its AvailableAt falls in, and keeps at most one job per key in the
// states of ByState. The zero value asks for nothing (the job is unique
// only by [EnqueueOptions.UniqueKey], if set).
//
// An enqueue whose key is held returns the job holding it with inserted
// false, as for a UniqueKey.
type UniqueOptions struct {
	// ByArgs includes the arguments, as a SHA-256 of their canonical JSON
	// (object keys sorted, no insignificant space, strings by their value;
	// numbers as written, so 1 and 1.0 differ).
	ByArgs bool
	// ByQueue includes the queue's name (default: the same kind in two
	// queues is one job).
	ByQueue bool
	// ByPeriod, when positive, includes the start of the period the job's
	// AvailableAt falls in: periods are counted from the Unix epoch in UTC
	// (a 24h period starts at midnight UTC, 1h on the hour). Must not be
	// negative.
	ByPeriod time.Duration
	// ByState lists the states in which a job holds its key (default:
	// available and running, as a UniqueKey). It must include available
	// and running; add succeeded to keep a finished job blocking
	// duplicates until it is deleted, dead for a job in the dead-letter.
	ByState []State
}

// isZero reports whether u asks for nothing.
func (u UniqueOptions) isZero() bool {
	return !u.ByArgs && !u.ByQueue && u.ByPeriod == 0 && u.ByState == nil
}

// uniqueOf returns the unique key and states of a job enqueued with opts.
func uniqueOf(opts EnqueueOptions, kind, queue string, args json.RawMessage, at time.Time) (string, []State, error) {
	u := opts.Unique
	if u.isZero() {
		return opts.UniqueKey, nil, nil
	}
	if u.ByPeriod < 0 {
		return "", nil, &InputError{Field: "EnqueueOptions.Unique.ByPeriod", Reason: fmt.Sprintf("is %v, must not be negative", u.ByPeriod)}
	}
	states, err := check.UniqueStates("EnqueueOptions.Unique.ByState", u.ByState, State.Valid)
	if err != nil {
		return "", nil, err
	}
	by := u.ByArgs || u.ByQueue || u.ByPeriod > 0
	if opts.UniqueKey != "" {
		if by {
			return "", nil, &InputError{Field: "EnqueueOptions.Unique", Reason: "sets ByArgs, ByQueue or ByPeriod and EnqueueOptions.UniqueKey is set too; set one"}
		}
		return opts.UniqueKey, states, nil
	}
	key, err := derivedKey(u, kind, queue, args, at)
	if err != nil {
		return "", nil, err
	}
	if err := check.Name("EnqueueOptions.Unique", key, jobstore.MaxUniqueKey); err != nil {
		return "", nil, err
	}
	return key, states, nil
}

// derivedKey is the unique key of a job with these options: a JSON object
// naming what it is unique by, such as
// {"kind":"report","period":"2026-03-04T00:00:00Z"} or
// {"kind":"email","args":"sha256:9f86d0..."}. Stored keys are a promise:
// this text does not change.
func derivedKey(u UniqueOptions, kind, queue string, args json.RawMessage, at time.Time) (string, error) {
	var q, period, hash string
	if u.ByQueue {
		q = queue
	}
	if u.ByPeriod > 0 {
		period = periodStart(at, u.ByPeriod).Format(time.RFC3339Nano)
	}
	if u.ByArgs {
		c, err := canonicalJSON(args)
		if err != nil {
			return "", &InputError{Field: "args", Reason: err.Error()}
		}
		sum := sha256.Sum256(c)
		hash = "sha256:" + hex.EncodeToString(sum[:])
	}
	return keyText(kind, q, period, hash)
}

// keyText is the text of a derived unique key (see derivedKey); empty
// parts are left out.
func keyText(kind, queue, period, args string) (string, error) {
	k := struct {
		Kind   string `json:"kind"`
		Queue  string `json:"queue,omitempty"`
		Period string `json:"period,omitempty"`
		Args   string `json:"args,omitempty"`
	}{kind, queue, period, args}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(k); err != nil {
		return "", &InputError{Field: "EnqueueOptions.Unique", Reason: err.Error()}
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// periodStart returns the start of the period of length d that t falls in,
// periods counted from the Unix epoch in UTC; d must be positive.
func periodStart(t time.Time, d time.Duration) time.Time {
	ns := t.UnixNano()
	r := ns % int64(d)
	if r < 0 {
		r += int64(d)
	}
	return time.Unix(0, ns-r).UTC()
}

// canonicalJSON returns the canonical form of the JSON value raw that
// unique-by-args hashes: object keys sorted (by their UTF-8 bytes), no
// insignificant white space, strings re-encoded from their value (so
// "\u00e9" and "é" are one), no HTML escaping; numbers as written. Of duplicate keys in an object the last is kept.
func canonicalJSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("is not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("is not one JSON value")
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // maps marshal with sorted keys
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
