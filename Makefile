# dcm — make run starts the embedded demo, make test runs everything CI runs.
SHELL := /bin/bash
GO ?= go
BIN := bin/dcm
WORK ?= .work/demo
# -trimpath keeps the checkout's path out of every build. Go's build cache
# then serves a fresh clone what an earlier clone built: with the path in,
# each new clone recompiles every package of this module in every build
# mode (vet, tests, race, fuzz), over a minute of CI's warm run. The tests
# find their files from their working directory, never from source paths.
export GOFLAGS := $(strip $(GOFLAGS) -trimpath)
# Debian's packages the project needs: HAProxy to drive, curl for the README's
# lines, chromium for the portal's browser tests (e2e/browser), nodejs to
# run the what-if planner's WebAssembly outside a browser (parity tests).
APT_PACKAGES := haproxy curl chromium nodejs
# make wasm writes the planner here; static/ embeds it into the binary.
WASM_DIR := static/dist

.PHONY: all deps build wasm run test vet lint sizes fmt-check generate generate-check bench bench-scale soak kapi clean fuzz fuzz-quick conformance

all: build

## deps: install what is missing (Debian packages as root, Go modules)
deps:
	@missing=""; \
	for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		if [ "$$(id -u)" != 0 ]; then echo "run make deps as root to install:$$missing" >&2; exit 1; fi; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi
	@haproxy -v | head -1
	@$(GO) mod download

## build: the dcm binary, with the what-if planner's WebAssembly inside
build: wasm
	$(GO) build -o $(BIN) .

## wasm: the what-if planner for the browser (dcm/plan through wasm/), the
## wasm_exec.js of the same Go, and precompressed copies to serve
wasm:
	GOOS=js GOARCH=wasm $(GO) build -trimpath -ldflags='-s -w' -o $(WASM_DIR)/dcm.wasm ./wasm
	cp "$$($(GO) env GOROOT)/lib/wasm/wasm_exec.js" $(WASM_DIR)/wasm_exec.js
	$(GO) run ./internal/precompress $(WASM_DIR)/dcm.wasm $(WASM_DIR)/wasm_exec.js

## run: build and start the embedded demo (in-memory cluster, real HAProxy, local pods)
run: deps build
	./$(BIN) --demo --work-dir $(WORK)

## generate: the templ components' Go code, the generated docs/ pages, web/display_gen.js and the
## planner's JSON codec wasm/codec/codec_gen.go (committed)
generate:
	$(GO) tool templ generate
	$(GO) run ./internal/docgen && $(GO) run ./internal/jsgen
	$(GO) run ./internal/codecgen

## generate-check: the committed *_templ.go files and generated docs/ pages are what make generate writes now
generate-check:
	@$(GO) tool templ generate >/dev/null 2>&1
	@$(GO) run ./internal/docgen && $(GO) run ./internal/jsgen && $(GO) run ./internal/codecgen
	@git diff --exit-code --stat -- views docs web/display_gen.js wasm/codec/codec_gen.go || { echo "views/*_templ.go, generated docs/ pages, web/display_gen.js or wasm/codec/codec_gen.go are stale: run make generate and commit"; exit 1; }

vet:
	$(GO) vet ./...
	GOOS=js GOARCH=wasm $(GO) vet ./wasm/...
	cd e2e/kapi && $(GO) vet ./...

## lint: staticcheck (a tool dependency in go.mod), part of make test, over every build of the
## code: the bench and soak tags, and the planner's WebAssembly entry points
## (go tool -n builds the tool for this machine and names it: GOOS=js on go
## tool itself would build staticcheck for the browser)
lint: sizes
	$(GO) tool staticcheck -tags bench,soak ./...
	GOOS=js GOARCH=wasm "$$($(GO) tool -n staticcheck)" ./wasm/...

## sizes: no hand-written Go file over 700 lines, no function over 100; prints
## the largest of each
sizes:
	@$(GO) run ./internal/sizecheck .

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '_templ.go$$')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## kapi: the test control plane (etcd + kube-apiserver + controllers), a nested module;
## about ten minutes cold on two cores, a second when nothing changed
kapi:
	e2e/kapi/build.sh

