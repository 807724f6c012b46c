{{/* Chart name, overridable. */}}
{{- define "garage-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Prefix of every object name: the release name, with the chart name unless it already holds it. */}}
{{- define "garage-operator.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Labels on every object. app.kubernetes.io/instance is also the webhook's install label:
it writes caBundles only into objects carrying it. */}}
{{- define "garage-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "garage-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: garage-operator
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component (webhook or reconciler). */}}
{{- define "garage-operator.selector" -}}
app.kubernetes.io/name: {{ include "garage-operator.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "garage-operator.webhookName" -}}
{{- printf "%s-webhook" (include "garage-operator.fullname" .) -}}
{{- end -}}

{{- define "garage-operator.reconcilerName" -}}
{{- printf "%s-reconciler" (include "garage-operator.fullname" .) -}}
{{- end -}}

{{/* The webhook Service, also named in the serving certificate. */}}
{{- define "garage-operator.webhookService" -}}
{{- include "garage-operator.webhookName" . -}}
{{- end -}}

{{- define "garage-operator.webhookCertSecret" -}}
{{- printf "%s-webhook-cert" (include "garage-operator.fullname" .) -}}
{{- end -}}

{{- define "garage-operator.reconcilerServiceAccount" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "garage-operator.reconcilerName" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "garage-operator.webhookServiceAccount" -}}
{{- if .Values.webhook.serviceAccount.create -}}
{{- default (include "garage-operator.webhookName" .) .Values.webhook.serviceAccount.name -}}
{{- else -}}
{{- required "webhook.serviceAccount.name is required when webhook.serviceAccount.create is false" .Values.webhook.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* repository:tag or repository@digest; .image is a component override, .root the chart. */}}
{{- define "garage-operator.image" -}}
{{- $repository := default .root.Values.image.repository .image.repository -}}
{{- $digest := default .root.Values.image.digest .image.digest -}}
{{- $tag := default (default .root.Chart.AppVersion .root.Values.image.tag) .image.tag -}}
{{- if $digest -}}
{{- printf "%s@%s" $repository $digest -}}
{{- else -}}
{{- printf "%s:%s" $repository $tag -}}
{{- end -}}
{{- end -}}

{{/* cert-manager or self-managed; the Go chart's webhooks.certManager.enabled selects cert-manager too. */}}
{{- define "garage-operator.certMode" -}}
{{- if or (eq .Values.certificates.mode "cert-manager") (eq (toString .Values.webhooks.certManager.enabled) "true") -}}
cert-manager
{{- else -}}
self-managed
{{- end -}}
{{- end -}}

{{/* Namespace-scoped: watchNamespaces set and watchAnyNamespace off. */}}
{{- define "garage-operator.namespaced" -}}
{{- if and .Values.watchNamespaces (not .Values.watchAnyNamespace) -}}true{{- end -}}
{{- end -}}

{{/* The managed namespaces of a namespace-scoped install: the release namespace first, deduplicated. */}}
{{- define "garage-operator.namespaces" -}}
{{- $list := list .Release.Namespace -}}
{{- range .Values.watchNamespaces -}}
{{- if not (has . $list) -}}{{- $list = append $list . -}}{{- end -}}
{{- end -}}
{{- toJson $list -}}
{{- end -}}

{{/* RUST_LOG from logLevel; the Go chart's "warning" means warn. */}}
{{- define "garage-operator.rustLog" -}}
{{- $level := toString .Values.logLevel -}}
{{- if eq $level "warning" -}}warn{{- else -}}{{ $level }}{{- end -}}
{{- end -}}

{{/* Listen address from ":port" or "host:port". */}}
{{- define "garage-operator.listen" -}}
{{- if hasPrefix ":" . -}}0.0.0.0{{ . }}{{- else -}}{{ . }}{{- end -}}
{{- end -}}

{{/* Port of a "host:port" listen address. */}}
{{- define "garage-operator.port" -}}
{{- regexFind "[0-9]+$" . -}}
{{- end -}}

{{/* Fails the render for Go chart features this chart does not ship. */}}
{{- define "garage-operator.unsupported" -}}
{{- if .Values.grafanaDashboard.enabled -}}
{{- fail "grafanaDashboard.enabled: this chart ships no Grafana dashboard; import Garage's published dashboard into Grafana directly" -}}
{{- end -}}
{{- if .Values.prometheusRules.enabled -}}
{{- fail "prometheusRules.enabled: this chart ships no PrometheusRules yet; see docs/install.md for the metrics to alert on" -}}
{{- end -}}
{{- if .Values.cosi.enabled -}}
{{- fail "cosi.enabled: the COSI driver is not part of this operator; leave cosi.enabled false" -}}
{{- end -}}
{{- if not .Values.leaderElection.enabled -}}
{{- fail "leaderElection.enabled: the reconciler always elects a leader (two writers of one Garage layout are unsafe); set it to true" -}}
{{- end -}}
{{- end -}}
