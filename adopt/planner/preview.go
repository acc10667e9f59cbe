package planner

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/adopt-dev/adopt/adopt/capacity"
	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/helmrelease"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/preview"
	"github.com/adopt-dev/adopt/adopt/redact"
	"github.com/adopt-dev/adopt/argoapp"
)

// firstSync dry-runs Argo CD's first sync of every adopted object with the
// manifest its Application will sync: the Git file when matched, otherwise
// the clean export; a Helm release's objects with the chart rendered (see
// helmProof). Secrets (left out of sync, or kept from live) are not
// previewed. It writes nothing.
func firstSync(ctx context.Context, o Options, j *redact.Judge, explain func(error) error, p *plan.Plan, ix *gitindex.Index, rels map[string]*helmrelease.Release) error {
	snap, err := capacity.Read(ctx, o.Kube)
	if err != nil {
		return explain(fmt.Errorf("read nodes and pods for the capacity check: %w", err))
	}
	pv := &preview.Previewer{Client: o.Dynamic, Capacity: snap}
	results := map[string]preview.Result{}
	for i, ob := range p.Objects {
		if ob.IsSecret() || ob.HelmRelease != "" {
			continue
		}
		if o.Previewed != nil {
			o.Previewed(i+1, len(p.Objects))
		}
		gvr := ob.GVR()
		live, err := export.Fetch(ctx, o.Dynamic, gvr, ob.Namespace, ob.Name)
		if err != nil {
			return explain(fmt.Errorf("%s: %w", ob.Ref.String(), err))
		}
		manifest, err := syncManifest(ob, p.SyncManifest(ob.Ref.String()), live, ix, p.Tracking.InstanceLabelKey)
		if err != nil {
			return fmt.Errorf("%s: %w", ob.Ref.String(), err)
		}
		id := ""
		if p.Tracking.Method != argoapp.TrackingLabel {
			id = argoapp.TrackingID{AppName: ob.App, Ref: ob.Ref}.String()
		}
		r, err := pv.Object(ctx, preview.Input{Resource: gvr, Manifest: manifest, Live: live, TrackingID: id})
		if err != nil {
			return explain(fmt.Errorf("preview %s: %w", ob.Ref.String(), err))
		}
		results[ob.Ref.String()] = r
	}
	if o.Previewed != nil {
		o.Previewed(len(p.Objects), len(p.Objects))
	}
	if err := helmProof(ctx, o, j, explain, p, ix, rels, pv, results); err != nil {
		return err
	}
	p.AddPreview(results)
	return nil
}

// syncManifest is what the object's Application will sync: claimed, when
// Build matched it with a manifest the index cannot find again (an
// existing Application's chart render, another revision), else its Git
// match, else the clean export.
func syncManifest(ob plan.Object, claimed *gitindex.Manifest, live *unstructured.Unstructured, ix *gitindex.Index, instanceLabel string) (*unstructured.Unstructured, error) {
	m := claimed
	if m == nil && ob.Git != nil {
		if ix == nil {
			return nil, fmt.Errorf("in Git at %s:%d but the repo was not read: pass --repo", ob.Git.Path, ob.Git.Line)
		}
		if m = ix.At(ob.Group, ob.Kind, ob.Namespace, ob.Name, ob.Git.Path, ob.Git.Line); m == nil {
			return nil, fmt.Errorf("manifest %s:%d is no longer in the repo index", ob.Git.Path, ob.Git.Line)
		}
	}
	if m == nil {
		return export.Clean(live, export.Options{InstanceLabelKey: instanceLabel})
	}
	u, err := jsonCopy(m.Object)
	if err != nil {
		return nil, fmt.Errorf("manifest %s:%d: %w", m.Path, m.Line, err)
	}
	if u.GetNamespace() == "" && ob.Namespace != "" {
		u.SetNamespace(ob.Namespace)
	}
	return u, nil
}

// jsonCopy copies a decoded YAML document into an Unstructured with JSON
// types (YAML gives int where the API machinery expects int64).
func jsonCopy(m map[string]any) (*unstructured.Unstructured, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	return u, u.UnmarshalJSON(b)
}
