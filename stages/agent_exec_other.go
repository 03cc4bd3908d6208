//go:build !linux

package stages

import (
	"context"
	"syscall"
)

// agentSpawn runs the agent as our child in a group of its own: Linux's
// parent-death signal and child subreaper have no portable equivalent, so
// elsewhere an agent outlives a SIGKILL of this tool.
func agentSpawn(ctx context.Context, p agentProc) error { return agentRunDirect(ctx, p) }

func agentDieWithUs(*syscall.SysProcAttr) (unlock func()) { return func() {} }
