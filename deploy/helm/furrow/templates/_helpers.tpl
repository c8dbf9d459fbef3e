{{/* The release's base name. */}}
{{- define "furrow.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object; call with (dict "ctx" $ "component" "serve"). */}}
{{- define "furrow.labels" -}}
app.kubernetes.io/name: furrow
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Labels that select one component's pods. */}}
{{- define "furrow.selector" -}}
app.kubernetes.io/name: furrow
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* The Secret holding the key ring: the one given, or the chart's own. */}}
{{- define "furrow.secretKeysName" -}}
{{- .Values.secretKeys.existingSecret | default (printf "%s-secret-keys" (include "furrow.fullname" .)) -}}
{{- end -}}

{{- define "furrow.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The settings every Furrow process gets; secrets come from the referenced Secret. */}}
{{- define "furrow.env" -}}
- name: FURROW_DATABASE_URL
  valueFrom:
    secretKeyRef: {name: {{ .Values.secrets.name }}, key: {{ .Values.secrets.databaseURLKey }}}
- name: FURROW_REDIS_URL
  valueFrom:
    secretKeyRef: {name: {{ .Values.secrets.name }}, key: {{ .Values.secrets.redisURLKey }}}
- name: FURROW_SECRET_KEYS
  valueFrom:
    secretKeyRef: {name: {{ include "furrow.secretKeysName" . }}, key: {{ .Values.secretKeys.key }}}
- name: FURROW_TEMPORAL_ADDRESS
  value: {{ .Values.temporal.address | quote }}
- name: FURROW_TEMPORAL_NAMESPACE
  value: {{ .Values.temporal.namespace | quote }}
- name: FURROW_HTTP_ADDR
  value: ":8080"
{{- range $k, $v := .Values.settings }}
- name: {{ $k }}
  value: {{ $v | quote }}
{{- end }}
{{- end -}}

{{/* Probes of a Furrow container on its HTTP port. */}}
{{- define "furrow.probes" -}}
readinessProbe:
  httpGet: {path: /readyz, port: http}
  periodSeconds: 5
  timeoutSeconds: 2
  failureThreshold: 3
livenessProbe:
  httpGet: {path: /healthz, port: http}
  initialDelaySeconds: 10
  periodSeconds: 10
  timeoutSeconds: 2
  failureThreshold: 6
{{- end -}}

{{/* Pod-level settings shared by every Furrow pod. */}}
{{- define "furrow.podSpec" -}}
automountServiceAccountToken: false
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
