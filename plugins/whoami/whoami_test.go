package whoami_test

import (
	"context"
	"testing"

	"atrium/backend/hooks"
	"atrium/backend/sessions/sessionstest"
	"atrium/plugins/whoami"
)

func TestWhoamiReportsTheCallingSession(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t, func(bus *hooks.Bus) {
		if err := whoami.Register(bus.Plugin(whoami.Name)); err != nil {
			t.Fatal(err)
		}
	})
	ctx := context.Background()
	for _, sc := range []struct {
		cc   hooks.CommandContext
		want string
	}{
		{hooks.LocalContext("cli", "S1"), "local user on cli, session S1, key cli:S1"},
		{hooks.GatewayContext("telegram", "S2", hooks.Source{UserID: "42", UserName: "ada", ChatID: "c1", ChatType: "dm"}), "ada (42) on telegram, session S2, key telegram:dm:c1"},
		{hooks.CommandContext{Platform: "desktop"}, "local user on desktop, session (none yet), key "},
	} {
		out, err := e.Bus.RunCommand(ctx, "/whoami", "", sc.cc)
		if err != nil || out != sc.want {
			t.Errorf("got %q, %v; want %q", out, err, sc.want)
		}
	}
}
