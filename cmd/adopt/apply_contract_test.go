package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"

	"github.com/adopt-dev/adopt/adopt/apply"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// committedApp reads one Application from the tip of the adoption branch.
func committedApp(t *testing.T, bare string, p *plan.Plan, file string) *v1alpha1.Application {
	t.Helper()
	app, err := argoapp.DecodeApplication([]byte(fileText(t, tipOf(t, bare, "adopt/"+apply.AdoptionID(p)), file)))
	if err != nil {
		t.Fatal(err)
	}
	return app
}

// TestApplyCommitsWhatThePlanSays takes every setting of adopt.yaml (and
// the plan's Argo CD namespace) through plan -> apply to the committed file,
// and checks the file against the plan; then each flag that would
// contradict the plan is refused with exit 2, naming the plan's value
// (and --push-secrets with --dry-run, which writes nothing).
func TestApplyCommitsWhatThePlanSays(t *testing.T) {
	ns := cp.Namespace(t)
	kc(t, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shop-settings}\ndata: {mode: blue}\n"), "apply", "-n", ns, "-f", "-")
	g, url := gitRepo(t, "gitops", map[string]string{"README.md": "gitops\n"})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "adopt.yaml")
	if err := os.WriteFile(cfg, []byte(`apiVersion: adopt.dev/v1alpha1
kind: AdoptConfig
destination: {name: prod}
project: platform
appsDir: clusters/prod/apps
exportDir: clusters/prod/adopted
naming: "prod-{namespace}"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	planFile := filepath.Join(dir, "plan.yaml")
	if out, errOut, code := adopt(t, "plan", "-n", ns, "-q", "--config", cfg, "--repo", url, "--argocd-namespace", "argocd-mgmt", "--out", planFile, "-o", "json"); code != 0 {
		t.Fatalf("plan exited %d: %s %s", code, out, errOut)
	}
	p := readPlan(t, planFile)
	if len(p.Applications) != 1 {
		t.Fatalf("plan proposes %d Applications", len(p.Applications))
	}
	pa := p.Applications[0]
	if p.Settings.AppsDir != "clusters/prod/apps" || p.Settings.ExportDir != "clusters/prod/adopted" || p.Settings.Destination != "name:prod" ||
		p.Settings.Project != "platform" || p.Tracking.Namespace != "argocd-mgmt" || pa.Name != "prod-"+ns {
		t.Fatalf("plan did not record adopt.yaml: settings %+v, tracking namespace %q, app %q", p.Settings, p.Tracking.Namespace, pa.Name)
	}
	out, errOut, code := adopt(t, "apply", "--plan", planFile, "--repo", url, "--author", "T <t@example.invalid>", "-q")
	if code != 0 {
		t.Fatalf("apply exited %d: %s %s", code, out, errOut)
	}
	app := committedApp(t, g.BarePath("gitops"), p, "clusters/prod/apps/"+pa.Name+".yaml")
	src := app.Spec.Source
	for _, f := range []struct{ field, got, want string }{
		{"metadata.name", app.Name, pa.Name},
		{"metadata.namespace", app.Namespace, p.Tracking.Namespace},
		{"spec.project", app.Spec.Project, p.Settings.Project},
		{"spec.destination.name", app.Spec.Destination.Name, "prod"},
		{"spec.destination.server", app.Spec.Destination.Server, ""},
		{"spec.destination.namespace", app.Spec.Destination.Namespace, ns},
		{"spec.source.repoURL", src.RepoURL, p.Settings.RepoURL},
		{"spec.source.repoURL", src.RepoURL, url},
		{"spec.source.path", src.Path, pa.SourcePath},
		{"spec.source.path's export dir", strings.SplitN(src.Path, "/"+ns, 2)[0], p.Settings.ExportDir},
		{"adopt.dev/objects", app.Annotations["adopt.dev/objects"], strings.Join(pa.Objects, ", ")},
	} {
		if f.got != f.want {
			t.Errorf("committed %s = %q, the plan says %q", f.field, f.got, f.want)
		}
	}
	if !strings.Contains(out, "exported to clusters/prod/adopted/") {
		t.Errorf("export not under the plan's exportDir:\n%s", out)
	}

	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--dest-server", argoapp.InClusterServer}, `records destination "name prod"`},
		{[]string{"--dest-name", "staging"}, `records destination "name prod"`},
		{[]string{"--argocd-namespace", "argocd"}, `records tracking.namespace "argocd-mgmt"`},
		{[]string{"--apps-dir", "argocd/apps/"}, `records appsDir "clusters/prod/apps"`},
		{[]string{"--repo-url", "https://git.example.invalid/other.git"}, `records repoURL "` + url + `"`},
		{[]string{"--config", cfg}, "drop --config"},
		{[]string{"--push-secrets"}, "--push-secrets writes to the External Secrets store and --dry-run writes nothing"},
		{[]string{"--repo-url", "https://bot:ghp_CANARYt0ken@git.example.invalid/org/gitops.git"}, "carries credentials, which would be committed to Git"},
	} {
		args := append([]string{"apply", "--plan", planFile, "--repo", url, "-q", "--dry-run"}, tc.flags...)
		_, errOut, code := adopt(t, args...)
		if code != ExitUsage || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 || strings.Contains(errOut, "ghp_CANARYt0ken") {
			t.Errorf("%v: exit %d, %q; want exit 2 saying %s", tc.flags, code, errOut, tc.want)
		}
	}
	// Flags that repeat the plan, or only say how to commit, are fine.
	if _, errOut, code := adopt(t, "apply", "--plan", planFile, "--repo", url, "-q", "--dry-run", "--dest-name", "prod", "--argocd-namespace", "argocd-mgmt", "--branch", "other"); code != 0 {
		t.Errorf("flags that agree with the plan: exit %d: %s", code, errOut)
	}
}

// TestPlanAndApplyOverSSH runs plan --repo and apply against the real SSH
// git server, with ssh:// and with scp-style git@host:path, a key with a
// passphrase (from $ADOPT_SSH_KEY_PASSPHRASE) and known_hosts checked. The
// committed repoURL is the URL as given, never a redacted form, and the
// passphrase appears nowhere.
func TestPlanAndApplyOverSSH(t *testing.T) {
	const passphrase = "ssh-CANARY-passphrase-4411"
	ns := cp.Namespace(t)
	kc(t, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssh-settings}\ndata: {mode: green}\n"), "apply", "-n", ns, "-f", "-")
	manifest := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssh-settings, namespace: " + ns + "}\ndata: {mode: green}\n"
	// The repository's name is the test's own: every test git server is on
	// 127.0.0.1, and Applications other tests left on the shared plane
	// that read a "gitops" repository there would count as this repo's
	// other form (plan's repoURL choice).
	repo := giteaName(t, "gitops-ssh")
	g, _ := gitRepo(t, repo, map[string]string{"k8s/" + ns + "/settings.yaml": manifest})
	s, err := testenv.StartSSHGitServer(g.Root)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dir := t.TempDir()
	creds := sshClient(t, s, passphrase)
	t.Setenv("ADOPT_SSH_KEY_PASSPHRASE", passphrase)

	var outputs []string
	for i, url := range []string{s.URL(repo), s.SCPURL("gitops-test", repo)} {
		planFile := filepath.Join(dir, "plan.yaml")
		out, errOut, code := adopt(t, append([]string{"plan", "-n", ns, "-q", "--repo", url, "--out", planFile}, creds...)...)
		outputs = append(outputs, out, errOut)
		if code != 0 {
			t.Fatalf("plan --repo %s exited %d: %s %s", url, code, out, errOut)
		}
		p := readPlan(t, planFile)
		if p.Repo == nil || p.Repo.Source != url || p.Summary.NotInGit != 0 || p.Settings.RepoURL != url {
			t.Fatalf("plan over %s: repo %+v, not in Git %d, repoURL %q", url, p.Repo, p.Summary.NotInGit, p.Settings.RepoURL)
		}
		branch := []string{"--branch", "adopt/ssh-" + string(rune('a'+i))}
		out, errOut, code = adopt(t, append(append([]string{"apply", "--plan", planFile, "--repo", url, "--author", "T <t@example.invalid>", "-q"}, creds...), branch...)...)
		outputs = append(outputs, out, errOut)
		if code != 0 {
			t.Fatalf("apply --repo %s exited %d: %s %s", url, code, out, errOut)
		}
		text := fileText(t, tipOf(t, g.BarePath(repo), branch[1]), p.Settings.AppsDir+"/"+p.Applications[0].Name+".yaml")
		app, err := argoapp.DecodeApplication([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		if app.Spec.Source.RepoURL != url {
			t.Errorf("committed repoURL %q, want exactly %q", app.Spec.Source.RepoURL, url)
		}
		b, _ := os.ReadFile(planFile)
		outputs = append(outputs, string(b))
	}
	// A wrong passphrase: one line, exit 1, the passphrase nowhere.
	t.Setenv("ADOPT_SSH_KEY_PASSPHRASE", "wrong-"+passphrase)
	_, errOut, code := adopt(t, append([]string{"plan", "-n", ns, "-q", "--repo", s.URL(repo)}, creds...)...)
	outputs = append(outputs, errOut)
	if code != ExitError || !strings.Contains(errOut, "passphrase") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("wrong passphrase: exit %d, %q", code, errOut)
	}
	for _, o := range append(outputs, everything(t, g.BarePath(repo))) {
		if strings.Contains(o, passphrase) {
			t.Fatalf("the SSH key passphrase leaked:\n%s", o)
		}
	}
}

// sshClient makes a client key for s (with passphrase, "" for none), its
// known_hosts, and an ssh_config that names s "gitops-test" (so scp-style
// git@gitops-test:path reaches it) for the test's duration; it returns the
// --ssh-key and --known-hosts flags.
func sshClient(t *testing.T, s *testenv.SSHGitServer, passphrase string) []string {
	t.Helper()
	dir := t.TempDir()
	key, hosts := filepath.Join(dir, "id_ed25519"), filepath.Join(dir, "known_hosts")
	if _, err := s.NewClientKey(key, passphrase); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteKnownHosts(hosts); err != nil {
		t.Fatal(err)
	}
	cfg, err := s.WriteSSHConfig(filepath.Join(dir, "ssh_config"), "gitops-test")
	if err != nil {
		t.Fatal(err)
	}
	old := gitssh.DefaultSSHConfig
	gitssh.DefaultSSHConfig = cfg
	t.Cleanup(func() { gitssh.DefaultSSHConfig = old })
	return []string{"--ssh-key", key, "--known-hosts", hosts}
}
