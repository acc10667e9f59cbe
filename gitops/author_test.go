package gitops

import (
	"os/exec"
	"strings"
	"testing"
)

// TestChooseAuthor: the flag wins, then the local repo's git config, then
// the global one, then adopt <adopt@localhost>, each saying where it came
// from; a malformed flag is refused.
func TestChooseAuthor(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", home)
	repo := t.TempDir()
	git := func(args ...string) {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	git("init", "-q")

	if a, note, err := ChooseAuthor("", repo); err != nil || a != (Signature{Name: "adopt", Email: "adopt@localhost"}) || !strings.Contains(note, "no --author") {
		t.Errorf("no config: %v %q %v", a, note, err)
	}
	git("config", "user.name", "Local Dev")
	git("config", "user.email", "local@example.com")
	if a, note, err := ChooseAuthor("", repo); err != nil || a != (Signature{Name: "Local Dev", Email: "local@example.com"}) || note != "from git config" {
		t.Errorf("local config: %v %q %v", a, note, err)
	}
	// A remote repo reads only the global config, which is empty here.
	if a, _, err := ChooseAuthor("", "https://git.example.com/org/gitops.git"); err != nil || a.Name != "adopt" {
		t.Errorf("remote, no global config: %v %v", a, err)
	}
	if a, note, err := ChooseAuthor("Ada Lovelace <ada@example.com>", repo); err != nil || a != (Signature{Name: "Ada Lovelace", Email: "ada@example.com"}) || note != "" {
		t.Errorf("flag: %v %q %v", a, note, err)
	}
	if _, _, err := ChooseAuthor("Ada", repo); err == nil || !strings.Contains(err.Error(), `"Name <email>"`) {
		t.Errorf("malformed flag: %v", err)
	}
}
