package main

import (
	"io"
	"log/slog"
	"testing"
)

// A Sentinel URL option go-redis parses but NewFailoverClient refuses by
// panicking: connect panics instead of returning a configuration error.
func TestReviewSentinelRouteOptionPanicsInConnect(t *testing.T) {
	for _, url := range []string{
		"redis+sentinel://127.0.0.1:1/emq?route_randomly=true",
		"redis+sentinel://127.0.0.1:1/emq?route_by_latency=true",
	} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("connect(%s) panicked: %v", url, p)
				}
			}()
			_, _, stop, err := connect(config{RedisURL: url}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err == nil {
				stop()
				t.Errorf("connect(%s): no error", url)
			}
		}()
	}
}
