package apply

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/esoform"
	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/plan"
)

// prPlan is a plan with the incident's ConfigMap (in Git, critical), one
// exported object and a Secret left out.
func prPlan() *plan.Plan {
	hook := plan.Object{Ref: objref.Ref{Kind: "ConfigMap", Version: "v1", Namespace: "litellm-test", Name: "litellm-test-usage-hook"},
		Budget: budget.Budget{AnnotationBytes: 257270, LastAppliedBytes: 257149, PercentOfCap: 98.1, Headroom: 4874, HasLastApplied: true},
		Level:  budget.LevelCritical, App: "litellm-test", Git: &plan.GitMatch{Path: "k8s/system/litellm-test-usage-hook-cm.yaml", Line: 1}}
	svc := plan.Object{Ref: objref.Ref{Kind: "Service", Version: "v1", Namespace: "litellm-test", Name: "litellm"},
		Budget: budget.Budget{AnnotationBytes: 900, PercentOfCap: 0.3, Headroom: 261244}, Level: budget.LevelOK, App: "litellm-test"}
	return &plan.Plan{
		Cluster: plan.Cluster{Server: "https://127.0.0.1:6443", Context: "prod-eu"},
		Applications: []plan.Application{{Name: "litellm-test", Namespace: "litellm-test", SourcePath: "k8s/system",
			Objects: []string{hook.Ref.String(), svc.Ref.String()}}},
		Objects: []plan.Object{hook, svc},
		Skipped: []plan.Skipped{{Kind: "Secret", Namespace: "litellm-test", Name: "litellm-keys", Reason: "Secrets are never exported to Git"}},
	}
}

func prInput() PRInput {
	return PRInput{
		Head: "adopt/litellm-test", Base: "main", Plan: prPlan(), PlanPath: "plans/prod-eu.yaml",
		Exported: map[string]string{"Service litellm-test/litellm": "adopted/litellm-test/service-litellm.yaml"},
		Drift:    map[string]string{"ConfigMap litellm-test/litellm-test-usage-hook": "live 8,126 B behind Git"},
		Secrets:  map[string]string{"Secret litellm-test/api-token": "--secrets=skip"},
		Runbooks: []string{"k8s/system/README.md line 12 runs `kubectl apply -f` on an adopted file; change it to --server-side or remove it."},
	}
}

func TestPRBodyFromPlan(t *testing.T) {
	title, body, err := RenderPR(prInput(), "")
	if err != nil {
		t.Fatal(err)
	}
	if title != "adopt: 1 Argo CD Application for 2 hand-applied objects on prod-eu" {
		t.Errorf("title = %q", title)
	}
	bodyHas(t, body,
		"### Application `litellm-test` (namespace `litellm-test`)",
		"| `ConfigMap litellm-test/litellm-test-usage-hook` | 257270 B | 98.1% (critical) | in Git at `k8s/system/litellm-test-usage-hook-cm.yaml:1` | live 8,126 B behind Git |",
		"| `Service litellm-test/litellm` | 900 B | 0.3% | exported to `adopted/litellm-test/service-litellm.yaml` | n/a (exported from the cluster) |",
		"98.1% of the 262,144 B cap (critical); 4874 B of headroom",
		"carries a 257149 B last-applied-configuration annotation",
		"`Service litellm-test/litellm`: no source in Git",
		"k8s/system/README.md line 12 runs `kubectl apply -f`",
		"- `Secret litellm-test/api-token`: --secrets=skip\n- `Secret litellm-test/litellm-keys`: Secrets are never exported to Git",
		"adopt finalize --plan plans/prod-eu.yaml",
	)
	// --pr-title wins over the template.
	if title, _, _ := RenderPR(prInput(), "mine"); title != "mine" {
		t.Errorf("--pr-title ignored: %q", title)
	}
	// A --templates directory overrides the title template only.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, PRTitleTemplate), []byte("custom {{ .Objects }} on {{ .Cluster }}"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := prInput()
	in.TemplatesDir = dir
	title, body2, err := RenderPR(in, "")
	if err != nil || title != "custom 2 on prod-eu" || body2 != body {
		t.Errorf("override: title %q, err %v, body changed %v", title, err, body2 != body)
	}
}

// TestPRBodyUsesPlanDriftAndFindings: with no drift from apply, the
// plan's own drift and findings fill the table and the risks.
func TestPRBodyUsesPlanDriftAndFindings(t *testing.T) {
	in := prInput()
	in.Drift = nil
	in.Plan.Objects[0].Drift = &gitindex.Drift{Fields: []string{"data.usage_hook.py"}, BytesBehind: 8126}
	in.Plan.Objects[0].Findings = []plan.Finding{{Code: plan.CodeStaleVsGit, Severity: plan.Warning, Message: "live is 8126 B behind Git"}}
	_, body, err := RenderPR(in, "")
	if err != nil {
		t.Fatal(err)
	}
	bodyHas(t, body,
		"| live 8126 B behind Git: data.usage_hook.py |",
		"- `ConfigMap litellm-test/litellm-test-usage-hook` (warning): live is 8126 B behind Git",
	)
}

