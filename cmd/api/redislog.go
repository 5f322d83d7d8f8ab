package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// redisLogger takes go-redis's own log lines (redis.SetLogger): a pool
// that cannot dial while Redis is down, a pub/sub reconnecting, a
// recovered panic. go-redis would print them to stderr in a format of its
// own; through it they are records of the service's log like the rest, at
// warn level (error for a panic; info for what a Sentinel client reports
// of its sentinels and master when all is well), the text in "detail".
// go-redis has one logger per process: the last run to start sets it.
type redisLogger struct{ log *slog.Logger }

// Printf logs one go-redis line.
func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	text := strings.TrimSpace(fmt.Sprintf(format, v...))
	text = strings.TrimPrefix(text, "redis: ")
	level := slog.LevelWarn
	switch {
	case strings.Contains(text, "panic"):
		level = slog.LevelError
	case strings.HasPrefix(text, "sentinel: new master") || strings.HasPrefix(text, "sentinel: discovered new sentinel"):
		level = slog.LevelInfo // news, not trouble: the service logs the master it uses
	}
	l.log.Log(ctx, level, "Redis client", "detail", text)
}
