package records

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
)

const assistantCols = `assistant_id, owner, graph_id, name, description, config, context, metadata, version, created_at, updated_at`

func scanAssistant(r Rows) (Assistant, error) {
	var a Assistant
	var desc sql.NullString
	var config, context, meta string
	var version, created, updated int64
	if err := r.Scan(&a.ID, &a.Owner, &a.GraphID, &a.Name, &desc, &config, &context, &meta, &version, &created, &updated); err != nil {
		return Assistant{}, err
	}
	if desc.Valid {
		a.Description = &desc.String
	}
	a.Config, a.Context, a.Metadata = json.RawMessage(config), json.RawMessage(context), json.RawMessage(meta)
	a.Version, a.CreatedAt, a.UpdatedAt = int(version), fromMicros(created), fromMicros(updated)
	for _, c := range []struct {
		name string
		raw  []byte
	}{{"config", a.Config}, {"context", a.Context}, {"metadata", a.Metadata}} {
		if err := checkJSON("assistant", a.ID, c.name, c.raw); err != nil {
			return Assistant{}, err
		}
	}
	return a, nil
}

func nullString(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

func (a *Assistant) normalize() {
	a.Config, a.Metadata = object(a.Config), object(a.Metadata)
	if len(a.Context) == 0 || string(a.Context) == "null" {
		a.Context = json.RawMessage("{}")
	}
	if a.Name == "" {
		a.Name = a.GraphID
	}
}

func (s *Store) insertVersion(ctx context.Context, tx Tx, a Assistant) error {
	_, err := s.exec(ctx, tx, `INSERT INTO weft_server_assistant_versions (assistant_id, version, graph_id, name, description, config, context, metadata, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		a.ID, int64(a.Version), a.GraphID, a.Name, nullString(a.Description), string(a.Config), string(a.Context), string(a.Metadata), micros(a.UpdatedAt))
	return err
}

// CreateAssistant stores a new assistant at version 1. An existing one with
// the id is ErrConflict, unless doNothing and it is visible to a.Owner:
// then it is returned as it is.
func (s *Store) CreateAssistant(ctx context.Context, a Assistant, doNothing bool) (Assistant, error) {
	a.normalize()
	now := s.now()
	a.Version, a.CreatedAt, a.UpdatedAt = 1, now, now
	var out Assistant
	err := s.write(ctx, "", func(tx Tx) error {
		n, err := s.exec(ctx, tx, `INSERT INTO weft_server_assistants (`+assistantCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (assistant_id) DO NOTHING`,
			a.ID, a.Owner, a.GraphID, a.Name, nullString(a.Description), string(a.Config), string(a.Context), string(a.Metadata), int64(a.Version), micros(now), micros(now))
		if err != nil {
			return err
		}
		if n == 1 {
			out = a
			return s.insertVersion(ctx, tx, a)
		}
		old, err := s.getAssistant(ctx, tx, a.Owner, a.ID)
		if err != nil || !doNothing {
			return fmt.Errorf("%w: assistant %s", ErrConflict, a.ID)
		}
		out = old
		return nil
	})
	return out, err
}

// EnsureAssistant stores a (a system assistant) unless an assistant with
// its id exists, and returns what is stored.
func (s *Store) EnsureAssistant(ctx context.Context, a Assistant) (Assistant, error) {
	out, err := s.CreateAssistant(ctx, a, true)
	return out, err
}

// visible is the condition that user may read a record: it is theirs, or
// it is the system's (owner "").
func visible(a *args, user string) string {
	return "(owner = " + a.add(user) + " OR owner = '')"
}

func (s *Store) getAssistant(ctx context.Context, tx Tx, user, id string) (Assistant, error) {
	a := &args{}
	where := "assistant_id = " + a.add(id) + " AND " + visible(a, user)
	return getOne(ctx, s, tx, "assistant", id, `SELECT `+assistantCols+` FROM weft_server_assistants WHERE `+where, a.vs, scanAssistant)
}

// GetAssistant returns the assistant id if user may read it.
func (s *Store) GetAssistant(ctx context.Context, user, id string) (Assistant, error) {
	var out Assistant
	err := s.read(ctx, func(tx Tx) (err error) {
		out, err = s.getAssistant(ctx, tx, user, id)
		return err
	})
	return out, err
}