// TestPRBodyExplainsCSAMigration renders the embedded pull-request body for
// an Application apply gave ClientSideApplyMigration=false.
func TestPRBodyExplainsCSAMigration(t *testing.T) {
	p := &plan.Plan{
		Applications: []plan.Application{{Name: "adopt-litellm-test", Namespace: "litellm-test", SourcePath: "k8s/system",
			Objects: []string{"ConfigMap litellm-test/litellm-test-usage-hook"}}},
		Objects: []plan.Object{{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Namespace: "litellm-test", Name: "litellm-test-usage-hook"}, App: "adopt-litellm-test"}},
	}
	why := "on Argo CD v3.2.6 (from --argocd-version), the client-side-apply migration would fail the first sync"
	_, body, err := RenderPR(PRInput{Plan: p, Head: "adopt/x", Base: "main", CSAMigration: map[string]string{"adopt-litellm-test": why}}, "title")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, "Sync option `ClientSideApplyMigration=false`: "+why+".") {
		t.Errorf("PR body does not explain the option:\n%s", body)
	}
	_, body, err = RenderPR(PRInput{Plan: p, Head: "adopt/x", Base: "main"}, "title")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(body, "ClientSideApplyMigration") {
		t.Errorf("PR body mentions the option although apply did not set it:\n%s", body)
	}
}

// TestPRBodyHelm: a Helm-sourced Application's section names the chart
// source and the placeholders, carries the proof with each difference, the
// hooks and the commands that retire the release by hand, and the release
// records are not listed as Secrets left out.
func TestPRBodyHelm(t *testing.T) {
	p := helmPlan()
	h := p.Applications[2].Helm
	h.Storage, h.SourceFrom = "Secret", "adopt.yaml helmRepositories"
	h.Hooks = []plan.HelmHook{{Kind: "Job", Name: "migrate", Events: []string{"pre-upgrade"}, ArgoCD: plan.HookArgoCD([]string{"pre-upgrade"})}}
	h.Proof = &plan.HelmProof{Objects: 3, Identical: 1, Differences: []plan.HelmDifference{
		{Object: "Secret shop/web-auth", Text: "Secret data differs (data.password): kept from live", Kept: true},
		{Object: "ConfigMap shop/web-cfg", Text: "differs at data.greeting"},
	}}
	p.Skipped = append(p.Skipped, plan.Skipped{Kind: "Secret", Namespace: "shop", Name: "sh.helm.release.v1.web.v1", Class: "helm-record", Reason: "Helm's release record"})
	_, body, err := RenderPR(PRInput{Head: "adopt/x", Base: "main", Plan: p}, "")
	if err != nil {
		t.Fatal(err)
	}
	bodyHas(t, body,
		"Helm release `web`: chart `web` 1.2.3 from `https://charts.example.invalid/stable` (adopt.yaml helmRepositories)",
		"1 secret-like value(s) as placeholders (`auth.password`",
		"Helm proof: the chart rendered with these values DIFFERS from the release's manifest: 3 object(s), 1 identical.",
		"- `ConfigMap shop/web-cfg`: differs at data.greeting",
		"- Helm hook `Job migrate` (pre-upgrade): PreSync, at every sync",
		"kubectl -n shop delete secrets -l owner=helm,name=web",
		"| `ConfigMap shop/web-cfg` | 0 B | 0.0% | rendered from chart `web` 1.2.3 |",
	)
	if strings.Contains(body, "sh.helm.release.v1") {
		t.Errorf("a release record is listed:\n%s", body)
	}
}

