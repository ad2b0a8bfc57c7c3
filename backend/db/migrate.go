package db

import (
	"context"
	"database/sql"
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

// migrate brings the schema up to date. The version is read first without
// writing: an up-to-date store is not written to (a read-only command on a
// read-only home opens it). Otherwise the write lock is taken (BEGIN
// IMMEDIATE) before the version is read again, and every pending migration
// runs in that one transaction, so concurrent first opens queue on the lock
// and the later ones find the schema already there.
func (d *DB) migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	current, err := schemaVersion(ctx, d.Read)
	if err != nil {
		return fmt.Errorf("read schema version: %w", d.classify(err))
	}
	if current > len(ms) {
		return newerSchema(current, len(ms))
	}
	if current == len(ms) {
		return nil
	}
	if err := d.Writable(); err != nil {
		return fmt.Errorf("the store needs its schema brought from version %d to %d: %w", current, len(ms), err)
	}
	sqlDB, err := d.Write.DB()
	if err != nil {
		return err
	}
	tx, err := sqlDB.BeginTx(ctx, nil) // BEGIN IMMEDIATE: the writer's DSN sets _txlock
	if err != nil {
		return fmt.Errorf("lock the store to migrate it: %w", d.classify(err))
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", d.classify(err))
	}
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("read schema version: %w", d.classify(err))
	}
	if current > len(ms) {
		return newerSchema(current, len(ms))
	}
	for _, m := range ms[current:] {
		if err := applyMigration(ctx, tx, m); err != nil {
			if strings.Contains(err.Error(), "no such module: fts5") {
				return fmt.Errorf("migration %s: this binary was built without FTS5 (build with -tags sqlite_fts5): %w", m.name, err)
			}
			return fmt.Errorf("migration %s: %w", m.name, d.classify(err))
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit migrations: %w", d.classify(err))
	}
	return nil
}

// schemaVersion reads the version without writing (0 for a new store).
func schemaVersion(ctx context.Context, g *gorm.DB) (int, error) {
	g = g.WithContext(ctx)
	var n int
	if err := g.Raw(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&n).Error; err != nil || n == 0 {
		return 0, err
	}
	var v int
	err := g.Raw(`SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v).Error
	return v, err
}

func newerSchema(current, known int) error {
	return apperr.New(apperr.Rejected,
		"the store's schema is version %d but this atrium knows only up to %d: it was written by a newer atrium; upgrade atrium instead (nothing was changed)",
		current, known)
}

// applyMigration runs one multi-statement script on the raw connection: a
// prepared statement (gorm's PrepareStmt) would run only its first statement.
func applyMigration(ctx context.Context, tx *sql.Tx, m migration) error {
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.version, m.name, time.Now().UnixMilli())
	return err
}
