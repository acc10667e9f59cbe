package preview

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/structured-merge-diff/v4/fieldpath"
)

// isHand reports whether a field manager is a person's kubectl (apply,
// client-side apply, last-applied, edit, create, patch, annotate, …) or the
// pre-managedFields placeholder.
func isHand(manager string) bool {
	return manager == "kubectl" || strings.HasPrefix(manager, "kubectl-") || manager == "before-first-apply"
}

// owner is one managedFields entry with its parsed field set.
type owner struct {
	entry metav1.ManagedFieldsEntry
	set   *fieldpath.Set
}

func (o owner) String() string {
	s := o.entry.Manager + " (" + string(o.entry.Operation)
	if o.entry.Subresource != "" {
		s += ", " + o.entry.Subresource
	}
	return s + ")"
}

func (o owner) key() string {
	return o.entry.Manager + "\x00" + string(o.entry.Operation) + "\x00" + o.entry.Subresource
}

// owners parses u's managedFields.
func owners(u *unstructured.Unstructured) ([]owner, error) {
	var out []owner
	for _, e := range u.GetManagedFields() {
		s, err := fieldSet(e)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ref(u).String(), err)
		}
		out = append(out, owner{entry: e, set: s})
	}
	return out, nil
}

// fieldSet parses the fields of a managedFields entry.
func fieldSet(e metav1.ManagedFieldsEntry) (*fieldpath.Set, error) {
	s := &fieldpath.Set{}
	if e.FieldsV1 != nil {
		if err := s.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
			return nil, fmt.Errorf("managedFields of %s: %w", e.Manager, err)
		}
	}
	return s, nil
}

// pendingDeletions names the fields hand-apply managers still own after the
// sync and the manifest lacks. Fields whose live value is what the server
// would default anyway (found by a dry-run create of the manifest) and
// addresses the server allocated are left out: removing them changes
// nothing.
func (p *Previewer) pendingDeletions(ctx context.Context, r *Result, client dynamic.ResourceInterface, manifest, live, synced *unstructured.Unstructured, secret bool) error {
	os, err := owners(synced)
	if err != nil {
		return err
	}
	hand, argo := &fieldpath.Set{}, &fieldpath.Set{}
	for _, o := range os {
		switch {
		case o.entry.Subresource != "":
		case isHand(o.entry.Manager):
			hand = hand.Union(o.set)
		case o.entry.Manager == FieldManager:
			argo = argo.Union(o.set)
		}
	}
	var candidates []fieldpath.Path
	hand.Difference(argo).Leaves().Iterate(func(fp fieldpath.Path) {
		// A map or list that is only marked as present ("." in
		// managedFields) is not a deletion by itself: its fields are.
		if v, ok := lookup(live.Object, fp); ok && !allocated(live, fp) && !container(v) {
			candidates = append(candidates, fp.Copy())
		}
	})
	if len(candidates) == 0 {
		return nil
	}
	defaulted := dryRunCreate(ctx, client, manifest, r)
	for _, fp := range candidates {
		v, _ := lookup(live.Object, fp)
		if defaulted != nil {
			if dv, ok := lookup(defaulted.Object, fp); ok && render(dv) == render(v) {
				continue
			}
		}
		f := Field{Path: pathString(fp), Bytes: size(pathString(fp), render(v), secret)}
		for _, o := range os {
			if o.entry.Subresource == "" && isHand(o.entry.Manager) && o.set.Has(fp) {
				f.Managers = append(f.Managers, o.String())
			}
		}
		sort.Strings(f.Managers)
		r.PendingDeletions = append(r.PendingDeletions, f)
	}
	sort.SliceStable(r.PendingDeletions, func(i, j int) bool { return r.PendingDeletions[i].Path < r.PendingDeletions[j].Path })
	return nil
}

