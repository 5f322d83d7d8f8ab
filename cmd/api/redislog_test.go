package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

// TestRedisLogLevels: go-redis's lines reach the log at warn, a panic at
// error, and a Sentinel client's news of its master and sentinels at info.
func TestRedisLogLevels(t *testing.T) {
	t.Parallel()
	for line, want := range map[string]string{
		`redis: sentinel: new master="emq" addr="10.0.0.7:6379"`:                     "level=INFO",
		`redis: sentinel: discovered new sentinel="10.0.0.9:26379" for master="emq"`: "level=INFO",
		`redis: sentinel: GetMasterAddrByName name="emq" failed: EOF`:                "level=WARN",
		`redis: dial tcp 10.0.0.7:6379: connect: connection refused`:                 "level=WARN",
		`redis: recovered from panic: boom`:                                          "level=ERROR",
	} {
		var buf bytes.Buffer
		redisLogger{slog.New(slog.NewTextHandler(&buf, nil))}.Printf(context.Background(), "%s", line)
		if !strings.Contains(buf.String(), want) || !strings.Contains(buf.String(), "detail=") {
			t.Errorf("%s: logged %q, want %s with the text in detail", line, buf.String(), want)
		}
	}
}
