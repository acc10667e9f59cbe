package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestPlanReadsBodiesByCounts plans, through a request-counting proxy, 120
// ConfigMaps spread 3 to a namespace over 40 namespaces, each also in the
// GitOps repo (one with a value Git has and the cluster lacks): the plan
// reads their bodies for drift with a list of the cluster's ConfigMaps,
// not one GET each (120 before), and still finds every match and the one
// drift.
func TestPlanReadsBodiesByCounts(t *testing.T) {
	ctx := context.Background()
	base := cp.Namespace(t)
	cfg := cp.RESTConfig()
	cfg.QPS, cfg.Burst = 500, 1000
	cs := kubernetes.NewForConfigOrDie(cfg)
	const namespaces, each = 40, 3
	files := map[string]string{}
	var names []string
	for n := 0; n < namespaces; n++ {
		ns := fmt.Sprintf("%s-%02d", base, n)
		names = append(names, ns)
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < each; i++ {
			cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Namespace: ns}, Data: map[string]string{"k": fmt.Sprint(n, i)}}
			if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if n == 0 && i == 0 {
				cm.Data["k"] = "in Git only"
			}
			b, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": cm.Name, "namespace": ns}, "data": cm.Data})
			if err != nil {
				t.Fatal(err)
			}
			files[fmt.Sprintf("k8s/%s/%s.yaml", ns, cm.Name)] = string(b)
		}
	}
	_, url := gitRepo(t, "spread", files)
	fp, err := testenv.StartFaultProxy(cp, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer fp.Close()
	var out, errb bytes.Buffer
	if code := runAdopt(t, "adopt", []string{"--kubeconfig", fp.Kubeconfig, "plan", "-A", "-q", "-o", "json", "--repo", url}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	gets := 0
	for _, r := range fp.Requests() {
		if r.Method == "GET" && strings.HasPrefix(r.Path, "/api/v1/namespaces/"+base+"-") && strings.Contains(r.Path, "/configmaps/") {
			gets++
		}
	}
	if gets != 0 {
		t.Fatalf("the plan read %d ConfigMaps one GET each, want a list", gets)
	}
	p := &plan.Plan{}
	if err := json.Unmarshal(out.Bytes(), p); err != nil {
		t.Fatal(err)
	}
	drifted := 0
	for _, ns := range names {
		obj := plNames(p, ns)
		for i := 0; i < each; i++ {
			o := obj[fmt.Sprintf("cm-%d", i)]
			if o == nil || o.Git == nil || o.Drift == nil {
				t.Fatalf("%s/cm-%d: not matched with Git, or its body not read: %+v", ns, i, o)
			}
			if !o.Drift.Identical() {
				drifted++
			}
		}
	}
	if drifted != 1 {
		t.Fatalf("%d drifted, want 1", drifted)
	}
}
