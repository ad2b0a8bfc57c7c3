package sessions

import (
	"context"
	"fmt"

	"github.com/samber/lo"
)

// DeletePreview returns, read-only, every id a Delete of ids would remove
// now: the requested ids that exist (request order), then the cascaded
// compression chains and delegate children (sorted). It runs the same
// closure query as DeleteTx, on the read pool. Unknown ids are skipped; if
// none is known the error is not_found.
func (s *Service) DeletePreview(ctx context.Context, ids []string) ([]string, error) {
	ids, err := ValidateIDs(ids)
	if err != nil {
		return nil, err
	}
	var have []string
	if err := s.db.Read.WithContext(ctx).Raw(`SELECT id FROM sessions WHERE id IN (SELECT value FROM json_each(?))`, jsonArray(ids)).
		Scan(&have).Error; err != nil {
		return nil, fmt.Errorf("preview delete: %w", err)
	}
	set := lo.SliceToMap(have, func(id string) (string, bool) { return id, true })
	found := lo.Filter(ids, func(id string, _ int) bool { return set[id] })
	if len(found) == 0 {
		return nil, notFound(ids)
	}
	closure, err := expand(ctx, s.db.Read, found, deleteCTE)
	if err != nil {
		return nil, fmt.Errorf("preview delete: %w", err)
	}
	return orderAffected(found, closure), nil
}
