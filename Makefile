# Every build, test and benchmark carries sqlite_fts5: mattn/go-sqlite3 leaves
# FTS5 out without it, and the store's full-text search needs it. The window's
# binary adds the Wails window (desktop,production) against WebKitGTK 4.1.
TAGS         ?= sqlite_fts5
DESKTOP_TAGS := desktop,production,webkit2_41,$(TAGS)
VERSION      ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS      := -X main.version=$(VERSION)
BIN          := build/bin/atrium
WINDOW_BIN   := build/bin/atrium-window

.PHONY: build run test deps vet unit fuzz e2e frontend gen bench bench-ui bench-peer clean

# make build: the web UI, then two binaries side by side: atrium (every
# command; with no command it runs atrium-window in its place) and
# atrium-window (the same program with the window). Terminal commands never
# load GTK and WebKit, which cost ~150 ms before main on every start.
build: frontend
	go build -tags '$(TAGS)' -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) .
	go build -tags '$(DESKTOP_TAGS)' -trimpath -ldflags '$(LDFLAGS)' -o $(WINDOW_BIN) .

# make run: build, then open the window on your sessions (ARGS="--profile work").
run: build
	./$(BIN) $(ARGS)

frontend/node_modules/.package-lock.json: frontend/package-lock.json
	cd frontend && npm ci --no-audit --no-fund

frontend: frontend/node_modules/.package-lock.json
	cd frontend && npm run build

e2e/node_modules/.package-lock.json: e2e/package-lock.json
	cd e2e && npm ci --no-audit --no-fund

# make test: installs what the tests need on a fresh Debian machine, vets,
# runs every Go test with the race detector, builds, then drives the real
# window under Xvfb and the dashboard in headless Chromium.
test: deps unit fuzz build e2e

# unit: the Go tests (frontend/tsgen among them: the TypeScript contract is
# current with app/), the type check of the UI against it (in `frontend`),
# and the UI's store tests.
unit: frontend
	go vet -tags '$(TAGS)' ./...
	go test -race -tags '$(TAGS)' -count=1 ./...
	cd frontend && npm test

# gen: write the UI's DTO types, route table, bindings and event names from
# app/ again (after changing app/dto.go, app/routes.go or a bound method).
gen:
	go test -tags '$(TAGS)' -count=1 ./frontend/tsgen -run TestGeneratedFilesAreCurrent -update

# make fuzz: a brief run of every fuzz target on top of its checked-in
# corpus (testdata/fuzz/; go test alone replays that corpus as tests).
# The budget is a count of inputs, not a duration: Go 1.26's fuzz
# coordinator can fail a target with a bare "context deadline exceeded" when
# a -fuzztime duration ends while a starved worker is mid-input (go.dev/issue/75804,
# fixed in Go 1.27); a count has no deadline to race. FUZZTIME=5m make fuzz
# for a real session.
FUZZTIME     ?= 3000x
FUZZ_TARGETS := backend/plugins:FuzzManifest backend/plugins:FuzzInstallZip backend/config:FuzzLoad \
	backend/sessions:FuzzValidateID backend/sessions:FuzzSearch backend/receipts:FuzzRequestValidate \
	backend/plugins/proc:FuzzParseMessage app:FuzzAPIBodies backend/yamledit:FuzzSet backend/dotenv:FuzzSet \
	backend/imports:FuzzForeignFiles backend/tools:FuzzModelArguments backend/tools:FuzzQuickFrontmatter \
	backend/markup:FuzzTelegramHTML
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t#*:} ($(FUZZTIME))"; \
		go test -tags '$(TAGS)' -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME) -parallel 2 ./$${t%%:*}/; \
	done

e2e: build e2e/node_modules/.package-lock.json
	dbus-run-session -- ./scripts/e2e-window.sh $(BIN)
	node e2e/dashboard.mjs $(BIN)
	node e2e/cross-origin.mjs $(BIN)

deps:
	./scripts/deps.sh

bench:
	go test -tags '$(TAGS)' -run '^$$' -bench . -benchtime=1x -count=5 ./backend/benchmarks/

# bench-ui: launch-to-first-paint on 100,000 sessions (and the window's memory
# then), a UI bulk delete and a UI bulk archive of 1,000, in the real window
# under Xvfb (medians of 5 runs).
bench-ui: build
	go build -tags '$(DESKTOP_TAGS)' -trimpath -o build/bin/wails-floor ./desktop/floor
	dbus-run-session -- ./scripts/e2e-window.sh $(BIN) --bench 5

# bench-peer: the shared store workload (bench/README.md) through the Python
# store Atrium replaces (at synchronous FULL and NORMAL), the raw-SQLite floor
# and Atrium (trash off, then on), interleaved, with side-by-side medians.
# PEER_DIR holds hermes_state.py, fetched as bench/README.md says (never
# committed). BEFORE=path/to/storebench adds a column for an older build.
# N=100000 takes about an hour per repetition.
N    ?= 10000
M    ?= 20
REPS ?= 3
bench-peer:
	@test -n "$(PEER_DIR)" || { echo "usage: make bench-peer PEER_DIR=DIR [N=10000 M=20 REPS=3] (DIR holds hermes_state.py: see bench/README.md)"; exit 2; }
	go build -tags '$(TAGS)' -o build/bench/storebench ./cmd/storebench
	cd bench/rawsqlite && go build -tags '$(TAGS)' -o ../../build/bench/rawsqlitebench .
	python3 bench/run.py --peer-dir '$(PEER_DIR)' --storebench build/bench/storebench --rawbench build/bench/rawsqlitebench \
		--n $(N) --m $(M) --reps $(REPS) $(if $(BENCH_DIR),--dir '$(BENCH_DIR)') $(if $(IMPLS),--impls $(IMPLS)) \
		$(if $(BEFORE),--before '$(BEFORE)')

clean:
	rm -rf build/bin build/bench frontend/node_modules e2e/node_modules
