// Command bench measures adopt at scale on a local control plane (started
// through internal/testenv, loopback only) and prints, in one run, twelve rows
// with their baselines and ratios, also written to bench/results.json:
//
//  1. plan of 20,000 objects (20 namespaces, 10 types, every 100th
//     ConfigMap with a 200 KB annotation) against the `kubectl get TYPE -A
//     -o json` loop a user would run, and against a raw paginated client-go
//     list of exactly the types and fields adopt reads (the API server's
//     limit);
//  2. plan of 100,000 objects (-large-namespaces 100): time against the
//     20,000 plan (linear is 5x) and peak RSS;
//  3. plan of the 20,000 objects with every ConfigMap and Secret body 4x
//     larger: peak RSS against normal bodies;
//  4. finalize of 1,000 adopted ConfigMaps against a per-object `kubectl
//     annotate NAME last-applied-configuration-` loop and one `kubectl
//     annotate --all`;
//  5. apply of 500 Applications and 2,000 exported ConfigMaps, pushed over
//     smart HTTP, against `git add -A && git commit && git push` of the same
//     tree to the same server;
//  6. plan --contexts of 4 clusters (4 kube-apiservers) x 5,000 objects
//     against the slowest single-cluster plan of the same run (bench/fleet.go);
//  7. gitindex.Load of a 20,000-file directory with 500 kustomize overlays
//     against the kustomize CLI building each overlay, one after another
//     (bench/render.go);
//  8. apply into a repository of 20,000 files and 30,000 commits, 250 files
//     changed, against git clone + add + commit + push, with peak RSS at
//     3,000 and 30,000 commits; 9. plan --repo of it in each form against
//     git clone --depth 1 (bench/monorepo.go);
//  10. apply of 2,000 namespaces x 4 ConfigMaps (one Application a
//     namespace), on a control plane of its own, against the git CLI as in
//     row 5 (bench/spread.go);
//  11. status of a fleet plan of 10 clusters (10 kube-apiservers) x 500
//     objects against `kubectl get` of the same objects, one per cluster
//     (bench/fleetstatus.go);
//  12. reconcile with nothing new over 40 namespaces (one pull request
//     each: 20 done on a real Argo CD, 18 open, two declined) on a real
//     Gitea against `adopt plan` of the same scope, with every write
//     request to Gitea or the kube-apiserver counted through proxies
//     (bench/reconcile.go).
//
// Each adopt run, and each baseline that leaves the cluster as it found
// it, is measured -repeat times (3): a row quotes the median time and the
// highest peak RSS. Each apply run, adopt's and git's, pushes into a fresh
// repository holding only README.md.
//
// Objects are seeded through the API server with 32 writers at 1,000
// requests a second. The baselines run in the same invocation, on the same
// objects. -smoke runs every row at a small size, to check the bench works.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/adopt-dev/adopt/internal/atomicfile"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// Config is one bench run's sizes.
type Config struct {
	Adopt string // the adopt binary
	// Namespaces is the plan row's size (objects: Namespaces x PerType x 10);
	// LargeNamespaces the linear row's (0 skips it).
	Namespaces, LargeNamespaces, PerType, BigEvery int
	// Finalize is how many ConfigMaps each finalize measurement covers.
	Finalize int
	// Repeat is how many times each adopt run and each baseline that
	// leaves the cluster as it found it is measured: a row quotes the
	// median time and the highest peak RSS (0 or 1: once).
	Repeat int
	// PlanRepeat is Repeat for adopt plan and the raw list, which take a
	// second or two each and are the figures most moved by load.
	PlanRepeat int
	// Apps and ApplyObjects size the apply row.
	Apps, ApplyObjects int
	// FleetClusters and FleetNamespaces size the fleet row (0 clusters
	// skips it).
	FleetClusters, FleetNamespaces int
	// FleetStatusClusters and FleetStatusNamespaces size the fleet status
	// row (0 clusters skips it).
	FleetStatusClusters, FleetStatusNamespaces int
	// RenderApps and RenderFiles size the render row (0 apps skips it).
	RenderApps, RenderFiles int
	// MonoApps, MonoFiles and MonoCommits size the monorepo rows (0 apps
	// skips them).
	MonoApps, MonoFiles, MonoCommits int
	// ReconcileNamespaces and ReconcileObjects size the reconcile row:
	// namespaces (one pull request each), and ConfigMaps in each besides a
	// Deployment and a Service (0 namespaces skips it).
	ReconcileNamespaces, ReconcileObjects int
	// SpreadNamespaces and SpreadObjects size the spread row: namespaces,
	// and ConfigMaps in each (0 namespaces skips it).
	SpreadNamespaces, SpreadObjects int
	// Out is where results.json goes ("" for none).
	Out string
	// Only, when set, names the rows to run (plan, finalize, apply, fleet, render, monorepo, spread, fleetstatus, reconcile),
	// comma-separated, to measure one while working on it.
	Only string
	// HoldApply, with -hold -only apply, stops after the apply row's
	// first measurement and waits for a signal, printing what a profiling
	// loop needs (kubeconfig, plan, repository URL).
	HoldApply bool
	// Log receives progress lines.
	Log func(format string, a ...any)
}

