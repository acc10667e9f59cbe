package export

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/adopt-dev/adopt/adopt/yamlenc"
)

// FileName is the predictable file name of an object: <kind>-<name>.yaml,
// with the group added for kinds outside Kubernetes' own groups.
func FileName(group, kind, name string) string {
	k := strings.ToLower(kind)
	if group != "" && strings.Contains(group, ".") && !strings.HasSuffix(group, ".k8s.io") {
		k += "." + group
	}
	return k + "-" + name + ".yaml"
}

// topOrder and metaOrder put the fields people look for first; everything
// else follows in alphabetical order.
var (
	topOrder  = []string{"apiVersion", "kind", "metadata"}
	metaOrder = []string{"name", "namespace", "labels", "annotations"}
)

// Marshal encodes obj as YAML with a stable field order: apiVersion, kind,
// metadata (name, namespace, labels, annotations first), then the rest
// alphabetically at every level. The bytes are yaml.v3's (marshalYAMLv3),
// written by yamlenc; an object with a value yamlenc does not know goes
// through yaml.v3 whole.
func Marshal(obj map[string]any) ([]byte, error) {
	b, err := marshalFast(obj)
	if errors.Is(err, yamlenc.ErrShape) {
		return marshalYAMLv3(obj)
	}
	if err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	return b, nil
}

// marshalFast is Marshal through yamlenc: the root and metadata as
// Mappings in Marshal's order, every other map in yaml.v3's.
func marshalFast(obj map[string]any) ([]byte, error) {
	root := yamlenc.Ordered(obj, topOrder)
	for i, p := range root {
		if md, ok := p.Value.(map[string]any); ok && p.Key == "metadata" {
			root[i].Value = yamlenc.Ordered(md, metaOrder)
		}
	}
	w := yamlenc.New()
	w.Buf = make([]byte, 0, 2048) // most manifests, without growing
	if err := w.Doc(reflect.ValueOf(root)); err != nil {
		return nil, err
	}
	return w.Buf, nil
}

// marshalYAMLv3 is Marshal through yaml.v3 alone: the map encoded as a
// node (keys in yaml.v3's order), the root's and metadata's keys moved
// by reorder, the node encoded with an indent of 2.
func marshalYAMLv3(obj map[string]any) ([]byte, error) {
	var n yaml.Node
	if err := n.Encode(obj); err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	reorder(&n, topOrder)
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "metadata" {
			reorder(n.Content[i+1], metaOrder)
		}
	}
	var b bytes.Buffer
	e := yaml.NewEncoder(&b)
	e.SetIndent(2)
	if err := e.Encode(&n); err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	if err := e.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// reorder moves the listed keys of a mapping node to the front, in order;
// the other keys keep their (sorted) order.
func reorder(n *yaml.Node, first []string) {
	if n.Kind != yaml.MappingNode {
		return
	}
	rank := map[string]int{}
	for i, k := range first {
		rank[k] = i
	}
	type pair struct{ k, v *yaml.Node }
	var head, tail []pair
	for i := 0; i+1 < len(n.Content); i += 2 {
		p := pair{n.Content[i], n.Content[i+1]}
		if _, ok := rank[p.k.Value]; ok {
			head = append(head, p)
		} else {
			tail = append(tail, p)
		}
	}
	sort.SliceStable(head, func(i, j int) bool { return rank[head[i].k.Value] < rank[head[j].k.Value] })
	n.Content = n.Content[:0]
	for _, p := range append(head, tail...) {
		n.Content = append(n.Content, p.k, p.v)
	}
}
