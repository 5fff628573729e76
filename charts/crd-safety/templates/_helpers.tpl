{{/*
The chart name, or nameOverride.
*/}}
{{- define "crd-safety.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name of the release's resources: fullnameOverride, else the release
name when it already contains the chart name, else <release>-<chart>.
Truncated to 63 characters (a DNS label, as Service names must be).
*/}}
{{- define "crd-safety.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
<chart>-<version>, for the helm.sh/chart label.
*/}}
{{- define "crd-safety.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The labels of every resource.
*/}}
{{- define "crd-safety.labels" -}}
helm.sh/chart: {{ include "crd-safety.chart" . }}
{{ include "crd-safety.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: admission-webhook
app.kubernetes.io/part-of: crd-safety
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
The labels that select the pods (immutable in a Deployment: never change them).
*/}}
{{- define "crd-safety.selectorLabels" -}}
app.kubernetes.io/name: {{ include "crd-safety.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
The ServiceAccount the pods run as.
*/}}
{{- define "crd-safety.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "crd-safety.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The Secret holding tls.crt and tls.key (and ca.crt in the generate and
cert-manager modes): in secret mode the one the user names.
*/}}
{{- define "crd-safety.tlsSecretName" -}}
{{- if eq .Values.certificates.mode "secret" }}
{{- required "certificates.secret.name is required when certificates.mode is secret" .Values.certificates.secret.name }}
{{- else }}
{{- printf "%s-tls" (include "crd-safety.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/*
The serving Certificate (cert-manager mode); the webhook configuration's
cert-manager.io/inject-ca-from annotation names it.
*/}}
{{- define "crd-safety.certificateName" -}}
{{- printf "%s-serving" (include "crd-safety.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The DNS names the API server may use for the Service: it calls
<service>.<namespace>.svc.
*/}}
{{- define "crd-safety.dnsNames" -}}
{{- $svc := include "crd-safety.fullname" . }}
{{- $ns := .Release.Namespace }}
{{- list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns) | toJson }}
{{- end }}

{{/*
Fails the render on an unknown certificates.mode.
*/}}
{{- define "crd-safety.certificatesMode" -}}
{{- $mode := .Values.certificates.mode }}
{{- if not (has $mode (list "generate" "secret" "cert-manager")) }}
{{- fail (printf "certificates.mode must be generate, secret or cert-manager, not %q" $mode) }}
{{- end }}
{{- $mode }}
{{- end }}

{{/*
certificates.mode secret: the CA the API server is to trust, base64 as the
caBundle field takes it. The value may be the PEM itself (as
`--set-file certificates.secret.caBundle=ca.crt` gives it) or its base64;
either way it must hold a certificate, so a wrong value fails the render
instead of every review.
*/}}
{{- define "crd-safety.givenCaBundle" -}}
{{- $given := required "certificates.secret.caBundle is required when certificates.mode is secret (the PEM of the CA that signed the Secret's certificate, or its base64)" .Values.certificates.secret.caBundle | trim }}
{{- $pem := $given }}
{{- if not (contains "-----BEGIN CERTIFICATE-----" $given) }}
{{- $pem = b64dec $given }}
{{- end }}
{{- if not (contains "-----BEGIN CERTIFICATE-----" $pem) }}
{{- fail "certificates.secret.caBundle holds no PEM certificate (give the CA's PEM, or its base64)" }}
{{- end }}
{{- $pem | trim | printf "%s\n" | b64enc }}
{{- end }}

{{/*
A probe of values (`list $ .Values.readinessProbe`). With
clientAuth.caSecretName the TLS handshake needs a client certificate, which
the kubelet never presents: an httpGet probe becomes a tcpSocket check of
the same port (the server accepts connections), the rest of it kept.
*/}}
{{- define "crd-safety.probe" -}}
{{- $root := index . 0 }}
{{- $probe := index . 1 }}
{{- if and $root.Values.clientAuth.caSecretName $probe.httpGet }}
{{- $probe = merge (dict "tcpSocket" (dict "port" $probe.httpGet.port)) (omit $probe "httpGet") }}
{{- end }}
{{- toYaml $probe }}
{{- end }}
