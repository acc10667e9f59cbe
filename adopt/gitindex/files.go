package gitindex

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
)

// Dirs lists the repo's directories as Argo CD's repo-server lists them
// for an ApplicationSet's Git directory generator: every directory of
// the checkout but its root, leaving out hidden ones (a name starting
// with ".") and what is below them. Git holds no empty directory, so
// they are the directories of its files.
func (ix *Index) Dirs() []string {
	seen := map[string]bool{}
	for _, p := range ix.paths {
		for d := path.Dir(p); d != "." && !seen[d]; d = path.Dir(d) {
			seen[d] = true
		}
	}
	var out []string
	for d := range seen {
		if !hidden(d) {
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out
}

func hidden(dir string) bool {
	for _, s := range strings.Split(dir, "/") {
		if strings.HasPrefix(s, ".") {
			return true
		}
	}
	return false
}

// Files returns the files an ApplicationSet's Git file generator reads
// for pattern, with their contents, by path: what `git ls-files --
// <pattern>` lists, as the repo-server does by default. The pattern is a
// Git pathspec: without wildcards it names a file or every file below a
// directory; with them `*` and `?` match across "/" too, so
// `apps/*/config.json` also finds apps/a/b/config.json. A listed file
// adopt did not keep (not .yaml, .yml or .json, or over the size limit)
// is an error naming it.
func (ix *Index) Files(pattern string) (map[string][]byte, error) {
	match, err := pathspec(pattern)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, p := range ix.paths {
		if !match(p) {
			continue
		}
		b, err := ix.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("%s matches %q but adopt cannot read it (it keeps .yaml, .yml and .json files up to %d bytes): %v", p, pattern, MaxFileBytes, err)
		}
		out[p] = b
	}
	return out, nil
}

// pathspec is a matcher for a Git pathspec without magic, as git
// ls-files reads one: a literal names a path or a directory above it;
// *, ? and [...] are fnmatch wildcards that also match "/".
func pathspec(pattern string) (func(string) bool, error) {
	p := strings.TrimPrefix(pattern, "./")
	if p == "" || p == "." {
		return func(string) bool { return true }, nil
	}
	if !strings.ContainsAny(p, "*?[\\") {
		p = strings.TrimSuffix(p, "/")
		return func(f string) bool { return f == p || strings.HasPrefix(f, p+"/") }, nil
	}
	var re strings.Builder
	re.WriteString("^")
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '*':
			re.WriteString(".*")
		case '?':
			re.WriteString(".")
		case '\\':
			if i+1 < len(p) {
				i++
				re.WriteString(regexp.QuoteMeta(p[i : i+1]))
			}
		case '[':
			end := strings.IndexByte(p[i+1:], ']')
			if end < 0 {
				re.WriteString(`\[`)
				continue
			}
			class := p[i+1 : i+1+end]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			re.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += end + 1
		default:
			re.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	re.WriteString("$")
	rx, err := regexp.Compile(re.String())
	if err != nil {
		return nil, fmt.Errorf("path %q is not a pathspec Git reads: %v", pattern, err)
	}
	return rx.MatchString, nil
}
