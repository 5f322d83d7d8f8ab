package http

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/auth"
	"github.com/echo-mq/echo_mq/internal/events"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/stall"
	"github.com/echo-mq/echo_mq/internal/wake"
)

// GET /whoami names the key's role and its log name, never the key.
func TestWhoAmINamesTheKeysRole(t *testing.T) {
	t.Parallel()
	h, _ := keyedHandler(t)
	for role, key := range testKeys {
		rec := send(t, h, "GET", "/whoami", key, "")
		if rec.Code != http.StatusOK {
			t.Fatalf("%s key: %d %s", role, rec.Code, rec.Body)
		}
		var got WhoAmI
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if got.Role != role.String() || got.Open || !strings.HasPrefix(got.Key, role.String()+"-") {
			t.Errorf("%s key: got %+v, want role %s, not open, a key name of that role", role, got, role)
		}
		if strings.Contains(rec.Body.String(), key) {
			t.Errorf("%s key: the answer shows the key itself: %s", role, rec.Body)
		}
	}
	if rec := send(t, h, "GET", "/whoami", "", ""); rec.Code != http.StatusUnauthorized {
		t.Errorf("no key: %d, want 401", rec.Code)
	}
	if rec := send(t, h, "GET", "/whoami", "not-a-key-0123456789", ""); rec.Code != http.StatusUnauthorized {
		t.Errorf("a wrong key: %d, want 401", rec.Code)
	}
}

// With no keys the API is open, and /whoami says so.
func TestWhoAmIWhenOpen(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	prefix := "emqw-" + redistest.Queue(t)
	h := NewHandler(Config{
		Leases: lease.NewService(rdb, prefix), Admin: admin.NewService(rdb, prefix),
		Sweeper: stall.NewService(rdb, prefix), Waiters: wake.NewHub(rdb, prefix, nil),
		Events: events.NewLog(rdb, prefix),
	})
	rec := send(t, h, "GET", "/whoami", "", "")
	var got WhoAmI
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("%d %s %v", rec.Code, rec.Body, err)
	}
	if got != (WhoAmI{Role: auth.Admin.String(), Key: "anonymous", Open: true}) {
		t.Errorf("got %+v, want the anonymous admin of an open API", got)
	}
}
