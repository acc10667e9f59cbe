package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"strings"
)

// Seal sets the plan id: a digest of the document as the plan file
// holds it (Encode's bytes, streamed into the hash) with no id, so the
// same findings always give the same id. WriteFile seals as it writes.
func (p *Plan) Seal() error {
	p.ID = ""
	h := sha256.New()
	if err := Encode(h, p); err != nil {
		return err
	}
	p.ID = sealedID(h)
	return nil
}

// Sealed reports whether p's id is the digest of its content: as Seal
// makes it, or as adopt made it before the id was the plan file's digest
// (the document as compact JSON, until 503eb11), so a plan written before
// still loads. p is left as it was.
func (p *Plan) Sealed() (bool, error) {
	id := p.ID
	defer func() { p.ID = id }()
	if err := p.Seal(); err != nil {
		return false, err
	}
	if p.ID == id {
		return true, nil
	}
	p.ID = ""
	h := sha256.New()
	if err := p.WriteJSON(h, false); err != nil {
		return false, err
	}
	return sealedID(h) == id, nil
}

// placeholderID has the length of every id.
const placeholderID = "plan-0000000000000000"

// sealedID is the id of the digest h.
func sealedID(h hash.Hash) string { return "plan-" + hex.EncodeToString(h.Sum(nil))[:16] }

// CheckCluster refuses a plan made for another cluster: apply and finalize
// call it with the server URL (and context name) they are connected to.
func CheckCluster(p *Plan, server, context string) error {
	if norm(p.Cluster.Server) != norm(server) {
		return fmt.Errorf("plan %s was made for cluster %s (context %q), but this command is connected to %s (context %q). Run adopt plan against this cluster, or pick the plan's context with --context",
			p.ID, p.Cluster.Server, p.Cluster.Context, server, context)
	}
	return nil
}

// CheckHub refuses a management cluster (server and context, as the
// command connected to it) other than the one p was made with, and one at
// all for a plan made with Argo CD in the cluster itself.
func CheckHub(p *Plan, server, context string) error {
	switch m := p.ArgoCD.Management; {
	case m != nil && norm(m.Server) != norm(server):
		return fmt.Errorf("plan %s was made with Argo CD on %s (context %q), but --argocd-context connects to %s (context %q): pick the plan's management cluster", p.ID, m.Server, m.Context, server, context)
	case m == nil:
		return fmt.Errorf("plan %s was made with Argo CD in the cluster itself, but --argocd-context names a management cluster (%s): plan again with --argocd-context, or drop it", p.ID, server)
	}
	return nil
}

func norm(s string) string { return strings.TrimRight(strings.ToLower(strings.TrimSpace(s)), "/") }
