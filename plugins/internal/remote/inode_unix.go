//go:build unix

package remote

import (
	"os"
	"syscall"
)

// inode returns the file's inode number.
func inode(fi os.FileInfo) any {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return nil
}
