package podnet

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// CloseOnSignal closes the network when the process gets SIGINT or SIGTERM
// and then lets the signal end the process as it would have without the
// handler (its exit status says so). An interrupted test binary runs no
// deferred function and no t.Cleanup; without this, its network would wait
// for the next Setup to sweep it. stop ends the watch; call it when the
// network is closed the ordinary way.
func (n *Network) CloseOnSignal() (stop func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			if err := n.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "podnet: on %v: %v\n", sig, err)
			}
			// With no channel left for it, the signal's default action
			// applies again; another watcher, if any, gets it first.
			signal.Stop(sigs)
			_ = syscall.Kill(os.Getpid(), sig.(syscall.Signal))
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}
