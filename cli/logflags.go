package cli

import (
	"errors"
	"flag"
	"log/slog"
	"time"

	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/gpu/replay"
)

// logFlags are the flags of the commands that read a GPU log (replay,
// digest --trace): what the log itself may not say.
type logFlags struct {
	columns     *string
	host        *string
	memoryTotal *string
	skipBad     *bool
	step        *time.Duration
}

// addLogFlags adds the log flags to a command's flags.
func addLogFlags(fs *flag.FlagSet) *logFlags {
	return &logFlags{
		columns: fs.String("columns", "", "the columns of a CSV log written without its header (--format=csv,noheader), in order: "+
			"the --query-gpu list, e.g. timestamp,index,memory.used,memory.total"),
		host: fs.String("host", "", "the host the log is of (default: the host the config names, the host the log names, or the log's file name)"),
		memoryTotal: fs.String("memory-total", "", "each GPU's memory, e.g. 80GiB, for a log with memory.used but no memory.total "+
			"(default: from the GPU's name where gpuwatch knows it)"),
		skipBad: fs.Bool("skip-bad", false, "skip malformed rows with a warning count instead of stopping at the first"),
		step: fs.Duration("step", 0, "how often a log without times was sampled, e.g. 2s: its samples are taken that far apart, "+
			"the last at the file's modification time (default: such a log is an error; dmon without times 1s)"),
	}
}

// hostNote says, when nothing named the log's host but its file's name
// (gpu.csv is of host "gpu"), where the name came from and how to give
// another; "" when --host, the config or the log named it.
func (lf *logFlags) hostNote(path string, cfg *config.Config, r *replay.Reader) string {
	if *lf.host != "" || (cfg != nil && cfg.Host != "") || r.Host() != replay.HostFromPath(path) {
		return ""
	}
	return " (named after the log's file; --host NAME or the config's host: names it)"
}

// open opens the log at path with the flags' options. The host is --host,
// or the config's own host: setting, or else what the log says (its
// host, or its file's name), never the name of the machine replaying it.
func (lf *logFlags) open(path string, cfg *config.Config, env *Env, logger *slog.Logger) (*replay.Reader, error) {
	if *lf.step < 0 {
		return nil, usageErrf("--step %s is negative: give how often the log was sampled, e.g. --step 2s", *lf.step)
	}
	opts := replay.Options{Host: *lf.host, Location: env.Location, Columns: *lf.columns, SkipBad: *lf.skipBad, Step: *lf.step,
		Logger: logger, Warnings: env.Stderr}
	if opts.Host == "" && cfg != nil {
		opts.Host = cfg.Host
	}
	if *lf.memoryTotal != "" {
		total, err := replay.ParseMemory(*lf.memoryTotal)
		if err != nil {
			return nil, usageErrf("--memory-total %q: %v", *lf.memoryTotal, err)
		}
		opts.MemoryTotal = total
	}
	r, err := replay.Open(path, opts)
	if errors.Is(err, replay.ErrColumns) {
		return nil, usageErrf("--columns %v", err)
	}
	if err != nil {
		return nil, replayErr(err)
	}
	return r, nil
}
