package redistest

import "syscall"

// dieWithParent makes the kernel stop redis-server when the test binary
// dies (a panic or a test timeout skips TestMain's cleanup), so no server
// outlives its tests.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
