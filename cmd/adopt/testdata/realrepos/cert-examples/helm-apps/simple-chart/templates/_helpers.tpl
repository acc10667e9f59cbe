{{/* The objects are named after the release alone. */}}
{{- define "storefront.name" -}}
{{- .Release.Name | trunc 63 -}}
{{- end -}}

{{- define "storefront.labels" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: storefront
{{- end -}}
