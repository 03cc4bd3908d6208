package store

import (
	"os"
	"syscall"
	"time"
)

// fileIdentity tells whether a file was replaced or written since it was last
// seen: a rename changes the inode, a write in place the size, mtime or ctime.
type fileIdentity struct {
	device, inode uint64
	size          int64
	mtime, ctime  syscall.Timespec
}

func identify(fi os.FileInfo) fileIdentity {
	sys, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileIdentity{}
	}
	device, inode := fileID(fi) // the cursor's identity of a file, plus what a write changes
	return fileIdentity{device: device, inode: inode, size: sys.Size, mtime: sys.Mtim, ctime: sys.Ctim}
}

func (id fileIdentity) known() bool { return id.inode != 0 }

func (id fileIdentity) modified() time.Time { return time.Unix(id.mtime.Unix()) }
