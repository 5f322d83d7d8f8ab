//go:build !linux

package client_test

import "syscall"

// dieWithTest has no portable equivalent outside Linux.
func dieWithTest() *syscall.SysProcAttr { return nil }
