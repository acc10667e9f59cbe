package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// TestAPIWarningsThroughAdoptsWriters (issue 36): the API server's
// warnings reach the command's stderr, not the process's, once each, with
// what looks like a secret masked. A CRD version deprecated with a warning
// that quotes a URL with a password and a token is served by the real API
// server; plan lists its hand-applied object and prints the warning.
func TestAPIWarningsThroughAdoptsWriters(t *testing.T) {
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

	out, errOut, code := adopt(t, "plan", "-n", ns, "-o", "json")
	if code != ExitOK && code != ExitFindings {
		t.Fatalf("plan exited %d: %s", code, errOut)
	}
	for _, s := range []string{pass, token} {
		if strings.Contains(out+errOut, s) {
			t.Errorf("a secret in the API server's warning reached the output: %s", errOut)
		}
	}
	want := "Warning: warn.adopt.dev/v1 Gadget is going away; migrate with https://robot:<redacted>@tools.invalid/migrate?<redacted>"
	if strings.Count(errOut, want) != 1 {
		t.Errorf("stderr %q, want the warning once, masked: %q", errOut, want)
	}

	// A connection the command builds from elsewhere, as --argocd-clusters
	// does from a cluster Secret (a bare rest.Config, no kubeconfig and no
	// ConfigFlags), sends its warnings through the same writer: the
	// handler is client-go's process-wide default.
	var stderr bytes.Buffer
	newRootCmd(genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: &stderr})
	bare := rest.CopyConfig(cp.RESTConfig())
	bare.WarningHandler = nil
	gadgets := schema.GroupVersionResource{Group: "warn.adopt.dev", Version: "v1", Resource: "gadgets"}
	if _, err := dynamic.NewForConfigOrDie(bare).Resource(gadgets).Namespace(ns).List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if strings.Count(stderr.String(), want) != 1 || strings.Contains(stderr.String(), token) {
		t.Errorf("a bare connection's warning: stderr %q, want it once, masked", stderr.String())
	}
}
