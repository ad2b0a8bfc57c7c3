package gateway_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/db"
	"atrium/backend/gateway"
	"atrium/backend/gateway/gatewaytest"
)

var pairingCodeIn = regexp.MustCompile("pairing code: `?([A-Z2-9]{8})`?")

// DM pairing, as the familiar gateway pairs, on a platform that lets
// nobody in yet: a stranger's DM is answered with a one-time code and the
// command that approves it; asking again within 10 minutes is answered by
// nothing; a wrong code is refused; the right one (any case) lets them
// in, in DMs and groups alike, and their messages reach the agent;
// revoked, they are out again. The code is never logged, nor kept (the
// outbox drops its message's text once delivered).
func TestDMPairing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9)
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f))
	sent := sentTo(t, f)
	store := gateway.NewStore(e.db)
	ctx := context.Background()

	f.Push(777, "Mallory", 777, "private", "hello?")
	got := sent(1, "the pairing code")
	m := pairingCodeIn.FindStringSubmatch(got)
	if m == nil || !strings.HasPrefix(got, "Hi~ I don't recognize you yet!") || !strings.Contains(got, "`atrium pairing approve telegram "+m[1]+"`") {
		t.Fatalf("the offer: %q", got)
	}
	code := m[1]
	f.Push(777, "Mallory", 777, "private", "please?")
	waitFor(t, "the second message taken", func() bool {
		return e.count(t, `SELECT COUNT(*) FROM gateway_inbound WHERE platform = 'telegram'`) == 2
	})
	reqs, err := store.PairingRequests(ctx)
	if err != nil || len(reqs) != 1 || reqs[0].UserID != "777" || reqs[0].UserName != "Mallory" || len(reqs[0].ID) != 16 {
		t.Fatalf("requests: %+v %v", reqs, err)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM gateway_pairing_requests WHERE code_hash LIKE ? OR salt LIKE ?`, "%"+code+"%", "%"+code+"%"); n != 0 {
		t.Fatal("the code is kept")
	}
	waitFor(t, "the offer's text dropped once sent", func() bool {
		return e.count(t, `SELECT COUNT(*) FROM gateway_outbox WHERE origin = 'pairing' AND state = 'sent' AND text = ?`, gateway.PairingSentText) == 1
	})
	if n := e.count(t, `SELECT COUNT(*) FROM gateway_outbox WHERE text LIKE ?`, "%"+code+"%"); n != 0 {
		t.Fatal("the outbox keeps the code")
	}
	if _, err := store.ApprovePairingCode(ctx, "telegram", "ABCDEFGH"); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("a wrong code: %v", err)
	}
	if _, err := store.ApprovePairingCode(ctx, "slack", code); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("the code on another platform: %v", err)
	}
	p, err := store.ApprovePairingCode(ctx, "telegram", " "+strings.ToLower(code)+" ")
	if err != nil || p.UserID != "777" || p.UserName != "Mallory" {
		t.Fatalf("approved: %+v %v", p, err)
	}
	if _, err := store.ApprovePairingCode(ctx, "telegram", code); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("a code used twice: %v", err)
	}
	f.Push(777, "Mallory", 777, "private", "now may I?")
	if got := sent(2, "the answer once paired"); got != "offline reply to: now may I?" {
		t.Fatalf("paired: %q", got)
	}
	f.Push(777, "Mallory", -5, "group", "and here?")
	if got := sent(3, "the answer in a group"); got != "offline reply to: and here?" {
		t.Fatalf("paired, in a group: %q", got)
	}
	if users, _ := store.PairedUsers(ctx); len(users) != 1 || users[0].UserID != "777" {
		t.Fatalf("paired users: %+v", users)
	}
	if gone, err := store.RevokePairing(ctx, "telegram", "777"); !gone || err != nil {
		t.Fatalf("revoke: %v %v", gone, err)
	}
	f.Push(777, "Mallory", 777, "private", "still?")
	waitFor(t, "the message after the revocation taken", func() bool {
		return e.count(t, `SELECT COUNT(*) FROM gateway_inbound WHERE platform = 'telegram'`) == 5
	})
	time.Sleep(50 * time.Millisecond) // nothing is coming: they asked for a code within 10 minutes
	if n := len(f.SentTexts()); n != 3 {
		t.Fatalf("%d messages sent: %q", n, f.SentTexts())
	}
	if n := e.count(t, `SELECT COUNT(*) FROM messages WHERE content IN ('hello?', 'please?', 'still?')`); n != 0 {
		t.Fatal("a stranger's message reached a session")
	}
	if strings.Contains(e.logs.String(), code) {
		t.Fatal("the code reached the log")
	}
}

// Pairing's limits, as the familiar gateway's: three requests wait at
// most per platform (the fourth person is told to try later); a request
// lasts an hour; five wrong codes in a row lock the platform's approvals
// for an hour (a right code is not taken then); the window approves by
// the request's id, outside the lockout; clearing drops what waits.
func TestPairingLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9)
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f))
	store := gateway.NewStore(e.db)
	ctx := context.Background()
	codes := map[string]string{}
	for i := 1; i <= 4; i++ {
		id := int64(900 + i)
		f.Push(id, fmt.Sprintf("P%d", i), id, "private", "hi")
		got := sentTo(t, f)(i, "an answer")
		if i == 4 {
			if got != gateway.PairingBusyText {
				t.Fatalf("the fourth: %q", got)
			}
			break
		}
		codes[fmt.Sprint(id)] = pairingCodeIn.FindStringSubmatch(got)[1]
	}
	// An hour on, the first request is gone.
	if err := e.db.InTx(ctx, func(tx *db.Tx) error {
		return tx.G.Exec(`UPDATE gateway_pairing_requests SET created_at = created_at - 3600001 WHERE user_id = '901'`).Error
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.ApprovePairingCode(ctx, "telegram", codes["901"]); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("an expired code: %v", err)
	}
	reqs, _ := store.PairingRequests(ctx)
	if len(reqs) != 2 {
		t.Fatalf("waiting: %+v", reqs)
	}
	for range 4 { // with the expired one above, five in a row
		if _, err := store.ApprovePairingCode(ctx, "telegram", "ZZZZZZZZ"); !apperr.Is(err, apperr.NotFound) {
			t.Fatal(err)
		}
	}
	if _, err := store.ApprovePairingCode(ctx, "telegram", codes["902"]); !apperr.Is(err, apperr.Conflict) || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("during the lockout: %v", err)
	}
	if p, err := store.ApprovePairingRequest(ctx, "telegram", reqs[0].ID); err != nil || p.UserID != reqs[0].UserID {
		t.Fatalf("by id: %+v %v", p, err)
	}
	if _, err := store.ApprovePairingRequest(ctx, "telegram", reqs[0].ID); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("by id twice: %v", err)
	}
	if _, err := store.ApprovePairingRequest(ctx, "telegram", " "); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("by no id: %v", err)
	}
	if n, err := store.ClearPairingRequests(ctx, ""); n != 1 || err != nil {
		t.Fatalf("cleared %d %v", n, err)
	}
	// Ten minutes on, the record of who asked is dropped at the next ask.
	if err := e.db.InTx(ctx, func(tx *db.Tx) error {
		return tx.G.Exec(`UPDATE gateway_pairing_limits SET value = value - 600001 WHERE kind = 'asked'`).Error
	}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.AskPairing(ctx, "telegram", "999", "Late", "999"); err != nil {
		t.Fatal(err)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM gateway_pairing_limits WHERE kind = 'asked'`); n != 1 {
		t.Fatalf("%d asks remembered", n)
	}
}

