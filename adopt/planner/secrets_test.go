package planner_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/adopt-dev/adopt/adopt/apply"
	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/adopt/helmrelease"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/planner"
	"github.com/adopt-dev/adopt/adopt/preview"
	"github.com/adopt-dev/adopt/adopt/redact"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/templates"
)

// TestOneSecretRule (issue 44): one table of values, each where the one
// secret rule must judge it, goes through every caller of the rule: Helm
// values (helmrelease.Redact), the export check that plan and apply both
// make (plan.SecretValues of the clean export of the live object), the
// first-sync preview's hiding (preview.Previewer against the real API
// server, the value changed in the manifest) and diagnostics' masking
// (argoapp.PodProblem of a pod whose message quotes the value as
// name: value). Every caller gives each input the same verdict.
func TestOneSecretRule(t *testing.T) {
	ctx := ctxFor(t)
	ns := cp.Namespace(t)
	group := ns + ".adopt.test"
	gvr := widgets(t, ctx, group)
	j, err := redact.DefaultJudge()
	if err != nil {
		t.Fatal(err)
	}
	at := func(key string) func(any) map[string]any {
		return func(v any) map[string]any { return map[string]any{key: v} }
	}
	env := func(field string) func(any) map[string]any {
		return func(v any) map[string]any {
			return map[string]any{"env": []any{map[string]any{field: "API_TOKEN", "value": v}, map[string]any{field: "QUEUE", "value": "jobs-default"}}}
		}
	}
	// schema is v as a CustomResourceDefinition's schema describes a
	// field named passCredentials.
	schema := func(v any) map[string]any {
		return map[string]any{"passCredentials": map[string]any{"description": v, "type": "boolean"}}
	}
	cases := []struct {
		name string
		spec func(any) map[string]any
		v    any
		// secret is what must not be seen when the verdict is secret
		// (and is seen otherwise); text is the value as a message quotes it.
		secret, text string
		want         bool
	}{
		{"digits under a secret name", at("db_password"), "12345678", "12345678", "db_password: 12345678", true},
		{"a number under a secret name", at("db_password"), 12345678, "12345678", "db_password: 12345678", true},
		{"env entry by name", env("name"), "abcd1234", "abcd1234", "API_TOKEN=abcd1234", true},
		{"env entry by key", env("key"), "abcd1234", "abcd1234", "API_TOKEN=abcd1234", true},
		{"URL with a password", at("DATABASE_URL"), "postgres://app:s3cr3tpass@db:5432/app", "s3cr3tpass", "DATABASE_URL: postgres://app:s3cr3tpass@db:5432/app", true},
		{"GitHub token under a plain name", at("github"), "ghp_0123456789abcdefABCDEF0123456789abcd", "ghp_0123456789abcdefABCDEF0123456789abcd", "github: ghp_0123456789abcdefABCDEF0123456789abcd", true},
		{"a list under a secret name", at("passwords"), []any{"s3cr3t-one"}, "s3cr3t-one", "passwords: s3cr3t-one", true},
		{"a schema beneath a secret name", schema, "pass credentials to all domains", "pass credentials to all domains", "description: pass credentials to all domains", false},
		{"plain value", at("greeting"), "hello-there", "hello-there", "greeting: hello-there", false},
		{"plain number", at("replicas"), 12345678, "12345678", "replicas: 12345678", false},
		{"switch under a secret name", at("automountServiceAccountToken"), true, "true", "automountServiceAccountToken: true", false},
		{"reference to a secret", at("tokenRef"), "some-secret-name", "some-secret-name", "tokenRef: some-secret-name", false},
		{"field named key", at("key"), "dedicated-credentials", "dedicated-credentials", "key: dedicated-credentials", false},
		{"under 4 bytes under a secret name", at("password"), "abc", "abc", "password: abc", false},
	}
	// The preview's manifest changes each value to "rotated", or, where
	// that would itself be a secret under the value's name, to this.
	rotated := map[string]any{"switch under a secret name": false, "under 4 bytes under a secret name": "xyz"}
	dyn := dynamic.NewForConfigOrDie(cp.RESTConfig())
	pv := &preview.Previewer{Client: dyn}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := fmt.Sprintf("w%d", i)
			handApply(t, ctx, widget(group, ns, name, c.spec(c.v)))
			live, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			secret := map[string]bool{}

			values, _, _ := helmrelease.Redact(j, c.spec(c.v))
			b, err := json.Marshal(values)
			if err != nil {
				t.Fatal(err)
			}
			secret["Helm values"] = !strings.Contains(string(b), c.secret)

			clean, err := export.Clean(live, export.Options{})
			if err != nil {
				t.Fatal(err)
			}
			ref := objref.Ref{Group: group, Version: "v1", Kind: "Widget", Resource: "widgets", Namespace: ns, Name: name}
			fs := plan.SecretValues(j, clean.Object, ref, nil)
			secret["export"] = len(fs) > 0 && fs[0].Severity == plan.Critical

			to, ok := rotated[c.name]
			if !ok {
				to = "rotated"
			}
			manifest := &unstructured.Unstructured{Object: widget(group, ns, name, c.spec(to))}
			r, err := pv.Object(ctx, preview.Input{Resource: gvr, Manifest: manifest, Live: live})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Changes) == 0 {
				t.Fatalf("the preview found no change to hide or show: %+v", r)
			}
			b, err = json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			secret["preview"] = !strings.Contains(string(b), c.secret)

			pod := corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "app",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: c.text}}}}}}
			secret["diagnostics"] = !strings.Contains(argoapp.PodProblem(j, &pod, ""), c.secret)

			for _, caller := range slices.Sorted(maps.Keys(secret)) {
				if secret[caller] != c.want {
					t.Errorf("%s: secret %v, want %v", caller, secret[caller], c.want)
				}
			}
		})
	}
}

