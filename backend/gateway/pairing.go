package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/db"
)

// Pairing, as the familiar gateway pairs (its gateway/pairing): codes of 8
// characters from an alphabet without 0/O/1/I, from crypto/rand; a request
// lasts an hour; at most 3 wait per platform; a person asks at most once
// in 10 minutes; 5 failed approvals in a row lock a platform's approvals
// for an hour. Only a salted SHA-256 of a code is kept.
const (
	PairingAlphabet   = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	PairingCodeLength = 8
	PairingTTL        = time.Hour
	PairingRateLimit  = 10 * time.Minute
	PairingLockout    = time.Hour
	PairingMaxPending = 3
	PairingMaxFailed  = 5
)

// PairingRequest is a person waiting for the owner to approve their code
// (the code itself is never kept, nor shown).
type PairingRequest struct {
	ID        string    `json:"id"`
	Platform  string    `json:"platform"`
	UserID    string    `json:"user_id"`
	UserName  string    `json:"user_name"`
	ChatID    string    `json:"chat_id"`
	CreatedAt time.Time `json:"created_at"`
}

// Paired is a person pairing let in.
type Paired struct {
	Platform   string    `json:"platform"`
	UserID     string    `json:"user_id"`
	UserName   string    `json:"user_name"`
	ApprovedAt time.Time `json:"approved_at"`
}

// Pairing outcomes for a person who asked.
type PairingOutcome int

const (
	// PairingIssued: a code was made for them.
	PairingIssued PairingOutcome = iota
	// PairingQuiet: they asked within the last 10 minutes; nothing is said.
	PairingQuiet
	// PairingBusy: the platform has 3 waiting, or its approvals are locked:
	// they are told to try later (once: that counts as their asking).
	PairingBusy
)

func pairingHash(code string, salt []byte) string {
	h := sha256.Sum256(append(append([]byte{}, salt...), []byte(code)...))
	return hex.EncodeToString(h[:])
}

