// Package web is afloat's console: the on-call simulator played in a
// browser, and the JSON API it runs on (docs/api.md).
//
// The server keeps no session state. A run is a pure function of its
// scenario, seed, noise switch and actions, so every request — the next
// minutes of a game, a share link opened in another browser, a debrief —
// recomputes the run from those inputs; a restart loses nothing. The page,
// scripts, styles, message catalogues (English, Welsh, Tagalog) and the
// vendored uPlot are embedded in the binary.
//
//	cfg := web.DefaultConfig() // 127.0.0.1:8080
//	cfg.Logger = slog.Default()
//	err := web.Run(ctx, cfg)   // until ctx is done, then a graceful shutdown
//
// Handler returns the same console as an http.Handler, for tests and for
// mounting under another server.
package web
