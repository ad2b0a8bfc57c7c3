package cli

import (
	"context"
	"fmt"
	"os"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"atrium/backend/config"
	"atrium/backend/dotenv"
	"atrium/backend/pluginhost"
	"atrium/backend/stack"
	"atrium/desktop"
)

// window makes `atrium` with no command open the desktop window (in the
// profile of --profile, showing the session of --open). A second `atrium
// --open ID` while a window runs on the same profile hands ID to it and
// exits.
func (r *runner) window(root *cobra.Command) {
	var open string
	var f stack.ModelFlags
	root.Flags().StringVar(&open, "open", "", "open the window on this session")
	modelFlags(root, &f)
	root.Args = noArgs
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		if !desktop.Available {
			if r.env.Window != nil {
				return r.env.Window()
			}
			// A build without the window (go install, go test): the help,
			// and why there is no window, rather than a failure.
			fmt.Fprintln(r.env.Stderr, "atrium: this build has no desktop window (make build adds it); the commands:")
			return cmd.Help()
		}
		r.host.kind = pluginhost.KindWindow
		opened := false
		err := r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
			opened = true
			loop, approvals, clarify, err := askingLoop(st, f)
			if err != nil {
				return err
			}
			wctx, stop := context.WithCancel(ctx)
			defer stop()
			host, err := r.services(st, "the desktop window", f)
			if err != nil {
				return err
			}
			var wg sync.WaitGroup
			defer wg.Wait()
			defer stop()
			// The window hosts the scheduler, and the gateway with
			// gateway.autostart, while it is open.
			wg.Go(func() { host.Run(wctx) })
			return desktop.Run(ctx, st, desktop.Options{Version: r.env.Version, Open: open, Loop: loop,
				Plugins: r.pluginManager(wctx, st), Ready: r.releasePlugins, Cron: host.CronService(), Approvals: approvals, Clarify: clarify})
		})
		if err == nil || opened {
			return err
		}
		// The profile could not be opened (a config.yaml that does not load,
		// a store that cannot be read). Started from the desktop's menu,
		// nobody sees stderr: the window says it, and offers to try again.
		home, herr := config.ResolveHome(r.g.home, r.g.profile)
		if herr != nil || !desktop.ShowStartError(home, err) {
			return err
		}
		return again()
	}
}

// again runs this process anew, with its arguments and the environment it
// was started with (what the profile's .env gave it is read again).
func again() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	return syscall.Exec(exe, os.Args, dotenv.Environ())
}
