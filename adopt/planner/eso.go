package planner

import (
	"context"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/esoform"
)

// esoStores finds, once per namespace, the External Secrets store that
// would take its Secrets (esoform.FindStores, esoform.Choose with the
// store adopt.yaml names).
type esoStores struct {
	o    Options
	cfg  *config.Config
	seen map[string]esoPick
}

type esoPick struct {
	store esoform.Store
	why   string
	err   error
}

// pick is namespace's store and why; a zero Store with why saying why
// none fits ("" when there is no store at all), or an error (a store
// named that does not fit, several that fit, a list that failed).
func (s *esoStores) pick(ctx context.Context, namespace string) (esoform.Store, string, error) {
	if p, ok := s.seen[namespace]; ok {
		return p.store, p.why, p.err
	}
	if s.seen == nil {
		s.seen = map[string]esoPick{}
	}
	var p esoPick
	dyn := s.o.Dynamic
	if dyn == nil {
		dyn = s.o.Clients.Dynamic
	}
	if dyn != nil {
		cs, err := esoform.FindStores(ctx, dyn, namespace)
		if err != nil {
			p.err = explained(s.o, err)
		} else {
			named, _ := s.cfg.SecretStore(namespace)
			p.store, p.why, p.err = esoform.Choose(cs, named)
		}
	}
	s.seen[namespace] = p
	return p.store, p.why, p.err
}

// noStore says why no store takes a namespace's Secrets.
func noStore(why string, err error) string {
	if err != nil {
		return err.Error()
	}
	if why != "" {
		return "no External Secrets store fits (" + why + ")"
	}
	return "no External Secrets store is there (no SecretStore in the namespace, no ClusterSecretStore, or the operator's CRDs are not served)"
}
