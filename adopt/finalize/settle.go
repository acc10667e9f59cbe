package finalize

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/adopt-dev/adopt/adopt/preview"
	"github.com/adopt-dev/adopt/argoapp"
)

// DefaultSettle is Runner.Settle's default (finalize --settle): long
// enough for Argo CD to see a writer that sets a field back after the
// cleanup, short enough to wait for on every run.
const DefaultSettle = 10 * time.Second

// Settle is an Application's sync status over the settle window that
// follows its cleanup.
type Settle struct {
	// Window is how long finalize watched.
	Window string `json:"window" yaml:"window"`
	// Synced is true when the Application stayed Synced the whole window.
	Synced bool `json:"synced" yaml:"synced"`
	// Sync is the status it flipped to ("" when it stayed Synced).
	Sync string `json:"sync,omitempty" yaml:"sync,omitempty"`
	// Drift names, for each object Argo CD reports OutOfSync, the fields a
	// manager other than Argo CD wrote since the second before the window
	// opened.
	Drift []Drift `json:"drift,omitempty" yaml:"drift,omitempty"`
}

// Drift is one object that went OutOfSync, and who changed what.
type Drift struct {
	Object string `json:"object" yaml:"object"`
	// Manager is the field manager (and operation) that wrote Fields
	// during the window; "" when none did.
	Manager string   `json:"manager,omitempty" yaml:"manager,omitempty"`
	Fields  []string `json:"fields,omitempty" yaml:"fields,omitempty"`
	// Note says why the writer is not named.
	Note string `json:"note,omitempty" yaml:"note,omitempty"`
}

func (d Drift) String() string {
	if d.Manager == "" {
		return d.Object + ": " + d.Note
	}
	return fmt.Sprintf("%s: %s changed by %s", d.Object, strings.Join(d.Fields, ", "), d.Manager)
}

