//go:build !linux

package servicetest

import "syscall"

// dieWithParent has no portable equivalent outside Linux.
func dieWithParent() *syscall.SysProcAttr { return nil }
