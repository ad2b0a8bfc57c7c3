package hooks

import "atrium/backend/db"

// DB is the store the bus logs its events and deliveries in. Out-of-process
// plugin hosts read it to redeliver events a plugin missed while it was down.
func (b *Bus) DB() *db.DB { return b.db }
