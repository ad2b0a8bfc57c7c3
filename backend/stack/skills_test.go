package stack_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"atrium/backend/config"
	"atrium/backend/hooks"
	"atrium/backend/sessions"
	"atrium/backend/stack"
	"atrium/backend/tools"
	"atrium/backend/turns"
)

// A profile's skills reach its conversations as the familiar agent's do:
// the first turn's system prompt lists them (and says to record what
// works); the model loads one with skill_view; a person's /<skill> sends
// the skill in their place, the message stored as they typed it and sent
// as the skill; /help lists the skills' commands; a command of the same
// name wins; skills.disabled (config.yaml, read at each turn) takes one
// out.
func TestSkillsReachTheConversation(t *testing.T) {
	ctx := context.Background()
	home, write := newHome(t)
	skill := filepath.Join(home.SkillsDir(), "devops", "git-cleanup")
	if err := os.MkdirAll(skill, 0o755); err != nil {
		t.Fatal(err)
	}
	md := "---\nname: git-cleanup\ndescription: Prune merged branches safely\n---\n\n1. git fetch --prune\n"
	if err := os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	status := filepath.Join(home.SkillsDir(), "status")
	_ = os.MkdirAll(status, 0o755)
	_ = os.WriteFile(filepath.Join(status, "SKILL.md"), []byte("---\nname: status\ndescription: a skill named as a command\n---\nbody\n"), 0o644)
	st, loop := openLoop(t, home)
	s, err := st.Sessions.Create(ctx, sessions.CreateParams{Title: "repo chores"})
	if err != nil {
		t.Fatal(err)
	}
	cc := hooks.LocalContext("cli", s.ID)
	if _, err := loop.Send(ctx, s.ID, `use tool skill_view: {"name": "git-cleanup"}`, cc); err != nil {
		t.Fatal(err)
	}
	turn, err := loop.Send(ctx, s.ID, "/git-cleanup only the origin remote", cc)
	if err != nil {
		t.Fatal(err)
	}
	invocation := `[IMPORTANT: The user has invoked the "git-cleanup" skill`
	if !strings.HasPrefix(turn.Reply, "offline reply to: "+invocation) {
		t.Fatalf("the skill's command: %q", turn.Reply)
	}
	msgs, err := st.Sessions.Messages(ctx, s.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	system := msgs[0].Content
	if msgs[0].Role != "system" || !strings.HasPrefix(system, tools.SkillsGuidance+"\n\n## Skills (mandatory)\n") ||
		!strings.Contains(system, "  devops:\n    - git-cleanup: Prune merged branches safely\n") {
		t.Fatalf("system prompt: %q", system)
	}
	var viewed, asked bool
	for _, m := range msgs {
		viewed = viewed || m.Role == "tool" && strings.Contains(m.Content, `"name":"git-cleanup"`) && strings.Contains(m.Content, "git fetch --prune")
		if m.Role == "user" && m.Content == "/git-cleanup only the origin remote" {
			asked = m.SentContent != nil && strings.HasPrefix(*m.SentContent, invocation) &&
				strings.HasSuffix(*m.SentContent, "alongside the skill invocation: only the origin remote")
		}
	}
	if !viewed || !asked {
		t.Fatalf("viewed %v, stored as typed and sent as the skill %v: %+v", viewed, asked, msgs)
	}
	help, err := loop.Send(ctx, s.ID, "/help", cc)
	if err != nil || !strings.Contains(help.Output, "\n\nSkills:\n/git-cleanup [instruction] - Prune merged branches safely") ||
		strings.Contains(help.Output, "a skill named as a command") {
		t.Fatalf("/help: %q %v", help.Output, err)
	}
	if out, err := loop.Send(ctx, s.ID, "/status", cc); err != nil || out.Command != "status" {
		t.Fatalf("/status runs the command: %+v %v", out, err)
	}
	// /skill NAME runs a skill whose own command a built-in one takes, as
	// the familiar agent's does; /help says so.
	if !strings.Contains(help.Output, "\n/skill NAME [instruction] - run a skill by its name") {
		t.Fatalf("/help on /skill: %q", help.Output)
	}
	st2, err := loop.Send(ctx, s.ID, "/skill status for the team", cc)
	if err != nil || !strings.HasPrefix(st2.Reply, `offline reply to: [IMPORTANT: The user has invoked the "status" skill`) {
		t.Fatalf("/skill status: %+v %v", st2, err)
	}
	if msgs, _ := st.Sessions.Messages(ctx, s.ID, false); !slices.ContainsFunc(msgs, func(m sessions.Message) bool {
		return m.Content == "/skill status for the team" && m.SentContent != nil && strings.HasSuffix(*m.SentContent, "alongside the skill invocation: for the team")
	}) {
		t.Fatal("/skill status: stored as typed, sent as the skill with its instruction")
	}
	if _, err := loop.Send(ctx, s.ID, "/skill no-such-skill", cc); err == nil || !strings.Contains(err.Error(), "unknown command /skill") {
		t.Fatalf("/skill of no skill: %v", err)
	}
	write("skills:\n  disabled: [git-cleanup]\n")
	if _, err := loop.Send(ctx, s.ID, "/git-cleanup", cc); err == nil || !strings.Contains(err.Error(), "unknown command /git-cleanup") {
		t.Fatalf("a disabled skill's command: %v", err)
	}
}

// The folder a conversation starts in (terminal.cwd here) gives its system
// prompt the project's AGENTS.md, and the profile's SOUL.md opens it as its
// persona, as the familiar agent's do.
func TestContextFilesReachTheSystemPrompt(t *testing.T) {
	got, project := firstSystemPrompt(t, "", "AGENTS.md", "Run make test before you say done.\n", "Terse and kind.")
	want := "Terse and kind.\n\n" + tools.ContextFiles(project, 0)
	if got != want || !strings.HasSuffix(want, "## AGENTS.md\n\nRun make test before you say done.") {
		t.Fatalf("system prompt: %q", got)
	}
}

// context_file_max_chars is the context files' budget, SOUL.md's too.
func TestContextFileMaxChars(t *testing.T) {
	got, _ := firstSystemPrompt(t, "context_file_max_chars: 100\n", "CLAUDE.md", strings.Repeat("c", 300), strings.Repeat("s", 300))
	if !strings.HasPrefix(got, strings.Repeat("s", 70)+"\n\n[...truncated SOUL.md: kept 70+20 of 300 chars.") ||
		!strings.Contains(got, "[...truncated CLAUDE.md: kept 70+20 of 314 chars.") {
		t.Fatalf("system prompt: %q", got)
	}
}

// firstSystemPrompt is the system prompt of a new conversation's first turn
// in a profile configured with cfg and a SOUL.md of soul, working in a
// project (returned) holding file with content.
func firstSystemPrompt(t *testing.T, cfg, file, content, soul string) (string, string) {
	t.Helper()
	ctx := context.Background()
	home, write := newHome(t)
	project := t.TempDir()
	if err := os.WriteFile(filepath.Join(project, file), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home.Dir, "SOUL.md"), []byte(soul), 0o644); err != nil {
		t.Fatal(err)
	}
	write(cfg + "terminal:\n  cwd: " + project + "\n")
	st, loop := openLoop(t, home)
	s, err := st.Sessions.Create(ctx, sessions.CreateParams{Title: "project"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loop.Send(ctx, s.ID, "hello", hooks.LocalContext("desktop", s.ID)); err != nil {
		t.Fatal(err)
	}
	msgs, err := st.Sessions.Messages(ctx, s.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	if msgs[0].Role != "system" {
		t.Fatalf("first message: %+v", msgs[0])
	}
	return msgs[0].Content, project
}

// openLoop opens a stack on home and its turn loop (closed with the test).
func openLoop(t *testing.T, home config.Home) (*stack.Stack, *turns.Loop) {
	t.Helper()
	st, err := stack.Open(context.Background(), home, stack.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	loop, err := st.Loop(stack.ModelFlags{})
	if err != nil {
		t.Fatal(err)
	}
	return st, loop
}

// A skill's declared variable, kept in the profile's .env (written here
// after the process started, as `atrium config set` from another process
// does), reaches the terminal commands of the conversation that loaded the
// skill, and no other conversation's: commands are not given keys'
// variables otherwise. One of Atrium's own keys is never handed out.
func TestASkillsVariableReachesItsConversation(t *testing.T) {
	ctx := context.Background()
	const name = "ATRIUM_T_STACK_SKILL_API_KEY"
	t.Cleanup(func() { _ = os.Unsetenv(name) })
	home, _ := newHome(t)
	skill := filepath.Join(home.SkillsDir(), "sci")
	if err := os.MkdirAll(skill, 0o755); err != nil {
		t.Fatal(err)
	}
	// It also declares the chat platform's token, one of Atrium's own keys:
	// never handed to a skill's commands.
	t.Setenv("TELEGRAM_BOT_TOKEN", "123:bot-secret")
	md := "---\nname: sci\ndescription: fold proteins\nrequired_environment_variables:\n  - name: " + name + "\n    help: from the lab's portal\n" +
		"  - name: TELEGRAM_BOT_TOKEN\n    optional: true\n---\nRun it.\n"
	if err := os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	st, loop := openLoop(t, home)
	echo := `use tool terminal: {"command": "echo \"key=[$` + name + `][$TELEGRAM_BOT_TOKEN]\""}`
	lastTool := func(id string) string {
		msgs, err := st.Sessions.Messages(ctx, id, false)
		if err != nil {
			t.Fatal(err)
		}
		for i := len(msgs) - 1; i >= 0; i-- {
			if msgs[i].Role == "tool" {
				return msgs[i].Content
			}
		}
		t.Fatal("no tool message")
		return ""
	}
	a, _ := st.Sessions.Create(ctx, sessions.CreateParams{Title: "a"})
	b, _ := st.Sessions.Create(ctx, sessions.CreateParams{Title: "b"})
	ca, cb := hooks.LocalContext("desktop", a.ID), hooks.LocalContext("desktop", b.ID)
	if _, err := loop.Send(ctx, a.ID, `use tool skill_view: {"name": "sci"}`, ca); err != nil {
		t.Fatal(err)
	}
	if got := lastTool(a.ID); !strings.Contains(got, `"setup_note":"Setup needed before using this skill: missing env $`+name+`. from the lab's portal"`) {
		t.Fatalf("not set yet: %s", got)
	}
	if err := os.WriteFile(home.EnvPath(), []byte(name+"=sk-from-env-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loop.Send(ctx, a.ID, `use tool skill_view: {"name": "sci"}`, ca); err != nil {
		t.Fatal(err)
	}
	if got := lastTool(a.ID); !strings.Contains(got, `"setup_needed":false`) {
		t.Fatalf("set in .env since: %s", got)
	}
	for _, c := range []struct {
		id   string
		cc   hooks.CommandContext
		want string
	}{{a.ID, ca, "key=[sk-from-env-file][]"}, {b.ID, cb, "key=[][]"}} {
		if _, err := loop.Send(ctx, c.id, echo, c.cc); err != nil {
			t.Fatal(err)
		}
		if got := lastTool(c.id); !strings.Contains(got, c.want) {
			t.Fatalf("%s: %s", c.want, got)
		}
	}
}

// A conversation on a chat platform, or a scheduled run, is told where its
// words are read (the familiar agent's platform hints, in what is true of
// Atrium): Telegram's Markdown and MEDIA: tags; a local surface is told
// nothing and keeps no system message for it.
func TestPlatformHints(t *testing.T) {
	ctx := context.Background()
	home, _ := newHome(t)
	st, loop := openLoop(t, home)
	for _, c := range []struct{ platform, want string }{
		{"telegram", "You are on Telegram. Standard Markdown auto-converts"},
		{"slack", "You are in a Slack workspace"},
		{"cron", "You are running as a scheduled cron job. There is no user present"},
		{"desktop", ""},
		{"cli", ""},
	} {
		s, err := st.Sessions.Create(ctx, sessions.CreateParams{Title: c.platform})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := loop.Send(ctx, s.ID, "hello", hooks.LocalContext(c.platform, s.ID)); err != nil {
			t.Fatal(err)
		}
		msgs, err := st.Sessions.Messages(ctx, s.ID, false)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case c.want == "" && msgs[0].Role == "system":
			t.Errorf("%s: a system message %q", c.platform, msgs[0].Content)
		case c.want != "" && (msgs[0].Role != "system" || !strings.HasPrefix(msgs[0].Content, c.want)):
			t.Errorf("%s: %+v", c.platform, msgs[0])
		}
	}
}
