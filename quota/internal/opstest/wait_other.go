//go:build !linux

package opstest

import "time"

// waitUntil returns at t, or soon after (the runtime's sleep).
func waitUntil(t time.Time) {
	if w := time.Until(t); w > 0 {
		time.Sleep(w)
	}
}
