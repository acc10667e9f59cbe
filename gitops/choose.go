package gitops

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// ErrNoToken says ChooseProvider found no token; ErrPRProvider, that the
// host names no provider.
var ErrNoToken = errors.New("no pull-request token")

// ProviderChoice is what a command knows about where its pull requests
// live: the remote, --provider and --api-url, and the token it already has.
type ProviderChoice struct {
	RepoURL  string
	Provider string // "" infers it from the host
	APIURL   string // "" is the provider's default
	// Token and TokenFrom are the token already known (--git-token or
	// $ADOPT_GIT_TOKEN) and where it came from; without one the provider's
	// own variable is read.
	Token, TokenFrom string
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
}

// ChosenProvider is the provider, API and token a command talks to, with
// why that provider and where the token came from (never what it is).
type ChosenProvider struct {
	Repo             RepoRef
	Name, Why        string
	APIURL           string
	Token, TokenFrom string
}

// ChooseProvider resolves a ProviderChoice, the one rule apply and status
// share. Its errors are one sentence with the flag or variable to set.
func ChooseProvider(c ProviderChoice) (ChosenProvider, error) {
	ref, err := ParseRepoURL(c.RepoURL)
	if err != nil {
		return ChosenProvider{}, err
	}
	ch := ChosenProvider{Repo: ref, Name: c.Provider, Why: "--provider", APIURL: c.APIURL, Token: c.Token, TokenFrom: c.TokenFrom}
	if ch.Name == "" {
		ch.Name, ch.Why = InferProvider(ref.Host), "inferred from host "+ref.Host
		if ch.Name == "" {
			return ChosenProvider{}, fmt.Errorf("%w: cannot tell which provider hosts %s: pass --provider %s", ErrPRProvider, ref.Host, strings.Join(ProviderNames(), "|"))
		}
	}
	if ch.APIURL == "" {
		ch.APIURL = DefaultAPIURL(ch.Name, ref)
	}
	getenv := c.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	vars := []string{EnvToken, strings.ToUpper(ch.Name) + "_TOKEN"}
	for _, k := range vars {
		if ch.Token != "" {
			break
		}
		if v := getenv(k); v != "" {
			ch.Token, ch.TokenFrom = v, "$"+k
		}
	}
	if ch.Token == "" {
		return ChosenProvider{}, fmt.Errorf("%w for %s (%s): pass --git-token or set %s", ErrNoToken, ref.FullName(), ch.Name, strings.Join(vars, " or "))
	}
	return ch, nil
}
