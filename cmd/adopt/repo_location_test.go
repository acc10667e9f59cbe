package main

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestRepoLocationForms takes every form --repo accepts through both verbs
// that read it: plan --repo, and apply --repo without --plan (which plans
// through the same reader). One repository, reached as a checkout, a
// subdirectory of it, file:// to the checkout, the bare path, file:// to the
// bare repository, smart HTTP, ssh:// and scp-style git@alias:path (the
// alias resolved by an ssh_config, as go-git reads one). Each plan finds the
// object in Git at its path, and each apply commits its Application on a
// branch of its own in the repository the location names.
func TestRepoLocationForms(t *testing.T) {
	ns := cp.Namespace(t)
	kc(t, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: loc-settings}\ndata: {mode: green}\n"), "apply", "-n", ns, "-f", "-")
	inGit := "k8s/" + ns + "/settings.yaml"
	g, httpURL := gitRepo(t, "gitops", map[string]string{
		inGit:       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: loc-settings, namespace: " + ns + "}\ndata: {mode: green}\n",
		"README.md": "gitops\n",
	})
	bare := g.BarePath("gitops")
	dir := t.TempDir()
	checkout := filepath.Join(dir, "checkout")
	if out, err := exec.Command("git", "clone", "-q", bare, checkout).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v: %s", err, out)
	}
	s, err := testenv.StartSSHGitServer(g.Root)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ssh := sshClient(t, s, "")

	for i, tc := range []struct {
		form, loc string
		flags     []string
		// written is the repository apply commits into.
		written string
	}{
		{"checkout", checkout, nil, checkout},
		{"subdirectory of a checkout", filepath.Join(checkout, "k8s"), nil, checkout},
		{"file:// checkout", "file://" + filepath.ToSlash(checkout), nil, checkout},
		{"bare path", bare, nil, bare},
		{"file:// bare", "file://" + filepath.ToSlash(bare), nil, bare},
		{"smart HTTP", httpURL, nil, bare},
		{"ssh://", s.URL("gitops"), ssh, bare},
		{"scp-style", s.SCPURL("gitops-test", "gitops"), ssh, bare},
	} {
		t.Run(tc.form, func(t *testing.T) {
			planFile := filepath.Join(t.TempDir(), "plan.yaml")
			out, errOut, code := adopt(t, append([]string{"plan", "-n", ns, "-q", "--repo", tc.loc, "--out", planFile}, tc.flags...)...)
			if code != 0 {
				t.Fatalf("plan --repo %s exited %d: %s %s", tc.loc, code, out, errOut)
			}
			p := readPlan(t, planFile)
			found := false
			for _, o := range p.Objects {
				found = found || o.Name == "loc-settings" && o.Git != nil && o.Git.Path == inGit
			}
			if p.Repo == nil || p.Summary.NotInGit != 0 || !found || len(p.Applications) != 1 {
				t.Fatalf("plan --repo %s did not find the object at %s: repo %+v, objects %+v", tc.loc, inGit, p.Repo, p.Objects)
			}
			branch := "adopt/location-" + string(rune('a'+i))
			args := []string{"apply", "-n", ns, "-q", "--repo", tc.loc, "--branch", branch, "--author", "T <t@example.invalid>"}
			out, errOut, code = adopt(t, append(args, tc.flags...)...)
			if code != 0 {
				t.Fatalf("apply --repo %s (no --plan) exited %d: %s %s", tc.loc, code, out, errOut)
			}
			tip := tipOf(t, tc.written, branch)
			app, err := argoapp.DecodeApplication([]byte(fileText(t, tip, p.Settings.AppsDir+"/"+p.Applications[0].Name+".yaml")))
			if err != nil {
				t.Fatal(err)
			}
			if app.Spec.Source.Path != "k8s/"+ns {
				t.Errorf("apply --repo %s: the Application's source path is %q, want the Git copy k8s/%s", tc.loc, app.Spec.Source.Path, ns)
			}
		})
	}
}