// pairingCode is a new code.
func pairingCode() string {
	b := make([]byte, PairingCodeLength)
	_, _ = rand.Read(b)
	for i := range b {
		// 256 is a multiple of 32: no bias.
		b[i] = PairingAlphabet[int(b[i])%len(PairingAlphabet)]
	}
	return string(b)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// expirePairing drops the requests older than an hour, and the record of
// an ask older than the 10 minutes it holds (so strangers who asked once
// do not pile up).
func expirePairing(ctx context.Context, tx *db.Tx) error {
	if err := tx.G.WithContext(ctx).Exec(`DELETE FROM gateway_pairing_limits WHERE kind = 'asked' AND value <= ?`,
		db.Ms(tx.Now.Add(-PairingRateLimit))).Error; err != nil {
		return err
	}
	return tx.G.WithContext(ctx).Exec(`DELETE FROM gateway_pairing_requests WHERE created_at <= ?`,
		db.Ms(tx.Now.Add(-PairingTTL))).Error
}

func pairingLimit(ctx context.Context, tx *db.Tx, platform, kind, user string) (int64, error) {
	var v []int64
	err := tx.G.WithContext(ctx).Raw(`SELECT value FROM gateway_pairing_limits WHERE platform = ? AND kind = ? AND user_id = ?`,
		platform, kind, user).Scan(&v).Error
	if err != nil || len(v) == 0 {
		return 0, err
	}
	return v[0], nil
}

func setPairingLimit(ctx context.Context, tx *db.Tx, platform, kind, user string, value int64) error {
	return tx.G.WithContext(ctx).Exec(`INSERT INTO gateway_pairing_limits (platform, kind, user_id, value) VALUES (?, ?, ?, ?)
		ON CONFLICT (platform, kind, user_id) DO UPDATE SET value = excluded.value`, platform, kind, user, value).Error
}

func lockedOut(ctx context.Context, tx *db.Tx, platform string) (bool, error) {
	until, err := pairingLimit(ctx, tx, platform, "lockout", "")
	return err == nil && until > db.Ms(tx.Now), err
}

// AskPairing is a person the gateway does not know asking, in a DM, to be
// let in: a code for them (PairingIssued), or why not.
func (s *Store) AskPairing(ctx context.Context, platform, userID, userName, chatID string) (code string, out PairingOutcome, err error) {
	err = s.db.InTx(ctx, func(tx *db.Tx) error {
		code, out = "", PairingQuiet
		if err := expirePairing(ctx, tx); err != nil {
			return err
		}
		asked, err := pairingLimit(ctx, tx, platform, "asked", userID)
		if err != nil || asked > db.Ms(tx.Now.Add(-PairingRateLimit)) {
			return err
		}
		if err := setPairingLimit(ctx, tx, platform, "asked", userID, db.Ms(tx.Now)); err != nil {
			return err
		}
		locked, err := lockedOut(ctx, tx, platform)
		if err != nil {
			return err
		}
		var pending int64
		if err := tx.G.WithContext(ctx).Raw(`SELECT COUNT(*) FROM gateway_pairing_requests WHERE platform = ?`, platform).Scan(&pending).Error; err != nil {
			return err
		}
		if locked || pending >= PairingMaxPending {
			out = PairingBusy
			return nil
		}
		salt := make([]byte, 16)
		_, _ = rand.Read(salt)
		c := pairingCode()
		if err := tx.G.WithContext(ctx).Exec(`INSERT INTO gateway_pairing_requests (id, platform, user_id, user_name, chat_id, code_hash, salt, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, randomHex(8), platform, userID, clip(userName, 256), chatID, pairingHash(c, salt),
			hex.EncodeToString(salt), db.Ms(tx.Now)).Error; err != nil {
			return err
		}
		code, out = c, PairingIssued
		return nil
	})
	return code, out, err
}

type pairingRow struct {
	ID, Platform, UserID, UserName, ChatID, CodeHash, Salt string
	CreatedAt                                              int64
}

// waitingOn are the requests waiting on platform (only request id, when
// not ""), with their codes' hashes.
func waitingOn(ctx context.Context, tx *db.Tx, platform, id string) ([]pairingRow, error) {
	var rows []pairingRow
	err := tx.G.WithContext(ctx).Raw(`SELECT id, platform, user_id, user_name, chat_id, code_hash, salt, created_at
		FROM gateway_pairing_requests WHERE platform = ? AND (? = '' OR id = ?)`, platform, id, id).Scan(&rows).Error
	return rows, err
}

// finishPairing lets in the person of request r.
func finishPairing(ctx context.Context, tx *db.Tx, r pairingRow) (Paired, error) {
	if err := tx.G.WithContext(ctx).Exec(`DELETE FROM gateway_pairing_requests WHERE id = ?`, r.ID).Error; err != nil {
		return Paired{}, err
	}
	if err := setPairingLimit(ctx, tx, r.Platform, "failures", "", 0); err != nil {
		return Paired{}, err
	}
	p := Paired{Platform: r.Platform, UserID: r.UserID, UserName: r.UserName, ApprovedAt: tx.Now.UTC()}
	return p, tx.G.WithContext(ctx).Exec(`INSERT INTO gateway_paired (platform, user_id, user_name, approved_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (platform, user_id) DO UPDATE SET user_name = excluded.user_name, approved_at = excluded.approved_at`,
		p.Platform, p.UserID, p.UserName, db.Ms(tx.Now)).Error
}

// ApprovePairingCode lets in the person a platform gave code (any case,
// spaces around it ignored). A code that matches no request waiting is a
// failed attempt: the fifth in a row locks the platform's approvals for
// an hour, and while locked no code is taken.
func (s *Store) ApprovePairingCode(ctx context.Context, platform, code string) (Paired, error) {
	code = strings.ToUpper(strings.TrimSpace(code))
	var p Paired
	var failed, locked bool
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		if err := expirePairing(ctx, tx); err != nil {
			return err
		}
		var err error
		if locked, err = lockedOut(ctx, tx, platform); err != nil || locked {
			return err
		}
		rows, err := waitingOn(ctx, tx, platform, "")
		if err != nil {
			return err
		}
		for _, r := range rows {
			salt, err := hex.DecodeString(r.Salt)
			if err != nil {
				continue
			}
			if subtle.ConstantTimeCompare([]byte(pairingHash(code, salt)), []byte(r.CodeHash)) == 1 {
				p, err = finishPairing(ctx, tx, r)
				return err
			}
		}
		failed = true
		n, err := pairingLimit(ctx, tx, platform, "failures", "")
		if err != nil {
			return err
		}
		if n+1 >= PairingMaxFailed {
			if err := setPairingLimit(ctx, tx, platform, "lockout", "", db.Ms(tx.Now.Add(PairingLockout))); err != nil {
				return err
			}
			n = -1
		}
		return setPairingLimit(ctx, tx, platform, "failures", "", n+1)
	})
	switch {
	case err != nil:
		return Paired{}, err
	case locked:
		return Paired{}, apperr.New(apperr.Conflict, "%s's pairing approvals are locked for an hour after %d codes in a row that matched no request", platform, PairingMaxFailed)
	case failed:
		return Paired{}, apperr.New(apperr.NotFound, "no pairing request on %s has the code %q (a code lasts an hour; `atrium pairing list` shows who waits)", platform, code)
	}
	return p, nil
}

// ApprovePairingRequest lets in the person of request id, as the window
// approves (the owner sees the request, never its code): neither gated by
// nor counted toward the lockout.
func (s *Store) ApprovePairingRequest(ctx context.Context, platform, id string) (Paired, error) {
	var p Paired
	found := false
	id = strings.ToLower(strings.TrimSpace(id))
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		if err := expirePairing(ctx, tx); err != nil || id == "" {
			return err
		}
		rows, err := waitingOn(ctx, tx, platform, id)
		if err != nil || len(rows) == 0 {
			return err
		}
		found = true
		p, err = finishPairing(ctx, tx, rows[0])
		return err
	})
	if err == nil && !found {
		err = apperr.New(apperr.NotFound, "no pairing request %q waits on %s (a request lasts an hour)", id, platform)
	}
	return p, err
}

// IsPaired reports whether pairing let userID in on platform.
func (s *Store) IsPaired(ctx context.Context, platform, userID string) (bool, error) {
	if userID == "" {
		return false, nil
	}
	var n int64
	err := s.db.Read.WithContext(ctx).Raw(`SELECT COUNT(*) FROM gateway_paired WHERE platform = ? AND user_id = ?`, platform, userID).Scan(&n).Error
	return n > 0, err
}

// RevokePairing lets out a person pairing let in; false when they were
// not paired.
func (s *Store) RevokePairing(ctx context.Context, platform, userID string) (bool, error) {
	var gone bool
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		res := tx.G.WithContext(ctx).Exec(`DELETE FROM gateway_paired WHERE platform = ? AND user_id = ?`, platform, userID)
		gone = res.RowsAffected > 0
		return res.Error
	})
	return gone, err
}

// ClearPairingRequests drops the requests waiting (on platform, or every
// one for ""); how many.
func (s *Store) ClearPairingRequests(ctx context.Context, platform string) (int64, error) {
	var n int64
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		res := tx.G.WithContext(ctx).Exec(`DELETE FROM gateway_pairing_requests WHERE ? = '' OR platform = ?`, platform, platform)
		n = res.RowsAffected
		return res.Error
	})
	return n, err
}

// PairingRequests are the requests waiting (an hour old at most), oldest
// first.
func (s *Store) PairingRequests(ctx context.Context) ([]PairingRequest, error) {
	var rows []pairingRow
	if err := s.db.Read.WithContext(ctx).Raw(`SELECT id, platform, user_id, user_name, chat_id, created_at FROM gateway_pairing_requests
		WHERE created_at > ? ORDER BY created_at, id`, db.Ms(s.db.Now().Add(-PairingTTL))).Scan(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]PairingRequest, len(rows))
	for i, r := range rows {
		out[i] = PairingRequest{ID: r.ID, Platform: r.Platform, UserID: r.UserID, UserName: r.UserName, ChatID: r.ChatID, CreatedAt: time.UnixMilli(r.CreatedAt).UTC()}
	}
	return out, nil
}

// PairedUsers are the people pairing let in, newest first.
func (s *Store) PairedUsers(ctx context.Context) ([]Paired, error) {
	type row struct {
		Platform, UserID, UserName string
		ApprovedAt                 int64
	}
	var rows []row
	if err := s.db.Read.WithContext(ctx).Raw(`SELECT platform, user_id, user_name, approved_at FROM gateway_paired
		ORDER BY approved_at DESC, platform, user_id`).Scan(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]Paired, len(rows))
	for i, r := range rows {
		out[i] = Paired{Platform: r.Platform, UserID: r.UserID, UserName: r.UserName, ApprovedAt: time.UnixMilli(r.ApprovedAt).UTC()}
	}
	return out, nil
}
