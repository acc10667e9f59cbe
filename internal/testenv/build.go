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

// buildTool runs tools/<script> (which builds a real part once into the
// cache, or finds it there) with args and returns the one line it prints,
// the cache path. Its progress goes to stderr unless ADOPT_QUIET_BUILD is
// set; a failure says what was built, with the script's last errLines
// lines.
func buildTool(what, script string, errLines int, args ...string) (string, error) {
	path := filepath.Join(moduleRoot(), "internal", "testenv", "tools", script)
	cmd := exec.Command("bash", append([]string{path}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if os.Getenv("ADOPT_QUIET_BUILD") == "" {
		cmd.Stderr = io.MultiWriter(os.Stderr, &errb)
	}
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build %s with %s: %v: %s", what, path, err, lastLines(errb.String(), errLines))
	}
	return strings.TrimSpace(out.String()), nil
}
