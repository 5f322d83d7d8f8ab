package examples

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ownGroup puts a process the tests start in a process group of its own,
// so that the test can find and kill whatever it leaves behind, and makes
// the kernel kill it when the test binary dies (a panic or a timeout skips
// the cleanups).
func ownGroup() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup sends SIGKILL to every process of the group pgid.
func killGroup(pgid int) { syscall.Kill(-pgid, syscall.SIGKILL) }

// leftovers returns the command lines of the live (not zombie) processes
// of the group pgid, read from /proc.
func leftovers(pgid int) []string {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []string
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // the process is gone
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and parens.
		fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(fields) < 3 || fields[0] == "Z" || fields[2] != strconv.Itoa(pgid) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(path), "cmdline"))
		out = append(out, filepath.Base(filepath.Dir(path))+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return out
}
