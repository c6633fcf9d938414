package main

import (
	"fmt"
	"os"

	"github.com/afloat/afloat/internal/cli"
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
	var err error
	if cfg.Logger, err = cli.NewLogger(fs.stderr, logFormat, logLevel); err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		return fs.usage(err)
	}
	if w := cfg.Warning(); w != "" {
		fmt.Fprintf(fs.stderr, "afloat serve: WARNING: %s\n", w)
	}
	ctx, stop := interruptible()
	defer stop()
	return fs.fail(web.Run(ctx, cfg))
}
