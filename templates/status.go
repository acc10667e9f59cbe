package templates

import (
	"fmt"
	htmltemplate "html/template"
)

// StatusReport is the HTML report of `adopt status --html`, an
// html/template (contextual escaping) rather than a text template.
const StatusReport = "status.html.tmpl"

// LoadHTML parses the named HTML template, from Dir when it holds the file,
// else the embedded default, with funcs added to the helpers.
func (s *Set) LoadHTML(name string, funcs htmltemplate.FuncMap) (*htmltemplate.Template, error) {
	text, src, err := s.read(name)
	if err != nil {
		return nil, err
	}
	t, err := htmltemplate.New(name).Option("missingkey=error").Funcs(htmltemplate.FuncMap(Funcs())).Funcs(funcs).Parse(string(text))
	if err != nil {
		return nil, fmt.Errorf("template %s (%s): %w", name, src, err)
	}
	return t, nil
}
