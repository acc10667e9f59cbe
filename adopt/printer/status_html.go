package printer

import (
	"fmt"
	htmltemplate "html/template"
	"io"
	"strings"
	"time"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/status"
)

// StatusHTML writes the report as one self-contained HTML page with t
// (templates.StatusReport): the headline, the burndown and coverage charts
// drawn from r.History as inline SVG, the annotation-budget bars, the stuck
// objects with their next command, and the Applications with their pull
// requests. Nothing in it loads anything: no script, font, image or style
// sheet from anywhere, and a Content-Security-Policy that says so.
func StatusHTML(w io.Writer, r *status.Report, t *htmltemplate.Template) error {
	return t.Execute(w, statusView(r))
}

// StatusHTMLFuncs are the helpers the report template uses beside the
// common ones.
func StatusHTMLFuncs() htmltemplate.FuncMap {
	return htmltemplate.FuncMap{
		"bytes":   Bytes,
		"percent": func(f float64) string { return fmt.Sprintf("%.1f", f) },
		"when":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
		// plus and minus take the operand first, for pipelines: {{.X | minus 4}}.
		"plus":  func(d, x float64) float64 { return x + d },
		"minus": func(d, x float64) float64 { return x - d },
	}
}

// view is what status.html.tmpl sees.
type view struct {
	R        *status.Report
	Stages   []stageView
	Stuck    []status.Object
	Burndown chart
	Coverage chart
	Budget   budgetChart
	History  []historyRow
	Cap      int
	// Fleet is set for a fleet plan's report: tables get a cluster column
	// and each cluster its own burndown.
	Fleet    bool
	Clusters []clusterView
}

// clusterView is one fleet cluster's burndown, drawn from the snapshots
// that recorded it (this run's among them).
type clusterView struct {
	Cluster  string
	Counts   status.ClusterCounts
	Burndown chart
}

type stageView struct {
	Stage      status.Stage
	Key, Title string
	Num, Count int
}

type historyRow struct {
	Time     time.Time
	Counts   []int
	Coverage string
}

// chart is a line chart laid out for SVG, in user units.
type chart struct {
	// ID makes the chart's element ids unique; Kind is its data-chart.
	ID, Kind                       string
	W, H, Left, Top, Right, Bottom float64
	// AxisY is the x axis' height, PlotRight the plot's right edge.
	AxisY, PlotRight float64
	Series           []series
	XTicks, YTicks   []tick
	Points           int
}

type series struct {
	Key, Label string
	Num        int
	Dash       string
	Path       string
	Marks      []point
	EndX, EndY float64
	// Last is the value at the last point.
	Last string
}

type point struct {
	X, Y  float64
	Value string
}

type tick struct {
	X, Y float64
	Text string
	// Anchor is the SVG text-anchor ("middle" when empty).
	Anchor string
}

type budgetChart struct {
	W, H, Left, BarW float64
	Warn, Crit       float64
	Bars             []bar
}

type bar struct {
	Y, W        float64
	Ref, Label  string
	Level       string
	Bytes       int
	Percent     string
	Stage       string
	HasApplied  bool
	AppliedText string
}

// dashes tell the stage lines apart without colour.
var dashes = []string{"", "8 4", "2 3", "10 3 2 3", "6 2 2 2 2 2", "1 6", "12 6"}

func statusView(r *status.Report) view {
	v := view{R: r, Stuck: r.StuckObjects(), Cap: budget.AnnotationCap}
	for i, s := range status.Stages {
		v.Stages = append(v.Stages, stageView{Stage: s, Key: string(s), Title: s.Title(), Num: i + 1, Count: r.Counts.Of(s)})
	}
	hist := r.History
	if len(hist) == 0 {
		hist = []status.Snapshot{r.Snapshot()}
	}
	for _, s := range hist {
		row := historyRow{Time: s.Time, Coverage: "not counted"}
		for _, st := range status.Stages {
			row.Counts = append(row.Counts, s.Counts.Of(st))
		}
		if s.Coverage != nil {
			row.Coverage = fmt.Sprintf("%.1f%%", s.Coverage.Percent)
		}
		v.History = append(v.History, row)
	}
	v.Burndown = burndown(hist)
	v.Burndown.ID, v.Burndown.Kind = "burndown", "burndown"
	v.Coverage = coverageChart(hist)
	v.Fleet = len(r.Clusters) > 0
	for _, c := range r.Clusters {
		var own []status.Snapshot
		for _, s := range hist {
			if n, ok := s.Clusters[c.Cluster]; ok {
				own = append(own, status.Snapshot{Time: s.Time, Counts: n})
			}
		}
		b := burndown(own)
		b.ID, b.Kind = fmt.Sprintf("burndown-%d", len(v.Clusters)+1), "cluster-burndown"
		v.Clusters = append(v.Clusters, clusterView{Cluster: c.Cluster, Counts: c, Burndown: b})
	}
	v.Budget = budgetBars(r.Nearest(10))
	return v
}

