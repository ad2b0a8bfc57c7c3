package stack

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"atrium/backend/config"
	"atrium/backend/gateway"
	"atrium/backend/plugins"
	"atrium/backend/turns"
)

// toolCallLogBytes and toolCallLogKeep shape logs/tool_calls.log as the
// familiar agent's: 5 MB, then it is rotated, three old files kept.
const (
	toolCallLogBytes = 5 << 20
	toolCallLogKeep  = 3
)

// toolCallLog is display.tool_progress: log: a chat is shown no progress,
// and each tool call of its turns is a line of logs/tool_calls.log, the
// values of the process's keys and tokens taken out.
type toolCallLog struct {
	path    string
	secrets []string
	log     *slog.Logger

	mu sync.Mutex
}

func newToolCallLog(home config.Home, lg *slog.Logger) *toolCallLog {
	return &toolCallLog{path: filepath.Join(home.Dir, "logs", "tool_calls.log"), secrets: secretValues(os.Environ()), log: lg}
}

// write appends the line of one tool call: when, where, the session, the
// tool and its arguments.
func (l *toolCallLog) write(platform, sessionID string, ev turns.ToolStart) {
	args, _ := json.Marshal(ev.Args)
	line := fmt.Sprintf("%s %s %s %s %s\n", time.Now().UTC().Format(time.RFC3339), platform, sessionID, ev.Name, args)
	for _, s := range l.secrets {
		line = strings.ReplaceAll(line, s, "***")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.append(line); err != nil {
		l.log.Warn("a tool call could not be written to the tool call log", "path", l.path, "error", err)
	}
}

func (l *toolCallLog) append(line string) error {
	if err := os.MkdirAll(filepath.Dir(l.path), 0o755); err != nil {
		return err
	}
	if fi, err := os.Stat(l.path); err == nil && fi.Size()+int64(len(line)) > toolCallLogBytes {
		for i := toolCallLogKeep - 1; i >= 1; i-- {
			_ = os.Rename(fmt.Sprintf("%s.%d", l.path, i), fmt.Sprintf("%s.%d", l.path, i+1))
		}
		if err := os.Rename(l.path, l.path+".1"); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// ToolProgress is display.tool_progress and its keys for platform (its
// display.platforms entry over the profile's) as config.yaml has them now:
// how a chat platform and a terminal chat ("cli") show a turn's tool
// calls (log mode writes logs/tool_calls.log).
func (s *Stack) ToolProgress(platform string) gateway.Progress {
	cfg := s.watch.settled()
	mode, separate, preview, own := cfg.ToolProgressFor(platform)
	keys := []string{"display", "tool_progress"}
	if own {
		keys = []string{"display", "platforms", platform, "tool_progress"}
	}
	return gateway.Progress{Mode: mode, PreviewLength: preview, Separate: separate, Log: s.calls.write, Cleanup: cfg.CleanupProgress(platform),
		Command: cfg.Display.ToolProgressCommand, Save: func(mode string) error {
			// /verbose: the platform's own key when it has one, which
			// would otherwise hide the change.
			return plugins.EditConfig(s.Home.ConfigPath(), plugins.ConfigEdit{Path: keys, Value: mode})
		}}
}
