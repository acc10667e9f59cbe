package gitindex

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// yaml11Bools are the plain scalars YAML 1.1 reads as booleans and YAML
// 1.2 (yaml.v3) as strings.
var yaml11Bools = map[string]bool{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true, "on": true, "On": true, "ON": true,
	"n": false, "N": false, "no": false, "No": false, "NO": false, "off": false, "Off": false, "OFF": false,
}

// asArgoCDReads rewrites a document's scalar values so that decoding it
// gives what Argo CD's repo-server reads (sigs.k8s.io/yaml: YAML 1.1, then
// JSON): yes/no/on/off and the like are booleans, a timestamp is the
// string as written, an integer beyond int64 is a float, and .inf or .nan is an error (JSON has neither).
// Mapping keys stay as written.
func asArgoCDReads(n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			if err := asArgoCDReads(c); err != nil {
				return err
			}
		}
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			if err := asArgoCDReads(n.Content[i]); err != nil {
				return err
			}
		}
	case yaml.ScalarNode:
		if n.Style != 0 {
			return nil // quoted or a block: a string either way
		}
		switch n.ShortTag() {
		case "!!str":
			if b, ok := yaml11Bools[n.Value]; ok {
				n.Tag, n.Value = "!!bool", strconv.FormatBool(b)
			}
		case "!!timestamp":
			n.Tag = "!!str"
		case "!!int":
			var i int64
			if err := n.Decode(&i); err != nil {
				// Beyond int64, JSON reads a float.
				if f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64); err == nil {
					n.Tag, n.Value = "!!float", strconv.FormatFloat(f, 'g', -1, 64)
				}
			}
		case "!!float":
			var f float64
			if err := n.Decode(&f); err == nil && (math.IsInf(f, 0) || math.IsNaN(f)) {
				return fmt.Errorf("line %d: %s is not a JSON number (Argo CD cannot read the file)", n.Line, n.Value)
			}
		}
	}
	return nil
}
