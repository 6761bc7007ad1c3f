// Command server is the uastack OPC UA server. It loads its configuration (built-in
// defaults, a YAML file, UASTACK_ variables and flags; see internal/config), opens the
// PKI, creating the application instance certificate on first start, and serves
// opc.tcp until SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Environ(), os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "uastack server:", err)
		os.Exit(1)
	}
}

// run is the whole server process: args are the flags (without the program name),
// environ the environment, logs go to stderr, and ready (if not nil) is called with the
// bound address once connections are accepted. It returns when ctx ends and the server
// has shut down.
func run(ctx context.Context, args, environ []string, stderr io.Writer, ready func(net.Addr)) error {
	cfg, err := config.Load(args, environ)
	if errors.Is(err, pflag.ErrHelp) {
		fmt.Fprintln(stderr, "usage: server [flags]")
		fmt.Fprint(stderr, config.NewFlagSet().FlagUsages())
		return nil
	}
	if err != nil {
		return err
	}
	if n := cfg.Limits.HandshakeProcessors; n > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + n))
	}
	log := newLogger(cfg.Observability, stderr)
	if f := configFile(args, environ); f != "" {
		log.Info("configuration file", "path", f)
	}
	config.LogEffective(log, cfg)
	return server.Run(ctx, cfg, log, ready)
}

// newLogger builds the process logger from the observability settings.
func newLogger(o config.Observability, w io.Writer) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.LogLevel)); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if o.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// configFile returns the YAML file Load read, if any: --config, else UASTACK_CONFIG.
func configFile(args, environ []string) string {
	fs := config.NewFlagSet()
	if err := fs.Parse(args); err == nil {
		if f, _ := fs.GetString("config"); f != "" {
			return f
		}
	}
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, config.EnvConfigFile+"="); ok {
			return v
		}
	}
	return ""
}
