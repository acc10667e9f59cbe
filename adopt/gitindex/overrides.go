package gitindex

import (
	"path"
	"strings"
)

// Override is one parameter override file of Argo CD's repo-server.
type Override struct {
	Path string
	Data []byte
}

// isOverrideFile says whether p is a parameter override file:
// .argocd-source.yaml, or .argocd-source-<app>.yaml for one Application.
func isOverrideFile(p string) bool {
	b := path.Base(p)
	return b == ".argocd-source.yaml" || strings.HasPrefix(b, ".argocd-source-") && strings.HasSuffix(b, ".yaml")
}

// SourceOverrides are the override files in the source directory dir that
// apply to the Application Argo CD knows as instance, in the order the
// repo-server merges them: .argocd-source.yaml, then
// .argocd-source-<instance>.yaml.
func (ix *Index) SourceOverrides(dir, instance string) []Override {
	dir = path.Clean(strings.TrimPrefix(dir, "/"))
	var out []Override
	for _, name := range []string{".argocd-source.yaml", ".argocd-source-" + instance + ".yaml"} {
		p := path.Join(dir, name)
		if b, ok := ix.overrides[p]; ok {
			out = append(out, Override{Path: p, Data: b})
		}
	}
	return out
}
