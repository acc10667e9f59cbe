package finalize

import (
	"bytes"
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
	"sigs.k8s.io/structured-merge-diff/v4/fieldpath"

	"github.com/adopt-dev/adopt/adopt/budget"
)

// Field managers that finalize knows by name.
const (
	// ArgoCDManager is the field manager Argo CD's server-side apply uses.
	ArgoCDManager = "argocd-controller"
	// CSAManager is the manager of `kubectl apply` (client-side).
	CSAManager = "kubectl-client-side-apply"
	// DefaultFieldManager is the manager finalize's own patches are made as.
	DefaultFieldManager = "adopt"
)

// HandManagers are the managers that hand-applied objects carry: the
// runbook's `kubectl apply --server-side`, the annotation it keeps alive,
// and the imperative kubectl verbs. Their ownership of fields that the Argo
// CD manager also owns is dropped. Managers of other controllers are never
// touched.
var handManagers = []string{
	"kubectl", "kubectl-last-applied", "kubectl-edit", "kubectl-annotate",
	"kubectl-label", "kubectl-create", "kubectl-replace", "kubectl-patch", "before-first-apply",
}

// HandManagers returns the names of the hand-apply managers, sorted.
func HandManagers() []string {
	s := append([]string(nil), handManagers...)
	sort.Strings(s)
	return s
}

// lastAppliedPath is the annotation's path in a managedFields set.
var lastAppliedPath = fieldpath.MakePathOrDie("metadata", "annotations", budget.LastAppliedKey)

// Ownership is what the field-owner verbs changed.
type Ownership struct {
	// Migrated are client-side-apply managers merged into the owner.
	Migrated []string `json:"migrated,omitempty" yaml:"migrated,omitempty"`
	// Removed are managers left with no field at all.
	Removed []string `json:"removed,omitempty" yaml:"removed,omitempty"`
	// Trimmed are managers that lost the fields the owner also owns but
	// keep others, e.g. "kubectl-create (Update): 2 fields dropped".
	Trimmed []string `json:"trimmed,omitempty" yaml:"trimmed,omitempty"`
}

// Empty reports whether nothing changed.
func (o Ownership) Empty() bool {
	return len(o.Migrated) == 0 && len(o.Removed) == 0 && len(o.Trimmed) == 0
}

// MigrateCSA merges the client-side-apply manager's fields into owner's
// Apply entry (csaupgrade.UpgradeManagedFields), the migration kubectl and
// Argo CD v2 perform and Argo CD v3 may skip (ClientSideApplyMigration=false).
func MigrateCSA(entries []metav1.ManagedFieldsEntry, owner string) ([]metav1.ManagedFieldsEntry, []string, error) {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetManagedFields(entries)
	if err := csaupgrade.UpgradeManagedFields(u, sets.New(CSAManager), owner); err != nil {
		return nil, nil, fmt.Errorf("migrate %s into %s: %w", CSAManager, owner, err)
	}
	out := u.GetManagedFields()
	var migrated []string
	if hasEntry(entries, CSAManager, metav1.ManagedFieldsOperationUpdate) && !hasEntry(out, CSAManager, metav1.ManagedFieldsOperationUpdate) {
		migrated = []string{CSAManager + " (Update) into " + owner}
	}
	return out, migrated, nil
}

// DropShared removes, from each entry of a manager in managers, the fields
// that owner's Apply entry also owns. An entry left empty is removed.
// Entries of subresources and of other managers are kept as they are.
func DropShared(entries []metav1.ManagedFieldsEntry, owner string, managers []string) ([]metav1.ManagedFieldsEntry, Ownership, error) {
	var own Ownership
	ownerSet, err := ownerFields(entries, owner)
	if err != nil {
		return nil, own, err
	}
	hand := sets.New(managers...)
	var out []metav1.ManagedFieldsEntry
	for _, e := range entries {
		if !hand.Has(e.Manager) || e.Subresource != "" {
			out = append(out, e)
			continue
		}
		s, err := decode(e)
		if err != nil {
			return nil, own, err
		}
		left := s.Difference(ownerSet)
		switch {
		case left.Empty():
			own.Removed = append(own.Removed, label(e))
		case left.Size() < s.Size():
			if err := encode(&e, left); err != nil {
				return nil, own, err
			}
			own.Trimmed = append(own.Trimmed, fmt.Sprintf("%s: %d of %d fields dropped", label(e), s.Size()-left.Size(), s.Size()))
			out = append(out, e)
		default:
			out = append(out, e)
		}
	}
	return out, own, nil
}