# The e2e packages spend most of their time waiting on HAProxy, the API
# server and Chromium, so three at a time on two cores finish sooner than
# go test's default of one per core.
TEST_PACKAGES_AT_ONCE ?= 3
OUTAGE_TEST := TestAPIServerRestart
RACE_PACKAGES := ./dcm/engine/ ./dcm/haproxy/ ./dcm/plan/ ./server/
MODULE := github.com/dcm-router/dcm

## test: everything CI runs (unit, integration with the real haproxy binary, e2e),
## the packages that do not pull in client-go under the race detector (with
## client-go it would add ten minutes of compiling on two cores)
test: deps fmt-check generate-check
	@# vet, the control plane and the planner's wasm build side by side: on
	@# a warm cache each is mostly one single-threaded link
	@$(MAKE) --no-print-directory -j3 --output-sync=target vet kapi wasm
	@# lint runs beside the tests, which mostly wait on HAProxy and the API
	@# server: in sequence it would add most of a minute to a warm run. So
	@# does the API server outage test, which waits out a 30 s outage and
	@# the reflectors' backoff (about 90 s, idle): in e2e/cluster's run it
	@# made that package the longest; it starts its own control plane.
	@# The race packages run once, under the race detector, beside the
	@# rest rather than a second time after it: their plain run was a
	@# minute of package time repeated.
	@lintlog=$$(mktemp); outagelog=$$(mktemp); racelog=$$(mktemp); \
	$(MAKE) --no-print-directory lint >$$lintlog 2>&1 & lint=$$!; \
	$(GO) test -count=1 -timeout 20m -run '^$(OUTAGE_TEST)$$' ./e2e/cluster/ >$$outagelog 2>&1 & outage=$$!; \
	$(GO) test -race -count=1 -timeout 10m $(RACE_PACKAGES) >$$racelog 2>&1 & race=$$!; \
	$(GO) test -p $(TEST_PACKAGES_AT_ONCE) -count=1 -timeout 20m -skip '^$(OUTAGE_TEST)$$' \
		$$($(GO) list ./... | grep -v -x $(foreach p,$(RACE_PACKAGES),-e $(MODULE)/$(p:./%/=%))); rc=$$?; \
	wait $$race; rrc=$$?; echo "== race detector"; cat $$racelog; \
	wait $$outage; orc=$$?; echo "== $(OUTAGE_TEST)"; cat $$outagelog; \
	wait $$lint; lrc=$$?; echo "== make lint"; cat $$lintlog; rm -f $$lintlog $$outagelog $$racelog; \
	[ $$rc = 0 ] && [ $$rrc = 0 ] && [ $$orc = 0 ] && [ $$lrc = 0 ]
	@$(MAKE) --no-print-directory fuzz-quick

## Fuzz targets as package:target; go test -fuzz takes one target per run.
FUZZ_TARGETS := \
	./dcm/haproxy:FuzzParseServersState ./dcm/haproxy:FuzzParseStat ./dcm/haproxy:FuzzParseInfo \
	./dcm/haproxy:FuzzParseProc ./dcm/haproxy:FuzzReadReply ./dcm/haproxy:FuzzCommandFor \
	./dcm/haproxy:FuzzRender ./dcm/kube:FuzzKubeToHAProxy ./dcm/plan:FuzzCompute ./server:FuzzFeedInbound
