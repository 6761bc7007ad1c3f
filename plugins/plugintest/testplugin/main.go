// Command testplugin is the plugin process of the process host's tests: the manager of
// package testmgr, served with package sdk/process. Run with the argument
// "-protocol=N" it speaks go-plugin protocol version N instead, to test a host that
// refuses it.
package main

import (
	"os"
	"strconv"
	"strings"

	"github.com/hashicorp/go-plugin"

	"uastack.dev/plugins/internal/procwire"
	"uastack.dev/plugins/plugintest/testplugin/testmgr"
	"uastack.dev/plugins/sdk/process"
)

func main() {
	for _, a := range os.Args[1:] {
		if v, ok := strings.CutPrefix(a, "-protocol="); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				os.Exit(2)
			}
			otherProtocol(uint(n))
			return
		}
	}
	process.Serve(testmgr.New)
}

// otherProtocol serves nothing useful under protocol version n.
func otherProtocol(n uint) {
	hs := procwire.Handshake
	hs.ProtocolVersion = n
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: hs,
		Plugins:         procwire.Plugins(unserved{}),
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}

// unserved registers the service and serves nothing: a host of this protocol version
// refuses the plugin before it calls.
type unserved struct{ procwire.Server }
