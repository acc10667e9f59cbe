package printer

import (
	"encoding/json"
	"io"

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
