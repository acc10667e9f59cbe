// Command demo is the built-in local demo behind `make demo`: it starts the
// real local control plane from internal/testenv, seeds it with the
// incident's estate using the real kubectl, runs the adopt binary against it
// and narrates. It stops everything on exit, Ctrl-C included.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/adopt-dev/adopt/internal/testenv"
)

func main() {
	adoptBin := flag.String("adopt", "bin/adopt", "path to the adopt binary")
	flag.Parse()
	if err := run(*adoptBin); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

func say(format string, a ...any) {
	if _, noColor := os.LookupEnv("NO_COLOR"); noColor {
		fmt.Printf("\n==> "+format+"\n", a...)
		return
	}
	fmt.Printf("\n\033[1m==> "+format+"\033[0m\n", a...)
}

func run(adoptBin string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	say("Starting a real kube-apiserver and etcd on loopback (built once, cached in ~/.cache/adopt)")
	start := time.Now()
	cp, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		return err
	}
	defer cp.Stop()
	fmt.Printf("control plane %s ready in %s\n", cp.Server, time.Since(start).Round(time.Millisecond))

	say("Seeding the incident's estate with the real kubectl, the way the runbook did")
	if err := Seed(ctx, cp, os.Stdout); err != nil {
		return err
	}

	say("adopt plan")
	fmt.Printf("$ adopt --kubeconfig %s plan\n\n", cp.Kubeconfig)
	cmd := exec.CommandContext(ctx, adoptBin, "--kubeconfig", cp.Kubeconfig, "plan")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("adopt plan: %w", err)
	}

	say("On your own cluster")
	fmt.Println(strings.TrimPrefix(`
  adopt plan                          # uses your current kubectl context
  adopt plan --context prod -n litellm-test -o yaml
  adopt plan --out plan.yaml          # the reviewable plan file
adopt only reads the cluster during plan. It needs list and get on the types it
scans; see examples/rbac for a read-only ClusterRole.`, "\n"))
	if os.Getenv("DEMO_KEEP") != "" {
		say("DEMO_KEEP is set: the control plane stays up until Ctrl-C. KUBECONFIG=%s", cp.Kubeconfig)
		<-ctx.Done()
	}
	say("Stopping the control plane")
	return nil
}
