package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/afloat/afloat/web"
)

// runServe serves the console until SIGINT or SIGTERM, then shuts down
// gracefully.
func runServe(fs *command, args []string) int {
	cfg := web.DefaultConfig()
	var logFormat, logLevel string
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "`HOST:PORT` to listen on (port 0: any free port); a loopback address unless --allow-remote")
	fs.BoolVar(&cfg.AllowRemote, "allow-remote", false, "allow an --addr beyond loopback and answer any Host name (on a loopback --addr too, with a warning: it turns off the protection against DNS rebinding): the console has no authentication, so only behind a proxy that adds it")
	fs.StringVar(&logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&cfg.RedisURL, "redis", os.Getenv("AFLOAT_REDIS_URL"), "Redis `URL` of the assignment lab (default $AFLOAT_REDIS_URL; unset: an in-process demo server)")
	fs.StringVar(&cfg.AssignPool, "assign-pool", "afloat-console", "pool `NAME` the assignment lab uses on that Redis")
	fs.BoolVar(&cfg.AssignWrite, "assign-write", false, "let the assignment lab change --assign-pool even if the lab did not create it (otherwise it only shows it; it never resets such a pool)")
	if status, ok := fs.parse(args); !ok {
		return status
	}
	stderr := fs.stderr
	var level slog.Level
	if err := level.UnmarshalText([]byte(logLevel)); err != nil {
		return fs.usage(fmt.Errorf("--log-level %q: want debug, info, warn or error", logLevel))
	}
	opts := &slog.HandlerOptions{Level: level}
	switch logFormat {
	case "text":
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, opts))
	case "json":
		cfg.Logger = slog.New(slog.NewJSONHandler(stderr, opts))
	default:
		return fs.usage(fmt.Errorf("--log-format %q: want text or json", logFormat))
	}
	if err := cfg.Validate(); err != nil {
		return fs.usage(err)
	}
	switch {
	case cfg.BeyondLoopback(): // Validate let it through: --allow-remote
		fmt.Fprintf(stderr, "afloat serve: WARNING: listening on %s, beyond loopback. The console has no authentication: "+
			"anyone who reaches it can run costly comparisons and change the assignment lab's pool. Put a proxy that authenticates in front.\n", cfg.Addr)
	case cfg.AllowRemote:
		// On loopback the flag only turns the Host check off, which is
		// what stops DNS rebinding: say so rather than drop it silently.
		fmt.Fprintf(stderr, "afloat serve: WARNING: --allow-remote with the loopback address %s turns off the Host check: "+
			"the console answers any Host name, so a web page on a name that resolves to 127.0.0.1 (DNS rebinding) can use it "+
			"and read its answers. Leave --allow-remote out unless a proxy in front sends other host names.\n", cfg.Addr)
	}

	ctx, stop := interruptible()
	defer stop()
	if err := web.Run(ctx, cfg); err != nil {
		return fs.failed(err)
	}
	return exitOK
}