func main() {
	c := Config{}
	flag.StringVar(&c.Adopt, "adopt", "bin/adopt", "the adopt binary to measure")
	flag.IntVar(&c.Namespaces, "namespaces", 20, "namespaces of the plan row (10 types x -per-type objects each)")
	flag.IntVar(&c.LargeNamespaces, "large-namespaces", 100, "namespaces of the linear row (0: skip it)")
	flag.IntVar(&c.PerType, "per-type", 100, "objects per type per namespace")
	flag.IntVar(&c.BigEvery, "big-every", 100, "every Nth ConfigMap carries a 200 KB annotation")
	flag.IntVar(&c.Finalize, "finalize", 1000, "ConfigMaps per finalize measurement")
	flag.IntVar(&c.Repeat, "repeat", 3, "measure each repeatable run this many times, quoting the median time and the highest peak RSS")
	flag.IntVar(&c.PlanRepeat, "plan-repeat", 5, "measure adopt plan and the raw list this many times each, in turn, after one round left out")
	flag.IntVar(&c.Apps, "apps", 500, "Applications of the apply row")
	flag.IntVar(&c.ApplyObjects, "apply-objects", 2000, "exported ConfigMaps of the apply row")
	flag.IntVar(&c.FleetClusters, "fleet-clusters", 4, "clusters of the fleet row (0: skip it)")
	flag.IntVar(&c.FleetNamespaces, "fleet-namespaces", 5, "namespaces per cluster of the fleet row (10 types x -per-type objects each)")
	flag.IntVar(&c.FleetStatusClusters, "fleetstatus-clusters", 10, "clusters of the fleet status row (0: skip it)")
	flag.IntVar(&c.FleetStatusNamespaces, "fleetstatus-namespaces", 5, "namespaces per cluster of the fleet status row (10 types x 10 objects each)")
	flag.IntVar(&c.RenderApps, "render-apps", 500, "apps (a base and an overlay each) of the render row (0: skip it)")
	flag.IntVar(&c.RenderFiles, "render-files", 20000, "files of the render row's repo")
	flag.IntVar(&c.MonoApps, "mono-apps", 50, "Applications (4 ConfigMaps each) of the monorepo rows (0: skip them)")
	flag.IntVar(&c.MonoFiles, "mono-files", 20000, "files of the monorepo rows' repository")
	flag.IntVar(&c.MonoCommits, "mono-commits", 30000, "commits of the monorepo rows' repository (and a tenth of them for the RSS comparison)")
	flag.IntVar(&c.SpreadNamespaces, "spread-namespaces", 2000, "namespaces of the spread row (0: skip it)")
	flag.IntVar(&c.SpreadObjects, "spread-objects", 4, "ConfigMaps in each namespace of the spread row")
	flag.IntVar(&c.ReconcileNamespaces, "reconcile-namespaces", 20, "namespaces of the reconcile row, one pull request each (0: skip it)")
	flag.IntVar(&c.ReconcileObjects, "reconcile-objects", 50, "ConfigMaps in each namespace of the reconcile row, besides a Deployment and a Service")
	flag.StringVar(&c.Out, "out", "bench/results.json", "results file")
	flag.StringVar(&c.Only, "only", "", "run only these rows: plan, finalize, apply, fleet, render, monorepo, spread, fleetstatus, reconcile (comma-separated)")
	smoke := flag.Bool("smoke", false, "every row at a small size (2,000 objects), to check the bench works")
	hold := flag.Bool("hold", false, "after seeding the plan row, print the kubeconfig and wait for a signal")
	rawlist := flag.String("rawlist", "", "internal: list like adopt does with this kubeconfig, and exit")
	render := flag.String("render", "", "internal: index and render this directory with gitindex.Load, and exit")
	flag.Parse()
	if *rawlist != "" {
		if err := rawList(*rawlist); err != nil {
			fmt.Fprintln(os.Stderr, "bench rawlist:", err)
			os.Exit(1)
		}
		return
	}
	if *render != "" {
		if err := renderDir(*render); err != nil {
			fmt.Fprintln(os.Stderr, "bench render:", err)
			os.Exit(1)
		}
		return
	}
	if *smoke {
		c.Namespaces, c.LargeNamespaces, c.Finalize, c.Apps, c.ApplyObjects = 2, 4, 50, 10, 40
		c.FleetNamespaces = 1
		c.FleetStatusClusters, c.FleetStatusNamespaces = 2, 1
		c.RenderApps, c.RenderFiles = 10, 400
		c.MonoApps, c.MonoFiles, c.MonoCommits = 5, 400, 300
		c.SpreadNamespaces = 20
		c.ReconcileNamespaces, c.ReconcileObjects = 3, 10
		c.Repeat, c.PlanRepeat = 1, 1
	}
	c.Log = func(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }
	var err error
	c.HoldApply = *hold && c.Only == "apply"
	if *hold && !c.HoldApply {
		err = holdSeeded(c)
	} else {
		var r *Results
		if r, err = Run(context.Background(), c); err == nil {
			r.Print(os.Stdout)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// Results is everything one run measured.
type Results struct {
	Machine Machine `json:"machine"`
	Seeding Seeding `json:"seeding"`
	Rows    []Row   `json:"rows"`
}

// Machine says where and on what the bench ran.
type Machine struct {
	Cores     int    `json:"cores"`
	MemoryGB  int    `json:"memoryGB"`
	Commit    string `json:"commit"`
	Go        string `json:"go"`
	StartedAt string `json:"startedAt"`
}

// Seeding says how the objects were made.
type Seeding struct {
	Method  string  `json:"method"`
	Objects int     `json:"objects"`
	Seconds float64 `json:"seconds"`
	Total   float64 `json:"totalSeconds"`
}

// Row is one goal: the measurements, the ratio and whether it met its goal.
type Row struct {
	Name     string        `json:"name"`
	Measured []Measurement `json:"measured"`
	Ratios   []Ratio       `json:"ratios"`
}

// Measurement is one command's wall time and peak RSS.
type Measurement struct {
	What    string  `json:"what"`
	Seconds float64 `json:"seconds"`
	RSSMB   int64   `json:"peakRSSMB"`
}

// Ratio is a figure against its goal.
type Ratio struct {
	What  string  `json:"what"`
	Value float64 `json:"value"`
	Goal  string  `json:"goal"`
	Met   bool    `json:"met"`
	// Reported is a figure without a goal: never met, only reported.
	Reported bool `json:"reported,omitempty"`
}

// Print writes the table.
func (r *Results) Print(w *os.File) {
	fmt.Fprintf(w, "\nadopt bench: %d cores, %d GB, commit %s, %s; seeded %d objects through the API (%s) in %.0f s; whole run %.0f s\n",
		r.Machine.Cores, r.Machine.MemoryGB, r.Machine.Commit, r.Machine.Go, r.Seeding.Objects, r.Seeding.Method, r.Seeding.Seconds, r.Seeding.Total)
	for _, row := range r.Rows {
		fmt.Fprintf(w, "\n%s\n", row.Name)
		for _, m := range row.Measured {
			fmt.Fprintf(w, "  %-62s %9.2f s %7d MB\n", m.What, m.Seconds, m.RSSMB)
		}
		for _, q := range row.Ratios {
			if q.Reported {
				fmt.Fprintf(w, "  %-62s %9.2f   reported (no goal)\n", q.What, q.Value)
				continue
			}
			met := "met"
			if !q.Met {
				met = "NOT met"
			}
			fmt.Fprintf(w, "  %-62s %9.2f   goal %s: %s\n", q.What, q.Value, q.Goal, met)
		}
	}
}

// Run starts a control plane, runs every row and writes the results.
func Run(ctx context.Context, c Config) (*Results, error) {
	began := time.Now()
	bin, err := filepath.Abs(c.Adopt)
	if err != nil {
		return nil, err
	}
	c.Adopt = bin
	r := &Results{Machine: machine(), Seeding: Seeding{Method: "client-go creates, 32 writers, 1,000 requests/s"}}
	b := &bench{c: c, res: r}
	type row struct {
		name   string
		run    func(context.Context) error
		shared bool // runs on the shared control plane (b.cp); the others need none or start their own
	}
	var rows []row
	for _, r := range []row{
		{"plan", b.planRows, true}, {"finalize", b.finalizeRow, true}, {"apply", b.applyRow, true}, {"fleet", b.fleetRow, true},
		{"render", b.renderRow, false}, {"monorepo", b.monorepoRows, true}, {"spread", b.spreadRow, false},
		{"fleetstatus", b.fleetStatusRow, true}, {"reconcile", b.reconcileRow, false},
	} {
		if c.Only == "" || strings.Contains(","+c.Only+",", ","+r.name+",") {
			rows = append(rows, r)
		}
	}
	if slices.ContainsFunc(rows, func(r row) bool { return r.shared }) {
		cp, cs, err := startSeedable(ctx)
		if err != nil {
			return nil, err
		}
		defer cp.Stop()
		b.cp, b.cs = cp, cs
	}
	for _, r := range rows {
		if err := r.run(ctx); err != nil {
			return nil, err
		}
	}
	r.Seeding.Total = time.Since(began).Seconds()
	if c.Out != "" {
		data, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return nil, err
		}
		if err := atomicfile.WriteFile(c.Out, append(data, '\n'), 0o644); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// bench is one run's state.
type bench struct {
	c   Config
	cp  *testenv.ControlPlane
	cs  *kubernetes.Clientset
	res *Results
}

func (b *bench) seeded(n int, d time.Duration) {
	b.res.Seeding.Objects += n
	b.res.Seeding.Seconds += d.Seconds()
}

func machine() Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version(), StartedAt: time.Now().UTC().Format(time.RFC3339)}
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
		if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
			m.Commit += "-dirty"
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		fmt.Sscanf(strings.TrimPrefix(strings.SplitN(string(b), "\n", 2)[0], "MemTotal:"), "%d", &kb)
		m.MemoryGB = int((kb + 512*1024) / (1024 * 1024))
	}
	return m
}

// measure runs a command and returns its wall time and peak RSS, which
// GNU time (/usr/bin/time) reports: Linux counts in a process's peak RSS
// the memory of the process that started it until exec, and Go starts
// processes sharing its own memory, so a direct child of this process
// (or of any Go process) would report the starter's size. GNU time forks
// from its own tiny image.
func measure(what string, env []string, name string, args ...string) (Measurement, error) {
	if _, err := os.Stat(gnuTime); err != nil {
		return Measurement{}, fmt.Errorf("the bench needs GNU time at %s to measure peak RSS (Debian package time; internal/testenv/tools/install-debs.sh installs it)", gnuTime)
	}
	f, err := os.CreateTemp("", "bench-rss-")
	if err != nil {
		return Measurement{}, err
	}
	f.Close()
	defer os.Remove(f.Name())
	cmd := exec.Command(gnuTime, append([]string{"-q", "-f", "%M", "-o", f.Name(), name}, args...)...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	err = cmd.Run()
	m := Measurement{What: what, Seconds: time.Since(start).Seconds()}
	if b, rerr := os.ReadFile(f.Name()); rerr == nil {
		var kib int64
		fmt.Sscanf(strings.TrimSpace(string(b)), "%d", &kib)
		m.RSSMB = kib / 1024
	}
	if err != nil {
		return m, fmt.Errorf("%s: %v: %s", what, err, strings.TrimSpace(tail(stderr.String(), 2000)))
	}
	return m, nil
}

const gnuTime = "/usr/bin/time"

// measureN measures run n times (once when n < 2) and gives the median
// time with the highest peak RSS: one slow run on a shared machine does not
// make the row, nor does one lucky run. run(i) makes the i-th run's
// measurement (i from 0), so a run that needs fresh state can set it up.
func measureN(n int, run func(i int) (Measurement, error)) (Measurement, error) {
	var ms []Measurement
	for i := 0; i < max(n, 1); i++ {
		m, err := run(i)
		if err != nil {
			return m, err
		}
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Seconds < ms[j].Seconds })
	med := ms[len(ms)/2]
	for _, m := range ms {
		med.RSSMB = max(med.RSSMB, m.RSSMB)
	}
	if len(ms) > 1 {
		med.What += fmt.Sprintf(", median of %d", len(ms))
	}
	return med, nil
}

// A command is one program run with its arguments, as measure takes it.
type command struct {
	what string
	name string
	args []string
	env  []string // more environment, or nil
}

// measureInterleaved measures the commands n times each (once when n < 2),
// one of each per round and each round starting one command later, after
// a first round whose figures are dropped when n > 1; it gives each
// command's median as measureN does. A baseline and the run it is set
// against then meet the same spells of load on a shared machine, and
// neither always runs first after seeding, while the API server is still
// settling.
func measureInterleaved(n int, cmds ...command) ([]Measurement, error) {
	all := make([][]Measurement, len(cmds))
	rounds, warm := max(n, 1), 0
	if n > 1 {
		warm = 1
	}
	for r := 0; r < warm+rounds; r++ {
		for k := range cmds {
			i := (k + r) % len(cmds)
			c := cmds[i]
			m, err := measure(c.what, c.env, c.name, c.args...)
			if err != nil {
				return nil, err
			}
			if r >= warm {
				all[i] = append(all[i], m)
			}
		}
	}
	out := make([]Measurement, len(cmds))
	for i, ms := range all {
		out[i], _ = measureN(len(ms), func(k int) (Measurement, error) { return ms[k], nil })
	}
	return out, nil
}

// measureRepeat is measureN of one command.
func (c Config) measureRepeat(what string, env []string, name string, args ...string) (Measurement, error) {
	return measureN(c.Repeat, func(int) (Measurement, error) { return measure(what, env, name, args...) })
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func ratio(what string, v float64, goal string, met bool) Ratio {
	return Ratio{What: what, Value: v, Goal: goal, Met: met}
}

// reported is a figure without a goal.
func reported(what string, v float64) Ratio {
	return Ratio{What: what, Value: v, Goal: "none", Reported: true}
}

// holdSeeded seeds the plan row and waits for a signal.
func holdSeeded(c Config) error {
	ctx := context.Background()
	cp, cs, err := startSeedable(ctx)
	if err != nil {
		return err
	}
	defer cp.Stop()
	if _, err := seedNamespaces(ctx, cs, 0, c.Namespaces, c.PerType, c.BigEvery, 1); err != nil {
		return err
	}
	fmt.Printf("kubeconfig: %s\n", cp.Kubeconfig)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	return nil
}

// startSeedable starts a control plane and a client fast enough to seed
// it (1,000 requests a second, bursts of 2,000).
func startSeedable(ctx context.Context) (*testenv.ControlPlane, *kubernetes.Clientset, error) {
	cp, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		return nil, nil, err
	}
	cfg := cp.RESTConfig()
	cfg.QPS, cfg.Burst = 1000, 2000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		cp.Stop()
		return nil, nil, err
	}
	return cp, cs, nil
}
