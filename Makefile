# make test is the whole suite, as CI runs it (.ci/run): it installs what
# the tests need when missing, then runs vet, the gofmt check and every
# test with the race detector.

GO ?= go

.PHONY: test deps vet fmt-check unit fuzz bench

test: deps vet fmt-check unit

# deps installs and starts what the tests need when it is missing. Today
# that is only Go itself, which must be on PATH.
deps:
	@command -v $(GO) >/dev/null || { echo "make test: Go is not on PATH (https://go.dev/dl/)"; exit 1; }

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

unit:
	$(GO) test -race -count=1 ./...

# fuzz runs each fuzz target for FUZZTIME (default 60s); it is not part of
# make test, which must not depend on what a random search finds that day.
FUZZTIME ?= 60s
fuzz:
	$(GO) test ./sim -run '^$$' -fuzz '^FuzzParseActions$$' -fuzztime $(FUZZTIME)

# bench runs the benchmarks docs/benchmarks.md quotes, -count=10, and
# summarises them with benchstat (go install golang.org/x/perf/cmd/benchstat@latest).
bench:
	$(GO) test -run '^$$' -bench 'Step$$|Scenario|Floor|Peer' -count 10 ./sim | tee sim.bench.txt
	benchstat sim.bench.txt