FUZZTIME ?= 60s
FUZZTIME_QUICK ?= 3s
# Minimizing every new interesting input stalls short runs for seconds at a
# time; a failing input is written to testdata/fuzz either way.
FUZZMINIMIZETIME ?= 0
# make test leaves out dcm/kube's target: its first instrumented build
# (client-go and all) takes ten minutes or more on two cores. Its seeds run
# as a plain test in go test ./... all the same.
FUZZ_TARGETS_QUICK := $(filter-out ./dcm/kube:%,$(FUZZ_TARGETS))
# Each package's instrumented test binary is built once (go test -c -fuzz)
# and run once per target, in the package's directory (its testdata/fuzz
# seeds, and where a failing input is written), with go test's own corpus
# cache: go test -fuzz would link the binary again for every target.
fuzz-run = set -e; bins=$$(mktemp -d); trap 'rm -rf "$$bins"' EXIT; \
	cache=$$($(GO) env GOCACHE)/fuzz; \
	for pkg in $(sort $(foreach t,$(2),$(firstword $(subst :, ,$(t))))); do \
		$(GO) test -c -fuzz=. -o "$$bins/$$(echo $$pkg | tr / _).test" $$pkg; \
	done; \
	for t in $(2); do \
		pkg=$${t%%:*}; bin="$$bins/$$(echo $$pkg | tr / _).test"; dir=$$cache/$$($(GO) list $$pkg); \
		echo "fuzz $$pkg $${t\#\#*:} for $(1)"; \
		(cd $$pkg && "$$bin" -test.run '^$$' -test.fuzz "^$${t\#\#*:}\$$" -test.fuzztime $(1) \
			-test.fuzzminimizetime $(FUZZMINIMIZETIME) -test.timeout 10m \
			-test.fuzzcachedir "$$dir"); \
	done

## fuzz-quick: the fuzz targets but dcm/kube's for FUZZTIME_QUICK, the last step
## of make test: three instrumented test binaries, then 3 s per target
fuzz-quick:
	@$(call fuzz-run,$(FUZZTIME_QUICK),$(FUZZ_TARGETS_QUICK))

## fuzz: every fuzz target for FUZZTIME (default 60s each); a failure leaves
## its input in the package's testdata/fuzz/<target>/, a regression seed
fuzz:
	@$(call fuzz-run,$(FUZZTIME),$(FUZZ_TARGETS))

## bench: the modes side by side on one churn workload (e2e/bench: writes docs/bench.md, its
## SVGs and README's headline), then the scale section (bench-scale), then planner, renderer,
## runtime API round trip, event to HAProxy reply at 1,000 routes, and the what-if preview in
## Chromium at 1,000 backends.
## BENCH_QUICK=1: the comparison on 200 routes and a 6 s churn (about a minute on the
## shared 2-core machine, most of it starting the pods and HAProxy four times) and the scale
## section's quick run; the other benchmarks are skipped.
bench: deps wasm
	BENCH_QUICK=$(BENCH_QUICK) DCM_BENCH_CMD="$(if $(BENCH_QUICK),BENCH_QUICK=1 )make bench" \
		$(GO) test -tags bench -count=1 -timeout 30m -run '^TestCompareModes$$' ./e2e/bench/
	@sed -n '/^## Headline/,/^Ratios/p' docs/bench.md
	@$(MAKE) --no-print-directory bench-scale SCALE_CMD="$(if $(BENCH_QUICK),BENCH_QUICK=1 )$(if $(BENCH_SCALE_ROUTES),BENCH_SCALE_ROUTES=$(BENCH_SCALE_ROUTES) )make bench"
	@if [ -n "$(BENCH_QUICK)" ]; then echo "BENCH_QUICK: the other benchmarks are skipped"; exit 0; fi; set -e; \
	$(GO) test -run '^$$' -bench . -benchtime 20x ./dcm/plan/; \
	$(GO) test -run '^$$' -bench . ./dcm/haproxy/; \
	$(GO) test -run '^$$' -bench EventToHAProxy -benchtime 500x ./e2e/; \
	$(GO) test -run '^$$' -bench WhatIfPreview -benchtime 30x ./e2e/browser/

