package testenv

// KrewBinaries builds (once, cached) krew and krew's validate-krew-manifest
// with tools/build-krew.sh and returns the directory holding them.
func KrewBinaries() (string, error) {
	return buildTool("krew", "build-krew.sh", 1)
}
