#!/usr/bin/env bash
# Installs the Debian packages that the test environment runs as real parts
# when they are missing: redis-server (Argo CD's cache), git (the test git
# server's http-backend, upload-pack and receive-pack) and openssh-client
# (the real ssh client the SSH git server is checked against) and chromium
# (the headless browser the status report is checked in), and GNU time (the
# bench's peak-RSS measurement). Quiet and quick when everything is installed; CI
# calls it before the tests. Needs root or sudo only when it must install.
set -euo pipefail
need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v git >/dev/null 2>&1 || need+=(git)
command -v ssh >/dev/null 2>&1 || need+=(openssh-client)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
[ -x /usr/bin/time ] || need+=(time)
[ ${#need[@]} -eq 0 ] && exit 0
sudo=
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "install-debs.sh: need root or sudo to install: ${need[*]}" >&2; exit 1; }
  sudo=sudo
fi
echo "installing Debian packages: ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >&2
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
# The package's own service is not wanted: the tests start their own
# redis-server on a random loopback port.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet redis-server 2>/dev/null; then
  $sudo systemctl disable --now redis-server >/dev/null 2>&1 || true
fi
