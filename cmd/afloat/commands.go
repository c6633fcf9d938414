package main

import (
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// commands is the command table: every command line afloat takes, in the
// order help lists them. Adding a subcommand is adding its entry here and
// writing its run function: the help texts, the dispatch and the refusals
// of a missing or unknown subcommand all follow from this table.
var commands = []entry{
	{path: "serve", run: runServe,
		synopsis: "afloat serve [--addr HOST:PORT [--allow-remote]] [--redis URL [--assign-pool NAME] [--assign-write]] [--log-format text|json] [--log-level debug|info|warn|error]",
		summary:  "serve the web console (the default: afloat with no command\nserves it on 127.0.0.1:8080)"},

	{path: "sim run", run: runSimRun, notes: printControls,
		synopsis: "afloat sim run --scenario NAME [--seed N] [--minutes M] [--noise=false]\n               [--actions FILE] [--format table|csv|jsonl]",
		summary:  "play an on-call scenario and print one frame per simulated minute"},
	{path: "sim scenarios", run: runSimScenarios,
		synopsis: "afloat sim scenarios [--format table|jsonl]",
		summary:  "list the scenarios and their briefings"},
	{path: "sim bots", run: runSimBots, notes: note("sim-bots"),
		synopsis: "afloat sim bots --scenario NAME [--seeds A-B] [--bots LIST] | --all | --shipped",
		summary:  "the bots' points over many seeds: do nothing, runbook, expert"},

	{path: "lab overload", run: runLabOverload, notes: printProfiles,
		synopsis: "afloat lab overload [--profile worldcup] [--inside 100 --outside 100 [--adaptive] | --threads 20] [--compare] [--format table|csv|jsonl] | --game game1 [--periods 12]",
		summary:  "the overload lab: a server's death after a peak, and the bulkhead"},

	{path: "bench bulkhead", run: runBenchBulkhead, notes: note("bench-bulkhead"),
		synopsis: "afloat bench bulkhead [--short] [--modes LIST] [--work 10ms] [--deadline 100ms] [--json] | --soak 10m [--soak-every 10s] [--soak-load 10] [--soak-mode M]",
		summary:  "compare overload protections over real HTTP on loopback"},

	{path: "assign add", run: runAssignAdd,
		synopsis: "afloat assign add     --redis URL --pool NAME [--count N | --at-minimum] MEMBER...",
		summary:  "add members to a pool"},
	{path: "assign remove", run: runAssignRemove,
		synopsis: "afloat assign remove  --redis URL --pool NAME MEMBER...",
		summary:  "take members out of a pool, keeping their counts"},
	{path: "assign restore", run: runAssignRestore,
		synopsis: "afloat assign restore --redis URL --pool NAME [--policy current-minimum|keep-history|zero] MEMBER...",
		summary:  "bring removed members back"},
	{path: "assign list", run: runAssignList,
		synopsis: "afloat assign list    --redis URL --pool NAME [--format table|jsonl]",
		summary:  "list a pool's members and counts"},
	{path: "assign pick", run: runAssignPick,
		synopsis: "afloat assign pick    --redis URL --pool NAME [--n N] [--id REQUEST-ID]",
		summary:  "pick the least-used member"},
	{path: "assign bench", run: runAssignBench, notes: note("assign-bench"),
		synopsis: "afloat assign bench   --redis URL [--pool-size 100] [--workers 50] [--duration 10s] [--batch 0,16] [--peer]",
		summary:  "measure picks a second, beside redis-benchmark"},

	{path: "proxy check", run: runProxyCheck,
		synopsis: "afloat proxy check --probe URL [--timeout 5s] [--concurrency 16]\n                   [--redis URL --pool NAME [--policy P]] FILE",
		summary:  "probe candidate proxies from a list (and update a pool)"},

	{path: "quota chaos", run: runQuotaChaos, notes: note("quota-chaos"),
		synopsis: "afloat quota chaos --seed S [--mode hard|best-effort] [--duration 10m]\n                   [--faults shift,partition,crash,skew,dup] [--log FILE]\nafloat quota chaos --seeds A-B [--workers N] [flags]",
		summary:  "the global quota under faults in virtual time, checked: a\nJSON-lines event log, then a one-line JSON summary"},
	{path: "quota sim", run: runQuotaSim, notes: note("quota-chaos"),
		synopsis: "afloat quota sim   --seed S [--mode ...] [--step 1s] [flags]",
		summary:  "the same run as CSV of offered and admitted tokens per region\nper step, ready to plot"},
	{path: "quota check", run: runQuotaCheck, notes: note("quota-check"),
		synopsis: "afloat quota check FILE...",
		summary:  "check event logs — quota chaos --log's, or several processes'\n--event-log files, merged by time"},
	{path: "quota tenants", run: runQuotaTenants,
		synopsis: "afloat quota tenants list|get|create|update|delete --coordinator URLS --token-file FILE\n                     [--name NAME] [--version V] [--rate R] [--burst B] [--mode hard|best-effort]\n                     [--emergency E] [--lease 10s] [--skew-margin 500ms] [--regions LIST]",
		summary:  "an operator's tenants at the coordinator: list, get, create,\nupdate, delete (docs/quota.md, \"Tenants\")"},
	{path: "quota coordinator", run: runQuotaCoordinator,
		synopsis: "afloat quota coordinator --listen ADDR --config FILE [--etcd ENDPOINTS | --data-dir DIR] [--event-log FILE]\n                         [--advertise URL] [--host NAME]...",
		summary:  "the lease coordinator as a service: on etcd (--etcd), or an\nembedded single-member etcd in --data-dir; run several for failover"},
	{path: "quota region", run: runQuotaRegion,
		synopsis: "afloat quota region --name NAME --coordinator ADDRS --listen ADDR [--allow-remote] [--host NAME]...\n                   --config FILE [--event-log FILE] [--grpc-listen ADDR] [--upstream URL [--proxy-listen ADDR]]",
		summary:  "a region agent: the lock-free limiter, renewing over the\nnetwork, and a local decision API (POST /v1/allow); Envoy's\nrate-limit service (--grpc-listen) and a reverse proxy (--upstream)"},
	// quota etcd runs one embedded etcd member; the end-to-end test starts
	// three, each in a process of its own. Not in the help: the zero-setup
	// path is quota coordinator without --etcd, and a real cluster is
	// deployed with etcd's own tools.
	{path: "quota etcd", run: runQuotaEtcd, hidden: true,
		synopsis: "afloat quota etcd --name N --data-dir DIR [--client-url URL] [--peer-url URL] [--initial-cluster N=URL,...]"},
}

// groups holds the nouns of the commands whose subcommands are not
// called "subcommands". A group's paragraph in its help, if it has one, is
// help/<group>.txt.
var groups = map[string]string{"lab": "lab", "bench": "benchmark"}

// helpFiles holds the longer help texts: a group's paragraph, a
// command's notes.
//
//go:embed help
var helpFiles embed.FS

// helpText returns help/name.txt, or "" when there is none.
func helpText(name string) string {
	b, _ := helpFiles.ReadFile("help/" + name + ".txt")
	return string(b)
}

// note returns the notes of a command: help/name.txt after a blank line.
func note(name string) func(io.Writer) {
	return func(w io.Writer) { fmt.Fprint(w, "\n"+helpText(name)) }
}

// An entry is one command line of the table.
type entry struct {
	path     string          // the words that select it: "serve", "sim run"
	synopsis string          // its usage, one line or more, shown by its help and its group's
	summary  string          // what it does, for the lists of help, one line or more
	notes    func(io.Writer) // more help after the flags, or nil
	run      func(c *command, args []string) int
	hidden   bool // left out of the lists of help (it still has its own --help)
}

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1 // the command failed while running
	exitUsage = 2 // the command line or an input file was refused
)

