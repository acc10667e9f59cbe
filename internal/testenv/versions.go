package testenv

import (
	"strconv"
	"strings"
)

// The Argo CD versions the tests run, each built from the Go module proxy
// by tools/build-argocd.sh.
const (
	// ArgoCDOldest is the oldest Argo CD still common on clusters.
	ArgoCDOldest = "v2.14.21"
	// ArgoCDTrap is a version with the client-side-apply migration trap of
	// 3.1.0-3.3.1; tests use it only where that trap is under test.
	ArgoCDTrap = "v3.2.6"
	// ArgoCDCurrent is the current GA.
	ArgoCDCurrent = "v3.6.2"
)

// SealedSecretsVersion is the Sealed Secrets controller (and kubeseal) the
// tests run, built by tools/build-sealed-secrets.sh: the version `go
// install` builds as the module proxy serves it (issue 45).
const SealedSecretsVersion = "v0.27.1"

// SopsVersion is the sops CLI the tests encrypt and decrypt with, built
// by tools/build-sops.sh (issue 45).
const SopsVersion = "v3.13.3"

// HelmVersion is the helm CLI the tests install releases with (and that
// Argo CD v2.14 and v3.2 render with here).
const HelmVersion = "v3.18.6"

// BundledKustomize is the kustomize version that Argo CD argocdVersion
// bundles in its image (hack/tool-versions.sh): v5.4.3 for v2.x, v5.7.0
// for v3.0-v3.5, v5.8.3 from v3.6.
func BundledKustomize(argocdVersion string) string {
	switch {
	case argoMinor(argocdVersion) < 300:
		return "v5.4.3"
	case argoMinor(argocdVersion) < 306:
		return "v5.7.0"
	}
	return "v5.8.3"
}

// BundledHelm is the helm version Argo CD argocdVersion's repo-server
// renders with: v4.3.2 from v3.6 (its hack/tool-versions.sh), else
// HelmVersion.
func BundledHelm(argocdVersion string) string {
	if argoMinor(argocdVersion) >= 306 {
		return "v4.3.2"
	}
	return HelmVersion
}

// argoMinor is 100*major+minor of "v3.6.2" (306); 0 when it cannot be read.
func argoMinor(version string) int {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 2 {
		return 0
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return 0
	}
	return 100*major + minor
}

// ExternalSecretsVersion is the External Secrets Operator the tests run,
// built by tools/build-external-secrets.sh: the newest the module proxy
// can build (v1.x's nested modules are not served; issue 45).
const ExternalSecretsVersion = "v0.16.2"