// dryRunCreate asks the server to create the manifest under a generated
// name, writing nothing, to learn its defaults. It returns nil, with a note
// on r, when the server refuses.
func dryRunCreate(ctx context.Context, client dynamic.ResourceInterface, manifest *unstructured.Unstructured, r *Result) *unstructured.Unstructured {
	c := manifest.DeepCopy()
	prefix := c.GetName()
	if len(prefix) > 40 {
		prefix = prefix[:40]
	}
	c.SetName("")
	c.SetGenerateName(prefix + "-")
	c.SetResourceVersion("")
	out, err := client.Create(ctx, c, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: FieldManager})
	if err != nil {
		r.Notes = append(r.Notes, "pending deletions may include server defaults: the dry-run create that finds them failed: "+strings.ReplaceAll(err.Error(), "\n", " "))
		return nil
	}
	return out
}

// container reports whether v is a non-empty map or list.
func container(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		return len(x) > 0
	case []any:
		return len(x) > 0
	}
	return false
}

// allocated reports whether fp is an address the server allocated and keeps
// when a manifest omits it (a Service's cluster IPs and node ports).
func allocated(live *unstructured.Unstructured, fp fieldpath.Path) bool {
	if live.GetKind() != "Service" || live.GroupVersionKind().Group != "" {
		return false
	}
	s := pathString(fp)
	return s == "spec.clusterIP" || strings.HasPrefix(s, "spec.clusterIPs") || s == "spec.healthCheckNodePort" ||
		strings.HasPrefix(s, "spec.ports[") && strings.HasSuffix(s, "].nodePort")
}

// lookup finds the value at fp in an unstructured object.
func lookup(obj any, fp fieldpath.Path) (any, bool) {
	cur := obj
	for _, pe := range fp {
		switch {
		case pe.FieldName != nil:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[*pe.FieldName]; !ok {
				return nil, false
			}
		case pe.Key != nil, pe.Value != nil:
			l, ok := cur.([]any)
			if !ok {
				return nil, false
			}
			found := false
			for _, it := range l {
				if matches(it, pe) {
					cur, found = it, true
					break
				}
			}
			if !found {
				return nil, false
			}
		case pe.Index != nil:
			l, ok := cur.([]any)
			if !ok || *pe.Index >= len(l) {
				return nil, false
			}
			cur = l[*pe.Index]
		default:
			return nil, false
		}
	}
	return cur, true
}

func matches(item any, pe fieldpath.PathElement) bool {
	if pe.Value != nil {
		return fmt.Sprint(item) == fmt.Sprint((*pe.Value).Unstructured())
	}
	m, ok := item.(map[string]any)
	if !ok {
		return false
	}
	for _, k := range *pe.Key {
		if fmt.Sprint(m[k.Name]) != fmt.Sprint(k.Value.Unstructured()) {
			return false
		}
	}
	return true
}

// pathString renders fp the way diff names paths:
// spec.template.spec.containers[name=main].env[name=A].value.
func pathString(fp fieldpath.Path) string {
	var b strings.Builder
	for _, pe := range fp {
		switch {
		case pe.FieldName != nil:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(*pe.FieldName)
		case pe.Key != nil:
			var kv []string
			for _, k := range *pe.Key {
				kv = append(kv, fmt.Sprintf("%s=%v", k.Name, k.Value.Unstructured()))
			}
			b.WriteString("[" + strings.Join(kv, ",") + "]")
		case pe.Value != nil:
			fmt.Fprintf(&b, "[=%v]", (*pe.Value).Unstructured())
		case pe.Index != nil:
			fmt.Fprintf(&b, "[%d]", *pe.Index)
		}
	}
	return b.String()
}