func newChart(hist []status.Snapshot) (chart, func(int) float64) {
	c := chart{W: 720, H: 260, Left: 48, Top: 16, Right: 170, Bottom: 40, Points: len(hist)}
	plotW := c.W - c.Left - c.Right
	c.AxisY, c.PlotRight = c.H-c.Bottom, c.W-c.Right
	first, last := hist[0].Time, hist[len(hist)-1].Time
	span := last.Sub(first)
	x := func(i int) float64 {
		switch {
		case len(hist) == 1:
			return c.Left + plotW/2
		case span <= 0:
			return c.Left + plotW*float64(i)/float64(len(hist)-1)
		}
		return c.Left + plotW*float64(hist[i].Time.Sub(first))/float64(span)
	}
	idx := []int{0}
	if len(hist) > 1 {
		idx = append(idx, len(hist)-1)
	}
	for n, i := range idx {
		t := tick{X: x(i), Y: c.H - c.Bottom + 16, Text: hist[i].Time.UTC().Format("2006-01-02 15:04"), Anchor: "middle"}
		if len(idx) > 1 {
			t.Anchor = []string{"start", "end"}[n]
		}
		c.XTicks = append(c.XTicks, t)
	}
	return c, x
}

func (c *chart) y(v, max float64) float64 {
	plotH := c.H - c.Top - c.Bottom
	if max <= 0 {
		return c.H - c.Bottom
	}
	return c.H - c.Bottom - plotH*v/max
}

func burndown(hist []status.Snapshot) chart {
	c, x := newChart(hist)
	max := 1
	for _, s := range hist {
		for _, st := range status.Stages {
			if n := s.Counts.Of(st); n > max {
				max = n
			}
		}
	}
	for _, f := range []float64{0, 0.5, 1} {
		val := float64(max) * f
		c.YTicks = append(c.YTicks, tick{X: c.Left - 6, Y: c.y(val, float64(max)), Text: fmt.Sprintf("%.0f", val)})
	}
	for si, st := range status.Stages {
		s := series{Key: string(st), Label: st.Title(), Num: si + 1, Dash: dashes[si%len(dashes)]}
		var path []string
		for i, h := range hist {
			n := h.Counts.Of(st)
			p := point{X: x(i), Y: c.y(float64(n), float64(max)), Value: fmt.Sprint(n)}
			s.Marks = append(s.Marks, p)
			path = append(path, fmt.Sprintf("%.1f,%.1f", p.X, p.Y))
		}
		s.Path = strings.Join(path, " ")
		lastMark := s.Marks[len(s.Marks)-1]
		s.EndX, s.EndY, s.Last = c.W-c.Right+8, lastMark.Y, lastMark.Value
		c.Series = append(c.Series, s)
	}
	spreadLabels(c.Series)
	return c
}

// spreadLabels moves the end labels apart so equal counts stay readable.
func spreadLabels(ss []series) {
	for i := 1; i < len(ss); i++ {
		for j := 0; j < i; j++ {
			if d := ss[i].EndY - ss[j].EndY; d < 12 && d > -12 {
				ss[i].EndY = ss[j].EndY + 12
			}
		}
	}
}

func coverageChart(hist []status.Snapshot) chart {
	c, x := newChart(hist)
	for _, f := range []float64{0, 50, 100} {
		c.YTicks = append(c.YTicks, tick{X: c.Left - 6, Y: c.y(f, 100), Text: fmt.Sprintf("%.0f%%", f)})
	}
	s := series{Key: "coverage", Label: "coverage", Num: 1}
	var path []string
	for i, h := range hist {
		if h.Coverage == nil {
			continue
		}
		p := point{X: x(i), Y: c.y(h.Coverage.Percent, 100), Value: fmt.Sprintf("%.1f%%", h.Coverage.Percent)}
		s.Marks = append(s.Marks, p)
		path = append(path, fmt.Sprintf("%.1f,%.1f", p.X, p.Y))
	}
	if len(s.Marks) > 0 {
		s.Path = strings.Join(path, " ")
		s.EndX, s.EndY = c.W-c.Right+8, s.Marks[len(s.Marks)-1].Y
		c.Series = append(c.Series, s)
	}
	return c
}

func budgetBars(objs []status.Object) budgetChart {
	b := budgetChart{W: 720, Left: 8, BarW: 440}
	b.Warn, b.Crit = b.Left+b.BarW*0.75, b.Left+b.BarW*0.9
	for i, o := range objs {
		frac := float64(o.Budget.AnnotationBytes) / float64(budget.AnnotationCap)
		if frac > 1 {
			frac = 1
		}
		bb := bar{Y: float64(28 + i*44), W: b.BarW * frac, Ref: o.Ref, Level: string(o.Level), Bytes: o.Budget.AnnotationBytes,
			Percent: fmt.Sprintf("%.1f", o.Budget.PercentOfCap), Stage: o.Stage.Title(), HasApplied: o.Budget.HasLastApplied}
		bb.Label = fmt.Sprintf("%s B, %s%% of cap, %s", Bytes(bb.Bytes), bb.Percent, bb.Level)
		if bb.HasApplied {
			bb.AppliedText = fmt.Sprintf("last-applied %s B", Bytes(o.Budget.LastAppliedBytes))
		}
		b.Bars = append(b.Bars, bb)
	}
	b.H = float64(28 + len(objs)*44 + 8)
	return b
}
