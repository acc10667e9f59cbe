#!/usr/bin/env bash
# Builds (or finds in the cache) every real part the tests run against and
# prints how long each phase took, so slow phases are visible in CI.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
phase() {
  local name=$1; shift
  local start=$(date +%s)
  "$@" >/dev/null
  echo "phase: $name $(( $(date +%s) - start ))s"
}
[ -x "$here/install-debs.sh" ] && phase "debian packages" "$here/install-debs.sh"
phase "kubernetes control plane" "$here/build.sh"
# The Argo CD tests run the oldest version still common (v2.14.21), the
# current GA (v3.6.2) and, where the client-side-apply migration trap of
# 3.1.0-3.3.1 is under test, v3.2.6 (internal/testenv/versions.go).
for v in ${ADOPT_ARGOCD_VERSIONS-v2.14.21 v3.2.6 v3.6.2}; do
  phase "argo cd $v" "$here/build-argocd.sh" "$v"
done
phase "gitea" "$here/build-gitea.sh"
# The Helm tests, and Argo CD's repo-server for Helm-sourced Applications:
# the helm each Argo CD version bundles (v2.14 and v3.2: v3.18.6 here;
# v3.6: v4.3.2).
phase "helm v3.18.6" "$here/build-helm.sh" v3.18.6
phase "helm v4.3.2" "$here/build-helm.sh" v4.3.2
# Argo CD's repo-server (for kustomize-sourced Applications): the
# kustomize each Argo CD version bundles (v2.14: v5.4.3, v3.2: v5.7.0,
# v3.6: v5.8.3).
phase "kustomize v5.4.3" "$here/build-kustomize.sh" v5.4.3
phase "kustomize v5.7.0" "$here/build-kustomize.sh" v5.7.0
phase "kustomize v5.8.3" "$here/build-kustomize.sh" v5.8.3
# The release test: krew's manifest validator and krew itself.
phase "krew" "$here/build-krew.sh"
# reconcile's --metrics-pushgateway test.
phase "pushgateway" "$here/build-pushgateway.sh"
# The Secrets tests (issue 45): the real Sealed Secrets controller and
# kubeseal.
phase "sealed secrets v0.27.1" "$here/build-sealed-secrets.sh" v0.27.1
# The SOPS form's tests (issue 45): the real sops CLI, with age.
phase "sops v3.13.3" "$here/build-sops.sh" v3.13.3
# The External Secrets form's tests (issue 45): the real External Secrets
# Operator, its kubernetes provider only.
phase "external secrets v0.16.2" "$here/build-external-secrets.sh" v0.16.2
