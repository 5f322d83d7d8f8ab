// Package flow is the shape of a queue's settings: its flow control
// (docs/design.md#flow-control), as the API gives them and as the scripts
// keep them, and the limits that hold a claim back; and its job defaults
// and retention (settings.go).
package flow

import (
	"fmt"
	"strconv"
	"strings"
)

// Rate is at most Limit claims starting in any window of WindowMS ms.
type Rate struct {
	Limit    int
	WindowMS int64
}

// Settings are a queue's limits (a nil one is no limit), its job defaults
// and its retention.
type Settings struct {
	Concurrency      *int  // at most this many of the queue's jobs active at once
	RateLimit        *Rate // claims starting, for the whole queue
	GroupConcurrency *int  // active jobs per group
	GroupRateLimit   *Rate // claims starting, per group
	FIFO             bool  // group_order "fifo": one job per group in flight, in order
	Defaults         JobDefaults
	Retention        Retention
}

// None reports whether s sets no flow control limit at all.
func (s Settings) None() bool {
	return s.Concurrency == nil && s.RateLimit == nil && s.GroupConcurrency == nil &&
		s.GroupRateLimit == nil && !s.FIFO
}

// Encode is the form the scripts keep of its limits in the queue's meta
// hash ("c,rl,rw,gc,grl,grw,order", lua/flow.lua), or "" for none.
func (s Settings) Encode() string {
	if s.None() {
		return ""
	}
	f := make([]string, 7)
	if s.Concurrency != nil {
		f[0] = strconv.Itoa(*s.Concurrency)
	}
	if s.RateLimit != nil {
		f[1], f[2] = strconv.Itoa(s.RateLimit.Limit), strconv.FormatInt(s.RateLimit.WindowMS, 10)
	}
	if s.GroupConcurrency != nil {
		f[3] = strconv.Itoa(*s.GroupConcurrency)
	}
	if s.GroupRateLimit != nil {
		f[4], f[5] = strconv.Itoa(s.GroupRateLimit.Limit), strconv.FormatInt(s.GroupRateLimit.WindowMS, 10)
	}
	if s.FIFO {
		f[6] = "fifo"
	}
	return strings.Join(f, ",")
}

// Decode reads Encode's form; "" is no settings.
func Decode(text string) (Settings, error) {
	var s Settings
	if text == "" {
		return s, nil
	}
	f := strings.Split(text, ",")
	if len(f) != 7 {
		return s, fmt.Errorf("flow settings %q: want 7 fields, have %d", text, len(f))
	}
	var err error
	num := func(v string) *int {
		if v == "" || err != nil {
			return nil
		}
		n, e := strconv.Atoi(v)
		if e != nil {
			err = fmt.Errorf("flow settings %q: %w", text, e)
			return nil
		}
		return &n
	}
	rate := func(limit, window string) *Rate {
		l, w := num(limit), num(window)
		if l == nil || w == nil {
			return nil
		}
		return &Rate{Limit: *l, WindowMS: int64(*w)}
	}
	s.Concurrency = num(f[0])
	s.RateLimit = rate(f[1], f[2])
	s.GroupConcurrency = num(f[3])
	s.GroupRateLimit = rate(f[4], f[5])
	s.FIFO = f[6] == "fifo"
	return s, err
}

// The limits that can hold a claim back, as a claim's held reason and the
// emq_claims_held_total metric's reason label name them. HeldPaused is the
// queue's pause, when jobs wait behind it.
const (
	HeldPaused           = "paused"
	HeldConcurrency      = "concurrency"
	HeldRateLimit        = "rate_limit"
	HeldGroupConcurrency = "group_concurrency"
	HeldGroupRateLimit   = "group_rate_limit"
	HeldGroupOrder       = "group_order"
	HeldGroupPaused      = "group_paused"
)

// Group is one group of a queue, as GET /queues/{queue}/groups lists it.
type Group struct {
	Name                     string
	Paused                   bool
	Pending, Active, Delayed int64
}
