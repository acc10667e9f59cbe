package preview

import (
	"context"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// KnownController is a controller that writes fields of objects it did
// not create. Its entries are written even when the object's managedFields
// do not show it yet (an autoscaler that has not scaled, an injector that
// has not run since the last apply).
type KnownController struct {
	// Name is the controller, as an entry's Source names it.
	Name string
	// Source is where its behaviour is documented.
	Source string
	// Manager is the field manager it writes as, named when its fields
	// have no owner yet that says so.
	Manager string
	// find returns the fields it writes on the object.
	find func(ctx context.Context, p *Previewer, in Input, live *unstructured.Unstructured, r *Result) ([]known, error)
}

// known is what one controller writes on one object: JSON pointers, the
// same fields as Change paths name them, and why.
type known struct {
	pointers, paths []string
	reason          string
}

// KnownControllers is the table of known controllers, in the order their
// entries are looked for.
func KnownControllers() []KnownController {
	return []KnownController{
		{
			Name:    "HorizontalPodAutoscaler",
			Source:  "kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale: the HPA controller in kube-controller-manager sets spec.replicas of spec.scaleTargetRef through its scale subresource",
			Manager: "kube-controller-manager",
			find:    scaledBy(hpaResource, "HorizontalPodAutoscaler"),
		},
		{
			Name:    "KEDA ScaledObject",
			Source:  "keda.sh/docs/latest/reference/scaledobject-spec: KEDA scales spec.scaleTargetRef (default apps/v1 Deployment) through the HPA keda-hpa-<name> it creates",
			Manager: "kube-controller-manager",
			find:    scaledBy(scaledObjectResource, "KEDA ScaledObject"),
		},
		{
			Name:    "cert-manager cainjector",
			Source:  "cert-manager.io/docs/concepts/ca-injector: the cert-manager.io/inject-ca-from, inject-ca-from-secret and inject-apiserver-ca annotations make cainjector write the caBundle of webhook configurations, APIServices and CRD conversion webhooks",
			Manager: "cert-manager-cainjector",
			find:    injectedCA,
		},
		{
			Name:   "APIService caBundle",
			Source: "kubernetes.io/docs/tasks/extend-kubernetes/configure-aggregation-layer: an APIService's spec.caBundle is the extension server's serving CA, written by whoever issues that certificate, not kept in Git",
			find:   apiServiceCA,
		},
	}
}

var (
	hpaResource          = schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}
	scaledObjectResource = schema.GroupVersionResource{Group: "keda.sh", Version: "v1alpha1", Resource: "scaledobjects"}
)

// scaledBy finds the autoscalers of resource (HPAs, ScaledObjects) in the
// object's namespace whose spec.scaleTargetRef names it, when Git sets
// spec.replicas (without it, the sync leaves replicas alone). A resource the
// cluster does not serve finds nothing; one the preview may not list gets a
// note.
func scaledBy(resource schema.GroupVersionResource, kind string) func(context.Context, *Previewer, Input, *unstructured.Unstructured, *Result) ([]known, error) {
	return func(ctx context.Context, p *Previewer, in Input, live *unstructured.Unstructured, r *Result) ([]known, error) {
		if _, set, _ := unstructured.NestedFieldNoCopy(in.Manifest.Object, "spec", "replicas"); !set || live.GetNamespace() == "" {
			return nil, nil
		}
		list, err := p.Client.Resource(resource).Namespace(live.GetNamespace()).List(ctx, metav1.ListOptions{})
		switch {
		case apierrors.IsNotFound(err) && resource != hpaResource:
			return nil, nil
		case apierrors.IsForbidden(err) || apierrors.IsNotFound(err):
			r.Notes = append(r.Notes, kind+"s not checked: "+err.Error())
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("list %ss in %s: %w", kind, live.GetNamespace(), err)
		}
		group := live.GroupVersionKind().Group
		var out []known
		for _, a := range list.Items {
			target, _, _ := unstructured.NestedString(a.Object, "spec", "scaleTargetRef", "kind")
			name, _, _ := unstructured.NestedString(a.Object, "spec", "scaleTargetRef", "name")
			av, _, _ := unstructured.NestedString(a.Object, "spec", "scaleTargetRef", "apiVersion")
			if resource == scaledObjectResource {
				if target == "" {
					target = "Deployment"
				}
				if av == "" {
					av = "apps/v1"
				}
			}
			gv, _ := schema.ParseGroupVersion(av)
			if target != live.GetKind() || name != live.GetName() || gv.Group != group {
				continue
			}
			out = append(out, known{pointers: []string{"/spec/replicas"}, paths: []string{"spec.replicas"},
				reason: fmt.Sprintf("%s %s/%s scales it; Git's spec.replicas would fight the autoscaler", kind, a.GetNamespace(), a.GetName())})
		}
		return out, nil
	}
}

