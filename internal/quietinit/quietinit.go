// Package quietinit keeps kubectl's translations from loading while the
// program starts. Argo CD's types link kubectl's commands, whose help
// texts are translated at package init: the first one unpacks kubectl's
// message catalogue, 40 ms of every adopt command's start. adopt shows no
// kubectl help text, so the catalogue is never needed; kubectl's i18n
// returns the English text when none is loaded.
//
// Import it for its side effect, before anything that links kubectl: Go
// initializes packages in import-path order once their imports are, so
// this one runs right after kubectl's i18n and before kubectl's commands.
package quietinit

import "k8s.io/kubectl/pkg/util/i18n"

func init() {
	_ = i18n.SetLoadTranslationsFunc(func() error { return nil })
}
