package esoform

// Need is one permission Push needs in the Secret's namespace.
type Need struct{ Verb, Group, Resource string }

func (n Need) String() string {
	if n.Group == "" {
		return n.Verb + " " + n.Resource
	}
	return n.Verb + " " + n.Resource + "." + n.Group
}

// PushNeeds is what Push needs in the Secret's namespace: reading it, and
// creating, updating and deleting Secrets (the copy, the probe's); and
// getting, watching, creating and deleting PushSecrets and
// ExternalSecrets (the push, the probe). apply --push-secrets and
// finalize ask for them with finalize.Missing.
func PushNeeds() []Need {
	out := []Need{{"get", "", "secrets"}, {"create", "", "secrets"}, {"update", "", "secrets"}, {"delete", "", "secrets"}}
	for _, r := range []string{PushSecretGVR.Resource, ExternalSecretGVR.Resource} {
		for _, v := range []string{"get", "watch", "create", "delete"} {
			out = append(out, Need{v, Group, r})
		}
	}
	return out
}
