package judge

import (
	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/argoapp"
)

// UserTypes is the type half of the one rule for what counts as a user's
// object, for plan, status coverage and the fleet alike: why a whole type
// is not listed (SkipType, then an adopt.yaml exclusion of the whole type),
// or "". cfg nil means the defaults.
func UserTypes(cfg *config.Config) func(discover.Type) string {
	if cfg == nil {
		cfg = config.Default()
	}
	return func(t discover.Type) string {
		if why := SkipType(t); why != "" {
			return why
		}
		if rule := cfg.ExcludesType(t.Group, t.Kind); rule != "" {
			return "excluded by adopt.yaml " + rule
		}
		return ""
	}
}

// UserObject is the object half of the same rule: an adopt.yaml exclusion
// first (class SkipExcluded), then Classify. A Verdict with Skip "" is a
// user's object; its TrackedBy says whether an Application tracks it. cfg
// nil means the defaults.
func UserObject(o *discover.Object, cfg *config.Config, t argoapp.Tracking, apps argoapp.Applications) Verdict {
	if cfg == nil {
		cfg = config.Default()
	}
	if rule := cfg.Excluded(o.Type.Group, o.Type.Kind, o.Namespace, o.Name); rule != "" {
		return Verdict{Level: o.Budget.Level(), SkipClass: SkipExcluded, Skip: "excluded by adopt.yaml " + rule}
	}
	return Classify(o, t, apps)
}
