package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/db"
)

// Store is the gateway's part of the profile's store: routes, the outbox,
// inbound messages already taken, refused senders and adapter states. It
// is the only owner of the gateway_* tables.
type Store struct{ db *db.DB }

// NewStore wraps d.
func NewStore(d *db.DB) *Store { return &Store{db: d} }

// Route is the current session of one conversation.
type Route struct {
	SessionKey string
	Platform   string
	SessionID  string
	UpdatedAt  time.Time
}

// Routes are the conversations the gateway has had, the most recent first,
// at most limit.
func (s *Store) Routes(ctx context.Context, limit int) ([]Route, error) {
	var rows []struct {
		SessionKey, Platform, SessionID string
		UpdatedAt                       int64
	}
	if err := s.db.Read.WithContext(ctx).Raw(`SELECT session_key, platform, session_id, updated_at FROM gateway_routes
		ORDER BY updated_at DESC, session_key` + db.Limit(limit)).Scan(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]Route, len(rows))
	for i, r := range rows {
		out[i] = Route{SessionKey: r.SessionKey, Platform: r.Platform, SessionID: r.SessionID, UpdatedAt: ms(r.UpdatedAt)}
	}
	return out, nil
}

// Route returns the session a conversation is in ("" when it has none).
func (s *Store) Route(ctx context.Context, key string) (string, error) {
	var ids []string
	if err := s.db.Read.WithContext(ctx).Raw(`SELECT session_id FROM gateway_routes WHERE session_key = ?`, key).Scan(&ids).Error; err != nil {
		return "", err
	}
	if len(ids) == 0 {
		return "", nil
	}
	return ids[0], nil
}

// SetRoute points a conversation at a session.
func (s *Store) SetRoute(ctx context.Context, key, platform, sessionID string) error {
	return s.db.InTx(ctx, func(tx *db.Tx) error {
		return tx.G.WithContext(ctx).Exec(`INSERT INTO gateway_routes (session_key, platform, session_id, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (session_key) DO UPDATE SET session_id = excluded.session_id, updated_at = excluded.updated_at`,
			key, platform, sessionID, db.Ms(tx.Now)).Error
	})
}

// Take records an inbound message by its platform event id. It is false
// when the message was already taken (a platform redelivered it): the
// caller drops it, so a redelivery never runs a second turn.
func (s *Store) Take(ctx context.Context, platform, eventID string) (bool, error) {
	if eventID == "" {
		return true, nil
	}
	var taken bool
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		res := tx.G.WithContext(ctx).Exec(`INSERT OR IGNORE INTO gateway_inbound (platform, event_id, seen_at) VALUES (?, ?, ?)`,
			platform, eventID, db.Ms(tx.Now))
		taken = res.RowsAffected == 1
		return res.Error
	})
	return taken, err
}

// PruneInbound forgets inbound ids older than d (platforms redeliver for
// minutes to a day, not longer).
func (s *Store) PruneInbound(ctx context.Context, older time.Time) error {
	return s.db.InTx(ctx, func(tx *db.Tx) error {
		return tx.G.WithContext(ctx).Exec(`DELETE FROM gateway_inbound WHERE seen_at < ?`, db.Ms(older)).Error
	})
}

// PruneDelivered drops the replies delivered before older (the outbox is
// for what waits; a delivered reply is in its session's transcript) and
// the refused senders last seen before refusedBefore; how many of each.
func (s *Store) PruneDelivered(ctx context.Context, older, refusedBefore time.Time) (sent, refused int64, err error) {
	err = s.db.InTx(ctx, func(tx *db.Tx) error {
		res := tx.G.WithContext(ctx).Exec(`DELETE FROM gateway_outbox WHERE state = 'sent' AND sent_at < ?`, db.Ms(older))
		if res.Error != nil {
			return res.Error
		}
		sent = res.RowsAffected
		res = tx.G.WithContext(ctx).Exec(`DELETE FROM gateway_refusals WHERE last_at < ?`, db.Ms(refusedBefore))
		refused = res.RowsAffected
		return res.Error
	})
	return sent, refused, err
}

// Refusal is a sender who was refused.
type Refusal struct {
	Platform string    `json:"platform"`
	UserID   string    `json:"user_id"`
	UserName string    `json:"user_name"`
	ChatID   string    `json:"chat_id"`
	FirstAt  time.Time `json:"first_at"`
	LastAt   time.Time `json:"last_at"`
	Count    int64     `json:"count"`
}

