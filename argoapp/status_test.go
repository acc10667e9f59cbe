package argoapp

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/adopt-dev/adopt/adopt/redact"
)

// The kubelet writes these statuses; there is none in the test control
// plane, so the cases are the pod statuses themselves (the Pending case runs
// against the real scheduler in cmd/adopt).
func TestPodProblem(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	probe := corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health/readiness", Port: intstr.FromInt32(4000)}}}
	cases := []struct {
		name  string
		pod   corev1.Pod
		event string
		want  string
	}{
		{"crash loop with last exit", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			Name:                 "litellm",
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 5m0s restarting failed container"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}},
		}}}}, "", "container litellm: CrashLoopBackOff, last exit code 137 (OOMKilled)"},
		{"running, not ready, probe event", corev1.Pod{
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "litellm", ReadinessProbe: &probe}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "litellm", State: running}}},
		}, "Readiness probe failed: Get \"http://10.0.0.7:4000/health/readiness\": connection refused",
			"container litellm: Running but not Ready: Readiness probe failed: Get \"http://10.0.0.7:4000/health/readiness\": connection refused"},
		{"running, not ready, no event", corev1.Pod{
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "litellm", ReadinessProbe: &probe}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "litellm", State: running}}},
		}, "", "container litellm: Running but not Ready: readiness probe http-get :4000/health/readiness failing"},
		{"command does not exist", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "litellm",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "RunContainerError",
				Message: `failed to create containerd task: exec: "litellm": executable file not found in $PATH: unknown`}},
		}}}}, "", `container litellm: the container command does not exist: failed to create containerd task: exec: "litellm": executable file not found in $PATH: unknown`},
		{"pending unschedulable", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available: 3 Insufficient memory.",
		}}}}, "", "Pending: 0/3 nodes are available: 3 Insufficient memory."},
		// Issue 36: a termination message (a log tail, with
		// FallbackToLogsOnError) and a probe event can quote secrets.
		{"command missing, its message quotes a secret", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "app",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 127, Reason: "Error",
				Message: `exec: "migrate --dsn postgres://app:S3cr3tPassw0rd@db:5432/app": no such file or directory`}},
		}}}}, "", `container app: the container command does not exist: exec: "migrate --dsn postgres://app:<redacted>@db:5432/app": no such file or directory`},
		{"probe event quoting a token", corev1.Pod{
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "app", ReadinessProbe: &probe}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "app", State: running}}},
		}, `Readiness probe failed: Get "http://10.0.0.7:4000/ready?token=abc123def456": 401`,
			`container app: Running but not Ready: Readiness probe failed: Get "http://10.0.0.7:4000/ready?token=<redacted>": 401`},
		// Issue 44: a value named as a secret is masked as the one rule
		// judges it in a map, numbers included.
		{"crash message naming a password", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "app",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError",
				Message: `invalid env DB_PASSWORD=12345678 for container app`}},
		}}}}, "", `container app: CreateContainerConfigError: invalid env DB_PASSWORD=<redacted> for container app`},
		{"healthy", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "litellm", State: running, Ready: true}}}}, "", ""},
	}
	j, err := redact.DefaultJudge()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := PodProblem(j, &tc.pod, tc.event)
			if got != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
			if strings.Contains(got, "\n") {
				t.Fatalf("not one line: %q", got)
			}
		})
	}
}

func TestWaiting(t *testing.T) {
	ok := AppState{Found: true, Phase: PhaseSucceeded, Revision: "b2", History: []string{"a1", "b2"}, Sync: SyncSynced, Health: HealthHealthy}
	cases := []struct {
		name string
		s    func(AppState) AppState
		w    Want
		want string
	}{
		{"ready", func(s AppState) AppState { return s }, Want{}, ""},
		{"adoption commit deployed, later one synced", func(s AppState) AppState { return s }, Want{Revision: "a1"}, ""},
		{"adoption commit not deployed", func(s AppState) AppState { return s }, Want{Revision: "c3"}, "revision c3 not synced yet (last synced b2)"},
		{"missing", func(s AppState) AppState { return AppState{} }, Want{}, "Application not found"},
		{"never synced", func(s AppState) AppState { s.Phase, s.History = "", nil; return s }, Want{}, "no sync yet (use --sync to start one)"},
		{"sync failed", func(s AppState) AppState { s.Phase, s.Message = "Failed", "one or more objects failed"; return s }, Want{}, "last sync Failed: one or more objects failed"},
		{"degraded", func(s AppState) AppState { s.Health = "Degraded"; return s }, Want{}, "health Degraded"},
		{"degraded allowed", func(s AppState) AppState { s.Health = "Degraded"; return s }, Want{AllowHealth: []string{"Degraded"}}, ""},
		{"out of sync", func(s AppState) AppState { s.Sync = "OutOfSync"; return s }, Want{}, "sync status OutOfSync"},
	}
	for _, tc := range cases {
		if got := tc.s(ok).Waiting(tc.w); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// readerFunc is a StatusReader over a function, counting reads.
type readerFunc struct {
	reads int
	state func(n int) AppState
}

func (r *readerFunc) Application(context.Context, string) (AppState, error) {
	r.reads++
	return r.state(r.reads), nil
}

// TestWaitStopsOnAFailedSync: a sync that failed, with nothing running,
// ends the wait at the first read however long the timeout; a sync still
// running (a retry keeps the phase Running) and a sync asked for after a
// failure keep it waiting.
func TestWaitStopsOnAFailedSync(t *testing.T) {
	failed := AppState{Found: true, Phase: PhaseFailed, Message: `ConfigMap "hook" is invalid: metadata.annotations: Too long`}
	for _, phase := range []string{PhaseFailed, PhaseError} {
		r := &readerFunc{state: func(int) AppState { s := failed; s.Phase = phase; return s }}
		s, waiting, err := Wait(context.Background(), r, "a", Want{}, time.Millisecond, time.Hour, nil)
		if err != nil || r.reads != 1 || !s.Terminal() || !strings.HasPrefix(waiting, "last sync "+phase+": ") {
			t.Errorf("%s: %d reads, waiting %q, err %v", phase, r.reads, waiting, err)
		}
	}
	// Failed, then a new sync was asked for (operation set), then it succeeded.
	ok := AppState{Found: true, Phase: PhaseSucceeded, History: []string{"a1"}, Sync: SyncSynced, Health: HealthHealthy}
	r := &readerFunc{state: func(n int) AppState {
		switch n {
		case 1:
			s := failed
			s.Operation = true
			return s
		case 2:
			return AppState{Found: true, Phase: PhaseRunning, Operation: true}
		}
		return ok
	}}
	if _, waiting, err := Wait(context.Background(), r, "a", Want{}, time.Millisecond, time.Hour, nil); err != nil || waiting != "" || r.reads != 3 {
		t.Errorf("retried sync: %d reads, waiting %q, err %v", r.reads, waiting, err)
	}
}
