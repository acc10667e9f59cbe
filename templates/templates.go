// Package templates owns the text templates adopt renders into the GitOps
// repo: the Argo CD Application and the commit message. They are embedded in
// the binary; a team may override any of them with a directory holding files
// of the same names (--templates DIR). It renders nothing itself and holds no
// state beyond the embedded files.
package templates

import (
	"embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"
)

// Template names.
const (
	Application   = "application.yaml.tmpl"
	CommitMessage = "commit-message.tmpl"
)

//go:embed *.tmpl
var embedded embed.FS

// Set loads templates, from Dir when it holds the file, else the embedded
// default.
type Set struct {
	// Dir is the override directory; empty for the embedded templates only.
	Dir string
}

// New checks that dir (if given) is a readable directory.
func New(dir string) (*Set, error) {
	if dir != "" {
		fi, err := os.Stat(dir)
		if err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("--templates %s is not a readable directory. Pass a directory holding %s and/or %s", dir, Application, CommitMessage)
		}
	}
	return &Set{Dir: dir}, nil
}

// Source returns where a template comes from: a file path or "embedded".
func (s *Set) Source(name string) string {
	if s.Dir != "" {
		p := filepath.Join(s.Dir, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "embedded"
}

// read returns the named template's text and where it came from: Dir's
// file when it has one, else "embedded".
func (s *Set) read(name string) ([]byte, string, error) {
	var text []byte
	var err error
	src := s.Source(name)
	if src == "embedded" {
		text, err = embedded.ReadFile(name)
	} else {
		text, err = os.ReadFile(src)
	}
	if err != nil {
		return nil, src, fmt.Errorf("read template %s (%s): %w", name, src, err)
	}
	return text, src, nil
}

// Load parses the named template with the helper functions.
func (s *Set) Load(name string) (*template.Template, error) {
	text, src, err := s.read(name)
	if err != nil {
		return nil, err
	}
	t, err := template.New(name).Option("missingkey=error").Funcs(Funcs()).Parse(string(text))
	if err != nil {
		return nil, fmt.Errorf("template %s (%s): %w", name, src, err)
	}
	return t, nil
}

// Funcs are the helpers templates may use:
//
//	quote  renders a string as a double-quoted YAML scalar
//	join   joins a list with a separator
//	indent prefixes every line but the first with n spaces
func Funcs() template.FuncMap {
	return template.FuncMap{
		"quote": func(s string) string {
			b, _ := json.Marshal(s)
			return string(b)
		},
		"join": func(sep string, l []string) string { return strings.Join(l, sep) },
		"indent": func(n int, s string) string {
			return strings.ReplaceAll(s, "\n", "\n"+strings.Repeat(" ", n))
		},
	}
}
