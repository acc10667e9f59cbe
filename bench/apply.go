package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/internal/testenv"
)

const applyNS = "bench-apply"

// applyRow plans ApplyObjects ConfigMaps in Apps label groups, applies the
// plan to a repo on a local smart-HTTP git server, then pushes the same
// tree with the git CLI to the same server.
func (b *bench) applyRow(ctx context.Context) error {
	c := b.c
	start := time.Now()
	if _, err := b.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: applyNS}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	p := newPool()
	for i := 0; i < c.ApplyObjects; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cfg-%04d", i), Namespace: applyNS,
			Labels: map[string]string{"app.kubernetes.io/part-of": fmt.Sprintf("svc-%03d", i%c.Apps)}},
			Data: map[string]string{"config.yaml": strings.Repeat(fmt.Sprintf("key-%d: value\n", i), 20)}}
		p.jobs <- func() error {
			_, err := b.cs.CoreV1().ConfigMaps(applyNS).Create(ctx, cm, metav1.CreateOptions{})
			return err
		}
	}
	if err := p.wait(); err != nil {
		return err
	}
	b.seeded(c.ApplyObjects, time.Since(start))
	planFile := filepath.Join(b.cp.Dir, "apply-plan.yaml")
	if _, err := measure("adopt plan", nil, c.Adopt, "--kubeconfig", b.cp.Kubeconfig, "plan", "-q", "-n", applyNS, "--argocd-version", "v2.14.21", "--out", planFile); err != nil {
		return err
	}
	row, err := b.applyAgainstGit(b.cp, planFile, func(apps, objects int) string {
		return fmt.Sprintf("5. apply, %d Applications and %d exported objects, pushed over smart HTTP", apps, objects)
	})
	if err != nil {
		return err
	}
	b.res.Rows = append(b.res.Rows, row)
	return nil
}

// applyAgainstGit applies planFile, made on cp, to a fresh repository on a
// local smart-HTTP git server, Repeat times, then pushes the same tree
// with the git CLI to the same server, and returns the row named by name
// from the plan's Applications and objects.
func (b *bench) applyAgainstGit(cp *testenv.ControlPlane, planFile string, name func(apps, objects int) string) (Row, error) {
	c := b.c
	kc := []string{"--kubeconfig", cp.Kubeconfig}
	pl, err := plan.ReadFile(planFile)
	if err != nil {
		return Row{}, err
	}
	g, err := testenv.StartGitServer("", "")
	if err != nil {
		return Row{}, err
	}
	defer g.Close()
	// Each run, adopt's and git's, pushes into a fresh repository holding
	// only README.md, so each sends every new object.
	fresh := func(name string) (string, error) {
		return g.CreateRepo(name, map[string]string{"README.md": "gitops\n"})
	}
	c.Log("  adopt apply: %d Applications, %d objects", len(pl.Applications), len(pl.Objects))
	ap, err := measureN(c.Repeat, func(i int) (Measurement, error) {
		url, err := fresh(fmt.Sprintf("adopt-%d", i))
		if err != nil {
			return Measurement{}, err
		}
		if c.HoldApply && i == 0 {
			fmt.Printf("kubeconfig: %s\nplan: %s\nrepo: %s\n", cp.Kubeconfig, planFile, url)
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
			<-sig
		}
		return measure("", nil, c.Adopt, append(kc, "apply", "--plan", planFile, "--repo", url, "--branch", "adopt-bench",
			"--author", "Bench <bench@example.invalid>", "--argocd-version", "v2.14.21", "-q")...)
	})
	if err != nil {
		return Row{}, err
	}
	bare := g.BarePath("adopt-0")
	files, err := gitOut("", "--git-dir", bare, "ls-tree", "-r", "--name-only", "adopt-bench")
	if err != nil {
		return Row{}, err
	}
	nfiles := len(strings.Fields(files))
	ap.What = fmt.Sprintf("adopt apply: %d Applications, %d objects, %d files, pushed%s", len(pl.Applications), len(pl.Objects), nfiles, ap.What)

	// The git CLI: the same tree, committed and pushed to the same server.
	env := []string{"GIT_AUTHOR_NAME=Bench", "GIT_AUTHOR_EMAIL=bench@example.invalid", "GIT_COMMITTER_NAME=Bench", "GIT_COMMITTER_EMAIL=bench@example.invalid"}
	gitRun := func(what, url, work, branch string) (Measurement, error) {
		if _, err := gitOut("", "clone", "-q", url, work); err != nil {
			return Measurement{}, err
		}
		if _, err := gitOut(work, "checkout", "-q", "-b", branch); err != nil {
			return Measurement{}, err
		}
		archive := exec.Command("sh", "-c", fmt.Sprintf("git --git-dir %q archive adopt-bench | tar -x -C %q", bare, work))
		if out, err := archive.CombinedOutput(); err != nil {
			return Measurement{}, fmt.Errorf("git archive: %v: %s", err, out)
		}
		return measure(what, env, "sh", "-c",
			fmt.Sprintf("cd %q && git add -A && git commit -q -m bench && git push -q origin %s", work, branch))
	}
	gm, err := measureN(c.Repeat, func(i int) (Measurement, error) {
		url, err := fresh(fmt.Sprintf("git-%d", i))
		if err != nil {
			return Measurement{}, err
		}
		return gitRun(fmt.Sprintf("git add -A && git commit && git push, the same %d files, into a fresh repository", nfiles),
			url, filepath.Join(cp.Dir, fmt.Sprintf("git-bench-%d", i)), "git-bench")
	})
	if err != nil {
		return Row{}, err
	}
	// Reported, no goal: the same into the repository adopt filled, as
	// this row measured before: the clone then holds every object, so git
	// writes none and pushes one commit.
	filled, err := measureN(c.Repeat, func(i int) (Measurement, error) {
		return gitRun("the same into the repository adopt filled (git writes no object, pushes one commit)",
			g.URL+"/adopt-0.git", filepath.Join(cp.Dir, fmt.Sprintf("git-filled-%d", i)), fmt.Sprintf("git-filled-%d", i))
	})
	if err != nil {
		return Row{}, err
	}
	ours, err := gitOut("", "--git-dir", bare, "rev-parse", "adopt-bench^{tree}")
	if err != nil {
		return Row{}, err
	}
	theirs, err := gitOut("", "--git-dir", g.BarePath("git-0"), "rev-parse", "git-bench^{tree}")
	if err != nil {
		return Row{}, err
	}
	if ours != theirs {
		return Row{}, fmt.Errorf("apply row: git pushed tree %s, adopt %s: not the same tree", theirs, ours)
	}
	return Row{Name: name(len(pl.Applications), len(pl.Objects)),
		Measured: []Measurement{ap, gm, filled},
		Ratios: []Ratio{ratio("adopt apply / git CLI (time)", ap.Seconds/gm.Seconds, "<= 2", ap.Seconds <= 2*gm.Seconds),
			reported("adopt apply / git CLI into the filled repository (time)", ap.Seconds/filled.Seconds)}}, nil
}

func gitOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}
