// Package budget measures an object's annotations the way the API server
// counts them (ValidateAnnotationsSize) and rates how close they are to the
// cap. It is pure arithmetic: it never talks to the cluster.
package budget

// AnnotationCap is the API server's limit on the total size of an object's
// annotations (apimachinery's TotalAnnotationSizeLimitB). A total of exactly
// AnnotationCap bytes is allowed.
const AnnotationCap = 256 * 1024

// LastAppliedKey is the annotation client-side `kubectl apply` writes.
const LastAppliedKey = "kubectl.kubernetes.io/last-applied-configuration"

// AnnotationBytes counts annotations the way the API server's
// ValidateAnnotationsSize does: the sum of len(key)+len(value) in bytes, not
// characters and not the escaped JSON.
func AnnotationBytes(annotations map[string]string) int {
	n := 0
	for k, v := range annotations {
		n += len(k) + len(v)
	}
	return n
}

// Budget is an object's annotation budget.
type Budget struct {
	AnnotationBytes  int     `json:"annotationBytes" yaml:"annotationBytes"`
	LastAppliedBytes int     `json:"lastAppliedBytes" yaml:"lastAppliedBytes"`
	PercentOfCap     float64 `json:"percentOfCap" yaml:"percentOfCap"`
	Headroom         int     `json:"headroom" yaml:"headroom"`
	HasLastApplied   bool    `json:"hasLastApplied" yaml:"hasLastApplied"`
}

// MeasureBudget measures annotations against AnnotationCap. PercentOfCap is
// rounded down to one decimal, so 99.99% never shows as 100.0%: only a full
// budget does.
func MeasureBudget(annotations map[string]string) Budget {
	v, ok := annotations[LastAppliedKey]
	return FromBytes(AnnotationBytes(annotations), len(LastAppliedKey)+len(v), ok)
}

// FromBytes is MeasureBudget of annotations whose keys and values add up
// to total bytes, lastApplied of them the last-applied annotation's when
// hasLastApplied.
func FromBytes(total, lastApplied int, hasLastApplied bool) Budget {
	b := Budget{AnnotationBytes: total, Headroom: AnnotationCap - total, PercentOfCap: float64(total*1000/AnnotationCap) / 10}
	if hasLastApplied {
		b.HasLastApplied, b.LastAppliedBytes = true, lastApplied
	}
	return b
}

// Level is how close an object is to the cap.
type Level string

// Budget levels.
const (
	LevelOK       Level = "ok"
	LevelWarning  Level = "warning"
	LevelCritical Level = "critical"
)

// Level is warning from 75% of the cap and critical from 90%.
func (b Budget) Level() Level {
	switch {
	case b.AnnotationBytes*10 >= AnnotationCap*9:
		return LevelCritical
	case b.AnnotationBytes*4 >= AnnotationCap*3:
		return LevelWarning
	}
	return LevelOK
}
