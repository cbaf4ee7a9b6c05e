{{/* The image every mode runs: deploy/IMAGE's reference by default. */}}
{{- define "drainctl.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* drainctl's own namespace, where its leases and records live: the release's. Every
drainctl of the cluster names the same one (DRAINCTL_NAMESPACE in its pods, [kubernetes]
namespace on a workstation). */}}
{{- define "drainctl.namespace" -}}
{{ .Release.Namespace }}
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
