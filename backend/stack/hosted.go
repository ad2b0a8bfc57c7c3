package stack

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"atrium/backend/config"
	"atrium/backend/cron"
	"atrium/backend/gateway"
	"atrium/backend/gatewayhooks"
	"atrium/backend/hostlock"
	"atrium/backend/tools"
	"atrium/backend/turns"
)

// HostOptions configure what a long-lived process hosts for its profile.
type HostOptions struct {
	Process string // "the desktop window", "atrium serve", "atrium gateway run"
	// Gateway: run the configured gateway (`atrium gateway run` always;
	// the window and serve when gateway.autostart is true).
	Gateway bool
	Flags   ModelFlags
	Logger  *slog.Logger
	// Standby is how often a process whose lock another holds tries again
	// (default 5 s).
	Standby time.Duration
	// OnHold is told, once per holder, that another process runs a
	// service ("gateway" or "cron") for now.
	OnHold func(service string, h hostlock.Holder)
}

// Hosted is the gateway and the scheduler a long-lived process runs while
// it holds their locks (under <home>/run/): one gateway and one scheduler
// per profile, whichever process got there first; the others stand by and
// take over when it ends.
type Hosted struct {
	st  *Stack
	o   HostOptions
	gw  *gateway.Service
	cr  *cron.Service
	err error // why the gateway could not be built

	mu      sync.Mutex
	running map[string]bool
}

// GatewayLockPath and CronLockPath are the locks of a profile's gateway and
// scheduler.
func GatewayLockPath(h config.Home) string { return filepath.Join(h.Dir, "run", "gateway.lock") }

// CronLockPath is the scheduler's lock.
func CronLockPath(h config.Home) string { return filepath.Join(h.Dir, "run", "cron.lock") }

// Host builds the services this process may host. A gateway that cannot
// be built (no adapter configured) is reported by GatewayError; the
// scheduler always is.
func (s *Stack) Host(o HostOptions) (*Hosted, error) {
	if o.Logger == nil {
		o.Logger = s.log
	}
	if o.Standby <= 0 {
		o.Standby = 5 * time.Second
	}
	h := &Hosted{st: s, o: o, running: map[string]bool{}}
	loop, err := s.cronLoop(o.Flags)
	if err != nil {
		return nil, err
	}
	if o.Gateway {
		h.gw, h.err = s.Gateway(o.Flags, o.Process, o.Logger)
	}
	wake := func(string) {}
	if h.gw != nil {
		wake = h.gw.Wake
	}
	co := s.CronOptions(loop)
	co.Wake, co.Logger = wake, o.Logger
	h.cr = cron.New(co)
	return h, nil
}

// Gateway builds the configured gateway (not started).
func (s *Stack) Gateway(f ModelFlags, process string, lg *slog.Logger) (*gateway.Service, error) {
	g, notes := s.GatewayConfig()
	adapters := GatewayAdapters(g)
	if len(adapters) == 0 {
		return nil, errors.New("no gateway adapter is configured (gateway.telegram, gateway.slack, gateway.discord or gateway.webhook in config.yaml; " +
			"or, as the familiar agent takes them, TELEGRAM_BOT_TOKEN, SLACK_BOT_TOKEN with SLACK_APP_TOKEN, or DISCORD_BOT_TOKEN, in the profile's .env)")
	}
	if lg == nil {
		lg = s.log
	}
	for _, n := range notes {
		lg.Warn("gateway: " + n)
	}
	f.NoBetweenTurns = true
	// A tool call a plugin wants approved, and the clarify tool's question,
	// are asked of the sender on the platform (the loop is the gateway's
	// own).
	var gw *gateway.Service
	f.Approve = func(ctx context.Context, a turns.Approval) (turns.Answer, error) { return gw.Approve(ctx, a) }
	f.Clarify = func(ctx context.Context, q turns.Question) (turns.Reply, error) { return gw.Clarify(ctx, q) }
	loop, err := s.Loop(f)
	if err != nil {
		return nil, err
	}
	var deadline, approval time.Duration
	if d := s.Config.Gateway.DeliveryDeadlineMinutes; d != nil {
		deadline = time.Duration(*d * float64(time.Minute))
	}
	if d := s.Config.Gateway.ApprovalTimeoutMinutes; d != nil {
		approval = time.Duration(*d * float64(time.Minute))
	}
	// The familiar agent's gateway event hooks (<home>/hooks/*/HOOK.yaml +
	// handler.py) run while this process runs the gateway.
	eh := gatewayhooks.New(gatewayhooks.Options{Home: s.Home, Bus: s.Bus, Logger: lg, Timeout: s.Config.HookTimeout()})
	group, thread := s.Config.SessionsPerUser()
	gw = gateway.New(gateway.Options{DB: s.DB, Sessions: s.Sessions, Bus: s.Bus, Loop: loop, Adapters: adapters,
		Profile: s.Home.Profile, Process: process, Logger: lg, Deadline: deadline, ApprovalTimeout: approval, Hooks: eh,
		Progress: s.ToolProgress, GroupSessionsPerUser: group, ThreadSessionsPerUser: thread,
		Media: s.MediaPolicy(lg), MediaDir: s.Home.MediaDir(), MaxInboundFile: s.Config.Gateway.MaxFileBytes(), SeeImage: s.seeImage,
		StickerCache: s.Home.StickerCachePath(), Transcribe: s.transcriber(), EchoTranscripts: g.EchoTranscripts(),
		SkillCommands: s.SkillCommands})
	s.TellEnds(FollowEnds(gw, lg))
	return gw, nil
}

