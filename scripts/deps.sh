#!/usr/bin/env bash
# Installs what building and testing Atrium needs on a fresh Debian machine:
# a C compiler for cgo (mattn/go-sqlite3 and the race detector), then the Go
# modules. Runs apt-get as root, or through sudo.
set -euo pipefail
need=()
command -v gcc >/dev/null 2>&1 || need+=(gcc libc6-dev)
command -v make >/dev/null 2>&1 || need+=(make)
command -v git >/dev/null 2>&1 || need+=(git)
# Python plugins (the runner and the tests that drive real Python plugins).
command -v python3 >/dev/null 2>&1 || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
if ! command -v go >/dev/null 2>&1; then
  echo "deps: Go 1.26 is required (https://go.dev/dl); it is not an apt package of the right version" >&2
  exit 1
fi
go mod download
