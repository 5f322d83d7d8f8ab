package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// reportMemory prints the service's resident memory now and at its peak
// (from /proc, when pid is given) and Redis's used memory (when rdb is).
func reportMemory(ctx context.Context, w io.Writer, pid int, rdb redis.UniversalClient) {
	if pid > 0 {
		rss, peak := procMemory(pid)
		fmt.Fprintf(w, "\nservice pid %d: VmRSS %s, VmHWM (peak) %s\n", pid, rss, peak)
	}
	if rdb != nil {
		info, err := rdb.Info(ctx, "memory").Result()
		if err == nil {
			fmt.Fprintf(w, "redis: used_memory_human %s\n", infoField(info, "used_memory_human"))
		}
	}
}

// procMemory reads VmRSS and VmHWM of a process from /proc.
func procMemory(pid int) (rss, peak string) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?", "?"
	}
	defer f.Close()
	scan := bufio.NewScanner(f)
	for scan.Scan() {
		name, value, _ := strings.Cut(scan.Text(), ":")
		switch name {
		case "VmRSS":
			rss = strings.TrimSpace(value)
		case "VmHWM":
			peak = strings.TrimSpace(value)
		}
	}
	return rss, peak
}

// infoField reads one field of an INFO reply.
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return "?"
}

// redisBusy is how many microseconds Redis has spent running commands
// since it started (the sum of INFO commandstats' usec), or -1 unknown.
func redisBusy(ctx context.Context, rdb redis.UniversalClient) int64 {
	if rdb == nil {
		return -1
	}
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return -1
	}
	var total int64
	for _, line := range strings.Split(info, "\n") {
		_, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(line, "cmdstat_") {
			continue
		}
		for _, kv := range strings.Split(stats, ",") {
			if v, ok := strings.CutPrefix(kv, "usec="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				total += n
			}
		}
	}
	return total
}
