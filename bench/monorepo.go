package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/internal/testenv"
)

const monoNS = "bench-monorepo"

// monorepoRows are rows 8 and 9, on a GitOps repository of MonoFiles
// manifests with MonoCommits commits of history (and a second one with a
// tenth of them), made with git fast-import and served over smart HTTP:
//
//  8. adopt apply of MonoApps Applications (4 ConfigMaps each, in one
//     namespace: this row measures Git, not the cluster reads), which
//     writes 5 x MonoApps files, against `git clone` + add + commit + push
//     of the same files; and adopt's peak RSS at both history lengths;
//  9. adopt plan --repo of the repository as a checkout, a bare path,
//     file:// and smart HTTP, against `git clone --depth 1` of it.
func (b *bench) monorepoRows(ctx context.Context) error {
	c := b.c
	if c.MonoApps == 0 {
		return nil
	}
	start := time.Now()
	if _, err := b.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: monoNS}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	p := newPool()
	for i := 0; i < 4*c.MonoApps; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("mono-%04d", i), Namespace: monoNS,
			Labels: map[string]string{"app.kubernetes.io/part-of": fmt.Sprintf("svc-%03d", i%c.MonoApps)}},
			Data: map[string]string{"config.yaml": strings.Repeat(fmt.Sprintf("key-%d: value\n", i), 10)}}
		p.jobs <- func() error {
			_, err := b.cs.CoreV1().ConfigMaps(monoNS).Create(ctx, cm, metav1.CreateOptions{})
			return err
		}
	}
	if err := p.wait(); err != nil {
		return err
	}
	b.seeded(4*c.MonoApps, time.Since(start))
	g, err := testenv.StartGitServer("", "")
	if err != nil {
		return err
	}
	defer g.Close()
	short, long := max(c.MonoCommits/10, 1), c.MonoCommits
	for _, n := range []int{short, long} {
		c.Log("monorepo: %d files, %d commits (git fast-import)", c.MonoFiles, n)
		if err := writeMonorepo(g.BarePath(monoName(n)), c.MonoFiles, n); err != nil {
			return err
		}
	}
	kc := []string{"--kubeconfig", b.cp.Kubeconfig}
	planFile := filepath.Join(b.cp.Dir, "monorepo-plan.yaml")
	if _, err := measure("adopt plan", nil, c.Adopt, append(kc, "plan", "-q", "-n", monoNS, "--argocd-version", "v2.14.21", "--out", planFile)...); err != nil {
		return err
	}
	applyAt := func(n int) (Measurement, error) {
		url := g.URL + "/" + monoName(n) + ".git"
		return measureN(c.Repeat, func(i int) (Measurement, error) {
			return measure("", nil, c.Adopt, append(kc, "apply", "--plan", planFile, "--repo", url, "--branch", fmt.Sprintf("adopt-bench-%d", i),
				"--author", "Bench <bench@example.invalid>", "--argocd-version", "v2.14.21", "-q")...)
		})
	}
	c.Log("  adopt apply at %d and %d commits", short, long)
	apShort, err := applyAt(short)
	if err != nil {
		return err
	}
	apLong, err := applyAt(long)
	if err != nil {
		return err
	}
	bare := g.BarePath(monoName(long))
	changed, err := gitOut("", "--git-dir", bare, "diff", "--name-only", "main", "adopt-bench-0")
	if err != nil {
		return err
	}
	nchanged := len(strings.Fields(changed))
	apShort.What = fmt.Sprintf("adopt apply, %d commits of history%s", short, apShort.What)
	apLong.What = fmt.Sprintf("adopt apply, %d commits of history%s", long, apLong.What)

	// The git CLI: clone, the same files added, committed and pushed.
	tarball := filepath.Join(b.cp.Dir, "monorepo-change.tar")
	archive := exec.Command("sh", "-c", fmt.Sprintf("git --git-dir %q archive -o %q adopt-bench-0 -- $(git --git-dir %q diff --name-only main adopt-bench-0)", bare, tarball, bare))
	if out, err := archive.CombinedOutput(); err != nil {
		return fmt.Errorf("git archive: %v: %s", err, out)
	}
	env := []string{"GIT_AUTHOR_NAME=Bench", "GIT_AUTHOR_EMAIL=bench@example.invalid", "GIT_COMMITTER_NAME=Bench", "GIT_COMMITTER_EMAIL=bench@example.invalid"}
	url := g.URL + "/" + monoName(long) + ".git"
	c.Log("  git clone + add + commit + push")
	gm, err := measureN(c.Repeat, func(i int) (Measurement, error) {
		work := filepath.Join(b.cp.Dir, fmt.Sprintf("monorepo-git-%d", i))
		branch := fmt.Sprintf("git-bench-%d", i)
		return measure(fmt.Sprintf("git clone + add + commit + push, the same %d files", nchanged), env, "sh", "-c",
			fmt.Sprintf("git clone -q %q %q && cd %q && git checkout -q -b %s && tar -xf %q && git add -A && git commit -q -m bench && git push -q origin %s",
				url, work, work, branch, tarball, branch))
	})
	if err != nil {
		return err
	}
	ours, err := gitOut("", "--git-dir", bare, "rev-parse", "adopt-bench-0^{tree}")
	if err != nil {
		return err
	}
	theirs, err := gitOut("", "--git-dir", bare, "rev-parse", "git-bench-0^{tree}")
	if err != nil {
		return err
	}
	if ours != theirs {
		return fmt.Errorf("monorepo row: git pushed tree %s, adopt %s: not the same tree", theirs, ours)
	}
	b.res.Rows = append(b.res.Rows, Row{
		Name:     fmt.Sprintf("8. apply into a repository of %d files and %d commits, %d files changed, pushed over smart HTTP", c.MonoFiles, long, nchanged),
		Measured: []Measurement{apLong, gm, apShort},
		Ratios: []Ratio{
			ratio("adopt apply / git clone + add + commit + push (time)", apLong.Seconds/gm.Seconds, "<= 2", apLong.Seconds <= 2*gm.Seconds),
			ratio(fmt.Sprintf("adopt apply peak RSS at %d commits (MB)", long), float64(apLong.RSSMB), "<= 150", apLong.RSSMB <= 150),
			ratio(fmt.Sprintf("adopt apply peak RSS at %d commits (MB)", short), float64(apShort.RSSMB), "<= 150", apShort.RSSMB <= 150),
			ratio(fmt.Sprintf("peak RSS at %d / at %d commits", long, short), float64(apLong.RSSMB)/float64(apShort.RSSMB), "<= 1.2", apLong.RSSMB*10 <= apShort.RSSMB*12),
		}})
	return b.planRepoRow(kc, g, long)
}

