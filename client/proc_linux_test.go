package client_test

import "syscall"

// dieWithTest makes the kernel kill a service the tests start when the
// test binary dies (a panic or a timeout skips TestMain's cleanup).
func dieWithTest() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
