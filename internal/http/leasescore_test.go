package http_test

import (
	"context"
	"net/http"
	"testing"
)

// TestAnActiveJobsLeaseIsItsScore: the lease is the job's score in the
// active set alone (docs/design.md#fencing). No row keeps it, and every
// answer about an active job gives it: the claim, the job's page, a listing
// of active jobs, an enqueue of its id, an enqueue its dedupe key answers;
// an extend moves all of them.
func TestAnActiveJobsLeaseIsItsScore(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		q := "leases"
		must[jobView](t, h.do(t, "POST", "/queues/"+q+"/jobs",
			`{"id":"a","payload":1,"dedupe":{"key":"k","mode":"until_done"}}`), http.StatusCreated)
		claimed := h.claimOne(t, q, "a", 60_000)
		if claimed.LeaseExpiresAt == "" {
			t.Fatalf("the claim answered no lease: %+v", claimed)
		}
		check := func(when, want string) {
			t.Helper()
			if fields := h.rdb.HKeys(ctx, h.key(q, "job:a")).Val(); contains(fields, "lease_expires_at") {
				t.Fatalf("%s: the row keeps lease_expires_at: %v", when, fields)
			}
			answers := map[string]reply{
				"GET job":        h.do(t, "GET", "/queues/"+q+"/jobs/a", nil),
				"enqueue its id": h.do(t, "POST", "/queues/"+q+"/jobs", `{"id":"a","payload":2}`),
				"enqueue its key": h.do(t, "POST", "/queues/"+q+"/jobs",
					`{"payload":3,"dedupe":{"key":"k","mode":"until_done"}}`),
			}
			for name, r := range answers {
				if got := decode[jobView](t, r); got.ID != "a" || got.LeaseExpiresAt != want {
					t.Errorf("%s, %s: %s answered %q (job %s), want %q", when, name, r, got.LeaseExpiresAt, got.ID, want)
				}
			}
			list := must[jobList](t, h.do(t, "GET", "/queues/"+q+"/jobs?state=active", nil), http.StatusOK)
			if len(list.Jobs) != 1 || list.Jobs[0].LeaseExpiresAt != want {
				t.Errorf("%s: the active listing gave %+v, want a leased to %q", when, list.Jobs, want)
			}
		}
		check("claimed", claimed.LeaseExpiresAt)
		ext := decode[struct {
			LeaseExpiresAt string `json:"lease_expires_at"`
		}](t, h.extend(t, q, "a", claimed.Token, 120_000, ""))
		if ext.LeaseExpiresAt == claimed.LeaseExpiresAt || ext.LeaseExpiresAt == "" {
			t.Fatalf("the extend answered lease %q, was %q", ext.LeaseExpiresAt, claimed.LeaseExpiresAt)
		}
		check("extended", ext.LeaseExpiresAt)
	})
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
