// Package cron runs prompts on a schedule: each job's schedule is parsed
// by robfig/cron/v3 in an explicit time zone, and each run creates a
// session (source cron, the job's name as title), runs one turn through the
// turn loop (tools, plugins and compaction included), ends the session
// (on_session_finalize) and delivers the answer through the gateway's
// outbox when asked. The scheduler runs in the process that hosts the
// profile; a tick is claimed in the store before it runs (the job's
// last_tick moves forward in one statement), so two hosts never run the
// same tick, and a run missed while no host ran is run once at the next
// start, not once per missed tick.
package cron

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	robfig "github.com/robfig/cron/v3"

	"atrium/backend/apperr"
	"atrium/backend/db"
	"atrium/backend/gateway"
	"atrium/backend/hooks"
	"atrium/backend/sessions"
	"atrium/backend/turns"
)

// Job is one scheduled prompt.
type Job struct {
	Name          string     `json:"name"`
	Schedule      string     `json:"schedule"`
	Timezone      string     `json:"timezone"`
	Prompt        string     `json:"prompt"`
	Deliver       string     `json:"deliver"` // platform:chat_id[:thread_id], platform (its home channel), "" for none
	Paused        bool       `json:"paused"`
	CreatedAt     time.Time  `json:"created_at"`
	LastTick      *time.Time `json:"last_tick"`
	LastRunAt     *time.Time `json:"last_run_at"`
	LastSessionID string     `json:"last_session_id"`
	LastStatus    string     `json:"last_status"` // ok, error, running, ""
	LastError     string     `json:"last_error"`
	Runs          int64      `json:"runs"`
	NextRun       *time.Time `json:"next_run"` // computed; nil when paused
}