// run is main without the process: it returns the exit status, so tests
// can call it.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	std := stdio{stdin, stdout, stderr}
	if len(args) == 0 {
		return find("serve").start(nil, std)
	}
	name, rest := args[0], args[1:]
	if isHelp(name) {
		writeUsage(stdout)
		return exitOK
	}
	if e := find(name); e != nil {
		return e.start(rest, std)
	}
	subs := subcommands(name)
	if len(subs) == 0 {
		fmt.Fprintf(stderr, "afloat: unknown command %q\n\n", name)
		writeUsage(stderr)
		return exitUsage
	}
	noun := cmp.Or(groups[name], "subcommand")
	switch {
	case len(rest) == 0:
		fmt.Fprintf(stderr, "afloat %s: missing %s\n\n", name, noun)
		writeGroupUsage(stderr, name, subs)
		return exitUsage
	case isHelp(rest[0]):
		writeGroupUsage(stdout, name, subs)
		return exitOK
	}
	if e := find(name + " " + rest[0]); e != nil {
		return e.start(rest[1:], std)
	}
	fmt.Fprintf(stderr, "afloat %s: unknown %s %q\n\n", name, noun, rest[0])
	writeGroupUsage(stderr, name, subs)
	return exitUsage
}

func isHelp(arg string) bool {
	return arg == "help" || arg == "-h" || arg == "-help" || arg == "--help"
}

