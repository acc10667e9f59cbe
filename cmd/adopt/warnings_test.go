package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/adopt-dev/adopt/adopt/fleet"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// apiWarningsTo installs adopt's warning handler as main does, writing to
// a buffer the test reads, and puts main's back when the test ends.
func apiWarningsTo(t *testing.T) *bytes.Buffer {
	t.Helper()
	var b bytes.Buffer
	installAPIWarnings(&b)
	t.Cleanup(func() { installAPIWarnings(os.Stderr) })
	return &b
}

// TestAPIWarningsThroughAdoptsWriters (issues 36 and 44): the API server's
// warnings go through adopt's masking handler, once each, with what looks
// like a secret masked, from every connection: main installs the handler
// as client-go's process-wide default. A CRD version deprecated with a
// warning that quotes a URL with a password and a token is served by the
// real API server; plan lists its hand-applied object and the warning is
// told masked. Then the same cluster is reached only through its Argo CD
// cluster Secret (plan --argocd-clusters; the kubeconfig has only the
// management cluster, which has no such CRD), and its warning is masked
// too.
func TestAPIWarningsThroughAdoptsWriters(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns := cp.Namespace(t)
	const pass, token = "Wp0-S3cr3tPassw0rd-7f1c", "aZ3kP9qL2mX8vB4nR7tY1wE6uI0oS5dF"
	kc(t, []byte(fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.warn.adopt.dev}
spec:
  group: warn.adopt.dev
  scope: Namespaced
  names: {kind: Gadget, plural: gadgets, singular: gadget}
  versions:
  - name: v1
    served: true
    storage: true
    deprecated: true
    deprecationWarning: "warn.adopt.dev/v1 Gadget is going away; migrate with https://robot:%s@tools.invalid/migrate?session=%s"
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`, pass, token)), "apply", "-f", "-")
	kc(t, nil, "wait", "--for", "condition=established", "crd/gadgets.warn.adopt.dev")
	kc(t, []byte(fmt.Sprintf("apiVersion: warn.adopt.dev/v1\nkind: Gadget\nmetadata: {name: g1, namespace: %s}\nspec: {size: 3}\n", ns)), "apply", "-f", "-")
	want := "Warning: warn.adopt.dev/v1 Gadget is going away; migrate with https://robot:<redacted>@tools.invalid/migrate?<redacted>"
	check := func(how, out, errOut string, warned *bytes.Buffer) {
		t.Helper()
		for _, s := range []string{pass, token} {
			if strings.Contains(out+errOut+warned.String(), s) {
				t.Errorf("%s: a secret in the API server's warning reached the output: %s %s", how, errOut, warned)
			}
		}
		if strings.Count(warned.String(), want) != 1 {
			t.Errorf("%s: the warnings told %q, want this once, masked: %q", how, warned, want)
		}
	}

	warned := apiWarningsTo(t)
	out, errOut, code := adopt(t, "plan", "-n", ns, "-o", "json")
	if code != ExitOK && code != ExitFindings {
		t.Fatalf("plan exited %d: %s", code, errOut)
	}
	check("plan", out, errOut, warned)

	// --argocd-clusters: cp registered with another cluster's Argo CD, and
	// reached only through that cluster Secret's own rest.Config.
	mgmt := startControlPlane(ctx, t)
	installApplicationCRDOn(t, mgmt)
	if _, err := testenv.RegisterClusterOn(ctx, mgmt, argoNS, "workload", cp, map[string]string{"fleet": "warnings"}); err != nil {
		t.Fatal(err)
	}
	kubeconfig := fleetKubeconfig(t, map[string]*testenv.ControlPlane{"mgmt": mgmt})
	warned = apiWarningsTo(t)
	var outb, errb bytes.Buffer
	code = runAdopt(t, "adopt", []string{"--kubeconfig", kubeconfig, "plan", "--argocd-context", "mgmt", "--argocd-clusters=fleet=warnings",
		"--argocd-version", "v3.2.6", "-n", ns, "--out-dir", filepath.Join(t.TempDir(), "fleet"), "-o", "json"}, strings.NewReader(""), &outb, &errb)
	var ix fleet.Index
	if err := json.Unmarshal(outb.Bytes(), &ix); err != nil || code != ExitOK && code != ExitFindings {
		t.Fatalf("plan --argocd-clusters exited %d (%v): %s %s", code, err, outb.String(), errb.String())
	}
	if len(ix.Clusters) != 1 || ix.Clusters[0].Via != fleet.ViaArgoCDCluster || ix.Clusters[0].NotScanned != "" {
		t.Fatalf("plan --argocd-clusters did not plan the workload through its cluster Secret: %+v", ix.Clusters)
	}
	check("plan --argocd-clusters", outb.String(), errb.String(), warned)
}