// CA injection annotations of cert-manager's cainjector.
const (
	injectCAFrom       = "cert-manager.io/inject-ca-from"
	injectCAFromSecret = "cert-manager.io/inject-ca-from-secret"
	injectAPIServerCA  = "cert-manager.io/inject-apiserver-ca"
)

// injectedCA finds the caBundle fields cainjector writes on an object that
// carries one of its annotations.
func injectedCA(_ context.Context, _ *Previewer, _ Input, live *unstructured.Unstructured, _ *Result) ([]known, error) {
	ann := live.GetAnnotations()
	by := ""
	for _, k := range []string{injectCAFrom, injectCAFromSecret, injectAPIServerCA} {
		if v, ok := ann[k]; ok {
			by = k + ": " + v
			break
		}
	}
	if by == "" {
		return nil, nil
	}
	reason := "cert-manager's cainjector writes its caBundle (" + by + ")"
	k := known{reason: reason}
	switch gk := live.GroupVersionKind().GroupKind().String(); gk {
	case "MutatingWebhookConfiguration.admissionregistration.k8s.io", "ValidatingWebhookConfiguration.admissionregistration.k8s.io":
		hooks, _, _ := unstructured.NestedSlice(live.Object, "webhooks")
		for i, h := range hooks {
			name, _, _ := unstructured.NestedString(asMap(h), "name")
			k.pointers = append(k.pointers, "/webhooks/"+strconv.Itoa(i)+"/clientConfig/caBundle")
			k.paths = append(k.paths, "webhooks[name="+name+"].clientConfig.caBundle")
		}
	case "APIService.apiregistration.k8s.io":
		k.pointers, k.paths = []string{"/spec/caBundle"}, []string{"spec.caBundle"}
	case "CustomResourceDefinition.apiextensions.k8s.io":
		k.pointers, k.paths = []string{"/spec/conversion/webhook/clientConfig/caBundle"}, []string{"spec.conversion.webhook.clientConfig.caBundle"}
	}
	if len(k.pointers) == 0 {
		return nil, nil
	}
	return []known{k}, nil
}

// apiServiceCA finds an APIService whose live spec.caBundle Git does not
// set, written by something other than a person's kubectl (cainjector's
// annotations are injectedCA's).
func apiServiceCA(_ context.Context, _ *Previewer, in Input, live *unstructured.Unstructured, _ *Result) ([]known, error) {
	if live.GroupVersionKind().GroupKind().String() != "APIService.apiregistration.k8s.io" {
		return nil, nil
	}
	ann := live.GetAnnotations()
	for _, k := range []string{injectCAFrom, injectCAFromSecret, injectAPIServerCA} {
		if _, ok := ann[k]; ok {
			return nil, nil
		}
	}
	ca, _, _ := unstructured.NestedString(live.Object, "spec", "caBundle")
	inGit, _, _ := unstructured.NestedString(in.Manifest.Object, "spec", "caBundle")
	if ca == "" || inGit == ca {
		return nil, nil
	}
	os, err := owners(live)
	if err != nil {
		return nil, err
	}
	by := fieldOwner(os, "spec.caBundle")
	if by == "" {
		return nil, nil
	}
	return []known{{pointers: []string{"/spec/caBundle"}, paths: []string{"spec.caBundle"},
		reason: by + " wrote spec.caBundle and Git does not carry it"}}, nil
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
