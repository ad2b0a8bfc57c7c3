package pluginhost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/hooks"
)

// Client talks to the profile's host. It is the hooks.Remote of a process
// that does not host plugins.
type Client struct {
	site Site
	// Ensure, when set, starts a host when none answers (a command that
	// needs plugins). Without it, no host means nothing to wait for and no
	// plugin to ask: the events wait in the log for the next host.
	Ensure func(ctx context.Context) error
	// NoWait makes Wait return at once (--no-wait).
	NoWait bool

	syncMu    sync.Mutex
	syncHooks []string
	syncAt    time.Time
}

// NewClient is a client of site's host.
func (s Site) NewClient() *Client { return &Client{site: s} }

// errUnreachable: no host answered (no socket, or nobody behind it). The
// request was not delivered.
var errUnreachable = errors.New("the plugin host is not reachable")

// call sends one request and decodes its result into out. A host that is
// not there is errUnreachable (never sent); a connection lost after sending
// is another error.
func (c *Client) call(ctx context.Context, method string, params, out any) error {
	var raw json.RawMessage
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return err
		}
		raw = b
	}
	conn, err := dialUnix(c.site.SocketPath())
	if err != nil {
		return fmt.Errorf("%w: %v", errUnreachable, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() {
		// Tell the host why its call is given up (a person stopped the
		// turn), then cut the wait short.
		note, _ := json.Marshal(cancelNote{Cancel: context.Cause(ctx).Error()})
		_ = conn.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		_, _ = conn.Write(append(note, '\n'))
		_ = conn.SetDeadline(time.Now())
	})
	defer stop()
	b, _ := json.Marshal(request{Method: method, Params: raw})
	if _, err := conn.Write(append(b, '\n')); err != nil {
		if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
			return fmt.Errorf("%w: %v", errUnreachable, err)
		}
		return err
	}
	line, err := readLine(conn, 64<<20)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			return fmt.Errorf("%w during %s", errLost, method)
		}
		return err
	}
	var res response
	if err := json.Unmarshal(line, &res); err != nil {
		return fmt.Errorf("malformed answer from the plugin host: %w", err)
	}
	if res.Error != nil {
		return res.Error.err()
	}
	if out != nil && len(res.Result) > 0 {
		return json.Unmarshal(res.Result, out)
	}
	return nil
}

// Unreachable tells whether err says that no host answered.
func Unreachable(err error) bool { return errors.Is(err, errUnreachable) }

// do is call that, when no host answers, starts one (if Ensure is set) and
// tries again until ctx ends: a host exiting (idle, handing over to a
// window) is replaced. Without Ensure it returns errUnreachable.
func (c *Client) do(ctx context.Context, method string, params, out any) error {
	for {
		err := c.call(ctx, method, params, out)
		if !Unreachable(err) || c.Ensure == nil {
			return err
		}
		if eerr := c.Ensure(ctx); eerr != nil {
			if ctx.Err() != nil {
				return err
			}
			return eerr
		}
	}
}

// Hello asks the host who it is.
func (c *Client) Hello(ctx context.Context) (Info, error) {
	var in Info
	return in, c.call(ctx, mHello, nil, &in)
}

// Status asks the host for its Info and plugins.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	return st, c.call(ctx, mStatus, nil, &st)
}

// Sync asks the host to bring its plugins in line with their folders and
// config.yaml before this command uses them; it returns the problems of
// plugins that did not start (each reported once).
func (c *Client) Sync(ctx context.Context) ([]string, error) {
	var out []string
	return out, c.call(ctx, mSync, nil, &out)
}

// Handover asks a background host to stop for a window or serve.
func (c *Client) Handover(ctx context.Context) error { return c.call(ctx, mHandover, nil, nil) }

// Stop asks the host to stop.
func (c *Client) Stop(ctx context.Context) error { return c.call(ctx, mStop, nil, nil) }

// Poke tells the host that events were committed. Best effort: the host
// notices commits by itself anyway.
func (c *Client) Poke() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = c.call(ctx, mPoke, nil, nil)
}

