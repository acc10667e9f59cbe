package main

// The leak suite (issue 26): one run plants fresh random canaries of every
// type in every place a secret can sit (hand-applied Secrets, a real Helm
// release's values, Git URLs, Helm's repositories.yaml, Argo CD cluster
// and repository Secrets, the environment), runs every verb over them, and
// scans everything adopt printed or wrote, by channel (leakscan_test.go,
// whose TestLeakSuiteCatchesEachChannel proves that each channel is
// collected and scanned).

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/preview"
	"github.com/adopt-dev/adopt/adopt/reconcile"
	"github.com/adopt-dev/adopt/adopt/redact"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// leakPlaceholderPrefix starts the value adopt writes in place of a
// secret Helm value.
const leakPlaceholderPrefix = "adopt:redacted:"

// valueAt reads a key path (a.b[0].c) in decoded YAML or JSON.
func valueAt(v any, path string) (any, bool) {
	for _, part := range strings.Split(path, ".") {
		name, index, hasIndex := strings.Cut(part, "[")
		if name != "" {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[name]; !ok {
				return nil, false
			}
		}
		if hasIndex {
			i, err := strconv.Atoi(strings.TrimSuffix(index, "]"))
			l, ok := v.([]any)
			if err != nil || !ok || i >= len(l) {
				return nil, false
			}
			v = l[i]
		}
	}
	return v, true
}

// checkPlaceholders: at each key path, values hold a placeholder string,
// not the planted string, number or boolean. A boolean or a number cannot
// be found by a text search; this finds it by its place.
func checkPlaceholders(t *testing.T, where string, values any, paths []string) {
	t.Helper()
	for _, p := range paths {
		v, ok := valueAt(values, p)
		s, isString := v.(string)
		switch {
		case !ok:
			t.Errorf("%s: no value at %s (want a placeholder)", where, p)
		case !isString:
			t.Errorf("%s: the value at %s is a %T, not a placeholder: the planted value was written", where, p, v)
		case !strings.HasPrefix(s, leakPlaceholderPrefix):
			t.Errorf("%s: the value at %s is a string of %d bytes that is not a placeholder (%s...)", where, p, len(s), leakPlaceholderPrefix)
		}
	}
}

// helmApp is the plan's Helm-sourced Application of release rel, or nil.
func helmApp(p *plan.Plan, rel string) *plan.Application {
	for i := range p.Applications {
		if h := p.Applications[i].Helm; h != nil && h.ReleaseName == rel {
			return &p.Applications[i]
		}
	}
	return nil
}

func appInNamespace(p *plan.Plan, ns string) *plan.Application {
	for i := range p.Applications {
		if p.Applications[i].Namespace == ns && p.Applications[i].Helm == nil {
			return &p.Applications[i]
		}
	}
	return nil
}

