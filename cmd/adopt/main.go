// Command adopt moves hand-applied Kubernetes objects under Argo CD
// management. This package holds the cobra commands only: each verb has an
// Options struct with Complete, Validate and Run, and flags never leak past
// Complete. The work itself lives in adopt/, argoapp/ and gitops/.
package main

import (
	"os"

	_ "golang.org/x/crypto/x509roots/fallback" // CA roots where the system has none (the release image)

	"github.com/adopt-dev/adopt/internal/profile"
	_ "github.com/adopt-dev/adopt/internal/quietinit" // before kubectl's commands initialize
)

func main() {
	installAPIWarnings(os.Stderr)
	os.Exit(profile.Run(func() int { return runAs(os.Args[0], os.Args[1:], os.Stdin, os.Stdout, os.Stderr) }))
}