// Wait returns once the host delivered every event up to seq (bounded by
// ctx). With no host and no Ensure there is nobody delivering now: the
// events wait in the log, and Wait returns.
func (c *Client) Wait(ctx context.Context, seq int64) error {
	if c.NoWait {
		return nil
	}
	p := waitParams{Seq: seq}
	if dl, ok := ctx.Deadline(); ok {
		p.Timeout = ms(time.Until(dl))
		if p.Timeout <= 0 {
			return context.DeadlineExceeded
		}
	}
	for {
		err := c.do(ctx, mWait, p, nil)
		switch {
		case err == nil:
			return nil
		case Unreachable(err):
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, errLost):
			continue // it stopped while we waited (idle, handing over): ask the next one
		}
		return err
	}
}

// errLost: the host went away after the request was sent.
var errLost = errors.New("the plugin host closed the connection")

// CallSync calls a synchronous hook on the host's plugins.
func (c *Client) CallSync(ctx context.Context, hook string, payload json.RawMessage) ([]hooks.SyncResult, error) {
	var res []syncResult
	err := c.do(ctx, mCallSync, callSyncParams{Hook: hook, Payload: payload}, &res)
	if Unreachable(err) {
		return nil, nil // no host, no plugin to ask
	}
	if err != nil {
		return nil, err
	}
	out := make([]hooks.SyncResult, 0, len(res))
	for _, r := range res {
		sr := hooks.SyncResult{Plugin: r.Plugin}
		switch {
		case r.ErrorKind == "timed_out":
			sr.Err = fmt.Errorf("%w: %s", hooks.ErrTimedOut, r.Error)
		case r.ErrorKind == "skipped":
			sr.Err = fmt.Errorf("%w: %s", hooks.ErrSkipped, r.Error)
		case r.Error != "":
			sr.Err = errors.New(r.Error)
		case len(r.Value) > 0:
			var v any
			if err := json.Unmarshal(r.Value, &v); err == nil {
				sr.Value = v
				if list, ok := v.([]any); ok && r.Results {
					sr.Value = hooks.Results(list)
				}
			}
		}
		out = append(out, sr)
	}
	return out, nil
}

// SyncHooks lists the synchronous hooks the host's plugins registered, so a
// client calls only those (hooks.Bus.HasSync). It is asked once per client
// and kept for a few seconds.
func (c *Client) SyncHooks(ctx context.Context) ([]string, error) {
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	if c.syncAt.IsZero() || time.Since(c.syncAt) > 5*time.Second {
		var list []string
		err := c.call(ctx, mSyncHooks, nil, &list)
		if Unreachable(err) {
			list, err = nil, nil // no host: no plugin
		}
		if err != nil {
			return nil, err
		}
		c.syncHooks, c.syncAt = list, time.Now()
	}
	return c.syncHooks, nil
}

// Commands lists the host's plugin commands.
func (c *Client) Commands(ctx context.Context) ([]hooks.Command, error) {
	var res []commandInfo
	err := c.do(ctx, mCommands, nil, &res)
	if Unreachable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]hooks.Command, 0, len(res))
	for _, r := range res {
		out = append(out, hooks.Command{Name: r.Name, Description: r.Description, ArgsHint: r.ArgsHint, Plugin: r.Plugin})
	}
	return out, nil
}

// RunCommand runs a plugin command in the host.
func (c *Client) RunCommand(ctx context.Context, name, args string, cc hooks.CommandContext) (string, error) {
	var res runCommandResult
	err := c.do(ctx, mRunCommand, runCommandParams{Name: name, Args: args, Context: cc}, &res)
	if Unreachable(err) {
		return "", apperr.New(apperr.NotFound, "unknown command /%s (try /help; no plugin host runs)", hooks.NormalizeCommand(name))
	}
	return res.Output, err
}

// Capabilities lists the host's capabilities of kind.
func (c *Client) Capabilities(ctx context.Context, kind string) ([]hooks.Capability, error) {
	var out []hooks.Capability
	err := c.do(ctx, mCapabilities, capabilitiesParams{Kind: kind}, &out)
	if Unreachable(err) {
		return nil, nil
	}
	return out, err
}

// CallCapability calls a capability's method in the host.
func (c *Client) CallCapability(ctx context.Context, plugin, kind, name, method string, params json.RawMessage) (json.RawMessage, error) {
	var out json.RawMessage
	err := c.do(ctx, mCallCapability, callCapabilityParams{Plugin: plugin, Kind: kind, Name: name, Method: method, Params: params}, &out)
	if Unreachable(err) {
		return nil, apperr.New(apperr.NotFound, "plugin %s has no %s %q (no plugin host runs)", plugin, kind, name)
	}
	return out, err
}

var _ hooks.Remote = (*Client)(nil)
