package drillcli

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/afloat/afloat/drill"
	"github.com/afloat/afloat/internal/cli"
	"github.com/afloat/afloat/quota/config"
	"github.com/afloat/afloat/sim"
)

// TokenEnv holds a drill's token when no --token-file names one.
const TokenEnv = "AFLOAT_DRILL_TOKEN"

// Run runs a drill until SIGINT or SIGTERM; the postmortem is
// written when it ends.
func Run(c *cli.Command, args []string) int {
	cfg := drill.DefaultConfig()
	var speed, tokenFile, postmortem, logFormat, logLevel string
	c.StringVar(&cfg.Addr, "listen", cfg.Addr, "`HOST:PORT` to serve the drill on (port 0: any free port); a loopback address unless --allow-remote")
	c.BoolVar(&cfg.AllowRemote, "allow-remote", false, "listen beyond loopback and answer any Host name: anyone who reaches the drill reads its metrics; needs a token of your own (--token-file)")
	c.StringVar(&cfg.Scenario, "scenario", cfg.Scenario, "`NAME` of the scenario: "+strings.Join(sim.ScenarioNames(), ", "))
	c.Var((*cli.Uint32)(&cfg.Seed), "seed", "seed of the run, `N` from 0 to 4294967295: the same seed and levers give the same drill")
	c.StringVar(&speed, "speed", cfg.Speed.String(), "wall time a simulated minute takes: a `DURATION` from 100ms to 10m, or realtime")
	c.StringVar(&tokenFile, "token-file", "", "`FILE` holding the token levers need (mode 0600; or set "+TokenEnv+"); on loopback without one the drill makes one and prints it")
	c.StringVar(&cfg.Console, "console", cfg.Console, "`URL` of the afloat console the postmortem's share link opens in")
	c.StringVar(&postmortem, "postmortem", "-", "`FILE` the postmortem is written to when the drill ends; - for standard output")
	c.StringVar(&logFormat, "log-format", "text", "log format: text or json")
	c.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	if status, ok := c.ParseFlags(args); !ok {
		return status
	}
	var err error
	if cfg.Speed, err = drill.ParseSpeed(speed); err != nil {
		return c.Refuse(err)
	}
	if cfg.Token, err = drillToken(tokenFile); err != nil {
		return c.Refuse(err)
	}
	made := cfg.Token == "" && !cfg.AllowRemote
	if made {
		cfg.Token = drill.NewToken()
	} else if cfg.Token == "" {
		return c.Refuse(fmt.Errorf("--allow-remote needs a token of your own to hand to the team: --token-file FILE or %s", TokenEnv))
	}
	if cfg.Logger, err = cli.NewLogger(c.Stderr, logFormat, logLevel); err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		return c.Refuse(err)
	}
	if w := cfg.Warning(); w != "" {
		fmt.Fprintf(c.Stderr, "afloat drill: WARNING: %s\n", w)
	}
	if made {
		fmt.Fprintf(c.Stderr, "afloat drill: levers need this drill's token; for afloat drill lever:\n  export %s=%s\n", TokenEnv, cfg.Token)
	}
	// The console follows a drill it is told of; say how, for the
	// facilitator who projects it.
	fmt.Fprintf(c.Stderr, "afloat drill: to project it: afloat serve --drill http://%s, then open %s/?drill=1\n", cfg.Addr, strings.TrimRight(cfg.Console, "/"))
	cfg.Postmortem = c.Stdout
	if postmortem != "-" {
		cfg.Postmortem = &laterFile{path: postmortem}
	}
	ctx, stop := cli.Interruptible()
	defer stop()
	return c.Fail(drill.Run(ctx, cfg), drill.ErrInvalidConfig)
}

