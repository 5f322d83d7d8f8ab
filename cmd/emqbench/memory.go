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

// redisCPU is how many microseconds of CPU the Redis process has used
// since it started (INFO cpu: user + system, its network work included),
// or -1 when unknown. CPU, not command time: on a machine whose cores are
// shared, a command's wall time also counts the time Redis waited for one.
func redisCPU(ctx context.Context, rdb redis.UniversalClient) int64 {
	if rdb == nil {
		return -1
	}
	info, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return -1
	}
	var total float64
	for _, field := range []string{"used_cpu_user", "used_cpu_sys"} {
		seconds, err := strconv.ParseFloat(infoField(info, field), 64)
		if err != nil {
			return -1
		}
		total += seconds
	}
	return int64(total * 1e6)
}
