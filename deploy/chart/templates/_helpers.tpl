{{/* The image every mode runs: deploy/IMAGE's reference by default. */}}
{{- define "drainctl.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* drainctl's leases and records live in its own namespace: no other. */}}
{{- define "drainctl.namespace" -}}
{{- if ne .Release.Namespace "drainctl" -}}
{{- fail (printf "drainctl installs into the namespace drainctl (its leases and records live there), not %q: helm install ... -n drainctl --create-namespace" .Release.Namespace) -}}
{{- end -}}
drainctl
{{- end }}

{{/* The scheduling and resources of a mode's pod: .nodeSelector, .tolerations, .resources. */}}
{{- define "drainctl.placement" -}}
{{- with .nodeSelector }}
nodeSelector: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations: {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
