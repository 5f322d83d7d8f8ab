// Package push delivers a queue's jobs to an HTTP endpoint
// (docs/design.md#push-delivery): while a queue has a target, every
// service replica claims the queue's jobs itself, under the queue's flow
// control and a cap on its jobs in flight, and POSTs each to the target's
// URL, signed the Standard Webhooks way; the answer completes or fails the
// attempt, or (202) leaves it to the receiver to report over the worker
// routes with the job's token.
//
// This file holds what a target is and which ones may be set; store.go
// keeps targets in Redis, deliver.go makes the deliveries.
package push

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// The defaults and bounds of a target's fields.
const (
	DefaultTimeout     = 30 * time.Second
	DefaultConcurrency = 10
	// LeaseMargin is how much longer than its timeout a delivery's lease
	// lasts by default: time to report its answer.
	LeaseMargin = 30 * time.Second
	// MinLeaseMargin is the least a lease may outlast the timeout.
	MinLeaseMargin = time.Second
	MinTimeout     = 100 * time.Millisecond
	MaxTimeout     = time.Hour
	// MaxLease is a lease's bound anywhere in the service.
	MaxLease       = 24 * time.Hour
	MaxConcurrency = 1000
	// SecretPrefix starts a Standard Webhooks secret: the base64 of the key
	// bytes follows it.
	SecretPrefix = "whsec_"
)

// Target is where the service delivers a queue's jobs.
type Target struct {
	URL         string
	Timeout     time.Duration // one delivery's bound
	Concurrency int           // the queue's active jobs at most, across replicas
	Lease       time.Duration // each delivery's lease: longer than Timeout
	Secret      string        // the signing secret, "whsec_..."; "" none
	// Headers are sent with every delivery (a gateway's token, say);
	// like Secret, never answered back, logged or put in an event.
	Headers   map[string]string
	UpdatedAt time.Time // when it was last put (answers only)
}

// WithDefaults is t with its unset fields at their defaults.
func (t Target) WithDefaults() Target {
	if t.Timeout == 0 {
		t.Timeout = DefaultTimeout
	}
	if t.Concurrency == 0 {
		t.Concurrency = DefaultConcurrency
	}
	if t.Lease == 0 {
		t.Lease = min(t.Timeout+LeaseMargin, MaxLease)
	}
	return t
}

// FieldError says which field of a target is wrong, and how.
type FieldError struct{ Field, Message string }

func (e *FieldError) Error() string { return e.Field + " " + e.Message }

// ErrNotAllowed is any target while EMQ_PUSH_ALLOW is unset: no host may
// be called.
var ErrNotAllowed = errors.New("push delivery is off: set EMQ_PUSH_ALLOW to the hosts a target may name")

// Check reports what is wrong with t (its defaults filled in) as a target
// allow permits: a *FieldError, or ErrNotAllowed when allow permits none.
func Check(t Target, allow Allow) error {
	if !allow.On() {
		return ErrNotAllowed
	}
	u, err := url.Parse(t.URL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "":
		return &FieldError{"url", "must be an http or https URL"}
	case u.User != nil:
		return &FieldError{"url", "must not carry credentials: sign with secret instead"}
	case u.Fragment != "":
		return &FieldError{"url", "must not have a fragment"}
	case !allow.Permits(u):
		return &FieldError{"url", fmt.Sprintf("host %s is not in EMQ_PUSH_ALLOW", u.Host)}
	case t.Timeout < MinTimeout || t.Timeout > MaxTimeout:
		return &FieldError{"timeout_ms", fmt.Sprintf("must be %d to %d", MinTimeout.Milliseconds(), MaxTimeout.Milliseconds())}
	case t.Concurrency < 1 || t.Concurrency > MaxConcurrency:
		return &FieldError{"concurrency", fmt.Sprintf("must be 1 to %d", MaxConcurrency)}
	case t.Lease < t.Timeout+MinLeaseMargin || t.Lease > MaxLease:
		// A lease that could lapse while its delivery is under way would
		// let the sweep hand the job to another delivery at the same time:
		// it outlasts the timeout by time to report the answer.
		return &FieldError{"lease_ms", fmt.Sprintf("must be at least timeout_ms + %d (%d) and at most %d",
			MinLeaseMargin.Milliseconds(), (t.Timeout + MinLeaseMargin).Milliseconds(), MaxLease.Milliseconds())}
	}
	if t.Secret != "" {
		if err := checkSecret(t.Secret); err != nil {
			return err
		}
	}
	return checkHeaders(t.Headers)
}

// checkSecret reports a secret that is not "whsec_" and the base64 of at
// least 24 key bytes (Standard Webhooks asks for 24 to 64).
func checkSecret(secret string) error {
	key, ok := strings.CutPrefix(secret, SecretPrefix)
	raw, err := base64.StdEncoding.DecodeString(key)
	if !ok || err != nil || len(raw) < 24 || len(raw) > 64 {
		return &FieldError{"secret", `must be "whsec_" and the base64 of 24 to 64 random bytes`}
	}
	if _, err := standardwebhooks.NewWebhook(secret); err != nil {
		return &FieldError{"secret", err.Error()}
	}
	return nil
}

// Allow is the hosts a target may name (EMQ_PUSH_ALLOW): a host name, any
// port, or a host:port, that port only. The zero Allow permits none.
type Allow struct {
	hosts     map[string]bool // lower-case host names and IP literals
	hostPorts map[string]bool // "host:port", lower-case, IPv6 in brackets
}

// ParseAllow reads EMQ_PUSH_ALLOW: comma-separated host names or
// host:port, blanks ignored. "*" is refused: an admin key must not be able
// to make the service call any host.
func ParseAllow(list string) (Allow, error) {
	a := Allow{hosts: map[string]bool{}, hostPorts: map[string]bool{}}
	for _, entry := range strings.Split(list, ",") {
		entry = strings.ToLower(strings.TrimSpace(entry))
		switch {
		case entry == "":
			continue
		case strings.Contains(entry, "*"):
			return Allow{}, fmt.Errorf("%q: name each host, no wildcards", entry)
		}
		host, port, err := net.SplitHostPort(entry)
		bracketed := strings.HasPrefix(entry, "[") == strings.HasSuffix(entry, "]")
		if err != nil { // no port
			host, port = strings.TrimSuffix(strings.TrimPrefix(entry, "["), "]"), ""
		}
		n, perr := strconv.Atoi(port)
		if !validHost(host) || (err == nil && (perr != nil || n < 1 || n > 65535)) || (err != nil && !bracketed) {
			return Allow{}, fmt.Errorf("%q is not a host or host:port", entry)
		}
		if port == "" {
			a.hosts[host] = true
		} else {
			a.hostPorts[net.JoinHostPort(host, port)] = true
		}
	}
	return a, nil
}

// validHost reports whether h is an IP address or a DNS name (letters,
// digits, dots and dashes).
func validHost(h string) bool {
	if net.ParseIP(h) != nil {
		return true
	}
	if h == "" || len(h) > 253 || strings.HasPrefix(h, ".") || strings.Contains(h, "..") {
		return false
	}
	for _, c := range h {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// On reports whether a permits any host.
func (a Allow) On() bool { return len(a.hosts)+len(a.hostPorts) > 0 }

// Permits reports whether u's host (and port: the scheme's own when u
// names none) is allowed.
func (a Allow) Permits(u *url.URL) bool {
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return a.hosts[host] || a.hostPorts[net.JoinHostPort(host, port)]
}