// FollowEnds is the gateway's side of notify_on_complete and
// watch_patterns: a background process a chat's turn started is told to
// the chat when it ends (or prints a watched line), in a turn from the
// sender whose message started it (gateway.Service.Follow; one that
// stopped follows no more), unless the conversation was reset since;
// notices that wait together are told in one turn.
func FollowEnds(gw *gateway.Service, lg *slog.Logger) tools.Listener {
	var untold tools.Untold
	return func(owner string) func(tools.Completion) {
		follow, reset := gw.Follow(owner)
		if follow == nil {
			return nil
		}
		return func(c tools.Completion) {
			if reset() {
				lg.Info("gateway: a background process's notice came after its conversation was reset; not told", "process", c.ID, "kind", c.Kind, "conversation", owner)
				return
			}
			if untold.Add(c.Owner, c) {
				follow(func() (string, bool) {
					cs := untold.Next(c.Owner)
					return tools.CompletionsText(cs), cs != nil
				})
			}
		}
	}
}

// GatewayConfig is the gateway config.yaml configures, with the platforms
// the familiar agent's .env enables (config.GatewayWithFamiliarEnv), and
// what a person should know of those.
func (s *Stack) GatewayConfig() (config.Gateway, []string) {
	_ = s.Home.RefreshEnv()
	return s.Config.GatewayWithFamiliarEnv(os.Getenv)
}

// GatewayAdapters builds the adapters g configures, reading each secret
// from the environment variable it names.
func GatewayAdapters(g config.Gateway) []gateway.Configured {
	var out []gateway.Configured
	if t := g.Telegram; t != nil {
		env, token := config.Secret(t.TokenEnv, "TELEGRAM_BOT_TOKEN")
		out = append(out, configured(gateway.NewTelegram(gateway.TelegramOptions{Token: token, TokenEnv: env,
			BaseURL: t.BaseURL, PollTimeout: time.Duration(t.PollTimeoutSeconds) * time.Second,
			TextBatch: gateway.TextBatch{Wait: t.TextBatch.Wait, SplitWait: t.TextBatch.SplitWait, SplitAt: gateway.TelegramSplitAt}}), t.Access))
	}
	if sl := g.Slack; sl != nil {
		tenv, token := config.Secret(sl.TokenEnv, "SLACK_BOT_TOKEN")
		senv, secret := config.Secret(sl.SigningSecretEnv, "SLACK_SIGNING_SECRET")
		aenv, app := config.Secret(sl.AppTokenEnv, "SLACK_APP_TOKEN")
		out = append(out, configured(gateway.NewSlack(gateway.SlackOptions{Token: token, TokenEnv: tenv,
			SigningSecret: secret, SigningSecretEnv: senv, AppToken: app, AppTokenEnv: aenv, Mode: sl.Mode,
			Listen: sl.Listen, APIURL: sl.APIURL}), sl.Access))
	}
	if d := g.Discord; d != nil {
		c := configured(gateway.NewDiscord(DiscordOptions(*d)), d.Access, d.AllowedRoles...)
		c.ChannelPrompts = d.ChannelPrompts
		out = append(out, c)
	}
	if w := g.Webhook; w != nil {
		env, secret := config.Secret(w.SecretEnv, "ATRIUM_WEBHOOK_SECRET")
		out = append(out, configured(gateway.NewWebhook(gateway.WebhookOptions{Name: w.Name, Secret: secret,
			SecretEnv: env, Listen: w.Listen, ReplyURL: w.ReplyURL}), w.Access))
	}
	return out
}

