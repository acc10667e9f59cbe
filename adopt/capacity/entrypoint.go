package capacity

import (
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// EntrypointWarnings flags containers whose command line repeats the image's
// entrypoint name as if the image had none: the post-mortem's
// `litellm litellm --config …`, which starts the entrypoint with its own name
// as the first argument. It is a heuristic (the image is never pulled, so its
// real entrypoint is unknown), and each finding is a warning, not an error:
//   - command or command+args whose first two words name the same program;
//   - no command (the image's entrypoint runs) and args whose first word is
//     the image's name, the usual name of its entrypoint.
func EntrypointWarnings(spec *corev1.PodSpec) []string {
	var out []string
	check := func(kind string, c *corev1.Container) {
		words := append(append([]string(nil), c.Command...), c.Args...)
		image := imageName(c.Image)
		switch {
		case len(c.Command) > 0 && len(words) > 1 && path.Base(words[0]) == path.Base(words[1]):
			out = append(out, fmt.Sprintf("%s %q: the command line starts %q %q, the same program twice; if the image's entrypoint is %s, drop the repeated word or give the binary's full path",
				kind, c.Name, words[0], words[1], path.Base(words[0])))
		case len(c.Command) == 0 && len(c.Args) > 0 && image != "" && path.Base(c.Args[0]) == image:
			out = append(out, fmt.Sprintf("%s %q: args start with %q, the image's name, and no command is set; if the image's entrypoint is %s it runs as \"%s %s …\"; drop the word from args or set command to the binary's full path",
				kind, c.Name, c.Args[0], image, image, strings.Join(c.Args[:1], " ")))
		}
	}
	for i := range spec.InitContainers {
		check("init container", &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		check("container", &spec.Containers[i])
	}
	return out
}

// imageName is the last path segment of an image reference without tag or
// digest: "ghcr.io/berriai/litellm:main-v1" gives "litellm".
func imageName(ref string) string {
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	ref = path.Base(ref)
	if i := strings.Index(ref, ":"); i >= 0 {
		ref = ref[:i]
	}
	return ref
}