## bench-scale: the scale section of docs/bench.md alone (e2e/bench TestScale): 1,000 and
## 10,000 routes of 10 endpoints each, the figures of issue 18 with their goals and the ratio
## of the sizes; BENCH_QUICK=1: 200 and 2,000 routes (about a minute and a half here);
## BENCH_SCALE_ROUTES=a,b: other sizes. Writes only between the page's scale markers.
SCALE_CMD ?= $(if $(BENCH_QUICK),BENCH_QUICK=1 )$(if $(BENCH_SCALE_ROUTES),BENCH_SCALE_ROUTES=$(BENCH_SCALE_ROUTES) )make bench-scale
bench-scale: deps
	BENCH_QUICK=$(BENCH_QUICK) BENCH_SCALE_ROUTES=$(BENCH_SCALE_ROUTES) DCM_BENCH_CMD="$(SCALE_CMD)" \
		$(GO) test -tags bench -count=1 -timeout 30m -run '^TestScale$$' ./e2e/bench/
	@sed -n '/^Goals met today/,/^### Per size/p' "$${DCM_BENCH_OUT:-docs}/bench.md"

## soak: the dcm binary against the real control plane (e2e/kapi) and the test kubelet for
## SOAK_DURATION (default 10m) of continuous churn under load through HAProxy; fails on any failed
## request, on dcm's goroutines, RSS or open files growing, on HAProxy processes left over, on
## HAProxy's servers differing from the EndpointSlices at the end. Writes docs/soak.md. Not in make test.
SOAK_DURATION ?= 10m
soak: deps wasm kapi
	SOAK_DURATION=$(SOAK_DURATION) DCM_SOAK_CMD="make soak$(if $(filter-out 10m,$(SOAK_DURATION)), SOAK_DURATION=$(SOAK_DURATION))" \
		$(GO) test -tags soak -count=1 -timeout 60m -v -run '^TestSoak$$' ./e2e/bench/

## conformance: the Gateway API conformance suite (sigs.k8s.io/gateway-api/conformance, unmodified, in
## the nested module e2e/gwconformance) against the dcm binary, on a fresh control plane with the
## Gateway API CRDs and the test kubelet serving the suite's echo-basic pods (e2e/gwdriver). Writes the
## suite's report to docs/conformance/report-<suite version>.yaml and prints passed/failed/skipped per
## profile, dcm's reloads and HAProxy's worker changes during the suite; logs in .work/conformance/.
## CONFORMANCE_RUN_TEST=<ShortName>: that test alone, its report in .work/conformance/;
## CONFORMANCE_SUITE_FLAGS: more of the suite's flags (-debug, -timeout-config-overrides=…). Not in make test.
CONFORMANCE_DIR := .work/conformance
conformance: deps build kapi
	@set -e; mkdir -p $(CONFORMANCE_DIR) docs/conformance; \
	suite=$$(cd e2e/gwconformance && $(GO) list -m -f '{{.Version}}' sigs.k8s.io/gateway-api/conformance); \
	if [ -n "$(CONFORMANCE_RUN_TEST)" ]; then report=$(CURDIR)/$(CONFORMANCE_DIR)/report-$(CONFORMANCE_RUN_TEST).yaml; \
	else report=$(CURDIR)/docs/conformance/report-$$suite.yaml; fi; \
	version=$$(git rev-parse --short HEAD)$$(git diff --quiet HEAD -- . ':!docs/conformance' || echo -dirty); \
	echo "conformance: building the suite $$suite (e2e/gwconformance; minutes when cold)"; \
	(cd e2e/gwconformance && $(GO) test -c -o $(CURDIR)/$(CONFORMANCE_DIR)/gwconformance.test .); \
	DCM_BIN=$(CURDIR)/$(BIN) CONFORMANCE_SUITE_BIN=$(CURDIR)/$(CONFORMANCE_DIR)/gwconformance.test \
	CONFORMANCE_REPORT=$$report CONFORMANCE_RUN_TEST=$(CONFORMANCE_RUN_TEST) CONFORMANCE_LOG_DIR=$(CURDIR)/$(CONFORMANCE_DIR) \
	CONFORMANCE_SUITE_FLAGS='$(CONFORMANCE_SUITE_FLAGS)' \
	DCM_VERSION=$$version $(GO) test -tags conformance -count=1 -timeout 4h -v -run '^TestConformance$$' ./e2e/gwdriver/

clean:
	rm -rf bin .work .cache
	find $(WASM_DIR) -type f ! -name README.md -delete
