package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Build stamps, set with -ldflags "-X main.version=... -X main.commit=...
// -X main.date=..." by make build and make release (from git: describe,
// the commit, and the commit's date, so a rebuild gives the same bytes).
var (
	version = "dev"
	commit  = ""
	date    = ""
)

// versionInfo is what `adopt version` prints.
type versionInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Date     string `json:"date,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

func currentVersion() versionInfo {
	return versionInfo{Version: version, Commit: commit, Date: date, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
}

func newVersionCmd(streams genericiooptions.IOStreams) *cobra.Command {
	output := ""
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the adopt version, commit and build date",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := currentVersion()
			switch output {
			case "json":
				b, err := json.MarshalIndent(v, "", "  ")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(streams.Out, "%s\n", b)
				return err
			case "":
				parts := []string{}
				if v.Commit != "" {
					parts = append(parts, "commit "+v.Commit)
				}
				if v.Date != "" {
					parts = append(parts, v.Date)
				}
				parts = append(parts, v.Go, v.Platform)
				_, err := fmt.Fprintf(streams.Out, "adopt %s (%s)\n", v.Version, strings.Join(parts, ", "))
				return err
			}
			return usageErrorf("unknown output format %q for version: use json, or none", output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json (default: one line)")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"json"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
