package app

import (
	"context"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/cron"
	"atrium/backend/gateway"
	"atrium/backend/hostlock"
	"atrium/backend/stack"
)

// Gateway is the Gateway page: the adapters, their state, who may talk,
// who was refused.
type Gateway struct {
	base
	st *stack.Stack
}

// NewGateway binds st.
func NewGateway(ctx context.Context, st *stack.Stack) *Gateway {
	return &Gateway{base: base{ctx: ctx}, st: st}
}

// HostDTO is the process that runs a service.
type HostDTO struct {
	PID     int       `json:"pid"`
	Process string    `json:"process"`
	Since   time.Time `json:"since"`
}

// AdapterDTO is one platform adapter.
type AdapterDTO struct {
	Platform     string     `json:"platform"`
	Configured   bool       `json:"configured"`
	State        string     `json:"state"` // connected, starting, retrying, error, stopped, not running
	Detail       string     `json:"detail"`
	LastError    string     `json:"last_error"`
	LastErrorAt  *time.Time `json:"last_error_at"`
	Received     int64      `json:"received"`
	Sent         int64      `json:"sent"`
	Pending      int64      `json:"pending"`
	Failed       int64      `json:"failed"`
	AllowedUsers []string   `json:"allowed_users"`
	AllowedChats []string   `json:"allowed_chats"`
	AllowedRoles []string   `json:"allowed_roles"`
	HomeChannel  string     `json:"home_channel"` // chat_id[:thread_id]: where scheduled jobs delivering to the platform post
	HomeFrom     string     `json:"home_from"`    // "/sethome by Ada", "config"
	SecretEnv    []string   `json:"secret_env"`
	MissingEnv   []string   `json:"missing_env"`
	UpdatedAt    *time.Time `json:"updated_at"`
}

// RefusalDTO is a sender who was refused.
type RefusalDTO struct {
	Platform string    `json:"platform"`
	UserID   string    `json:"user_id"`
	UserName string    `json:"user_name"`
	ChatID   string    `json:"chat_id"`
	FirstAt  time.Time `json:"first_at"`
	LastAt   time.Time `json:"last_at"`
	Count    int64     `json:"count"`
}

// GatewayDTO is the Gateway page.
type GatewayDTO struct {
	Autostart bool         `json:"autostart"`
	Running   bool         `json:"running"`
	Host      *HostDTO     `json:"host"`
	Adapters  []AdapterDTO `json:"adapters"`
	Refusals  []RefusalDTO `json:"refusals"`
	// Pairing are the people waiting for their pairing code to be
	// approved (the codes are never shown); Paired those pairing let in.
	Pairing []PairingRequestDTO `json:"pairing"`
	Paired  []PairedDTO         `json:"paired"`
	// Hooks are the gateway event hooks (<home>/hooks/*/HOOK.yaml and
	// handler.py) it loads when it starts; HookProblems why others are left
	// out.
	Hooks        []GatewayHookDTO `json:"hooks"`
	HookProblems []string         `json:"hook_problems"`
	// Notes say what a person should know of the platforms the familiar
	// agent's .env enables (one that lets nobody in yet, an allow-all
	// switch Atrium does not honour).
	Notes []string `json:"notes"`
}

// PairingRequestDTO is a person waiting for the owner to approve them.
type PairingRequestDTO struct {
	ID        string    `json:"id"`
	Platform  string    `json:"platform"`
	UserID    string    `json:"user_id"`
	UserName  string    `json:"user_name"`
	ChatID    string    `json:"chat_id"`
	CreatedAt time.Time `json:"created_at"`
}

// PairedDTO is a person pairing let in.
type PairedDTO struct {
	Platform   string    `json:"platform"`
	UserID     string    `json:"user_id"`
	UserName   string    `json:"user_name"`
	ApprovedAt time.Time `json:"approved_at"`
}

// PairingAnswer approves a pairing request (by its id, as the page lists
// it) or lets out a paired person (by their user id).
type PairingAnswer struct {
	Platform string `json:"platform"`
	ID       string `json:"id"`      // the request's, to approve it
	UserID   string `json:"user_id"` // a paired person's, to let them out
}

