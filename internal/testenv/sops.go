package testenv

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// SopsBinaries builds (once, cached) the real sops CLI (SopsVersion) and
// returns the directory holding it: put it on PATH, where adopt apply
// looks for sops.
func SopsBinaries() (string, error) {
	return buildTool("sops "+SopsVersion, "build-sops.sh", 1, SopsVersion)
}

// SopsDecrypt runs the real sops CLI to decrypt data (a YAML file sops
// wrote) with the age identity in ageKeyFile (SOPS_AGE_KEY_FILE), reading
// it from stdin, and returns the plaintext. Nothing of the user's sops
// configuration is read: it runs in an empty directory with only that
// identity. Its error never holds the plaintext (sops's message is
// dropped when it holds more than one line).
func SopsDecrypt(ctx context.Context, ageKeyFile string, data []byte) ([]byte, error) {
	bin, err := SopsBinaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "adopt-sops-decrypt-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "sops"), "decrypt", "--input-type", "yaml", "--output-type", "yaml", "--filename-override", filepath.Join(dir, "secret.yaml"))
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "SOPS_AGE_KEY_FILE=" + ageKeyFile}
	cmd.Stdin = bytes.NewReader(data)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if strings.Count(msg, "\n") > 0 {
			msg = "(multi-line message dropped)"
		}
		return nil, fmt.Errorf("sops decrypt: %v: %s", err, msg)
	}
	return out.Bytes(), nil
}