// planRepoRow is row 9: plan --repo of the repository of n commits in each
// form it takes, against git clone --depth 1 of it (over file:// for the
// forms on disk: git ignores --depth for a plain path).
func (b *bench) planRepoRow(kc []string, g *testenv.GitServer, n int) error {
	c := b.c
	bare := g.BarePath(monoName(n))
	checkout := filepath.Join(b.cp.Dir, "monorepo-checkout")
	if _, err := gitOut("", "clone", "-q", bare, checkout); err != nil {
		return err
	}
	fileURL := "file://" + filepath.ToSlash(bare)
	httpURL := g.URL + "/" + monoName(n) + ".git"
	clone := func(what, url string) (Measurement, error) {
		return measureN(c.Repeat, func(i int) (Measurement, error) {
			dir := filepath.Join(b.cp.Dir, fmt.Sprintf("monorepo-depth1-%s-%d", what, i))
			return measure("git clone --depth 1, "+what, nil, "git", "clone", "-q", "--depth", "1", "--single-branch", url, dir)
		})
	}
	row := Row{Name: fmt.Sprintf("9. plan --repo of the repository of %d files and %d commits (%d objects in the cluster)", c.MonoFiles, n, 4*c.MonoApps)}
	baselines := map[string]Measurement{}
	for _, form := range []struct{ what, url string }{{"file://", fileURL}, {"smart HTTP", httpURL}} {
		c.Log("  git clone --depth 1, %s", form.what)
		m, err := clone(form.what, form.url)
		if err != nil {
			return err
		}
		baselines[form.what] = m
		row.Measured = append(row.Measured, m)
	}
	for _, form := range []struct{ what, loc, base string }{
		{"a checkout", checkout, "file://"},
		{"a bare path", bare, "file://"},
		{"file://", fileURL, "file://"},
		{"smart HTTP", httpURL, "smart HTTP"},
	} {
		c.Log("  adopt plan --repo %s", form.what)
		m, err := c.measureRepeat("adopt plan --repo "+form.what, nil, c.Adopt,
			append(kc, "plan", "-q", "-n", monoNS, "--argocd-version", "v2.14.21", "--repo", form.loc, "--out", filepath.Join(b.cp.Dir, "monorepo-plan-repo.yaml"))...)
		if err != nil {
			return err
		}
		row.Measured = append(row.Measured, m)
		base := baselines[form.base]
		row.Ratios = append(row.Ratios, ratio(fmt.Sprintf("plan --repo %s / git clone --depth 1, %s (time)", form.what, form.base),
			m.Seconds/base.Seconds, "<= 1.5", m.Seconds <= 1.5*base.Seconds))
	}
	b.res.Rows = append(b.res.Rows, row)
	return nil
}

