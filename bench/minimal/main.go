// Command minimal is the floor bench/run reads echo_mq's service CPU per
// HTTP request against: the least a Go service can do for each request
// emqbench's shapes make, measured in the same run. For each route the
// shapes call (enqueue, batch enqueue, claim, complete with claim-next,
// batch complete with claim-next, lease extend) its handler
//
//   - decodes the same JSON body with encoding/json into a small struct,
//   - runs exactly one FCALL, of a trivial function it loads at start
//     (touch.lua: one HSET, its argument returned), through go-redis,
//   - answers with encoding/json a body of the shape echo_mq answers: the
//     same fields for a job, the same lists, so that the client's decoding
//     is comparable.
//
// It is not a job queue. Jobs are counts (see stock): an enqueue adds to
// its queue's count, a claim or a claim-next takes from it and answers
// that many made-up jobs with a fixed payload, and a complete checks
// nothing. Counting keeps each job enqueued, claimed and completed once,
// so a shape makes the same mix of requests as on echo_mq (a claim that
// finds nothing waits for an enqueue, as echo_mq's long poll does).
//
// It has no middleware (no request ids, authorization, telemetry, limits
// or validation) and plain go-redis with echo_mq's settings: no retries,
// the default pool, and GOGC 400, as cmd/api sets them.
//
//	go run ./bench/minimal -addr 127.0.0.1:8090 -redis redis://127.0.0.1:6379
package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed touch.lua
var touchSrc string

// touchFunction is the function touch.lua registers.
const touchFunction = "emq_minimal_touch"

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400) // as cmd/api
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "minimal:", err)
		os.Exit(1)
	}
}

// run loads touch.lua into Redis and serves until ctx ends, then shuts
// down gracefully.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("minimal", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8090", "the address to listen on")
	redisURL := fs.String("redis", "redis://127.0.0.1:6379", "the Redis to load the function into and call")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stdout, nil))
	opts, err := redis.ParseURL(*redisURL)
	if err != nil {
		return fmt.Errorf("-redis: %w", err)
	}
	opts.MaxRetries = -1 // as cmd/api: a lost answer is an error, not a second call
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	if err := rdb.FunctionLoadReplace(ctx, touchSrc).Err(); err != nil {
		return fmt.Errorf("load touch.lua: %w", err)
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	srv := &http.Server{
		Handler:           newHandler(rdb, log),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info("Listening", "addr", ln.Addr().String())

	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
