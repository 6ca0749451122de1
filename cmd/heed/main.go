// Command heed retries work responsibly and explains its retry policies.
// Run "heed help" for its commands; the code is in internal/cli.
package main

import (
	"context"
	"os"

	"github.com/heed-go/heed/cmd/heed/internal/cli"
	"github.com/heed-go/heed/cmd/heed/internal/signals" // catches SIGINT and SIGTERM from the start
)

func main() {
	ctx, stop := signals.NotifyContext(context.Background())
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
