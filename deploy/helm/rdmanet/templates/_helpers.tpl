{{/*
The objects' name: the release name when it contains "rdmanet" (release "rdmanet" gives the
names of the kustomize base: DaemonSet rdmanet, CronJob rdmanet-reconcile), else
"<release>-rdmanet"; fullnameOverride replaces it. 63 characters at most (DNS label).
*/}}
{{- define "rdmanet.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The namespace of the namespaced objects. */}}
{{- define "rdmanet.namespace" -}}
{{- .Values.namespace.name | default .Release.Namespace -}}
{{- end -}}

{{/* The container image, the same for every container. */}}
{{- define "rdmanet.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* image and imagePullPolicy lines of a container. */}}
{{- define "rdmanet.imageFields" -}}
image: {{ include "rdmanet.image" . | quote }}
{{- with .Values.image.pullPolicy }}
imagePullPolicy: {{ . }}
{{- end }}
{{- end -}}

{{/*
Every object's labels: the kustomize base's two (name, part-of) and Helm's own. Selectors and
pod templates carry only name and component, as in the base, so that a DaemonSet installed with
kustomize keeps its (immutable) selector when Helm takes it over.
*/}}
{{- define "rdmanet.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/part-of: rdmanet
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* true when the networks use the Kubernetes datastore ("" = false). */}}
{{- define "rdmanet.kubeDatastore" -}}
{{- if eq .Values.datastore.type "kubernetes" }}true{{ end -}}
{{- end -}}

{{/* The directory of the provider's socket: the host directory both DaemonSets mount. */}}
{{- define "rdmanet.socketDir" -}}
{{- dir .Values.dranetProvider.socketPath -}}
{{- end -}}
