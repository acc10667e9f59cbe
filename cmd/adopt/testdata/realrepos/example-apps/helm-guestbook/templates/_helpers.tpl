{{/* tally.name: the release and the chart, at most 63 characters. */}}
{{- define "tally.name" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* tally.selector: what picks the release's pods. */}}
{{- define "tally.selector" -}}
component: tally-api
release: {{ .Release.Name }}
{{- end -}}

{{/* tally.labels: the selector, and who rendered the object. */}}
{{- define "tally.labels" -}}
{{ include "tally.selector" . }}
chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}
