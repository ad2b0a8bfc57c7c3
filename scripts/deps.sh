#!/usr/bin/env bash
# Installs what building and testing Atrium needs on a fresh Debian machine:
# a C compiler for cgo (mattn/go-sqlite3, the race detector, the window),
# GTK and WebKitGTK 4.1 headers for the Wails window, Node for the web UI,
# Xvfb, xdotool, ImageMagick and D-Bus for the window's end-to-end test,
# Chromium for the dashboard's, Python 3 for Python plugins (and python-dotenv,
# which the .env reader is checked against); then the Go
# modules. Runs apt-get as root, or through sudo, and only when something is
# missing.
set -euo pipefail
pkgs=(gcc libc6-dev make git pkg-config python3 python3-dotenv libgtk-3-dev libwebkit2gtk-4.1-dev
  nodejs npm xvfb xauth xdotool imagemagick dbus chromium fonts-liberation)
need=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
# A Node from elsewhere (nvm, nodesource) is fine: do not ask apt for it.
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  need=("${need[@]/nodejs}"); need=("${need[@]/npm}")
fi
need=($(printf '%s\n' "${need[@]}" | grep -v '^$' || true))
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  echo "deps: apt-get install ${need[*]}" >&2
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
if ! command -v go >/dev/null 2>&1; then
  echo "deps: Go 1.26 is required (https://go.dev/dl); it is not an apt package of the right version" >&2
  exit 1
fi
go mod download