// Lever pulls a lever of a running drill.
func Lever(c *cli.Command, args []string) int {
	var addr, tokenFile string
	c.StringVar(&addr, "addr", drill.DefaultConfig().Addr, "the drill's `HOST:PORT` (or http://HOST:PORT)")
	c.StringVar(&tokenFile, "token-file", "", "`FILE` holding the drill's token (or set "+TokenEnv+")")
	lever, status, ok := parseInterleaved(c, args)
	if !ok {
		return status
	}
	if len(lever) < 1 || len(lever) > 2 {
		return c.Refuse(errors.New("want a lever's NAME and its VALUE (no value for rollback and warmup); afloat drill lever --help lists them"))
	}
	token, err := drillToken(tokenFile)
	if err == nil && token == "" {
		err = fmt.Errorf("--token-file: want the drill's token in a FILE, or in %s (afloat drill prints it when it starts)", TokenEnv)
	}
	if err != nil {
		return c.Refuse(err)
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	value := ""
	if len(lever) == 2 {
		value = lever[1]
	}
	ctx, stop := cli.Interruptible()
	defer stop()
	p, err := drill.PullLever(ctx, &http.Client{Timeout: 10 * time.Second}, addr, token, lever[0], value)
	if err != nil {
		return c.Fail(err, drill.ErrInvalidLever, drill.ErrEnded, drill.ErrUnauthorized)
	}
	fmt.Fprintf(c.Stdout, "%s takes effect at %s (minute %d), in %s\n", strings.TrimSpace(string(p.Action.Control)+" "+valueText(p.Action)),
		p.Clock, p.Action.Minute, max(0, time.Until(p.At)).Round(100*time.Millisecond))
	return cli.ExitOK
}

// valueText writes an action's value as a command line would give it.
func valueText(a sim.Action) string {
	spec, _ := sim.LookupControl(a.Control)
	switch spec.Kind {
	case sim.KindPress:
		return ""
	case sim.KindBool:
		return fmt.Sprint(a.Bool())
	}
	return fmt.Sprint(a.Value)
}

// parseInterleaved parses flags given before, between or after the
// arguments (afloat drill lever fleet-floor 20 --addr …) and returns the
// arguments.
func parseInterleaved(c *cli.Command, args []string) (pos []string, status int, ok bool) {
	for {
		rest, status, ok := c.ParseArgs(args)
		if !ok {
			return nil, status, false
		}
		if len(rest) == 0 {
			return pos, cli.ExitOK, true
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// drillToken returns the token from the file, else from the environment,
// else "". A token file follows the quota's rule: mode 0600 or 0400.
func drillToken(tokenFile string) (string, error) {
	if tokenFile != "" {
		return config.ReadTokenFile("--token-file", tokenFile)
	}
	return strings.TrimSpace(os.Getenv(TokenEnv)), nil
}

// laterFile is a file created when first written: a drill stopped before
// its end leaves no empty postmortem behind.
type laterFile struct {
	path string
	f    *os.File
}

func (l *laterFile) Write(p []byte) (int, error) {
	if l.f == nil {
		f, err := os.Create(l.path)
		if err != nil {
			return 0, err
		}
		l.f = f
	}
	return l.f.Write(p)
}

// PrintLevers lists the levers, for the help of drill and drill lever.
func PrintLevers(w io.Writer) { sim.WriteControls(w) }

// Rules writes a rules file scaled to a drill's speed.
func Rules(c *cli.Command, args []string) int {
	var speed string
	c.StringVar(&speed, "speed", drill.DefaultConfig().Speed.String(), "the drill's speed: a `DURATION` a simulated minute, 100ms to 10m, or realtime")
	files, status, ok := parseInterleaved(c, args)
	if !ok {
		return status
	}
	if len(files) != 1 {
		return c.Refuse(errors.New("want one rules FILE (- for standard input), such as docs/drill-alerts.yml"))
	}
	d, err := drill.ParseSpeed(speed)
	if err != nil {
		return c.Refuse(err)
	}
	in, title, err := c.Open(files[0])
	if err != nil {
		return c.Refuse(err)
	}
	defer in.Close()
	raw, err := io.ReadAll(io.LimitReader(in, 16<<20))
	if err != nil {
		return c.Failed(fmt.Errorf("%s: %w", title, err))
	}
	out, err := drill.ScaleRules(raw, d)
	if err != nil {
		return c.Refuse(fmt.Errorf("%s: %w", title, err))
	}
	c.Stdout.Write(out) //nolint:errcheck
	return cli.ExitOK
}
