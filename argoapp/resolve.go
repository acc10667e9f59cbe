package argoapp

import (
	"context"
	"fmt"
	"strings"

	"github.com/adopt-dev/adopt/gitops"
	"k8s.io/client-go/kubernetes"
)

// VersionQuery says where the Argo CD version may be learnt. ResolveVersion
// asks them in this order and takes the first that knows.
type VersionQuery struct {
	// Flag is --argocd-version; it wins.
	Flag string
	// API is argocd-server's version API (Argo CD API mode); may be nil.
	API interface {
		Version(ctx context.Context) (DetectedVersion, error)
	}
	// Kube reads the application controller's image tag in Namespace; may
	// be nil.
	Kube      kubernetes.Interface
	Namespace string
	// Recorded is what a plan recorded (Tracking.Version and
	// VersionSource), with the plan's id in RecordedBy.
	Recorded, RecordedSource, RecordedBy string
}

// ResolveVersion is the one way adopt learns the Argo CD version: the
// flag, else argocd-server, else the controller's image tag, else what the
// plan recorded. Only a bad flag is an error; otherwise an unknown version
// comes back with Source saying everything that was tried.
func ResolveVersion(ctx context.Context, q VersionQuery) (DetectedVersion, error) {
	if q.Flag != "" {
		return VersionFromFlag(q.Flag)
	}
	var tried []string
	if q.API != nil {
		v, err := q.API.Version(ctx)
		switch {
		case err != nil:
			tried = append(tried, err.Error())
		case v.Version.Known():
			return v, nil
		default:
			tried = append(tried, v.Source)
		}
	}
	if q.Kube != nil {
		v, err := VersionFromCluster(ctx, q.Kube, q.Namespace)
		switch {
		case err != nil:
			tried = append(tried, fmt.Sprintf("read the %s workload in namespace %s: %v", ControllerName, q.Namespace, gitops.OneLine(err.Error())))
		case v.Version.Known():
			return v, nil
		default:
			tried = append(tried, v.Source)
		}
	}
	if q.Recorded != "" {
		if v, err := ParseVersion(q.Recorded); err == nil && v.Known() {
			src := q.RecordedSource
			if src == "" {
				src = "unknown source"
			}
			return DetectedVersion{Version: v, Raw: q.Recorded, Source: fmt.Sprintf("plan %s (%s)", q.RecordedBy, src)}, nil
		}
	}
	if q.RecordedSource != "" {
		tried = append(tried, "the plan: "+q.RecordedSource)
	}
	if len(tried) == 0 {
		tried = append(tried, "nothing to ask")
	}
	src := strings.Join(tried, "; ")
	if !strings.Contains(src, "--argocd-version") {
		src += "; pass --argocd-version"
	}
	return DetectedVersion{Source: src}, nil
}
