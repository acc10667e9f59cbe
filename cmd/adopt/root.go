package main

import (
	"context"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// run executes the adopt command line and returns the exit code.
func run(args []string, in io.Reader, out, errOut io.Writer) int {
	streams := genericiooptions.IOStreams{In: in, Out: out, ErrOut: errOut}
	root := newRootCmd(streams)
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

func newRootCmd(streams genericiooptions.IOStreams) *cobra.Command {
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
		newPlanCmd(flags, streams),
		newApplyCmd(flags, streams),
		newFinalizeCmd(flags, streams),
		newStatusCmd(flags, streams),
		newVersionCmd(streams),
	)
	return root
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

// runOptions is the RunE of every verb: Complete, Validate, Run.
func runOptions(o options) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		if err := o.Complete(cmd); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		return o.Run(cmd.Context())
	}
}
