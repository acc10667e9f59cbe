package testenv

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// recorder is a testing.TB that keeps what MountedSecret.Until reports
// instead of failing the test; its Fatal ends the goroutine as t's does.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	msgs []string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Logf(string, ...any)       {}
func (r *recorder) Errorf(f string, a ...any) { r.add(fmt.Sprintf(f, a...)) }
func (r *recorder) Fatalf(f string, a ...any) { r.add(fmt.Sprintf(f, a...)); runtime.Goexit() }
func (r *recorder) Fatal(a ...any)            { r.add(fmt.Sprint(a...)); runtime.Goexit() }
func (r *recorder) add(m string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, m)
}

// TestMountSecretSeesAGap: the check the three forms' no-gap tests rely
// on fails when there is a gap. On a real API server, each case writes
// the mounted Secret (or its workload) the way a bad takeover would, and
// Until must report it: a changed value (naming the key, never the
// value), the Secret deleted and created again, a restart of the
// Deployment. A write that keeps the data (a label) reports nothing.
func TestMountSecretSeesAGap(t *testing.T) {
	cp := startTestControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const value = "gap-canary-value-7Yx"
	k := cp.Clientset()
	for _, tc := range []struct {
		name  string
		write func(t *testing.T, ns string) string // the resourceVersion to read up to
		want  string
	}{
		{"a label only", func(t *testing.T, ns string) string {
			return patchSecret(t, ctx, cp, ns, `{"metadata":{"labels":{"taken":"over"}}}`)
		}, ""},
		{"a value changed", func(t *testing.T, ns string) string {
			return patchSecret(t, ctx, cp, ns, `{"stringData":{"password":"another"}}`)
		}, "key password missing or other"},
		{"deleted and created again", func(t *testing.T, ns string) string {
			if err := k.CoreV1().Secrets(ns).Delete(ctx, "db", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			s, err := k.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns}, StringData: map[string]string{"password": value}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return s.ResourceVersion
		}, "is DELETED"},
		{"the Deployment restarted", func(t *testing.T, ns string) string {
			if _, err := k.AppsV1().Deployments(ns).Patch(ctx, "app", types.StrategicMergePatchType,
				[]byte(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"now"}}}}}`), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			return patchSecret(t, ctx, cp, ns, `{"metadata":{"labels":{"taken":"over"}}}`)
		}, "the Deployment mounting the Secret was written"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := cp.Namespace(t)
			s, err := k.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns}, StringData: map[string]string{"password": value}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			m := cp.MountSecret(ctx, t, s, "password")
			rv := tc.write(t, ns)
			r := &recorder{}
			done := make(chan struct{})
			go func() {
				defer close(done)
				m.Until(ctx, r, rv)
			}()
			<-done
			got := strings.Join(r.msgs, "\n")
			if strings.Contains(got, value) {
				t.Errorf("Until's report holds the value")
			}
			switch {
			case tc.want == "" && got != "":
				t.Errorf("Until reported %q for a write that keeps the data", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("Until reported %q, want %q", got, tc.want)
			}
		})
	}
}

func patchSecret(t *testing.T, ctx context.Context, cp *ControlPlane, ns, patch string) string {
	t.Helper()
	s, err := cp.Clientset().CoreV1().Secrets(ns).Patch(ctx, "db", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s.ResourceVersion
}