// DiscordOptions are the adapter's options a gateway.discord block
// (resolved: config.GatewayWithFamiliarEnv) gives: the familiar defaults
// where it sets nothing.
func DiscordOptions(d config.Discord) gateway.DiscordOptions {
	o := gateway.DiscordDefaults()
	o.TokenEnv, o.Token = config.Secret(d.TokenEnv, "DISCORD_BOT_TOKEN")
	o.APIURL, o.Access = d.APIURL, access(d.Access)
	o.Access.Roles = d.AllowedRoles
	o.TextBatch = gateway.TextBatch{Wait: d.TextBatch.Wait, SplitWait: d.TextBatch.SplitWait, SplitAt: gateway.DiscordSplitAt}
	if m := d.UploadLimitMB; m != nil {
		o.MaxFileSize = int64(*m * (1 << 20))
	}
	set := func(dst *bool, v *bool) {
		if v != nil {
			*dst = *v
		}
	}
	b := d.DiscordBehaviour
	set(&o.RequireMention, b.RequireMention)
	set(&o.IgnoreNoMention, b.IgnoreNoMention)
	set(&o.AutoThread, b.AutoThread)
	set(&o.Reactions, b.Reactions)
	set(&o.SlashCommands, b.SlashCommands)
	set(&o.Mentions.Everyone, b.AllowMentions.Everyone)
	set(&o.Mentions.Roles, b.AllowMentions.Roles)
	set(&o.Mentions.Users, b.AllowMentions.Users)
	set(&o.Mentions.RepliedUser, b.AllowMentions.RepliedUser)
	o.FreeResponse, o.NoThread, o.Ignored, o.Allowed = b.FreeResponseChannels, b.NoThreadChannels, b.IgnoredChannels, b.AllowedChannels
	if b.AllowBots != "" {
		o.AllowBots = b.AllowBots
	}
	if b.ReplyToMode != "" {
		o.ReplyToMode = b.ReplyToMode
	}
	return o
}

// configured is an adapter with who may talk to it and how a stranger's
// DM is answered.
func configured(a gateway.Adapter, acc config.Access, roles ...string) gateway.Configured {
	g := access(acc)
	g.Roles = roles
	return gateway.Configured{Adapter: a, Access: g, UnknownDM: acc.UnauthorizedDM}
}

func access(a config.Access) gateway.Access {
	return gateway.Access{Users: a.AllowedUsers, Chats: a.AllowedChats}
}

// Cron is the scheduler's service for commands and the API: jobs, and
// running one now (nothing is scheduled until a host starts it).
func (s *Stack) Cron(f ModelFlags) (*cron.Service, error) {
	loop, err := s.cronLoop(f)
	if err != nil {
		return nil, err
	}
	return cron.New(s.CronOptions(loop)), nil
}

// CronOptions are the scheduler's options on this stack with loop: its
// answers delivered through the gateway's outbox, to a platform's home
// channel when a job names only the platform, never sending the
// profile's own files.
func (s *Stack) CronOptions(loop *turns.Loop) cron.Options {
	return cron.Options{DB: s.DB, Sessions: s.Sessions, Loop: loop, Outbox: gateway.NewStore(s.DB), Logger: s.log,
		Home: s.HomeChannel, Media: s.MediaPolicy(s.log)}
}