// ignoreDifferences finds the spec.ignoreDifferences entries the object
// needs: fields a manager that is neither a person's kubectl nor Argo CD
// owns and the forced sync would take from it (the controller would set
// them back, and the Application would flap or fight), and the fields a
// known controller writes (KnownControllers). A field a person changed
// (handEdit owns it) is never ignored: a note says so, and it shows as
// drift.
func (p *Previewer) ignoreDifferences(ctx context.Context, r *Result, in Input, live, synced *unstructured.Unstructured) error {
	base := IgnoreDifference{Group: live.GroupVersionKind().Group, Kind: live.GetKind(), Name: live.GetName(), Namespace: live.GetNamespace()}
	before, err := owners(live)
	if err != nil {
		return err
	}
	after, err := owners(synced)
	if err != nil {
		return err
	}
	kept := map[string]*fieldpath.Set{}
	for _, o := range after {
		kept[o.key()] = o.set
	}
	edited := &fieldpath.Set{} // fields a person changed
	for _, o := range before {
		if handEdit(o.entry) {
			edited = edited.Union(o.set)
		}
	}
	for _, o := range before {
		if isHand(o.entry.Manager) || o.entry.Manager == FieldManager || o.entry.Subresource == "status" {
			continue
		}
		lost := o.set
		if k := kept[o.key()]; k != nil {
			lost = o.set.Difference(k)
		}
		var paths []string
		lost.Leaves().Iterate(func(fp fieldpath.Path) {
			if edited.Has(fp) {
				r.Notes = append(r.Notes, fmt.Sprintf("%s is not ignored although %s set it: a person's kubectl changed it too, so a difference shows as drift", pathString(fp), o))
				return
			}
			paths = append(paths, pathString(fp))
		})
		if len(paths) == 0 {
			continue
		}
		s := base
		s.ManagedFieldsManagers = []string{o.entry.Manager}
		s.Manager, s.Fields, s.Source = o.entry.Manager, paths, SourceManagedFields
		s.Reason = fmt.Sprintf("%s owns %s and Git says otherwise; the forced sync takes the field(s) over and the controller will set them back",
			o, strings.Join(paths, ", "))
		r.IgnoreDifferences = append(r.IgnoreDifferences, s)
	}
	for _, kc := range KnownControllers() {
		found, err := kc.find(ctx, p, in, live, r)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", r.Ref, kc.Name, err)
		}
		for _, f := range found {
			s := base
			for i, path := range f.paths {
				if by := editor(before, path); by != "" {
					r.Notes = append(r.Notes, fmt.Sprintf("%s is not ignored although %s: %s changed it by hand, so a difference shows as drift", path, f.reason, by))
					continue
				}
				s.JSONPointers = append(s.JSONPointers, f.pointers[i])
				s.Fields = append(s.Fields, path)
			}
			if len(s.JSONPointers) == 0 {
				continue
			}
			s.Manager = kc.Manager
			if by := fieldOwner(before, s.Fields[0]); by != "" {
				s.Manager = by
			}
			s.Reason, s.Source = f.reason, kc.Name+" ("+kc.Source+")"
			r.IgnoreDifferences = append(r.IgnoreDifferences, s)
		}
	}
	sort.SliceStable(r.IgnoreDifferences, func(i, j int) bool { return r.IgnoreDifferences[i].Reason < r.IgnoreDifferences[j].Reason })
	return nil
}

// handEdit reports whether a managedFields entry is a person changing the
// object by hand after applying it: an Update by kubectl edit, patch,
// scale, label, set, … The applies that created it (client-side, or
// kubectl's server-side Apply) are what adopt replaces, not a change.
func handEdit(e metav1.ManagedFieldsEntry) bool {
	return isHand(e.Manager) && e.Operation == metav1.ManagedFieldsOperationUpdate &&
		e.Manager != "kubectl-client-side-apply" && e.Manager != "before-first-apply"
}

// editor is the handEdit manager that owns the field at path ("" when
// none does).
func editor(os []owner, path string) string {
	for _, o := range os {
		if handEdit(o.entry) && ownsPath(o, path) {
			return o.String()
		}
	}
	return ""
}

// fieldOwner is a manager other than a person's kubectl and Argo CD that
// owns the field at path ("" when none does).
func fieldOwner(os []owner, path string) string {
	for _, o := range os {
		if !isHand(o.entry.Manager) && o.entry.Manager != FieldManager && ownsPath(o, path) {
			return o.entry.Manager
		}
	}
	return ""
}

func ownsPath(o owner, path string) bool {
	found := false
	o.set.Leaves().Iterate(func(fp fieldpath.Path) {
		if !found && pathString(fp) == path {
			found = true
		}
	})
	return found
}

// OwnedFields are the fields a managedFields entry owns, as Change paths
// name them.
func OwnedFields(e metav1.ManagedFieldsEntry) ([]string, error) {
	s, err := fieldSet(e)
	if err != nil {
		return nil, err
	}
	var out []string
	s.Leaves().Iterate(func(fp fieldpath.Path) { out = append(out, pathString(fp)) })
	return out, nil
}
