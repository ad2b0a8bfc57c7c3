package gateway_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"atrium/backend/llm"
	"atrium/backend/turns"
)

// The helpers of the tests of files on chat platforms (telegram_media,
// discord_media, slack_media).

// filesModel answers as reply says for a message it knows (a reply with
// MEDIA: tags), else as the offline model does, and keeps the last user
// message of every request it was asked: what the agent was told.
type filesModel struct {
	llm.OfflineProvider
	reply func(last string) (string, bool)

	mu    sync.Mutex
	asked []string
}

func (m *filesModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	last := ""
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			last = req.Messages[i].Content
			break
		}
	}
	m.mu.Lock()
	m.asked = append(m.asked, last)
	m.mu.Unlock()
	if m.reply != nil {
		if text, ok := m.reply(last); ok {
			return llm.Response{Content: text}, nil
		}
	}
	return m.OfflineProvider.Complete(ctx, req)
}

// told is every user message the model was asked, in order.
func (m *filesModel) told() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.asked)
}

// lastAsked is the last user message the model was asked ("" before any).
func (m *filesModel) lastAsked() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.asked) == 0 {
		return ""
	}
	return m.asked[len(m.asked)-1]
}

// filesEnv is a gateway env (not started) on a filesModel answering as
// reply says, saving the files people send under a media folder of its
// own, which it returns.
func filesEnv(t *testing.T, reply func(last string) (string, bool)) (*env, *filesModel, string) {
	t.Helper()
	e := newEnv(t, 8192, 0.9)
	model := &filesModel{OfflineProvider: llm.OfflineProvider{Window: 8192}, reply: reply}
	e.useLoop(t, turns.Options{Provider: model})
	e.mediaDir = filepath.Join(t.TempDir(), "media")
	return e, model, e.mediaDir
}

// mediaEnv is filesEnv whose model answers every message with reply (the
// offline model's answer when it is "").
func mediaEnv(t *testing.T, reply string) (*env, *filesModel) {
	t.Helper()
	e, model, _ := filesEnv(t, func(string) (string, bool) { return reply, reply != "" })
	return e, model
}

// writeFile writes data to name in dir and returns its path.
func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// files writes each name's content into a new folder; it returns their
// paths by name.
func files(t *testing.T, contents map[string]string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	out := map[string]string{}
	for name, c := range contents {
		out[name] = writeFile(t, dir, name, []byte(c))
	}
	return out
}

// savedFiles are the files the gateway saved in dir, by the name the
// sender gave (the time and random part it prefixes taken off), with
// their paths.
func savedFiles(t *testing.T, dir string) (data map[string][]byte, paths map[string]string) {
	t.Helper()
	data, paths = map[string][]byte{}, map[string]string{}
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return data, paths
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		parts := strings.SplitN(en.Name(), "-", 4)
		if len(parts) != 4 {
			t.Fatalf("a saved file named %q", en.Name())
		}
		p := filepath.Join(dir, en.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		data[parts[3]], paths[parts[3]] = b, p
	}
	return data, paths
}

// saved is the one file saved under dir (the media folder's platform
// folder): its path and bytes.
func saved(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	data, paths := savedFiles(t, dir)
	if len(paths) != 1 {
		t.Fatalf("saved in %s: %v", dir, paths)
	}
	for name, p := range paths {
		return p, data[name]
	}
	return "", nil
}
