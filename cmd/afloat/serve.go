package main

import (
	"fmt"
	"os"

	"github.com/afloat/afloat/internal/cli"
	"github.com/afloat/afloat/web"
)

// runServe serves the console until SIGINT or SIGTERM, then shuts down
// gracefully.
func runServe(c *cli.Command, args []string) int {
	cfg := web.DefaultConfig()
	var logFormat, logLevel string
	c.StringVar(&cfg.Addr, "addr", cfg.Addr, "`HOST:PORT` to listen on (port 0: any free port); a loopback address unless --allow-remote")
	c.BoolVar(&cfg.AllowRemote, "allow-remote", false, "allow an --addr beyond loopback and answer any Host name (on a loopback --addr too, with a warning: it turns off the protection against DNS rebinding): the console has no authentication, so only behind a proxy that adds it")
	c.StringVar(&logFormat, "log-format", "text", "log format: text or json")
	c.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	c.StringVar(&cfg.RedisURL, "redis", os.Getenv("AFLOAT_REDIS_URL"), "Redis `URL` of the assignment lab (default $AFLOAT_REDIS_URL; unset: an in-process demo server)")
	c.StringVar(&cfg.AssignPool, "assign-pool", "afloat-console", "pool `NAME` the assignment lab uses on that Redis")
	c.BoolVar(&cfg.AssignWrite, "assign-write", false, "let the assignment lab change --assign-pool even if the lab did not create it (otherwise it only shows it; it never resets such a pool)")
	c.StringVar(&cfg.Drill, "drill", "", "`URL` of a running afloat drill to follow: the play page at /?drill=1 shows it read-only, for a facilitator to project (docs/drill.md)")
	if status, ok := c.ParseFlags(args); !ok {
		return status
	}
	var err error
	if cfg.Logger, err = cli.NewLogger(c.Stderr, logFormat, logLevel); err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		return c.Refuse(err)
	}
	if w := cfg.Warning(); w != "" {
		fmt.Fprintf(c.Stderr, "afloat serve: WARNING: %s\n", w)
	}
	ctx, stop := cli.Interruptible()
	defer stop()
	return c.Fail(web.Run(ctx, cfg))
}
