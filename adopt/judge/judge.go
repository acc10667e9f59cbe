// Package judge turns what discovery collected about one object into
// verdicts: whether it is a user's object or something to skip, whether Argo
// CD tracks it, who put it there, and how close its annotations are to the
// cap. It reads only the facts it is given; it never talks to the cluster.
package judge

import (
	"fmt"
	"strings"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/argoapp"
)

// systemNamespaces hold the control plane's own objects.
var systemNamespaces = map[string]bool{"kube-system": true, "kube-public": true, "kube-node-lease": true}

// SkipType returns why a whole resource type is not a user's object to
// adopt, or "".
func SkipType(t discover.Type) string {
	switch {
	case t.Kind == "Event" && (t.Group == "" || t.Group == "events.k8s.io"):
		return "events are records, not desired state"
	case t.Group == "" && t.Kind == "Endpoints", t.Group == "discovery.k8s.io" && t.Kind == "EndpointSlice":
		return "endpoints are maintained by the endpoints controllers"
	case t.Group == "coordination.k8s.io" && t.Kind == "Lease":
		return "leases are leader-election and heartbeat records"
	case t.Group == "" && t.Kind == "ComponentStatus":
		return "component statuses are computed by the API server"
	case t.Group == "" && t.Kind == "Node":
		return "nodes are registered by kubelets, not declared in Git"
	case t.Group == "certificates.k8s.io" && t.Kind == "CertificateSigningRequest":
		return "certificate signing requests are transient"
	case t.Group == "networking.k8s.io" && t.Kind == "IPAddress":
		return "IP addresses are allocated by the API server for Services"
	case t.Group == "events.k8s.io":
		return "events are records, not desired state"
	}
	return ""
}

// SkipObject returns why an object of an adopted type is still not a user's
// object, or "".
func SkipObject(o *discover.Object) string {
	switch {
	case len(o.Owners) > 0:
		return "owned by " + strings.Join(o.Owners, ", ") + "; adopt the owner instead"
	case systemNamespaces[o.Namespace]:
		return "in system namespace " + o.Namespace
	case o.Type.Kind == "Namespace" && o.Type.Group == "" && (systemNamespaces[o.Name] || o.Name == "default"):
		return "namespace created by the API server"
	case o.Type.Kind == "ServiceAccount" && o.Type.Group == "" && o.Name == "default":
		return "default ServiceAccount, created in every namespace"
	case o.Type.Kind == "ConfigMap" && o.Type.Group == "" && o.Name == "kube-root-ca.crt":
		return "root CA bundle, published in every namespace"
	case o.Type.Kind == "Service" && o.Type.Group == "" && o.Namespace == "default" && o.Name == "kubernetes":
		return "the API server's own Service"
	case o.Labels["kubernetes.io/bootstrapping"] != "":
		return "bootstrap object (kubernetes.io/bootstrapping=" + o.Labels["kubernetes.io/bootstrapping"] + ")"
	case o.Annotations["apf.kubernetes.io/autoupdate-spec"] != "":
		return "API priority and fairness default, maintained by the API server"
	case o.Labels["kube-aggregator.kubernetes.io/automanaged"] != "":
		return "APIService maintained by the aggregator"
	case o.Type.Group == "networking.k8s.io" && o.Type.Kind == "ServiceCIDR" && o.Name == "kubernetes":
		return "the cluster's default ServiceCIDR, created by the API server"
	case o.Type.Group == "scheduling.k8s.io" && strings.HasPrefix(o.Name, "system-"):
		return "built-in priority class"
	case strings.HasPrefix(o.Name, "system:") && strings.HasPrefix(o.Type.Group, "rbac.authorization.k8s.io"):
		return "system RBAC object"
	}
	return ""
}

// Provenance says who most likely put an object into the cluster.
type Provenance string

// Provenance classes.
const (
	ProvenanceClientSideApply Provenance = "hand-applied (client-side)"
	ProvenanceServerSideApply Provenance = "hand-applied (server-side)"
	ProvenanceImperative      Provenance = "imperative"
	ProvenanceHelm            Provenance = "helm"
	ProvenanceFlux            Provenance = "flux"
	ProvenanceController      Provenance = "controller"
	ProvenanceUnknown         Provenance = "unknown"
)

// imperativeManagers are kubectl's imperative verbs.
var imperativeManagers = map[string]bool{
	"kubectl-create": true, "kubectl-edit": true, "kubectl-annotate": true, "kubectl-label": true,
	"kubectl-patch": true, "kubectl-replace": true, "kubectl-set": true, "kubectl-scale": true,
	"before-first-apply": true,
}

// JudgeProvenance classifies an object from its managers and metadata, with
// the evidence for the verdict.
func JudgeProvenance(o *discover.Object) (Provenance, string) {
	if o.Labels["app.kubernetes.io/managed-by"] == "Helm" || o.Annotations["meta.helm.sh/release-name"] != "" {
		return ProvenanceHelm, fmt.Sprintf("Helm release %q", o.Annotations["meta.helm.sh/release-name"])
	}
	for k := range o.Labels {
		if strings.HasPrefix(k, "kustomize.toolkit.fluxcd.io/") || strings.HasPrefix(k, "helm.toolkit.fluxcd.io/") {
			return ProvenanceFlux, "label " + k
		}
	}
	has := map[string]bool{}
	var others []string
	for _, m := range o.Managers {
		if m.Subresource != "" {
			continue
		}
		key := m.Manager + "/" + m.Operation
		has[key] = true
		if !strings.HasPrefix(m.Manager, "kubectl") && m.Manager != "before-first-apply" {
			others = append(others, m.Manager)
		}
	}
	switch {
	case has["kubectl-client-side-apply/Update"] || o.Budget.HasLastApplied && !has["kubectl/Apply"]:
		return ProvenanceClientSideApply, "manager kubectl-client-side-apply or last-applied-configuration present"
	case has["kubectl/Apply"] || has["kubectl-last-applied/Apply"] || has["kubectl-last-applied/Update"]:
		return ProvenanceServerSideApply, "manager kubectl (Apply)"
	}
	for _, m := range o.Managers {
		if imperativeManagers[m.Manager] {
			return ProvenanceImperative, "manager " + m.Manager
		}
	}
	if len(others) > 0 {
		return ProvenanceController, "manager " + others[0]
	}
	return ProvenanceUnknown, "no field managers"
}

// Verdict is what the judge decided about one object.
type Verdict struct {
	// Skip is why the object is left out; empty for a candidate.
	Skip string
	// TrackedBy names the Application tracking the object; empty when
	// untracked.
	TrackedBy  string
	Provenance Provenance
	Evidence   string
	Level      budget.Level
}

// Judge decides about one object under tracking t.
func Judge(o *discover.Object, t argoapp.Tracking) Verdict {
	v := Verdict{Skip: SkipObject(o), Level: o.Budget.Level()}
	v.TrackedBy = t.TrackedBy(o.Labels, o.Annotations)
	v.Provenance, v.Evidence = JudgeProvenance(o)
	return v
}
