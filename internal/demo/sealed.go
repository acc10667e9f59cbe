package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/sealed"
	"github.com/adopt-dev/adopt/internal/demo/estate"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// sealedSecrets starts the real Sealed Secrets controller, the cluster's
// secrets operator, watching the estate's namespaces (which must exist:
// after seed), and returns it with the adopt.yaml the demo plans with:
// the estate's, leaving the controller's own installation out too (its
// namespace, Namespace, ClusterRole and ClusterRoleBinding, which belong
// in an Application of their own, like Argo CD's). plan finds the
// controller by its Service's label, as it would on any cluster.
func (d *demo) sealedSecrets(ctx context.Context) (*testenv.SealedSecrets, string, error) {
	say("The real Sealed Secrets controller %s as the cluster's secrets operator (built once, cached in ~/.cache/adopt)", testenv.SealedSecretsVersion)
	ss, err := testenv.StartSealedSecrets(ctx, d.cp, estate.Namespaces...)
	if err != nil {
		return nil, "", err
	}
	fmt.Printf("Service %s/%s, watching %s; its certificate is served through the API server, as kubeseal fetches it\n",
		ss.Namespace, ss.Service, strings.Join(ss.Watched[1:], ", "))
	cfg := estate.AdoptConfig + fmt.Sprintf(`- namespaces: [%[1]s]
- kinds: [Namespace]
  names: [%[1]s]
- kinds: [ClusterRole, ClusterRoleBinding]
  names: ["adopt-testenv:%[1]s"]
`, ss.Namespace)
	d.phase("sealed secrets controller")
	return ss, cfg, nil
}

// secretBefore reads the estate's hand-applied Secret, to compare after
// the takeover. Its data stays in memory and is never printed.
func (d *demo) secretBefore(ctx context.Context) (*corev1.Secret, error) {
	s, err := d.cp.Clientset().CoreV1().Secrets(estate.SecretNamespace).Get(ctx, estate.SecretName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read Secret %s/%s: %w", estate.SecretNamespace, estate.SecretName, err)
	}
	return s, nil
}

// proveTakeover checks, and says, that the controller took the Secret
// over in place: the same uid, the data byte for byte (compared here,
// never printed), the SealedSecret its controller, last-applied gone.
func (d *demo) proveTakeover(ctx context.Context, before *corev1.Secret) error {
	after, err := d.secretBefore(ctx)
	if err != nil {
		return err
	}
	ref := fmt.Sprintf("Secret %s/%s", after.Namespace, after.Name)
	same := len(after.Data) == len(before.Data)
	for k, v := range before.Data {
		same = same && bytes.Equal(after.Data[k], v)
	}
	owner := metav1.GetControllerOf(after)
	_, lastApplied := after.Annotations[budget.LastAppliedKey]
	switch {
	case after.UID != before.UID:
		return fmt.Errorf("%s has uid %s, %s before: it was replaced, not taken over", ref, after.UID, before.UID)
	case !same:
		return fmt.Errorf("%s: its data differs after the takeover (values not shown)", ref)
	case owner == nil || owner.Kind != sealed.Kind || owner.Name != after.Name:
		return fmt.Errorf("%s: no SealedSecret controls it", ref)
	case lastApplied:
		return fmt.Errorf("%s still carries %s", ref, budget.LastAppliedKey)
	}
	fmt.Printf("%s: uid %s before and after; its %d key(s) byte-identical (compared in memory, never printed); controlled by SealedSecret %s; no last-applied-configuration (the copy of its data is gone)\n",
		ref, after.UID, len(after.Data), owner.Name)
	return nil
}

// adoptCapture is adopt that also returns what it printed on stdout.
func (d *demo) adoptCapture(ctx context.Context, env []string, args ...string) (string, error) {
	fmt.Printf("$ adopt %s\n\n", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, d.adoptBin, append([]string{"--kubeconfig", d.cp.Kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.MultiWriter(os.Stdout, &out), os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("adopt %s: %w", args[0], err)
	}
	return out.String(), nil
}