// Refuse records that a sender was refused; first is true the first time
// (the one time the sender is told).
func (s *Store) Refuse(ctx context.Context, platform, userID, userName, chatID string) (first bool, err error) {
	err = s.db.InTx(ctx, func(tx *db.Tx) error {
		res := tx.G.WithContext(ctx).Exec(`INSERT OR IGNORE INTO gateway_refusals (platform, user_id, user_name, chat_id, first_at, last_at)
			VALUES (?, ?, ?, ?, ?, ?)`, platform, userID, userName, chatID, db.Ms(tx.Now), db.Ms(tx.Now))
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 1 {
			first = true
			return nil
		}
		return tx.G.WithContext(ctx).Exec(`UPDATE gateway_refusals SET last_at = ?, count = count + 1, user_name = ?, chat_id = ?
			WHERE platform = ? AND user_id = ?`, db.Ms(tx.Now), userName, chatID, platform, userID).Error
	})
	return first, err
}

// Refusals lists refused senders, most recent first.
func (s *Store) Refusals(ctx context.Context, limit int) ([]Refusal, error) {
	type row struct {
		Platform, UserID, UserName, ChatID string
		FirstAt, LastAt                    int64
		Count                              int64
	}
	var rows []row
	err := s.db.Read.WithContext(ctx).Raw(`SELECT platform, user_id, user_name, chat_id, first_at, last_at, count
		FROM gateway_refusals ORDER BY last_at DESC` + db.Limit(limit)).Scan(&rows).Error
	out := make([]Refusal, len(rows))
	for i, r := range rows {
		out[i] = Refusal{Platform: r.Platform, UserID: r.UserID, UserName: r.UserName, ChatID: r.ChatID,
			FirstAt: time.UnixMilli(r.FirstAt).UTC(), LastAt: time.UnixMilli(r.LastAt).UTC(), Count: r.Count}
	}
	return out, err
}

// Delivery is one reply waiting in (or gone from) the outbox.
type Delivery struct {
	ID        int64      `json:"id"`
	Platform  string     `json:"platform"`
	ChatID    string     `json:"chat_id"`
	ThreadID  string     `json:"thread_id"`
	ReplyTo   string     `json:"reply_to"`
	Text      string     `json:"text"`
	SessionID string     `json:"session_id"`
	Origin    string     `json:"origin"` // reply, refusal, cron:<job>
	CreatedAt time.Time  `json:"created_at"`
	NextAt    time.Time  `json:"next_at"`
	Deadline  time.Time  `json:"deadline"`
	Attempts  int        `json:"attempts"`
	LastError string     `json:"last_error"`
	State     string     `json:"state"` // pending, sent, failed
	SentAt    *time.Time `json:"sent_at"`
	MessageID string     `json:"message_id"`
	Buttons   [][]Button `json:"buttons,omitempty"`
	File      *OutFile   `json:"file,omitempty"`
	Markdown  bool       `json:"markdown,omitempty"` // the model wrote it (Outbound.Markdown)
}

// Outbound is a message to send.
type Outbound struct {
	Platform  string
	ChatID    string
	ThreadID  string
	ReplyTo   string // the platform's id of the message answered, when it threads replies
	Text      string
	SessionID string
	Origin    string
	Buttons   [][]Button // under the message, where the platform has them
	File      *OutFile   // a file to send instead of text (SplitReply)
	// Markdown says the model wrote Text: an adapter writes it in its
	// platform's markup (Message.Markdown). Atrium's own words go as they
	// are.
	Markdown bool
}

// Delivery states.
const (
	StatePending = "pending"
	StateSent    = "sent"
	StateFailed  = "failed"
)

// DefaultDeadline is how long a reply is retried.
const DefaultDeadline = 24 * time.Hour

