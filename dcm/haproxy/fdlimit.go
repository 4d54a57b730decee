package haproxy

import "syscall"

// fdsPerConn is what HAProxy counts per connection (client and server
// side); fdReserve covers listeners, sockets and files.
const (
	fdsPerConn = 2
	fdReserve  = 200
)

// FDsFor is the file-descriptor limit HAProxy needs for maxconn n.
func FDsFor(n int) uint64 { return uint64(n)*fdsPerConn + fdReserve }

// MaxConnFor is the largest maxconn a file-descriptor limit lets HAProxy
// start with (it refuses to start above it); 0 when the limit fits none.
func MaxConnFor(nofile uint64) int {
	if nofile <= fdReserve+fdsPerConn {
		return 0
	}
	return int((nofile - fdReserve) / fdsPerConn)
}

// maxConnNow is MaxConnFor this process's limit, which the master it
// started inherited; ok is false when the limit cannot be read.
func maxConnNow() (n int, ok bool) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, false
	}
	return MaxConnFor(lim.Cur), true
}
