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
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/preview"
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
// a boolean or number Helm value must be a placeholder in the plans and in
// the Application in Git; the repository with credentials in
// repositories.yaml must be refused, by name.
func TestLeakSuite(t *testing.T) {
	began := time.Now()
	phase := func(what string) { t.Logf("leak suite: %s at %s", what, time.Since(began).Round(time.Second)) }
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	// Gitea starts while the control plane and Argo CD do.
	giteaUp := giteaInBackground(ctx, t)
	c := startControlPlane(ctx, t)
	a, err := testenv.StartArgoCD(ctx, c, "v3.2.6")
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
	helm(h, "install", release, "stable/leak", "--version", "0.4.2", "-n", nsHelm,
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
	redactedPaths := []string{"db.password", "auth.apiToken", "auth.apiKeyBool", "nested.credentials.apiKey", "passwords[0]", "passwords[1]", "migration.seed", "db.dsn"}

	// A chart repository in repositories.yaml whose URL carries a
	// password, in a Helm home of its own: adopt must refuse it.
	h2, repo2 := servedChart(ctx, t, c, "vault")
	credsPass := plants.add("the password in a repositories.yaml URL", randomWord(t, "Rp", 24))
	const credsRepo = "creds-repo"
	helm(h2, "repo", "add", credsRepo, strings.Replace(repo2.URL, "http://", "http://robot:"+credsPass+"@", 1))
	nsVault := c.Namespace(t)
	helm(h2, "install", "vaultrel", credsRepo+"/vault", "-n", nsVault)
	if rc, err := os.ReadFile(h2.RepositoryConfig); err != nil || !strings.Contains(string(rc), credsPass) {
		t.Fatalf("repositories.yaml does not hold the URL's password (%v)", err)
	}

	// Argo CD fetches the chart through a repository Secret with a
	// password (hand-applied too).
	argoRepoPass := plants.add("an Argo CD repository Secret's password", randomWord(t, "Ap", 24))
	kubectlApply(c, map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "repo-stable", "namespace": a.Namespace, "labels": map[string]any{argoapp.SecretTypeLabel: "repository"}},
		"stringData": map[string]any{"type": "helm", "name": "stable", "url": repo.URL, "username": "robot", "password": argoRepoPass}})

	// Gitea: the GitOps repo, the admin token (ADOPT_GIT_TOKEN only) and a
	// second token for --repo's URL.
	const giteaRepo = "leak"
	cloneURL, err := g.CreateRepo(ctx, giteaRepo)
	if err != nil {
		t.Fatal(err)
	}
	plants.external("the Gitea token in ADOPT_GIT_TOKEN", g.Token)
	urlToken, err := g.CreateToken(ctx, "leak-url", "read:repository")
	if err != nil {
		t.Fatal(err)
	}
	plants.external("the Gitea token in --repo's URL", urlToken)
	wrongToken := plants.add("a wrong token in --repo's URL", randomWord(t, "Wt", 30))
	withToken := func(tok string) string {
		return strings.Replace(cloneURL, "http://", "http://"+g.User+":"+tok+"@", 1)
	}
	for _, kv := range h.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	phase("canaries planted")

	col := newLeakCollector()
	r := &leakRunner{col: col}
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
	res = r.run(t, "plan with credentials in a repositories.yaml URL", kubeconfig, vaultEnv, "plan", "-n", nsVault, "--argocd-version", "v3.2.6", "--out", vaultPlan)
	said := res.out + res.errOut
	refused := true
	if b, err := os.ReadFile(vaultPlan); err == nil {
		said += string(b)
		if app := helmApp(readPlan(t, vaultPlan), "vaultrel"); app != nil && app.Helm.RepoURL != "" {
			refused = false
			t.Errorf("a repository with credentials in its repositories.yaml URL was not refused: Application %s uses it", app.Name)
		}
	}
	if refused && (!strings.Contains(said, credsRepo) || !regexp.MustCompile(`(?i)credential`).MatchString(said)) {
		t.Errorf("the refusal of repository %q (credentials in its URL) does not name it and say why: exit %d\n%s", credsRepo, res.code, res.out+res.errOut)
	}
	for _, line := range strings.Split(said, "\n") {
		if strings.Contains(line, credsRepo) {
			t.Logf("the refusal (exit %d): %s", res.code, strings.TrimSpace(line))
			break
		}
	}
	phase("plans made")

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

	// status, in every format, with --html and --record.
	record := filepath.Join(dir, "status-history")
	for _, format := range []string{"table", "json", "yaml", "markdown"} {
		res := r.run(t, "status -o "+format, kubeconfig, tokenEnv, "status", "--plan", planFile, "--repo", cloneURL, "--git-user", g.User, "--provider", "gitea",
			"-o", format, "--record", record, "--html", filepath.Join(dir, "status-"+format+".html"))
		if res.code != 0 {
			t.Errorf("status -o %s: exit %d: %s", format, res.code, res.errOut)
		}
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
	if n := col.addGiteaPRs(ctx, t, g, giteaRepo); n != 1 {
		t.Errorf("%d pull requests read back, want 1", n)
	}
	chans := col.channels()
	var names []string
	for _, ch := range []leakChannel{chPlanFile, chStdout, chStderr, chGitObject, chGitRef, chCommitMessage, chPullRequest, chJournal, chStatusHistory, chSARIF, chJUnit, chHTML} {
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
