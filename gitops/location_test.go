package gitops

import (
	"strings"
	"testing"
)

// TestParseLocation: one parse for every form --repo takes, and Clean is
// the exact repoURL an Application gets: never the redacted display form.
func TestParseLocation(t *testing.T) {
	for _, tc := range []struct {
		in     string
		scheme Scheme
		clean  string
		creds  bool
	}{
		{"https://git.example.invalid/org/gitops.git", SchemeHTTP, "https://git.example.invalid/org/gitops.git", false},
		{"https://bot:tok3n-value@git.example.invalid/org/gitops.git", SchemeHTTP, "https://git.example.invalid/org/gitops.git", true},
		{"https://tok3n-value@git.example.invalid/org/gitops.git", SchemeHTTP, "https://git.example.invalid/org/gitops.git", true},
		{"ssh://git@git.example.invalid/org/gitops.git", SchemeSSH, "ssh://git@git.example.invalid/org/gitops.git", false},
		{"ssh://git@127.0.0.1:2222/gitops.git", SchemeSSH, "ssh://git@127.0.0.1:2222/gitops.git", false},
		{"ssh://git:pa55word@git.example.invalid/org/gitops.git", SchemeSSH, "ssh://git@git.example.invalid/org/gitops.git", true},
		{"git@github.com:org/gitops.git", SchemeSSH, "git@github.com:org/gitops.git", false},
		{"gitea:org/gitops.git", SchemeSSH, "gitea:org/gitops.git", false},
		{"file:///srv/git/gitops.git", SchemeFile, "file:///srv/git/gitops.git", false},
		{"/srv/git/gitops", SchemeLocal, "/srv/git/gitops", false},
		{"./gitops", SchemeLocal, "", false},
		{"dir/with:colon", SchemeLocal, "", false},
	} {
		l, err := ParseLocation(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if l.Scheme != tc.scheme || (tc.clean != "" && l.Clean() != tc.clean) || l.HasCredentials() != tc.creds {
			t.Errorf("%s: scheme %s clean %q creds %v; want %s %q %v", tc.in, l.Scheme, l.Clean(), l.HasCredentials(), tc.scheme, tc.clean, tc.creds)
		}
		if strings.Contains(l.Clean(), "***") || strings.Contains(l.Clean(), "tok3n") || strings.Contains(l.Clean(), "pa55word") {
			t.Errorf("%s: Clean %q is redacted or leaks", tc.in, l.Clean())
		}
		// The note says the credentials are stripped exactly when there are
		// some, and never holds them.
		note := l.CredentialsNote("--repo")
		if (note != "") != tc.creds || strings.Contains(note, "tok3n") || strings.Contains(note, "pa55word") {
			t.Errorf("%s: note %q", tc.in, note)
		}
	}
	for in, want := range map[string]string{"file:///srv/git/gitops.git": "/srv/git/gitops.git", "file://localhost/srv/git/a%20b": "/srv/git/a b", "/srv/git/gitops/": "/srv/git/gitops"} {
		if l, err := ParseLocation(in); err != nil || !l.OnDisk() || l.Path != want {
			t.Errorf("%s: path %q on disk %v, %v; want %q", in, l.Path, l.OnDisk(), err, want)
		}
	}
	for _, bad := range []string{"", "ftp://host/x.git", "file://otherhost/x.git", "https:///nohost.git", "https://u:p4ss@[::1"} {
		_, err := ParseLocation(bad)
		if err == nil || strings.Contains(err.Error(), "p4ss") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
