package app

import (
	"cmp"
	"context"
	"errors"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"atrium/backend/apperr"
	"atrium/backend/config"
	"atrium/backend/dotenv"
	"atrium/backend/llm"
	"atrium/backend/plugins"
	"atrium/backend/stack"
)

// modelSettings is cfg's model block for the Settings page.
func (s *Settings) modelSettings(cfg config.Config) ModelSettingsDTO {
	m := cfg.Model
	_, name := m.NameKey()
	_, window := m.WindowKey()
	out := ModelSettingsDTO{Provider: cmp.Or(m.Provider, config.ProviderOffline), BaseURL: m.BaseURL, Name: name, APIKeyEnv: m.APIKeyEnv, ContextWindow: window}
	if _, err := m.Endpoint(os.Getenv); err != nil {
		out.Problem = err.Error()
	}
	out.Key = s.keyStatus(keyVariable(m))
	return out
}

// keyVariable is the variable m's key is read from once it is set: the
// endpoint m resolves to were every variable set ("" for a model that
// needs none).
func keyVariable(m config.Model) string {
	ep, err := m.Endpoint(func(string) string { return "set" })
	if err != nil || ep.Provider == config.ProviderOffline {
		return ""
	}
	return ep.APIKeyEnv
}

// keyStatus says where name is set: exported where this process started
// (which goes first), or in the profile's .env.
func (s *Settings) keyStatus(name string) KeyStatusDTO {
	out := KeyStatusDTO{Name: name, EnvPath: s.home.EnvPath()}
	if name == "" {
		return out
	}
	inFile, exported, _ := s.home.SecretIn(name) // a .env that cannot be read sets nothing
	out.InEnvFile = inFile
	switch {
	case exported:
		out.Source = "environment"
	case inFile:
		out.Source = "env_file"
	}
	return out
}

// modelEdits are the config edits that make the file's model block say
// in, field by field where it differs from what the file says now (a
// field the file gives by the familiar agent's name keeps that name).
func modelEdits(cfg config.Config, in ModelSettingsDTO) ([]plugins.ConfigEdit, error) {
	in.Provider = cmp.Or(strings.ToLower(strings.TrimSpace(in.Provider)), config.ProviderOffline)
	in.BaseURL, in.Name, in.APIKeyEnv = strings.TrimSpace(in.BaseURL), strings.TrimSpace(in.Name), strings.TrimSpace(in.APIKeyEnv)
	if err := config.CheckProvider(in.Provider); err != nil {
		return nil, apperr.Wrap(apperr.Invalid, err, "the model")
	}
	if in.BaseURL != "" {
		u, err := url.Parse(in.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, apperr.New(apperr.Invalid, "model.base_url must be an http:// or https:// address, as http://127.0.0.1:8080/v1")
		}
		if u.User != nil {
			return nil, apperr.New(apperr.Invalid, "model.base_url must not carry a user or password: keep the key in a variable (the key below)")
		}
	}
	if in.APIKeyEnv != "" && !dotenv.ValidName(in.APIKeyEnv) {
		return nil, apperr.New(apperr.Invalid, "model.api_key_env must name a variable (letters, digits and _), as OPENAI_API_KEY, not the key itself")
	}
	if strings.ContainsAny(in.Name, "\r\n") || len(in.Name) > 200 {
		return nil, apperr.New(apperr.Invalid, "model.name must be one line of at most 200 characters")
	}
	if in.ContextWindow < 0 || in.ContextWindow > 100_000_000 {
		return nil, apperr.New(apperr.Invalid, "model.context_window must be 0 (the default) to 100000000 tokens, not %d", in.ContextWindow)
	}
	m := cfg.Model
	if m.Scalar() {
		// The model by its name alone (the familiar agent's short form):
		// a block now, in that agent's words, if anything changes.
		if in.Provider == config.ProviderOffline && in.Name == m.Default && in.BaseURL == "" && in.APIKeyEnv == "" && in.ContextWindow == 0 {
			return nil, nil
		}
		block := yaml.MapSlice{{Key: "default", Value: in.Name}, {Key: "provider", Value: in.Provider}}
		for _, kv := range []yaml.MapItem{{Key: "base_url", Value: in.BaseURL}, {Key: "api_key_env", Value: in.APIKeyEnv}, {Key: "context_length", Value: in.ContextWindow}} {
			if kv.Value != "" && kv.Value != 0 {
				block = append(block, kv)
			}
		}
		return []plugins.ConfigEdit{{Section: "model", Value: block}}, nil
	}
	var edits []plugins.ConfigEdit
	set := func(key string, now, want any, empty bool) {
		if now == want {
			return
		}
		var v any = want
		if empty {
			v = nil // the key goes rather than say nothing
		}
		edits = append(edits, plugins.ConfigEdit{Section: "model", Key: key, Value: v})
	}
	set("provider", cmp.Or(m.Provider, config.ProviderOffline), in.Provider, false)
	set("base_url", m.BaseURL, in.BaseURL, in.BaseURL == "")
	set("api_key_env", m.APIKeyEnv, in.APIKeyEnv, in.APIKeyEnv == "")
	nameKey, name := m.NameKey()
	set(nameKey, name, in.Name, in.Name == "")
	windowKey, window := m.WindowKey()
	set(windowKey, window, in.ContextWindow, in.ContextWindow == 0)
	return edits, nil
}

