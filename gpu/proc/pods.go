package proc

import (
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// DefaultPodLogs is where the kubelet keeps one folder of logs per pod,
// named NAMESPACE_NAME_UID. In a container, mount the node's folder at
// the same path (read-only) for pods to be named.
const DefaultPodLogs = "/var/log/pods"

// PodNames resolves the pod UIDs that cgroup paths carry to the pods'
// namespaces and names, from the names of the folders in the kubelet's
// pod log folder: no API server, no credentials, nothing but a read-only
// mount. The folder is listed again only when it changed (a pod came or
// went) and a UID is not yet known.
//
// A PodNames is safe for use by several goroutines.
type PodNames struct {
	dir string

	mu     sync.Mutex
	byUID  map[string]string // "namespace/name" by pod UID; nil until first listed
	listed time.Time         // the folder's modification time when last listed
}

// NewPodNames returns a PodNames of the pod log folder dir.
func NewPodNames(dir string) *PodNames { return &PodNames{dir: dir} }

// Name returns "namespace/name" of the pod with the given UID (lower-case,
// with dashes, as ParseCgroup gives it); ok is false when the folder does
// not name it (not a node of a Kubernetes cluster, the folder not mounted,
// or the pod already gone).
func (p *PodNames) Name(uid string) (name string, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if name, ok := p.byUID[uid]; ok {
		return name, true
	}
	info, err := os.Stat(p.dir)
	if err != nil || (p.byUID != nil && info.ModTime().Equal(p.listed)) {
		return "", false
	}
	entries, err := os.ReadDir(p.dir)
	if err != nil {
		return "", false
	}
	p.byUID, p.listed = make(map[string]string, len(entries)), info.ModTime()
	for _, e := range entries {
		if ns, pod, uid, ok := ParsePodLogDir(e.Name()); ok && e.IsDir() {
			p.byUID[uid] = ns + "/" + pod
		}
	}
	name, ok = p.byUID[uid]
	return name, ok
}

// ParsePodLogDir splits the name of a pod's log folder, NAMESPACE_NAME_UID,
// into its parts. Namespaces and pod names are DNS names, which have no
// underscore, so the split is unambiguous; ok is false for a name of
// another shape.
func ParsePodLogDir(dirName string) (namespace, pod, uid string, ok bool) {
	parts := strings.Split(dirName, "_")
	if len(parts) != 3 || !gpu.IsDNSSubdomain(parts[0]) || !gpu.IsDNSSubdomain(parts[1]) {
		return "", "", "", false
	}
	uid = strings.ToLower(parts[2])
	if len(uid) < 32 || !isHexOrDash(uid) {
		return "", "", "", false
	}
	return parts[0], parts[1], uid, true
}

// PodDirectory names the pods of this node, by UID, with the labels the
// config asks for: the Kubernetes API server (gpu/kube). It answers from
// what it has, without waiting.
type PodDirectory interface {
	Pod(uid string) (namespace, name string, labels gpu.PodLabels, ok bool)
}

// pod returns container with the pod UID of a "k8s:UID" or "k8s:UID/ID"
// container replaced by the pod's "namespace/name", and the pod's
// labels: the name from the pod log folder, else from the directory, and
// the labels from the directory. Other containers, and pods neither
// names, are returned as they are.
func (r *Reader) pod(container string) (string, gpu.PodLabels) {
	rest, ok := strings.CutPrefix(container, "k8s:")
	if !ok {
		return container, ""
	}
	uid, _, _ := strings.Cut(rest, "/")
	named := container
	if name, ok := r.pods.Name(uid); ok {
		named = "k8s:" + name
	}
	if r.dir == nil {
		return named, ""
	}
	ns, name, labels, ok := r.dir.Pod(uid)
	if !ok {
		return named, ""
	}
	if named == container {
		named = "k8s:" + ns + "/" + name
	}
	return named, labels
}