// Clock is the scheduler's time: Now, and a channel that fires at a moment
// (at once if it has passed). The scheduler sleeps until an absolute time,
// never for a duration reckoned from a Now read earlier, so a clock that
// moves meanwhile (a fake one in tests, a suspended laptop) cannot push the
// wake-up past the tick. Tests give a fake one.
type Clock interface {
	Now() time.Time
	At(t time.Time) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                  { return time.Now() }
func (realClock) At(t time.Time) <-chan time.Time { return time.After(time.Until(t)) }

// Options configure a Service.
type Options struct {
	DB       *db.DB
	Sessions *sessions.Service
	// Loop runs a job's turn; nil makes Run and the scheduler refuse.
	Loop *turns.Loop
	// Outbox takes the answers to deliver; Wake tells the gateway of this
	// process (if it runs one) that something waits.
	Outbox *gateway.Store
	Wake   func(platform string)
	// Home is a platform's home channel (a chat's /sethome, else its
	// configured home_channel): where a job delivering to the bare
	// platform name posts. nil: none.
	Home func(ctx context.Context, platform string) (chat, thread string, ok bool)
	// Media is which local files a delivered answer's MEDIA: tags may
	// send (gateway.SplitReply).
	Media  gateway.MediaPolicy
	Clock  Clock
	Logger *slog.Logger
	// Poll is the longest the scheduler sleeps before it looks at the
	// jobs again (jobs added by another process; default 30 s).
	Poll time.Duration
	// RunTimeout bounds one run (default 30 min).
	RunTimeout time.Duration
}

// Service stores jobs and, once started, runs them.
type Service struct {
	o   Options
	log *slog.Logger

	mu      sync.Mutex
	running map[string]bool
	wake    chan struct{}
	stop    context.CancelFunc
	runCtx  context.Context
	cancel  context.CancelFunc
	loopWG  sync.WaitGroup
	runWG   sync.WaitGroup
}

// New builds the service.
func New(o Options) *Service {
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if o.Poll <= 0 {
		o.Poll = 30 * time.Second
	}
	if o.RunTimeout <= 0 {
		o.RunTimeout = 30 * time.Minute
	}
	return &Service{o: o, log: o.Logger, running: map[string]bool{}, wake: make(chan struct{}, 1)}
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
var deliverPattern = regexp.MustCompile(`^([a-z][a-z0-9_-]{0,31}):([^:\s]{1,128})(?::([^\s]{1,128}))?$`)

// AddParams describe a new job.
type AddParams struct {
	Name     string
	Schedule string // five-field cron ("0 9 * * 1-5"), a descriptor ("@daily", "@every 2h"), optionally "CRON_TZ=Zone ..."
	Timezone string // IANA name; "" means the machine's zone, resolved and stored by name
	Prompt   string
	Deliver  string // platform:chat_id[:thread_id], or platform for its home channel
}

// Parse parses a schedule in a time zone with robfig/cron's standard
// parser. A "CRON_TZ=Zone" (or "TZ=Zone") prefix in the schedule wins over
// timezone; the zone returned is the one in force.
func Parse(schedule, timezone string) (robfig.Schedule, string, string, error) {
	spec := strings.TrimSpace(schedule)
	for _, p := range []string{"CRON_TZ=", "TZ="} {
		if strings.HasPrefix(spec, p) {
			zone, rest, _ := strings.Cut(strings.TrimPrefix(spec, p), " ")
			timezone, spec = zone, strings.TrimSpace(rest)
		}
	}
	if spec == "" {
		return nil, "", "", apperr.New(apperr.Invalid, "empty schedule: use five cron fields, e.g. \"0 9 * * 1-5\", or @daily, @hourly, @every 2h")
	}
	if timezone == "" {
		timezone = LocalZone()
	}
	if _, err := time.LoadLocation(timezone); err != nil {
		return nil, "", "", apperr.New(apperr.Invalid, "unknown time zone %q (use an IANA name such as Europe/Paris or UTC)", timezone)
	}
	sched, err := robfig.ParseStandard("CRON_TZ=" + timezone + " " + spec)
	if err != nil {
		return nil, "", "", apperr.New(apperr.Invalid, "invalid schedule %q: %v (five fields: minute hour day-of-month month day-of-week)", spec, err)
	}
	return sched, spec, timezone, nil
}

// LocalZone is the machine's time zone by IANA name ($TZ, else the target of
// /etc/localtime), "UTC" when it cannot be named: a job's zone is always
// stored explicitly, so moving the store or the machine never shifts it.
func LocalZone() string {
	if tz := strings.TrimPrefix(os.Getenv("TZ"), ":"); tz != "" {
		if _, err := time.LoadLocation(tz); err == nil {
			return tz
		}
	}
	if target, err := os.Readlink("/etc/localtime"); err == nil {
		if _, zone, ok := strings.Cut(target, "zoneinfo/"); ok {
			if _, err := time.LoadLocation(zone); err == nil {
				return zone
			}
		}
	}
	if b, err := os.ReadFile("/etc/timezone"); err == nil {
		if zone := strings.TrimSpace(string(b)); zone != "" {
			if _, err := time.LoadLocation(zone); err == nil {
				return zone
			}
		}
	}
	return "UTC"
}

// ParseDeliver splits platform:chat_id[:thread_id]; a bare platform name
// (the familiar --deliver telegram) is its home channel, chat "".
func ParseDeliver(s string) (platform, chat, thread string, err error) {
	s = strings.TrimSpace(s)
	if platformPattern.MatchString(s) {
		return s, "", "", nil
	}
	m := deliverPattern.FindStringSubmatch(s)
	if m == nil {
		return "", "", "", apperr.New(apperr.Invalid, "invalid --deliver %q: use platform:chat_id or platform:chat_id:thread_id (e.g. telegram:123456789), or the platform alone for its home channel", s)
	}
	return m[1], m[2], m[3], nil
}

var platformPattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// Add stores a new job; its first run is the schedule's first time after now.
func (s *Service) Add(ctx context.Context, p AddParams) (Job, error) {
	p.Name = strings.TrimSpace(p.Name)
	if !namePattern.MatchString(p.Name) {
		return Job{}, apperr.New(apperr.Invalid, "invalid job name %q: 1-64 letters, digits, '.', '_' or '-'", p.Name)
	}
	if strings.TrimSpace(p.Prompt) == "" {
		return Job{}, apperr.New(apperr.Invalid, "a job needs a prompt (--prompt TEXT)")
	}
	if len(p.Prompt) > 64<<10 {
		return Job{}, apperr.New(apperr.Invalid, "the prompt is over 64 KiB")
	}
	_, spec, zone, err := Parse(p.Schedule, p.Timezone)
	if err != nil {
		return Job{}, err
	}
	if p.Deliver != "" {
		if _, _, _, err := ParseDeliver(p.Deliver); err != nil {
			return Job{}, err
		}
	}
	err = s.o.DB.InTx(ctx, func(tx *db.Tx) error {
		return tx.G.WithContext(ctx).Exec(`INSERT INTO cron_jobs (name, schedule, timezone, prompt, deliver, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			p.Name, spec, zone, p.Prompt, strings.TrimSpace(p.Deliver), db.Ms(s.o.Clock.Now())).Error
	})
	if apperr.CodeOf(err) == apperr.Conflict || (err != nil && strings.Contains(err.Error(), "UNIQUE")) {
		return Job{}, apperr.New(apperr.Conflict, "a job named %s already exists (cron remove %s first)", p.Name, p.Name)
	}
	if err != nil {
		return Job{}, err
	}
	s.Wake()
	return s.Get(ctx, p.Name)
}

type jobRow struct {
	Name, Schedule, Timezone, Prompt, Deliver string
	Paused                                    bool
	CreatedAt                                 int64
	LastTick, LastRunAt                       *int64
	LastSessionID, LastStatus, LastError      string
	Runs                                      int64
}

const jobCols = `name, schedule, timezone, prompt, deliver, paused, created_at, last_tick, last_run_at, last_session_id, last_status, last_error, runs`

func (r jobRow) job() Job {
	j := Job{Name: r.Name, Schedule: r.Schedule, Timezone: r.Timezone, Prompt: r.Prompt, Deliver: r.Deliver, Paused: r.Paused,
		CreatedAt: time.UnixMilli(r.CreatedAt).UTC(), LastSessionID: r.LastSessionID, LastStatus: r.LastStatus, LastError: r.LastError, Runs: r.Runs}
	if r.LastTick != nil {
		t := time.UnixMilli(*r.LastTick).UTC()
		j.LastTick = &t
	}
	if r.LastRunAt != nil {
		t := time.UnixMilli(*r.LastRunAt).UTC()
		j.LastRunAt = &t
	}
	if !j.Paused {
		if next, ok := j.next(); ok {
			j.NextRun = &next
		}
	}
	return j
}

// base is the time the next run follows: the last tick claimed, else the
// job's creation.
func (j Job) base() time.Time {
	if j.LastTick != nil {
		return *j.LastTick
	}
	return j.CreatedAt
}

func (j Job) next() (time.Time, bool) {
	sched, _, _, err := Parse(j.Schedule, j.Timezone)
	if err != nil {
		return time.Time{}, false
	}
	n := sched.Next(j.base())
	return n.UTC(), !n.IsZero()
}

// List returns every job, by name.
func (s *Service) List(ctx context.Context) ([]Job, error) {
	var rows []jobRow
	if err := s.o.DB.Read.WithContext(ctx).Raw(`SELECT ` + jobCols + ` FROM cron_jobs ORDER BY name`).Scan(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]Job, len(rows))
	for i, r := range rows {
		out[i] = r.job()
	}
	return out, nil
}

// Get returns one job.
func (s *Service) Get(ctx context.Context, name string) (Job, error) {
	var rows []jobRow
	if err := s.o.DB.Read.WithContext(ctx).Raw(`SELECT `+jobCols+` FROM cron_jobs WHERE name = ?`, name).Scan(&rows).Error; err != nil {
		return Job{}, err
	}
	if len(rows) == 0 {
		return Job{}, apperr.New(apperr.NotFound, "no cron job named %q (cron list shows them)", clip(name, 64))
	}
	return rows[0].job(), nil
}

// Remove deletes a job (its past sessions stay).
func (s *Service) Remove(ctx context.Context, name string) error {
	var n int64
	err := s.o.DB.InTx(ctx, func(tx *db.Tx) error {
		res := tx.G.WithContext(ctx).Exec(`DELETE FROM cron_jobs WHERE name = ?`, name)
		n = res.RowsAffected
		return res.Error
	})
	if err == nil && n == 0 {
		return apperr.New(apperr.NotFound, "no cron job named %q (cron list shows them)", clip(name, 64))
	}
	return err
}

// SetPaused pauses or resumes a job. Resuming does not run the ticks missed
// while paused: the next run is the schedule's next time from now.
func (s *Service) SetPaused(ctx context.Context, name string, paused bool) (Job, error) {
	var n int64
	err := s.o.DB.InTx(ctx, func(tx *db.Tx) error {
		q := `UPDATE cron_jobs SET paused = ? WHERE name = ?`
		args := []any{paused, name}
		if !paused {
			q = `UPDATE cron_jobs SET paused = 0, last_tick = CASE WHEN paused = 1 THEN ? ELSE last_tick END WHERE name = ?`
			args = []any{db.Ms(s.o.Clock.Now()), name}
		}
		res := tx.G.WithContext(ctx).Exec(q, args...)
		n = res.RowsAffected
		return res.Error
	})
	if err != nil {
		return Job{}, err
	}
	if n == 0 {
		return Job{}, apperr.New(apperr.NotFound, "no cron job named %q (cron list shows them)", clip(name, 64))
	}
	s.Wake()
	return s.Get(ctx, name)
}

// Result is one run's outcome.
type Result struct {
	Job       string `json:"job"`
	SessionID string `json:"session_id"` // the run's session (the first part, when it rotated)
	FinalID   string `json:"final_session_id"`
	Reply     string `json:"reply"`
	Delivered int64  `json:"delivery_id,omitempty"` // the outbox row, when delivered
	Error     string `json:"error,omitempty"`
}

// Run runs a job now, in this process, whatever its schedule (paused jobs
// too: a person asked). Its tick is not moved.
func (s *Service) Run(ctx context.Context, name string) (Result, error) {
	j, err := s.Get(ctx, name)
	if err != nil {
		return Result{}, err
	}
	if !s.claimRunning(j.Name) {
		return Result{}, apperr.New(apperr.Conflict, "job %s is already running in this process", j.Name)
	}
	defer s.releaseRunning(j.Name)
	res, err := s.run(ctx, j)
	return res, err
}

func (s *Service) claimRunning(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running[name] {
		return false
	}
	s.running[name] = true
	return true
}

func (s *Service) releaseRunning(name string) {
	s.mu.Lock()
	delete(s.running, name)
	s.mu.Unlock()
}

// run makes the job's session, runs its turn, ends the session and
// delivers the answer.
func (s *Service) run(ctx context.Context, j Job) (Result, error) {
	if s.o.Loop == nil {
		return Result{}, apperr.New(apperr.Internal, "cron has no turn loop")
	}
	res := Result{Job: j.Name}
	sess, err := s.o.Sessions.Create(ctx, sessions.CreateParams{Title: j.Name, Source: "cron", Platform: turns.PlatformCron})
	if err != nil {
		return res, s.record(ctx, j.Name, "", err)
	}
	res.SessionID, res.FinalID = sess.ID, sess.ID
	s.mark(ctx, j.Name, sess.ID)
	cc := hooks.CommandContext{SessionID: sess.ID, SessionKey: "cron:" + j.Name, Platform: turns.PlatformCron}
	rctx, cancel := context.WithTimeout(ctx, s.o.RunTimeout)
	t, runErr := s.o.Loop.Send(rctx, sess.ID, j.Prompt, cc)
	cancel()
	if t.SessionID != "" {
		res.FinalID = t.SessionID
	}
	res.Reply = gateway.Answer(t)
	// The run is over: its session ends (on_session_finalize), even when
	// the turn failed.
	if _, _, err := s.o.Sessions.EndWith(context.WithoutCancel(ctx), res.FinalID, "cron", sessions.EndInfo{Platform: turns.PlatformCron}); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		res.Error = runErr.Error()
	}
	if j.Deliver != "" {
		text := res.Reply
		if runErr != nil {
			text = fmt.Sprintf("Cron job %s failed: %s", j.Name, gateway.PlainError(runErr))
		}
		if text != "" {
			if id, err := s.deliver(ctx, j, res.FinalID, text); err != nil {
				s.log.Warn("cron: the answer could not be queued for delivery", "job", j.Name, "error", err)
				if runErr == nil { // the run's record says why nobody got its answer
					runErr = fmt.Errorf("the answer was not delivered: %w", err)
					res.Error = runErr.Error()
				}
			} else {
				res.Delivered = id
			}
		}
	}
	return res, s.record(context.WithoutCancel(ctx), j.Name, sess.ID, runErr)
}

func (s *Service) deliver(ctx context.Context, j Job, sessionID, text string) (int64, error) {
	if s.o.Outbox == nil {
		return 0, errors.New("no gateway outbox")
	}
	platform, chat, thread, err := ParseDeliver(j.Deliver)
	if err != nil {
		return 0, err
	}
	if chat == "" {
		ok := false
		if s.o.Home != nil {
			chat, thread, ok = s.o.Home(ctx, platform)
		}
		if !ok {
			return 0, apperr.New(apperr.Invalid, "%s has no home channel to deliver to: type /sethome in the chat that should get it, or set %s_HOME_CHANNEL in the profile's .env (or gateway.%s.home_channel)",
				platform, strings.ToUpper(platform), platform)
		}
	}
	// The answer's text, then the files its MEDIA: tags name.
	msgs := gateway.SplitReply(gateway.Outbound{Platform: platform, ChatID: chat, ThreadID: thread,
		Text: text, SessionID: sessionID, Origin: "cron:" + j.Name, Markdown: true}, s.o.Media)
	if len(msgs) == 0 {
		return 0, nil
	}
	ids, err := s.o.Outbox.EnqueueAll(context.WithoutCancel(ctx), msgs, 0)
	if err != nil {
		return 0, err
	}
	// The chat's own conversation learns what the job sent there, as the
	// familiar scheduler mirrors it: a message of the person's side, named
	// as the job's (the agent did not say it there).
	if s.o.Sessions != nil {
		if _, err := s.o.Outbox.Mirror(context.WithoutCancel(ctx), s.o.Sessions, platform, chat, thread, sessionID,
			sessions.NewMessage{Role: "user", Content: "[Cron delivery: " + j.Name + "]\n" + text}); err != nil {
			s.log.Warn("cron: the answer was queued, and not mirrored into the chat's conversation", "job", j.Name, "error", err)
		}
	}
	if s.o.Wake != nil {
		s.o.Wake(platform)
	}
	return ids[0], nil
}

// mark records that a run started (its session, status running).
func (s *Service) mark(ctx context.Context, name, sessionID string) {
	_ = s.o.DB.InTx(ctx, func(tx *db.Tx) error {
		return tx.G.WithContext(ctx).Exec(`UPDATE cron_jobs SET last_run_at = ?, last_session_id = ?, last_status = 'running', last_error = ''
			WHERE name = ?`, db.Ms(s.o.Clock.Now()), sessionID, name).Error
	})
}

// record stores a run's outcome and returns runErr.
func (s *Service) record(ctx context.Context, name, sessionID string, runErr error) error {
	status, text := "ok", ""
	if runErr != nil {
		status, text = "error", clip(runErr.Error(), 500)
	}
	err := s.o.DB.InTx(ctx, func(tx *db.Tx) error {
		return tx.G.WithContext(ctx).Exec(`UPDATE cron_jobs SET last_status = ?, last_error = ?, runs = runs + 1,
			last_session_id = CASE WHEN ? <> '' THEN ? ELSE last_session_id END WHERE name = ?`, status, text, sessionID, sessionID, name).Error
	})
	if runErr != nil {
		return runErr
	}
	return err
}

// Wake makes the scheduler look at the jobs again now.
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Start runs the scheduler in the background until Stop.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop != nil {
		return apperr.New(apperr.Conflict, "the scheduler is already running")
	}
	lctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stop = stop
	s.runCtx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.loopWG.Add(1)
	go func() {
		defer s.loopWG.Done()
		s.loop(lctx)
	}()
	return nil
}

// Stop stops the scheduler; runs in flight finish, bounded by ctx.
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	stop, cancel := s.stop, s.cancel
	s.stop = nil
	s.mu.Unlock()
	if stop == nil {
		return nil
	}
	stop()
	s.loopWG.Wait()
	done := make(chan struct{})
	go func() { s.runWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		cancel()
		<-done
	}
	cancel()
	return nil
}

func (s *Service) loop(ctx context.Context) {
	for {
		next := s.tick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-s.o.Clock.At(next):
		}
	}
}

// maxCatchUp bounds the walk to the latest missed tick.
const maxCatchUp = 100000

// tick claims and starts every due job, once each however many ticks were
// missed, and returns when to look again: when the next one is due, or
// after Poll.
func (s *Service) tick(ctx context.Context) time.Time {
	wait := s.o.Poll
	jobs, err := s.List(ctx)
	now := s.o.Clock.Now()
	if err != nil {
		if ctx.Err() == nil { // stopping is not a failure to report
			s.log.Warn("cron: cannot read the jobs", "error", err)
		}
		return now.Add(wait)
	}
	for _, j := range jobs {
		if j.Paused {
			continue
		}
		sched, _, _, err := Parse(j.Schedule, j.Timezone)
		if err != nil {
			continue
		}
		next := sched.Next(j.base())
		if next.IsZero() {
			continue
		}
		if next.After(now) {
			wait = min(wait, next.Sub(now))
			continue
		}
		due := next
		for i := 0; i < maxCatchUp; i++ {
			n := sched.Next(due)
			if n.IsZero() || n.After(now) {
				break
			}
			due = n
		}
		claimed, err := s.claim(ctx, j.Name, due)
		if err != nil || !claimed {
			continue
		}
		if n := sched.Next(due); !n.IsZero() {
			wait = min(wait, max(n.Sub(now), time.Millisecond))
		}
		if !s.claimRunning(j.Name) {
			s.log.Warn("cron: a run is still going; this tick is skipped", "job", j.Name, "tick", due)
			continue
		}
		s.runWG.Add(1)
		go func(j Job) {
			defer s.runWG.Done()
			defer s.releaseRunning(j.Name)
			if _, err := s.run(s.runCtx, j); err != nil {
				s.log.Warn("cron: a run failed", "job", j.Name, "error", err)
			}
		}(j)
	}
	return now.Add(wait)
}

// claim moves the job's last tick to due in one statement; false when
// another host (or an earlier tick of this one) claimed it first.
func (s *Service) claim(ctx context.Context, name string, due time.Time) (bool, error) {
	var ok bool
	err := s.o.DB.InTx(ctx, func(tx *db.Tx) error {
		res := tx.G.WithContext(ctx).Exec(`UPDATE cron_jobs SET last_tick = ? WHERE name = ? AND paused = 0 AND COALESCE(last_tick, 0) < ?`,
			db.Ms(due), name, db.Ms(due))
		ok = res.RowsAffected == 1
		return res.Error
	})
	return ok, err
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