func monoName(commits int) string { return fmt.Sprintf("monorepo-%d", commits) }

// writeMonorepo makes a bare repository at bare (branch main, receive-pack
// on) with one commit of files ConfigMap manifests under
// clusters/prod/team-NN/svc-NNN/, then commits-1 commits changing one of
// them each, streamed through git fast-import and repacked as a server
// keeps it.
func writeMonorepo(bare string, files, commits int) error {
	if _, err := gitOut("", "init", "-q", "--bare", "-b", "main", bare); err != nil {
		return err
	}
	if _, err := gitOut(bare, "config", "http.receivepack", "true"); err != nil {
		return err
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir = bare
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	w := bufio.NewWriterSize(in, 1<<20)
	path := func(i int) string {
		return fmt.Sprintf("clusters/prod/team-%02d/svc-%03d/configmap-%05d.yaml", i%20, i%400, i)
	}
	manifest := func(i, rev int) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg-%05d\n  namespace: team-%02d\n  labels: {app: svc-%03d}\ndata:\n  revision: \"%d\"\n  settings.yaml: |\n    replicas: %d\n    image: registry.example.invalid/svc-%03d:1.%d\n", i, i%20, i%400, rev, 1+rev%5, i%400, rev)
	}
	when := int64(1_600_000_000)
	for k := 0; k < commits; k++ {
		fmt.Fprintf(w, "commit refs/heads/main\ncommitter Platform <platform@example.invalid> %d +0000\n", when+int64(k)*600)
		msg := fmt.Sprintf("change %d", k)
		fmt.Fprintf(w, "data %d\n%s\n", len(msg), msg)
		if k == 0 {
			for i := 0; i < files; i++ {
				m := manifest(i, 0)
				fmt.Fprintf(w, "M 100644 inline %s\ndata %d\n%s\n", path(i), len(m), m)
			}
		} else {
			i := (k * 7919) % files
			m := manifest(i, k)
			fmt.Fprintf(w, "M 100644 inline %s\ndata %d\n%s\n", path(i), len(m), m)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("git fast-import: %v: %s", err, stderr.String())
	}
	_, err = gitOut(bare, "repack", "-a", "-d", "-q")
	if err != nil {
		return err
	}
	return os.RemoveAll(filepath.Join(bare, "hooks"))
}
