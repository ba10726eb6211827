// Package proc attributes GPU processes to people and workloads: from a PID
// it finds the user name, the command line and the container, reading the
// /proc file system, the passwd file and, for Kubernetes pods, the names of
// the kubelet's pod log folders or the Kubernetes API server.
//
// Parsing is kept apart from I/O: ParseStatusUID, ParsePasswd, ParseCmdline,
// ParseCgroup, ParseSlurmJob, ParseSlurmAccount and ParsePodLogDir take the text of one file or name, and
// Reader and PodNames do the reading.
package proc

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// Reader fills in who runs a process and in what, from a proc file system
// and a passwd file. Nothing is cached per PID, since PIDs are reused and a
// process may exec another program, change its uid or move to another
// cgroup; only the passwd file is cached, and read again when it changes.
//
// A Reader is safe for use by several goroutines.
type Reader struct {
	procRoot   string
	passwdPath string
	pods       *PodNames
	dir        PodDirectory // nil: pods are named from the log folder alone

	mu     sync.Mutex
	users  map[int]string // the passwd file by uid, nil until first read
	loaded passwdVersion  // what the file was when users was read
}

// passwdVersion tells one version of the passwd file from another without
// reading it.
type passwdVersion struct {
	modTime time.Time
	size    int64
}

// NewReader returns a Reader of the proc file system mounted at procRoot
// ("/proc" when empty) that resolves uids through the passwd file at
// passwdPath ("/etc/passwd" when empty). In a container that watches the
// host, point them at the host's files, for example "/host/proc" and
// "/host/etc/passwd". Pods are named from DefaultPodLogs (see PodNames),
// and, when pods is not nil, from pods, which gives their labels too.
func NewReader(procRoot string, passwdPath string, pods PodDirectory) *Reader {
	if procRoot == "" {
		procRoot = "/proc"
	}
	if passwdPath == "" {
		passwdPath = "/etc/passwd"
	}
	return &Reader{procRoot: procRoot, passwdPath: passwdPath, pods: NewPodNames(DefaultPodLogs), dir: pods}
}

// Attribute fills p.User, p.Command, p.Container, p.PodLabels and p.Job
// from p.PID.
//
// It is best effort: a field whose file cannot be read, because the process
// has exited or the file is not readable, is left as it was, and Attribute
// never fails. User is the name of the process's real uid, or the uid as a
// number when the passwd file does not name it (a user from LDAP, or of
// another user namespace). Command is the command line; for a kernel thread
// or a zombie, whose command line is empty, it is the command name in
// brackets, as ps shows it ("[kworker/0:1]"). Container is as ParseCgroup
// returns it, "" outside containers, except that a Kubernetes pod the pod
// log folder or the PodDirectory names is "k8s:NAMESPACE/NAME" rather
// than its UID, and PodLabels its labels the PodDirectory gives. Job is
// as ParseSlurmJob returns it, and a job's Account as ParseSlurmAccount
// reads it from the process's environment.
func (r *Reader) Attribute(p *gpu.Process) {
	if p == nil || p.PID <= 0 {
		return
	}
	dir := filepath.Join(r.procRoot, strconv.Itoa(p.PID))
	if status, err := os.ReadFile(filepath.Join(dir, "status")); err == nil {
		if uid, ok := ParseStatusUID(string(status)); ok {
			p.User = r.userName(uid)
		}
	}
	if cmd, ok := r.command(dir); ok {
		p.Command = cmd
	}
	if cgroup, err := os.ReadFile(filepath.Join(dir, "cgroup")); err == nil {
		p.Container, p.PodLabels = r.pod(ParseCgroup(string(cgroup)))
		p.Job = ParseSlurmJob(string(cgroup))
	}
	if p.Job != "" {
		// Only a job's process has an account; the environment is
		// readable by root or the process's own user.
		if environ, err := readAtMost(filepath.Join(dir, "environ"), maxEnviron); err == nil {
			p.Account = ParseSlurmAccount(environ)
		}
	}
}

// readAtMost reads the first n bytes of a file.
func readAtMost(path string, n int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, n))
	return string(b), err
}

// command returns the command line of the process whose /proc directory is
// dir, or its command name in brackets when the command line is empty.
func (r *Reader) command(dir string) (string, bool) {
	raw, err := os.ReadFile(filepath.Join(dir, "cmdline"))
	if err != nil {
		return "", false
	}
	if cmd := ParseCmdline(raw); cmd != "" {
		return cmd, true
	}
	if comm, err := os.ReadFile(filepath.Join(dir, "comm")); err == nil {
		if name, ok := bracketed(strings.TrimSuffix(string(comm), "\n")); ok {
			return name, true
		}
	}
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return "", false
	}
	if name, ok := parseStatComm(string(stat)); ok {
		return bracketed(name)
	}
	return "", false
}

// bracketed returns a command name in brackets, made printable, the way ps
// shows a process without a command line; ok is false for an empty name.
func bracketed(name string) (string, bool) {
	name = ParseCmdline([]byte(name))
	if name == "" {
		return "", false
	}
	return "[" + name + "]", true
}

// userName returns the name of uid from the passwd file, or the uid as text
// when the file does not name it. On a miss the file is read again if it
// changed since it was last read, so users added later are found.
func (r *Reader) userName(uid int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if name, ok := r.users[uid]; ok {
		return name
	}
	if info, err := os.Stat(r.passwdPath); err == nil {
		v := passwdVersion{modTime: info.ModTime(), size: info.Size()}
		if r.users == nil || !v.modTime.Equal(r.loaded.modTime) || v.size != r.loaded.size {
			if text, err := os.ReadFile(r.passwdPath); err == nil {
				r.users, r.loaded = ParsePasswd(string(text)), v
			}
		}
	}
	if name, ok := r.users[uid]; ok {
		return name
	}
	return strconv.Itoa(uid)
}
