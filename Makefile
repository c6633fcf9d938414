# Two tiers of tests, both run by CI (.ci/run):
#
# make test is what a contributor runs on every change, under three
# minutes on a two-core machine with warm caches (docs/benchmarks.md): vet, the gofmt check,
# staticcheck, the go mod tidy check, the 386 and arm64 builds, the
# boundaries and litter checks, the alert rules' tests (promtool), and every unit test (with -short): the
# race detector on every package that runs goroutines, the models'
# deterministic simulations without it (plus a small -race test of the
# models' own goroutine code), the mutation checks (built with the tag
# mutation, which plants the deliberate faults), the embedded-etcd tests,
# and the browser tests side by side without -race (the server code they
# drive is under -race in the web package's other tests). Nothing in it is
# timed on the wall clock.
#
# make test-long adds what takes minutes or holds real processes on the
# wall clock: the tests that skip under -short (multi-process clusters,
# soaks, load under faults; TestQuotaEndToEnd among them), the models
# under the race detector, and the 120-seed chaos sweep.

GO ?= go

# Every go command here builds with -trimpath: a compiled package's key in
# the build cache then leaves out the folder it was built in, so that a new
# clone or worktree reuses what another one compiled (without it, a clean
# clone recompiled every package of afloat in every variant: race,
# embedetcd, mutation, 386, arm64 — about a hundred CPU-seconds for the
# race group alone on two cores; docs/benchmarks.md, "make test").
export GOFLAGS += -trimpath

# apt-get needs root: use sudo when we are not root.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_INSTALL := $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends

# Tools are installed once per machine, into the user's cache, under a name
# that carries the version: a new pin installs the new one beside the old.
TOOLS := $(HOME)/.cache/afloat/bin
# Binaries the process tests run, built once per make run into the clone's
# .build/ (ignored by git) and handed to the tests by environment.
BUILD := $(CURDIR)/.build

.PHONY: test test-long deps deps-etcd deps-alertmanager vet fmt-check lint tidy-check cross-build boundaries litter alerts unit unit-race unit-redis unit-models unit-etcd unit-browser long fuzz bench bench-assign bench-quota bench-quota-peers bench-quota-scale check-quota-peers soak

# The checks and the five groups of unit tests run side by side (make -j,
# each one's output printed whole when it ends): the browser tests wait on
# Chromium, the etcd tests on etcd, and the rest fills the cores meanwhile.
# The longest starts first, and everything but the browser tests runs
# under nice (NICE): the browser tests' pages run on the wall clock (the
# game, the polling labs), so Chromium's work grows with every second the
# other groups take from it, while theirs does not. On two cores the suite
# took about a tenth less time so (docs/benchmarks.md, "make test").
CHECKS := vet fmt-check lint tidy-check cross-build boundaries litter alerts
UNITS := unit-browser unit-race unit-redis unit-models unit-etcd
test: export NICE := nice -n 10
test: deps
	@mkdir -p $(BUILD)
	@$(MAKE) --no-print-directory -j 6 $(addprefix group-,$(UNITS) $(CHECKS))

# group-X runs the target X for make test: a line when it starts, its
# output whole (kept in .build/test-X.log) and a line when it ends, with
# its time — so that a long run says what it is doing while it does it,
# and the groups' outputs, run side by side, never interleave.
group-%:
	@echo "make test: $* started"
	@start=$$(date +%s); if $(MAKE) --no-print-directory $* > $(BUILD)/test-$*.log 2>&1; then \
		cat $(BUILD)/test-$*.log; echo "make test: $* passed in $$(( $$(date +%s) - start )) s"; \
	else \
		cat $(BUILD)/test-$*.log; echo "make test: $* FAILED after $$(( $$(date +%s) - start )) s (its output above, and in .build/test-$*.log)"; exit 1; \
	fi
test-long: deps deps-etcd deps-alertmanager long

