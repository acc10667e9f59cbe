package printer

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"
)

// writeJSON writes v as indented JSON, the -o json of every report.
func writeJSON(w io.Writer, v any) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(v)
}

// writeYAML writes v as YAML through its JSON form (sigs.k8s.io/yaml), the
// -o yaml of every report but the plan's.
func writeYAML(w io.Writer, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// tableJSONYAML writes v in format f: the table (f "" or "table"), JSON or
// YAML; formats name them in the error for any other f. It is the -o of
// the reports with those three formats (finalize, reconcile).
func tableJSONYAML(w io.Writer, v any, f string, formats []string, table func(io.Writer) error) error {
	switch f {
	case "", "table":
		return table(w)
	case "json":
		return writeJSON(w, v)
	case "yaml":
		return writeYAML(w, v)
	}
	return fmt.Errorf("unknown output format %q: use one of %s", f, strings.Join(formats, ", "))
}
