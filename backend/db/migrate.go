package db

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"atrium/backend/apperr"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must start with a number", name)
		}
		body, err := migrationFS.ReadFile("migrations/" + name)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: name, sql: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: versions must run 1, 2, 3... without gaps", m.name)
		}
	}
	return out, nil
}

// SchemaVersion is the newest schema this binary knows.
func SchemaVersion() int {
	ms, err := loadMigrations()
	if err != nil {
		panic(err) // embedded at build time: a wiring bug
	}
	return len(ms)
}

func migrate(ctx context.Context, g *gorm.DB) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	g = g.WithContext(ctx)
	if err := g.Exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`).Error; err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	var current int
	if err := g.Raw(`SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current).Error; err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if current > len(ms) {
		return apperr.New(apperr.Rejected,
			"the store's schema is version %d but this atrium knows only up to %d: it was written by a newer atrium; upgrade atrium instead (nothing was changed)",
			current, len(ms))
	}
	for _, m := range ms[current:] {
		err := applyMigration(ctx, g, m)
		if err != nil {
			if strings.Contains(err.Error(), "no such module: fts5") {
				return fmt.Errorf("migration %s: this binary was built without FTS5 (build with -tags sqlite_fts5): %w", m.name, err)
			}
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
	}
	return nil
}

// applyMigration runs one multi-statement script on the raw connection: a
// prepared statement (gorm's PrepareStmt) would run only its first statement.
func applyMigration(ctx context.Context, g *gorm.DB, m migration) error {
	sqlDB, err := g.DB()
	if err != nil {
		return err
	}
	tx, err := sqlDB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.version, m.name, time.Now().UnixMilli()); err != nil {
		return err
	}
	return tx.Commit()
}