# deps installs what the tests need when it is missing: Debian's
# chromium-headless-shell for the console's browser tests, unless a
# chromium is installed already (the tests take any; Chromium's
# headless mode alone: the same engine as the chromium package without
# the desktop browser; the browser tests took a quarter less time with
# it), Debian's redis-server (which brings redis-benchmark and
# redis-cli with redis-tools) for the tests of assign/, each of which
# starts a server of its own on a free loopback port, and Debian's
# prometheus package for its promtool, which tests the quota's and the
# drill's alert rules (alerts, and TestAlertRulesMutation) and the
# drill's /metrics (TestDrillMetrics). The package also enables a
# systemd unit; nothing here uses it.
deps:
	@command -v $(GO) >/dev/null || { echo "make test: Go is not on PATH (https://go.dev/dl/)"; exit 1; }
	@if ! command -v chromium-headless-shell >/dev/null 2>&1 && ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then \
		echo "make test: installing chromium-headless-shell for the browser tests"; \
		$(SUDO) apt-get update -q && $(APT_INSTALL) chromium-headless-shell; \
	fi
	@if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-benchmark >/dev/null 2>&1; then \
		echo "make test: installing redis-server for the assignment tests"; \
		$(SUDO) apt-get update -q && $(APT_INSTALL) redis-server redis-tools; \
	fi
	@if ! command -v promtool >/dev/null 2>&1; then \
		echo "make test: installing prometheus (for promtool) for the alert rules' tests"; \
		$(SUDO) apt-get update -q && $(APT_INSTALL) prometheus; \
	fi

# deps-etcd installs Debian's etcd-server when no etcd is on PATH, for
# make test-long only: TestQuotaSurvivesEtcdElections runs a 3-member
# cluster of it with etcd's stock timeouts (docs/quota/design.md, "etcd's
# own leader elections"). The package also enables a systemd unit; the tests
# start members of their own on free loopback ports and never use it.
deps-etcd:
	@if ! command -v etcd >/dev/null 2>&1; then \
		echo "make test-long: installing etcd-server for the etcd election test"; \
		$(SUDO) apt-get update -q && $(APT_INSTALL) etcd-server; \
	fi

# deps-alertmanager installs Debian's prometheus-alertmanager when it is
# missing, for make test-long only: TestDrillAlertsEndToEnd runs it beside
# Debian's prometheus (make deps installs that one, for promtool) against
# afloat drill. The package also enables a systemd unit; the test starts
# one of its own on a free loopback port, clustering off.
deps-alertmanager:
	@if ! command -v prometheus-alertmanager >/dev/null 2>&1; then \
		echo "make test-long: installing prometheus-alertmanager for the drill's end-to-end test"; \
		$(SUDO) apt-get update -q && $(APT_INSTALL) prometheus-alertmanager; \
	fi

# vet checks every build-tag set: the quota's embedded etcd is behind the
# tag embedetcd (docs/quota/operations.md, "Build"), and the deliberate faults of the
# chaos harness's mutation checks behind the tag mutation (MUTATION).
vet:
	$(NICE) $(GO) vet ./...
	$(NICE) $(GO) vet -tags embedetcd ./quota/... ./cmd/...
	$(NICE) $(GO) vet -tags mutation ./quota/...

fmt-check:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# staticcheck, pinned: 2026.2.2 (module version v0.8.2), the newest release
# the Go module proxy serves for Go 1.26. It checks both tag sets, one run
# each (from its cache, two runs take less than one -matrix run); it is
# installed once per machine into $(TOOLS).
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(TOOLS)/staticcheck-$(STATICCHECK_VERSION)

lint: $(STATICCHECK)
	$(NICE) $(STATICCHECK) ./...
	$(NICE) $(STATICCHECK) -tags embedetcd ./...
	$(NICE) $(STATICCHECK) -tags mutation ./quota/...

$(STATICCHECK):
	@echo "make test: installing staticcheck $(STATICCHECK_VERSION) into $(TOOLS)"
	@mkdir -p $(TOOLS)
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(TOOLS)/staticcheck $@

# tidy-check fails when go mod tidy would change go.mod or go.sum, and
# prints the change; it changes nothing itself. bench/quotascale is a
# module of its own whose go.mod must follow this one's (it replaces
# afloat with ../..): a change here that it does not follow fails here.
# bench/quotapeers follows it too, but its module graph is Gubernator's
# and envoyproxy/ratelimit's, which make test should not have to
# download (it must pass offline once the module cache is warm): make
# check-quota-peers checks it.
tidy-check:
	$(GO) mod tidy -diff
	cd bench/quotascale && $(GO) mod tidy -diff

