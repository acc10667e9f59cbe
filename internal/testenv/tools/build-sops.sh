#!/usr/bin/env bash
# Builds the real sops CLI, which `adopt apply` runs to encrypt a Secret
# the plan adopts in the SOPS form (issue 45) and which the tests run to
# decrypt what apply committed, from the Go module proxy, into a cache
# outside the repo:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/adopt/testbin/sops-<version>/sops
#
# usage: build-sops.sh [VERSION]   (default v3.13.3)
#
# It is built as its own main module, in the module's directory in the
# module cache: importing sops' library into adopt breaks the Argo CD
# build (issue 45), so adopt only ever runs the CLI. Age keys need nothing
# more: sops links filippo.io/age. It is safe to run concurrently (flock)
# and does nothing when the cache is complete. Prints the cache directory
# on stdout.
set -euo pipefail
version=${1:-v3.13.3}
mod=github.com/getsops/sops/v3
cache=${ADOPT_TESTBIN:-${XDG_CACHE_HOME:-$HOME/.cache}/adopt/testbin}/sops-$version
mkdir -p "$cache"
complete() { [ -x "$cache/sops" ]; }
exec 9>"$cache/.lock"
flock 9
if complete; then echo "$cache"; exit 0; fi

script=build-sops.sh
. "$(dirname "$0")/lib.sh"
toolchain=$(module_toolchain "$mod@$version")
dir=$(module_dir "$mod@$version" "$toolchain")
echo "building sops $version from $dir into $cache (about 80 s on 2 cores, once)" >&2
start=$(date +%s)
tmp=$(mktemp -d "$cache/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# sops' version is a constant of its source (version/version.go): `sops
# --version` prints it without flags.
(cd "$dir" && CGO_ENABLED=0 GOFLAGS="-buildvcs=false -mod=readonly" GOTOOLCHAIN=${toolchain:-local} go build -trimpath -ldflags "-s -w" -o "$tmp/sops" ./cmd/sops)
# --disable-version-check: sops otherwise asks the internet for its latest
# release.
SOPS_DISABLE_VERSION_CHECK=1 "$tmp/sops" --version >&2
mv -f "$tmp/sops" "$cache/sops"
echo "built sops $version in $(( $(date +%s) - start ))s, $(du -m "$cache/sops" | cut -f1) MB" >&2
echo "$cache"
