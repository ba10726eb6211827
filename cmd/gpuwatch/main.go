// Command gpuwatch watches NVIDIA GPUs and alerts people before a job runs
// out of GPU memory, when a GPU is held but idle, and when one runs hot or
// throws XID errors. Run `gpuwatch demo` to see it work without a GPU, and
// `gpuwatch --help` for the commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gpuwatch/gpuwatch/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	reload := make(chan struct{}, 1)
	go func() {
		for range hup {
			select {
			case reload <- struct{}{}:
			default: // a reload is already waiting
			}
		}
	}()
	code := cli.Main(ctx, os.Args[1:], &cli.Env{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Reload: reload,
		Location: time.Local, LookupEnv: os.LookupEnv,
	})
	stop()
	os.Exit(code)
}
