package admin

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/echo-mq/echo_mq/internal/flow"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/lua"
)

// Settings are a queue's settings: its flow control
// (docs/design.md#flow-control), job defaults and retention; a queue that
// never had any has none.
func (s *Service) Settings(ctx context.Context, queue string) (flow.Settings, error) {
	texts, err := s.rdb.HMGet(ctx, keyspace.NewQueue(s.prefix, queue).Meta(), "flow", "defaults", "retention").Result()
	if err != nil {
		return flow.Settings{}, err
	}
	field := func(i int) string {
		text, _ := texts[i].(string) // nil: absent
		return text
	}
	set, err := flow.Decode(field(0))
	if err == nil {
		set.Defaults, err = flow.DecodeJobDefaults(field(1))
	}
	if err == nil {
		set.Retention, err = flow.DecodeRetention(field(2))
	}
	return set, err
}

// SetSettings replaces a queue's settings whole, and writes a "settings"
// event with them (asJSON) and who asked. The groups a limit held back are
// looked at again under the new settings; the job defaults hold from the
// next enqueue on, and the retention from the next finish and reaper
// visit on. A queue that is not known yet must have a place
// (keyspace.ErrQuota).
func (s *Service) SetSettings(ctx context.Context, queue string, set flow.Settings, asJSON string, by Actor) error {
	added, err := s.queues.Admit(ctx, queue)
	if err != nil {
		return err
	}
	_, err = s.run(ctx, queue, lua.SettingsArgs{Encoded: set.Encode(), JSON: asJSON, By: by,
		Defaults: set.Defaults.Encode(), Retention: set.Retention.Encode()})
	s.withdrawIf(ctx, queue, added, err)
	return err
}

// Groups lists one page of a queue's groups by name, after cursor (""
// for the first page), and the cursor of the next page ("" on the last).
// A cursor is opaque to clients (groupCursor): one this service did not
// give out is refused with ErrCursor.
func (s *Service) Groups(ctx context.Context, queue, cursor string, limit int) ([]flow.Group, string, error) {
	after, err := groupAfter(cursor)
	if err != nil {
		return nil, "", err
	}
	reply, err := s.run(ctx, queue, lua.GroupsArgs{Cursor: after, Limit: limit})
	if err != nil {
		return nil, "", err
	}
	items, ok := reply.([]any)
	if !ok || len(items) != 2 {
		return nil, "", fmt.Errorf("groups reply: unexpected %T", reply)
	}
	list, _ := items[1].([]any)
	groups := make([]flow.Group, len(list))
	for i, item := range list {
		if groups[i], err = groupOf(item); err != nil {
			return nil, "", err
		}
	}
	next, _ := items[0].(string)
	return groups, groupCursor(next), nil
}

// groupCursor is the cursor of a page that starts after group name: the
// name base64url encoded, opaque as the jobs listing's cursors are, so
// that a group's name, or a word made up, is not taken for one. "" stays
// "" (no next page).
func groupCursor(name string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(name))
}

// groupAfter is the group name a cursor of groupCursor starts after; ""
// for the first page.
func groupAfter(cursor string) (string, error) {
	if cursor == "" {
		return "", nil
	}
	name, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || !keyspace.ValidGroupName(string(name)) {
		return "", fmt.Errorf("%w: %q", ErrCursor, cursor)
	}
	return string(name), nil
}

// SetGroupPaused pauses (or resumes) one group's claims and answers the
// group. Pausing a group that has no jobs yet lists it. A queue that is
// not known yet must have a place (keyspace.ErrQuota).
func (s *Service) SetGroupPaused(ctx context.Context, queue, group string, paused bool, by Actor) (flow.Group, error) {
	added, err := s.queues.Admit(ctx, queue)
	if err != nil {
		return flow.Group{}, err
	}
	reply, err := s.run(ctx, queue, lua.GroupPauseArgs{Group: group, Paused: paused, By: by})
	if err != nil {
		s.withdrawIf(ctx, queue, added, err)
		return flow.Group{}, err
	}
	return groupOf(reply)
}

// groupOf reads flow.lua's group_info reply: {name, paused, pending,
// active, delayed}.
func groupOf(reply any) (flow.Group, error) {
	f, ok := reply.([]any)
	if !ok || len(f) != 5 {
		return flow.Group{}, fmt.Errorf("group reply: unexpected %T", reply)
	}
	name, _ := f[0].(string)
	paused, _ := f[1].(int64)
	g := flow.Group{Name: name, Paused: paused == 1}
	g.Pending, _ = f[2].(int64)
	g.Active, _ = f[3].(int64)
	g.Delayed, _ = f[4].(int64)
	return g, nil
}
