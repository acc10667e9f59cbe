package apply

import (
	"fmt"
	"path"
	"strings"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/gitops"
)

// Overrides are the content flags of `adopt apply`: each is "" unless the
// user gave it. With a plan they may only repeat what it records; without
// one they shape the plan computed on the spot.
type Overrides struct {
	ArgoCDNamespace string
	AppsDir         string
	RepoURL         string
	DestServer      string
	DestName        string
}

// Validate rejects overrides that are bad on their own.
func (ov Overrides) Validate() error {
	switch {
	case ov.DestName != "" && ov.DestServer != "":
		return fmt.Errorf("--dest-name and --dest-server cannot be used together")
	case ov.AppsDir != "" && (path.IsAbs(ov.AppsDir) || strings.HasPrefix(path.Clean(ov.AppsDir), "..")):
		return fmt.Errorf("--apps-dir %q must be a relative path inside the repo", ov.AppsDir)
	}
	if ov.RepoURL != "" {
		l, err := gitops.ParseLocation(ov.RepoURL)
		if err != nil {
			return fmt.Errorf("--repo-url: %v", err)
		}
		if l.HasCredentials() {
			return fmt.Errorf("--repo-url %s carries credentials, which would be committed to Git: give the URL without them (Argo CD reads repository credentials from its own repository Secrets)", l.Clean())
		}
	}
	return nil
}

// Check refuses an override that contradicts the reviewed plan, naming the
// plan's value: the plan is what was reviewed, and apply writes it.
func (ov Overrides) Check(p *plan.Plan) error {
	appsDir, argoNS := Settings(p)
	refuse := func(flag, given, recorded, field string) error {
		return &ContractError{msg: fmt.Sprintf("%s %s contradicts plan %s, which records %s %q: apply writes what the plan says. Drop %s, or re-run adopt plan with the setting you want (adopt.yaml %s)", flag, given, p.ID, field, recorded, flag, field)}
	}
	if ov.ArgoCDNamespace != "" && ov.ArgoCDNamespace != argoNS {
		return refuse("--argocd-namespace", ov.ArgoCDNamespace, argoNS, "tracking.namespace")
	}
	if ov.AppsDir != "" && path.Clean(ov.AppsDir) != path.Clean(appsDir) {
		return refuse("--apps-dir", ov.AppsDir, appsDir, "appsDir")
	}
	if u := RepoURL(p); ov.RepoURL != "" && u != "" && ov.RepoURL != u {
		return refuse("--repo-url", ov.RepoURL, u, "repoURL")
	}
	for _, app := range p.Applications {
		if app.Existing != nil {
			continue
		}
		server, name := destination(p, app)
		switch {
		case ov.DestName != "" && ov.DestName != name:
			return refuse("--dest-name", ov.DestName, destinationText(server, name), "destination")
		case ov.DestServer != "" && ov.DestServer != server:
			return refuse("--dest-server", ov.DestServer, destinationText(server, name), "destination")
		}
	}
	return nil
}

func destinationText(server, name string) string {
	if name != "" {
		return "name " + name
	}
	return "server " + server
}

// Config applies the overrides to adopt.yaml for a plan computed on the
// spot, so that plan records them.
func (ov Overrides) Config(c *config.Config) {
	if ov.AppsDir != "" {
		c.AppsDir = ov.AppsDir
	}
	if ov.RepoURL != "" {
		c.RepoURL = ov.RepoURL
	}
	switch {
	case ov.DestName != "":
		c.Destination = config.Destination{Name: ov.DestName}
	case ov.DestServer != "":
		c.Destination = config.Destination{Server: ov.DestServer}
	}
}
