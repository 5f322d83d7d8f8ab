//go:build !linux

package redistest

import "syscall"

// dieWithParent has no portable equivalent outside Linux.
func dieWithParent() *syscall.SysProcAttr { return nil }
