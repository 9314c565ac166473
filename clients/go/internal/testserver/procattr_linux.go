package testserver

import "syscall"

// procAttr ends the server when the test process dies (e.g. go test's -timeout).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