// TestPlanShowsEveryRefusal (issue 44): an estate over three namespaces
// holds a ConfigMap with a database URL's password, a Deployment with a
// literal token in env, a custom resource with a number under a secret
// key (as Helm values hold one), a clean ConfigMap, a clean Deployment
// that reads its password from a Secret, and that Secret. The plan, with
// and without the preview, carries one critical secret-value finding (the
// path and rule) for each of the first three and none for the others, and
// their risk is critical; apply's export refuses exactly those, naming
// every one with the same path and rule. No secret value reaches the plan
// or the refusal.
func TestPlanShowsEveryRefusal(t *testing.T) {
	ctx := ctxFor(t)
	web, jobs, quiet := cp.Namespace(t), cp.Namespace(t), cp.Namespace(t)
	group := jobs + ".adopt.test"
	widgets(t, ctx, group)
	canary := func(prefix string) string {
		b := make([]byte, 12)
		if _, err := rand.Read(b); err != nil {
			t.Fatal(err)
		}
		return prefix + hex.EncodeToString(b)
	}
	urlPass, token, secretPass := canary("Up"), canary("Tk"), canary("Sp")
	deployment := func(ns, name string, pod map[string]any) map[string]any {
		return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": name, "namespace": ns},
			"spec": map[string]any{"replicas": 0, "selector": map[string]any{"matchLabels": map[string]any{"app": name}},
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": name}}, "spec": pod}}}
	}
	configMap := func(ns, name string, data map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": ns}, "data": data}
	}
	handApply(t, ctx,
		configMap(web, "app-settings", map[string]any{"DATABASE_URL": "postgres://app:" + urlPass + "@db.example.invalid:5432/app", "LOG_LEVEL": "info"}),
		deployment(jobs, "worker", map[string]any{"containers": []any{map[string]any{"name": "worker", "image": "registry.invalid/worker:1",
			"env": []any{map[string]any{"name": "API_TOKEN", "value": token}, map[string]any{"name": "QUEUE", "value": "jobs-default"}}}}}),
		widget(group, jobs, "chart-values", map[string]any{"db": map[string]any{"password": 80123456}, "replicas": 2}),
		configMap(quiet, "greeting", map[string]any{"greeting": "hello there"}),
		map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "db", "namespace": quiet}, "stringData": map[string]any{"password": secretPass}},
		deployment(quiet, "web", map[string]any{"automountServiceAccountToken": false, "containers": []any{map[string]any{"name": "web", "image": "registry.invalid/web:1",
			"env":          []any{map[string]any{"name": "DB_PASSWORD", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "db", "key": "password"}}}},
			"volumeMounts": []any{map[string]any{"name": "db", "mountPath": "/etc/db"}}}},
			"volumes": []any{map[string]any{"name": "db", "secret": map[string]any{"secretName": "db", "defaultMode": 0o400, "items": []any{map[string]any{"key": "password", "path": "password"}}}}}}),
	)
	want := map[string][]string{
		objref.Ref{Kind: "ConfigMap", Namespace: web, Name: "app-settings"}.String():             {"data.DATABASE_URL looks like a secret (rule url-password)"},
		objref.Ref{Group: "apps", Kind: "Deployment", Namespace: jobs, Name: "worker"}.String():  {"spec.template.spec.containers[0].env[0].value looks like a secret (rule secret-key-name)"},
		objref.Ref{Group: group, Kind: "Widget", Namespace: jobs, Name: "chart-values"}.String(): {"spec.db.password looks like a secret (rule secret-key-name)"},
	}
	noSecret := func(where, text string) {
		t.Helper()
		for _, s := range []string{urlPass, token, secretPass, "80123456"} {
			if strings.Contains(text, s) {
				t.Errorf("a secret value is in %s", where)
			}
		}
	}
	// says is each object's critical secret-value messages, cut after
	// the rule, by ref.
	says := func(msgs map[string][]string) map[string][]string {
		out := map[string][]string{}
		for ref, ms := range msgs {
			for _, m := range ms {
				head, _, _ := strings.Cut(m, ")")
				out[ref] = append(out[ref], head+")")
			}
		}
		return out
	}
	for _, withPreview := range []bool{false, true} {
		p, err := planner.Plan(ctx, scan(t, strings.Join([]string{web, jobs, quiet}, ","), withPreview))
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := p.WriteJSON(&buf, false); err != nil {
			t.Fatal(err)
		}
		noSecret(fmt.Sprintf("the plan (preview %v)", withPreview), buf.String())
		planned := map[string][]string{}
		for _, o := range p.Objects {
			for _, f := range o.Findings {
				if f.Code == plan.CodeSecretValue && f.Severity == plan.Critical {
					planned[o.Ref.String()] = append(planned[o.Ref.String()], f.Message)
				}
			}
			if _, bad := want[o.Ref.String()]; bad && o.Risk != plan.Critical {
				t.Errorf("preview %v: %s has risk %q, want critical", withPreview, o.Ref.String(), o.Risk)
			}
		}
		if got := says(planned); !reflect.DeepEqual(got, want) {
			t.Errorf("preview %v: the plan's critical secret-value findings %v, want %v", withPreview, got, want)
		}

		refused := exportRefusals(t, ctx, p)
		noSecret(fmt.Sprintf("apply's refusal (preview %v)", withPreview), fmt.Sprint(refused))
		if !reflect.DeepEqual(refused, planned) {
			t.Errorf("preview %v: apply refuses %v, the plan shows %v", withPreview, refused, planned)
		}
	}
}

