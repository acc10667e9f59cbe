{{- define "adopt.name" -}}{{ .Release.Name }}-reconcile{{- end -}}
{{- define "adopt.labels" -}}
app.kubernetes.io/name: adopt
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: reconcile
{{- end -}}
