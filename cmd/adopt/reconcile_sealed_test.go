package main

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/adopt/sealed"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestReconcileAdoptsSealedSecretOnRealArgoCD (issue 45): scheduled
// reconcile runs, as the chart's ServiceAccount (impersonated) with
// secrets.read on and its adopt.yaml, on a real Argo CD (the current GA),
// a real Gitea and the real Sealed Secrets controller, over a namespace
// holding one Secret applied by hand (fresh canaries: a password, a
// multi-line value and a binary one): a group of that Secret alone. The
// first run opens its pull request with the SealedSecret (sealed and
// verified by the controller through its one Service's proxy); the next
// changes nothing. A person merges it in Gitea; the Application appears;
// a run marks the Secret (finalize's mark, before any sync) and waits; a
// person syncs; the next run proves the controller's takeover (the same
// uid, the data byte-identical, last-applied gone) and finalizes; after
// it, 0 untracked and no Secret left. No canary, in any form the leak
// suite's scanner knows, is in any Git object or ref, pull request,
// output, metrics file, journal or state ConfigMap (secretReconcile).
func TestReconcileAdoptsSealedSecretOnRealArgoCD(t *testing.T) {
	t.Parallel() // a long test that may run beside others: see TestMain
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	giteaUp := giteaInBackground(ctx, t)
	c, a := argoCDPlane(ctx, t, testenv.ArgoCDCurrent)
	ns := c.Namespace(t)
	ss, err := testenv.StartSealedSecrets(ctx, c, ns)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Stop()
	g := giteaUp()
	// The chart's RoleBindings in ns are applied by hand here: its
	// adopt.yaml leaves RBAC out, so that the Secret is the one group.
	grants := installChartRBACWith(ctx, t, c, a, []string{"--set", "secrets.read=true", "--set", "secrets.sealedSecretsController=" + ss.Namespace + "/" + ss.Service,
		"--set-json", `config={"exclusions":[{"apiGroups":["rbac.authorization.k8s.io"]}]}`}, ns)
	// A partial run never skips the types this test is about (External
	// Secrets' CRDs, externalsecrets.external-secrets.io and the like, may
	// be skipped).
	s := startSecretReconcile(ctx, t, secretReconcile{c: c, a: a, g: g, grants: grants, ns: ns, cluster: "sealed", kind: sealed.Kind, crdGroup: sealed.Group})

	// Monday: the group of the Secret alone is proposed, sealed; Tuesday:
	// nothing new.
	gr, _ := s.propose("sealedAt")
	// Wednesday: a person merges it in Gitea; the run after it marks the
	// Secret before the first sync.
	waiting := s.merge(gr)
	marked, err := c.Clientset().CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if marked.Annotations[sealed.ManagedAnnotation] != "true" {
		t.Fatalf("reconcile did not mark Secret %s/db before the first sync (%s)", ns, waiting.Why)
	}
	// Thursday: a person syncs it (as argocd app sync would).
	s.takeOver(gr.App, `"result":"marked"`, `"result":"taken-over"`)
}