// exportRefusals runs apply's export of p against the control plane and
// returns the messages of its refusal by object.
func exportRefusals(t *testing.T, ctx context.Context, p *plan.Plan) map[string][]string {
	t.Helper()
	cfg := cp.RESTConfig()
	core, err := kubernetes.NewForConfig(discover.ProtobufConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	fetch, list, count := apply.Live(dynamic.NewForConfigOrDie(cfg), core.CoreV1())
	set, err := templates.New("")
	if err != nil {
		t.Fatal(err)
	}
	a, err := apply.New(apply.Options{Plan: p, Secrets: export.SecretsSkip, Templates: set, Fetch: fetch, List: list, Count: count})
	if err != nil {
		t.Fatal(err)
	}
	err = a.Export(ctx)
	var sv *apply.SecretValuesError
	if !errors.As(err, &sv) {
		t.Fatalf("export: %v, want a refusal of the objects holding secrets", err)
	}
	for _, o := range sv.Objects {
		if !strings.Contains(err.Error(), o.Ref) {
			t.Errorf("the refusal does not name %s: %s", o.Ref, err)
		}
	}
	out := map[string][]string{}
	for _, o := range sv.Objects {
		for _, f := range o.Findings {
			out[o.Ref] = append(out[o.Ref], f.Message)
		}
	}
	return out
}