// DropLastApplied removes the last-applied annotation from every entry's
// fields, as the API server does when the annotation is removed. An entry
// left empty is removed and returned in removed.
func DropLastApplied(entries []metav1.ManagedFieldsEntry) (out []metav1.ManagedFieldsEntry, removed []string, err error) {
	one := fieldpath.NewSet(lastAppliedPath)
	for _, e := range entries {
		s, err := decode(e)
		if err != nil {
			return nil, nil, err
		}
		if !s.Has(lastAppliedPath) {
			out = append(out, e)
			continue
		}
		left := s.Difference(one)
		// The annotations map itself ("."), owned only by this entry, goes too
		// when nothing else of it is left.
		if left.WithPrefix(fieldpath.PathElement{FieldName: strPtr("metadata")}).WithPrefix(fieldpath.PathElement{FieldName: strPtr("annotations")}).Empty() {
			left = left.Difference(fieldpath.NewSet(fieldpath.MakePathOrDie("metadata", "annotations")))
		}
		if left.Empty() {
			removed = append(removed, label(e))
			continue
		}
		if err := encode(&e, left); err != nil {
			return nil, nil, err
		}
		out = append(out, e)
	}
	return out, removed, nil
}

// OwnsLastApplied reports whether manager's Apply entry owns the annotation,
// i.e. the manifest it applies carries it.
func OwnsLastApplied(entries []metav1.ManagedFieldsEntry, manager string) bool {
	s, err := ownerFields(entries, manager)
	return err == nil && s.Has(lastAppliedPath)
}

// HasApplyEntry reports whether manager has an Apply entry on the main
// resource.
func HasApplyEntry(entries []metav1.ManagedFieldsEntry, manager string) bool {
	return hasEntry(entries, manager, metav1.ManagedFieldsOperationApply)
}

func hasEntry(entries []metav1.ManagedFieldsEntry, manager string, op metav1.ManagedFieldsOperationType) bool {
	for _, e := range entries {
		if e.Manager == manager && e.Operation == op && e.Subresource == "" {
			return true
		}
	}
	return false
}

// ownerFields is the union of owner's Apply entries on the main resource.
func ownerFields(entries []metav1.ManagedFieldsEntry, owner string) (*fieldpath.Set, error) {
	all := &fieldpath.Set{}
	for _, e := range entries {
		if e.Manager != owner || e.Operation != metav1.ManagedFieldsOperationApply || e.Subresource != "" {
			continue
		}
		s, err := decode(e)
		if err != nil {
			return nil, err
		}
		all = all.Union(s)
	}
	return all, nil
}

func decode(e metav1.ManagedFieldsEntry) (*fieldpath.Set, error) {
	s := &fieldpath.Set{}
	if e.FieldsV1 == nil {
		return s, nil
	}
	if err := s.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
		return nil, fmt.Errorf("read the fields of manager %s: %w", label(e), err)
	}
	return s, nil
}

func encode(e *metav1.ManagedFieldsEntry, s *fieldpath.Set) error {
	b, err := s.ToJSON()
	if err != nil {
		return fmt.Errorf("write the fields of manager %s: %w", label(*e), err)
	}
	e.FieldsV1 = &metav1.FieldsV1{Raw: b}
	return nil
}

func label(e metav1.ManagedFieldsEntry) string {
	s := e.Manager + " (" + string(e.Operation)
	if e.Subresource != "" {
		s += ", " + e.Subresource
	}
	return s + ")"
}

func strPtr(s string) *string { return &s }
