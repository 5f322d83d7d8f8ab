// Command api runs echo_mq's HTTP/JSON service: the worker plane, the
// operator routes, the background reaper and the schedules' timer, over
// Redis (or over an embedded in-memory store when EMQ_REDIS_URL is not set).
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/batch"
	"github.com/echo-mq/echo_mq/internal/redisurl"
	"github.com/echo-mq/echo_mq/internal/telemetry"
)

// defaultGCPercent is the service's GOGC unless the environment sets one.
// The service's live heap is small (a few MB: requests in flight), so
// collecting when it has grown 4x, not 1x, costs little memory (tens of
// MB) and takes garbage collection from about a sixth of the CPU of a busy
// batch path to a few percent (docs/performance.md).
const defaultGCPercent = 400

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Environ(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "echo_mq:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends, then shuts down gracefully: it stops accepting,
// answers waiting long polls empty, lets in-flight requests finish (within
// EMQ_SHUTDOWN_TIMEOUT), stops the reaper and the schedules' timer, and
// closes Redis. environ is the environment ("NAME=value" entries): the
// settings are read from it, and the EMQ_* names it has that are no
// setting are warned about.
func run(ctx context.Context, environ []string, stdout io.Writer) error {
	cfg, err := loadConfig(getenvOf(environ))
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stdout, &slog.HandlerOptions{Level: cfg.LogLevel}))
	redis.SetLogger(redisLogger{log})
	log.Info("Starting echo_mq", cfg.logAttrs()...)
	for _, v := range unknownVariables(environ) {
		attrs := []any{"variable", v.name}
		if v.near != "" {
			attrs = append(attrs, "did_you_mean", v.near)
		}
		log.Warn("Unknown EMQ_ variable ignored: the service reads no such setting", attrs...)
	}
	if cfg.Keys.Open() {
		log.Warn("THE API IS OPEN: no EMQ_API_KEYS are configured, so anyone who can reach " + cfg.Addr +
			" may do anything. Keep EMQ_ADDR on loopback, or set EMQ_API_KEYS=admin:<key>,worker:<key>,reader:<key>.")
	}

	tel, err := startTracing(ctx, log)
	if err != nil {
		return err
	}
	defer stopTracing(tel, log)

	rdb, master, closeRedis, err := connect(cfg, log)
	if err != nil {
		return err
	}
	defer closeRedis()
	pingRedis(ctx, rdb, log)
	checkRedis(ctx, cfg, rdb, master, log)

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}

	bg, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBackground()
	svc := newServices(cfg, rdb, tel, log)
	svc.master = master
	svc.migrateQueues(ctx, log)
	hubDone := make(chan struct{})
	go func() { defer close(hubDone); svc.hub.Run(bg) }()
	reaper := svc.reaper(cfg, log)
	reaper.Start(bg)
	timerDone := make(chan struct{})
	go func() { defer close(timerDone); svc.timer(log).Run(bg) }()
	leases := svc.leases(cfg, log)
	batches := batch.NewService(rdb, cfg.Prefix, leases)
	dispatchDone := make(chan struct{})
	go func() { defer close(dispatchDone); svc.dispatcher(batches, log).Run(bg) }()
	pushDone := make(chan struct{})
	pushing, stopPushing := context.WithCancel(bg) // stopped with the HTTP server: both drain at once
	defer stopPushing()
	if d := svc.deliverer(ctx, cfg, leases, log); d != nil {
		go func() { defer close(pushDone); d.Run(pushing) }()
	} else {
		close(pushDone)
	}

	stopping := make(chan struct{})
	srv := &http.Server{
		Handler:           svc.handler(cfg, leases, batches, stopping, log),
		ReadHeaderTimeout: cfg.HeaderTimeout, // a client that trickles headers is cut off
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second, // a long poll waits 30 s at most
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info("Listening", "addr", ln.Addr().String())

	select {
	case err = <-serveErr:
		err = fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
		log.Info("Shutting down", "timeout", cfg.ShutdownTimeout)
		stopPushing()
		err = shutdown(srv, stopping, cfg.ShutdownTimeout, log)
	}
	reaper.Stop()
	stopBackground()
	<-pushDone
	<-hubDone
	<-timerDone
	<-dispatchDone
	log.Info("Stopped")
	return err
}

// getenvOf looks variables up in environ, as os.Getenv does in the
// process's environment.
func getenvOf(environ []string) func(string) string {
	env := make(map[string]string, len(environ))
	for _, entry := range environ {
		if name, value, ok := strings.Cut(entry, "="); ok {
			if _, seen := env[name]; !seen { // the first, as os.Getenv
				env[name] = value
			}
		}
	}
	return func(name string) string { return env[name] }
}

// shutdown stops srv gracefully: no new connections, waiting long polls
// answered empty, in-flight requests given up to timeout.
func shutdown(srv *http.Server, stopping chan struct{}, timeout time.Duration, log *slog.Logger) error {
	close(stopping)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		log.Warn("Shutdown timed out; closing the remaining connections")
		err = srv.Close()
	}
	return err
}

// startTracing starts the OTLP trace export when the standard OTEL_*
// variables of the process's environment ask for it (internal/telemetry:
// the OpenTelemetry SDK reads them itself, so they are not part of
// EMQ_*'s config), and says so in the log.
func startTracing(ctx context.Context, log *slog.Logger) (*telemetry.Telemetry, error) {
	tel, err := telemetry.Setup(ctx, buildVersion())
	if err != nil {
		return nil, err
	}
	if tel.Enabled() {
		endpoint := cmp.Or(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
		log.Info("Tracing: exporting spans over OTLP", "endpoint", redisurl.Mask(endpoint))
	}
	return tel, nil
}

// stopTracing exports the spans still buffered, for up to 5 s.
func stopTracing(tel *telemetry.Telemetry, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		log.Warn("Tracing: the last spans were not exported", "error", err)
	}
}

// buildVersion is the module version the binary was built from, "(devel)"
// for a build of a checkout: the service.version of its traces.
func buildVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}

// pingRedis checks Redis at start-up. The service starts either way (and
// answers 503 until Redis answers), so that it recovers by itself.
func pingRedis(ctx context.Context, rdb redis.UniversalClient, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		log.Warn("Redis does not answer yet; /readyz is 503 until it does", "error", err)
	}
}