// TestLeakSuite: one control plane with a real Argo CD v3.2.6, one real
// Gitea and the real helm CLI; fresh random canaries in
//
//   - hand-applied Secrets in three namespaces (kubectl apply, so
//     last-applied-configuration holds them too): data and stringData,
//     multi-line, base64 text, binary, URL-special characters;
//   - a Helm release of testdata/charts/leak whose values hold a string, a
//     number, a boolean, a nested key and a list under secret-like keys, a
//     value only a hook Secret renders and one only the chart's Secret
//     renders (a connection string), a Deployment env var whose value is
//     the password and one from a secretKeyRef;
//   - a Gitea token in --repo's URL, a wrong one in another, the real Gitea
//     token in ADOPT_GIT_TOKEN only, a repository in Helm's
//     repositories.yaml whose URL carries a password, an Argo CD repository
//     Secret's password, a cluster Secret's bearer token (hub and spoke)
//     and a real ServiceAccount token in another (fleet), the API servers'
//     admin tokens, Argo CD's admin password and server key;
//
// then plan in every -o format with --preview and --out, apply --dry-run
// and --open-pr, the pull request merged, the Applications created in
// Argo CD from Git, finalize --sync with its journal, finalize
// --retire-helm-records (the journal must hold the release's record whole,
// values included; nothing else may), status in every -o
// format with --html and --record, finalize --undo (the release back in
// helm list), a hub plan, a fleet plan of the
// registered clusters and its apply. No canary, in any form, may be in any
// plan file, stdout, stderr, Git object, ref or commit message of any
// repository, pull request, journal, status history, SARIF, JUnit or HTML;
// a number Helm value must be a placeholder in the plans and in
// the Application in Git, and a boolean one (a switch holds no secret,
// issue 44) stays as it is; the repository with credentials in
// repositories.yaml must be refused, by name.
func TestLeakSuite(t *testing.T) {
	t.Parallel() // a long test that may run beside others: see TestMain
	began := time.Now()
	phase := func(what string) { t.Logf("leak suite: %s at %s", what, time.Since(began).Round(time.Second)) }
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	// Gitea starts while the control plane and Argo CD do.
	giteaUp := giteaInBackground(ctx, t)
	c := startControlPlane(ctx, t)
	a, err := testenv.StartArgoCD(ctx, c, testenv.ArgoCDCurrent)
	if err != nil {
		t.Fatal(err) // never a skip: Argo CD must start here and in CI
	}
	t.Cleanup(a.Stop)
	// The deployment controller: the chart's Deployment must become Healthy.
	sched, err := testenv.StartScheduling(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sched.Stop)
	g := giteaUp()
	phase("control plane, Argo CD and Gitea up")

	plants := &leakPlants{}
	plants.external("the Argo CD cluster's admin token", c.AdminToken)
	plants.external("the package control plane's admin token", cp.AdminToken)
	plants.external("Argo CD's initial admin password", a.AdminPassword)
	if s, err := c.Clientset().CoreV1().Secrets(a.Namespace).Get(ctx, "argocd-secret", metav1.GetOptions{}); err == nil && len(s.Data["server.secretkey"]) >= minNeedle {
		plants.external("Argo CD's server.secretkey", string(s.Data["server.secretkey"]))
	}
	plants.external("Gitea's admin password", g.Password)

	// Hand-applied Secrets (client-side kubectl apply: last-applied holds
	// them) and a ConfigMap in each of three namespaces.
	ns1, ns2, ns3 := c.Namespace(t), c.Namespace(t), c.Namespace(t)
	urlSpecial := plants.add("a Secret's stringData value with URL-special characters", randomWord(t, "Sp", 14)+"@:/?#&=+ %"+randomWord(t, "", 14))
	var lines []string
	for i := 0; i < 4; i++ {
		lines = append(lines, randomWord(t, "", 48))
	}
	multiLine := plants.add("a Secret's multi-line stringData value", strings.Join(lines, "\n")+"\n")
	binary := plants.add("a Secret's binary data value", string(randomBytes(t, 30)))
	b64Text := plants.add("a Secret's stringData value that is base64 text", base64.StdEncoding.EncodeToString(randomBytes(t, 33)))
	dataPass := plants.add("a Secret's data value", randomWord(t, "Dv", 26))
	cfgPass := plants.add("a password inside a Secret's multi-line config file", randomWord(t, "Cf", 26))
	handSecrets := []map[string]any{
		{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "db-creds", "namespace": ns1}, "type": "Opaque",
			"stringData": map[string]any{"password": urlSpecial, "tls.key": multiLine},
			"data":       map[string]any{"token": base64.StdEncoding.EncodeToString([]byte(binary))}},
		{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "api-keys", "namespace": ns2}, "type": "Opaque",
			"stringData": map[string]any{"apiKey": b64Text},
			"data":       map[string]any{"dsn": base64.StdEncoding.EncodeToString([]byte(dataPass))}},
		{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "app-config", "namespace": ns3}, "type": "Opaque",
			"stringData": map[string]any{"config.yaml": "user: app\npassword: " + cfgPass + "\nport: 5432\n"}},
	}
	kubectlApply := func(on *testenv.ControlPlane, obj map[string]any) {
		t.Helper()
		b, _ := json.Marshal(obj)
		if out, err := on.Kubectl(ctx, b, "apply", "-f", "-"); err != nil {
			t.Fatalf("kubectl apply: %v: %s", err, out)
		}
	}
	for _, s := range handSecrets {
		kubectlApply(c, s)
	}
	// The ConfigMaps the runbook way (client-side, then --server-side), so
	// that finalize has fields of kubectl's to take back and journals them.
	for _, ns := range []string{ns1, ns2, ns3} {
		cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "settings", "namespace": ns}, "data": map[string]any{"mode": "leak-suite"}}
		kubectlApply(c, cm)
		b, _ := json.Marshal(cm)
		if out, err := c.Kubectl(ctx, b, "apply", "--server-side", "-f", "-"); err != nil {
			t.Fatalf("kubectl apply --server-side: %v: %s", err, out)
		}
	}

	// A real Helm release whose values hold secrets of every type.
	h, repo := servedChart(ctx, t, c, "leak")
	helm := func(h *testenv.Helm, args ...string) string {
		t.Helper()
		return helmRun(ctx, t, h, args...)
	}
	helm(h, "repo", "add", "stable", repo.URL)
	nsHelm := c.Namespace(t)
	const release = "leakrel"
	dbPassword := plants.add("Helm value db.password (a string)", randomWord(t, "Hp", 24))
	apiToken := randomDigits(t, 11)
	plants.add("Helm value auth.apiToken (a number)", apiToken, numberForms(apiToken)...)
	apiKey := plants.add("Helm value nested.credentials.apiKey (nested)", randomWord(t, "Hk", 24))
	pw0 := plants.add("Helm value passwords[0] (in a list)", randomWord(t, "Hl", 24))
	pw1 := plants.add("Helm value passwords[1] (in a list)", randomWord(t, "Hl", 24))
	seed := plants.add("Helm value migration.seed (only in a hook Secret)", randomWord(t, "Hs", 24))
	dsnPass := plants.add("the password in Helm value db.dsn (only in the chart's Secret)", randomWord(t, "Hd", 24))
	smtpPass := plants.add("Helm value extraEnv[0].value (an env-style list whose name is SMTP_PASSWORD)", randomWord(t, "He", 24))
	ordersPass := plants.add("Helm value databases[0].password (a list of maps)", randomWord(t, "Hm", 24))
	helm(h, "install", release, "stable/leak", "--version", "0.4.2", "-n", nsHelm,
		"--set", "extraEnv[0].name=SMTP_PASSWORD,extraEnv[0].value="+smtpPass,
		"--set", "databases[0].name=orders,databases[0].password="+ordersPass,
		"--set", "db.password="+dbPassword,
		"--set", "auth.apiToken="+apiToken,
		"--set", "auth.apiKeyBool=true",
		"--set", "nested.credentials.apiKey="+apiKey,
		"--set", "passwords={"+pw0+","+pw1+"}",
		"--set", "migration.seed="+seed,
		"--set", "db.dsn=postgres://app:"+dsnPass+"@db.internal:5432/app")
	// The release holds what the test claims: a number, a boolean.
	var stored map[string]any
	dec := json.NewDecoder(strings.NewReader(helm(h, "get", "values", release, "-n", nsHelm, "-o", "json")))
	dec.UseNumber()
	if err := dec.Decode(&stored); err != nil {
		t.Fatal(err)
	}
	if v, _ := valueAt(stored, "auth.apiToken"); v != json.Number(apiToken) {
		t.Fatalf("helm stored auth.apiToken as %T %v, want the number", v, v)
	}
	if v, _ := valueAt(stored, "auth.apiKeyBool"); v != true {
		t.Fatalf("helm stored auth.apiKeyBool as %T %v, want the boolean true", v, v)
	}
	redactedPaths := []string{"db.password", "auth.apiToken", "nested.credentials.apiKey", "passwords[0]", "passwords[1]", "migration.seed", "db.dsn", "extraEnv[0].value", "databases[0].password"}

	// A release stored by Helm's ConfigMap driver (base64 of gzip in a
	// ConfigMap, not a Secret).
	nsCM := c.Namespace(t)
	const cmRelease = "cmrel"
	cmPass := plants.add("Helm value db.password of a release stored with HELM_DRIVER=configmap", randomWord(t, "Hc", 24))
	install := exec.CommandContext(ctx, h.Bin, "--kubeconfig", c.Kubeconfig, "install", cmRelease, "stable/leak", "--version", "0.4.2", "-n", nsCM, "--set", "db.password="+cmPass)
	install.Env = append(append(os.Environ(), h.Env()...), "HELM_DRIVER=configmap")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("helm install with HELM_DRIVER=configmap: %v: %s", err, out)
	}
	if cms, err := c.Clientset().CoreV1().ConfigMaps(nsCM).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm"}); err != nil || len(cms.Items) != 1 {
		t.Fatalf("the ConfigMap driver stored no release record in %s (%v)", nsCM, err)
	}

	// A chart repository in repositories.yaml whose URL carries a
	// password, in a Helm home of its own: adopt must refuse it.
	h2, repo2 := servedChart(ctx, t, c, "vault")
	credsPass := plants.add("the password in a repositories.yaml URL", randomWord(t, "Rp", 24))
	const credsRepo = "creds-repo"
	helm(h2, "repo", "add", credsRepo, strings.Replace(repo2.URL, "http://", "http://robot:"+credsPass+"@", 1))
	nsVault := c.Namespace(t)
	helm(h2, "install", "vaultrel", credsRepo+"/vault", "-n", nsVault)
	// And one whose URL carries a token in its query.
	queryToken := plants.add("the token in a repositories.yaml URL's query (?token=)", randomWord(t, "Qt", 30))
	const tokenRepo = "token-repo"
	_, repo3 := servedChart(ctx, t, c, "leak")
	helm(h2, "repo", "add", tokenRepo, repo3.URL+"?token="+queryToken)
	nsToken := c.Namespace(t)
	helm(h2, "install", "tokenrel", tokenRepo+"/leak", "--version", "0.4.2", "-n", nsToken)
	if rc, err := os.ReadFile(h2.RepositoryConfig); err != nil || !strings.Contains(string(rc), credsPass) || !strings.Contains(string(rc), queryToken) {
		t.Fatalf("repositories.yaml does not hold the URL's password and token (%v)", err)
	}

	// Argo CD fetches the chart through a repository Secret with a
	// password (hand-applied too).
	argoRepoPass := plants.add("an Argo CD repository Secret's password", randomWord(t, "Ap", 24))
	kubectlApply(c, map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "repo-stable", "namespace": a.Namespace, "labels": map[string]any{argoapp.SecretTypeLabel: "repository"}},
		"stringData": map[string]any{"type": "helm", "name": "stable", "url": repo.URL, "username": "robot", "password": argoRepoPass}})

	// Gitea: the GitOps repo, the admin token (ADOPT_GIT_TOKEN only) and a
	// second token for --repo's URL.
	giteaRepo := giteaName(t, "leak")
	cloneURL, err := g.CreateRepo(ctx, giteaRepo)
	if err != nil {
		t.Fatal(err)
	}
	plants.external("the Gitea token in ADOPT_GIT_TOKEN", g.Token)
	urlToken, err := g.CreateToken(ctx, giteaName(t, "leak-url"), "read:repository")
	if err != nil {
		t.Fatal(err)
	}
	plants.external("the Gitea token in --repo's URL", urlToken)
	wrongToken := plants.add("a wrong token in --repo's URL", randomWord(t, "Wt", 30))
	withToken := func(tok string) string {
		return strings.Replace(cloneURL, "http://", "http://"+g.User+":"+tok+"@", 1)
	}
	helmEnv := map[string]string{}
	for _, kv := range h.Env() {
		k, v, _ := strings.Cut(kv, "=")
		helmEnv[k] = v
	}
	phase("canaries planted")

	col := newLeakCollector()
	r := &leakRunner{col: col, env: helmEnv}
	kubeconfig := c.Kubeconfig
	dir := t.TempDir()

	// plan, in every format, with --preview and --out.
	planFiles := map[string]string{}
	for _, format := range []string{"table", "json", "yaml", "markdown", "sarif", "junit"} {
		f := filepath.Join(dir, "plan-"+format+".yaml")
		res := r.run(t, "plan -o "+format, kubeconfig, nil, "plan", "-A", "--repo", withToken(urlToken), "--argocd-version", "v3.2.6", "--preview", "--out", f, "-o", format)
		if res.code != 0 && res.code != ExitFindings {
			t.Fatalf("plan -o %s: exit %d: %s", format, res.code, res.errOut)
		}
		planFiles[format] = f
	}
	planFile := planFiles["yaml"]
	p := readPlan(t, planFile)
	for format, f := range planFiles {
		pf := readPlan(t, f)
		app := helmApp(pf, release)
		if app == nil {
			t.Fatalf("plan -o %s: no Helm-sourced Application for release %s; findings %+v", format, release, pf.Findings)
		}
		checkPlaceholders(t, "plan file of plan -o "+format, app.Helm.Values, redactedPaths)
		if v, _ := valueAt(app.Helm.Values, "auth.apiKeyBool"); v != true {
			t.Errorf("plan -o %s: the switch auth.apiKeyBool is %T %v, want true as it was", format, v, v)
		}
		if app := helmApp(pf, cmRelease); app == nil {
			t.Errorf("plan -o %s: no Helm-sourced Application for release %s (HELM_DRIVER=configmap)", format, cmRelease)
		} else {
			checkPlaceholders(t, "plan file of plan -o "+format+", release "+cmRelease, app.Helm.Values, []string{"db.password"})
		}
	}
	// The preview of the Deployment whose env var is the password shows
	// <redacted> and the byte counts, not the live value; the hook Secret,
	// which Argo CD would re-create from placeholders at each sync, is a
	// critical finding.
	var pw *preview.Change
	for i := range p.Objects {
		ob := &p.Objects[i]
		if ob.Kind != "Deployment" || ob.Namespace != nsHelm || ob.Preview == nil {
			continue
		}
		for j, ch := range ob.Preview.Changes {
			if strings.HasSuffix(ch.Path, "env[name=DB_PASSWORD].value") {
				pw = &ob.Preview.Changes[j]
			}
		}
	}
	if pw == nil || pw.Before != redact.Shown || pw.After != redact.Shown || !strings.Contains(pw.Text, redact.Shown) || pw.BeforeBytes == 0 {
		t.Errorf("the preview of DB_PASSWORD is not shown as %s with its byte counts: %+v", redact.Shown, pw)
	}
	hookCritical := false
	for _, f := range p.Findings {
		hookCritical = hookCritical || f.Code == plan.CodeHelmHook && f.Severity == plan.Critical && strings.Contains(f.Message, release+"-migration")
	}
	if !hookCritical {
		t.Errorf("the hook Secret %s-migration is not a critical %s finding: %+v", release, plan.CodeHelmHook, p.Findings)
	}

	// A failing run: whatever error the wrong token meets must not carry it.
	res := r.run(t, "plan with a wrong token in --repo's URL", kubeconfig, nil, "plan", "-n", ns1, "--repo", withToken(wrongToken))
	t.Logf("plan with a wrong token in --repo's URL: exit %d", res.code)

	// The repository with credentials in repositories.yaml is refused, by
	// name.
	vaultEnv := map[string]string{}
	for _, kv := range h2.Env() {
		k, v, _ := strings.Cut(kv, "=")
		vaultEnv[k] = v
	}
	vaultPlan := filepath.Join(dir, "plan-creds-repo.yaml")
	res = r.run(t, "plan with credentials in a repositories.yaml URL", kubeconfig, vaultEnv, "plan", "-n", nsVault+","+nsToken, "--argocd-version", "v3.2.6", "--out", vaultPlan)
	said := res.out + res.errOut
	b, err := os.ReadFile(vaultPlan)
	if err == nil {
		said += string(b)
	}
	for rel, name := range map[string]string{"vaultrel": credsRepo, "tokenrel": tokenRepo} {
		if err == nil {
			if app := helmApp(readPlan(t, vaultPlan), rel); app != nil && app.Helm.RepoURL != "" {
				t.Errorf("a repository with credentials in its repositories.yaml URL was not refused: Application %s uses %s", app.Name, name)
				continue
			}
		}
		if !strings.Contains(said, name) || !regexp.MustCompile(`(?i)credential|token`).MatchString(said) {
			t.Errorf("the refusal of repository %q (credentials in its URL) does not name it and say why: exit %d\n%s", name, res.code, plants.hide(res.out+res.errOut))
		}
		for _, line := range strings.Split(said, "\n") {
			if strings.Contains(line, name) {
				t.Logf("the refusal of %s (exit %d): %s", name, res.code, plants.hide(strings.TrimSpace(line)))
				break
			}
		}
	}
	phase("plans made")

	// Credentials outside Secrets, judged by value, in a namespace of their
	// own (apply refuses a plan that would export them): a ConfigMap URL
	// with a password, a Deployment's env literal, a custom resource's
	// field; and a Deployment whose Git form the API server refuses,
	// quoting a label value that is a referenced Secret's value.
	nsVal := c.Namespace(t)
	urlPass := plants.add("the password in a ConfigMap's database URL", randomWord(t, "Cu9", 30))
	envLiteral := plants.add("a Deployment's env literal (SIGNING_KEY)", randomWord(t, "Ev7", 40))
	crdPass := plants.add("the password in a custom resource's endpoint URL", randomWord(t, "Cr5", 30))
	refused := plants.add("a Secret's value quoted by the API server's refusal", "Rf"+randomWord(t, "", 24)+"!")
	kubectlApply(c, map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets.leak.example.invalid"},
		"spec": map[string]any{"group": "leak.example.invalid", "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}})
	if out, err := c.Kubectl(ctx, nil, "wait", "--for=condition=Established", "--timeout=60s", "crd/widgets.leak.example.invalid"); err != nil {
		t.Fatalf("the Widget CRD: %v: %s", err, out)
	}
	deploy := func(name string, env []any, labels map[string]any) map[string]any {
		return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": name, "namespace": nsVal, "labels": labels},
			"spec": map[string]any{"replicas": 0, "selector": map[string]any{"matchLabels": map[string]any{"app": name}},
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": name}},
					"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "registry.invalid/leak/" + name + ":1", "env": env}}}}}}
	}
	fromSecret := []any{map[string]any{"name": "DB_PASSWORD", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "db", "key": "password"}}}}
	for _, obj := range []map[string]any{
		{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "db", "namespace": nsVal}, "stringData": map[string]any{"password": refused}},
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "db-url", "namespace": nsVal},
			"data": map[string]any{"DATABASE_URL": "postgres://app:" + urlPass + "@db.internal:5432/app", "mode": "leak-suite"}},
		{"apiVersion": "leak.example.invalid/v1", "kind": "Widget", "metadata": map[string]any{"name": "billing", "namespace": nsVal},
			"spec": map[string]any{"endpoint": "https://svc:" + crdPass + "@billing.internal/v1", "replicas": 2}},
		deploy("worker", append([]any{map[string]any{"name": "SIGNING_KEY", "value": envLiteral}}, fromSecret...), nil),
		deploy("api", fromSecret, nil),
	} {
		kubectlApply(c, obj)
	}
	apiInGit, _ := json.Marshal(deploy("api", fromSecret, map[string]any{"tier": refused}))
	_, valuesURL := gitRepo(t, "values", map[string]string{"apps/" + nsVal + "/api.json": string(apiInGit)})
	valPlan := filepath.Join(dir, "plan-values.yaml")
	res = r.run(t, "plan --preview of credentials outside Secrets", kubeconfig, nil, "plan", "-n", nsVal, "--repo", valuesURL, "--argocd-version", "v3.2.6", "--preview", "--out", valPlan, "-o", "json")
	if res.code != 0 && res.code != ExitFindings {
		t.Fatalf("plan --preview of credentials outside Secrets: exit %d: %s", res.code, res.errOut)
	}
	vp := readPlan(t, valPlan)
	hits := map[string]string{}
	for _, ob := range vp.Objects {
		for _, f := range ob.Findings {
			if f.Code == plan.CodeSecretValue && f.Severity == plan.Critical {
				hits[ob.Kind+"/"+ob.Name] += f.Message + " "
			}
		}
		if ob.Kind == "Deployment" && ob.Name == "api" && (ob.Preview == nil || ob.Preview.Outcome != preview.WouldFail || !strings.Contains(ob.Preview.Verdict, redact.Shown)) {
			t.Errorf("the preview of Deployment api is not a refusal with the Secret's value shown as %s: %s", redact.Shown, plants.hide(fmt.Sprintf("%+v", ob.Preview)))
		}
	}
	for obj, path := range map[string]string{"ConfigMap/db-url": "data.DATABASE_URL", "Deployment/worker": "containers[0].env[0].value", "Widget/billing": "spec.endpoint"} {
		if !strings.Contains(hits[obj], path) {
			t.Errorf("%s: no critical %s finding naming %s: %q", obj, plan.CodeSecretValue, path, hits[obj])
		}
	}
	res = r.run(t, "apply --dry-run of credentials outside Secrets", kubeconfig, nil, "apply", "--plan", valPlan, "--repo", valuesURL, "--author", "Leak Suite <leak@example.invalid>", "--dry-run")
	if res.code == 0 || !strings.Contains(res.errOut, "not exported") {
		t.Errorf("apply --dry-run of a plan exporting credentials outside Secrets: exit %d, want a refusal saying what is not exported: %s", res.code, res.errOut)
	}
	phase("credentials outside Secrets judged")

	// apply: the diff, then the branch and the pull request on Gitea, the
	// token only in the environment.
	tokenEnv := map[string]string{"ADOPT_GIT_TOKEN": g.Token}
	applyArgs := []string{"apply", "--plan", planFile, "--repo", cloneURL, "--git-user", g.User, "--author", "Leak Suite <leak@example.invalid>"}
	if res := r.run(t, "apply --dry-run", kubeconfig, tokenEnv, append(applyArgs, "--dry-run")...); res.code != 0 {
		t.Fatalf("apply --dry-run: exit %d: %s", res.code, res.errOut)
	}
	if res := r.run(t, "apply --open-pr", kubeconfig, tokenEnv, append(applyArgs, "--open-pr", "--provider", "gitea", "--pr-label", "adopt")...); res.code != 0 {
		t.Fatalf("apply --open-pr: exit %d: %s", res.code, res.errOut)
	}
	prs, err := g.PullRequests(ctx, giteaRepo)
	if err != nil || len(prs) != 1 {
		t.Fatalf("pull requests %+v, %v; want one", prs, err)
	}
	head := prs[0].Head.Ref
	giteaDir := giteaRepoDir(g, giteaRepo)
	helmA := helmApp(p, release)
	var gitApp map[string]any
	if err := yaml.Unmarshal([]byte(fileText(t, tipOf(t, giteaDir, head), p.Settings.AppsDir+"/"+helmA.Name+".yaml")), &gitApp); err != nil {
		t.Fatal(err)
	}
	values, ok := valueAt(gitApp, "spec.source.helm.valuesObject")
	if !ok {
		t.Errorf("the Application in Git has no spec.source.helm.valuesObject")
	}
	checkPlaceholders(t, "the Application "+helmA.Name+" in Git", values, redactedPaths)
	mergePR(ctx, t, g, giteaRepo, head)
	phase("pull request opened and merged")

	// Argo CD: the Applications of the Helm release and of the three
	// namespaces, from the merged branch; finalize --sync runs their first
	// sync and writes its journal.
	mainTip := tipOf(t, giteaDir, "main")
	apps := []string{helmA.Name}
	for _, ns := range []string{ns1, ns2, ns3} {
		app := appInNamespace(p, ns)
		if app == nil {
			t.Fatalf("no Application for namespace %s", ns)
		}
		apps = append(apps, app.Name)
	}
	finArgs := []string{"finalize", "--plan", planFile, "--sync", "--timeout", "3m", "--poll-interval", "500ms"}
	for _, name := range apps {
		if err := a.CreateApplication(ctx, []byte(fileText(t, mainTip, p.Settings.AppsDir+"/"+name+".yaml"))); err != nil {
			t.Fatal(err)
		}
		finArgs = append(finArgs, "--app", name)
	}
	if res := r.run(t, "finalize --sync", kubeconfig, nil, finArgs...); res.code == 0 {
		t.Logf("finalize --sync:\n%s", res.out)
	} else {
		var states []string
		for _, name := range apps {
			st, _ := a.ApplicationStatus(ctx, name)
			states = append(states, name+": "+st.String())
		}
		t.Errorf("finalize --sync: exit %d: %s\n%s\n%s\ncontroller: %s", res.code, res.out, res.errOut, strings.Join(states, "\n"), a.LogTail("argocd-application-controller", 2000))
	}
	if b, err := os.ReadFile(planFile + ".journal"); err != nil || len(b) == 0 {
		t.Errorf("finalize wrote no journal: %v", err)
	}
	phase("finalized")

	// The Helm release's records retired: finalize names them and prints
	// nothing they hold; the journal (mode 0600) holds them whole, the
	// values included, so that the undo below puts the release back.
	retire := []string{"finalize", "--plan", planFile, "--app", helmA.Name, "--retire-helm-records", "--timeout", "3m", "--poll-interval", "500ms"}
	if res := r.run(t, "finalize --retire-helm-records", kubeconfig, nil, retire...); res.code != 0 || !strings.Contains(res.out, "Helm records retired") {
		t.Errorf("finalize --retire-helm-records: exit %d: %s\n%s", res.code, res.out, res.errOut)
	}
	if list := helm(h, "list", "-n", nsHelm, "-q"); strings.TrimSpace(list) != "" {
		t.Errorf("helm list still shows %q after the records were retired", list)
	}
	held := journalRelease(t, planFile+".journal")
	if len(held) == 0 || !strings.Contains(held[0], dbPassword) {
		t.Errorf("the journal does not hold the retired record whole (%d records): --undo could not restore it", len(held))
	}
	phase("Helm records retired")

	// A crash-looping pod of the release's Deployment whose last
	// termination message (a log tail, as FallbackToLogsOnError leaves it)
	// quotes a token: its status patched as the kubelet would, once Argo
	// CD sees the Deployment progress, so status explains it.
	termToken := plants.add("a token in a container's termination message", randomWord(t, "Tm3", 40))
	deployName := release + "-app"
	if out, err := c.Kubectl(ctx, nil, "scale", "deployment/"+deployName, "-n", nsHelm, "--replicas=1"); err != nil {
		t.Fatalf("kubectl scale: %v: %s", err, out)
	}
	// The real scheduler first marks the pod unschedulable (the plane has
	// no node); its mark, written after the status below, would replace it.
	// So: its mark first, then bound to a node as the scheduler would, so
	// that the scheduler leaves it alone.
	podsOf := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release}
	if _, err := c.WaitUnschedulable(ctx, nsHelm, podsOf.LabelSelector); err != nil {
		t.Fatalf("the pod of %s: %v", deployName, err)
	}
	list, err := c.Clientset().CoreV1().Pods(nsHelm).List(ctx, podsOf)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("%d pods of %s, want 1", len(list.Items), deployName)
	}
	pod := &list.Items[0]
	if err := c.Clientset().CoreV1().Pods(nsHelm).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: nsHelm},
		Target: corev1.ObjectReference{Kind: "Node", Name: "leak-node"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bind the pod: %v", err)
	}
	pods := c.Clientset().CoreV1().Pods(nsHelm)
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status.Phase = corev1.PodRunning
		cur.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionFalse}}
		cur.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "registry.invalid/leak/app:1.0.0", RestartCount: 3,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off restarting failed container"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 127, Reason: "Error",
				Message: `exec: "/app --token=` + termToken + `": executable file not found in $PATH`}}}}
		_, err = pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatalf("the pod's status: %v", err)
	}
	if _, err := a.WaitApplication(ctx, helmA.Name, func(s testenv.AppStatus) bool { return s.Health != "" && s.Health != "Healthy" }); err != nil {
		t.Fatalf("Argo CD does not see %s progress: %v", deployName, err)
	}

	// status, in every format, with --html and --record.
	record := filepath.Join(dir, "status-history")
	statusOut := ""
	for _, format := range []string{"table", "json", "yaml", "markdown"} {
		res := r.run(t, "status -o "+format, kubeconfig, tokenEnv, "status", "--plan", planFile, "--repo", cloneURL, "--git-user", g.User, "--provider", "gitea",
			"-o", format, "--record", record, "--html", filepath.Join(dir, "status-"+format+".html"))
		if res.code != 0 {
			t.Errorf("status -o %s: exit %d: %s", format, res.code, res.errOut)
		}
		statusOut += res.out
	}
	if !strings.Contains(statusOut, "CrashLoopBackOff") || !strings.Contains(statusOut, "does not exist") {
		t.Errorf("status does not explain the crash-looping pod of %s (its termination message):\n%s", deployName, statusOut)
	}
	if out, err := c.Kubectl(ctx, nil, "scale", "deployment/"+deployName, "-n", nsHelm, "--replicas=0"); err != nil {
		t.Fatalf("kubectl scale: %v: %s", err, out)
	}
	phase("status reported")

	// finalize --dry-run and --undo, whose output and the journal the undo
	// adds to are scanned too; and apply --secrets=placeholder, whose diff
	// holds the Secrets' keys, never their values.
	again := []string{"finalize", "--plan", planFile, "--timeout", "3m", "--poll-interval", "500ms"}
	for _, name := range apps {
		again = append(again, "--app", name)
	}
	if res := r.run(t, "finalize --dry-run", kubeconfig, nil, append(again, "--dry-run")...); res.code != 0 {
		t.Errorf("finalize --dry-run: exit %d: %s\n%s", res.code, res.out, res.errOut)
	}
	if res := r.run(t, "finalize --undo", kubeconfig, nil, append(again, "--undo")...); res.code != 0 || !strings.Contains(res.out, "restored") {
		t.Errorf("finalize --undo: exit %d: %s\n%s", res.code, res.out, res.errOut)
	}
	if list := helm(h, "list", "-n", nsHelm, "-q"); !strings.Contains(list, release) {
		t.Errorf("helm list does not show %s after --undo: %q", release, list)
	}
	if res := r.run(t, "apply --secrets=placeholder --dry-run", kubeconfig, tokenEnv, append(applyArgs, "--secrets", "placeholder", "--dry-run")...); res.code != 0 || !strings.Contains(res.out, "adopt.dev/secret-placeholder") {
		t.Errorf("apply --secrets=placeholder --dry-run: exit %d: %s\n%s", res.code, res.out, res.errOut)
	}
	phase("undone, and Secrets as placeholders")

	// reconcile over the release stored by the ConfigMap driver and the
	// credentials outside Secrets (whose group it must refuse to write):
	// its report, metrics file, journal directory, stored plans, branches
	// and pull requests. A second run, with nothing new, reads only.
	nsRec, journals := c.Namespace(t), filepath.Join(dir, "journals")
	recArgs := []string{"reconcile", "-n", nsCM + "," + nsVal, "--repo", cloneURL, "--git-user", g.User, "--provider", "gitea", "--argocd-version", "v3.2.6",
		"--author", "Leak Suite <leak@example.invalid>", "--lock-namespace", nsRec, "--cluster-name", "leak", "--journal-dir", journals,
		"--metrics-file", filepath.Join(dir, "adopt.prom"), "-o", "json"}
	recOpened := 0
	for i, want := range []string{reconcile.Opened, reconcile.Unchanged} {
		res := r.run(t, fmt.Sprintf("reconcile, run %d", i+1), kubeconfig, tokenEnv, recArgs...)
		var rep reconcile.Report
		if err := json.Unmarshal([]byte(res.out), &rep); err != nil {
			t.Fatalf("reconcile, run %d: exit %d, no report: %v: %s", i+1, res.code, err, plants.hide(res.errOut))
		}
		outcomes := map[string]string{}
		for _, gr := range rep.Groups {
			outcomes[gr.App] = gr.Outcome
			if gr.Outcome == reconcile.Opened {
				recOpened++
			}
		}
		var failed, wanted int
		for _, o := range outcomes {
			switch o {
			case reconcile.Failed:
				failed++
			case want:
				wanted++
			}
		}
		// The group of the credentials outside Secrets fails (apply
		// refuses to export them); the release's group is opened, then
		// unchanged.
		if res.code != ExitPartial || failed != 1 || wanted != 1 {
			t.Errorf("reconcile, run %d: exit %d, groups %v; want one %s and one failed (exit %d)", i+1, res.code, outcomes, want, ExitPartial)
		}
	}
	if n := col.addStored(ctx, t, c.Clientset(), nsRec); n != 1 {
		t.Errorf("reconcile stored %d plans in %s, want 1", n, nsRec)
	}
	phase("reconciled")

	// Hub and spoke: the package control plane, registered with the Argo
	// CD cluster by a cluster Secret whose bearer token is a canary; and a
	// fleet of the registered clusters, one reached with a real
	// ServiceAccount token.
	nsSpoke := cp.Namespace(t)
	spokePass := plants.add("a hand-applied Secret's value on the spoke cluster", randomWord(t, "Sk", 26))
	kubectlApply(cp, map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "spoke-creds", "namespace": nsSpoke}, "stringData": map[string]any{"password": spokePass}})
	kubectlApply(cp, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "settings", "namespace": nsSpoke}, "data": map[string]any{"mode": "leak-suite"}})
	hubToken := plants.add("the bearer token of the spoke's cluster Secret", randomWord(t, "Bt", 40))
	spokeSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cluster-leak-spoke", Namespace: a.Namespace,
		Labels: map[string]string{argoapp.SecretTypeLabel: argoapp.SecretTypeCluster, "leak": "fleet"}},
		StringData: map[string]string{"name": "leak-spoke", "server": cp.Server, "config": `{"bearerToken":"` + hubToken + `","tlsClientConfig":{"insecure":true}}`}}
	if _, err := c.Clientset().CoreV1().Secrets(a.Namespace).Create(ctx, spokeSecret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	saToken, err := testenv.RegisterClusterOn(ctx, c, a.Namespace, "leak-self", c, map[string]string{"leak": "fleet"})
	if err != nil {
		t.Fatal(err)
	}
	plants.external("the ServiceAccount token of a registered cluster's Secret", saToken)
	hubKC := fleetKubeconfig(t, map[string]*testenv.ControlPlane{"spoke": cp, "mgmt": c})
	hubPlan := filepath.Join(dir, "plan-hub.yaml")
	if res := r.run(t, "plan --argocd-context (hub and spoke)", hubKC, nil, "plan", "--context", "spoke", "--argocd-context", "mgmt", "-n", nsSpoke,
		"--argocd-version", "v3.2.6", "--preview", "--out", hubPlan, "-o", "json"); res.code != 0 && res.code != ExitFindings {
		t.Errorf("hub plan: exit %d: %s", res.code, res.errOut)
	} else if m := readPlan(t, hubPlan).ArgoCD.Management; m == nil || m.Cluster != "leak-spoke" {
		t.Errorf("hub plan: management %+v, want the spoke registered as leak-spoke", m)
	}
	mgmtKC := fleetKubeconfig(t, map[string]*testenv.ControlPlane{"mgmt": c})
	fleetDir := filepath.Join(dir, "fleet")
	if res := r.run(t, "plan --argocd-clusters (fleet)", mgmtKC, nil, "plan", "--argocd-context", "mgmt", "--argocd-clusters=leak=fleet", "-n", ns1,
		"--argocd-version", "v3.2.6", "--out-dir", fleetDir, "-o", "json", "--request-timeout", "10s"); res.code != 0 {
		t.Errorf("fleet plan: exit %d: %s", res.code, res.errOut)
	} else if !strings.Contains(res.out, "leak-self") || !strings.Contains(res.out, "leak-spoke") {
		t.Errorf("the fleet index does not list both registered clusters:\n%s", res.out)
	}
	fleetGit, fleetURL := gitRepo(t, "fleet", map[string]string{"README.md": "gitops\n"})
	if res := r.run(t, "apply --plan (fleet)", mgmtKC, nil, "apply", "--plan", fleetDir, "--repo", fleetURL, "--argocd-context", "mgmt",
		"--author", "Leak Suite <leak@example.invalid>", "--request-timeout", "10s"); res.code != 0 {
		t.Errorf("fleet apply: exit %d: %s", res.code, res.errOut)
	}
	phase("hub and fleet planned")

	// Everything adopt wrote and printed.
	col.collectFiles(t)
	col.addGitRepo(t, giteaDir)
	col.addGitRepo(t, fleetGit.BarePath("fleet"))
	if n := col.addGiteaPRs(ctx, t, g, giteaRepo); n != 1+recOpened {
		t.Errorf("%d pull requests read back, want %d (apply's and reconcile's)", n, 1+recOpened)
	}
	chans := col.channels()
	var names []string
	for _, ch := range leakChannels {
		if chans[ch] == 0 {
			t.Errorf("nothing was collected from the %s channel: the suite cannot prove it clean", ch)
		}
		names = append(names, fmt.Sprintf("%s %d B", ch, chans[ch]))
	}
	t.Logf("scanned %d canaries in %s", len(plants.list), strings.Join(names, ", "))
	findings := col.scan(plants.list)
	// One line per canary and channel, with where.
	type key struct{ canary, channel string }
	grouped := map[key][]string{}
	for _, f := range findings {
		k := key{f.canary, string(f.channel)}
		grouped[k] = append(grouped[k], f.where+" ("+f.form+")")
	}
	var keys []key
	for k := range grouped {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].canary+keys[i].channel < keys[j].canary+keys[j].channel })
	for _, k := range keys {
		where := grouped[k]
		if len(where) > 4 {
			where = append(where[:4], fmt.Sprintf("and %d more", len(grouped[k])-4))
		}
		t.Errorf("LEAK: %s in the %s: %s", k.canary, k.channel, strings.Join(where, "; "))
	}
	phase("scanned")
}
