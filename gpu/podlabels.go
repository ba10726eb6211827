package gpu

import (
	"iter"
	"strings"
)

// PodLabels are some labels of a Kubernetes pod, written as a label
// selector writes them: KEY=VALUE pairs sorted by key and separated by
// commas, "owner=alice,team=vision". Neither a label's key nor its value
// may hold '=' or ',', so the text says the labels without ambiguity; and
// as a string a process carries them in one word, compared and copied as
// its other fields are.
type PodLabels string

// MaxPodLabels is the most pod label keys gpuwatch reads: each is a label
// of every per-process series an agent exports.
const MaxPodLabels = 8

// PodLabelsOf writes the labels keys[i]=values[i], keys sorted and
// distinct; a value that is empty or no label value (see IsPodLabelValue:
// outside input, from the API server or a scrape) is left out.
func PodLabelsOf(keys, values []string) PodLabels {
	n := 0
	for i, k := range keys {
		if IsPodLabelValue(values[i]) && values[i] != "" {
			n += len(k) + len(values[i]) + 2
		}
	}
	if n == 0 {
		return ""
	}
	var b strings.Builder
	b.Grow(n - 1)
	for i, k := range keys {
		if v := values[i]; v != "" && IsPodLabelValue(v) {
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(k)
			b.WriteByte('=')
			b.WriteString(v)
		}
	}
	return PodLabels(b.String())
}

// All yields each label, in the order of their keys.
func (l PodLabels) All() iter.Seq2[string, string] {
	return func(yield func(key, value string) bool) {
		rest := string(l)
		for rest != "" {
			var pair string
			pair, rest, _ = strings.Cut(rest, ",")
			k, v, _ := strings.Cut(pair, "=")
			if !yield(k, v) {
				return
			}
		}
	}
}

// Get returns the value of the label key; ok is false when the pod has
// none (or gpuwatch did not read it).
func (l PodLabels) Get(key string) (value string, ok bool) {
	for k, v := range l.All() {
		if k == key {
			return v, true
		}
	}
	return "", false
}

// IsPodLabelKey reports whether key is a Kubernetes label key: a name
// of at most 63 characters (letters, digits, '-', '_', '.', starting and
// ending with a letter or digit), after an optional prefix, a DNS
// subdomain, and '/': "owner", "example.org/owner".
func IsPodLabelKey(key string) bool {
	prefix, name, hasPrefix := strings.Cut(key, "/")
	if !hasPrefix {
		name, prefix = prefix, ""
	}
	if hasPrefix && !IsDNSSubdomain(prefix) {
		return false
	}
	return name != "" && IsPodLabelValue(name)
}

// IsPodLabelValue reports whether v is a Kubernetes label value: empty,
// or at most 63 letters, digits, '-', '_' and '.', starting and ending
// with a letter or digit.
func IsPodLabelValue(v string) bool {
	if len(v) > 63 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && ((c != '-' && c != '_' && c != '.') || i == 0 || i == len(v)-1) {
			return false
		}
	}
	return true
}

// IsDNSSubdomain reports whether s is a DNS subdomain, as Kubernetes
// names namespaces and pods: at most 253 lower-case letters, digits, '-'
// and '.', starting and ending with a letter or digit.
func IsDNSSubdomain(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && ((c != '-' && c != '.') || i == 0 || i == len(s)-1) {
			return false
		}
	}
	return true
}

// PodLabelSeriesName is the name a pod label key has as a label of a
// Prometheus series, as NVIDIA dcgm-exporter (--kubernetes-enable-pod-labels)
// writes it: every character other than a letter, digit or '_' becomes
// '_' ("app.kubernetes.io/name" is app_kubernetes_io_name). gpuwatch's own
// per-process series put "label_" before it, as kube-state-metrics does,
// so that a pod label named user is not the process's user.
func PodLabelSeriesName(key string) string {
	b := []byte(key)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// PodLabelExportName is the label of gpuwatch's per-process series that
// carries the pod label key: "label_" and its PodLabelSeriesName.
func PodLabelExportName(key string) string { return "label_" + PodLabelSeriesName(key) }
