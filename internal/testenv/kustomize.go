package testenv

import "strings"

// KustomizeBinaries builds (once, cached) the real kustomize CLI version
// (for example "v5.7.0") and returns the directory holding it.
func KustomizeBinaries(version string) (string, error) {
	return buildTool("kustomize "+version, "build-kustomize.sh", 1, version)
}

// BundledKustomize is the kustomize version that Argo CD argocdVersion
// bundles in its image (hack/tool-versions.sh): v5.4.3 for v2.x, v5.7.0
// for v3.x.
func BundledKustomize(argocdVersion string) string {
	if strings.HasPrefix(argocdVersion, "v2.") {
		return "v5.4.3"
	}
	return "v5.7.0"
}
