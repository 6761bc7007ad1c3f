package report

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// Main runs one suite as a command: run gets a context that SIGINT or SIGTERM cancels and a
// temporary folder that is removed afterwards; the report's files go to out, its
// Markdown to standard output. A failure is printed with the suite's name and exits 1.
func Main(suite, out string, run func(ctx context.Context, dir string) (*Report, error)) {
	if err := mainErr(suite, out, run); err != nil {
		fmt.Fprintln(os.Stderr, suite+":", err)
		os.Exit(1)
	}
}

// Signals end a suite: its context is cancelled, so that the servers it started are stopped
// and its temporary folder removed, whether it is interrupted at the terminal or terminated
// by a script.
var Signals = []os.Signal{os.Interrupt, syscall.SIGTERM}

func mainErr(suite, out string, run func(ctx context.Context, dir string) (*Report, error)) error {
	ctx, stop := signal.NotifyContext(context.Background(), Signals...)
	defer stop()
	dir, err := os.MkdirTemp("", "uastack-bench-"+suite+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	r, err := run(ctx, dir)
	if err != nil {
		return err
	}
	paths, err := r.WriteAll(out)
	if err != nil {
		return err
	}
	fmt.Print(r.Markdown())
	fmt.Fprintln(os.Stderr, "wrote", strings.Join(paths, ", "))
	return nil
}

// Finish ends a command whose run may measure part of what it set out to before it
// fails: the report r, when there is one, goes to standard output and, when out is set,
// its files to out; err, or an error writing them, is printed with the suite's name and
// exits 1.
func Finish(suite, out string, r *Report, err error) {
	if r != nil {
		fmt.Print(r.Markdown())
		if out != "" {
			paths, werr := r.WriteAll(out)
			err = errors.Join(err, werr)
			fmt.Fprintln(os.Stderr, "wrote", strings.Join(paths, ", "))
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, suite+":", err)
		os.Exit(1)
	}
}
