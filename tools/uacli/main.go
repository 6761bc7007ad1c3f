// Command uacli is a command-line OPC UA client built on uastack.dev/pkg/client:
//
//	uacli [global flags] <command> [flags] [arguments]
//
//	uacli --url opc.tcp://plc:4840 endpoints
//	uacli --url opc.tcp://plc:4840 cert trust 3F2A...      # after the first refusal
//	uacli --url opc.tcp://plc:4840 browse --depth 2 nsu=urn:uastack:demo;s=Demo
//	uacli --url opc.tcp://plc:4840 read i=2259 ns=1;s=Demo.Scalar_Int32
//	uacli --url opc.tcp://plc:4840 write ns=1;s=Demo.Array_Double '[1.5, 2]'
//	uacli --url opc.tcp://plc:4840 call ns=1;s=Demo ns=1;s=Demo.Add 1.5 2
//	UASTACK_PASSWORD=... uacli --user operator --json read ns=1;s=Demo.Protected.Setpoint
//
// Commands: endpoints, browse, read, write, call, subscribe and cert. Without
// --policy the most secure endpoint is used, so the first contact stops at the
// certificate exchange and the error says which file to move on which side.
// Output is aligned text by default and one JSON document with --json (values in
// the OPC UA JSON encoding, Part 6 §5.4). Exit codes: 0 success, 1 a service or
// status failure, 2 a usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// command is one uacli sub-command. setup declares the command's own flags on fs
// and returns the function that runs it once fs is parsed, with the positional
// arguments. The function gets a context that ends on SIGINT, and an env whose
// dial connects (once) with the global flags; it returns a usageError (exit 2),
// errReported after printing per-item failures itself (exit 1), or another error,
// which run explains (exit 1).
type command struct {
	synopsis string // arguments, e.g. "<node>..."
	summary  string // one line for the command list
	setup    func(fs *flag.FlagSet) func(ctx context.Context, e *env, args []string) error
}

// commands is the command table. Each command's file adds itself in an init with
// register; "subscribe" is registered that way by subscribe.go.
var commands = map[string]*command{}

// register adds c under name, panicking on a duplicate so that a clash shows at
// start-up rather than as a silently shadowed command.
func register(name string, c *command) {
	if _, dup := commands[name]; dup {
		panic("uacli: command registered twice: " + name)
	}
	commands[name] = c
}

// usageError is a mistake on the command line (exit code 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// usagef returns a usageError.
func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// errReported is returned by a command that has already written why it failed
// (a per-item Bad status shown in its output): exit code 1, nothing more to print.
var errReported = errors.New("uacli: failure already reported")

// run is the whole program: args without the program name, output to stdout,
// errors to stderr. It returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	g := defaultGlobals()
	top := flag.NewFlagSet("uacli", flag.ContinueOnError)
	top.SetOutput(io.Discard)
	g.register(top)
	if err := top.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(stdout, top)
			return exitOK
		}
		fmt.Fprintln(stderr, "uacli:", err)
		printUsage(stderr, top)
		return exitUsage
	}
	rest := top.Args()
	if len(rest) == 0 || rest[0] == "help" {
		w := stderr
		if len(rest) > 0 {
			w = stdout
		}
		printUsage(w, top)
		if len(rest) == 0 {
			return exitUsage
		}
		return exitOK
	}
	name := rest[0]
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "uacli: unknown command %q\n", name)
		printUsage(stderr, top)
		return exitUsage
	}
	// Global flags are accepted after the command name too.
	fs := flag.NewFlagSet("uacli "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g.register(fs)
	exec := cmd.setup(fs)
	pos, err := parseInterleaved(fs, rest[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printCommandUsage(stdout, name, cmd)
			return exitOK
		}
		fmt.Fprintf(stderr, "uacli %s: %v\n", name, err)
		printCommandUsage(stderr, name, cmd)
		return exitUsage
	}
	if g.password == "" {
		g.password = os.Getenv("UASTACK_PASSWORD")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	e := &env{g: g, stdout: stdout, stderr: stderr}
	defer e.close()
	err = exec(ctx, e, pos)
	if err == nil {
		return exitOK
	}
	if errors.Is(err, errReported) {
		return exitFailure
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "uacli %s: %v\n(uacli %s -h shows the flags)\n", name, err, name)
		return exitUsage
	}
	fmt.Fprintf(stderr, "uacli %s: %s\n", name, e.explain(err))
	return exitFailure
}

// parseInterleaved parses flags that may come before, between or after the
// positional arguments ("read ns=1;s=X --attr DataType"). A negative number is a
// positional argument ("write <node> -5"); "--" ends the flags.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos, tail []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, tail = args[:i], args[i+1:]
	}
	for len(args) > 0 {
		if isNumber(args[0]) {
			pos, args = append(pos, args[0]), args[1:]
			continue
		}
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) > 0 {
			pos, args = append(pos, args[0]), args[1:]
		}
	}
	return append(pos, tail...), nil
}

// isNumber reports whether s parses as a number (so "-5" is not a flag).
func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

func printUsage(w io.Writer, top *flag.FlagSet) {
	fmt.Fprintln(w, "usage: uacli [global flags] <command> [flags] [arguments]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nglobal flags:")
	top.SetOutput(w)
	top.PrintDefaults()
	top.SetOutput(io.Discard)
	fmt.Fprintln(w, "\nexit codes: 0 ok, 1 service or status failure, 2 usage")
}

// printCommandUsage lists the flags of a command with their defaults (not with the
// values this command line set).
func printCommandUsage(w io.Writer, name string, c *command) {
	fmt.Fprintf(w, "usage: uacli %s [flags] %s\n%s\n\nflags (global flags included):\n", name, c.synopsis, c.summary)
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	defaultGlobals().register(fs)
	c.setup(fs)
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
