//go:build !linux

package main

import "syscall"

// dieWithTest has no portable equivalent outside Linux.
func dieWithTest() *syscall.SysProcAttr { return nil }
