package stack

import (
	"context"
	"slices"
	"time"

	"atrium/backend/config"
	"atrium/backend/cron"
	"atrium/backend/gateway"
	"atrium/backend/gatewayhooks"
	"atrium/backend/hostlock"
)

// AdapterReport is one configured (or last seen) platform adapter.
type AdapterReport struct {
	Platform     string     `json:"platform"`
	Configured   bool       `json:"configured"`
	State        string     `json:"state"` // connected, retrying, error, starting, stopped, not running
	Detail       string     `json:"detail"`
	LastError    string     `json:"last_error"`
	LastErrorAt  *time.Time `json:"last_error_at"`
	Received     int64      `json:"received"`
	Sent         int64      `json:"sent"`
	Pending      int64      `json:"pending"`
	Failed       int64      `json:"failed"`
	AllowedUsers []string   `json:"allowed_users"`
	AllowedChats []string   `json:"allowed_chats"`
	AllowedRoles []string   `json:"allowed_roles"` // Discord's role ids
	// HomeChannel is where the gateway speaks first on the platform
	// (chat_id[:thread_id]); HomeFrom what set it ("/sethome by Ada",
	// "config").
	HomeChannel string     `json:"home_channel"`
	HomeFrom    string     `json:"home_from"`
	SecretEnv   []string   `json:"secret_env"`  // the variables its secrets come from
	MissingEnv  []string   `json:"missing_env"` // those of them not set in this process
	UpdatedAt   *time.Time `json:"updated_at"`
}

// GatewayReport is the gateway as every surface shows it.
type GatewayReport struct {
	Autostart bool              `json:"autostart"`
	Running   bool              `json:"running"`
	Host      *hostlock.Holder  `json:"host"` // the process running it, nil when none
	Adapters  []AdapterReport   `json:"adapters"`
	Refusals  []gateway.Refusal `json:"refusals"`
	// Pairing are the people waiting for the owner to approve their
	// pairing code; Paired those pairing let in.
	Pairing []gateway.PairingRequest `json:"pairing"`
	Paired  []gateway.Paired         `json:"paired"`
	// Hooks are the gateway event hooks of <home>/hooks/ the gateway loads
	// when it starts; HookProblems why others are left out (read from the
	// folder now; a handler that fails at import shows in the gateway's
	// log).
	Hooks        []EventHookReport `json:"hooks"`
	HookProblems []string          `json:"hook_problems"`
	// Notes are what a person should know of the platforms the familiar
	// agent's .env enables (config.GatewayWithFamiliarEnv).
	Notes []string `json:"notes"`
}