// find returns the entry of path, or nil.
func find(path string) *entry {
	for i := range commands {
		if commands[i].path == path {
			return &commands[i]
		}
	}
	return nil
}

// subcommands returns the entries under the command name, in table order.
func subcommands(name string) []*entry {
	var subs []*entry
	for i := range commands {
		if strings.HasPrefix(commands[i].path, name+" ") && !commands[i].hidden {
			subs = append(subs, &commands[i])
		}
	}
	return subs
}

// start runs the entry on the arguments after its path.
func (e *entry) start(args []string, std stdio) int {
	fs := flag.NewFlagSet(e.path, flag.ContinueOnError)
	fs.Usage = func() {} // help is printed by parse, to stdout, only when asked for
	return e.run(&command{FlagSet: fs, entry: e, stdio: std}, args)
}

// writeUsage prints afloat's help: every command of the table.
func writeUsage(w io.Writer) {
	fmt.Fprint(w, `afloat keeps a web service up under load.

Usage:
  afloat [command] [subcommand] [flags]

Commands:
`)
	width := len("help")
	for _, e := range commands {
		width = max(width, len(e.path))
	}
	for _, e := range commands {
		if !e.hidden {
			writeItem(w, width, e.path, e.summary)
		}
	}
	writeItem(w, width, "help", "print this help")
	fmt.Fprint(w, "\nRun 'afloat <command> --help' for a command's flags.\n")
}

// writeGroupUsage prints the help of a command with subcommands.
func writeGroupUsage(w io.Writer, name string, subs []*entry) {
	fmt.Fprint(w, "Usage:\n")
	for _, e := range subs {
		writeIndented(w, e.synopsis)
	}
	if about := helpText(name); about != "" {
		fmt.Fprintf(w, "\n%s", about)
	}
	noun := cmp.Or(groups[name], "subcommand")
	fmt.Fprintf(w, "\n%s%ss:\n", strings.ToUpper(noun[:1]), noun[1:])
	width := 0
	for _, e := range subs {
		width = max(width, len(e.path)-len(name)-1)
	}
	for _, e := range subs {
		writeItem(w, width, e.path[len(name)+1:], e.summary)
	}
	fmt.Fprintf(w, "\nRun 'afloat %s <%s> --help' for its flags.\n", name, noun)
}

// writeItem prints a name and its summary in two columns, the summary's
// later lines under its first.
func writeItem(w io.Writer, width int, name, summary string) {
	pad := strings.Repeat(" ", width+5)
	fmt.Fprintf(w, "  %-*s   %s\n", width, name, strings.ReplaceAll(summary, "\n", "\n"+pad))
}

