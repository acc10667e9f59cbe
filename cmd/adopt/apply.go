package main

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func newApplyCmd(_ *genericclioptions.ConfigFlags, _ genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "apply",
		Short: "Write the proposed Applications into the GitOps repo on a branch (not implemented yet)",
		RunE:  func(*cobra.Command, []string) error { return notImplemented("apply") },
	}
}
