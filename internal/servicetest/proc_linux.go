package servicetest

import "syscall"

// dieWithParent makes the kernel kill the service when the test binary
// dies (a panic or a test timeout skips the cleanups), so that no service
// outlives its tests.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
