package pluginhost

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/hooks"
)

// Handler is what the host process adds to its bus for the socket: who it
// is, its plugins, and how it stops.
type Handler interface {
	Info() Info
	Plugins() []PluginState
	// Handover asks a background host to stop so a window or serve can host
	// (a window or serve refuses). Stop asks any host to stop; the window and
	// serve refuse: they host while they run.
	Handover() error
	Stop() error
	// Sync brings the host's plugins in line with their folders and
	// config.yaml now (a command about to use them), and reports what did
	// not start, once.
	Sync() []string
}

// Server answers the profile's clients for the host: it waits for
// deliveries, forwards synchronous hooks, commands and capabilities to the
// host's bus, and reports status.
type Server struct {
	site Site
	bus  *hooks.Bus
	h    Handler
	log  *slog.Logger
	ln   *net.UnixListener
	uid  atomic.Int64 // the only uid allowed in

	mu       sync.Mutex
	closed   bool
	lastWork time.Time
	wg       sync.WaitGroup
	conns    map[net.Conn]bool
}

// maxRequest bounds one request line.
const maxRequest = 16 << 20

// Serve listens on the site's socket. The caller holds the host lock: a
// socket file left by a dead host is removed first.
func Serve(site Site, bus *hooks.Bus, h Handler, logger *slog.Logger) (*Server, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := site.ensureDir(); err != nil {
		return nil, err
	}
	path := site.SocketPath()
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove the stale socket %s: %w", path, err)
	}
	ln, err := listenUnix(path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	s := &Server{site: site, bus: bus, h: h, log: logger, ln: ln, lastWork: time.Now(), conns: map[net.Conn]bool{}}
	s.uid.Store(int64(os.Getuid()))
	bus.OnActivity(func(hooks.Activity) { s.Touch() })
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Touch records work (a delivery, a request): a background host's idle
// time starts over.
func (s *Server) Touch() {
	s.mu.Lock()
	s.lastWork = time.Now()
	s.mu.Unlock()
}

// IdleFor is how long the host has had no work.
func (s *Server) IdleFor() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Since(s.lastWork)
}

// Close stops listening and removes the socket; requests being answered
// finish (bounded by ctx; a wait still running is cut off, and its client
// asks the next host).
func (s *Server) Close(ctx context.Context) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	_ = s.ln.Close()
	_ = os.Remove(s.site.SocketPath())
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.conns {
			_ = c.Close()
		}
		s.mu.Unlock()
		<-done
	}
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = true
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				c.Close()
			}()
			s.serve(c)
		}()
	}
}