# cross-build compiles every package, the command's too, for a 32-bit and
# an ARM target, where int is 32 bits or the assembly differs: go list
# -export runs the compiler on each (and prints its errors) without the
# link, which checks nothing more here (afloat has no assembly) and cost
# seven CPU-seconds a run.
cross-build:
	$(NICE) env GOARCH=386 $(GO) list -export -f '{{.ImportPath}}' ./... >/dev/null
	$(NICE) env GOARCH=arm64 $(GO) list -export -f '{{.ImportPath}}' ./... >/dev/null

# boundaries keeps the models and the pure cores free of I/O and of what
# peers bring (ARCHITECTURE.md: models import no I/O; importing a model
# must not import os/exec or a peer library): their imports are the
# standard library and afloat's own packages only — no Prometheus, no
# failsafe-go or Gubernator, no etcd or gRPC — and of the standard
# library not os/exec, net or net/http. A folder of BOUNDED that does not
# exist (yet) is skipped. internal/conventions' TestBoundariesInSource
# checks the same packages' source for the wall clock and global
# randomness. The build is also free of runtime tricks (no go:linkname).
BOUNDED := sim sim/bots overload bulkhead quota quota/chaos quota/region quota/coordinator quota/eventlog \
	internal/heap internal/rng internal/vclock internal/queueing
