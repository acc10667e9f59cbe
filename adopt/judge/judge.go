// Package judge turns what discovery collected about one object into
// verdicts: whether it is a user's object or something to skip, whether Argo
// CD tracks it, who put it there, and how close its annotations are to the
// cap. It reads only the facts it is given; it never talks to the cluster.
package judge

import (
	"fmt"
	"sort"
	"strings"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/adopt/helmrelease"
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

// Skip classes, so reports and tests can group the reasons.
const (
	SkipOwned     = "owned"
	SkipSystem    = "system"
	SkipDefault   = "api-server-default"
	SkipExcluded  = "excluded"
	SkipFlux      = "flux"
	SkipArgoCD    = "argocd"
	SkipHelm      = "helm-record"
	SkipAdopt     = "adopt"
	SkipWholeType = "type"
)

// SkipObject returns why an object of an adopted type is still not a user's
// object, or "".
func SkipObject(o *discover.Object) string {
	_, why := SkipObjectClass(o)
	return why
}

// SkipObjectClass is SkipObject with the skip class.
func SkipObjectClass(o *discover.Object) (class, why string) {
	switch {
	case len(o.Owners) > 0:
		return SkipOwned, "owned by " + strings.Join(o.Owners, ", ") + "; adopt the owner instead"
	case systemNamespaces[o.Namespace]:
		return SkipSystem, "in system namespace " + o.Namespace
	case o.Type.Kind == "Namespace" && o.Type.Group == "" && (systemNamespaces[o.Name] || o.Name == "default"):
		return SkipDefault, "namespace created by the API server"
	case o.Type.Kind == "ServiceAccount" && o.Type.Group == "" && o.Name == "default":
		return SkipDefault, "default ServiceAccount, created in every namespace"
	case o.Type.Kind == "ConfigMap" && o.Type.Group == "" && o.Name == "kube-root-ca.crt":
		return SkipDefault, "root CA bundle, published in every namespace"
	case o.Type.Kind == "Service" && o.Type.Group == "" && o.Namespace == "default" && o.Name == "kubernetes":
		return SkipDefault, "the API server's own Service"
	case o.Labels["kubernetes.io/bootstrapping"] != "":
		return SkipSystem, "bootstrap object (kubernetes.io/bootstrapping=" + o.Labels["kubernetes.io/bootstrapping"] + ")"
	case o.Annotations["apf.kubernetes.io/autoupdate-spec"] != "":
		return SkipSystem, "API priority and fairness default, maintained by the API server"
	case o.Labels["kube-aggregator.kubernetes.io/automanaged"] != "":
		return SkipSystem, "APIService maintained by the aggregator"
	case o.Type.Group == "networking.k8s.io" && o.Type.Kind == "ServiceCIDR" && o.Name == "kubernetes":
		return SkipDefault, "the cluster's default ServiceCIDR, created by the API server"
	case o.Type.Group == "scheduling.k8s.io" && strings.HasPrefix(o.Name, "system-"):
		return SkipSystem, "built-in priority class"
	case strings.HasPrefix(o.Name, "system:") && strings.HasPrefix(o.Type.Group, "rbac.authorization.k8s.io"):
		return SkipSystem, "system RBAC object"
	case o.Type.Group == "" && helmrelease.IsRecord(o.Type.Kind, o.Name, o.Labels):
		return SkipHelm, "Helm's release record (owner=helm), not a workload: never adopted or changed"
	case o.Labels["app.kubernetes.io/managed-by"] == "adopt":
		return SkipAdopt, "adopt's own record (adopt reconcile's Lease or a group's plan), never adopted"
	case o.Type.Group == "argoproj.io" && (o.Type.Kind == "Application" || o.Type.Kind == "AppProject" || o.Type.Kind == "ApplicationSet"):
		return SkipArgoCD, "Argo CD's own configuration; manage it with an app-of-apps, not adopt"
	}
	if k := fluxLabel(o.Labels); k != "" {
		return SkipFlux, "managed by Flux (label " + k + "); reported, not adopted"
	}
	return "", ""
}

// SealedBy is, for a Secret whose one owner is a SealedSecret (its
// controller took it over, adopt's sealed form), that SealedSecret's
// name; "" otherwise.
func SealedBy(o *discover.Object) string {
	if o.Type.Group != "" || o.Type.Kind != "Secret" || len(o.Owners) != 1 {
		return ""
	}
	name, ok := strings.CutPrefix(o.Owners[0], "SealedSecret/")
	if !ok {
		return ""
	}
	return name
}

// ExternalSecretBy is, for a Secret whose one owner is an ExternalSecret
// (the External Secrets Operator took it over, adopt's eso form), that
// ExternalSecret's name; "" otherwise.
func ExternalSecretBy(o *discover.Object) string {
	if o.Type.Group != "" || o.Type.Kind != "Secret" || len(o.Owners) != 1 {
		return ""
	}
	name, ok := strings.CutPrefix(o.Owners[0], "ExternalSecret/")
	if !ok {
		return ""
	}
	return name
}

// fluxLabel returns the first (sorted) Flux ownership label, or "".
func fluxLabel(labels map[string]string) string {
	var keys []string
	for k := range labels {
		if strings.HasPrefix(k, "kustomize.toolkit.fluxcd.io/") || strings.HasPrefix(k, "helm.toolkit.fluxcd.io/") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		return ""
	}
	return keys[0]
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

// Confidence says how sure a provenance verdict is.
type Confidence string

// Confidence levels.
const (
	High   Confidence = "high"
	Medium Confidence = "medium"
	Low    Confidence = "low"
)

// JudgeProvenance classifies an object from its managers and metadata, with
// the evidence for the verdict and how sure it is.
func JudgeProvenance(o *discover.Object) (Provenance, string, Confidence) {
	release := o.Annotations["meta.helm.sh/release-name"]
	byHelm := o.Labels["app.kubernetes.io/managed-by"] == "Helm"
	switch {
	case byHelm && release != "":
		return ProvenanceHelm, fmt.Sprintf("Helm release %q (managed-by label and release annotation)", release), High
	case byHelm || release != "":
		return ProvenanceHelm, fmt.Sprintf("Helm release %q (only one of the managed-by label and release annotation)", release), Medium
	}
	if k := fluxLabel(o.Labels); k != "" {
		return ProvenanceFlux, "label " + k, High
	}
	// What the managers of the object itself (not a subresource) say:
	// kubectl's, and the first other one by name.
	var csa, kubectlApply, lastApplied, hasOther bool
	other := ""
	for _, m := range o.Managers {
		if m.Subresource != "" {
			continue
		}
		switch {
		case m.Manager == "kubectl-client-side-apply" && m.Operation == "Update":
			csa = true
		case m.Manager == "kubectl" && m.Operation == "Apply":
			kubectlApply = true
		case m.Manager == "kubectl-last-applied" && (m.Operation == "Apply" || m.Operation == "Update"):
			lastApplied = true
		}
		if !strings.HasPrefix(m.Manager, "kubectl") && m.Manager != "before-first-apply" && (!hasOther || m.Manager < other) {
			other, hasOther = m.Manager, true
		}
	}
	switch {
	case csa:
		return ProvenanceClientSideApply, "manager kubectl-client-side-apply (Update)", High
	case kubectlApply || lastApplied:
		ev := "manager kubectl (Apply)"
		if lastApplied {
			ev = "managers kubectl (Apply) and kubectl-last-applied"
		}
		if o.Budget.HasLastApplied {
			ev += "; a stale last-applied-configuration from an earlier client-side apply remains"
		}
		return ProvenanceServerSideApply, ev, High
	case o.Budget.HasLastApplied:
		return ProvenanceClientSideApply, "last-applied-configuration present (no kubectl-client-side-apply manager)", Medium
	}
	for _, m := range o.Managers {
		if imperativeManagers[m.Manager] {
			return ProvenanceImperative, "manager " + m.Manager, High
		}
	}
	if hasOther {
		return ProvenanceController, "manager " + other, Medium
	}
	return ProvenanceUnknown, "no field managers", Low
}

// NextApply is what the next client-side `kubectl apply` would do to the
// annotations: it writes a last-applied copy of appliedBytes next to the
// other annotations.
type NextApply struct {
	// Bytes is the annotation total after that apply; 0 when unknown.
	Bytes int `json:"bytes" yaml:"bytes"`
	// Fails is set when Bytes exceeds the cap.
	Fails bool `json:"fails" yaml:"fails"`
}

// PredictNextApply computes NextApply from the object's current budget and
// the size of the configuration the next apply would record (0: unknown).
func PredictNextApply(o *discover.Object, appliedBytes int) NextApply {
	if appliedBytes <= 0 {
		return NextApply{}
	}
	others := o.Budget.AnnotationBytes - o.Budget.LastAppliedBytes
	n := others + len(budget.LastAppliedKey) + appliedBytes
	return NextApply{Bytes: n, Fails: n > budget.AnnotationCap}
}

// Verdict is what the judge decided about one object.
type Verdict struct {
	// Skip is why the object is left out; empty for a candidate.
	Skip      string
	SkipClass string
	// TrackedBy names the Application tracking the object; empty when
	// untracked.
	TrackedBy string
	// StaleTracking says why a tracking mark on the object does not count.
	StaleTracking string
	Provenance    Provenance
	Evidence      string
	Confidence    Confidence
	Level         budget.Level
}

// Judge decides about one object under tracking t, given the Applications
// that exist.
func Judge(o *discover.Object, t argoapp.Tracking, apps argoapp.Applications) Verdict {
	v := Classify(o, t, apps)
	v.Provenance, v.Evidence, v.Confidence = JudgeProvenance(o)
	return v
}

// Classify is Judge without the provenance: whether the object is
// skipped or tracked, its stale tracking mark and its budget level.
func Classify(o *discover.Object, t argoapp.Tracking, apps argoapp.Applications) Verdict {
	v := Verdict{Level: o.Budget.Level()}
	v.SkipClass, v.Skip = SkipObjectClass(o)
	tr := t.Check(o.Ref(), o.Labels, o.Annotations, apps)
	v.TrackedBy, v.StaleTracking = tr.App, tr.Stale
	return v
}
