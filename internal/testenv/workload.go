package testenv

import (
	"bytes"
	"context"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// MountedSecret is a Secret under a workload that mounts it, for the
// proof that an operator's takeover leaves no gap (issue 45): a Pod bound
// to a node and a Deployment, each mounting the Secret as a volume,
// taking all of it as environment (envFrom) and its key by secretKeyRef,
// and a watch on the Secret opened from the resourceVersion it was read
// at. The control plane has no kubelet: what is proven is what a kubelet
// reads from the API, never a remount in a container.
type MountedSecret struct {
	k      kubernetes.Interface
	before *corev1.Secret
	pod    *corev1.Pod
	deploy *appsv1.Deployment
	events watch.Interface
	seen   int
	// last is the resourceVersion of the last event read.
	last string
}

// MountSecret stands the workload (Pod and Deployment "app") in before's
// namespace over before, a Secret as read from the API, then watches the
// Secret from before's resourceVersion, so every write to it after that
// read is seen. key is the key taken by secretKeyRef. The watch stops
// when t ends.
func (cp *ControlPlane) MountSecret(ctx context.Context, t testing.TB, before *corev1.Secret, key string) *MountedSecret {
	t.Helper()
	k := cp.Clientset()
	ns, name := before.Namespace, before.Name
	ref := corev1.LocalObjectReference{Name: name}
	spec := corev1.PodSpec{
		NodeName: "no-kubelet", // bound, as a running pod is; nothing runs it
		Containers: []corev1.Container{{
			Name: "app", Image: "registry.invalid/app:1",
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref}}},
			Env: []corev1.EnvVar{{Name: "FROM_SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: ref, Key: key}}}},
			VolumeMounts: []corev1.VolumeMount{{Name: "secret", MountPath: "/etc/secret", ReadOnly: true}},
		}},
		Volumes: []corev1.Volume{{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}}},
	}
	labels := map[string]string{"app": "app"}
	pod, err := k.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns, Labels: labels}, Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create the Pod mounting Secret %s/%s: %v", ns, name, err)
	}
	one := int32(1)
	tmpl := *spec.DeepCopy()
	tmpl.NodeName = ""
	deploy, err := k.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: tmpl}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create the Deployment mounting Secret %s/%s: %v", ns, name, err)
	}
	events, err := k.CoreV1().Secrets(ns).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: before.ResourceVersion})
	if err != nil {
		t.Fatalf("watch Secret %s/%s: %v", ns, name, err)
	}
	t.Cleanup(events.Stop)
	return &MountedSecret{k: k, before: before.DeepCopy(), pod: pod, deploy: deploy, events: events}
}

// Until reads the watch up to the event of the Secret's write at
// resourceVersion rv (the watch is the barrier: no wait, no timer) and
// fails t unless each event is MODIFIED (never DELETED or ADDED) and
// holds the same uid, type and data byte for byte as the Secret read
// before (compared here, never printed), and unless the Pod and the
// Deployment are not written at all: the same uid and resourceVersion,
// so no restart annotation, no new generation, no changed template. An
// rv already read (or before's) reads nothing more. It returns how many
// events it read, in all calls so far.
func (m *MountedSecret) Until(ctx context.Context, t testing.TB, rv string) int {
	t.Helper()
	b := m.before
	for done := rv == m.last || rv == b.ResourceVersion; !done; {
		select {
		case ev, ok := <-m.events.ResultChan():
			if !ok {
				t.Fatalf("the watch on Secret %s/%s closed before its write at resourceVersion %s", b.Namespace, b.Name, rv)
			}
			if ev.Type != watch.Modified {
				t.Fatalf("event %d on Secret %s/%s is %s: it was not kept in place", m.seen+1, b.Namespace, b.Name, ev.Type)
			}
			got, ok := ev.Object.(*corev1.Secret)
			if !ok {
				t.Fatalf("event %d holds a %T", m.seen+1, ev.Object)
			}
			m.seen++
			if got.UID != b.UID {
				t.Errorf("event %d: uid %s, want %s", m.seen, got.UID, b.UID)
			}
			if got.Type != b.Type {
				t.Errorf("event %d: type %s, want %s", m.seen, got.Type, b.Type)
			}
			if len(got.Data) != len(b.Data) {
				t.Errorf("event %d: %d keys, %d before", m.seen, len(got.Data), len(b.Data))
			}
			for key, v := range b.Data {
				if w, ok := got.Data[key]; !ok || !bytes.Equal(w, v) {
					t.Errorf("event %d: key %s missing or other (%d bytes, %d before; values not shown)", m.seen, key, len(w), len(v))
				}
			}
			var by []string
			for _, f := range got.ManagedFields {
				by = append(by, f.Manager+"/"+string(f.Operation))
			}
			t.Logf("Secret %s/%s event %d: MODIFIED at resourceVersion %s; field managers %v", b.Namespace, b.Name, m.seen, got.ResourceVersion, by)
			m.last = got.ResourceVersion
			done = got.ResourceVersion == rv
		case <-ctx.Done():
			t.Fatalf("the watch on Secret %s/%s never showed its write at resourceVersion %s", b.Namespace, b.Name, rv)
		}
	}
	pod, err := m.k.CoreV1().Pods(b.Namespace).Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.UID != m.pod.UID || pod.ResourceVersion != m.pod.ResourceVersion || !reflect.DeepEqual(pod.Spec, m.pod.Spec) {
		t.Errorf("the Pod mounting the Secret was written: uid %s (was %s), resourceVersion %s (was %s)", pod.UID, m.pod.UID, pod.ResourceVersion, m.pod.ResourceVersion)
	}
	d, err := m.k.AppsV1().Deployments(b.Namespace).Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.UID != m.deploy.UID || d.Generation != m.deploy.Generation || d.ResourceVersion != m.deploy.ResourceVersion ||
		!reflect.DeepEqual(d.Spec.Template, m.deploy.Spec.Template) {
		t.Errorf("the Deployment mounting the Secret was written: generation %d (was %d), resourceVersion %s (was %s)", d.Generation, m.deploy.Generation, d.ResourceVersion, m.deploy.ResourceVersion)
	}
	return m.seen
}
