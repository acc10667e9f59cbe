package planner_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/esoform"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestPlanChoosesTheExternalSecretsStore: with the real External Secrets
// Operator and a Ready kubernetes-provider SecretStore in the namespace
// (and no Sealed Secrets controller), the plan adopts the hand-applied
// Secret in form eso, showing the store and the remote key, with its uid
// and resourceVersion; adopt.yaml forcing none leaves it out. The plan
// never holds the canary.
func TestPlanChoosesTheExternalSecretsStore(t *testing.T) {
	const canary = "planner-eso-canary-Hq7d"
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns, storeNS := cp.Namespace(t), cp.Namespace(t)
	eso, err := testenv.StartExternalSecrets(ctx, cp, ns)
	if err != nil {
		t.Fatal(err)
	}
	defer eso.Stop()
	if err := eso.KubernetesStore(ctx, "vault", storeNS); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: "+ns+"}\nstringData: {password: "+canary+"}\n", "apply", "-f", "-")
	p := run(t, options(t, ns))
	db := object(p, "Secret", ns, "db")
	if db == nil || db.SecretForm == nil {
		t.Fatalf("the Secret has no form: %+v", db)
	}
	f := db.SecretForm
	if f.Form != plan.SecretFormESO || f.Store != "SecretStore "+ns+"/vault" || f.RemoteKey != esoform.RemoteKey(ns, "db") || f.UID == "" || f.SealedAt == "" {
		t.Fatalf("form %+v; want eso with SecretStore %s/vault and key %s", f, ns, esoform.RemoteKey(ns, "db"))
	}
	if !hasFinding(db, plan.CodeSecretForm) || hasFinding(db, plan.CodeSecret) {
		t.Fatalf("findings %+v; want the secret-form info in place of the secret warning", db.Findings)
	}
	for _, fd := range db.Findings {
		if fd.Code == plan.CodeSecretForm && (!strings.Contains(fd.Message, f.RemoteKey) || !strings.Contains(fd.Message, f.Store)) {
			t.Fatalf("the finding does not show the store and key: %s", fd.Message)
		}
	}
	y, err := yaml.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(y), canary) || strings.Contains(string(y), base64.StdEncoding.EncodeToString([]byte(canary))) {
		t.Fatal("the plan holds the canary")
	}

	o := options(t, ns)
	o.Config.Secrets.Forms = []config.SecretForm{{Namespaces: []string{ns}, Form: config.SecretFormNone}}
	if db := object(run(t, o), "Secret", ns, "db"); db == nil || db.SecretForm != nil {
		t.Fatalf("forced none: %+v", db)
	}
}
