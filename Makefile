# Every build, test and benchmark carries sqlite_fts5: mattn/go-sqlite3 leaves
# FTS5 out without it, and the store's full-text search needs it.
TAGS      ?= sqlite_fts5
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
BIN       := build/bin/atrium

.PHONY: build run test deps vet bench clean

build:
	go build -tags '$(TAGS)' -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) .

run: build
	./$(BIN) $(ARGS)

# make test: installs what the tests need on a fresh Debian machine, then vets
# and runs every test with the race detector.
test: deps
	go vet -tags '$(TAGS)' ./...
	go test -race -tags '$(TAGS)' -count=1 ./...

deps:
	./scripts/deps.sh

bench:
	go test -tags '$(TAGS)' -run '^$$' -bench . -benchtime=1x -count=5 ./backend/benchmarks/

clean:
	rm -rf build/bin
