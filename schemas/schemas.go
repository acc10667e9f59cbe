// Package schemas owns the JSON Schemas of adopt's documents: the
// AdoptionPlan (adoption-plan.json), the FleetAdoptionPlan
// (fleet-adoption-plan.json, a plan directory's fleet.yaml) and adopt.yaml
// (adopt-config.json).
// They are generated from the Go types (go generate ./schemas) and
// committed; a test fails when the committed files and the types disagree.
// The package also validates documents against them, for tests and for
// editors' yaml-language-server. adopt's binary does not link it.
package schemas

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"path"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"
	sjs "github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/fleet"
	"github.com/adopt-dev/adopt/adopt/plan"
)

//go:generate go run ./gen

// File names of the committed schemas, in this directory.
const (
	PlanFile   = "adoption-plan.json"
	FleetFile  = "fleet-adoption-plan.json"
	ConfigFile = "adopt-config.json"
)

// BaseURL is where the committed schemas are published; each schema's $id
// is BaseURL + its file name, and adopt.yaml files name it in their
// `# yaml-language-server: $schema=` line.
const BaseURL = "https://raw.githubusercontent.com/adopt-dev/adopt/main/schemas/"

const module = "github.com/adopt-dev/adopt"

//go:embed adoption-plan.json
var planSchema []byte

//go:embed fleet-adoption-plan.json
var fleetSchema []byte

//go:embed adopt-config.json
var configSchema []byte

// Plan is the committed AdoptionPlan schema.
func Plan() []byte { return bytes.Clone(planSchema) }

// Fleet is the committed FleetAdoptionPlan schema.
func Fleet() []byte { return bytes.Clone(fleetSchema) }

// Config is the committed adopt.yaml schema.
func Config() []byte { return bytes.Clone(configSchema) }

// Generate reflects the schemas from the Go types, by file name (PlanFile,
// FleetFile, ConfigFile). root is the repository root relative to the
// working directory, which must be this package's directory (as under go
// generate and go test): the field comments are read from the sources and
// become descriptions.
func Generate(root string) (map[string][]byte, error) {
	comments := map[string]string{}
	for _, dir := range []string{"adopt", "argoapp"} {
		r := &jsonschema.Reflector{CommentMap: comments}
		// Keys are base joined with the walked path: from schemas/, the
		// walked "../adopt/plan" must come out as module + "/adopt/plan".
		if err := r.AddGoComments(path.Join(module, "schemas"), path.Join(root, dir)); err != nil {
			return nil, fmt.Errorf("read comments: %w", err)
		}
	}
	pr := &jsonschema.Reflector{CommentMap: comments, Namer: name}
	ps := pr.Reflect(&plan.Plan{})
	pin(ps, PlanFile, "AdoptionPlan", plan.APIVersion, plan.Kind,
		"The reviewable plan `adopt plan --out` writes and `adopt apply` and `adopt finalize` read.")

	fr := &jsonschema.Reflector{CommentMap: comments, Namer: name}
	fs := fr.Reflect(&fleet.Index{})
	pin(fs, FleetFile, "FleetAdoptionPlan", fleet.APIVersion, fleet.Kind,
		"The fleet index `adopt plan --contexts ... --out-dir DIR` writes as DIR/fleet.yaml (and prints under -o json|yaml): each cluster's plan file, and the ApplicationSets proposed across clusters.")

	cr := &jsonschema.Reflector{CommentMap: comments, Namer: name, FieldNameTag: "yaml", RequiredFromJSONSchemaTags: true}
	cs := cr.Reflect(&config.Config{})
	croot := pin(cs, ConfigFile, "adopt.yaml", config.APIVersion, config.Kind,
		"adopt's configuration: exclusions, the Applications' destination, project, repo URL, apps and export directories, naming, grouping and chart repositories. Every field but apiVersion and kind is optional.")
	croot.Required = []string{"apiVersion", "kind"}

	nullableLists(ps)
	nullableLists(fs)
	out := map[string][]byte{}
	for file, s := range map[string]*jsonschema.Schema{PlanFile: ps, FleetFile: fs, ConfigFile: cs} {
		b, err := encode(s)
		if err != nil {
			return nil, err
		}
		out[file] = b
	}
	return out, nil
}

