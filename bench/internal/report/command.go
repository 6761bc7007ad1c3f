package report

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
)

// Main runs one suite as a command: run gets a context that SIGINT cancels and a
// temporary folder that is removed afterwards; the report's files go to out, its
// Markdown to standard output. A failure is printed with the suite's name and exits 1.
func Main(suite, out string, run func(ctx context.Context, dir string) (*Report, error)) {
	if err := mainErr(suite, out, run); err != nil {
		fmt.Fprintln(os.Stderr, suite+":", err)
		os.Exit(1)
	}
}

func mainErr(suite, out string, run func(ctx context.Context, dir string) (*Report, error)) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
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
