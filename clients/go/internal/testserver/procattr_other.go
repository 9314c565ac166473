//go:build !linux

package testserver

import "syscall"

func procAttr() *syscall.SysProcAttr { return nil }
