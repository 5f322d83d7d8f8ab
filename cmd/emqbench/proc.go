package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is the unit of a process's CPU times in /proc/<pid>/stat
// (USER_HZ): 100 a second on Linux, whatever the kernel's own tick.
const clockTicks = 100

// procCPU is how many microseconds of CPU process pid has used since it
// started (user + system, every thread's; from /proc, so Linux only), or
// -1 when unknown or pid is 0. Its unit is a clock tick (10 ms): a run's
// figure is good to a tick or two.
func procCPU(pid int) int64 {
	if pid <= 0 {
		return -1
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// The command name, in parentheses, may hold spaces and parentheses:
	// count the fields from after its last one. utime and stime are the
	// stat's 14th and 15th fields, the 12th and 13th after the name.
	end := strings.LastIndexByte(string(stat), ')')
	f := strings.Fields(string(stat[end+1:]))
	if end < 0 || len(f) < 13 {
		return -1
	}
	user, err1 := strconv.ParseInt(f[11], 10, 64)
	system, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return (user + system) * 1e6 / clockTicks
}
