// Command adopt moves hand-applied Kubernetes objects under Argo CD
// management. This package holds the cobra commands only: each verb has an
// Options struct with Complete, Validate and Run, and flags never leak past
// Complete. The work itself lives in adopt/, argoapp/ and gitops/.
package main

import (
	"os"
)

func main() {
	os.Exit(runAs(os.Args[0], os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
