package sealed_test

import (
	"bytes"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/adopt-dev/adopt/adopt/sealed"
)

// TestTakeoverUnderAMountingWorkload (issue 45, "takeover without a
// gap"): a Pod and a Deployment that mount the hand-applied Secret as a
// volume, take all of it as environment (envFrom) and one key by
// secretKeyRef stand throughout the takeover: the mark, the SealedSecret
// applied, the controller's unseal. This control plane has no kubelet, so
// the proof is at the API level, which is what a kubelet reads: a watch
// on the Secret opened before the mark shows only MODIFIED events up to
// the takeover's write, each with the same uid and the data byte for byte
// (compared here, never printed), never DELETED or ADDED, so a kubelet
// watching it never sees the Secret missing or changed; the Pod and the
// Deployment are not written at all (the same uid and resourceVersion, so
// no restart annotation, no new generation, no changed spec). Whether a
// real kubelet's remount is quiet is not proven here.
func TestTakeoverUnderAMountingWorkload(t *testing.T) {
	e := setup(t)
	ctx, k, d, live, s := e.ctx, e.k, e.d, e.live, e.sealed
	ns := live.Namespace

	spec := corev1.PodSpec{
		NodeName: "no-kubelet", // bound, as a running pod is; nothing runs it
		Containers: []corev1.Container{{
			Name: "app", Image: "registry.invalid/app:1",
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}}},
			Env: []corev1.EnvVar{{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}}},
			VolumeMounts: []corev1.VolumeMount{{Name: "db", MountPath: "/etc/db", ReadOnly: true}},
		}},
		Volumes: []corev1.Volume{{Name: "db", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db"}}}},
	}
	pod, err := k.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns, Labels: map[string]string{"app": "app"}}, Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	one := int32(1)
	tmplSpec := *spec.DeepCopy()
	tmplSpec.NodeName = ""
	deploy, err := k.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "app"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "app"}}, Spec: tmplSpec}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	events, err := k.CoreV1().Secrets(ns).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", "db").String(), ResourceVersion: live.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer events.Stop()

	uid, err := sealed.MarkManaged(ctx, k, ns, "db", live.ResourceVersion)
	if err != nil {
		t.Fatal(err)
	}
	apply(t, ctx, s)
	tk, err := sealed.WaitTakeover(ctx, k, d, ns, "db", uid)
	noValue(t, err)
	if err != nil {
		t.Fatalf("%v\ncontroller events: %s", err, controllerEvents(ctx, ns))
	}

	// The watch is the barrier: every event up to the takeover's write.
	n := 0
	for seen := false; !seen; {
		select {
		case ev, ok := <-events.ResultChan():
			if !ok {
				t.Fatal("the watch on the Secret closed before the takeover's write")
			}
			if ev.Type != watch.Modified {
				t.Fatalf("event %d on the Secret is %s: it was not kept in place", n+1, ev.Type)
			}
			got, ok := ev.Object.(*corev1.Secret)
			if !ok {
				t.Fatalf("event %d holds a %T", n+1, ev.Object)
			}
			n++
			if got.UID != live.UID {
				t.Errorf("event %d: uid %s, want %s", n, got.UID, live.UID)
			}
			if len(got.Data) != len(live.Data) {
				t.Errorf("event %d: %d keys, %d before", n, len(got.Data), len(live.Data))
			}
			for key, v := range live.Data {
				if !bytes.Equal(got.Data[key], v) {
					t.Errorf("event %d: key %s differs (%d bytes, %d before; values not shown)", n, key, len(got.Data[key]), len(v))
				}
			}
			seen = got.ResourceVersion == tk.ResourceVersion
		case <-ctx.Done():
			t.Fatal("the watch never showed the takeover's write")
		}
	}
	// The mark and the controller's write, at least.
	if n < 2 {
		t.Errorf("%d events up to the takeover's write, want the mark's and the controller's", n)
	}

	podAfter, err := k.CoreV1().Pods(ns).Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if podAfter.UID != pod.UID || podAfter.ResourceVersion != pod.ResourceVersion || !reflect.DeepEqual(podAfter.Spec, pod.Spec) {
		t.Errorf("the Pod was written during the takeover: uid %s (was %s), resourceVersion %s (was %s)", podAfter.UID, pod.UID, podAfter.ResourceVersion, pod.ResourceVersion)
	}
	deployAfter, err := k.AppsV1().Deployments(ns).Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if deployAfter.UID != deploy.UID || deployAfter.Generation != deploy.Generation || deployAfter.ResourceVersion != deploy.ResourceVersion ||
		!reflect.DeepEqual(deployAfter.Spec.Template, deploy.Spec.Template) {
		t.Errorf("the Deployment was written during the takeover: generation %d (was %d), resourceVersion %s (was %s)", deployAfter.Generation, deploy.Generation, deployAfter.ResourceVersion, deploy.ResourceVersion)
	}
}
