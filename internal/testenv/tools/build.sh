#!/usr/bin/env bash
# Builds the real Kubernetes control-plane binaries used by tests and the demo
# (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and an
# embedded etcd) from the Go module proxy, into a cache outside the repo:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/adopt/testbin/k8s-<version>/
# It is safe to run concurrently (flock) and does nothing when the cache is
# complete. Prints the cache directory on stdout.
set -euo pipefail
K8S_VERSION=v1.34.4
here=$(cd "$(dirname "$0")" && pwd)
cache=${ADOPT_TESTBIN:-${XDG_CACHE_HOME:-$HOME/.cache}/adopt/testbin}/k8s-$K8S_VERSION
mkdir -p "$cache"
bins="kube-apiserver kube-controller-manager kube-scheduler kubectl etcd"
complete() { for b in $bins; do [ -x "$cache/$b" ] || return 1; done; }
exec 9>"$cache/.lock"
flock 9
if complete; then echo "$cache"; exit 0; fi
echo "building Kubernetes $K8S_VERSION control plane into $cache (about 5 minutes on 2 idle cores, once)" >&2
start=$(date +%s)
minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.gitCommit=0000000000000000000000000000000000000000 -X $pkg.buildDate=1970-01-01T00:00:00Z"
tmp=$(mktemp -d "$cache/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$here"
CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp/" \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler \
  k8s.io/kubernetes/cmd/kubectl \
  ./cmd/etcd
for b in $bins; do mv -f "$tmp/$b" "$cache/$b"; done
echo "built control plane in $(( $(date +%s) - start ))s" >&2
echo "$cache"
