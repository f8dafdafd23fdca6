package records

import "context"

// Ping checks that the database answers a query, within the store's
// bound and ctx's.
func (s *Store) Ping(ctx context.Context) error {
	return s.read(ctx, func(tx Tx) error {
		var one int
		_, err := s.queryRow(ctx, tx, `SELECT 1`, nil, &one)
		return err
	})
}
