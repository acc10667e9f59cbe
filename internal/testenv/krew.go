package testenv

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// KrewBinaries builds (once, cached) krew and krew's validate-krew-manifest
// with tools/build-krew.sh and returns the directory holding them.
func KrewBinaries() (string, error) {
	script := filepath.Join(moduleRoot(), "internal", "testenv", "tools", "build-krew.sh")
	cmd := exec.Command("bash", script)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if os.Getenv("ADOPT_QUIET_BUILD") == "" {
		cmd.Stderr = io.MultiWriter(os.Stderr, &errb)
	}
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build krew with %s: %v: %s", script, err, lastLine(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}
