{{/* Every object is named after the release. */}}
{{- define "storefront.fullname" -}}
{{- trunc 63 .Release.Name | trimSuffix "-" -}}
{{- end -}}
