package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// ID is a short content hash naming the adoption: the cluster, and which
// objects each proposed Application adopts from which path. Measurements
// (budgets, provenance) are left out, so the same adoption keeps its ID
// while the live objects change; adopt apply names its branch after it.
func (p *Plan) ID() string {
	h := sha256.New()
	fmt.Fprintf(h, "cluster %s\n", p.Cluster.Server)
	for _, a := range p.Applications {
		fmt.Fprintf(h, "app %s %s %s\n", a.Name, a.Namespace, a.SourcePath)
		for _, o := range a.Objects {
			fmt.Fprintf(h, "  %s\n", o)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}
