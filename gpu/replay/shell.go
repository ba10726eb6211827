package replay

import "bytes"

// A loop that logs the GPUs from a shell often leaves the shell's own words
// between its samples: nohup's, job control's, a prompt with the command,
// `set -x` tracing. They are skipped, and one note says so; any other text
// is still an error, so that nothing a log says is silently dropped.

// shellPrefixes start lines a shell writes.
var shellPrefixes = []string{"nohup: ", "+ ", "++ ", "$ ", "# ", "> ", "bash: ", "sh: ", "zsh: ", "Terminated", "Killed", "Hangup",
	"^C", "sleep ", "timeout: "}

// isShellOutput reports whether t (trimmed) is a line a shell writes: "&",
// "nohup: ignoring input", "[1] 12345", "[1]+  Done  nvidia-smi ...", a
// prompt ("user@host:~$ nvidia-smi"), `set -x` tracing ("+ sleep 60").
func isShellOutput(t []byte) bool {
	if len(t) == 0 {
		return false
	}
	if bytes.Equal(t, []byte("&")) || bytes.HasSuffix(t, []byte(" &")) {
		return true
	}
	for _, p := range shellPrefixes {
		if bytes.HasPrefix(t, []byte(p)) {
			return true
		}
	}
	if t[0] == '[' { // job control: "[1] 12345", "[1]+  Done   ./log.sh"
		end := bytes.IndexByte(t, ']')
		if end > 1 && isDigits(t[1:end]) {
			rest := bytes.TrimLeft(t[end+1:], "+- ")
			return isDigits(rest) || bytes.HasPrefix(rest, []byte("Done")) || bytes.HasPrefix(rest, []byte("Running")) ||
				bytes.HasPrefix(rest, []byte("Stopped")) || bytes.HasPrefix(rest, []byte("Exit")) || bytes.HasPrefix(rest, []byte("Terminated"))
		}
	}
	if at := bytes.IndexByte(t, '@'); at > 0 { // a prompt: "alice@node1:~$ nvidia-smi"
		if i := bytes.Index(t[at:], []byte("$ ")); i > 0 && bytes.IndexByte(t[at:at+i], ':') > 0 {
			return true
		}
	}
	return false
}

// shellNote says, once, that lines a shell wrote were skipped.
func (in *input) shellNote(line []byte) {
	if in.shellSaid {
		return
	}
	in.shellSaid = true
	in.notes.add("lines a shell wrote between the samples are skipped (the first, line %d: %q)", in.lr.line, clip(trimSpace(line), 40))
}