// unknown_dm_behavior ignore: a stranger's DM is answered by nothing (the
// Gateway page still lists them as refused); refuse: told once, with
// their id, though the platform lets nobody in.
func TestUnknownDMIgnoreAndRefuse(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9)
	quiet, loud := gatewaytest.NewTelegram(t, tgToken), gatewaytest.NewTelegram(t, tgToken)
	q := telegram(quiet)
	q.UnknownDM = gateway.IgnoreDM
	l := telegram(loud)
	l.UnknownDM = gateway.RefuseDM
	e.start(t, q)
	quiet.Push(777, "Mallory", 777, "private", "hello?")
	waitFor(t, "the refusal recorded", func() bool {
		return e.count(t, `SELECT COUNT(*) FROM gateway_refusals WHERE user_id = '777'`) == 1
	})
	time.Sleep(50 * time.Millisecond)
	if len(quiet.SentTexts()) != 0 {
		t.Fatalf("ignore answered %q", quiet.SentTexts())
	}
	e2 := newEnv(t, 8192, 0.9)
	e2.start(t, l)
	loud.Push(778, "Eve", 778, "private", "hello?")
	if got := sentTo(t, loud)(1, "the refusal"); !strings.Contains(got, "Your telegram id is 778") {
		t.Fatalf("refuse: %q", got)
	}
}