func (s *Server) serve(c *net.UnixConn) {
	if uid, err := peerUID(c); err != nil || int64(uid) != s.uid.Load() {
		s.log.Warn("plugin host: refused a connection from another user", "uid", uid, "error", err)
		return
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := readLine(c, maxRequest)
	if err != nil {
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	var req request
	var res response
	if err := json.Unmarshal(line, &req); err != nil {
		res.Error = toWire(apperr.Wrap(apperr.Invalid, err, "malformed request"))
	} else {
		s.Touch()
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		go watchCaller(c, cancel)
		v, err := s.dispatch(ctx, req)
		if err != nil {
			res.Error = toWire(err)
		} else if res.Result, err = json.Marshal(v); err != nil {
			res.Error = toWire(err)
		}
		s.Touch()
	}
	b, _ := json.Marshal(res)
	_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, _ = c.Write(append(b, '\n'))
}

// readLine reads one line of at most max bytes.
func readLine(r io.Reader, max int) ([]byte, error) {
	line, err := bufio.NewReader(io.LimitReader(r, int64(max)+1)).ReadBytes('\n')
	if len(line) > max {
		return nil, errors.New("request too long")
	}
	if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
		return nil, err
	}
	return line, nil
}

func (s *Server) boundOf(ms int64) time.Duration {
	d := s.bus.Timeout()
	if ms > 0 && (d <= 0 || time.Duration(ms)*time.Millisecond < d) {
		d = time.Duration(ms) * time.Millisecond
	}
	if d <= 0 {
		d = hooks.DefaultTimeout
	}
	return d
}

// errCallerGone: the client closed its connection before the answer.
var errCallerGone = errors.New("the caller went away")

// watchCaller cancels what the request runs (a plugin call is cancelled in
// the plugin) when its client stops waiting: a cancel note says why, a
// closed connection that it went away. It returns when the connection is
// closed after the answer.
func watchCaller(c net.Conn, cancel context.CancelCauseFunc) {
	line, err := readLine(c, 4<<10)
	var note cancelNote
	if err == nil && json.Unmarshal(line, &note) == nil && note.Cancel != "" {
		cancel(errors.New(note.Cancel))
		return
	}
	cancel(errCallerGone)
}

func (s *Server) dispatch(ctx context.Context, req request) (any, error) {
	decode := func(v any) error {
		if len(req.Params) == 0 {
			return nil
		}
		if err := json.Unmarshal(req.Params, v); err != nil {
			return apperr.Wrap(apperr.Invalid, err, "%s: malformed parameters", req.Method)
		}
		return nil
	}
	switch req.Method {
	case mHello:
		return s.h.Info(), nil
	case mPoke:
		s.bus.WakeAll()
		return struct{}{}, nil
	case mWait:
		var p waitParams
		if err := decode(&p); err != nil {
			return nil, err
		}
		wctx, cancel := context.WithTimeout(ctx, s.boundOf(p.Timeout))
		defer cancel()
		return struct{}{}, s.bus.WaitDelivered(wctx, p.Seq)
	case mCallSync:
		var p callSyncParams
		if err := decode(&p); err != nil {
			return nil, err
		}
		res, err := s.bus.CallSync(ctx, p.Hook, p.Payload)
		if err != nil {
			return nil, err
		}
		out := make([]syncResult, 0, len(res))
		for _, r := range res {
			sr := syncResult{Plugin: r.Plugin}
			if r.Err != nil {
				sr.Error = r.Err.Error()
				switch {
				case errors.Is(r.Err, hooks.ErrTimedOut):
					sr.ErrorKind = "timed_out"
				case errors.Is(r.Err, hooks.ErrSkipped):
					sr.ErrorKind = "skipped"
				}
			} else if r.Value != nil {
				_, sr.Results = r.Value.(hooks.Results)
				raw, err := json.Marshal(r.Value)
				if err != nil {
					sr.Error = fmt.Sprintf("encode the answer: %v", err)
				} else {
					sr.Value = raw
				}
			}
			out = append(out, sr)
		}
		return out, nil
	case mSyncHooks:
		out := []string{}
		for _, h := range hooks.Names() {
			if k, _ := hooks.Lookup(h); k == hooks.Sync && s.bus.HasSync(h) {
				out = append(out, h)
			}
		}
		return out, nil
	case mCommands:
		out := []commandInfo{}
		for _, c := range s.bus.Commands().List() {
			if c.Plugin != "" {
				out = append(out, commandInfo{Name: c.Name, Description: c.Description, ArgsHint: c.ArgsHint, Plugin: c.Plugin})
			}
		}
		return out, nil
	case mRunCommand:
		var p runCommandParams
		if err := decode(&p); err != nil {
			return nil, err
		}
		if c, ok := s.bus.Commands().Lookup(p.Name); !ok || c.Plugin == "" {
			// Built-ins run in the caller, on its own session.
			return nil, apperr.New(apperr.NotFound, "unknown command /%s (try /help)", hooks.NormalizeCommand(p.Name))
		}
		out, err := s.bus.RunCommand(ctx, p.Name, p.Args, p.Context)
		if err != nil {
			return nil, err
		}
		return runCommandResult{Output: out}, nil
	case mCapabilities:
		var p capabilitiesParams
		if err := decode(&p); err != nil {
			return nil, err
		}
		out := s.bus.Capabilities(p.Kind)
		if out == nil {
			out = []hooks.Capability{}
		}
		return out, nil
	case mCallCapability:
		var p callCapabilityParams
		if err := decode(&p); err != nil {
			return nil, err
		}
		if len(p.Params) == 0 {
			p.Params = json.RawMessage("null")
		}
		return s.bus.CallCapability(ctx, p.Plugin, p.Kind, p.Name, p.Method, p.Params)
	case mStatus:
		return Status{Info: s.h.Info(), Plugins: s.h.Plugins()}, nil
	case mSync:
		out := s.h.Sync()
		if out == nil {
			out = []string{}
		}
		return out, nil
	case mHandover:
		return struct{}{}, s.h.Handover()
	case mStop:
		return struct{}{}, s.h.Stop()
	}
	return nil, apperr.New(apperr.Invalid, "the plugin host has no method %q", req.Method)
}
