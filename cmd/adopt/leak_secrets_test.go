package main

// What the leak suites of the three Secret forms (issue 45) share: the
// hand-applied Secret they plant canaries in, the channels a Secret form
// opens beyond the suite's own (leakscan_test.go), and a watch that files
// the objects finalize writes in the cluster.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"filippo.io/age"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/adopt-dev/adopt/internal/testenv"
)

// The channels a Secret form opens. They are not in leakChannels (the
// other suites have no operator to collect them from); each Secret
// suite that collects one proves, with a leak of its own, that the scan
// reports it there.
const (
	// chStoreCopy is the metadata of the copy a PushSecret writes into
	// the External Secrets store (its data is the value, by design).
	chStoreCopy leakChannel = "secret store copy's metadata"
	// chClusterObject is an object finalize writes in the cluster for a
	// Secret form (a PushSecret, a probe ExternalSecret, the metadata of
	// the Secrets they read or write), and the operator's status
	// messages on them.
	chClusterObject leakChannel = "object finalize wrote in the cluster"
	// chOperatorLog is the log of the Secret operator the suite runs.
	chOperatorLog leakChannel = "operator log"
)

// handSecret is the Secret db the real-Argo-CD Secret tests hand-apply:
// its values are canaries (empty ones are left out).
type handSecret struct {
	// Password is stringData password; Multi, a multi-line stringData
	// tls.key; Binary, a binary data token.
	Password, Multi, Binary string
	// ServerSide applies both objects again with kubectl apply
	// --server-side after the client-side apply (the runbook's way):
	// kubectl then holds fields for finalize to take back, and journal.
	ServerSide bool
	// Alone leaves ConfigMap settings out: the Secret is its namespace's
	// one object, so a group of its own.
	Alone bool
}

// plantSecret registers fresh canaries for a Secret, named after whose.
func plantSecret(t *testing.T, plants *leakPlants, whose, prefix string) handSecret {
	var lines []string
	for i := 0; i < 3; i++ {
		lines = append(lines, randomWord(t, "", 40))
	}
	return handSecret{
		Password: plants.add(whose+" password", randomWord(t, prefix, 26)),
		Multi:    plants.add(whose+" multi-line value", strings.Join(lines, "\n")+"\n"),
		Binary:   plants.add(whose+" binary value", string(randomBytes(t, 30))),
	}
}

// handApplySecret applies Secret db of ns (labels app: shop, annotation
// team: shop, s's values) and, unless s.Alone, ConfigMap settings beside
// it with the real kubectl, client-side: the Secret's
// last-applied-configuration holds every value in plaintext, as on a
// hand-applied Secret.
func handApplySecret(ctx context.Context, t *testing.T, c *testenv.ControlPlane, ns string, s handSecret) {
	t.Helper()
	stringData := map[string]any{"password": s.Password}
	if s.Multi != "" {
		stringData["tls.key"] = s.Multi
	}
	secret := map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata":   map[string]any{"name": "db", "namespace": ns, "labels": map[string]any{"app": "shop"}, "annotations": map[string]any{"team": "shop"}},
		"stringData": stringData}
	if s.Binary != "" {
		secret["data"] = map[string]any{"token": base64.StdEncoding.EncodeToString([]byte(s.Binary))}
	}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "settings", "namespace": ns}, "data": map[string]any{"mode": "leak-suite"}}
	objs := []map[string]any{secret, cm}
	if s.Alone {
		objs = objs[:1]
	}
	for _, obj := range objs {
		b, _ := json.Marshal(obj)
		if _, err := c.Kubectl(ctx, b, "apply", "-f", "-"); err != nil {
			t.Fatalf("kubectl apply in %s failed", ns) // its output would echo the manifest
		}
		if s.ServerSide {
			if _, err := c.Kubectl(ctx, b, "apply", "--server-side", "-f", "-"); err != nil {
				t.Fatalf("kubectl apply --server-side in %s failed", ns)
			}
		}
	}
}

// ageKey writes a fresh age identity to a file (mode 0600) and returns
// the file, the identity and its public recipient.
func ageKey(t *testing.T) (file, identity, recipient string) {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(file, []byte(id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return file, id.String(), id.Recipient().String()
}

// watchWrites files, under chClusterObject, every version the API server
// shows of the PushSecrets and ExternalSecrets of ns (spec and status,
// the operator's messages included) and the metadata of the Secrets
// finalize makes for a push (names ending .adopt-push or .adopt-probe:
// their data is the value, by design, in the cluster only), from now
// until the returned stop. stop returns how many PushSecret versions it
// saw.
func watchWrites(ctx context.Context, t *testing.T, c *testenv.ControlPlane, col *leakCollector, ns string) (stop func() int) {
	t.Helper()
	dyn := dynamic.NewForConfigOrDie(c.RESTConfig())
	resources := []schema.GroupVersionResource{testenv.PushSecretGVR, testenv.ExternalSecretGVR, {Version: "v1", Resource: "secrets"}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	pushes := 0
	var watches []watch.Interface
	for _, gvr := range resources {
		w, err := dyn.Resource(gvr).Namespace(ns).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("watch %s in %s: %v", gvr.Resource, ns, err)
		}
		watches = append(watches, w)
		wg.Add(1)
		go func(gvr schema.GroupVersionResource) {
			defer wg.Done()
			for ev := range w.ResultChan() {
				u, ok := ev.Object.(interface {
					GetName() string
					GetKind() string
					UnstructuredContent() map[string]any
				})
				if !ok {
					continue
				}
				obj := u.UnstructuredContent()
				if gvr.Resource == "secrets" {
					if !strings.HasSuffix(u.GetName(), ".adopt-push") && !strings.HasSuffix(u.GetName(), ".adopt-probe") {
						continue
					}
					obj = map[string]any{"metadata": obj["metadata"], "type": obj["type"]}
				}
				b, _ := json.Marshal(obj)
				col.add(chClusterObject, string(ev.Type)+" "+u.GetKind()+" "+ns+"/"+u.GetName(), string(b))
				if gvr == testenv.PushSecretGVR {
					mu.Lock()
					pushes++
					mu.Unlock()
				}
			}
		}(gvr)
	}
	return func() int {
		for _, w := range watches {
			w.Stop()
		}
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return pushes
	}
}