// nullableLists lets every always-written list and map of a plan be
// null as well: encoding/json writes a nil slice or map as null (adopt
// plan -o json does), yaml.v3 as [] or {}, and both read back the same.
func nullableLists(s *jsonschema.Schema) {
	for _, def := range s.Definitions {
		if def.Properties == nil {
			continue
		}
		required := map[string]bool{}
		for _, r := range def.Required {
			required[r] = true
		}
		for pair := def.Properties.Oldest(); pair != nil; pair = pair.Next() {
			p := pair.Value
			if !required[pair.Key] || (p.Type != "array" && !(p.Type == "object" && p.Properties == nil)) {
				continue
			}
			desc := p.Description
			p.Description = ""
			def.Properties.Set(pair.Key, &jsonschema.Schema{Description: desc, AnyOf: []*jsonschema.Schema{p, {Type: "null"}}})
		}
	}
}

// name is a type's definition name: qualified by its package outside the
// document's own (plan.Skipped and gitindex.Skipped both exist).
func name(t reflect.Type) string {
	switch p := t.PkgPath(); p {
	case "", module + "/adopt/plan", module + "/adopt/fleet", module + "/adopt/config":
		return "" // the reflector's default
	default:
		return path.Base(p) + "." + t.Name()
	}
}

// pin sets the schema's id, title and description and fixes apiVersion
// and kind to the document's. It returns the document's own definition.
func pin(s *jsonschema.Schema, file, title, apiVersion, kind, desc string) *jsonschema.Schema {
	s.ID = jsonschema.ID(BaseURL + file)
	s.Title, s.Description = title, desc
	root := s
	if s.Ref != "" {
		root = s.Definitions[strings.TrimPrefix(s.Ref, "#/$defs/")]
	}
	if p, ok := root.Properties.Get("apiVersion"); ok {
		p.Const = apiVersion
	}
	if p, ok := root.Properties.Get("kind"); ok {
		p.Const = kind
	}
	return root
}

func encode(s *jsonschema.Schema) ([]byte, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ValidatePlan checks a plan document (YAML or JSON) against the committed
// AdoptionPlan schema.
func ValidatePlan(doc []byte) error { return validate(PlanFile, planSchema, doc) }

// ValidateFleet checks a FleetAdoptionPlan (fleet.yaml, YAML or JSON)
// against the committed schema.
func ValidateFleet(doc []byte) error { return validate(FleetFile, fleetSchema, doc) }

// ValidateConfig checks an adopt.yaml document against the committed
// schema.
func ValidateConfig(doc []byte) error { return validate(ConfigFile, configSchema, doc) }

func validate(name string, schema, doc []byte) error {
	s, err := sjs.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return fmt.Errorf("schema %s: %w", name, err)
	}
	c := sjs.NewCompiler()
	if err := c.AddResource(BaseURL+name, s); err != nil {
		return fmt.Errorf("schema %s: %w", name, err)
	}
	sch, err := c.Compile(BaseURL + name)
	if err != nil {
		return fmt.Errorf("schema %s: %w", name, err)
	}
	v, err := instance(doc)
	if err != nil {
		return err
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Errorf("against %s: %s", name, strings.Join(strings.Fields(fmt.Sprintf("%#v", err)), " "))
	}
	return nil
}

// instance decodes YAML (a superset of JSON) into the values a JSON
// decoder gives, by way of JSON, so numbers and maps are what the
// validator expects.
func instance(doc []byte) (any, error) {
	var y any
	if err := yaml.Unmarshal(doc, &y); err != nil {
		return nil, fmt.Errorf("not YAML or JSON: %w", err)
	}
	j, err := json.Marshal(y)
	if err != nil {
		return nil, fmt.Errorf("not representable as JSON: %w", err)
	}
	return sjs.UnmarshalJSON(bytes.NewReader(j))
}
