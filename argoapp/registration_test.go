package argoapp

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
)

// TestRestConfig: a cluster Secret's config (Argo CD's ClusterConfig JSON)
// becomes the connection Argo CD would make, field by field; what adopt
// cannot use says why, and no message or printed Registration quotes a
// credential.
func TestRestConfig(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	const server = "https://10.0.0.1:6443"
	c, why := restConfig(server, []byte(`{"bearerToken":"tok-CANARY","username":"u","password":"pw-CANARY","tlsClientConfig":{"insecure":true,"serverName":"api.internal","caData":"`+b64("ca-CANARY")+`","certData":"`+b64("cert-CANARY")+`","keyData":"`+b64("key-CANARY")+`"},"disableCompression":true}`))
	if why != "" || c == nil {
		t.Fatalf("unusable: %s", why)
	}
	if c.Host != server || c.BearerToken != "tok-CANARY" || c.Username != "u" || c.Password != "pw-CANARY" || !c.Insecure || c.ServerName != "api.internal" ||
		string(c.CAData) != "ca-CANARY" || string(c.CertData) != "cert-CANARY" || string(c.KeyData) != "key-CANARY" || !c.DisableCompression || c.ExecProvider != nil {
		t.Errorf("rest.Config %s", c)
	}
	r := Registration{Cluster: Cluster{Name: "eu-1", Server: server}, config: c}
	if got := r.RESTConfig(); got == c || got.BearerToken != c.BearerToken {
		t.Errorf("RESTConfig is not a copy of the connection")
	}
	if s := fmt.Sprintf("%v %+v %#v", r, r, r); strings.Contains(s, "CANARY") {
		t.Errorf("a printed Registration shows a credential: %s", s)
	}

	for _, c := range []struct {
		server, config, want string
	}{
		{server, `{"execProviderConfig":{"command":"argocd-k8s-auth","args":["gcp"],"env":{"K":"v-CANARY"}}}`, "exec plugin auth (execProviderConfig), which adopt does not run"},
		{server, `{"awsAuthConfig":{"clusterName":"eks-1","roleARN":"arn:aws:iam::1:role/CANARY"}}`, "AWS IAM auth (awsAuthConfig)"},
		{InClusterServer, `{"tlsClientConfig":{"insecure":false}}`, "in-cluster entry"},
		{server, `{"bearerToken": tok-CANARY`, "not Argo CD cluster config JSON"},
		{"https://user:pw-CANARY@10.0.0.1", `{}`, "without credentials"},
		{server, `{"bearerToken":"tok-CANARY","proxyUrl":"ftp://u:pw-CANARY@proxy"}`, "proxyUrl is not an http, https or socks5 URL"},
	} {
		got, why := restConfig(c.server, []byte(c.config))
		if got != nil || !strings.Contains(why, c.want) || strings.Contains(why, "CANARY") {
			t.Errorf("%s %s: %v, %q, want %q", c.server, c.config, got, why, c.want)
		}
	}
}

// TestSelectAndFind: label selection over the registrations, an unmatched
// selector naming what is registered, and the reconnection check.
func TestSelectAndFind(t *testing.T) {
	regs := []Registration{
		{Cluster: Cluster{Name: "eu-1", Server: "https://eu-1", Labels: map[string]string{"env": "prod"}}, Secret: "argocd/c1"},
		{Cluster: Cluster{Name: "eu-2", Server: "https://eu-2", Labels: map[string]string{"env": "dev"}}, Secret: "argocd/c2", Unusable: "its config uses exec plugin auth"},
	}
	for sel, want := range map[string]string{"env=prod": "eu-1", "": "eu-1,eu-2", "env in (prod,dev)": "eu-1,eu-2", "env!=prod": "eu-2"} {
		got, err := Select(regs, sel)
		var names []string
		for _, r := range got {
			names = append(names, r.Name)
		}
		if err != nil || strings.Join(names, ",") != want {
			t.Errorf("Select %q: %v, %v, want %s", sel, names, err, want)
		}
	}
	if _, err := Select(regs, "env=qa"); err == nil || !strings.Contains(err.Error(), `no registered cluster's Secret matches the label selector "env=qa" (registered: eu-1 env=prod; eu-2 env=dev)`) {
		t.Errorf("unmatched: %v", err)
	}
	if _, err := Select(regs, "env=="); err == nil {
		t.Errorf("a bad selector was accepted")
	}
	if r, err := FindRegistration(regs, "eu-1", "https://EU-1/"); err != nil || r.Secret != "argocd/c1" {
		t.Errorf("FindRegistration eu-1: %+v, %v", r, err)
	}
	for name, want := range map[string]string{"eu-3": "cluster eu-3 is no longer registered with Argo CD", "eu-2": "exec plugin auth"} {
		if _, err := FindRegistration(regs, name, "https://"+name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("FindRegistration %s: %v, want %q", name, err, want)
		}
	}
	if _, err := FindRegistration(regs, "eu-1", "https://eu-9"); err == nil || !strings.Contains(err.Error(), "registers eu-1 with server https://eu-1, but the plan was made for https://eu-9: the registration changed") {
		t.Errorf("changed server: %v", err)
	}
}