// AssistantPatch is what PatchAssistant changes; nil fields are kept.
type AssistantPatch struct {
	GraphID, Name, Description *string
	Config, Context            json.RawMessage
	// Metadata is merged into the stored metadata.
	Metadata json.RawMessage
}

// ownAssistant returns the assistant id if user may change it: it is
// theirs (the system's assistants are only the user ""'s to change).
func (s *Store) ownAssistant(ctx context.Context, tx Tx, user, id string) (Assistant, error) {
	a, err := s.getAssistant(ctx, tx, user, id)
	if err != nil {
		return Assistant{}, err
	}
	if a.Owner != user {
		return Assistant{}, fmt.Errorf("%w: assistant %s", ErrNotFound, id)
	}
	return a, nil
}

// PatchAssistant changes user's assistant and makes the result its newest
// version.
func (s *Store) PatchAssistant(ctx context.Context, user, id string, p AssistantPatch) (Assistant, error) {
	var out Assistant
	err := s.write(ctx, "", func(tx Tx) error {
		a, err := s.ownAssistant(ctx, tx, user, id)
		if err != nil {
			return err
		}
		if p.GraphID != nil {
			a.GraphID = *p.GraphID
		}
		if p.Name != nil {
			a.Name = *p.Name
		}
		if p.Description != nil {
			a.Description = p.Description
		}
		if p.Config != nil {
			a.Config = object(p.Config)
		}
		if p.Context != nil {
			a.Context = p.Context
		}
		if p.Metadata != nil {
			if a.Metadata, err = mergeObjects(a.Metadata, p.Metadata); err != nil {
				return err
			}
		}
		var latest int64
		if _, err := s.queryRow(ctx, tx, `SELECT COALESCE(MAX(version), 0) FROM weft_server_assistant_versions WHERE assistant_id = $1`, []any{id}, &latest); err != nil {
			return err
		}
		a.Version, a.UpdatedAt = int(latest)+1, s.now()
		if _, err := s.exec(ctx, tx, `UPDATE weft_server_assistants SET graph_id = $1, name = $2, description = $3, config = $4, context = $5, metadata = $6, version = $7, updated_at = $8 WHERE assistant_id = $9`,
			a.GraphID, a.Name, nullString(a.Description), string(a.Config), string(a.Context), string(a.Metadata), int64(a.Version), micros(a.UpdatedAt), id); err != nil {
			return err
		}
		out = a
		return s.insertVersion(ctx, tx, a)
	})
	return out, err
}

// DeleteAssistant deletes user's assistant and its versions.
func (s *Store) DeleteAssistant(ctx context.Context, user, id string) error {
	return s.write(ctx, "", func(tx Tx) error {
		if _, err := s.ownAssistant(ctx, tx, user, id); err != nil {
			return err
		}
		if _, err := s.exec(ctx, tx, `DELETE FROM weft_server_assistants WHERE assistant_id = $1`, id); err != nil {
			return err
		}
		_, err := s.exec(ctx, tx, `DELETE FROM weft_server_assistant_versions WHERE assistant_id = $1`, id)
		return err
	})
}

// AssistantQuery narrows SearchAssistants.
type AssistantQuery struct {
	User    string
	GraphID string
	// Name keeps assistants whose name contains it, ignoring case.
	Name     string
	Metadata map[string]any
	// SortBy is assistant_id, graph_id, name, created_at or updated_at
	// (the default); Desc orders from the largest.
	SortBy        string
	Desc          bool
	Limit, Offset int
}

func (s *Store) assistantWhere(q AssistantQuery, a *args) (string, error) {
	conds := []string{visible(a, q.User)}
	if q.GraphID != "" {
		conds = append(conds, "graph_id = "+a.add(q.GraphID))
	}
	if q.Name != "" {
		conds = append(conds, "LOWER(name) LIKE "+a.add("%"+strings.ToLower(likeEscape(q.Name))+"%")+" ESCAPE '\\'")
	}
	if len(q.Metadata) > 0 {
		c, err := s.d.Contains("metadata", q.Metadata, a.add)
		if err != nil {
			return "", fmt.Errorf("metadata filter: %w", err)
		}
		conds = append(conds, c)
	}
	return strings.Join(conds, " AND "), nil
}

