package main

import (
	"encoding/json"
	"strconv"
	"time"
)

// The request bodies emqbench sends, as small structs.
type (
	enqueueRequest struct {
		Payload json.RawMessage `json:"payload"`
		Group   string          `json:"group,omitempty"`
	}
	enqueueBatchRequest struct {
		Jobs []enqueueRequest `json:"jobs"`
	}
	claimRequest struct {
		Count   int   `json:"count"`
		WaitMs  int64 `json:"wait_ms"`
		LeaseMs int64 `json:"lease_ms"`
	}
	claimNext struct {
		Count   int   `json:"count"`
		LeaseMs int64 `json:"lease_ms"`
	}
	completeRequest struct {
		Token  int64           `json:"token"`
		Result json.RawMessage `json:"result,omitempty"`
		Claim  *claimNext      `json:"claim,omitempty"`
	}
	completeBatchRequest struct {
		Jobs []struct {
			ID    string `json:"id"`
			Token int64  `json:"token"`
		} `json:"jobs"`
		Claim *claimNext `json:"claim,omitempty"`
	}
	extendRequest struct {
		Token   int64 `json:"token"`
		LeaseMs int64 `json:"lease_ms"`
	}
)

// jobAnswer is a job as echo_mq answers one, with the fields a plain job
// has (internal/http's Job, its empty ones left out).
type jobAnswer struct {
	ID              string          `json:"id"`
	Queue           string          `json:"queue"`
	State           string          `json:"state"`
	Payload         json.RawMessage `json:"payload"`
	Priority        int             `json:"priority"`
	Attempts        int             `json:"attempts"`
	MaxAttempts     int             `json:"max_attempts"`
	Stalled         int             `json:"stalled"`
	CancelRequested bool            `json:"cancel_requested"`
	Token           int64           `json:"token,omitempty"`
	CreatedAt       string          `json:"created_at,omitempty"`
	StartedAt       string          `json:"started_at,omitempty"`
	LeaseExpiresAt  string          `json:"lease_expires_at,omitempty"`
	FinishedAt      string          `json:"finished_at,omitempty"`
}

// The answers, of echo_mq's shapes.
type (
	jobList struct {
		Jobs []jobAnswer `json:"jobs"`
	}
	completeAnswer struct {
		jobAnswer
		Next []jobAnswer `json:"next,omitempty"`
	}
	completeBatchAnswer struct {
		Results []jobAnswer `json:"results"`
		Next    []jobAnswer `json:"next,omitempty"`
	}
	extendAnswer struct {
		LeaseExpiresAt  string `json:"lease_expires_at"`
		CancelRequested bool   `json:"cancel_requested"`
		CancelReason    string `json:"cancel_reason"`
	}
	problem struct {
		Title  string `json:"title"`
		Detail string `json:"detail,omitempty"`
	}
)

// newJob makes up a job just enqueued.
func (s *server) newJob(queue, state string, p json.RawMessage, now string) jobAnswer {
	return jobAnswer{ID: fakeID(s.ids.Add(1)), Queue: queue, State: state, Payload: p, MaxAttempts: 3, CreatedAt: now}
}

// claimed makes up n jobs just claimed with a lease of lease.
func (s *server) claimed(queue string, n int, lease time.Duration) []jobAnswer {
	if n == 0 {
		return nil
	}
	t := time.Now()
	now, expires := stamp(t), stamp(t.Add(lease))
	jobs := make([]jobAnswer, n)
	for i := range jobs {
		j := s.newJob(queue, "active", payload, now)
		j.Attempts, j.Token, j.StartedAt, j.LeaseExpiresAt = 1, int64(s.ids.Add(1)), now, expires
		jobs[i] = j
	}
	return jobs
}

// completed makes up job id, just completed.
func completed(id, queue, now string) jobAnswer {
	return jobAnswer{ID: id, Queue: queue, State: "completed", Payload: payload, Attempts: 1, MaxAttempts: 3,
		CreatedAt: now, StartedAt: now, FinishedAt: now}
}

// stamp formats t as echo_mq does: RFC 3339 UTC with milliseconds.
func stamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// fakeID makes up a job id of a UUID's length and form from n.
func fakeID(n uint64) string {
	id := []byte("00000000-0000-7000-8000-000000000000")
	digits := strconv.FormatUint(n%(1<<48), 16)
	copy(id[len(id)-len(digits):], digits)
	return string(id)
}
