{{/* The release's base name. */}}
{{- define "furrow.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/*
The name of one of the release's objects: the base name and a suffix,
call with (list $ "search-attributes"). Cut to 63 characters, the most a
Service's or a Job's name may have (a Job's becomes a label of its pods):
with a long release name the base name (up to 50) and the longest
suffixes would pass it. A name already short enough is left as it was.
*/}}
{{- define "furrow.objectName" -}}
{{- printf "%s-%s" (include "furrow.fullname" (index . 0)) (index . 1) | trunc 63 | trimSuffix "-" -}}
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

{{/*
The database's URL and password, from the Secret secrets.name. The password
comes apart, as PGPASSWORD, which pgx reads when the URL has none: written
into the URL it would need percent-encoding. Optional, for a URL that
carries it.
*/}}
{{- define "furrow.databaseEnv" -}}
- name: FURROW_DATABASE_URL
  valueFrom:
    secretKeyRef: {name: {{ .Values.secrets.name }}, key: {{ .Values.secrets.databaseURLKey }}}
- name: PGPASSWORD
  valueFrom:
    secretKeyRef: {name: {{ .Values.secrets.name }}, key: {{ .Values.secrets.databasePasswordKey }}, optional: true}
{{- end -}}

{{/* The settings every Furrow process gets; secrets come from the referenced Secret. */}}
{{- define "furrow.env" -}}
{{ include "furrow.databaseEnv" . }}
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
{{- include "furrow.checkSettings" . }}
{{- range $k, $v := .Values.settings }}
- name: {{ $k }}
  value: {{ $v | quote }}
{{- end }}
{{- end -}}

{{/*
Fails the render on a settings key the chart sets itself: a second entry of
the same name would override it silently (the last one wins), and the
secrets among them would sit in plain values. Fails it too on a FURROW_*
key Furrow does not read (furrow.settingsRead).
*/}}
{{- define "furrow.checkSettings" -}}
{{- $reserved := dict
  "FURROW_DATABASE_URL" "it comes from the Secret secrets.name, key secrets.databaseURLKey"
  "PGPASSWORD" "it comes from the Secret secrets.name, key secrets.databasePasswordKey"
  "FURROW_REDIS_URL" "it comes from the Secret secrets.name, key secrets.redisURLKey"
  "FURROW_SECRET_KEYS" "it comes from the key ring's Secret: see secretKeys"
  "FURROW_SECRET_KEYS_FILE" "the ring comes from the key ring's Secret: see secretKeys"
  "FURROW_TEMPORAL_ADDRESS" "set temporal.address"
  "FURROW_TEMPORAL_NAMESPACE" "set temporal.namespace"
  "FURROW_HTTP_ADDR" "the probes and Services use :8080"
  "FURROW_METRICS_ADDR" "the Services and the ServiceMonitor scrape :9464"
  "FURROW_TRUSTED_PROXIES" "serve trusts its proxy sidecar (127.0.0.2/32) alone"
-}}
{{- $read := regexSplit "\\s+" (include "furrow.settingsRead" . | trim) -1 -}}
{{- range $k, $_ := .Values.settings }}
{{- with get $reserved $k }}
{{- fail (printf "settings.%s: the chart sets %s itself (%s); remove it from settings" $k $k .) }}
{{- end }}
{{- if hasPrefix "FURROW_DEV_" $k }}
{{- fail (printf "settings.%s: only furrow dev reads %s, and the chart runs furrow serve and furrow worker, which ignore it; remove it from settings" $k $k) }}
{{- end }}
{{- if and (hasPrefix "FURROW_" $k) (not (has $k $read)) }}
{{- fail (printf "settings.%s: Furrow reads no setting of that name, so every pod would ignore it; see docs/operating/configuration.md for the names" $k) }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
Every FURROW_* setting cmd/furrow reads, one a line: the names of
docs/operating/configuration.md's table. settings refuses any other
FURROW_* name, a misspelling being otherwise ignored without a word.
TestHelmSettingsReadIsCmdFurrows (deploy/check) holds the list to the code.
*/}}
{{- define "furrow.settingsRead" -}}
FURROW_CONNECT_TIMEOUT
FURROW_DATABASE_URL
FURROW_DEAD_CONN_TIMEOUT
FURROW_DEVICE_OFFLINE_AFTER
FURROW_DEVICE_STALE_AFTER
FURROW_DEVICE_SWEEP_EVERY
FURROW_DEV_DATA_DIR
FURROW_DEV_TEMPORAL_ADDR
FURROW_DEV_UI_ADDR
FURROW_HTTP_ADDR
FURROW_HTTP_IDLE_TIMEOUT
FURROW_HTTP_READ_HEADER_TIMEOUT
FURROW_HTTP_READ_TIMEOUT
FURROW_HTTP_WRITE_TIMEOUT
FURROW_METRICS_ADDR
FURROW_PPROF_ADDR
FURROW_RATELIMIT_BREAKER
FURROW_RATELIMIT_TIMEOUT
FURROW_READINGS_RETENTION
FURROW_REDIS_URL
FURROW_REQUEST_TIMEOUT
FURROW_RETRY_SCHEDULE
FURROW_SECRET_KEYS
FURROW_SECRET_KEYS_FILE
FURROW_SHUTDOWN_TIMEOUT
FURROW_TEMPORAL_ADDRESS
FURROW_TEMPORAL_GZIP
FURROW_TEMPORAL_NAMESPACE
FURROW_TRUSTED_PROXIES
FURROW_WEBHOOK_ALLOW_PRIVATE
FURROW_WEBHOOK_CA_FILE
{{- end -}}

{{/*
FURROW_SHUTDOWN_TIMEOUT (settings, default 30s) in whole seconds, rounded
up. Go durations of hours, minutes, seconds and milliseconds (1m30s,
500ms); other forms fail the render rather than give a grace period that
cuts the shutdown short.
*/}}
{{- define "furrow.shutdownSeconds" -}}
{{- $v := toString (get .Values.settings "FURROW_SHUTDOWN_TIMEOUT" | default "30s") -}}
{{- $re := "^(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?(?:([0-9]+)ms)?$" -}}
{{- if or (not (regexMatch $re $v)) (eq $v "") -}}
{{- fail (printf "settings.FURROW_SHUTDOWN_TIMEOUT=%q: write it in whole h, m, s or ms (30s, 1m30s, 500ms) so that the chart can derive the pods' terminationGracePeriodSeconds" $v) -}}
{{- end -}}
{{- $h := regexReplaceAll $re $v "${1}" | default "0" | atoi -}}
{{- $m := regexReplaceAll $re $v "${2}" | default "0" | atoi -}}
{{- $s := regexReplaceAll $re $v "${3}" | default "0" | atoi -}}
{{- $ms := regexReplaceAll $re $v "${4}" | default "0" | atoi -}}
{{- add (mul $h 3600) (mul $m 60) $s (div (add $ms 999) 1000) -}}
{{- end -}}

{{/*
How long Kubernetes waits after SIGTERM before it kills a serve or worker
pod: the shutdown timeout plus 15 s for what comes around it (serve's
drain of up to 1 s before the timeout starts, the store's final flush,
the proxy sidecar's 5 s pause before it stops).
*/}}
{{- define "furrow.terminationGracePeriodSeconds" -}}
{{- add (include "furrow.shutdownSeconds" . | atoi) 15 -}}
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
{{- include "furrow.scheduling" . }}
{{- end -}}

{{/* Where pods may run: every pod of the chart, hook Jobs included. */}}
{{- define "furrow.scheduling" -}}
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
