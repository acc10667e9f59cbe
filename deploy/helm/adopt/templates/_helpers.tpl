{{- define "adopt.name" -}}{{ .Release.Name }}-reconcile{{- end -}}
{{- define "adopt.labels" -}}
app.kubernetes.io/name: adopt
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: reconcile
{{- end -}}

{{/* Where the Lease and the groups' plans live. */}}
{{- define "adopt.stateNamespace" -}}{{ .Values.stateNamespace | default .Release.Namespace }}{{- end -}}

{{/*
The built-in API groups plan reads in full: each has a type plan lists,
and none has a subresource that reads more than its object (only status,
scale and approval). The core group is listed type by type in rbac.yaml.
Groups whose every type plan skips (events.k8s.io, discovery.k8s.io,
coordination.k8s.io, certificates.k8s.io) are not read.
*/}}
{{- define "adopt.readGroups" -}}
{{- $groups := concat (list "admissionregistration.k8s.io" "apiextensions.k8s.io" "apiregistration.k8s.io" "apps" "autoscaling" "batch" "flowcontrol.apiserver.k8s.io" "networking.k8s.io" "node.k8s.io" "policy" "rbac.authorization.k8s.io" "resource.k8s.io" "scheduling.k8s.io" "storage.k8s.io" "argoproj.io") .Values.read.extraGroups -}}
{{- /* secrets.externalSecrets: plan lists the stores (and every type of the group); finalize reads the PushSecret and the ExternalSecret */ -}}
{{- if and .Values.secrets.read .Values.secrets.externalSecrets }}{{ $groups = append $groups "external-secrets.io" }}{{ end -}}
{{- toJson ($groups | uniq) -}}
{{- end -}}

{{/*
The namespaces where finalize may patch: finalize.namespaces, else
namespaces, never the Argo CD namespace nor the system namespaces (plan
never adopts there).
*/}}
{{- define "adopt.finalizeNamespaces" -}}
{{- $never := list .Values.argocdNamespace "kube-system" "kube-public" "kube-node-lease" -}}
{{- $out := list -}}
{{- range (.Values.finalize.namespaces | default .Values.namespaces) -}}
{{- if not (has . $never) }}{{ $out = append $out . }}{{ end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/* The namespaces where Secrets may be read (scoped installs). */}}
{{- define "adopt.secretNamespaces" -}}
{{- toJson (without .Values.namespaces .Values.argocdNamespace) -}}
{{- end -}}

{{/* Refuse values that would give the token more than it needs. */}}
{{- define "adopt.validate" -}}
{{- $state := include "adopt.stateNamespace" . -}}
{{- if eq $state .Values.argocdNamespace -}}
{{- fail (printf "the state namespace %q is the Argo CD namespace: the token may write nothing there (argocd-cm and argocd-rbac-cm live there). Install the chart in a namespace of its own, or set stateNamespace to one" $state) -}}
{{- end -}}
{{- if and .Values.sync (or (not .Values.argocd.server) (not .Values.argocd.tokenSecret.name)) -}}
{{- fail "sync: true starts syncs through argocd-server, as an Argo CD account whose RBAC allows only get and sync on Applications (the token has no write on Applications): set argocd.server (host:port) and argocd.tokenSecret.name (a Secret holding the account's token); see docs/reconcile.md" -}}
{{- end -}}
{{- range .Values.finalize.namespaces -}}
{{- if eq . $.Values.argocdNamespace -}}
{{- fail (printf "finalize.namespaces names the Argo CD namespace %q: the token may write nothing there" .) -}}
{{- end -}}
{{- end -}}
{{- range .Values.finalize.types -}}
{{- if eq .apiGroup "argoproj.io" -}}
{{- fail "finalize.types names argoproj.io: Argo CD's own resources are never adopted, and the token may not write them" -}}
{{- end -}}
{{- if or (has "*" .resources) (eq .apiGroup "*") -}}
{{- fail "finalize.types: name each adopted type (no \"*\")" -}}
{{- end -}}
{{- end -}}
{{- if .Values.secrets.read -}}
{{- $ctrl := splitList "/" (.Values.secrets.sealedSecretsController | default "") -}}
{{- if or (ne (len $ctrl) 2) (not (index $ctrl 0)) (not (index $ctrl 1)) -}}
{{- fail (printf "secrets.read needs secrets.sealedSecretsController as namespace/name (the Sealed Secrets controller's Service; kubeseal's default is kube-system/sealed-secrets-controller), not %q: the token may reach that one Service's proxy only" (.Values.secrets.sealedSecretsController | default "")) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.secrets.externalSecrets (not .Values.secrets.read) -}}
{{- fail "secrets.externalSecrets needs secrets.read: the push reads the live Secret (docs/secrets.md, What secrets.read means)" -}}
{{- end -}}
{{- if and (not .Values.namespaces) .Values.finalize.types (not .Values.finalize.namespaces) (not .Values.finalize.clusterWide) -}}
{{- fail "a cluster-wide install (namespaces empty) grants finalize's patches only where finalize.namespaces lists: list the namespaces whose adopted objects reconcile may finalize; or set finalize.clusterWide=true, which grants them in every namespace (with configmaps among finalize.types, the token may then patch argocd-cm and argocd-rbac-cm: Argo CD admin); or set finalize.types=[] and finalize by hand" -}}
{{- end -}}
{{- end -}}
