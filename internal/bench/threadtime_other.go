//go:build !linux

package bench

import "time"

// threadTime is the wall clock where the thread's CPU clock is not read:
// time spent waiting for a core counts there.
func threadTime() time.Duration { return time.Duration(time.Now().UnixNano()) }
