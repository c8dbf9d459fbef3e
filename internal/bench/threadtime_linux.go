package bench

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadTime is the CPU time of the calling thread, which the caller keeps
// (runtime.LockOSThread): time spent waiting for a core does not count.
func threadTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return time.Duration(time.Now().UnixNano())
	}
	return time.Duration(ts.Nano())
}
