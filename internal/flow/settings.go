package flow

import (
	"fmt"
	"strconv"
	"strings"
)

// JobDefaults are what an enqueue into the queue that does not name them
// gets (docs/design.md#job-defaults); a nil field is none, and the
// service's own default holds.
type JobDefaults struct {
	MaxAttempts *int
	Backoff     *Backoff
	Priority    *int
	TimeoutMS   *int64 // the total time one attempt may run
	ExpiresInMS *int64 // not started within it: cancelled, "expired"
}

// Backoff is a retry delay: DelayMS, doubled per attempt when
// Exponential, capped at MaxDelayMS.
type Backoff struct {
	Exponential bool
	DelayMS     int64
	MaxDelayMS  int64
}

// String is the form a job row keeps, "type:delay_ms:max_delay_ms".
func (b Backoff) String() string {
	kind := "fixed"
	if b.Exponential {
		kind = "exponential"
	}
	return fmt.Sprintf("%s:%d:%d", kind, b.DelayMS, b.MaxDelayMS)
}

// None reports whether d sets no default.
func (d JobDefaults) None() bool {
	return d.MaxAttempts == nil && d.Backoff == nil && d.Priority == nil && d.TimeoutMS == nil && d.ExpiresInMS == nil
}

// Encode is the form the scripts keep in the queue's meta hash,
// "max_attempts,backoff,priority,timeout_ms,expires_in_ms" with an empty
// entry for none (lua/newjobs.lua's job_defaults), or "" for no defaults.
func (d JobDefaults) Encode() string {
	if d.None() {
		return ""
	}
	backoff := ""
	if d.Backoff != nil {
		backoff = d.Backoff.String()
	}
	return strings.Join([]string{itoa(d.MaxAttempts), backoff, itoa(d.Priority), itoa64(d.TimeoutMS), itoa64(d.ExpiresInMS)}, ",")
}

// DecodeJobDefaults reads Encode's form; "" is none. A sixth entry, which
// lua/settings.lua adds (the due index's name), is passed over.
func DecodeJobDefaults(text string) (JobDefaults, error) {
	var d JobDefaults
	if text == "" {
		return d, nil
	}
	f := strings.SplitN(text, ",", 6)
	if len(f) < 5 {
		return d, fmt.Errorf("job defaults %q: want 5 fields, have %d", text, len(f))
	}
	var err error
	d.MaxAttempts, err = atoi(f[0], err)
	d.Priority, err = atoi(f[2], err)
	d.TimeoutMS, err = atoi64(f[3], err)
	d.ExpiresInMS, err = atoi64(f[4], err)
	if f[1] != "" && err == nil {
		d.Backoff, err = parseBackoff(f[1])
	}
	if err != nil {
		return JobDefaults{}, fmt.Errorf("job defaults %q: %w", text, err)
	}
	return d, nil
}

// parseBackoff reads Backoff.String's form.
func parseBackoff(text string) (*Backoff, error) {
	f := strings.Split(text, ":")
	if len(f) != 3 || (f[0] != "fixed" && f[0] != "exponential") {
		return nil, fmt.Errorf("backoff %q", text)
	}
	delay, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return nil, err
	}
	maxDelay, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return nil, err
	}
	return &Backoff{Exponential: f[0] == "exponential", DelayMS: delay, MaxDelayMS: maxDelay}, nil
}

// Keep is how a queue keeps its finished jobs of one state: the newest
// Count (0: any number) that finished within AgeMS (0: however long ago).
type Keep struct {
	Count int
	AgeMS int64
}

// Retention is how a queue keeps its finished jobs, by state
// (docs/design.md#retention); a nil one is the service's default:
// completed keeps EMQ_KEEP_COMPLETED, dead and cancelled keep all.
type Retention struct {
	Completed, Dead, Cancelled *Keep
}

// None reports whether r names no state.
func (r Retention) None() bool {
	return r.Completed == nil && r.Dead == nil && r.Cancelled == nil
}

// Encode is the form the scripts keep in the queue's meta hash, "c,d,x":
// "count:age_ms" for each state r names, an empty entry for one it does
// not (lua/lifecycle.lua's retention); "" for none at all.
func (r Retention) Encode() string {
	if r.None() {
		return ""
	}
	f := make([]string, 3)
	for i, k := range []*Keep{r.Completed, r.Dead, r.Cancelled} {
		if k != nil {
			f[i] = strconv.Itoa(k.Count) + ":" + strconv.FormatInt(k.AgeMS, 10)
		}
	}
	return strings.Join(f, ",")
}

// DecodeRetention reads Encode's form; "" is none.
func DecodeRetention(text string) (Retention, error) {
	var r Retention
	if text == "" {
		return r, nil
	}
	f := strings.Split(text, ",")
	if len(f) != 3 {
		return r, fmt.Errorf("retention %q: want 3 fields, have %d", text, len(f))
	}
	for i, to := range []**Keep{&r.Completed, &r.Dead, &r.Cancelled} {
		if f[i] == "" {
			continue
		}
		count, age, ok := strings.Cut(f[i], ":")
		n, err := strconv.Atoi(count)
		ms, err2 := strconv.ParseInt(age, 10, 64)
		if !ok || err != nil || err2 != nil {
			return Retention{}, fmt.Errorf("retention %q: entry %q", text, f[i])
		}
		*to = &Keep{Count: n, AgeMS: ms}
	}
	return r, nil
}

func itoa(n *int) string {
	if n == nil {
		return ""
	}
	return strconv.Itoa(*n)
}

func itoa64(n *int64) string {
	if n == nil {
		return ""
	}
	return strconv.FormatInt(*n, 10)
}

// atoi reads an optional number ("" none), unless err is already set.
func atoi(text string, err error) (*int, error) {
	if text == "" || err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(text)
	if err != nil {
		return nil, err
	}
	return &n, nil
}

func atoi64(text string, err error) (*int64, error) {
	n, err := atoi(text, err)
	if n == nil {
		return nil, err
	}
	v := int64(*n)
	return &v, nil
}
