//go:build !linux

package examples

import (
	"os"
	"syscall"
)

// ownGroup has no portable equivalent outside Linux.
func ownGroup() *syscall.SysProcAttr { return nil }

// killGroup kills only the process itself outside Linux.
func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}

// leftovers cannot look for a process's leftovers outside Linux.
func leftovers(int) []string { return nil }
