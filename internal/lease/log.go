package lease

import (
	"context"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/lua"
)

// The bounds of a job's log (lua/log_append.lua): a job keeps its last
// MaxLogLines lines, and one append takes 1 to MaxLogLines lines of at
// most MaxLogLineBytes bytes each. A job's log so holds at most 2 MB.
const (
	MaxLogLines     = job.MaxLogLines
	MaxLogLineBytes = 2048
)

// Logged is the answer to an append to a job's log: the lines it
// appended, and how many the job keeps now (at most MaxLogLines).
type Logged struct {
	Appended, Kept int
}

// AppendLog appends lines to the log of job id, held under token, each
// stamped with the server's time; the oldest lines beyond MaxLogLines are
// dropped. It is fenced as Extend is: job.ErrStale when the token does
// not hold the job (also when it is not active, or its timeout has come),
// job.ErrGone when there is none. The caller checks the lines' number and
// size.
func (s *Service) AppendLog(ctx context.Context, queue, id string, token int64, lines []string) (Logged, error) {
	reply, err := s.run(ctx, queue, lua.LogAppendArgs{ID: id, Token: token, Keep: MaxLogLines, Lines: lines})
	if err != nil {
		return Logged{}, err
	}
	items, err := replyList(reply, 2)
	if err != nil {
		return Logged{}, err
	}
	appended, _ := items[0].(int64)
	kept, _ := items[1].(int64)
	return Logged{Appended: int(appended), Kept: int(kept)}, nil
}