// writeIndented prints text indented by two spaces, line by line.
func writeIndented(w io.Writer, text string) {
	for _, line := range strings.Split(text, "\n") {
		fmt.Fprintf(w, "  %s\n", line)
	}
}

// stdio is where a command reads and writes.
type stdio struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// command is a running entry: its flag set, its help and its standard
// streams. Run functions add their flags, then parse.
type command struct {
	*flag.FlagSet
	entry *entry
	stdio
}

// parse parses args, which must hold flags only. It returns false when the
// command should stop, with the status to exit with: 0 after printing help
// to stdout, 2 after printing a usage error to stderr.
func (c *command) parse(args []string) (int, bool) {
	rest, status, ok := c.parseArgs(args)
	if ok && len(rest) > 0 {
		return c.usage(fmt.Errorf("unexpected argument %q", rest[0])), false
	}
	return status, ok
}

// parseArgs is parse for commands that take arguments after their flags:
// it returns them.
func (c *command) parseArgs(args []string) ([]string, int, bool) {
	c.SetOutput(io.Discard) // the error is printed below, once
	err := c.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(c.stdout, "Usage:\n")
		writeIndented(c.stdout, c.entry.synopsis)
		fmt.Fprint(c.stdout, "\nFlags:\n")
		c.SetOutput(c.stdout)
		c.PrintDefaults()
		if c.entry.notes != nil {
			c.entry.notes(c.stdout)
		}
		return nil, exitOK, false
	case err != nil:
		return nil, c.usage(err), false
	}
	return c.Args(), exitOK, true
}

// given reports whether the command line set the flag, to tell a flag
// given its zero value from one left out.
func (c *command) given(name string) bool {
	found := false
	c.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// usage prints a refused command line and returns exitUsage.
func (c *command) usage(err error) int {
	fmt.Fprintf(c.stderr, "afloat %s: %v\nRun 'afloat %s --help' for usage.\n", c.Name(), err, c.Name())
	return exitUsage
}

// failed prints an error met while running and returns exitError.
func (c *command) failed(err error) int {
	fmt.Fprintf(c.stderr, "afloat %s: %v\n", c.Name(), err)
	return exitError
}

// interruptible returns a context that ends at SIGINT or SIGTERM, so that
// a running command stops cleanly on Ctrl-C; stop releases the signals.
func interruptible() (ctx context.Context, stop context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// notWith refuses each of others given with flag, which makes them moot.
func (c *command) notWith(flag, why string, others ...string) error {
	for _, o := range others {
		if c.given(flag) && c.given(o) {
			return fmt.Errorf("--%s does not go with --%s%s", o, flag, why)
		}
	}
	return nil
}

// onlyWith refuses each of others given without flag, which they need.
func (c *command) onlyWith(flag string, others ...string) error {
	for _, o := range others {
		if !c.given(flag) && c.given(o) {
			return fmt.Errorf("--%s only with --%s", o, flag)
		}
	}
	return nil
}

// noZero refuses an explicit 0 in flags whose package reads 0 as its
// default: typed on a command line, it is a slip, not a request for the
// default.
func (c *command) noZero(names ...string) error {
	for _, n := range names {
		if v := c.Lookup(n).Value.String(); c.given(n) && (v == "0" || v == "0s") {
			return fmt.Errorf("--%s %s: want more than 0; leave it out for the default", n, v)
		}
	}
	return nil
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(v)
}

// fail returns exitOK for nil; else it prints the error: a refusal of the
// input, exit 2, when it is one of refusals (errors.Is); else a failure
// while running, exit 1.
func (c *command) fail(err error, refusals ...error) int {
	if err == nil {
		return exitOK
	}
	for _, r := range refusals {
		if errors.Is(err, r) {
			return c.usage(err)
		}
	}
	return c.failed(err)
}
