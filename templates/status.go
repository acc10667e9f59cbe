package templates

import (
	"fmt"
	htmltemplate "html/template"
	"os"
)

// StatusReport is the HTML report of `adopt status --html`, an
// html/template (contextual escaping) rather than a text template.
const StatusReport = "status.html.tmpl"

// LoadHTML parses the named HTML template, from Dir when it holds the file,
// else the embedded default, with funcs added to the helpers.
func (s *Set) LoadHTML(name string, funcs htmltemplate.FuncMap) (*htmltemplate.Template, error) {
	var text []byte
	var err error
	src := s.Source(name)
	if src == "embedded" {
		text, err = embedded.ReadFile(name)
	} else {
		text, err = os.ReadFile(src)
	}
	if err != nil {
		return nil, fmt.Errorf("read template %s (%s): %w", name, src, err)
	}
	t, err := htmltemplate.New(name).Option("missingkey=error").Funcs(htmltemplate.FuncMap(Funcs())).Funcs(funcs).Parse(string(text))
	if err != nil {
		return nil, fmt.Errorf("template %s (%s): %w", name, src, err)
	}
	return t, nil
}
