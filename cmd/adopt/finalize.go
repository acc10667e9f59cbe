package main

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func newFinalizeCmd(_ *genericclioptions.ConfigFlags, _ genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "finalize",
		Short: "After the first sync, remove the stale annotation and field ownership (not implemented yet)",
		RunE:  func(*cobra.Command, []string) error { return notImplemented("finalize") },
	}
}