// SetKey writes a key's variable to the profile's .env (an empty value
// removes it), private to the person; the key is never returned or
// logged. Only a key's or token's variable may be written (the model's,
// or one named as keys are: *_API_KEY, *_TOKEN, *_SECRET): not PATH, not
// a library path. The next turn uses it, in this process and in every
// other of the profile.
func (s *Settings) SetKey(in KeyRequest) (KeyStatusDTO, error) {
	name := strings.TrimSpace(in.Name)
	cfg, _, err := config.Load(s.home.ConfigPath())
	if err != nil {
		return KeyStatusDTO{}, err
	}
	model := keyVariable(cfg.Model)
	if !dotenv.ValidName(name) || config.ProgramVariable(name) || !(config.SecretVariable(name) || name == model && name != "") {
		return KeyStatusDTO{}, apperr.New(apperr.Invalid, "only a key's variable is written here: the model's (%s), or one named as keys are (…_API_KEY, …_TOKEN, …_SECRET)", cmp.Or(model, "none"))
	}
	if err := keepKey(s.home, name, in.Value); err != nil {
		return KeyStatusDTO{}, err
	}
	return s.keyStatus(name), nil
}

// checkTimeout bounds CheckModel: long enough for a cold local model's first
// word, short enough that a person waits for it.
const checkTimeout = 30 * time.Second

// CheckModel asks the model, as config.yaml (saved) and the keys (the
// profile's .env as it is now) say it, for one word, and says whether it answered, in how
// long, or why not: a refused key, nothing listening, a model the server
// does not have. It costs one short request; offline answers at once.
func (s *Settings) CheckModel() (ModelCheckDTO, error) {
	_ = s.home.RefreshEnv() // a key set by another process since counts
	cfg, _, err := config.Load(s.home.ConfigPath())
	if err != nil {
		return ModelCheckDTO{}, err
	}
	ep, err := cfg.Model.Endpoint(os.Getenv)
	if err != nil {
		return ModelCheckDTO{Provider: cfg.Model.Provider, Error: err.Error()}, nil
	}
	out := ModelCheckDTO{Provider: cmp.Or(cfg.Model.Provider, config.ProviderOffline), Model: ep.Name}
	if ep.Provider == config.ProviderOffline {
		out.OK, out.Reply = true, "offline: canned replies, no network"
		return out, nil
	}
	p, err := stack.NewProvider(ep, checkTimeout)
	if err != nil {
		out.Error = err.Error()
		return out, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	defer cancel()
	t0 := time.Now()
	res, err := p.Complete(ctx, llm.Request{Messages: []llm.Message{{Role: "user", Content: "Reply with the single word OK."}}})
	out.LatencyMS = time.Since(t0).Milliseconds()
	if err != nil {
		out.Error = checkError(err, ep.BaseURL)
		return out, nil
	}
	reply := []rune(strings.TrimSpace(res.Content))
	if len(reply) > 200 {
		reply = append(reply[:200], '…')
	}
	out.OK, out.Reply = true, string(reply)
	return out, nil
}

// checkError is why the model did not answer, said first in a person's
// words where the cause is a common one, the error itself after. (The
// model's transport errors carry their text only, the key redacted.)
func checkError(err error, baseURL string) string {
	host := baseURL
	if u, perr := url.Parse(baseURL); perr == nil && u.Host != "" {
		host = u.Host
	}
	msg := err.Error()
	var te *llm.TransportError
	switch {
	case errors.As(err, &te) && strings.Contains(msg, "connection refused"):
		return "nothing answers at " + host + ": is the server running? (" + msg + ")"
	case errors.As(err, &te) && strings.Contains(msg, "no such host"):
		return "the name " + host + " is not found: check the base URL (" + msg + ")"
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer within " + checkTimeout.String() + " from " + host + " (" + msg + ")"
	}
	return msg
}
