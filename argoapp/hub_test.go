package argoapp

import "testing"

// TestHereInCluster: with no hub, an Application claims objects here only
// when it deploys to the cluster Argo CD runs in: kubernetes.default.svc
// and its name (in-cluster, or the name a cluster Secret gives it), or
// this cluster registered again by its own API server URL.
func TestHereInCluster(t *testing.T) {
	const self = "https://127.0.0.1:6443"
	cases := []struct {
		clusters     []Cluster
		server, name string
		want         bool
	}{
		{nil, "https://kubernetes.default.svc", "", true},
		{nil, "https://Kubernetes.default.svc/", "", true},
		{nil, "", "in-cluster", true},
		{nil, self, "", true},
		{nil, "https://prod.example.invalid", "", false},
		{nil, "", "prod", false},
		{[]Cluster{{Name: "local", Server: "https://kubernetes.default.svc"}}, "", "local", true},
		{[]Cluster{{Name: "local", Server: "https://kubernetes.default.svc"}}, "", "in-cluster", false},
		{[]Cluster{{Name: "me", Server: self}, {Name: "prod", Server: "https://prod.example.invalid"}}, "", "me", true},
		{[]Cluster{{Name: "me", Server: self}, {Name: "prod", Server: "https://prod.example.invalid"}}, "", "prod", false},
		{[]Cluster{{Name: "prod", Server: "https://prod.example.invalid"}}, "https://prod.example.invalid", "", false},
	}
	for _, c := range cases {
		if got := HereInCluster(c.clusters, self)(c.server, c.name); got != c.want {
			t.Errorf("clusters %v: server %q name %q: %v, want %v", c.clusters, c.server, c.name, got, c.want)
		}
	}
}