// GatewayHookDTO is one gateway event hook.
type GatewayHookDTO struct {
	Folder      string   `json:"folder"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Events      []string `json:"events"`
}

// RetryRequest names the platform whose failed replies go out again ("" all).
type RetryRequest struct {
	Platform string `json:"platform"`
}

// RetryDTO says how many replies were queued again.
type RetryDTO struct {
	Requeued int64 `json:"requeued"`
}

func toHost(h *hostlock.Holder) *HostDTO {
	if h == nil {
		return nil
	}
	return &HostDTO{PID: h.PID, Process: h.Process, Since: h.Since}
}

// Status is the Gateway page's data.
func (g *Gateway) Status() (GatewayDTO, error) {
	ctx, cancel := g.with(readTimeout)
	defer cancel()
	r, err := g.st.GatewayStatus(ctx)
	if err != nil {
		return GatewayDTO{}, err
	}
	out := GatewayDTO{Autostart: r.Autostart, Running: r.Running, Host: toHost(r.Host), Adapters: make([]AdapterDTO, len(r.Adapters)),
		Refusals: make([]RefusalDTO, len(r.Refusals))}
	for i, a := range r.Adapters {
		out.Adapters[i] = AdapterDTO(a)
	}
	for i, x := range r.Refusals {
		out.Refusals[i] = RefusalDTO(x)
	}
	out.Pairing, out.Paired = make([]PairingRequestDTO, len(r.Pairing)), make([]PairedDTO, len(r.Paired))
	for i, x := range r.Pairing {
		out.Pairing[i] = PairingRequestDTO(x)
	}
	for i, x := range r.Paired {
		out.Paired[i] = PairedDTO(x)
	}
	out.Hooks, out.HookProblems, out.Notes = make([]GatewayHookDTO, len(r.Hooks)), r.HookProblems, r.Notes
	for i, h := range r.Hooks {
		out.Hooks[i] = GatewayHookDTO(h)
	}
	return out, nil
}

// Retry queues the given-up replies of a platform (or all) again.
func (g *Gateway) Retry(in RetryRequest) (RetryDTO, error) {
	ctx, cancel := g.with(writeTimeout)
	defer cancel()
	n, err := gateway.NewStore(g.st.DB).Retry(ctx, in.Platform)
	return RetryDTO{Requeued: n}, err
}

// ApprovePairing lets in the person of a pairing request (by its id: the
// page never sees a code); the page as it is then.
func (g *Gateway) ApprovePairing(in PairingAnswer) (GatewayDTO, error) {
	ctx, cancel := g.with(writeTimeout)
	_, err := gateway.NewStore(g.st.DB).ApprovePairingRequest(ctx, in.Platform, in.ID)
	cancel()
	if err != nil {
		return GatewayDTO{}, err
	}
	return g.Status()
}

// RevokePairing lets out a person pairing let in; the page as it is then.
func (g *Gateway) RevokePairing(in PairingAnswer) (GatewayDTO, error) {
	ctx, cancel := g.with(writeTimeout)
	gone, err := gateway.NewStore(g.st.DB).RevokePairing(ctx, in.Platform, in.UserID)
	cancel()
	if err == nil && !gone {
		err = apperr.New(apperr.NotFound, "%s is not paired on %s", in.UserID, in.Platform)
	}
	if err != nil {
		return GatewayDTO{}, err
	}
	return g.Status()
}

// Cron is the Cron page: the jobs, their next and last runs.
type Cron struct {
	base
	st  *stack.Stack
	svc *cron.Service
}

// NewCron binds st; svc is the scheduler of this process (its Wake sees new
// jobs at once) or a store-only one.
func NewCron(ctx context.Context, st *stack.Stack, svc *cron.Service) *Cron {
	return &Cron{base: base{ctx: ctx}, st: st, svc: svc}
}

// CronJobDTO is one job.
type CronJobDTO struct {
	Name          string     `json:"name"`
	Schedule      string     `json:"schedule"`
	Timezone      string     `json:"timezone"`
	Prompt        string     `json:"prompt"`
	Deliver       string     `json:"deliver"`
	Paused        bool       `json:"paused"`
	CreatedAt     time.Time  `json:"created_at"`
	NextRun       *time.Time `json:"next_run"`
	LastRunAt     *time.Time `json:"last_run_at"`
	LastSessionID string     `json:"last_session_id"`
	LastStatus    string     `json:"last_status"`
	LastError     string     `json:"last_error"`
	Runs          int64      `json:"runs"`
}

// CronDTO is the Cron page.
type CronDTO struct {
	Running  bool         `json:"running"`
	Host     *HostDTO     `json:"host"`
	Timezone string       `json:"timezone"`
	Jobs     []CronJobDTO `json:"jobs"`
}

// CronAddRequest adds a job.
type CronAddRequest struct {
	Name     string `json:"name"`
	Schedule string `json:"schedule"`
	Timezone string `json:"timezone"`
	Prompt   string `json:"prompt"`
	Deliver  string `json:"deliver"`
}

// CronRunDTO is a run's outcome.
type CronRunDTO struct {
	Job       string `json:"job"`
	SessionID string `json:"session_id"`
	Reply     string `json:"reply"`
	Error     string `json:"error"`
}

func toJob(j cron.Job) CronJobDTO {
	return CronJobDTO{Name: j.Name, Schedule: j.Schedule, Timezone: j.Timezone, Prompt: j.Prompt, Deliver: j.Deliver, Paused: j.Paused,
		CreatedAt: j.CreatedAt, NextRun: j.NextRun, LastRunAt: j.LastRunAt, LastSessionID: j.LastSessionID, LastStatus: j.LastStatus,
		LastError: j.LastError, Runs: j.Runs}
}

// List is the Cron page's data.
func (c *Cron) List() (CronDTO, error) {
	ctx, cancel := c.with(readTimeout)
	defer cancel()
	r, err := c.st.CronStatus(ctx, c.svc)
	if err != nil {
		return CronDTO{}, err
	}
	out := CronDTO{Running: r.Running, Host: toHost(r.Host), Timezone: r.Timezone, Jobs: make([]CronJobDTO, len(r.Jobs))}
	for i, j := range r.Jobs {
		out.Jobs[i] = toJob(j)
	}
	return out, nil
}

// Add adds a job.
func (c *Cron) Add(in CronAddRequest) (CronJobDTO, error) {
	ctx, cancel := c.with(writeTimeout)
	defer cancel()
	j, err := c.svc.Add(ctx, cron.AddParams(in))
	return toJob(j), err
}

// Remove removes a job.
func (c *Cron) Remove(name string) (CronDTO, error) {
	ctx, cancel := c.with(writeTimeout)
	err := c.svc.Remove(ctx, name)
	cancel()
	if err != nil {
		return CronDTO{}, err
	}
	return c.List()
}

// Pause pauses a job; Resume resumes it.
func (c *Cron) Pause(name string) (CronJobDTO, error) { return c.setPaused(name, true) }

// Resume resumes a paused job (missed ticks are not run).
func (c *Cron) Resume(name string) (CronJobDTO, error) { return c.setPaused(name, false) }

func (c *Cron) setPaused(name string, paused bool) (CronJobDTO, error) {
	ctx, cancel := c.with(writeTimeout)
	defer cancel()
	j, err := c.svc.SetPaused(ctx, name, paused)
	return toJob(j), err
}

// Run runs a job now and returns its answer.
func (c *Cron) Run(name string) (CronRunDTO, error) {
	ctx, cancel := c.with(turnTimeout)
	defer cancel()
	r, err := c.svc.Run(ctx, name)
	if err != nil && r.SessionID == "" {
		return CronRunDTO{}, err
	}
	return CronRunDTO{Job: r.Job, SessionID: r.SessionID, Reply: r.Reply, Error: r.Error}, nil
}
