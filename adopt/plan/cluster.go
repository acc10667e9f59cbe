package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Seal sets the plan id: a digest of the document (as JSON, streamed into
// the hash) without the id, so the same findings always give the same id.
func (p *Plan) Seal() error {
	p.ID = ""
	h := sha256.New()
	if err := p.WriteJSON(h, false); err != nil { // json.Encoder's bytes, streamed
		return err
	}
	p.ID = "plan-" + hex.EncodeToString(h.Sum(nil))[:16]
	return nil
}

// CheckCluster refuses a plan made for another cluster: apply and finalize
// call it with the server URL (and context name) they are connected to.
func CheckCluster(p *Plan, server, context string) error {
	if norm(p.Cluster.Server) != norm(server) {
		return fmt.Errorf("plan %s was made for cluster %s (context %q), but this command is connected to %s (context %q). Run adopt plan against this cluster, or pick the plan's context with --context",
			p.ID, p.Cluster.Server, p.Cluster.Context, server, context)
	}
	return nil
}

func norm(s string) string { return strings.TrimRight(strings.ToLower(strings.TrimSpace(s)), "/") }
