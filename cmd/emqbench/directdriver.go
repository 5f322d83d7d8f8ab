package main

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/lease"
)

// directDriver runs the same scripts as the service through go-redis, in
// this process, with no HTTP: the baseline the HTTP figures are read
// against. It cannot long-poll (that lives in the HTTP layer), so a claim
// that finds nothing sleeps a millisecond before the shape asks again.
type directDriver struct {
	leases *lease.Service
	admin  *admin.Service
	groups groupNames
}

func newDirectDriver(rdb redis.UniversalClient, prefix string, groups int) *directDriver {
	return &directDriver{leases: lease.NewService(rdb, prefix), admin: admin.NewService(rdb, prefix),
		groups: groupNames{n: groups}}
}

func (d *directDriver) enqueue(ctx context.Context, queue string, n int) error {
	jobs := make([]lease.NewJob, n)
	for i := range jobs {
		jobs[i].Payload = payload
		jobs[i].Group = d.groups.next()
	}
	_, err := d.leases.Enqueue(ctx, queue, jobs)
	return err
}

func tickets(jobs []job.Job) []ticket {
	ts := make([]ticket, len(jobs))
	for i, j := range jobs {
		ts[i] = ticket{ID: j.ID, Token: j.Token}
	}
	return ts
}

func claimParams(count int) *lease.ClaimParams {
	if count == 0 {
		return nil
	}
	return &lease.ClaimParams{Count: count, Lease: time.Minute}
}

func (d *directDriver) claim(ctx context.Context, queue string, count int, wait time.Duration) ([]ticket, error) {
	claimed, err := d.leases.Claim(ctx, queue, *claimParams(count))
	if err == nil && len(claimed.Jobs) == 0 && wait > 0 {
		time.Sleep(time.Millisecond)
	}
	return tickets(claimed.Jobs), err
}

func (d *directDriver) complete(ctx context.Context, queue string, t ticket, next int) ([]ticket, error) {
	_, jobs, err := d.leases.Complete(ctx, queue, t.ID, t.Token, nil, claimParams(next))
	return tickets(jobs), err
}

func (d *directDriver) completeBatch(ctx context.Context, queue string, ts []ticket, next int) ([]ticket, error) {
	batch := make([]lease.Completion, len(ts))
	for i, t := range ts {
		batch[i] = lease.Completion{ID: t.ID, Token: t.Token}
	}
	_, jobs, err := d.leases.CompleteBatch(ctx, queue, batch, claimParams(next))
	return tickets(jobs), err
}

func (d *directDriver) extend(ctx context.Context, queue string, t ticket, leaseFor time.Duration) error {
	_, err := d.leases.Extend(ctx, queue, t.ID, lease.ExtendParams{Token: t.Token, Lease: leaseFor})
	return err
}

func (d *directDriver) cleanup(ctx context.Context, queue string) error {
	_, err := d.admin.Obliterate(ctx, queue, true)
	return err
}
