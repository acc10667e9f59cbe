package main

import (
	"fmt"
	"io"
	"sync"

	"k8s.io/client-go/rest"

	"github.com/adopt-dev/adopt/adopt/redact"
)

// apiWarnings prints the API server's warnings (deprecations, a CRD
// version's deprecationWarning) on the command's stderr, each once, with
// what looks like a secret masked: client-go's default sends them around
// adopt's writers to the process's stderr.
type apiWarnings struct {
	mu   sync.Mutex
	out  io.Writer
	seen map[string]bool
}

// HandleWarningHeader implements client-go's rest.WarningHandler.
func (w *apiWarnings) HandleWarningHeader(code int, _ string, text string) {
	if code != 299 || text == "" {
		return
	}
	j, err := redact.DefaultJudge()
	if err != nil {
		// The engine this request serves stops on the same error; the
		// warning is not shown unjudged meanwhile.
		text = "an API server warning is withheld: " + err.Error()
	} else {
		text = j.Mask(text)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen[text] {
		return
	}
	w.seen[text] = true
	fmt.Fprintf(w.out, "Warning: %s\n", text)
}

// newAPIWarnings sends warnings to out.
func newAPIWarnings(out io.Writer) *apiWarnings {
	return &apiWarnings{out: out, seen: map[string]bool{}}
}

// installAPIWarnings makes apiWarnings to out client-go's process-wide
// default (rest.SetDefaultWarningHandler), so that every connection the
// process makes, the kubeconfig's and those built from elsewhere
// (--argocd-clusters' cluster Secrets), sends the API server's warnings
// through it. main calls it once, for the process's stderr; no rest.Config
// sets a handler of its own.
func installAPIWarnings(out io.Writer) {
	rest.SetDefaultWarningHandler(newAPIWarnings(out))
}
