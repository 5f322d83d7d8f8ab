package lease

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/rediserr"
	"github.com/echo-mq/echo_mq/lua"
)

// giveBackTimeout bounds how long a call waits for the jobs of its
// unacknowledged claim to be given back.
const giveBackTimeout = 5 * time.Second

// giveBack releases the jobs an unacknowledged claim leased (err is
// rediserr.ErrNotAcknowledged: EMQ_ACK_REPLICAS, too few replicas). The
// claim ran on the master, but its caller is answered 503 and never
// learns the tokens, so each job would wait out its lease and count a
// stall, and a job claimed so over and over while the replicas are away
// would die of it. Each is snoozed at once under its token instead (its
// attempt given back, lua/snooze.lua), all together, so that the
// auto-pipeliner sends them with one WAIT. reply is the claiming script's:
// a list whose second item is the jobs it claimed (claim.lua, and the
// claim-next of complete.lua and complete_batch.lua). A give-back that
// fails leaves the job to the sweep, as before.
func (s *Service) giveBack(ctx context.Context, queue string, reply any, err error) {
	if !errors.Is(err, rediserr.ErrNotAcknowledged) {
		return
	}
	items, ok := reply.([]any)
	if !ok || len(items) < 2 {
		return
	}
	jobs, perr := job.ParseList(queue, items[1])
	if perr != nil || len(jobs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), giveBackTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = s.run(ctx, queue, lua.SnoozeArgs{ID: j.ID, Token: j.Token})
		}()
	}
	wg.Wait()
}
