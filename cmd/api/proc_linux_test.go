package main

import "syscall"

// dieWithTest makes the kernel kill a process the tests start when the
// test binary dies (a panic or a timeout skips the cleanups), so that no
// service outlives its test.
func dieWithTest() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
