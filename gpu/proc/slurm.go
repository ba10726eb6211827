package proc

import "strings"

// ParseSlurmJob returns the Slurm job a process runs in, read from the
// text of its /proc/PID/cgroup file, as "slurm:JOBID", or "" when the
// process is in no Slurm job.
//
// slurmd's cgroup plugins put each job's processes under a directory
// named by the job:
//
//	cgroup v1  /slurm/uid_1000/job_4242/step_0/task_0
//	           /slurm_node01/uid_1000/job_4242/step_batch   (several slurmd a node)
//	cgroup v2  /system.slice/slurmstepd.scope/job_4242/step_0/user/task_0
//
// The job directory counts only below a Slurm root ("slurm", "slurm_NODE"
// or "slurmstepd.scope"), so a path that merely has a "job_1" in it is no
// Slurm job. Lines that do not have the "ID:controllers:path" shape are
// skipped, so any text gives a result and no error.
func ParseSlurmJob(text string) string {
	for line := range strings.Lines(text) {
		_, rest, ok := strings.Cut(strings.TrimRight(line, "\r\n"), ":")
		if !ok {
			continue
		}
		_, path, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		if id := slurmJobOfPath(path); id != "" {
			return "slurm:" + id
		}
	}
	return ""
}

// slurmJobOfPath returns the job ID of one cgroup path, or "".
func slurmJobOfPath(path string) string {
	underSlurm := false
	for seg := range strings.SplitSeq(strings.Trim(path, "/"), "/") {
		if isSlurmRoot(seg) {
			underSlurm = true
			continue
		}
		if !underSlurm {
			continue
		}
		if id, ok := strings.CutPrefix(seg, "job_"); ok && isJobID(id) {
			return id
		}
	}
	return ""
}

// isSlurmRoot reports whether seg is the cgroup that slurmd's cgroup
// plugin puts its jobs under.
func isSlurmRoot(seg string) bool {
	return seg == "slurm" || seg == "slurmstepd.scope" || strings.HasPrefix(seg, "slurm_")
}

// isJobID reports whether s is a Slurm job ID: decimal digits, as slurmd
// names the job's cgroup (an array task or a het job component has a job
// ID of its own).
func isJobID(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// maxEnviron is the most of a process's environment ParseSlurmAccount
// reads: the variables slurmd sets come first, and a process with a
// huge environment must not cost a huge read at every sample.
const maxEnviron = 64 << 10

// ParseSlurmAccount returns the Slurm account a job's process charges,
// from the text of its /proc/PID/environ file: SLURM_JOB_ACCOUNT, which
// slurmd sets in every step's environment; "" when the text does not
// have it. Variables are separated by NUL bytes; the text is read up to
// maxEnviron bytes.
func ParseSlurmAccount(environ string) string {
	if len(environ) > maxEnviron {
		environ = environ[:maxEnviron]
	}
	for v := range strings.SplitSeq(environ, "\x00") {
		if account, ok := strings.CutPrefix(v, "SLURM_JOB_ACCOUNT="); ok && isAccountName(account) {
			return account
		}
	}
	return ""
}

// isAccountName reports whether s can be a Slurm account: a short name of
// letters, digits and . _ - (sacctmgr refuses anything else).
func isAccountName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
