package judge

import (
	"testing"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/argoapp"
)

// TestUserRule: the one user-object rule that plan, status coverage and
// the fleet share: built-in type skips, adopt.yaml exclusions of a type and
// of one object, system objects, and tracking.
func TestUserRule(t *testing.T) {
	cfg := config.Default()
	cfg.Exclusions = []config.Rule{{Kinds: []string{"Role"}}, {Kinds: []string{"ConfigMap"}, Names: []string{"skip-*"}}}
	types := UserTypes(cfg)
	for _, tc := range []struct {
		t    discover.Type
		want string
	}{
		{discover.Type{Version: "v1", Kind: "Event"}, "events are records, not desired state"},
		{discover.Type{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"}, "excluded by adopt.yaml exclusions[0]"},
		{discover.Type{Version: "v1", Kind: "ConfigMap"}, ""}, // excluded by name only: listed, judged per object
	} {
		if got := types(tc.t); got != tc.want {
			t.Errorf("UserTypes %s: %q, want %q", tc.t.Kind, got, tc.want)
		}
	}
	if got := UserTypes(nil)(discover.Type{Version: "v1", Kind: "Node"}); got == "" {
		t.Error("a nil config must still skip nodes")
	}

	tracked := handApplied(10, map[string]string{"argocd.argoproj.io/tracking-id": "app:/ConfigMap:litellm-test/usage-hook"})
	excluded := handApplied(10, nil)
	excluded.Name = "skip-me"
	system := handApplied(10, nil)
	system.Namespace = "kube-system"
	for _, tc := range []struct {
		name      string
		o         *discover.Object
		skip      bool
		class     string
		trackedBy string
	}{
		{"user", handApplied(10, nil), false, "", ""},
		{"tracked", tracked, false, "", "app"},
		{"excluded by name", excluded, true, SkipExcluded, ""},
		{"system namespace", system, true, "", ""},
	} {
		tr := annotationTracking
		tr.Namespace = "argocd"
		v := UserObject(tc.o, cfg, tr, argoapp.NewApplications([]string{"argocd/app"}))
		if (v.Skip != "") != tc.skip || tc.class != "" && v.SkipClass != tc.class || v.TrackedBy != tc.trackedBy {
			t.Errorf("%s: verdict %+v", tc.name, v)
		}
	}
}
