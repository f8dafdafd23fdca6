// Command weft is weft's command line: it runs the example agents
// (weft run), serves graphs over HTTP (weft serve), draws graphs and
// migrates databases.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/weftlabs/weft/cmd/weft/internal/cli"
)

// version is set at release time: go build -ldflags "-X main.version=v1.2.3".
var version string

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := cli.New(version).ExecuteContext(ctx)
	code := cli.ExitCode(err)
	// Whatever failed after Ctrl-C failed because of it. Read before
	// stop, which cancels ctx too.
	if err != nil && ctx.Err() != nil {
		code = cli.ExitInterrupted
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "weft:", err)
		os.Exit(code)
	}
}
