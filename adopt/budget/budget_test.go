package budget

import (
	"strings"
	"testing"
)

func TestMeasureBudget(t *testing.T) {
	cases := []struct {
		name        string
		annotations map[string]string
		bytes       int
		percent     float64
		headroom    int
		level       Level
		lastApplied bool
	}{
		{"none", nil, 0, 0, AnnotationCap, LevelOK, false},
		{"utf8 counts bytes", map[string]string{"k": "é"}, 3, 0, AnnotationCap - 3, LevelOK, false},
		{"exactly the cap", map[string]string{"k": strings.Repeat("x", AnnotationCap-1)}, AnnotationCap, 100, 0, LevelCritical, false},
		{"one byte short of the cap is not 100%", map[string]string{"k": strings.Repeat("x", AnnotationCap-2)}, AnnotationCap - 1, 99.9, 1, LevelCritical, false},
		{"75% is a warning", map[string]string{"k": strings.Repeat("x", AnnotationCap*3/4-1)}, AnnotationCap * 3 / 4, 75, AnnotationCap / 4, LevelWarning, false},
		{"just under 75%", map[string]string{"k": strings.Repeat("x", AnnotationCap*3/4-2)}, AnnotationCap*3/4 - 1, 74.9, AnnotationCap/4 + 1, LevelOK, false},
		{"last-applied", map[string]string{LastAppliedKey: "{}"}, len(LastAppliedKey) + 2, 0, AnnotationCap - len(LastAppliedKey) - 2, LevelOK, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := MeasureBudget(tc.annotations)
			if b.AnnotationBytes != tc.bytes || b.PercentOfCap != tc.percent || b.Headroom != tc.headroom || b.Level() != tc.level || b.HasLastApplied != tc.lastApplied {
				t.Fatalf("got %+v level %s; want %d B %.1f%% headroom %d level %s", b, b.Level(), tc.bytes, tc.percent, tc.headroom, tc.level)
			}
		})
	}
}
