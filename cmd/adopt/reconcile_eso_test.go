package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/adopt/esoform"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/reconcile"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestReconcileAdoptsExternalSecretOnRealArgoCD (issue 45): scheduled
// reconcile runs, as the chart's ServiceAccount (impersonated) with
// secrets.read and secrets.externalSecrets on and its adopt.yaml, on a
// real Argo CD (the current GA), a real Gitea and the real External
// Secrets Operator v0.16.2 with a Ready kubernetes-provider SecretStore in
// the namespace, over one Secret applied by hand (a stringData canary and
// a binary value): a group of that Secret alone, its form chosen by the
// planner (nothing forced: no .sops.yaml, the Sealed Secrets controller
// named does not answer, the store fits). The first run opens its pull
// request with the ExternalSecret (the Application without automated
// sync); the next changes nothing. A person merges it in Gitea; the
// Application appears; a run pushes the value to the store once and
// proves it reads back equal (finalize's push, before any sync), and
// waits; a person syncs; the next run proves the operator's takeover (the
// same uid, the data byte-identical, last-applied gone) and finalizes;
// after it, 0 untracked and no Secret left. The canary, plaintext or
// base64, is in no Git object, pull request, output, metrics file,
// journal, state ConfigMap, the store's copy's metadata or the operator's
// log.
func TestReconcileAdoptsExternalSecretOnRealArgoCD(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	giteaUp := giteaInBackground(ctx, t)
	c, a := argoCDPlane(ctx, t, testenv.ArgoCDCurrent)
	ns, storeNS := c.Namespace(t), c.Namespace(t)
	eso, err := testenv.StartExternalSecrets(ctx, c, ns)
	if err != nil {
		t.Fatal(err)
	}
	defer eso.Stop()
	if err := eso.KubernetesStore(ctx, "vault", storeNS); err != nil {
		t.Fatal(err)
	}
	g := giteaUp()
	repoName := giteaName(t, "eso")
	repoURL, err := g.CreateRepo(ctx, repoName)
	if err != nil {
		t.Fatal(err)
	}
	// The chart's RoleBindings in ns are applied by hand here: its
	// adopt.yaml leaves RBAC out, so that the Secret is the one group, and
	// the store and its service account, the platform's; and
	// generators.external-secrets.io, which the chart does not read
	// (docs/reconcile.md). The Sealed Secrets controller it names does
	// not run.
	grants := installChartRBACWith(ctx, t, c, a, []string{"--set", "secrets.read=true", "--set", "secrets.externalSecrets=true",
		"--set", "secrets.sealedSecretsController=" + ns + "/sealed-secrets-controller",
		"--set-json", `config={"exclusions":[{"apiGroups":["rbac.authorization.k8s.io"]},{"apiGroups":["generators.external-secrets.io"]},` +
			`{"apiGroups":["external-secrets.io"],"kinds":["SecretStore"]},{"kinds":["ServiceAccount"],"names":["vault-store"]}]}`}, ns)

	const canary = "canary-Jq8vN2-reconcile-eso"
	binary := []byte{0, 3, 0xfc, 0xff, 'e', 's', 'o'}
	secret := "apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: " + ns + ", labels: {app: shop}}\ntype: Opaque\n" +
		"data: {cert.bin: " + base64.StdEncoding.EncodeToString(binary) + "}\nstringData: {password: " + canary + "}\n"
	if _, err := c.Kubectl(ctx, []byte(secret), "apply", "-f", "-"); err != nil {
		t.Fatal("kubectl apply failed") // its output would echo the manifest
	}
	before, err := c.Clientset().CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	encodings := []string{canary, base64.StdEncoding.EncodeToString([]byte(canary)), base64.RawStdEncoding.EncodeToString([]byte(canary)),
		base64.URLEncoding.EncodeToString([]byte(canary)), base64.StdEncoding.EncodeToString(binary)}
	leaks := func(where string, b []byte) {
		t.Helper()
		for _, enc := range encodings {
			if bytes.Contains(b, []byte(enc)) {
				t.Errorf("%s holds the Secret's value (an encoding of %d bytes)", where, len(enc))
			}
		}
	}

	metrics := filepath.Join(t.TempDir(), "adopt.prom")
	journals := t.TempDir()
	run := func(want string, extra ...string) *reconcile.Report {
		t.Helper()
		args := append([]string{"--kubeconfig", c.Kubeconfig, "reconcile", "-n", ns, "--repo", repoURL, "--provider", "gitea",
			"--git-user", g.User, "--git-token", g.Token, "--argocd-version", testenv.ArgoCDCurrent, "--author", "adopt <adopt@example.invalid>",
			"-o", "json", "-q", "--cluster-name", "eso", "--poll-interval", "500ms", "--journal-dir", journals, "--metrics-file", metrics,
			"--lock-namespace", grants.stateNS, "--as", grants.user, "--config", grants.config}, extra...)
		var out, errb bytes.Buffer
		code := runAdopt(t, "adopt", args, strings.NewReader(""), &out, &errb)
		leaks("reconcile's output", append(out.Bytes(), errb.Bytes()...))
		rep := &reconcile.Report{}
		if err := json.Unmarshal(out.Bytes(), rep); err != nil {
			t.Fatalf("reconcile: exit %d: %v: %s%s", code, err, out.String(), errb.String())
		}
		// A CRD another test of the plane installed is not the chart's to
		// read (read.extraGroups): the run is partial for it alone, never
		// for Secrets or external-secrets.io's types.
		partial := code == ExitPartial && len(rep.NotScanned) > 0 && rep.Count(reconcile.Failed) == 0
		for _, n := range rep.NotScanned {
			typ, _, _ := strings.Cut(n, ":")
			partial = partial && typ != "secrets" && !strings.HasSuffix(typ, "."+esoform.Group)
		}
		if code != 0 && !partial {
			t.Fatalf("reconcile: exit %d: %s%s", code, out.String(), errb.String())
		}
		if rep.SecretsLeft != 0 {
			t.Errorf("%d Secret(s) left: %s", rep.SecretsLeft, rep.SecretsNote)
		}
		if want == "" {
			return rep
		}
		if len(rep.Groups) != 1 || rep.Groups[0].Outcome != want {
			t.Fatalf("groups %+v (nothing to do: %v); want one, %s", rep.Groups, rep.NothingToDo, want)
		}
		return rep
	}

	// Monday: the group of the Secret alone is proposed, as an
	// ExternalSecret of the namespace's store.
	gr := run(reconcile.Opened).Groups[0]
	if gr.Objects != 1 {
		t.Errorf("the group adopts %d objects, want the Secret", gr.Objects)
	}
	bare := giteaRepoDir(g, repoName)
	tip := tipOf(t, bare, gr.Branch)
	esFile, appFile := formAndAppFiles(t, tip, esoform.KindExternalSecret)
	if es := fileText(t, tip, esFile); !strings.Contains(es, "name: vault") || !strings.Contains(es, esoform.RemoteKey(ns, "db")) {
		t.Errorf("the ExternalSecret does not read key %s of SecretStore vault:\n%s", esoform.RemoteKey(ns, "db"), es)
	}
	if app := fileText(t, tip, appFile); strings.Contains(app, "automated") {
		t.Errorf("the Application holding an ExternalSecret syncs by itself (the push must come first):\n%s", app)
	}
	state := func(stored bool) {
		t.Helper()
		out, err := c.Kubectl(ctx, nil, "-n", grants.stateNS, "get", "configmaps", "-o", "yaml")
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		leaks("the reconcile state ConfigMaps", []byte(out))
		if stored && !strings.Contains(out, "form: "+plan.SecretFormESO) {
			t.Error("the state ConfigMaps hold no stored plan of the Secret in form eso")
		}
	}
	state(true)
	// Tuesday: nothing new.
	run(reconcile.Unchanged)

	// Wednesday: a person merges it in Gitea; the Application appears.
	mergePR(ctx, t, g, repoName, gr.Branch)
	if err := a.CreateApplication(ctx, []byte(fileText(t, tipOf(t, bare, "main"), appFile))); err != nil {
		t.Fatal(err)
	}
	waiting := run(reconcile.Merged, "--finalize-wait", "2s").Groups[0]
	// The push, before any sync: the store holds the live data, without
	// the live Secret's labels or annotations.
	stored, err := c.Clientset().CoreV1().Secrets(storeNS).Get(ctx, esoform.RemoteKey(ns, "db"), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the store holds no key %s after the run that waited (%s): %v", esoform.RemoteKey(ns, "db"), waiting.Why, err)
	}
	if !reflect.DeepEqual(stored.Data, before.Data) {
		t.Errorf("the store's copy holds other data than the live Secret (values not printed)")
	}
	meta, _ := json.Marshal(map[string]any{"labels": stored.Labels, "annotations": stored.Annotations})
	leaks("the store's copy's metadata", meta)
	if st, err := a.ApplicationStatus(ctx, gr.App); err != nil || st.OperationPhase != "" {
		t.Fatalf("reconcile without --sync started a sync of %s (%v): %s", gr.App, err, st)
	}
	if live, err := c.Clientset().CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{}); err != nil || live.ResourceVersion != before.ResourceVersion {
		t.Fatalf("the push wrote the live Secret %s/db (%v)", ns, err)
	}
	// A person syncs it (as argocd app sync would).
	syncTakeOverAndScan(ctx, t, secretRun{c: c, a: a, app: gr.App, ns: ns, before: before, owner: esoform.KindExternalSecret,
		run: run, leaks: leaks, bare: bare, g: g, repoName: repoName, metrics: metrics, journals: journals,
		results: []string{`"result":"pushed"`, `"result":"taken-over"`, `"result":"finalized"`}})
	leaks("the External Secrets Operator's log", []byte(eso.Log()))
	state(false)
}