func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// SearchAssistants returns the assistants q selects, one page of them, and
// how many it selects in all.
func (s *Store) SearchAssistants(ctx context.Context, q AssistantQuery) ([]Assistant, int, error) {
	a := &args{}
	where, err := s.assistantWhere(q, a)
	if err != nil {
		return nil, 0, err
	}
	order := "updated_at"
	switch q.SortBy {
	case "assistant_id", "graph_id", "name", "created_at":
		order = q.SortBy
	}
	return searchPage(ctx, s, pageQuery{table: "weft_server_assistants", cols: assistantCols, idCol: "assistant_id", where: where, order: order,
		vs: a.vs, desc: q.Desc, idFollows: false, limit: q.Limit, offset: q.Offset}, scanAssistant)
}

// CountAssistants returns how many assistants q selects.
func (s *Store) CountAssistants(ctx context.Context, q AssistantQuery) (int, error) {
	a := &args{}
	where, err := s.assistantWhere(q, a)
	if err != nil {
		return 0, err
	}
	return s.countOf(ctx, "weft_server_assistants", where, a.vs)
}

// AssistantVersions returns a page of the versions of an assistant user
// may read, newest first, those whose metadata contains metadata.
func (s *Store) AssistantVersions(ctx context.Context, user, id string, metadata map[string]any, limit, offset int) ([]Assistant, error) {
	if limit <= 0 {
		limit = 10
	}
	var out []Assistant
	err := s.read(ctx, func(tx Tx) error {
		out = []Assistant{}
		cur, err := s.getAssistant(ctx, tx, user, id)
		if err != nil {
			return err
		}
		a := &args{}
		where := "assistant_id = " + a.add(id)
		if len(metadata) > 0 {
			c, err := s.d.Contains("metadata", metadata, a.add)
			if err != nil {
				return fmt.Errorf("metadata filter: %w", err)
			}
			where += " AND " + c
		}
		query := `SELECT assistant_id, graph_id, name, description, config, context, metadata, version, created_at FROM weft_server_assistant_versions WHERE ` +
			where + ` ORDER BY version DESC LIMIT ` + a.add(limit) + ` OFFSET ` + a.add(max(offset, 0))
		return s.query(ctx, tx, query, a.vs, func(r Rows) error {
			v := Assistant{Owner: cur.Owner}
			var desc sql.NullString
			var config, context, meta string
			var version, created int64
			if err := r.Scan(&v.ID, &v.GraphID, &v.Name, &desc, &config, &context, &meta, &version, &created); err != nil {
				return err
			}
			if desc.Valid {
				v.Description = &desc.String
			}
			v.Config, v.Context, v.Metadata = json.RawMessage(config), json.RawMessage(context), json.RawMessage(meta)
			v.Version, v.CreatedAt, v.UpdatedAt = int(version), fromMicros(created), fromMicros(created)
			for _, c := range [][]byte{v.Config, v.Context, v.Metadata} {
				if err := checkJSON("assistant version", v.ID, "json", c); err != nil {
					return err
				}
			}
			out = append(out, v)
			return nil
		})
	})
	return out, err
}

// SetLatestVersion makes version the current version of user's assistant.
func (s *Store) SetLatestVersion(ctx context.Context, user, id string, version int) (Assistant, error) {
	var out Assistant
	err := s.write(ctx, "", func(tx Tx) error {
		a, err := s.ownAssistant(ctx, tx, user, id)
		if err != nil {
			return err
		}
		var desc sql.NullString
		var config, context, meta string
		found, err := s.queryRow(ctx, tx, `SELECT graph_id, name, description, config, context, metadata FROM weft_server_assistant_versions WHERE assistant_id = $1 AND version = $2`,
			[]any{id, int64(version)}, &a.GraphID, &a.Name, &desc, &config, &context, &meta)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: version %d of assistant %s", ErrNotFound, version, id)
		}
		a.Description = nil
		if desc.Valid {
			a.Description = &desc.String
		}
		a.Config, a.Context, a.Metadata = json.RawMessage(config), json.RawMessage(context), json.RawMessage(meta)
		a.Version, a.UpdatedAt = version, s.now()
		if _, err := s.exec(ctx, tx, `UPDATE weft_server_assistants SET graph_id = $1, name = $2, description = $3, config = $4, context = $5, metadata = $6, version = $7, updated_at = $8 WHERE assistant_id = $9`,
			a.GraphID, a.Name, nullString(a.Description), config, context, meta, int64(version), micros(a.UpdatedAt), id); err != nil {
			return err
		}
		out = a
		return nil
	})
	return out, err
}