# The net/http middleware of a bounded package lives in a package of its
# own beside it (bulkhead/bulkheadhttp, quota/region/regionhttp), so that
# no package here needs an exception.
boundaries:
	@deps=$$($(GO) list -f '{{.ImportPath}}{{range .Deps}} {{.}}{{end}}' $(foreach d,$(BOUNDED),$(if $(wildcard $(d)/*.go),./$(d)))) || exit 1; \
	echo "$$deps" | awk '{ k = 0; list = ""; for (i = 2; i <= NF; i++) { d = $$i; \
		if (d == "os/exec" || d == "net" || d == "net/http" || (d ~ /^[^\/]*\./ && d !~ /^github\.com\/afloat\/afloat(\/|$$)/)) { \
			if (++k <= 4) list = list " " d } } \
	  if (k > 0) { print $$1 " imports" list (k > 4 ? " and " k - 4 " more" : ""); bad = 1 } } \
	END { exit bad }' || { echo "make boundaries: a model or pure core imports what it must not; go list -deps -f '{{.ImportPath}}: {{.Imports}}' PKG shows through what"; exit 1; }
	@if grep -rn --include='*.go' 'go:linkname' .; then echo "go:linkname is not allowed"; exit 1; fi

# alerts runs the unit tests of the quota's and the drill's alert rules
# in Prometheus's own format (docs/quota/operations.md, "Alerts and
# runbook"; docs/drill.md, "Alerts"); it fails, not skips, without
# promtool. The TestAlertRulesMutation of each (unit-race) shows that
# these tests fail when a rule is broken.
alerts:
	@command -v promtool >/dev/null || { echo "make alerts: promtool is not on PATH (Debian's prometheus package; make deps installs it)"; exit 1; }
	promtool test rules docs/quota-alerts.test.yml
	promtool test rules docs/drill-alerts.test.yml docs/drill-alerts-slow.test.yml

# litter fails on a tracked file over 1 MB that is not listed on purpose
# in .ci/large-files (build outputs belong in .gitignore: every clone
# carries a committed binary forever).
litter:
	@big=$$(git ls-files -z | xargs -0 -r stat -c '%s %n' 2>/dev/null | awk '$$1 > 1048576 {print $$2}' | grep -vxF -f .ci/large-files || true); \
	if [ -n "$$big" ]; then echo "tracked files over 1 MB, not in .ci/large-files:"; echo "$$big"; exit 1; fi

# The packages whose tests run without the race detector: the models and
# pure code (deterministic simulations on one goroutine; parsers of flags,
# configs, numbers and host names that start no goroutine), where -race
# finds nothing and costs five to ten times the time (make test-long runs
# them under -race too). Every other package runs
# under -race. The models' own goroutine code (the seed sweeps and the
# comparison runner) is tested under -race by the tests named
# ...Concurrently.
NORACE := sim sim/bots overload quota quota/chaos quota/internal/breakage \
	internal/conventions internal/heap \
	internal/queueing internal/redact internal/rng internal/vclock \
	internal/cli internal/hostcheck internal/jsonnum quota/config quota/internal/ops
NORACE_RE := ^github.com/afloat/afloat/($(shell echo $(NORACE) | tr ' ' '|'))$$
# The browser tests are the web package's tests whose names end in
# EndToEnd or InBrowser: a new one joins by its name alone.
BROWSER_TESTS := ^Test[A-Za-z0-9]*(EndToEnd|InBrowser)$$
# NORACE_WEB are web tests that run a model's computation through the
# server and again in the test, seconds of CPU each under -race: they run
# beside the browser tests, without it (the server's goroutines around
# that computation are tested under -race by the others).
NORACE_WEB := ^TestOverloadCompareAnswer$$
# AT_SCALE are the quota processes' tests at their most tenants (100,000:
# a scrape of every series): 21 CPU-seconds under -race, most of the race
# group's longest package. unit-etcd runs them without it, as it runs
# every test of those packages; the same collectors, at a few tenants,
# are under -race here.
AT_SCALE := ^Test(Coordinator)?MetricsAtMaxTenants$$

# AFLOAT_REQUIRE_BROWSER, AFLOAT_REQUIRE_REDIS and AFLOAT_REQUIRE_PROMTOOL
# turn the skips of the browser tests (no chromium), the Redis tests (no
# redis-server) and the alert rules' mutation test (no promtool) into
# failures, so that this suite cannot pass without them.
# go test links its binaries without symbols or DWARF already (-s -w).
# A race-detector binary sleeps a second before it exits, by default, for
# other threads' reports to come in; a test binary's goroutines have all
# ended by then, and some forty binaries sleeping one after another are
# the race group's tail.
$(UNITS) long: export GORACE := atexit_sleep_ms=0
$(UNITS): export AFLOAT_REQUIRE_REDIS := 1
$(UNITS): export AFLOAT_REQUIRE_BROWSER := 1
$(UNITS): export AFLOAT_REQUIRE_PROMTOOL := 1
unit: $(UNITS)

unit-race:
	$(NICE) $(GO) test -short -race -count=1 -skip '$(BROWSER_TESTS)|$(NORACE_WEB)|$(AT_SCALE)' $$($(GO) list ./... | grep -Ev '$(NORACE_RE)|$(REDIS_RE)')

# The assignment's tests (under -race like the rest) each talk to a
# redis-server of their own, one round trip after another: on a machine
# the other groups keep busy they wait for the scheduler, not the CPU
# (10 s alone, 99 s beside the others in one lane). They run in a group
# of their own, beside the race group rather than in one of its two
# lanes; one test at a time (four at a time, one test's load once made no
# progress for 30 s).
REDIS_RE := ^github.com/afloat/afloat/assign(/.*)?$$
unit-redis:
	$(NICE) $(GO) test -short -race -count=1 $$($(GO) list ./... | grep -E '$(REDIS_RE)')

# MUTATION runs the mutation checks: tests that plant a deliberate fault
# and show that the checker (or the property) catches it. The faults exist
# only in a build with the tag mutation, so that no release consults one.
MUTATION := -tags mutation -run 'Mutation' ./quota/chaos ./quota/coordinator

unit-models:
	$(NICE) $(GO) test -short -count=1 $$($(GO) list ./... | grep -E '$(NORACE_RE)')
	$(NICE) $(GO) test -short -race -count=1 -run 'Concurrently$$' ./sim/bots ./overload ./quota/chaos
	$(NICE) $(GO) test -short -count=1 $(MUTATION)

# The quota's etcd tests need the embedded etcd server, which only a build
# with the tag embedetcd has; they run without -race, which would
# instrument the whole etcd server (the quota's own code runs under -race
# above, on the in-memory ledger). The alert rules' tests, which need no
# etcd, run once, in unit-race.
unit-etcd:
	$(NICE) $(GO) test -short -count=1 -tags embedetcd -skip '^TestAlertRules' ./quota/etcdledger ./quota/etcdmember ./quota/agent ./quota/coordinator/replica ./quota/servicetest
	$(NICE) $(GO) test -short -count=1 -tags embedetcd -run '^TestQuotaTenants' ./cmd/afloat

# Independent browser tests run side by side, each with its own console
# and a browser context of its own in one shared Chromium; two at a time,
# as many as there are cores (more only slowed each of them down). Under
# -short each long one walks one language, a different one in different
# tests; make test-long walks every language in each.
unit-browser:
	$(GO) test -short -count=1 -parallel 2 -run '$(BROWSER_TESTS)|$(NORACE_WEB)' ./web

# LONG_TESTS are the tests that skip under -short, or do less under it,
# outside the models (whose every test runs again at full size below). internal/conventions
# checks that every test that skips under -short is named here.
LONG_TESTS := ^(TestVersionNamesTheCommit|TestLayoutEndToEnd|TestHindsightBoundsEveryFigure|TestGameAccessibilityEndToEnd|TestMysteryDebriefEndToEnd|TestConsoleEndToEnd|TestOverloadLabEndToEnd|TestQuotaLabEndToEnd|TestQuotaEndToEnd|TestQuotaRegionKilled|TestQuotaRegionHandover|TestQuotaLeaderPaused|TestQuotaAtScale|TestTwoAgentsOneRegion|TestForgedEpochUnderTraffic|TestQuotaCoordinatorDamagedDataDir|TestQuotaStartUpEndsOnSIGTERM|TestServeUnderAbuse|TestBusyMachineIsFlagged|TestSoakShort|TestShrinkUnderLoad|TestQuotaSurvivesEtcdElections|TestFiftyWorkersStayLevel|TestTokenRotationUnderTraffic|TestQuotaRestoreUnderTraffic|TestLeversEndToEnd|TestRunStopsEndToEnd|TestWatchLinksEndToEnd|TestDrillViewEndToEnd|TestBotsPlayTheGameEndToEnd|TestAssignLLMDemoEndToEnd|TestPickMatchesModel|TestDrillAlertsEndToEnd|TestScriptFlushUnderLoad|TestRestartUnderLoad|TestKilledConnections|TestNewerOperationsAcrossFaults)$$

# long is make test-long's: the tests that skip under -short, with the
# binaries they exec built once; the models at full size (the 120-seed
# chaos sweep among them), then under -race; and the command linked for
# 386 and arm64 (make test compiles every package for both, unlinked). A failing TestQuotaEndToEnd keeps its event logs and the
# processes' output in a folder its failure names. TestQuotaAtScale runs
# alone, after the others: its eight processes want both cores (beside
# the browser tests, at a load of 8, one region took 76 s to come back
# from the leader's kill -9; alone, with four busy loops, 10 to 40 s), and
# with cmd/afloat's other tests 200 s shorter, the first step ends as soon.
long: export AFLOAT_REQUIRE_REDIS := 1
long: export AFLOAT_REQUIRE_BROWSER := 1
long: export AFLOAT_REQUIRE_ETCD := 1
long: export AFLOAT_REQUIRE_PROMETHEUS := 1
long: export AFLOAT_TEST_BINARY := $(BUILD)/afloat
long: export AFLOAT_TEST_ETCD_BINARY := $(BUILD)/afloat-embedetcd
long:
	$(GO) build -buildvcs=auto -o $(BUILD)/afloat ./cmd/afloat
	$(GO) build -buildvcs=auto -tags embedetcd -o $(BUILD)/afloat-embedetcd ./cmd/afloat
	$(GO) test -count=1 -tags embedetcd -run '$(LONG_TESTS)' -skip '^TestQuotaAtScale$$' -v ./cmd/afloat ./quota/agent ./quota/coordinator/replica ./overload/live ./web ./assign
	$(GO) test -count=1 -tags embedetcd -run '^TestQuotaAtScale$$' -v ./cmd/afloat
	$(GO) test -count=1 $$($(GO) list ./... | grep -E '$(NORACE_RE)')
	$(GO) test -count=1 $(MUTATION)
	$(GO) test -race -count=1 $$($(GO) list ./... | grep -E '$(NORACE_RE)')
	$(GO) test -race -count=1 -run '$(NORACE_WEB)' ./web
	env GOARCH=386 $(GO) build -o /dev/null ./cmd/afloat
	env GOARCH=arm64 $(GO) build -o /dev/null ./cmd/afloat

# bench-assign runs afloat assign bench (50 workers, 100 members, 10 s,
# unbatched and batches of 16) and redis-benchmark on the same redis-server
# and pool, in the same run, five rounds (docs/benchmarks.md). Run it on
# an otherwise idle machine; it is not part of make test.
bench-assign:
	AFLOAT_ASSIGN_BENCH=1 $(GO) test ./assign/assignbench -run '^TestBenchAgainstRedisBenchmark$$' -count 1 -v -timeout 30m
	$(GO) test ./assign -run '^$$' -bench 'Clients' -count 10 | tee assign.bench.txt
	benchstat assign.bench.txt

# soak runs the tests that hold a real server under load on the wall
# clock (TestSoakShort: twelve seconds at 10× capacity in a child process,
# heap and goroutines flat); make test runs none of them.
soak:
	AFLOAT_SOAK=1 $(GO) test -race -count=1 -run '^TestSoakShort$$' -v ./overload/live

# bench-quota runs the quota service's load benchmarks (docs/benchmarks.md):
# 10,000 tenants × 3 regions renewing over the network API on an embedded
# etcd — synthetic renewals, then the regions' own limiters with one tenant
# in ten over its limit — and a region's decision API at 10,000 checks a
# second; about 90 s. -p 1: one package at a time, so that neither
# benchmark measures the other.
bench-quota:
	AFLOAT_QUOTA_BENCH=1 $(GO) test -p 1 -tags embedetcd -count=1 -run '^(TestBenchRenewals|TestBenchDecisionAPI)$$' -v ./quota/agent ./quota/coordinator/replica

# bench-quota-peers runs afloat's global quota against Gubernator (GLOBAL
# and its default mode), envoyproxy/ratelimit (one Redis shared by the
# regions, one per region) and a naive split (bench/quotapeers, a module of
# its own so that neither peer enters afloat's go.mod; ratelimit is built
# from bench/quotapeers/ratelimitd and run on real redis-servers): 60 s of
# traffic with a shift and a partition, on the wall clock, then the
# throughput search (decisions/s at p99 ≤ 1 ms, service pinned to CPU 0,
# generator to CPU 1, three repetitions; about 10 minutes). It rewrites the
# JSON the console's quota lab draws (docs/benchmarks.md).
# check-quota-peers builds every system and runs a short test of each (a
# 6 s bound run, a short search). Neither is part of make test: a cold
# build of the peers' dependencies alone takes minutes. No -race: the
# race detector fails the run on Gubernator v2.13.0's own race in its
# default mode's batching (peer_client.go, sendBatch, writing a queued
# request's Metadata from two batch goroutines; seen in make
# check-quota-peers, not in afloat's code).
bench-quota-peers:
	cd bench/quotapeers && $(GO) run . --out ../../web/static/data/quota-peers.json
check-quota-peers:
	cd bench/quotapeers && $(GO) mod tidy -diff && $(GO) vet ./... && $(GO) test -count=1 ./...
	cd bench/quotapeers/ratelimitd && $(GO) mod tidy -diff && $(GO) build -o /dev/null github.com/envoyproxy/ratelimit/src/service_cmd

# bench-quota-scale measures whether the coordinator keeps its head above
# water with many tenants (issue 44; docs/benchmarks.md, "The quota at
# scale"). bench/quotascale — a module of its own, as bench/quotapeers —
# runs through quota/scale, as OS processes on free loopback ports, a
# 3-member Debian etcd (--max-txn-ops 1024, data in a temporary folder),
# two coordinator replicas and three region agents (eu, us, ap) with
# 100,000 hard tenants (R 100/s, B 200, 10 s leases) and a little traffic
# through each agent's decision API. It prints beside the goals, and
# writes as JSON to SCALE_OUT: the time until every tenant holds a valid
# lease in every region (goal 30 s); steady renewals a second and their
# p99 (the agents' /metrics), etcd's writes a second (etcd's /metrics),
# the coordinators' CPU and RSS (goal 1 GiB) and the agents' RSS (/proc);
# then the time until every tenant is valid again (goal 10 s) after a
# kill -9 of the leading coordinator, a 10 s SIGSTOP of it and a restart
# of every region at once, and the same three with two busy loops holding
# the cores. Every wait is bounded (2 minutes: past it, "not recovered",
# and the run goes on). It takes the machine, 5 to 20 minutes; not part of
# make test. SCALE_FLAGS passes flags: --tenants 2000 for a small run,
# --max-txn-ops 0 for etcd's default, --keep to keep the processes'
# output (go run . --help lists them).
SCALE_OUT ?= $(BUILD)/quota-scale.json
SCALE_FLAGS ?=
bench-quota-scale: deps-etcd
	$(GO) build -o $(BUILD)/afloat ./cmd/afloat
	cd bench/quotascale && $(GO) run . --afloat $(BUILD)/afloat --out $(abspath $(SCALE_OUT)) $(SCALE_FLAGS)

# fuzz runs each fuzz target for FUZZTIME (default 60s); it is not part of
# make test, which must not depend on what a random search finds that day.
FUZZTIME ?= 60s
fuzz:
	$(GO) test ./sim -run '^$$' -fuzz '^FuzzParseActions$$' -fuzztime $(FUZZTIME)
	$(GO) test ./sim -run '^$$' -fuzz '^FuzzTopLevelKeys$$' -fuzztime $(FUZZTIME)
	$(GO) test ./sim -run '^$$' -fuzz '^FuzzParseQuery$$' -fuzztime $(FUZZTIME)
	$(GO) test ./drill -run '^$$' -fuzz '^FuzzParseLever$$' -fuzztime $(FUZZTIME)
	$(GO) test ./drill -run '^$$' -fuzz '^FuzzStatus$$' -fuzztime $(FUZZTIME)
	$(GO) test ./web -run '^$$' -fuzz '^FuzzRunQuery$$' -fuzztime $(FUZZTIME)
	$(GO) test ./web -run '^$$' -fuzz '^FuzzRunBody$$' -fuzztime $(FUZZTIME)
	$(GO) test ./web -run '^$$' -fuzz '^FuzzAssignBody$$' -fuzztime $(FUZZTIME)
	$(GO) test ./web -run '^$$' -fuzz '^FuzzQuotaBody$$' -fuzztime $(FUZZTIME)
	$(GO) test ./web -run '^$$' -fuzz '^FuzzCompareBody$$' -fuzztime $(FUZZTIME)
	$(GO) test ./web -run '^$$' -fuzz '^FuzzParseQuery$$' -fuzztime $(FUZZTIME)
	$(GO) test ./web -run '^$$' -fuzz '^FuzzDecodeObject$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/redact -run '^$$' -fuzz '^FuzzURL$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/jsonnum -run '^$$' -fuzz '^FuzzInt$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/loadgen -run '^$$' -fuzz '^FuzzHTTPWhole$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/loadgen -run '^$$' -fuzz '^FuzzGRPCRead$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/loadgen -run '^$$' -fuzz '^FuzzParseSteal$$' -fuzztime $(FUZZTIME)
	$(GO) test ./assign/proxypool -run '^$$' -fuzz '^FuzzParseList$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/redisurl -run '^$$' -fuzz '^FuzzClientOptions$$' -fuzztime $(FUZZTIME)
	$(GO) test ./quota/eventlog -run '^$$' -fuzz '^FuzzParseEvent$$' -fuzztime $(FUZZTIME)
	$(GO) test ./quota/eventlog -run '^$$' -fuzz '^FuzzParseLimits$$' -fuzztime $(FUZZTIME)
	$(GO) test ./quota/eventlog -run '^$$' -fuzz '^FuzzCheckLogs$$' -fuzztime $(FUZZTIME)
	$(GO) test ./quota/eventlog -run '^$$' -fuzz '^FuzzParseCounts$$' -fuzztime $(FUZZTIME)
	$(GO) test ./quota/config -run '^$$' -fuzz '^FuzzParseConfig$$' -fuzztime $(FUZZTIME)
	$(GO) test ./quota/config -run '^$$' -fuzz '^FuzzConfigJSON$$' -fuzztime $(FUZZTIME)
	$(GO) test ./quota/agent -run '^$$' -fuzz '^FuzzAllowBody$$' -fuzztime $(FUZZTIME)
	$(GO) test ./quota/agent -run '^$$' -fuzz '^FuzzDecodeAllow$$' -fuzztime $(FUZZTIME)
	$(GO) test ./quota/remote -run '^$$' -fuzz '^FuzzRenewBody$$' -fuzztime $(FUZZTIME)
	$(GO) test ./quota/remote -run '^$$' -fuzz '^FuzzRegionTenantsAnswer$$' -fuzztime $(FUZZTIME)
	$(GO) test ./quota/remote -run '^$$' -fuzz '^FuzzRegionAttach$$' -fuzztime $(FUZZTIME)
	$(GO) test ./quota/remote -run '^$$' -fuzz '^FuzzParseEndpoints$$' -fuzztime $(FUZZTIME)
	$(GO) test ./quota/coordinator/replica -run '^$$' -fuzz '^FuzzDecodeTenantSpec$$' -fuzztime $(FUZZTIME)
	$(GO) test ./quota/agent -run '^$$' -fuzz '^FuzzShouldRateLimit$$' -fuzztime $(FUZZTIME)
	$(GO) test ./quota/agent -run '^$$' -fuzz '^FuzzCanonicalPath$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/strictjson -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/strictjson -run '^$$' -fuzz '^FuzzSameAsReference$$' -fuzztime $(FUZZTIME)
	$(GO) test ./quota/remote -run '^$$' -fuzz '^FuzzDecodeAnswer$$' -fuzztime $(FUZZTIME)
	$(GO) test ./quota/remote -run '^$$' -fuzz '^FuzzDecodeRenewBody$$' -fuzztime $(FUZZTIME)

# bench runs the benchmarks docs/benchmarks.md quotes and summarises them
# with benchstat (go install golang.org/x/perf/cmd/benchstat@latest). The
# end-to-end HTTP comparison is a command of its own: afloat bench bulkhead;
# so is the 10,000-seed chaos run: afloat quota chaos --seeds 1-10000.
bench:
	$(GO) test -run '^$$' -bench 'Step$$|Scenario|Floor|Peer' -count 10 ./sim | tee sim.bench.txt
	$(GO) test -c -o bulkhead.test ./bulkhead
	rm -f bulkhead.bench.txt; for i in 1 2 3 4 5 6 7 8 9 10; do ./bulkhead.test -test.run '^$$' -test.bench . -test.benchmem | tee -a bulkhead.bench.txt; done
	$(GO) test -c -o region.test ./quota/region
	rm -f region.bench.txt; for i in 1 2 3 4 5 6 7 8 9 10; do ./region.test -test.run '^$$' -test.bench . -test.benchmem | tee -a region.bench.txt; done
	$(GO) test -c -o bots.test ./sim/bots
	rm -f bots.bench.txt; for i in 1 2 3 4 5 6; do ./bots.test -test.run '^$$' -test.bench 'PolicyBots|FloorRuns' -test.benchtime 2x | tee -a bots.bench.txt; ./bots.test -test.run '^$$' -test.bench 'Expert|FloorRun$$|Coach' -test.benchtime 50x | tee -a bots.bench.txt; done
	$(GO) test -run '^$$' -bench 'APIRun' -count 10 ./web | tee web.bench.txt
	$(GO) test -run '^$$' -bench 'ConsoleTenX' -benchtime 1x -count 6 ./web | tee console.bench.txt
	$(GO) test -c -o web.test ./web
	rm -f quota.bench.txt; for i in 1 2 3 4 5 6 7 8 9 10; do ./web.test -test.run '^$$' -test.bench 'QuotaRun' -test.benchmem | tee -a quota.bench.txt; done
	benchstat sim.bench.txt
	benchstat bulkhead.bench.txt
	benchstat region.bench.txt
	benchstat bots.bench.txt
	benchstat web.bench.txt
	benchstat console.bench.txt
	benchstat quota.bench.txt
