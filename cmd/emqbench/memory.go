package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"
)

// reportMemory prints the service's resident memory now and at its peak
// (from /proc, when pid is given) and Redis's used memory (when rdb is),
// node by node for a Cluster.
func reportMemory(ctx context.Context, w io.Writer, pid int, rdb redis.UniversalClient) {
	if pid > 0 {
		rss, peak := procMemory(pid)
		fmt.Fprintf(w, "\nservice pid %d: VmRSS %s, VmHWM (peak) %s\n", pid, rss, peak)
	}
	if rdb == nil {
		return
	}
	nodes, _ := nodeInfo(ctx, rdb, "memory")
	for _, n := range nodes {
		fmt.Fprintf(w, "redis %s: used_memory_human %s\n", n.addr, infoField(n.info, "used_memory_human"))
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
