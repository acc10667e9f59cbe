package main

import (
	"fmt"
	"io"
	"sync"

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

// newAPIWarnings sends warnings to out; the root command installs it as
// client-go's process-wide default (rest.SetDefaultWarningHandler).
func newAPIWarnings(out io.Writer) *apiWarnings {
	return &apiWarnings{out: out, seen: map[string]bool{}}
}