// TestPRBodySealed: a Secret apply sealed is listed as sealed, with its
// file and the controller's key, in its Application's table and its own
// section; finalize's next step syncs (it marks first). A body with none
// keeps its sections as they were.
func TestPRBodySealed(t *testing.T) {
	_, plain, err := RenderPR(prInput(), "")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain, "Secrets sealed") || !strings.Contains(plain, "\n\n### Secrets left out") {
		t.Errorf("a body with no sealed Secret changed its sections:\n%s", plain)
	}
	in := prInput()
	db := plan.Object{Ref: objref.Ref{Kind: "Secret", Version: "v1", Namespace: "litellm-test", Name: "db"}, App: "litellm-test",
		SecretForm: &plan.SecretForm{Form: plan.SecretFormSealed, Controller: "kube-system/sealed-secrets-controller", Fingerprint: "SHA256:ab12"}}
	in.Plan.Objects = append(in.Plan.Objects, db)
	in.Plan.Applications[0].Objects = append(in.Plan.Applications[0].Objects, db.Ref.String())
	in = Summary{Sealed: []SealedSummary{{Ref: db.Ref.String(), File: "adopted/litellm-test/sealedsecret.bitnami.com-db.yaml", Controller: db.SecretForm.Controller, Fingerprint: db.SecretForm.Fingerprint}}}.PRInput(in)
	_, body, err := RenderPR(in, "")
	if err != nil {
		t.Fatal(err)
	}
	bodyHas(t, body,
		"| `Secret litellm-test/db` |",
		"sealed to `adopted/litellm-test/sealedsecret.bitnami.com-db.yaml`",
		"### Secrets sealed",
		"- `Secret litellm-test/db`: `adopted/litellm-test/sealedsecret.bitnami.com-db.yaml`, sealed with the Sealed Secrets controller at Service kube-system/sealed-secrets-controller, key SHA256:ab12",
		"adopt finalize --plan plans/prod-eu.yaml --sync",
		"before.\n\n### Secrets left out",
	)
}

// TestPRBodyExternalSecret: a Secret apply wrote as an ExternalSecret is
// listed with its file, store and key, in its Application's table and
// its own section; finalize's next step syncs (it pushes first). A body
// with none keeps its sections as they were.
func TestPRBodyExternalSecret(t *testing.T) {
	_, plain, err := RenderPR(prInput(), "")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain, "as ExternalSecrets") {
		t.Errorf("a body with no ExternalSecret has its section:\n%s", plain)
	}
	in := prInput()
	db := plan.Object{Ref: objref.Ref{Kind: "Secret", Version: "v1", Namespace: "litellm-test", Name: "db"}, App: "litellm-test",
		SecretForm: &plan.SecretForm{Form: plan.SecretFormESO, Store: "SecretStore litellm-test/vault", RemoteKey: "adopt-litellm-test-db"}}
	in.Plan.Objects = append(in.Plan.Objects, db)
	in.Plan.Applications[0].Objects = append(in.Plan.Applications[0].Objects, db.Ref.String())
	file := "adopted/litellm-test/externalsecret.external-secrets.io-db.yaml"
	in = Summary{ESO: []ESOSummary{{Ref: db.Ref.String(), File: file, Store: db.SecretForm.Store, RemoteKey: db.SecretForm.RemoteKey}}}.PRInput(in)
	_, body, err := RenderPR(in, "")
	if err != nil {
		t.Fatal(err)
	}
	bodyHas(t, body,
		"| `Secret litellm-test/db` |",
		"as an ExternalSecret in `"+file+"`",
		"### Secrets as ExternalSecrets",
		"- `Secret litellm-test/db`: `"+file+"`, reading key `adopt-litellm-test-db` of SecretStore litellm-test/vault",
		"so its last-applied-configuration does not travel",
		"adopt finalize --plan plans/prod-eu.yaml --sync",
		"to have that proof here, before the merge, run `adopt apply --push-secrets`",
		"before the pull request is opened).\n\n### Secrets left out",
	)

	// Pushed by apply --push-secrets: each key proven, names only.
	in = Summary{ESO: []ESOSummary{{Ref: db.Ref.String(), File: file, Store: db.SecretForm.Store, RemoteKey: db.SecretForm.RemoteKey,
		Pushed: &esoform.Pushed{Keys: []string{"cert.bin", "password"}}}}}.PRInput(in)
	if _, body, err = RenderPR(in, ""); err != nil {
		t.Fatal(err)
	}
	bodyHas(t, body,
		"reading key `adopt-litellm-test-db` of SecretStore litellm-test/vault\n"+
			"  - key cert.bin: the store gives back the live value (read back through SecretStore litellm-test/vault, key adopt-litellm-test-db)\n"+
			"  - key password: the store gives back the live value (read back through SecretStore litellm-test/vault, key adopt-litellm-test-db)\n",
		"Proven before this pull request was opened: `adopt apply --push-secrets` pushed",
		"if this pull request is rejected, delete the key from the store",
		"reads each key back again before it syncs",
		"adopt finalize --plan plans/prod-eu.yaml --sync",
		"Do not sync them before.\n\n### Secrets left out",
	)
	if strings.Contains(body, "to have that proof here") {
		t.Errorf("the pushed body still offers --push-secrets:\n%s", body)
	}
}

// bodyHas fails t for each of wants that body lacks.
func bodyHas(t *testing.T, body string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(body, want) {
			t.Errorf("the body lacks %q:\n%s", want, body)
		}
	}
}
