package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestMain lets the test binary stand in for the bench binary as the raw
// list baseline (measurePlan runs os.Executable with -rawlist) and as
// adopt's side of the render row (renderRow runs it with -render).
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "-rawlist" {
		if err := rawList(os.Args[2]); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	if len(os.Args) == 3 && os.Args[1] == "-render" {
		if err := renderDir(os.Args[2]); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestSmoke runs every row of the bench at a small size (2,000 objects in
// the plan row) against a real control plane and git server. It checks that
// the bench works and writes whole results, not how fast anything is.
func TestSmoke(t *testing.T) {
	dir := t.TempDir()
	adopt := filepath.Join(dir, "adopt")
	if out, err := exec.Command("go", "build", "-o", adopt, "../cmd/adopt").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	out := filepath.Join(dir, "results.json")
	c := Config{Adopt: adopt, Namespaces: 2, LargeNamespaces: 4, PerType: 100, BigEvery: 100, Finalize: 30, Apps: 10, ApplyObjects: 40,
		FleetClusters: 2, FleetNamespaces: 1, RenderApps: 10, RenderFiles: 400, MonoApps: 5, MonoFiles: 400, MonoCommits: 300, SpreadNamespaces: 20, SpreadObjects: 4, FleetStatusClusters: 2, FleetStatusNamespaces: 1, ReconcileNamespaces: 2, ReconcileObjects: 4, Out: out, Log: t.Logf}
	r, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	r.Print(os.Stdout)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var back Results
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	if len(back.Rows) != 12 {
		t.Fatalf("%d rows, want 12", len(back.Rows))
	}
	for _, row := range back.Rows {
		if len(row.Measured) < 2 || len(row.Ratios) == 0 {
			t.Fatalf("row %q lacks figures: %+v", row.Name, row)
		}
		for _, m := range row.Measured {
			if m.Seconds <= 0 || m.RSSMB <= 0 {
				t.Fatalf("row %q: %q measured %.3f s, %d MB", row.Name, m.What, m.Seconds, m.RSSMB)
			}
		}
	}
	if back.Machine.Cores == 0 || back.Seeding.Objects == 0 {
		t.Fatalf("machine or seeding missing: %+v %+v", back.Machine, back.Seeding)
	}
}

// TestMeasureInterleaved checks the order of runs: one round left out,
// then rounds that each start one command later, so neither command
// always runs first.
func TestMeasureInterleaved(t *testing.T) {
	log := filepath.Join(t.TempDir(), "runs")
	run := func(name string) command {
		return command{what: name, name: "sh", args: []string{"-c", "echo " + name + " >> " + log}}
	}
	ms, err := measureInterleaved(3, run("a"), run("b"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "a\nb\nb\na\na\nb\nb\na\n"; got != want {
		t.Fatalf("runs in order %q, want %q", got, want)
	}
	for i, want := range []string{"a, median of 3", "b, median of 3"} {
		if ms[i].What != want || ms[i].Seconds <= 0 {
			t.Fatalf("measurement %d: %+v, want %q", i, ms[i], want)
		}
	}
}
