package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"atrium/app"
	"atrium/backend/apperr"
	"atrium/backend/pluginhost"
	"atrium/backend/stack"
	"atrium/backend/turns"
	"atrium/frontend"
)

// DefaultServeAddr is where `atrium serve` listens without --addr.
const DefaultServeAddr = "127.0.0.1:8765"

func (r *runner) serveCmd() *cobra.Command {
	var f stack.ModelFlags
	var addr string
	var allowRemote bool
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve the dashboard and its JSON API (loopback only unless --allow-remote)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			remote, err := checkServeAddr(addr, allowRemote)
			if err != nil {
				return err
			}
			if remote {
				fmt.Fprintf(r.env.Stderr, "atrium: warning: serving on non-loopback address %s: anyone who can reach it and has the token controls this profile\n", addr)
			}
			r.host.kind = pluginhost.KindServe
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error { return r.serve(ctx, st, f, addr) })
		},
	}
	c.Flags().StringVar(&addr, "addr", DefaultServeAddr, "address to listen on (host:port; port 0 picks one)")
	c.Flags().BoolVar(&allowRemote, "allow-remote", false, "allow listening on a non-loopback address")
	modelFlags(c, &f)
	return c
}

// askingLoop is the turn loop of a window or `atrium serve`: a tool call a
// plugin wants approved, and the clarify tool's question, are asked of the
// person there, through the returned Approvals and Clarifications (the
// scheduler's loop and the gateway's have their own: nobody, and the
// sender).
func askingLoop(st *stack.Stack, f stack.ModelFlags) (*turns.Loop, *app.Approvals, *app.Clarifications, error) {
	approvals := app.NewApprovals(0) // each ask names approvals.timeout as config.yaml has it then
	clarify := app.NewClarifications()
	f.Approve, f.Clarify = approvals.Ask, clarify.Ask
	loop, err := st.Loop(f)
	return loop, approvals, clarify, err
}

// serve blocks until SIGINT/SIGTERM (or ctx ends), then shuts the server
// down; r.with closes the stack after, which waits for hook deliveries.
func (r *runner) serve(ctx context.Context, st *stack.Stack, f stack.ModelFlags, addr string) error {
	loop, approvals, clarify, err := askingLoop(st, f)
	if err != nil {
		return err
	}
	token, err := newToken()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return apperr.Wrap(apperr.Invalid, err, "listen on %s", addr)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	host, err := r.services(st, "atrium serve", f)
	if err != nil {
		return err
	}
	hub := app.NewHub()
	a := app.New(ctx, st, loop, r.pluginManager(ctx, st),
		app.Options{Platform: app.PlatformDashboard, Version: r.env.Version, Emitter: hub, Cron: host.CronService(), Approvals: approvals, Clarify: clarify})
	srv := &http.Server{Handler: app.NewHandler(a, token, app.Serving{Assets: frontend.Dist(), Hub: hub}), ReadHeaderTimeout: 10 * time.Second,
		// Requests end with the server, so open event streams do not hold up
		// the shutdown.
		BaseContext: func(net.Listener) context.Context { return ctx }}
	var wg sync.WaitGroup
	wg.Go(func() { st.Maintenance.Loop(ctx) })
	wg.Go(func() { a.Run(ctx) })
	wg.Go(func() { host.Run(ctx) })
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(r.env.Stdout, "Atrium dashboard: http://%s/?token=%s\n", ln.Addr(), token)
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	stop()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if serr := srv.Shutdown(sctx); serr != nil && err == nil {
		err = serr
	}
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// checkServeAddr refuses a malformed address, and a non-loopback one
// without allowRemote. remote reports a non-loopback address.
func checkServeAddr(addr string, allowRemote bool) (remote bool, err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, apperr.Wrap(apperr.Invalid, err, "invalid --addr %q (want host:port)", addr)
	}
	ip := net.ParseIP(host)
	loopback := host == "localhost" || (ip != nil && ip.IsLoopback())
	if !loopback && !allowRemote {
		return true, apperr.New(apperr.Invalid, "--addr %s is not a loopback address; add --allow-remote to serve it", addr)
	}
	return !loopback, nil
}

// newToken is 32 random bytes, hex.
func newToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", apperr.Wrap(apperr.Internal, err, "make access token")
	}
	return hex.EncodeToString(b), nil
}