// EventHookReport is one gateway event hook.
type EventHookReport struct {
	Folder      string   `json:"folder"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Events      []string `json:"events"`
}

// NotRunning is an adapter's state when no process runs the gateway.
const NotRunning = "not running"

// GatewayStatus reports the configured adapters with their last known state.
func (s *Stack) GatewayStatus(ctx context.Context) (GatewayReport, error) {
	g, notes := s.GatewayConfig()
	rep := GatewayReport{Autostart: g.Autostart, Adapters: []AdapterReport{}, Notes: append([]string{}, notes...)}
	if h, held := hostlock.Holding(GatewayLockPath(s.Home)); held {
		rep.Running, rep.Host = true, &h
	}
	store := gateway.NewStore(s.DB)
	statuses, err := store.Statuses(ctx)
	if err != nil {
		return rep, err
	}
	counts, err := store.OutboxCounts(ctx)
	if err != nil {
		return rep, err
	}
	byName := map[string]gateway.Status{}
	for _, st := range statuses {
		byName[st.Platform] = st
	}
	add := func(name string, a config.Access, envs ...[2]string) {
		r := AdapterReport{Platform: name, Configured: true, State: NotRunning, AllowedUsers: nonNil(a.AllowedUsers),
			AllowedChats: nonNil(a.AllowedChats), AllowedRoles: []string{}, SecretEnv: []string{}, MissingEnv: []string{}}
		for _, e := range envs {
			env, val := config.Secret(e[0], e[1])
			r.SecretEnv = append(r.SecretEnv, env)
			if val == "" {
				r.MissingEnv = append(r.MissingEnv, env)
			}
		}
		rep.Adapters = append(rep.Adapters, r)
	}
	if t := g.Telegram; t != nil {
		add("telegram", t.Access, [2]string{t.TokenEnv, "TELEGRAM_BOT_TOKEN"})
	}
	if sl := g.Slack; sl != nil {
		// Socket Mode needs the app-level token, the Events API the signing secret.
		_, app := config.Secret(sl.AppTokenEnv, "SLACK_APP_TOKEN")
		second := [2]string{sl.SigningSecretEnv, "SLACK_SIGNING_SECRET"}
		if gateway.SlackSocketMode(sl.Mode, app) {
			second = [2]string{sl.AppTokenEnv, "SLACK_APP_TOKEN"}
		}
		add("slack", sl.Access, [2]string{sl.TokenEnv, "SLACK_BOT_TOKEN"}, second)
	}
	if d := g.Discord; d != nil {
		add("discord", d.Access, [2]string{d.TokenEnv, "DISCORD_BOT_TOKEN"})
		rep.Adapters[len(rep.Adapters)-1].AllowedRoles = nonNil(d.AllowedRoles)
	}
	if w := g.Webhook; w != nil {
		name := w.Name
		if name == "" {
			name = "webhook"
		}
		add(name, w.Access, [2]string{w.SecretEnv, "ATRIUM_WEBHOOK_SECRET"})
	}
	for _, st := range statuses {
		if !slices.ContainsFunc(rep.Adapters, func(a AdapterReport) bool { return a.Platform == st.Platform }) {
			// Seen before, no longer configured: shown with its history.
			rep.Adapters = append(rep.Adapters, AdapterReport{Platform: st.Platform, State: NotRunning, AllowedUsers: []string{},
				AllowedChats: []string{}, AllowedRoles: []string{}, SecretEnv: []string{}, MissingEnv: []string{}})
		}
	}
	homes, err := store.Homes(ctx)
	if err != nil {
		return rep, err
	}
	configured := g.HomeChannels()
	for i := range rep.Adapters {
		a := &rep.Adapters[i]
		if h, ok := homes[a.Platform]; ok {
			a.HomeChannel, a.HomeFrom = h.ChatID, "/sethome by "+h.SetBy
			if h.ThreadID != "" {
				a.HomeChannel += ":" + h.ThreadID
			}
		} else if v := configured[a.Platform]; v != "" {
			a.HomeChannel, a.HomeFrom = v, "config"
		}
		if st, ok := byName[a.Platform]; ok {
			if rep.Running {
				a.State, a.Detail = st.State, st.Detail
			}
			a.LastError, a.LastErrorAt, a.Received, a.Sent = st.LastError, st.LastErrorAt, st.Received, st.Sent
			u := st.UpdatedAt
			a.UpdatedAt = &u
		}
		c := counts[a.Platform]
		a.Pending, a.Failed = c.Pending, c.Failed
	}
	found, skipped := gatewayhooks.Discover(gatewayhooks.Dir(s.Home))
	rep.Hooks, rep.HookProblems = []EventHookReport{}, []string{}
	for _, h := range found {
		rep.Hooks = append(rep.Hooks, EventHookReport{Folder: h.Folder, Name: h.Name, Description: h.Description, Events: h.Events})
	}
	for _, err := range skipped {
		rep.HookProblems = append(rep.HookProblems, err.Error())
	}
	if rep.Refusals, err = store.Refusals(ctx, 20); err != nil {
		return rep, err
	}
	if rep.Pairing, err = store.PairingRequests(ctx); err != nil {
		return rep, err
	}
	rep.Paired, err = store.PairedUsers(ctx)
	rep.Refusals, rep.Pairing, rep.Paired = nonNil(rep.Refusals), nonNil(rep.Pairing), nonNil(rep.Paired)
	return rep, err
}

// CronReport is the scheduler as every surface shows it.
type CronReport struct {
	Running  bool             `json:"running"`
	Host     *hostlock.Holder `json:"host"`
	Timezone string           `json:"timezone"` // the zone new jobs get by default
	Jobs     []cron.Job       `json:"jobs"`
}

// CronStatus lists the jobs and who runs the scheduler.
func (s *Stack) CronStatus(ctx context.Context, c *cron.Service) (CronReport, error) {
	rep := CronReport{Timezone: cron.LocalZone()}
	if h, held := hostlock.Holding(CronLockPath(s.Home)); held {
		rep.Running, rep.Host = true, &h
	}
	jobs, err := c.List(ctx)
	if jobs == nil {
		jobs = []cron.Job{}
	}
	rep.Jobs = jobs
	return rep, err
}

// nonNil is xs, or an empty list for none (JSON [] rather than null).
func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}
