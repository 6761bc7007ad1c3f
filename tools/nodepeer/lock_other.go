//go:build !unix

package nodepeer

import (
	"context"
	"fmt"
	"runtime"
)

// lock is not implemented without flock(2); the install fails with the reason.
func lock(context.Context, string) (func(), error) {
	return nil, fmt.Errorf("install lock not implemented on %s", runtime.GOOS)
}
