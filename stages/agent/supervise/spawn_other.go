//go:build !linux

package supervise

import (
	"context"
	"syscall"
)

// Run runs the agent as our child in a group of its own: Linux's
// parent-death signal and child subreaper have no portable equivalent, so
// elsewhere an agent outlives a SIGKILL of this tool.
func Run(ctx context.Context, p Proc) error { return runDirect(ctx, p) }

func dieWithUs(*syscall.SysProcAttr) (unlock func()) { return func() {} }

// Main does nothing outside Linux: no supervisor or confining helper is
// ever started there.
func Main([]string) {}
