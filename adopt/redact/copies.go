package redact

import "github.com/adopt-dev/adopt/adopt/budget"

// kubecfgLastApplied is kubecfg's (and ksonnet's) copy of the object as
// last applied: like kubectl's, it holds a Secret's data in plaintext.
const kubecfgLastApplied = "kubecfg.ksonnet.io/last-applied-configuration"

// CopiesData reports whether an annotation is a tool's copy of the whole
// object as last applied (kubectl's budget.LastAppliedKey, kubecfg's):
// on a Secret it holds the data in plaintext, so no form that writes a
// Secret's metadata to Git (sealed, sops, eso) may carry it.
func CopiesData(key string) bool {
	return key == budget.LastAppliedKey || key == kubecfgLastApplied
}
