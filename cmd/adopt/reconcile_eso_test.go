package main

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/adopt/esoform"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestReconcileAdoptsExternalSecretOnRealArgoCD (issue 45): scheduled
// reconcile runs, as the chart's ServiceAccount (impersonated) with
// secrets.read and secrets.externalSecrets on and its adopt.yaml, on a
// real Argo CD (the current GA), a real Gitea and the real External
// Secrets Operator v0.16.2 with a Ready kubernetes-provider SecretStore in
// the namespace, over one Secret applied by hand (fresh canaries: a
// password, a multi-line value and a binary one): a group of that Secret
// alone, its form chosen by the planner (nothing forced: no .sops.yaml,
// the Sealed Secrets controller named does not answer, the store fits).
// The first run opens its pull request with the ExternalSecret (the
// Application without automated sync); the next changes nothing. A
// person merges it in Gitea; the Application appears; a run pushes the
// value to the store once and proves it reads back equal (finalize's
// push, before any sync), and waits; a person syncs; the next run proves
// the operator's takeover (the same uid, the data byte-identical,
// last-applied gone) and finalizes; after it, 0 untracked and no Secret
// left. No canary, in any form the leak suite's scanner knows, is in any
// Git object or ref, pull request, output, metrics file, journal, state
// ConfigMap (secretReconcile), the store's copy's metadata or the
// operator's log.
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
	s := startSecretReconcile(ctx, t, secretReconcile{c: c, a: a, g: g, grants: grants, ns: ns, cluster: "eso", kind: esoform.KindExternalSecret, crdGroup: esoform.Group})

	// Monday: the group of the Secret alone is proposed, as an
	// ExternalSecret of the namespace's store; Tuesday: nothing new.
	gr, es := s.propose("form: " + plan.SecretFormESO)
	if !strings.Contains(es, "name: vault") || !strings.Contains(es, esoform.RemoteKey(ns, "db")) {
		t.Errorf("the ExternalSecret does not read key %s of SecretStore vault:\n%s", esoform.RemoteKey(ns, "db"), es)
	}
	// Wednesday: a person merges it in Gitea; the run after it pushes,
	// before any sync: the store holds the live data, without the live
	// Secret's labels or annotations, and the live Secret is not written.
	waiting := s.merge(gr)
	stored, err := c.Clientset().CoreV1().Secrets(storeNS).Get(ctx, esoform.RemoteKey(ns, "db"), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the store holds no key %s after the run that waited (%s): %v", esoform.RemoteKey(ns, "db"), waiting.Why, err)
	}
	if !reflect.DeepEqual(stored.Data, s.before.Data) {
		t.Errorf("the store's copy holds other data than the live Secret (values not printed)")
	}
	meta, _ := json.Marshal(map[string]any{"labels": stored.Labels, "annotations": stored.Annotations})
	s.col.add(chStoreCopy, "Secret "+storeNS+"/"+stored.Name+" (the store's copy)", string(meta))
	if live, err := c.Clientset().CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{}); err != nil || live.ResourceVersion != s.before.ResourceVersion {
		t.Fatalf("the push wrote the live Secret %s/db (%v)", ns, err)
	}
	// Thursday: a person syncs it (as argocd app sync would).
	s.takeOver(gr.App, `"result":"pushed"`, `"result":"taken-over"`, `"result":"finalized"`)
	s.col.add(chOperatorLog, "the External Secrets Operator's log", eso.Log())
}
