package gitops

import (
	"errors"
	"strings"
	"testing"
)

func TestChooseProvider(t *testing.T) {
	env := map[string]string{"GITLAB_TOKEN": "glpat-env"}
	getenv := func(k string) string { return env[k] }
	for _, c := range []struct {
		name      string
		in        ProviderChoice
		want      ChosenProvider
		err       error
		errSubstr string
	}{
		{name: "inferred, provider variable", in: ProviderChoice{RepoURL: "https://gitlab.example.com/acme/gitops.git", Getenv: getenv},
			want: ChosenProvider{Name: "gitlab", Why: "inferred from host gitlab.example.com", APIURL: "https://gitlab.example.com/api/v4/", Token: "glpat-env", TokenFrom: "$GITLAB_TOKEN"}},
		{name: "flag token wins", in: ProviderChoice{RepoURL: "git@gitlab.example.com:acme/gitops.git", Token: "t0", TokenFrom: "--git-token", Getenv: getenv},
			want: ChosenProvider{Name: "gitlab", Why: "inferred from host gitlab.example.com", APIURL: "https://gitlab.example.com/api/v4/", Token: "t0", TokenFrom: "--git-token"}},
		{name: "named provider and API", in: ProviderChoice{RepoURL: "https://code.example.com/acme/gitops.git", Provider: "gitea", APIURL: "https://api.example.com/", Getenv: func(k string) string {
			if k == EnvToken {
				return "adopt-env"
			}
			return "gitea-env"
		}}, want: ChosenProvider{Name: "gitea", Why: "--provider", APIURL: "https://api.example.com/", Token: "adopt-env", TokenFrom: "$ADOPT_GIT_TOKEN"}},
		{name: "host names none", in: ProviderChoice{RepoURL: "https://code.example.com/acme/gitops.git", Getenv: getenv},
			err: ErrPRProvider, errSubstr: "cannot tell which provider hosts code.example.com: pass --provider gitea|github|gitlab"},
		{name: "no token", in: ProviderChoice{RepoURL: "https://gitea.example.com/acme/gitops.git", Getenv: getenv},
			err: ErrNoToken, errSubstr: "for acme/gitops (gitea): pass --git-token or set ADOPT_GIT_TOKEN or GITEA_TOKEN"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ChooseProvider(c.in)
			if c.err != nil {
				if !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.errSubstr) {
					t.Fatalf("err = %v, want %v with %q", err, c.err, c.errSubstr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got.Repo = RepoRef{}
			if got != c.want {
				t.Errorf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
	if _, err := ChooseProvider(ProviderChoice{RepoURL: "https://git.example.com/gitops.git"}); err == nil || errors.Is(err, ErrNoToken) || errors.Is(err, ErrPRProvider) {
		t.Errorf("a URL without owner/name: %v", err)
	}
}
