package main

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/echo-mq/echo_mq/internal/admin"
	emqhttp "github.com/echo-mq/echo_mq/internal/http"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/stall"
	"github.com/echo-mq/echo_mq/internal/wake"
)

func TestMain(m *testing.M) { os.Exit(redistest.Run(m)) }

// service serves the API over the test Redis under prefix, as cmd/api
// wires it, and returns its URL.
func service(t *testing.T, prefix string) string {
	t.Helper()
	rdb := redistest.Client(t)
	hub := wake.NewHub(rdb, prefix, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); hub.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	srv := httptest.NewServer(emqhttp.NewHandler(emqhttp.Config{
		Leases: lease.NewService(rdb, prefix), Admin: admin.NewService(rdb, prefix),
		Sweeper: stall.NewService(rdb, prefix), Waiters: hub, Events: emqhttp.NewEventLog(rdb, prefix),
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestRunMeasuresEveryShape runs every shape briefly through both drivers
// and checks that each moved jobs without an error, and that the queues it
// made are gone afterwards.
func TestRunMeasuresEveryShape(t *testing.T) {
	const prefix = "emqbench-test"
	var out bytes.Buffer
	err := run(context.Background(), []string{
		"-url", service(t, prefix), "-redis", "redis://" + redistest.Addr(), "-prefix", prefix,
		"-warmup", "100ms", "-duration", "400ms", "-producers", "4", "-workers", "4",
		"-extend-jobs", "20", "-extend-rate", "200", "-extend-goroutines", "4",
	}, &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	seen := map[string]bool{}
	shape := ""
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || (f[1] != "http" && f[1] != "direct") {
			continue
		}
		shape = f[0]
		seen[shape+" "+f[1]] = true
		if rate, _ := strconv.ParseFloat(f[2], 64); shape != "extend" && rate <= 0 {
			t.Errorf("%s via %s moved no jobs: %q", shape, f[1], line)
		}
		if calls, _ := strconv.ParseFloat(f[len(f)-4], 64); calls <= 0 { // routes may hold spaces: count from the end
			t.Errorf("%s via %s made no calls: %q", shape, f[1], line)
		}
		if f[len(f)-1] != "0" {
			t.Errorf("%s via %s had errors: %q", shape, f[1], line)
		}
	}
	for _, s := range []string{"single", "next", "batch", "extend"} {
		for _, via := range []string{"http", "direct"} {
			if !seen[s+" "+via] {
				t.Errorf("no figures for %s via %s in:\n%s", s, via, out.String())
			}
		}
	}
	keys, err := redistest.Client(t).Keys(context.Background(), prefix+":{*").Result()
	if err != nil || len(keys) != 0 {
		t.Errorf("keys left behind: %v (%v)", keys, err)
	}
}
