package main

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func runArgv0(t *testing.T, argv0 string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runAdopt(t, argv0, args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

// TestPluginHelp: invoked as kubectl-adopt (how krew installs it), help,
// usage, examples and errors say `kubectl adopt`; invoked as adopt they
// say `adopt`.
func TestPluginHelp(t *testing.T) {
	for _, argv0 := range []string{"/home/u/.krew/bin/kubectl-adopt", "kubectl-adopt.exe"} {
		out, _, code := runArgv0(t, argv0, "plan", "--help")
		if code != 0 {
			t.Fatalf("%s plan --help: exit %d", argv0, code)
		}
		for _, want := range []string{"kubectl adopt plan [flags]", "\n  kubectl adopt plan --repo ../gitops --out plan.yaml", "\n  kubectl adopt plan --repo . -o sarif"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s plan --help lacks %q:\n%s", argv0, want, out)
			}
		}
		if strings.Contains(out, "\n  adopt plan") {
			t.Errorf("%s plan --help still says adopt plan:\n%s", argv0, out)
		}
	}
	out, _, _ := runArgv0(t, "kubectl-adopt", "apply", "--help")
	if !strings.Contains(out, "ADOPT_GIT_TOKEN=... kubectl adopt apply -n litellm-test") || !strings.Contains(out, "# Compute the plan now") {
		t.Errorf("apply --help examples:\n%s", out)
	}
	_, errOut, code := runArgv0(t, "kubectl-adopt", "plan", "--no-such-flag")
	if code != ExitUsage || !strings.Contains(errOut, "see 'kubectl adopt plan --help'") {
		t.Errorf("a bad flag as plugin: exit %d, %q", code, errOut)
	}
	out, _, _ = runArgv0(t, "/usr/local/bin/adopt", "plan", "--help")
	if !strings.Contains(out, "\n  adopt plan [flags]") || strings.Contains(out, "kubectl adopt") {
		t.Errorf("adopt plan --help:\n%s", out)
	}
}

// TestCompletionScripts: the completion script is for the name the shell
// runs, adopt or kubectl-adopt.
func TestCompletionScripts(t *testing.T) {
	for argv0, want := range map[string]string{"adopt": "__start_adopt", "kubectl-adopt": "__start_kubectl-adopt"} {
		for _, shell := range []string{"bash", "zsh", "fish"} {
			out, _, code := runArgv0(t, argv0, "completion", shell)
			if code != 0 || !strings.Contains(out, strings.TrimPrefix(want, "__start_")) {
				t.Errorf("%s completion %s: exit %d, no %s", argv0, shell, code, want)
			}
		}
		out, _, _ := runArgv0(t, argv0, "completion", "bash")
		if !strings.Contains(out, want) {
			t.Errorf("%s completion bash lacks %s", argv0, want)
		}
	}
}

// completions runs a __complete request and returns the candidates and
// the directive line.
func completions(t *testing.T, argv0 string, args ...string) ([]string, string) {
	t.Helper()
	if argv0 != "kubectl_complete-adopt" {
		args = append([]string{"__complete"}, args...)
	}
	out, errOut, code := runArgv0(t, argv0, args...)
	if code != 0 {
		t.Fatalf("%s %v: exit %d: %s", argv0, args, code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[:len(lines)-1], lines[len(lines)-1]
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// TestDynamicCompletion: flag values complete as kubectl's do, from the
// kubeconfig and from the real test cluster, in both forms.
func TestDynamicCompletion(t *testing.T) {
	raw, err := clientcmd.LoadFromFile(cp.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	k := cp.Kubeconfig
	for _, argv0 := range []string{"adopt", "kubectl-adopt", "kubectl_complete-adopt"} {
		got, dir := completions(t, argv0, "--kubeconfig", k, "plan", "--context", "")
		if len(got) != len(raw.Contexts) || dir != ":4" {
			t.Errorf("%s --context: %v %s, want the kubeconfig's %d contexts, no files", argv0, got, dir, len(raw.Contexts))
		}
		for _, c := range got {
			if raw.Contexts[c] == nil {
				t.Errorf("%s --context offers %q, not in the kubeconfig", argv0, c)
			}
		}
		for _, args := range [][]string{
			{"plan", "-n", "kube-"},
			{"plan", "--namespace", "kube-"},
			{"plan", "--argocd-namespace", "kube-"},
			{"apply", "--argocd-namespace", "kube-"},
			{"finalize", "--argocd-namespace", "kube-"},
		} {
			got, dir := completions(t, argv0, append([]string{"--kubeconfig", k}, args...)...)
			if !contains(got, "kube-system") || contains(got, "default") || dir != ":4" {
				t.Errorf("%s %v: %v %s, want the cluster's kube-* namespaces", argv0, args, got, dir)
			}
		}
		for _, verb := range []string{"apply", "finalize"} {
			got, dir := completions(t, argv0, "--kubeconfig", k, verb, "--plan", "")
			if strings.Join(got, ",") != "yaml,yml" || dir != ":8" {
				t.Errorf("%s %s --plan: %v %s, want *.yaml and *.yml files", argv0, verb, got, dir)
			}
		}
	}
	// An unreachable cluster: an error directive, quickly, no candidates.
	bad := t.TempDir() + "/kubeconfig"
	if err := writeUnreachableKubeconfig(bad); err != nil {
		t.Fatal(err)
	}
	got, dir := completions(t, "adopt", "--kubeconfig", bad, "plan", "-n", "")
	if len(got) != 0 || dir != ":5" {
		t.Errorf("unreachable cluster: %v %s, want none and an error directive", got, dir)
	}
}

func writeUnreachableKubeconfig(path string) error {
	c := clientcmdapi.NewConfig()
	c.Clusters["down"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	c.AuthInfos["down"] = &clientcmdapi.AuthInfo{Token: "x"}
	c.Contexts["down"] = &clientcmdapi.Context{Cluster: "down", AuthInfo: "down"}
	c.CurrentContext = "down"
	return clientcmd.WriteToFile(*c, path)
}