// SettleAll watches every ready Application of rep, all at once, for
// r.Settle and records on each whether it stayed Synced; where it did not,
// a problem names the object, the fields and the manager. It writes
// nothing; Session runs it after the cleanup, with the journal closed.
func (r *Runner) SettleAll(ctx context.Context, rep *Report) error {
	if r.Settle <= 0 || r.DryRun {
		return nil
	}
	errs := make([]error, len(rep.Apps))
	var wg sync.WaitGroup
	for i := range rep.Apps {
		ar := &rep.Apps[i]
		if !ar.Ready {
			continue
		}
		ref := ar.Name
		for _, a := range r.Selection.Apps {
			if a.Name == ar.Name {
				ref = a.ArgoRef()
			}
		}
		wg.Go(func() {
			ar.Settle, errs[i] = r.settle(ctx, ref, r.Selection.Targets[ar.Name])
			if s := ar.Settle; s != nil && !s.Synced {
				for _, d := range s.Drift {
					ar.Problems = append(ar.Problems, fmt.Sprintf("went %s within the %s settle window after cleanup: %s", s.Sync, s.Window, d))
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// settle watches Application name for r.Settle once its objects are
// cleaned up (a watch where the reader has one, else a read every
// PollInterval) and reports whether it stayed Synced. At the first read
// that is not Synced and that a writer explains it stops and names, for
// each OutOfSync object of targets, the fields another manager wrote since
// the window opened. An OutOfSync that no writer but Argo CD's explains
// (Argo CD recomputing its diff after the cleanup) is reported only if it
// lasts to the end of the window.
func (r *Runner) settle(ctx context.Context, name string, targets []Target) (*Settle, error) {
	s := &Settle{Window: r.Settle.String(), Synced: true}
	// managedFields times are whole seconds: a write in the second before
	// the window opened counts too.
	since := time.Now().Add(-time.Second).Truncate(time.Second)
	window, cancel := context.WithTimeout(ctx, r.Settle)
	defer cancel()
	seen := r.watchWriters(window, targets, since)
	var changes <-chan struct{}
	if w, ok := r.Reader.(argoapp.Watcher); ok {
		changes = w.Changes(window, name)
	}
	if r.Progress != nil { // the watches are open: a write from now on is seen
		r.Progress(name, argoapp.AppState{Name: name}, fmt.Sprintf("it must stay Synced over the %s settle window (watching its objects)", r.Settle))
	}
	interval := r.PollInterval
	if interval <= 0 {
		interval = time.Second
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	// An OutOfSync that no writer but Argo CD's (and adopt's own cleanup)
	// explains is Argo CD recomputing its diff after the cleanup: it is
	// reported only if it lasts to the end of the window.
	var unexplained *Settle
	for {
		st, err := r.Reader.Application(ctx, name)
		if err != nil {
			return s, err
		}
		unexplained = nil
		if st.Sync != argoapp.SyncSynced {
			out := &Settle{Window: s.Window, Sync: st.Sync, Drift: r.drift(ctx, st, targets, since, seen)}
			if slices.ContainsFunc(out.Drift, func(d Drift) bool { return d.Manager != "" }) {
				return out, nil
			}
			unexplained = out
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-window.Done():
			if unexplained != nil {
				return unexplained, nil
			}
			return s, nil
		case <-tick.C:
		case _, ok := <-changes:
			if !ok {
				changes = nil
			}
		}
	}
}

// drift names, for each object of targets that st reports OutOfSync, the
// managers other than Argo CD's that wrote it since, with their fields: as
// the watch saw them during the window (by the time Argo CD reports
// OutOfSync, self-heal may have taken the field back, and the writer's
// managedFields entry with it) and as the object is now.
func (r *Runner) drift(ctx context.Context, st argoapp.AppState, targets []Target, since time.Time, seen *writers) []Drift {
	var out []Drift
	for _, res := range st.Resources {
		if res.Status != "OutOfSync" {
			continue
		}
		for _, t := range targets {
			if t.Group != res.Group || t.Kind != res.Kind || t.Namespace != res.Namespace || t.Name != res.Name {
				continue
			}
			u, err := r.Finalizer.Client(t).Get(ctx, t.Name, metav1.GetOptions{})
			if err == nil {
				seen.saw(r, t, u, since)
			}
			found := seen.of(t)
			switch {
			case len(found) > 0:
				out = append(out, found...)
			case err != nil:
				out = append(out, Drift{Object: t.Ref.String(), Note: "OutOfSync; could not read it to name the writer: " + err.Error()})
			default:
				out = append(out, Drift{Object: t.Ref.String(), Note: "OutOfSync, and no field manager but Argo CD's wrote it during the window: see `argocd app diff`"})
			}
		}
	}
	if len(out) == 0 {
		out = append(out, Drift{Object: "Application " + st.Name, Note: "OutOfSync, but none of its adopted objects is reported OutOfSync (yet): see `argocd app diff " + st.Name + "`"})
	}
	return out
}

// writers are the managers other than Argo CD's seen writing each object
// during the settle window, by object.
type writers struct {
	mu sync.Mutex
	// base holds each object's managedFields entries when the window
	// opened: an entry without a time (the API server writes none for a
	// scale subresource update) that is not among them is new.
	base map[string]map[string]bool
	seen map[string][]Drift
}

// saw records the writers u shows: each manager other than Argo CD's whose
// entry is timed at or after since, or has no time and was not there when
// the window opened. The first object seen of t is that opening state.
func (w *writers) saw(r *Runner, t Target, u *unstructured.Unstructured, since time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := t.Ref.String()
	entries := u.GetManagedFields()
	key := func(e metav1.ManagedFieldsEntry) string {
		raw := ""
		if e.FieldsV1 != nil {
			raw = string(e.FieldsV1.Raw)
		}
		return e.Manager + "\x00" + string(e.Operation) + "\x00" + e.Subresource + "\x00" + raw
	}
	first := w.base[k] == nil
	if first {
		w.base[k] = map[string]bool{}
		for _, e := range entries {
			w.base[k][key(e)] = true
		}
	}
	for _, e := range entries {
		if e.Manager == r.Finalizer.owner() || e.Subresource == "status" {
			continue
		}
		if e.Time != nil && e.Time.Time.Before(since) || e.Time == nil && (first || w.base[k][key(e)]) {
			continue
		}
		fields, err := preview.OwnedFields(e)
		if err != nil {
			continue
		}
		who := e.Manager + " (" + string(e.Operation)
		if e.Subresource != "" {
			who += ", " + e.Subresource
		}
		d := Drift{Object: k, Manager: who + ")", Fields: fields}
		if i := slices.IndexFunc(w.seen[k], func(x Drift) bool { return x.Manager == d.Manager }); i >= 0 {
			w.seen[k][i] = d // its newest fields
		} else {
			w.seen[k] = append(w.seen[k], d)
		}
	}
}

func (w *writers) of(t Target) []Drift {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.seen[t.Ref.String()])
}

// watchWriters watches the targets until ctx ends, where their client can
// watch (a dynamic client can): one watch per resource and namespace (by
// name when it holds one target), recording the writers each event of a
// target shows. The watches are open when it returns.
func (r *Runner) watchWriters(ctx context.Context, targets []Target, since time.Time) *writers {
	w := &writers{base: map[string]map[string]bool{}, seen: map[string][]Drift{}}
	groups := map[string][]Target{}
	var order []string
	for _, t := range targets {
		k := t.GVR().String() + "\x00" + t.Namespace
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], t)
	}
	for _, k := range order {
		ts := groups[k]
		c, ok := r.Finalizer.Client(ts[0]).(interface {
			Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
		})
		if !ok {
			continue
		}
		opts := metav1.ListOptions{}
		if len(ts) == 1 {
			opts.FieldSelector = "metadata.name=" + ts[0].Name
		}
		wi, err := c.Watch(ctx, opts)
		if err != nil {
			continue // the read at the flip still names what is left
		}
		byName := map[string]Target{}
		for _, t := range ts {
			byName[t.Name] = t
		}
		go func() {
			defer wi.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-wi.ResultChan():
					if !ok {
						return
					}
					if u, ok := ev.Object.(*unstructured.Unstructured); ok {
						if t, ok := byName[u.GetName()]; ok {
							w.saw(r, t, u, since)
						}
					}
				}
			}
		}()
	}
	return w
}
