package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func notImplemented(name string) error {
	return &exitError{code: ExitNotImplemented, err: fmt.Errorf("adopt %s is not implemented yet (exit code %d); use 'adopt plan' for now", name, ExitNotImplemented)}
}

func newApplyCmd(_ *genericclioptions.ConfigFlags, _ genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "apply",
		Short: "Write the proposed Applications into the GitOps repo on a branch (not implemented yet)",
		RunE:  func(*cobra.Command, []string) error { return notImplemented("apply") },
	}
}

func newFinalizeCmd(_ *genericclioptions.ConfigFlags, _ genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "finalize",
		Short: "After the first sync, remove the stale annotation and field ownership (not implemented yet)",
		RunE:  func(*cobra.Command, []string) error { return notImplemented("finalize") },
	}
}
