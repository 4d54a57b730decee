package engine

import (
	"slices"
	"time"

	"github.com/dcm-router/dcm/dcm"
)

// retryAt says when a failed reload is due for its retry.
func (e *Engine) retryAt() (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.retry.at, len(e.retry.reasons) > 0
}

func (e *Engine) pendingReasons() []dcm.ReloadReason {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.retry.reasons)
}

// maxRetryDelay bounds the backoff of a failing reload: a configuration
// HAProxy keeps refusing is still tried again every minute, so a fix outside
// dcm (a certificate, a file system) is picked up without a restart.
const maxRetryDelay = time.Minute

// nextRetryDelay is the wait before retrying a reload that failed after a
// wait of prev (0 for the first failure): first, doubling per failure up to
// maxRetryDelay, so a broken configuration is not hammered on every event.
func nextRetryDelay(prev, first time.Duration) time.Duration {
	return min(max(prev*2, first), maxRetryDelay)
}