// Enqueue adds a message to the outbox, after the turn that made it
// committed; the host's delivery worker of its platform sends it (and
// retries it) from there. deadline <= 0 means DefaultDeadline.
func (s *Store) Enqueue(ctx context.Context, o Outbound, deadline time.Duration) (int64, error) {
	ids, err := s.EnqueueAll(ctx, []Outbound{o}, deadline)
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// EnqueueAll adds messages to the outbox in one transaction, in order (a
// reply's text and its files: SplitReply): all or none.
func (s *Store) EnqueueAll(ctx context.Context, msgs []Outbound, deadline time.Duration) ([]int64, error) {
	if len(msgs) == 0 {
		return nil, apperr.New(apperr.Invalid, "nothing to deliver")
	}
	for _, o := range msgs {
		if strings.TrimSpace(o.Platform) == "" || strings.TrimSpace(o.ChatID) == "" {
			return nil, apperr.New(apperr.Invalid, "a delivery needs a platform and a chat id")
		}
	}
	if deadline <= 0 {
		deadline = DefaultDeadline
	}
	ids := make([]int64, 0, len(msgs))
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		ids = ids[:0]
		for _, o := range msgs {
			buttons, err := jsonOrEmpty(len(o.Buttons) > 0, o.Buttons)
			if err != nil {
				return err
			}
			file, err := jsonOrEmpty(o.File != nil, o.File)
			if err != nil {
				return err
			}
			if err := tx.G.WithContext(ctx).Exec(`INSERT INTO gateway_outbox (platform, chat_id, thread_id, reply_to, text, session_id, origin,
			created_at, next_at, deadline, buttons, file, markdown) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, o.Platform, o.ChatID, o.ThreadID, o.ReplyTo, o.Text,
				o.SessionID, o.Origin, db.Ms(tx.Now), db.Ms(tx.Now), db.Ms(tx.Now.Add(deadline)), buttons, file, o.Markdown).Error; err != nil {
				return err
			}
			var id int64
			if err := tx.G.WithContext(ctx).Raw(`SELECT last_insert_rowid()`).Scan(&id).Error; err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return nil
	})
	return ids, err
}

// jsonOrEmpty is v as JSON when set, else "".
func jsonOrEmpty(set bool, v any) (string, error) {
	if !set {
		return "", nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}

type deliveryRow struct {
	ID                                        int64
	Platform, ChatID, ThreadID, ReplyTo, Text string
	SessionID, Origin                         string
	CreatedAt, NextAt, Deadline               int64
	Attempts                                  int
	LastError, State                          string
	SentAt                                    *int64
	MessageID                                 string
	Buttons, File                             string
	Markdown                                  bool
}

func (r deliveryRow) delivery() Delivery {
	d := Delivery{ID: r.ID, Platform: r.Platform, ChatID: r.ChatID, ThreadID: r.ThreadID, ReplyTo: r.ReplyTo, Text: r.Text,
		SessionID: r.SessionID, Origin: r.Origin, CreatedAt: ms(r.CreatedAt), NextAt: ms(r.NextAt), Deadline: ms(r.Deadline),
		Attempts: r.Attempts, LastError: r.LastError, State: r.State, MessageID: r.MessageID, Markdown: r.Markdown}
	if r.SentAt != nil {
		t := ms(*r.SentAt)
		d.SentAt = &t
	}
	if r.Buttons != "" {
		_ = json.Unmarshal([]byte(r.Buttons), &d.Buttons) // written by Enqueue: no reason to fail
	}
	if r.File != "" {
		var f OutFile
		if json.Unmarshal([]byte(r.File), &f) == nil {
			d.File = &f
		}
	}
	return d
}

func ms(v int64) time.Time { return time.UnixMilli(v).UTC() }

const deliveryCols = `id, platform, chat_id, thread_id, reply_to, text, session_id, origin, created_at, next_at, deadline, attempts,
	last_error, state, sent_at, message_id, buttons, file, markdown`

// next returns the oldest pending delivery of platform (due or not): the
// outbox of one platform goes out in order.
func (s *Store) next(ctx context.Context, platform string) (Delivery, bool, error) {
	var rows []deliveryRow
	err := s.db.Read.WithContext(ctx).Raw(`SELECT `+deliveryCols+` FROM gateway_outbox
		WHERE platform = ? AND state = 'pending' ORDER BY id LIMIT 1`, platform).Scan(&rows).Error
	if err != nil || len(rows) == 0 {
		return Delivery{}, false, err
	}
	return rows[0].delivery(), true, nil
}

// Deliveries lists the outbox, newest first (state "" for all).
func (s *Store) Deliveries(ctx context.Context, state string, limit int) ([]Delivery, error) {
	var rows []deliveryRow
	q := s.db.Read.WithContext(ctx)
	var err error
	if state == "" {
		err = q.Raw(`SELECT ` + deliveryCols + ` FROM gateway_outbox ORDER BY id DESC` + db.Limit(limit)).Scan(&rows).Error
	} else {
		err = q.Raw(`SELECT `+deliveryCols+` FROM gateway_outbox WHERE state = ? ORDER BY id DESC`+db.Limit(limit), state).Scan(&rows).Error
	}
	out := make([]Delivery, len(rows))
	for i, r := range rows {
		out[i] = r.delivery()
	}
	return out, err
}

// PairingSentText is what the outbox keeps of a pairing code's message
// once it is delivered: the code itself is not kept.
const PairingSentText = "(a pairing code was sent; codes are not kept)"

// markSent records a delivered message; only a pending row changes, so two
// workers never count one delivery twice. A pairing code's text is not
// kept past its delivery.
func (s *Store) markSent(ctx context.Context, id int64, messageID string) (bool, error) {
	var ok bool
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		res := tx.G.WithContext(ctx).Exec(`UPDATE gateway_outbox SET state = 'sent', sent_at = ?, message_id = ?, attempts = attempts + 1,
			last_error = '', text = CASE WHEN origin = 'pairing' THEN ? ELSE text END WHERE id = ? AND state = 'pending'`,
			db.Ms(tx.Now), messageID, PairingSentText, id)
		ok = res.RowsAffected == 1
		return res.Error
	})
	return ok, err
}

// markFailed records a failed attempt: retried at next, or given up (state
// failed) when final.
func (s *Store) markFailed(ctx context.Context, id int64, errText string, next time.Time, final bool) error {
	state := StatePending
	if final {
		state = StateFailed
	}
	return s.db.InTx(ctx, func(tx *db.Tx) error {
		return tx.G.WithContext(ctx).Exec(`UPDATE gateway_outbox SET attempts = attempts + 1, last_error = ?, next_at = ?, state = ?
			WHERE id = ? AND state = 'pending'`, clip(errText, 500), db.Ms(next), state, id).Error
	})
}

// Retry puts failed deliveries back in the queue now (the Gateway page's
// "Retry"); it returns how many.
func (s *Store) Retry(ctx context.Context, platform string) (int64, error) {
	var n int64
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		res := tx.G.WithContext(ctx).Exec(`UPDATE gateway_outbox SET state = 'pending', next_at = ?, deadline = ?
			WHERE state = 'failed' AND (? = '' OR platform = ?)`, db.Ms(tx.Now), db.Ms(tx.Now.Add(DefaultDeadline)), platform, platform)
		n = res.RowsAffected
		return res.Error
	})
	return n, err
}

// Counts is the outbox per state for one platform.
type Counts struct {
	Pending, Sent, Failed int64
}

// OutboxCounts counts the outbox by platform and state.
func (s *Store) OutboxCounts(ctx context.Context) (map[string]Counts, error) {
	type row struct {
		Platform, State string
		N               int64
	}
	var rows []row
	if err := s.db.Read.WithContext(ctx).Raw(`SELECT platform, state, COUNT(*) AS n FROM gateway_outbox GROUP BY platform, state`).Scan(&rows).Error; err != nil {
		return nil, err
	}
	out := map[string]Counts{}
	for _, r := range rows {
		c := out[r.Platform]
		switch r.State {
		case StatePending:
			c.Pending = r.N
		case StateSent:
			c.Sent = r.N
		case StateFailed:
			c.Failed = r.N
		}
		out[r.Platform] = c
	}
	return out, nil
}

// Status is an adapter's state as the process running it last wrote it.
type Status struct {
	Platform    string     `json:"platform"`
	State       string     `json:"state"` // starting, connected, retrying, error, stopped
	Detail      string     `json:"detail"`
	LastError   string     `json:"last_error"`
	LastErrorAt *time.Time `json:"last_error_at"`
	Received    int64      `json:"received"`
	Sent        int64      `json:"sent"`
	PID         int        `json:"pid"`
	Process     string     `json:"process"`
	UpdatedAt   time.Time  `json:"updated_at"`
}

// Adapter states.
const (
	Starting  = "starting"
	Connected = "connected"
	Retrying  = "retrying"
	Errored   = "error"
	Stopped   = "stopped"
)

// SetStatus writes an adapter's state (an error, when given, becomes its
// last error; state changes keep it).
func (s *Store) SetStatus(ctx context.Context, st Status) error {
	return s.db.InTx(ctx, func(tx *db.Tx) error {
		var errAt any
		if st.LastError != "" {
			errAt = db.Ms(tx.Now)
		}
		return tx.G.WithContext(ctx).Exec(`INSERT INTO gateway_status (platform, state, detail, last_error, last_error_at, pid, process, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (platform) DO UPDATE SET state = excluded.state, detail = excluded.detail, pid = excluded.pid,
			process = excluded.process, updated_at = excluded.updated_at,
			last_error = CASE WHEN excluded.last_error <> '' THEN excluded.last_error ELSE gateway_status.last_error END,
			last_error_at = CASE WHEN excluded.last_error <> '' THEN excluded.last_error_at ELSE gateway_status.last_error_at END`,
			st.Platform, st.State, clip(st.Detail, 300), clip(st.LastError, 500), errAt, st.PID, st.Process, db.Ms(tx.Now)).Error
	})
}

// count adds to an adapter's received/sent counters.
func (s *Store) count(ctx context.Context, platform, column string) error {
	if column != "received" && column != "sent" {
		return errors.New("unknown counter")
	}
	return s.db.InTx(ctx, func(tx *db.Tx) error {
		return tx.G.WithContext(ctx).Exec(fmt.Sprintf(`UPDATE gateway_status SET %s = %s + 1 WHERE platform = ?`, column, column), platform).Error
	})
}

// Statuses lists every adapter's last known state.
func (s *Store) Statuses(ctx context.Context) ([]Status, error) {
	type row struct {
		Platform, State, Detail, LastError string
		LastErrorAt                        *int64
		Received, Sent                     int64
		PID                                int
		Process                            string
		UpdatedAt                          int64
	}
	var rows []row
	if err := s.db.Read.WithContext(ctx).Raw(`SELECT platform, state, detail, last_error, last_error_at, received, sent, pid, process, updated_at
		FROM gateway_status ORDER BY platform`).Scan(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]Status, len(rows))
	for i, r := range rows {
		out[i] = Status{Platform: r.Platform, State: r.State, Detail: r.Detail, LastError: r.LastError, Received: r.Received,
			Sent: r.Sent, PID: r.PID, Process: r.Process, UpdatedAt: ms(r.UpdatedAt)}
		if r.LastErrorAt != nil {
			t := ms(*r.LastErrorAt)
			out[i].LastErrorAt = &t
		}
	}
	return out, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// Home is a platform's home channel as a chat's /sethome set it.
type Home struct {
	Platform string    `json:"platform"`
	ChatID   string    `json:"chat_id"`
	ThreadID string    `json:"thread_id"`
	SetBy    string    `json:"set_by"`
	SetAt    time.Time `json:"set_at"`
}

// SetHome makes chat (and thread) platform's home channel.
func (s *Store) SetHome(ctx context.Context, platform, chatID, threadID, setBy string) error {
	return s.db.InTx(ctx, func(tx *db.Tx) error {
		return tx.G.WithContext(ctx).Exec(`INSERT INTO gateway_homes (platform, chat_id, thread_id, set_by, set_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (platform) DO UPDATE SET chat_id = excluded.chat_id, thread_id = excluded.thread_id, set_by = excluded.set_by,
			set_at = excluded.set_at`, platform, chatID, threadID, clip(setBy, 256), db.Ms(tx.Now)).Error
	})
}

// Homes are the home channels chats set, by platform.
func (s *Store) Homes(ctx context.Context) (map[string]Home, error) {
	type row struct {
		Platform, ChatID, ThreadID, SetBy string
		SetAt                             int64
	}
	var rows []row
	if err := s.db.Read.WithContext(ctx).Raw(`SELECT platform, chat_id, thread_id, set_by, set_at FROM gateway_homes`).Scan(&rows).Error; err != nil {
		return nil, err
	}
	out := make(map[string]Home, len(rows))
	for _, r := range rows {
		out[r.Platform] = Home{Platform: r.Platform, ChatID: r.ChatID, ThreadID: r.ThreadID, SetBy: r.SetBy, SetAt: time.UnixMilli(r.SetAt).UTC()}
	}
	return out, nil
}
