package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"gopkg.in/yaml.v3"
)

// Marshal encodes p as YAML with a stable field order.
func Marshal(p *Plan) ([]byte, error) {
	var b bytes.Buffer
	e := yaml.NewEncoder(&b)
	e.SetIndent(2)
	if err := e.Encode(p); err != nil {
		return nil, fmt.Errorf("encode plan: %w", err)
	}
	if err := e.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Unmarshal decodes a plan (YAML or JSON) and checks its apiVersion and kind.
func Unmarshal(data []byte) (*Plan, error) {
	var p Plan
	var err error
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		err = json.Unmarshal(data, &p)
	} else {
		err = yaml.Unmarshal(data, &p)
	}
	if err != nil {
		return nil, fmt.Errorf("not a readable plan: %w", err)
	}
	if p.Kind != Kind || p.APIVersion != APIVersion {
		return nil, fmt.Errorf("not an %s: apiVersion %q, kind %q (this adopt reads %s)", Kind, p.APIVersion, p.Kind, APIVersion)
	}
	return &p, nil
}

// WriteFile writes p to path atomically (temp file, then rename).
func WriteFile(path string, p *Plan) error {
	b, err := Marshal(p)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("write plan %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write plan %s: %w", path, err)
	}
	return nil
}
