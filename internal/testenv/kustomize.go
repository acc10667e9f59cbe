package testenv

// KustomizeBinaries builds (once, cached) the real kustomize CLI version
// (for example "v5.7.0") and returns the directory holding it.
func KustomizeBinaries(version string) (string, error) {
	return buildTool("kustomize "+version, "build-kustomize.sh", 1, version)
}