// MediaPolicy is which local files a reply's MEDIA: tags may send: the
// profile's media folder (files people sent) and gateway.media_delivery_allow_dirs
// always, the profile's own files never, gateway.strict and its recency
// window as config.yaml (over the familiar .env) says. What is wrong with
// a variable is logged to lg.
func (s *Stack) MediaPolicy(lg *slog.Logger) gateway.MediaPolicy {
	_ = s.Home.RefreshEnv()
	strict, allow, recent, notes := s.Config.Gateway.MediaDelivery(os.Getenv)
	for _, n := range notes {
		lg.Warn("gateway: " + n)
	}
	return gateway.MediaPolicy{Allowed: append([]string{s.Home.MediaDir()}, allow...), Denied: s.Home.Protected(), Strict: strict, Recent: recent}
}

// HomeChannel is a platform's home channel: a chat's /sethome, else the
// home_channel its block (or the familiar <PLATFORM>_HOME_CHANNEL) names.
func (s *Stack) HomeChannel(ctx context.Context, platform string) (chat, thread string, ok bool) {
	if homes, err := gateway.NewStore(s.DB).Homes(ctx); err == nil {
		if h, set := homes[platform]; set {
			return h.ChatID, h.ThreadID, true
		}
	}
	g, _ := s.GatewayConfig()
	if v := g.HomeChannels()[platform]; v != "" {
		chat, thread, _ = strings.Cut(v, ":")
		return chat, thread, true
	}
	return "", "", false
}

// cronLoop is the scheduler's turn loop: nobody sits at a scheduled run,
// so a tool call a plugin wants approved is blocked, or, with
// approvals.cron_mode: approve, runs (and the log says so).
func (s *Stack) cronLoop(f ModelFlags) (*turns.Loop, error) {
	f.Approve, f.Clarify, f.AskSecret = nil, nil, nil
	if s.Config.CronApproves() {
		lg := s.log
		f.Approve = func(_ context.Context, a turns.Approval) (turns.Answer, error) {
			lg.Info("a scheduled run approved a tool call a plugin asked about (approvals.cron_mode: approve)",
				"plugin", a.Plugin, "tool", a.ToolName, "session_id", a.SessionID)
			return turns.AnswerOnce, nil
		}
	}
	return s.Loop(f)
}

// GatewayService is the gateway this process runs (nil when none).
func (h *Hosted) GatewayService() *gateway.Service { return h.gw }

// GatewayError says why no gateway was built ("" when one was, or none
// was asked for).
func (h *Hosted) GatewayError() error { return h.err }

// CronService is the scheduler.
func (h *Hosted) CronService() *cron.Service { return h.cr }

// Running reports whether this process runs service ("gateway", "cron") now.
func (h *Hosted) Running(service string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.running[service]
}

// Run hosts the services until ctx ends: each one as soon as its lock is
// free, standing by while another process holds it. It returns when both
// stopped.
func (h *Hosted) Run(ctx context.Context) {
	var wg sync.WaitGroup
	if h.gw != nil {
		wg.Go(func() {
			h.hold(ctx, "gateway", GatewayLockPath(h.st.Home), h.gw.Start, h.gw.Stop)
		})
	}
	wg.Go(func() {
		h.hold(ctx, "cron", CronLockPath(h.st.Home), h.cr.Start, h.cr.Stop)
	})
	wg.Wait()
}

func (h *Hosted) hold(ctx context.Context, name, path string, start, stop func(context.Context) error) {
	var told hostlock.Holder
	for {
		l, holder, err := hostlock.Try(path, hostlock.Holder{Process: h.o.Process})
		if err == nil {
			defer l.Release()
			break
		}
		if !errors.Is(err, hostlock.ErrHeld) {
			h.o.Logger.Warn("cannot take the lock; not hosting", "service", name, "error", err)
			return
		}
		if holder.PID != told.PID && h.o.OnHold != nil {
			h.o.OnHold(name, holder)
			told = holder
		}
		t := time.NewTimer(h.o.Standby)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	if err := start(ctx); err != nil {
		h.o.Logger.Warn("cannot start", "service", name, "error", err)
		return
	}
	h.mu.Lock()
	h.running[name] = true
	h.mu.Unlock()
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = stop(sctx)
	h.mu.Lock()
	h.running[name] = false
	h.mu.Unlock()
}