// /sethome, as the familiar gateway's: the chat (and thread) it is typed
// in becomes the platform's home channel, kept in the store (a restart
// keeps it), and the sender is told.
func TestSetHome(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9)
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f, "42"))
	f.Push(42, "Ada", -100200, "supergroup", "/sethome")
	if got := sentTo(t, f)(1, "the answer"); got != fmt.Sprintf(gateway.HomeSetText, "telegram", "telegram") {
		t.Fatalf("/sethome: %q", got)
	}
	homes, err := gateway.NewStore(e.db).Homes(context.Background())
	if h := homes["telegram"]; err != nil || h.ChatID != "-100200" || h.ThreadID != "" || h.SetBy != "Ada" {
		t.Fatalf("homes: %+v %v", homes, err)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM messages WHERE content = '/sethome'`); n != 0 {
		t.Fatal("/sethome reached a session")
	}
}

// On connecting, the Telegram bot's command menu (the / button) is set to
// the commands, the familiar gateway's first (/new, /stop, /approve…), at
// most 60, as it sets it there; the status says so.
func TestTelegramCommandMenu(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9)
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f, "42"))
	waitFor(t, "the menu", func() bool { return len(f.Commands()) > 0 })
	menu := f.Commands()
	if menu[0]["command"] != "new" || menu[1]["command"] != "stop" || menu[2]["command"] != "approve" || len(menu) > 60 {
		t.Fatalf("the menu: %v", menu)
	}
	names := map[string]bool{}
	for _, c := range menu {
		names[c["command"].(string)] = true
	}
	for _, want := range []string{"whoami", "sethome", "undo", "title", "deny"} {
		if !names[want] {
			t.Fatalf("/%s not in the menu: %v", want, menu)
		}
	}
	waitFor(t, "the status", func() bool {
		return e.count(t, `SELECT COUNT(*) FROM gateway_status WHERE platform = 'telegram' AND detail LIKE ?`, fmt.Sprintf("%%; %d commands in its menu", len(menu))) == 1
	})
}

// The skills' commands offered on a platform follow the other commands in
// its menu: on Telegram, whose names take no hyphen, with underscores
// (typed so, they run the skill); a skill named as a command is the
// command's. On Discord they keep their hyphens.
func TestSkillsInTheCommandMenus(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9)
	e.skills = func(platform string) [][2]string {
		return [][2]string{{"git-cleanup", "Prune merged branches (" + platform + ")"}, {"new", "a skill named new"}}
	}
	f := gatewaytest.NewTelegram(t, tgToken)
	d := gatewaytest.NewDiscord(t, discordToken)
	d.AddChannel("9001", 1, "", "", "")
	e.start(t, telegram(f, "42"), discordOn(d, nil, "u1"))
	waitFor(t, "the menu", func() bool { return len(f.Commands()) > 0 })
	menu := f.Commands()
	last := menu[len(menu)-1]
	if last["command"] != "git_cleanup" || last["description"] != "Prune merged branches (telegram)" {
		t.Fatalf("the skill's entry: %v", last)
	}
	for _, c := range menu {
		if c["command"] == "new" && c["description"] == "a skill named new" {
			t.Fatalf("/new is the skill's: %v", c)
		}
	}
	waitFor(t, "Discord's commands", func() bool { _, cmds := d.Commands(); return len(cmds) > 0 })
	_, cmds := d.Commands()
	found := false
	for _, c := range cmds {
		found = found || c["name"] == "git-cleanup" && c["description"] == "Prune merged branches (discord)"
	}
	if !found {
		t.Fatalf("Discord's commands: %v", cmds)
	}
}

// The outbox keeps what waits, and a delivered reply for 30 days (it is
// in its session's transcript); refused senders not seen for 90 days
// leave the Gateway page. Pending and given-up replies stay.
func TestPruneDelivered(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9)
	store := gateway.NewStore(e.db)
	ctx := context.Background()
	now := e.db.Now()
	old, recent := now.Add(-31*24*time.Hour), now.Add(-time.Hour)
	if err := e.db.InTx(ctx, func(tx *db.Tx) error {
		for i, r := range []struct {
			state string
			sent  *time.Time
		}{{"sent", &old}, {"sent", &recent}, {"pending", nil}, {"failed", nil}} {
			var at any
			if r.sent != nil {
				at = db.Ms(*r.sent)
			}
			if err := tx.G.Exec(`INSERT INTO gateway_outbox (platform, chat_id, text, origin, created_at, next_at, deadline, state, sent_at)
				VALUES ('telegram', ?, 'x', 'reply', ?, ?, ?, ?, ?)`, fmt.Sprint(i), db.Ms(old), db.Ms(old), db.Ms(now), r.state, at).Error; err != nil {
				return err
			}
		}
		for i, seen := range []time.Time{now.Add(-91 * 24 * time.Hour), recent} {
			if err := tx.G.Exec(`INSERT INTO gateway_refusals (platform, user_id, first_at, last_at) VALUES ('telegram', ?, ?, ?)`,
				fmt.Sprint(i), db.Ms(seen), db.Ms(seen)).Error; err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sent, refused, err := store.PruneDelivered(ctx, now.Add(-gateway.DeliveredKept), now.Add(-gateway.RefusedKept))
	if err != nil || sent != 1 || refused != 1 {
		t.Fatalf("pruned %d replies, %d refusals: %v", sent, refused, err)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM gateway_outbox`); n != 3 {
		t.Fatalf("%d outbox rows left", n)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM gateway_refusals`); n != 1 {
		t.Fatalf("%d refusals left", n)
	}
}
