package main

import (
	"embed"
	"fmt"
	"io"

	"github.com/afloat/afloat/cmd/afloat/internal/assigncli"
	"github.com/afloat/afloat/cmd/afloat/internal/drillcli"
	"github.com/afloat/afloat/internal/cli"
)

// afloat is the program: its command table and what its help says around
// it. The machinery (dispatch, help pages, refusals) is package cli's.
var afloat = &cli.Program{
	Name:       "afloat",
	About:      "afloat keeps a web service up under load.",
	Default:    "serve",
	Commands:   commands,
	Nouns:      groups,
	GroupAbout: helpText,
}

// run is main without the process: it returns the exit status, so tests
// can call it.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return afloat.Run(args, stdin, stdout, stderr)
}

// commands is the command table: every command line afloat takes, in the
// order help lists them. Adding a subcommand is adding its entry here and
// writing its run function: the help texts, the dispatch and the refusals
// of a missing or unknown subcommand all follow from this table.
var commands = []cli.Entry{
	{Path: "serve", Run: runServe,
		Synopsis: "afloat serve [--addr HOST:PORT [--allow-remote]] [--redis URL [--assign-pool NAME] [--assign-write]] [--log-format text|json] [--log-level debug|info|warn|error]",
		Summary:  "serve the web console (the default: afloat with no command\nserves it on 127.0.0.1:8080)"},

	{Path: "sim run", Run: runSimRun, Notes: printControls,
		Synopsis: "afloat sim run --scenario NAME [--seed N] [--minutes M] [--noise=false]\n               [--actions FILE] [--format table|csv|jsonl]",
		Summary:  "play an on-call scenario and print one frame per simulated minute"},
	{Path: "sim scenarios", Run: runSimScenarios,
		Synopsis: "afloat sim scenarios [--format table|jsonl]",
		Summary:  "list the scenarios and their briefings"},
	{Path: "sim bots", Run: runSimBots, Notes: note("sim-bots"),
		Synopsis: "afloat sim bots --scenario NAME [--seeds A-B] [--bots LIST] | --all | --shipped",
		Summary:  "the bots' points over many seeds: do nothing, runbook, expert"},

	{Path: "drill", Run: drillcli.Run, Notes: drillNotes,
		Synopsis: "afloat drill [--listen HOST:PORT [--allow-remote]] [--scenario NAME] [--seed N] [--speed 5s|realtime]\n             [--token-file FILE] [--console URL] [--postmortem FILE]",
		Summary:  "run a scenario as a live service for your own Prometheus and\nAlertmanager: /metrics, levers, a postmortem at the end"},
	{Path: "drill lever", Run: drillcli.Lever, Notes: drillNotes,
		Synopsis: "afloat drill lever [--addr HOST:PORT] [--token-file FILE] NAME [VALUE]",
		Summary:  "pull a lever of a running drill (rollback, fleet-floor 20, …)"},
	{Path: "drill rules", Run: drillcli.Rules,
		Synopsis: "afloat drill rules [--speed 5s|realtime] FILE",
		Summary:  "a Prometheus rules file with its windows scaled to a drill's\nspeed (docs/drill-alerts.yml's [1h] is [5m] at 5 s a minute)"},

	{Path: "lab overload", Run: runLabOverload, Notes: printProfiles,
		Synopsis: "afloat lab overload [--profile worldcup] [--inside 100 --outside 100 [--adaptive] | --threads 20] [--compare] [--format table|csv|jsonl] | --game game1 [--periods 12]",
		Summary:  "the overload lab: a server's death after a peak, and the bulkhead"},

	{Path: "bench bulkhead", Run: runBenchBulkhead, Notes: note("bench-bulkhead"),
		Synopsis: "afloat bench bulkhead [--short] [--modes LIST] [--work 10ms] [--deadline 100ms] [--json] | --soak 10m [--soak-every 10s] [--soak-load 10] [--soak-mode M]",
		Summary:  "compare overload protections over real HTTP on loopback"},

	{Path: "assign add", Run: assigncli.Members("add"),
		Synopsis: "afloat assign add     --redis URL --pool NAME [--count N | --at-minimum] [--weight W] MEMBER...",
		Summary:  "add members to a pool"},
	{Path: "assign remove", Run: assigncli.Members("remove"),
		Synopsis: "afloat assign remove  --redis URL --pool NAME MEMBER...",
		Summary:  "take members out of a pool, keeping their counts"},
	{Path: "assign restore", Run: assigncli.Members("restore"),
		Synopsis: "afloat assign restore --redis URL --pool NAME [--policy current-minimum|keep-history|zero] MEMBER...",
		Summary:  "bring removed members back"},
	{Path: "assign list", Run: assigncli.List,
		Synopsis: "afloat assign list    --redis URL --pool NAME [--format table|jsonl]",
		Summary:  "list a pool's members and counts"},
	{Path: "assign cooldown", Run: assigncli.Cooldown,
		Synopsis: "afloat assign cooldown --redis URL --pool NAME --for DURATION MEMBER...",
		Summary:  "put members aside for a while: no pick gets them until then"},
	{Path: "assign limit", Run: assigncli.Limit,
		Synopsis: "afloat assign limit  --redis URL --pool NAME [--rate N [--per 1s|1m] [--burst B] | --clear] [--concurrency N] MEMBER...",
		Summary:  "give members a rate limit or a cap on leases in flight: picks skip a member with no room"},
	{Path: "assign status", Run: assigncli.Status,
		Synopsis: "afloat assign status  --redis URL --pool NAME [--format table|json]",
		Summary:  "a pool's counts, weights, streaks, cooldowns and settings"},
	{Path: "assign settings", Run: assigncli.Settings,
		Synopsis: "afloat assign settings --redis URL --pool NAME [--evict-after N] [--last-resort fail|earliest]",
		Summary:  "set when failures evict a member, and what a pick does when all cool"},
	{Path: "assign pick", Run: assigncli.Pick,
		Synopsis: "afloat assign pick    --redis URL --pool NAME [--n N] [--id REQUEST-ID | --sticky KEY | --lease DURATION]",
		Summary:  "pick the least-used member (with --lease: that has room, and lease it)"},
	{Path: "assign acquire", Run: assigncli.Acquire,
		Synopsis: "afloat assign acquire --redis URL --pool NAME --ttl DURATION",
		Summary:  "lease the member with the fewest leases open (least in flight)"},
	{Path: "assign release", Run: assigncli.Release,
		Synopsis: "afloat assign release --redis URL --pool NAME [--member MEMBER] LEASE-ID...",
		Summary:  "end leases that acquire (or, with --member, pick --lease) gave"},
	{Path: "assign leases", Run: assigncli.Leases,
		Synopsis: "afloat assign leases  --redis URL --pool NAME [--format table|json]\nafloat assign leases  --redis URL --pool NAME --add|--remove MEMBER...",
		Summary:  "show the leases open on each member, or change who can be leased"},
	{Path: "assign bench", Run: assigncli.Bench, Notes: note("assign-bench"),
		Synopsis: "afloat assign bench   --redis URL [--pool-size 100] [--workers 50] [--duration 10s] [--batch 0,16] [--peer]",
		Summary:  "measure picks a second, beside redis-benchmark"},

	{Path: "proxy check", Run: assigncli.ProxyCheck,
		Synopsis: "afloat proxy check --probe URL [--timeout 5s] [--concurrency 16]\n                   [--redis URL --pool NAME [--policy P]] FILE",
		Summary:  "probe candidate proxies from a list (and update a pool)"},

	{Path: "quota chaos", Run: runQuotaChaos, Notes: note("quota-chaos"),
		Synopsis: "afloat quota chaos --seed S [--mode hard|best-effort] [--duration 10m]\n                   [--faults shift,partition,crash,skew,dup] [--log FILE]\nafloat quota chaos --seeds A-B [--workers N] [flags]",
		Summary:  "the global quota under faults in virtual time, checked: a\nJSON-lines event log, then a one-line JSON summary"},
	{Path: "quota sim", Run: runQuotaSim, Notes: note("quota-chaos"),
		Synopsis: "afloat quota sim   --seed S [--mode ...] [--step 1s] [flags]",
		Summary:  "the same run as CSV of offered and admitted tokens per region\nper step, ready to plot"},
	{Path: "quota check", Run: runQuotaCheck, Notes: note("quota-check"),
		Synopsis: "afloat quota check FILE...",
		Summary:  "check event logs — quota chaos --log's, or several processes'\n--event-log files, merged by time"},
	{Path: "quota tenants", Run: runQuotaTenants,
		Synopsis: "afloat quota tenants list|get|create|update|delete --coordinator URLS --token-file FILE\n                     [--name NAME] [--version V] [--rate R] [--burst B] [--mode hard|best-effort]\n                     [--emergency E] [--lease 10s] [--skew-margin 500ms] [--regions LIST]",
		Summary:  "an operator's tenants at the coordinator: list, get, create,\nupdate, delete (docs/quota/operations.md, \"Tenants\")"},
	{Path: "quota coordinator", Run: runQuotaCoordinator,
		Synopsis: "afloat quota coordinator --listen ADDR --config FILE [--etcd ENDPOINTS | --data-dir DIR] [--event-log FILE]\n                         [--event-log-max-mb 256] [--event-log-keep 16] [--advertise URL] [--host NAME]...\n                         [--metrics-tenants NAMES]",
		Summary:  "the lease coordinator as a service: on etcd (--etcd), or an\nembedded single-member etcd in --data-dir; run several for failover"},
	{Path: "quota backup", Run: runQuotaBackup,
		Synopsis: "afloat quota backup --config FILE (--etcd ENDPOINTS | --data-dir DIR) --out FILE",
		Summary:  "save an etcd snapshot of the ledger's etcd (as etcdctl\nsnapshot save does), for quota restore\n(docs/quota/operations.md, \"Backup and restore\")"},
	{Path: "quota restore", Run: runQuotaRestore,
		Synopsis: "afloat quota restore --config FILE (--etcd ENDPOINTS | --data-dir DIR) --snapshot FILE [--wait D]",
		Summary:  "write the ledger of an etcd snapshot back, every coordinator\nstopped; the next leader waits out the leases the snapshot may\nlack before it grants\n(docs/quota/operations.md, \"Backup and restore\")"},
	{Path: "quota region", Run: runQuotaRegion,
		Synopsis: "afloat quota region --name NAME --coordinator ADDRS --listen ADDR [--allow-remote] [--host NAME]...\n                   --config FILE [--event-log FILE [--event-log-interval 1s | --event-log-lines]\n                   [--event-log-max-mb 256] [--event-log-keep 16]] [--grpc-listen ADDR] [--upstream URL [--proxy-listen ADDR]]\n                   [--metrics-tenants NAMES] [--metrics-top N]",
		Summary:  "a region agent: the lock-free limiter, renewing over the\nnetwork, and a local decision API (POST /v1/allow); Envoy's\nrate-limit service (--grpc-listen) and a reverse proxy (--upstream)"},
	// quota etcd runs one embedded etcd member (a binary built with -tags
	// embedetcd); three of them, each in a process of its own, are a
	// cluster (docs/quota/operations.md, "An etcd cluster of afloat's own").
	{Path: "quota etcd", Run: runQuotaEtcd,
		Synopsis: "afloat quota etcd --name N --data-dir DIR [--client-url URL] [--peer-url URL] [--initial-cluster N=URL,...]",
		Summary:  "one member of an etcd cluster for the coordinators, embedded\n(a binary built with -tags embedetcd); it says when it is ready"},

	{Path: "version", Run: runVersion,
		Synopsis: "afloat version   (or afloat --version)",
		Summary:  "print afloat's version, the commit it was built from and the Go version"},
}

// runVersion prints the build's version (cli.BuildVersion).
func runVersion(c *cli.Command, args []string) int {
	if status, ok := c.ParseFlags(args); !ok {
		return status
	}
	fmt.Fprintln(c.Stdout, "afloat", cli.BuildVersion())
	return cli.ExitOK
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

// drillNotes are the notes of drill and drill lever: help/drill.txt, then
// the levers.
func drillNotes(w io.Writer) {
	note("drill")(w)
	drillcli.PrintLevers(w)
}

// note returns the notes of a command: help/name.txt after a blank line.
func note(name string) func(io.Writer) {
	return func(w io.Writer) { fmt.Fprint(w, "\n"+helpText(name)) }
}
