package stack

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"atrium/backend/config"
	"atrium/backend/dotenv"
)

// BenchmarkResolveTheModel: what a turn pays to ask the model config.yaml
// names as it starts, in a profile with a config of 60 hand-written
// sections (~370 lines) and a .env of 40 keys. unchanged: neither file
// changed since the last turn (a stat of config.yaml, the .env read
// again); read-again: config.yaml changed (parsed again), the provider kept.
func BenchmarkResolveTheModel(b *testing.B) {
	home, err := config.ResolveHome(b.TempDir(), "default")
	if err != nil {
		b.Fatal(err)
	}
	if err := home.Ensure(); err != nil {
		b.Fatal(err)
	}
	var cfg strings.Builder
	cfg.WriteString("# my profile\nmodel:\n  provider: custom\n  base_url: http://127.0.0.1:1/v1\n  default: some/model\n  api_key_env: ATRIUM_B_RESOLVE_API_KEY\n\n")
	for i := range 60 {
		fmt.Fprintf(&cfg, "# section %d\nsection_%d:\n  enabled: [a, \"b\"]   # mine\n  # a note\n  timeout: %d\n\n", i, i, i+1)
	}
	var env strings.Builder
	for i := range 39 {
		fmt.Fprintf(&env, "export ATRIUM_B_SERVICE_%d_API_KEY='sk-%s' # issued in March\n", i, strings.Repeat("x", 48))
	}
	env.WriteString("ATRIUM_B_RESOLVE_API_KEY=sk-the-model's\n")
	if err := os.WriteFile(home.ConfigPath(), []byte(cfg.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(home.EnvPath(), []byte(env.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	// Written an hour ago, as a profile's config usually was: a file
	// changed within the last second is read again at every turn (its time
	// may not have moved with a quick second change).
	hourAgo := time.Now().Add(-time.Hour)
	if err := os.Chtimes(home.ConfigPath(), hourAgo, hourAgo); err != nil {
		b.Fatal(err)
	}
	if _, err := dotenv.Load(home.EnvPath(), nil, nil); err != nil {
		b.Fatal(err)
	}
	for _, again := range []bool{false, true} {
		name := "unchanged"
		if again {
			name = "read-again"
		}
		b.Run(name, func(b *testing.B) {
			m := &liveModel{home: home, watch: &configWatch{path: home.ConfigPath(), log: slog.New(slog.DiscardHandler)}}
			b.ReportAllocs()
			for b.Loop() {
				if again {
					m.watch.stamp = config.Stamp{}
				}
				got, err := m.resolve()
				if err != nil || got.Name != "some/model" {
					b.Fatalf("%+v %v", got, err)
				}
			}
		})
	}
}
