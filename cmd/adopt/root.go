package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// run executes the adopt command line and returns the exit code.
func run(args []string, in io.Reader, out, errOut io.Writer) int {
	return runAs("adopt", args, in, out, errOut)
}

// runAs is run invoked as argv0: as kubectl-adopt, adopt is a kubectl
// plugin (`kubectl adopt ...`, the name krew installs), and as
// kubectl_complete-adopt it answers the completion requests kubectl's
// own shell completion sends for `kubectl adopt <TAB>`.
func runAs(argv0 string, args []string, in io.Reader, out, errOut io.Writer) int {
	return runIn(invocationOf(argv0, os.Getenv), args, in, out, errOut)
}

// runIn is runAs started as inv.
func runIn(inv invocation, args []string, in io.Reader, out, errOut io.Writer) int {
	streams := genericiooptions.IOStreams{In: in, Out: out, ErrOut: errOut}
	root := newRootCmdAs(streams, inv)
	if inv.complete {
		args = append([]string{cobra.ShellCompRequestCmd}, args...)
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err != nil {
		if isFlagError(err) {
			err = usageErrorf("%s (see '%s --help')", err, cmd.CommandPath())
		}
		return report(errOut, err)
	}
	return ExitOK
}

func isFlagError(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "unknown flag") || strings.HasPrefix(s, "unknown shorthand") ||
		strings.HasPrefix(s, "unknown command") || strings.Contains(s, "flag needs an argument") ||
		strings.HasPrefix(s, "invalid argument") || strings.Contains(s, "accepts ") || strings.HasPrefix(s, "required flag")
}

// invocation is how adopt was started.
type invocation struct {
	// plugin: as kubectl-adopt (or kubectl_complete-adopt).
	plugin bool
	// complete: as kubectl_complete-adopt.
	complete bool
	// getenv reads adopt's environment variables (tokens, ARGOCD_SERVER):
	// os.Getenv, or a test's own environment.
	getenv func(string) string
}

// pluginName is the executable name kubectl looks for on PATH.
const pluginName = "kubectl-adopt"

// invocationOf reads argv[0] the way kubectl plugins do: its base name,
// without .exe.
func invocationOf(argv0 string, getenv func(string) string) invocation {
	inv := invocation{getenv: getenv}
	switch strings.TrimSuffix(filepath.Base(argv0), ".exe") {
	case pluginName:
		inv.plugin = true
	case "kubectl_complete-adopt":
		inv.plugin, inv.complete = true, true
	}
	return inv
}

func newRootCmd(streams genericiooptions.IOStreams) *cobra.Command {
	return newRootCmdAs(streams, invocation{getenv: os.Getenv})
}

func newRootCmdAs(streams genericiooptions.IOStreams, inv invocation) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	timeout := "30s"
	flags.Timeout = &timeout
	root := &cobra.Command{
		Use:   "adopt",
		Short: "Move hand-applied Kubernetes objects under Argo CD management, safely",
		Long: `adopt finds Kubernetes objects that were applied by hand and that no Argo CD
Application tracks, measures their annotation budget the way the API server
counts it, proposes Applications for them, writes those into the GitOps repo,
and after the first sync removes the stale last-applied annotation and stale
field ownership.

` + exitCodesHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	flags.AddFlags(root.PersistentFlags())
	root.AddCommand(
		newPlanCmd(flags, streams, inv.getenv),
		newApplyCmd(flags, streams, inv.getenv),
		newFinalizeCmd(flags, streams, inv.getenv),
		newStatusCmd(flags, streams, inv.getenv),
		newReconcileCmd(flags, streams, inv.getenv),
		newVersionCmd(streams),
	)
	registerCompletions(root, flags)
	if inv.plugin {
		asPlugin(root)
	}
	return root
}

// asPlugin makes help, usage and examples say `kubectl adopt`. The
// command itself is named kubectl-adopt, the executable's name, so that
// `kubectl adopt completion bash` writes a script for kubectl-adopt.
func asPlugin(root *cobra.Command) {
	root.Use = pluginName
	if root.Annotations == nil {
		root.Annotations = map[string]string{}
	}
	root.Annotations[cobra.CommandDisplayNameAnnotation] = "kubectl adopt"
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.Example = pluginExamples(c.Example)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// pluginExamples rewrites the example lines that run `adopt` (or
// `bin/adopt`, after an environment assignment or a pipe too) to run
// `kubectl adopt`; comment lines are left as written.
func pluginExamples(ex string) string {
	cmd := regexp.MustCompile(`(^|[\s|;&(])(?:bin/)?adopt(\s|$)`)
	lines := strings.Split(ex, "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		lines[i] = cmd.ReplaceAllString(l, "${1}kubectl adopt${2}")
	}
	return strings.Join(lines, "\n")
}

// useColor reports whether w is a terminal and NO_COLOR is unset.
func useColor(w io.Writer) bool {
	if _, ok := os.LookupEnv("NO_COLOR"); ok {
		return false
	}
	return isTerminal(w)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// options is a verb's Options: Complete fills defaults from flags and the
// kubeconfig, Validate rejects bad input in one sentence, Run does the work.
type options interface {
	Complete(*cobra.Command) error
	Validate() error
	Run(context.Context) error
}

// runOptions is the RunE of every verb: Complete, Validate, Run, with
// the collector tuned (tuneGC, at the verb's own percent if it has one).
func runOptions(o options) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		percent := gcPercent
		if g, ok := o.(gcTuned); ok {
			percent = g.gcPercent()
		}
		defer tuneGC(percent)()
		if err := o.Complete(cmd); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		return o.Run(cmd.Context())
	}
}
